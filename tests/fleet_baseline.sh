#!/bin/sh
# `syncroll report --baseline` on real runs (ctest fleet.baseline): one scenario run
# twice, the second time from a copy with a 200 ms latency fault on every generate request. The
# comparison must list the request phase first (largest increase; the scenario's wall time, which
# holds every phase, comes after the phases that explain it) and nothing that grew by 0.1 ms or
# less. The one timing the test relies on: the plain run's request p99 stays under half the
# injected latency (a few ms against 200 ms; under sanitizers on a loaded 2-core machine a plain
# p99 passed 20 ms, so a 40 ms injection was too small a margin). About 3 s.
. "$(dirname "$0")/lib.sh"
cat >"$tmp/plain.json" <<'JSON'
{"id": "baseline-probe", "description": "two turns of eight rollouts on one mock engine",
 "seed": 5, "steps": [{"kind": "rollout", "batch": 8, "turns": 2}]}
JSON
python3 - "$tmp/plain.json" "$tmp/slow.json" <<'PY' || die "could not write the slow copy"
import json, sys
d = json.load(open(sys.argv[1]))
d["engines"] = {"faults": [{"kind": "latency", "id": "slow", "dist": "fixed", "ms": 200}]}
json.dump(d, open(sys.argv[2], "w"))
PY
expect_out 0 '^1 passed, 0 failed$' "the plain run" "$S" run --out "$tmp/a" "$tmp/plain.json"
expect_out 0 '^1 passed, 0 failed$' "the run with the latency fault" \
    "$S" run --out "$tmp/b" "$tmp/slow.json"
expect_out 1 ' p99 regressions? above 20% and 0\.1 ms against ' "the fault regresses" \
    "$S" report "$tmp/b/latest" --baseline "$tmp/a/latest" --report text
printf '%s\n' "$OUT" >"$tmp/out"
grep -m 1 '^REGRESSED' "$tmp/out" | grep -Eq '^REGRESSED (run|baseline-probe) request p99 ' ||
    bad "the request phase is not listed first: $(grep -m 1 '^REGRESSED' "$tmp/out")"
awk '/^REGRESSED/ { d = $(NF - 2); sub(/^\(\+/, "", d); if (d + 0 <= 0.1) { print; exit 1 } }' \
    "$tmp/out" || bad "a regression under the 0.1 ms floor is listed"
grep -q '^REGRESSED .* request p99 .*(+[0-9.]* ms, ' "$tmp/out" &&
    awk '/^REGRESSED .* request p99/ { d = $(NF - 2); sub(/^\(\+/, "", d); if (d + 0 < 100) exit 1 }' \
        "$tmp/out" || bad "the request phase did not grow by at least half the injected 200 ms"
finish
