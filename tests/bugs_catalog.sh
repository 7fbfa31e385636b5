#!/bin/sh
# The bug catalogue proves itself (ctest scenarios.bugs): scenarios/bugs/ holds, for every
# catalogued defect ID, the pair ID.defect.json (expects fail with named checks) and
# ID.fixed.json (expects pass) with the same dialect matrix (engines.dialects, default skyrl);
# the catalogue table (scenarios/bugs/README.md) names both files and the pair's dialects, and
# every pair it lists exists; and `syncroll run scenarios/bugs` passes, i.e. every expected
# failure fired exactly and every fixed variant passed, in every dialect of its matrix (one
# execution each).
. "$(dirname "$0")/lib.sh"
cd "$SRC" || exit 2
catalogue=scenarios/bugs/README.md
[ -f "$catalogue" ] || bad "$catalogue is missing"
pairs=0
for f in scenarios/bugs/*.json; do
    base=$(basename "$f")
    case "$base" in
    *.defect.json)
        id=${base%.defect.json}
        [ -f "scenarios/bugs/$id.fixed.json" ] || bad "$base has no $id.fixed.json"
        grep -q '"verdict": *"fail"' "$f" || bad "$base does not expect the verdict fail"
        grep -q '"checks": *\[ *"' "$f" || bad "$base names no expected check"
        pairs=$((pairs + 1))
        # The dialects of the pair: the same in both files, and the catalogue row's dialect cell.
        dl=$(sed -n 's/.*"dialects": *\[\([^]]*\)\].*/\1/p' "$f" | tr -d '" ' | sed 's/,/, /g')
        fl=$(sed -n 's/.*"dialects": *\[\([^]]*\)\].*/\1/p' "scenarios/bugs/$id.fixed.json" |
            tr -d '" ' | sed 's/,/, /g')
        [ "$dl" = "$fl" ] || bad "$id: the defect runs in [${dl:-skyrl}], the fix in [${fl:-skyrl}]"
        grep "^| $id | " "$catalogue" | grep -q " | ${dl:-skyrl} | " ||
            bad "$catalogue's row of $id does not say its dialects '${dl:-skyrl}'"
        ;;
    *.fixed.json)
        id=${base%.fixed.json}
        [ -f "scenarios/bugs/$id.defect.json" ] || bad "$base has no $id.defect.json"
        grep -q '"verdict": *"fail"' "$f" && bad "$base expects a failure"
        ;;
    *)
        bad "$base is neither ID.defect.json nor ID.fixed.json"
        ;;
    esac
    grep -q "scenarios/bugs/$base" "$catalogue" ||
        bad "$catalogue does not list scenarios/bugs/$base"
done
# Every pair the catalogue lists exists: each row's id has both files, and every scenario file the
# catalogue names is in the folder.
rows=0
for id in $(sed -n 's/^| \([a-z0-9][a-z0-9-]*\) | .*/\1/p' "$catalogue"); do
    rows=$((rows + 1))
    for v in defect fixed; do
        [ -f "scenarios/bugs/$id.$v.json" ] ||
            bad "$catalogue lists $id, but scenarios/bugs/$id.$v.json is missing"
    done
done
for p in $(grep -o 'scenarios/bugs/[A-Za-z0-9_.-]*\.json' "$catalogue" | sort -u); do
    [ -f "$p" ] || bad "$catalogue names $p, which does not exist"
done
[ "$rows" -eq "$pairs" ] || bad "$catalogue has $rows rows for $pairs pairs"
[ "$pairs" -ge 1 ] || bad "no pairs in scenarios/bugs"
# One execution per scenario and dialect of its matrix.
execs=$("$S" run --list scenarios/bugs | wc -l)
[ "$execs" -ge $((pairs * 2)) ] || bad "run --list shows $execs executions for $pairs pairs"
"$S" run -j 2 --out "$tmp/runs" scenarios/bugs >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
    cat "$tmp/out"
    bad "syncroll run scenarios/bugs exited $status"
fi
want="$execs passed, 0 failed"
last=$(tail -n 1 "$tmp/out")
[ "$last" = "$want" ] || bad "last line '$last', want '$want'"
[ "$fail" -eq 0 ] && ok "$pairs pairs in $execs executions, every defect caught by its named checks in every dialect of its matrix, every fix passing"
finish
