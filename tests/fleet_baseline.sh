#!/bin/sh
# `syncroll report --baseline` on a real run (ctest fleet.baseline): one scenario run with a 200 ms
# latency fault on every generate request, compared with a baseline the test writes from that run
# itself. The baseline is the run's results.json with known histograms in four phases: request
# and scenario at 1 ms (so both grew by far more than the floor), publish at 0.2 ms against 0.5
# in the current copy (+0.3 ms: listed) and collate at 0.1 ms against 0.15 (+0.05 ms, 50 %: under
# the 0.1 ms floor, not listed); every other phase is the run's own on both sides (no change).
# The comparison must list the request phase first (the scenario's wall time, which grew more and
# holds every phase, comes after the phases that explain it), publish too, and nothing that grew
# by 0.1 ms or less. No verdict depends on how fast the machine is: the one timing the test relies
# on is that the engine delays every request by at least the injected 200 ms, a lower bound that
# load can only raise (a real baseline run's p99 could, under load, come close to the injection
# and hide it). About 2 s.
. "$(dirname "$0")/lib.sh"
cat >"$tmp/slow.json" <<'JSON'
{"id": "baseline-probe", "description": "two turns of eight rollouts on one mock engine, slowed",
 "seed": 5, "steps": [{"kind": "rollout", "batch": 8, "turns": 2}],
 "engines": {"faults": [{"kind": "latency", "id": "slow", "dist": "fixed", "ms": 200}]}}
JSON
expect_out 0 '^1 passed, 0 failed$' "the run with the latency fault" \
    "$S" run --out "$tmp/b" "$tmp/slow.json"
mkdir "$tmp/cur" "$tmp/base" || die "cannot create the copies"
python3 - "$tmp/b/latest/results.json" "$tmp/cur/results.json" "$tmp/base/results.json" <<'PY' ||
import json, sys

d = json.load(open(sys.argv[1]))
scn = d["scenarios"][0]
for where, ph in (("run", d["phases"]), ("scenario", scn["phases"])):
    req = ph["request"]
    if req["count"] != 16 or req["hist"]["min_ns"] < 200_000_000:
        sys.exit("%s: 16 requests each delayed >= 200 ms wanted, got count %d, min %d ns"
                 % (where, req["count"], req["hist"]["min_ns"]))


def lower_bound(v):
    """The lower bound of v's bucket (lib/sr_hist.h: one per value below 256 ns, then 128 per
    power of two)."""
    if v < 256:
        return v
    e = v.bit_length() - 1
    w = (1 << e) // 128
    return (1 << e) + (v - (1 << e)) // w * w


def at(phase, ns):
    """`phase` with its samples (at least one) all at the lower bound of ns's bucket."""
    n = max(phase["count"], 1)
    v = lower_bound(ns)
    phase.update({"count": n, "hist": {"min_ns": v, "max_ns": v, "sum_ns": n * v,
                                       "buckets": [[v, n]]}})


def write(path, sets):
    for ph in (d["phases"], scn["phases"]):
        for name, ns in sets.items():
            at(ph[name], ns)
    json.dump(d, open(path, "w"))


write(sys.argv[2], {"publish": 500_000, "collate": 150_000})
write(sys.argv[3], {"request": 1_000_000, "scenario": 1_000_000, "publish": 200_000,
                    "collate": 100_000})
PY
    die "could not write the current and baseline copies"
expect_out 1 ' p99 regressions? above 20% and 0\.1 ms against ' "the fault regresses" \
    "$S" report "$tmp/cur" --baseline "$tmp/base" --report text
printf '%s\n' "$OUT" >"$tmp/out"
grep -m 1 '^REGRESSED' "$tmp/out" | grep -Eq '^REGRESSED (run|baseline-probe) request p99 ' ||
    bad "the request phase is not listed first: $(grep -m 1 '^REGRESSED' "$tmp/out")"
# Both scopes of each phase: the run's merged phases and the scenario's own.
for phase in request publish scenario; do
    [ "$(grep -c "^REGRESSED [a-z-]* $phase p99 " "$tmp/out")" = 2 ] ||
        bad "the $phase phase is not listed for the run and the scenario: $(cat "$tmp/out")"
done
awk '/^REGRESSED/ { if (seen && $3 != "scenario") { print; exit 1 } if ($3 == "scenario") seen = 1 }' \
    "$tmp/out" || bad "a phase is listed after the scenario's wall time"
! grep -q '^REGRESSED [a-z-]* collate p99 ' "$tmp/out" ||
    bad "collate (+0.05 ms, under the 0.1 ms floor) is listed"
grep -q '^6 p99 regressions above 20% and 0\.1 ms against .*; 2 under the floor ignored$' \
    "$tmp/out" || bad "not 6 regressions and collate's 2 under the floor: $(tail -n 1 "$tmp/out")"
awk '/^REGRESSED/ { d = $(NF - 2); sub(/^\(\+/, "", d); if (d + 0 <= 0.1) { print; exit 1 } }' \
    "$tmp/out" || bad "a regression under the 0.1 ms floor is listed"
awk '/^REGRESSED .* request p99/ { d = $(NF - 2); sub(/^\(\+/, "", d); if (d + 0 < 199) exit 1 }' \
    "$tmp/out" || bad "the request phase did not grow by the injected 200 ms less the baseline's 1"
finish
