#!/bin/sh
# A short soak (ctest scenarios.soak; `make soak` runs the long one): every scenario of
# scenarios/soak/ for SOAK_SECONDS (default 15) each, alone in the process (-j 1) so that the
# runner's descriptor and memory samples are the soak's own. The runner's verdict already fails
# on a lost rollout (accounting), soak.resource_growth, engine.crashed or an engine that does not
# answer at the end; this script also checks that the summary lines say so and that the resource
# check really ran (was not skipped).
set -u
: "${SYNCROLL:?SYNCROLL must name the syncroll executable}"
: "${SYNCROLL_SOURCE_DIR:?}"
seconds=${SOAK_SECONDS:-15}
out=${SOAK_OUT:-$(mktemp -d)}
err="$out/soak.stderr"
mkdir -p "$out"
fail() {
    echo "soak_short: $*" >&2
    cat "$err" >&2
    exit 1
}

"$SYNCROLL" run -j 1 --duration "$seconds" --out "$out" "$SYNCROLL_SOURCE_DIR/scenarios/soak" \
    2>"$err"
rc=$?
[ $rc -eq 0 ] || fail "syncroll run exited $rc"
n=$(find "$SYNCROLL_SOURCE_DIR/scenarios/soak" -name '*.json' | wc -l)
lines=$(grep -c '^syncroll run: soak ' "$err")
[ "$lines" -eq "$n" ] || fail "expected $n soak summary lines, got $lines"
# Nothing lost: requested = verified, no failed rollout, every engine answering.
grep '^syncroll run: soak ' "$err" | while read -r line; do
    echo "$line"
    req=$(echo "$line" | sed -n 's/.*: \([0-9]*\) rollouts (.*/\1/p')
    ver=$(echo "$line" | sed -n 's/.* rollouts (\([0-9]*\) verified.*/\1/p')
    echo "$line" | grep -q ' verified, 0 failed)' || exit 1
    [ -n "$req" ] && [ "$req" = "$ver" ] && [ "$req" -gt 0 ] || exit 1
    echo "$line" | grep -Eq '; ([0-9]+)/\1 engines answering$' || exit 1
done || fail "a summary line shows a lost or failed rollout or a silent engine"
# The resource check ran in every scenario (it is skipped when too few iterations ran).
if grep -q '"name":[[:space:]]*"soak.resource_growth"' "$out/latest/results.json"; then
    fail "soak.resource_growth was skipped or fired: see $out/latest/results.json"
fi
[ -n "${SOAK_OUT:-}" ] || rm -rf "$out"
exit 0
