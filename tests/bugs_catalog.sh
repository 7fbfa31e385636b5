#!/bin/sh
# The bug catalogue proves itself (ctest scenarios.bugs): scenarios/bugs/ holds, for every
# catalogued defect ID, the pair ID.defect.json (expects fail with named checks) and
# ID.fixed.json (expects pass); the README's catalogue table names both files; and
# `syncroll run scenarios/bugs` passes, i.e. every expected failure fired exactly and every
# fixed variant passed.
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
"$S" run -j 2 --out "$tmp/runs" scenarios/bugs >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
    cat "$tmp/out"
    bad "syncroll run scenarios/bugs exited $status"
fi
want="$((pairs * 2)) passed, 0 failed"
last=$(tail -n 1 "$tmp/out")
[ "$last" = "$want" ] || bad "last line '$last', want '$want'"
[ "$fail" -eq 0 ] && ok "$pairs pairs, every defect caught by its named checks, every fix passing"
finish
