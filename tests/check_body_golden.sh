#!/bin/sh
# Golden bodies: `syncroll check-body --json` on every fixtures/bodies/NAME.body (with the extra
# arguments of NAME.args, if any, run from the source directory) must give NAME.expected:
#   exit <status>
#   <the --json output>         when the status is 0
#   error <dotted.name>         otherwise (the name printed on standard error)
# and, when NAME.offset exists, the error's byte offset in the body ("offset" of the --json
# output) must be the number it holds (GOLDEN_UPDATE never writes .offset files: an offset is
# counted by hand from the body and is what the test holds the code to), and when NAME.stderr
# exists, standard error must hold its line.
# GOLDEN_UPDATE=1 rewrites the .expected files instead of comparing (review the diff!).
. "$(dirname "$0")/lib.sh"
cd "$SRC" || exit 2
count=0
for body in fixtures/bodies/*.body; do
    name=${body%.body}
    args=""
    [ -f "$name.args" ] && args=$(cat "$name.args")
    # shellcheck disable=SC2086 # args are split on purpose
    "$S" check-body --json $args "$body" >"$tmp/out" 2>"$tmp/err"
    status=$?
    {
        echo "exit $status"
        if [ "$status" -eq 0 ]; then
            cat "$tmp/out"
        else
            sed -n 's/^syncroll check-body: \([a-z0-9_.]*\): .*/error \1/p' "$tmp/err" | head -n 1
        fi
    } >"$tmp/got"
    count=$((count + 1))
    if [ -f "$name.offset" ]; then
        want=$(cat "$name.offset")
        got=$(sed -n 's/.*"offset":\([0-9]*\)}}$/\1/p' "$tmp/out")
        if [ "$got" != "$want" ]; then
            bad "$body: error offset ${got:-none}, expected $want"
            continue
        fi
    fi
    # NAME.stderr: a line standard error must hold (a note, e.g. an unregistered envelope).
    if [ -f "$name.stderr" ] && ! grep -qF "$(cat "$name.stderr")" "$tmp/err"; then
        bad "$body: standard error lacks '$(cat "$name.stderr")'"
        cat "$tmp/err"
        continue
    fi
    if [ "${GOLDEN_UPDATE:-0}" = 1 ]; then
        cp "$tmp/got" "$name.expected"
    elif ! diff -u "$name.expected" "$tmp/got" >"$tmp/diff" 2>&1; then
        bad "$body"
        cat "$tmp/diff"
    else
        ok "$body"
    fi
done
[ "$count" -ge 14 ] || bad "only $count golden bodies found"
finish
