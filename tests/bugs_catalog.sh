#!/bin/sh
# The bug catalogue proves itself (ctest scenarios.bugs): scenarios/bugs/ holds, for every
# catalogued defect ID, the pair ID.defect.json (expects fail with named checks) and
# ID.fixed.json (expects pass) with the same dialect matrix (engines.dialects, default skyrl);
# the README's catalogue table names both files and the pair's dialects; and
# `syncroll run scenarios/bugs` passes, i.e. every expected failure fired exactly and every
# fixed variant passed, in every dialect of its matrix (one execution each).
. "$(dirname "$0")/lib.sh"
cd "$SRC" || exit 2
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
        # The dialects of the pair: the same in both files, and the README row's dialect cell.
        dl=$(sed -n 's/.*"dialects": *\[\([^]]*\)\].*/\1/p' "$f" | tr -d '" ' | sed 's/,/, /g')
        fl=$(sed -n 's/.*"dialects": *\[\([^]]*\)\].*/\1/p' "scenarios/bugs/$id.fixed.json" |
            tr -d '" ' | sed 's/,/, /g')
        [ "$dl" = "$fl" ] || bad "$id: the defect runs in [${dl:-skyrl}], the fix in [${fl:-skyrl}]"
        grep "^| $id | " README.md | grep -q " | ${dl:-skyrl} | " ||
            bad "README.md's row of $id does not say its dialects '${dl:-skyrl}'"
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
    grep -q "scenarios/bugs/$base" README.md || bad "README.md does not list scenarios/bugs/$base"
done
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
