#!/bin/sh
# One turn-numbering convention (ctest cli.turns): a fault's `turn` selector counts a session's
# turns from 1, and every check it causes names that same number, in its message ("turn N") and
# in its `where.turn` (results.json). tests/turns/*.json each aim a fault at one turn, named in
# the file name (...-turn-N.json).
. "$(dirname "$0")/lib.sh"
for f in "$SRC"/tests/turns/*.json; do
    n=${f##*-turn-}
    n=${n%.json}
    out=$tmp/runs-$n
    "$S" run --out "$out" "$f" >"$tmp/out" 2>&1
    status=$?
    res=$(ls "$out"/2*/results.json 2>/dev/null | head -n 1)
    if [ "$status" -ne 0 ] || [ -z "$res" ]; then
        cat "$tmp/out"
        bad "$f: syncroll run exited $status"
        continue
    fi
    turns=$(grep -o '"turn":[[:space:]]*[0-9-]*' "$res" | sed 's/.*[[:space:]:]//' | sort -u | tr '\n' ' ')
    msgs=$(grep -o '"message":[[:space:]]*"[^"]*' "$res" | grep -c " turn $n[ :]")
    all=$(grep -o '"message":[[:space:]]*"scenario ' "$res" | wc -l)
    if [ "$turns" != "$n " ] || [ "$msgs" -eq 0 ] || [ "$msgs" -ne "$all" ]; then
        grep -o '"message":[[:space:]]*"[^"]*' "$res" | head -n 5
        bad "$(basename "$f"): the fault's selector said turn $n; checks say turn(s) '$turns' ($msgs of $all messages name turn $n)"
    else
        ok "$(basename "$f"): $all check(s), each on turn $n as the selector said"
    fi
done
finish
