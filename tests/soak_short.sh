#!/bin/sh
# A short soak (ctest scenarios.soak; `make soak` runs the long one): every scenario of
# scenarios/soak/ for SOAK_SECONDS (default 15) each, alone in the process (-j 1) so that the
# runner's descriptor and memory samples are the soak's own. The runner's verdict already fails
# on a lost rollout (accounting), soak.resource_growth, engine.crashed or an engine that does not
# answer at the end; this script also checks that the summary lines say so and that the resource
# check really ran (was not skipped). Then nightly scenarios that once broke under --duration
# (explicit sync versions, absolute check_state counts, per-engine counts, nth faults, a wait on
# one engine) for NIGHTLY_SECONDS (default 3) each: each passes, repeated or run once with its
# soak.unsupported reason (FORMAT.md §15).
. "$(dirname "$0")/lib.sh"
seconds=${SOAK_SECONDS:-15}
out=${SOAK_OUT:-$tmp}
err="$out/soak.stderr"
mkdir -p "$out"
DIE_LOG=$err
# A failed soak keeps its run folder for a look at results.json and the engine logs.
soak_fail() {
    keep_tmp
    die "$@"
}

"$S" run -j 1 --duration "$seconds" --out "$out" "$SRC/scenarios/soak" 2>"$err"
rc=$?
[ $rc -eq 0 ] || soak_fail "syncroll run exited $rc"
n=$(find "$SRC/scenarios/soak" -name '*.json' | wc -l)
lines=$(grep -c '^syncroll run: soak ' "$err")
[ "$lines" -eq "$n" ] || soak_fail "expected $n soak summary lines, got $lines"
# Nothing lost: requested = verified, no failed rollout, every engine answering.
grep '^syncroll run: soak ' "$err" | while read -r line; do
    echo "$line"
    req=$(echo "$line" | sed -n 's/.*: \([0-9]*\) rollouts (.*/\1/p')
    ver=$(echo "$line" | sed -n 's/.* rollouts (\([0-9]*\) verified.*/\1/p')
    echo "$line" | grep -q ' verified, 0 failed)' || exit 1
    [ -n "$req" ] && [ "$req" = "$ver" ] && [ "$req" -gt 0 ] || exit 1
    echo "$line" | grep -Eq '; ([0-9]+)/\1 engines answering$' || exit 1
done || soak_fail "a summary line shows a lost or failed rollout or a silent engine"
# The resource check ran in every scenario (it is skipped when too few iterations ran).
if grep -q '"name":[[:space:]]*"soak.resource_growth"' "$out/latest/results.json"; then
    soak_fail "soak.resource_growth was skipped or fired: see $out/latest/results.json"
fi
ok "$n soak scenario(s): nothing lost, no growth, every engine answering"

nightly="$SRC/scenarios/nightly"
nerr="$out/nightly.stderr"
DIE_LOG=$nerr
"$S" run -j 1 --duration "${NIGHTLY_SECONDS:-3}" --out "$out/nightly" "$nightly/delta-sync.json" \
    "$nightly/broadcast-sync.json" "$nightly/r3-multi-turn.json" "$nightly/sticky-sessions.json" \
    "$nightly/transient-faults.json" "$nightly/sync-during-rollout.json" 2>"$nerr"
rc=$?
[ $rc -eq 0 ] || soak_fail "nightly soak: syncroll run exited $rc"
# They repeated (versions and counters per iteration, every sample on the same engine), except
# transient-faults, whose nth faults fire once per engine: it says why, naming step and key.
for id in delta-sync broadcast-sync r3-multi-turn sticky-sessions sync-during-rollout; do
    grep -Eq "^syncroll run: soak nightly-$id: ([2-9]|[1-9][0-9]+) iterations" "$nerr" ||
        soak_fail "nightly-$id did not repeat"
done
grep -q "^syncroll run: soak nightly-transient-faults: not repeated (soak.unsupported): step \
check_state-1: check_state.faults_fired.truncate: the fault fires by nth" "$nerr" ||
    soak_fail "nightly-transient-faults: no soak.unsupported line naming its step and key"
[ "$(grep -c '"soak.unsupported"' "$out/nightly/latest/results.json")" -eq 1 ] ||
    soak_fail "results.json does not hold the one soak.unsupported reason"
ok "nightly scenarios under --duration: 5 repeated, 1 run once with soak.unsupported"
finish
