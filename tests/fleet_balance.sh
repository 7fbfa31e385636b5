#!/bin/sh
# Shards balanced by recorded durations (ctest fleet.balance): `run --list --shard K/4
# --timings PATH` over (1) twelve scenarios with hand-written durations: the partition is the
# longest-first greedy one, computed here independently, and its largest shard is within
# max(1.2 x the mean, the longest scenario) where the hash partition is not; (2) the nightly
# suite with its recorded durations (fixtures/nightly-timings.json, which the CI examples pass):
# the file parses, names every nightly scenario, and balances to the same bound; (3) a history
# folder as timings (the newest night of each id); (4) the named errors. No engine runs.
. "$(dirname "$0")/lib.sh"
cd "$SRC" || exit 2
unset BUILDKITE_PARALLEL_JOB BUILDKITE_PARALLEL_JOB_COUNT JOB_COMPLETION_INDEX CI_NODE_INDEX \
    CI_NODE_TOTAL CIRCLE_NODE_INDEX CIRCLE_NODE_TOTAL SYNCROLL_SHARD_COUNT SYNCROLL_RUN_GROUP
mkdir "$tmp/suite"
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
    sed "s/\"t-basic\"/\"bal-$i\"/" tests/scenarios/pass/basic.json >"$tmp/suite/s$i.json"
done
# Hand-written durations: bal-1 is 900 ms ... bal-12 is 50 ms.
python3 - "$tmp/fixed.json" <<'PY' || die "could not write the fixed timings"
import json, sys
ms = [900, 700, 500, 400, 300, 300, 200, 200, 100, 100, 50, 50]
json.dump({"schema": 1, "scenarios": [{"id": "bal-%d" % (i + 1), "wall_ms": m}
                                      for i, m in enumerate(ms)]}, open(sys.argv[1], "w"))
PY
parts() { # parts OUT TIMINGS_OR_EMPTY DIR: "shard id" lines of 4 shards
    for k in 1 2 3 4; do
        if [ -n "$2" ]; then
            "$S" run --list --shard "$k/4" --timings "$2" "$3" 2>"$tmp/err-$k" | sed "s/^/$k /"
        else
            "$S" run --list --shard "$k/4" "$3" 2>"$tmp/err-$k" | sed "s/^/$k /"
        fi
    done >"$1"
}
cat >"$tmp/check.py" <<'PY'
import json, sys
parts, timings, mode = sys.argv[1], sys.argv[2], sys.argv[3]
ms = {s["id"]: s["wall_ms"] for s in json.load(open(timings))["scenarios"]}
shard = {}
for line in open(parts):
    k, i = line.split()
    assert i not in shard, ("twice", i)
    shard[i] = int(k)
ids = sorted(shard)
mean_known = sum(ms[i] for i in ids if i in ms) / max(1, sum(1 for i in ids if i in ms))
dur = {i: ms.get(i, mean_known) for i in ids}
load = [0.0] * 4
for i in ids:
    load[shard[i] - 1] += dur[i]
bound = max(1.2 * sum(load) / 4, max(dur.values()))
if mode == "hash":
    print("hash-over" if max(load) > bound else "hash-within", " ".join("%.0f" % x for x in load))
    sys.exit(0)
# The longest-first greedy partition, computed independently.
want, greedy = {}, [0.0] * 4
for i in sorted(ids, key=lambda i: (-dur[i], i)):
    k = min(range(4), key=lambda k: (greedy[k], k))
    greedy[k] += dur[i]
    want[i] = k + 1
assert shard == want, ("not the longest-first greedy partition", shard, want)
assert max(load) <= bound + 1e-9, ("over the bound", load, bound)
if mode == "nightly":
    missing = [i for i in ids if i not in ms]
    assert not missing, ("fixtures/nightly-timings.json lacks", missing)
print("ok", len(ids), "max %.0f <= bound %.0f" % (max(load), bound))
PY
parts "$tmp/fixed.parts" "$tmp/fixed.json" "$tmp/suite"
grep -q 'shard 1/4 balanced by the durations of .*fixed.json: [0-9]* of 12$' "$tmp/err-1" ||
    bad "the balanced shard does not say so: $(cat "$tmp/err-1")"
expect_out 0 '^ok 12 max 1000 <= bound 1140$' "fixed timings: longest-first greedy, within the bound" \
    python3 "$tmp/check.py" "$tmp/fixed.parts" "$tmp/fixed.json" balanced
parts "$tmp/hash.parts" "" "$tmp/suite"
expect_out 0 '^hash-over ' "the hash partition of the same suite is over the bound" \
    python3 "$tmp/check.py" "$tmp/hash.parts" "$tmp/fixed.json" hash

# The nightly suite with its recorded durations, as the CI examples run it.
parts "$tmp/nightly.parts" fixtures/nightly-timings.json scenarios/nightly
n=$(ls scenarios/nightly/*.json | wc -l)
[ "$(wc -l <"$tmp/nightly.parts")" -ge "$n" ] || bad "the 4 balanced shards do not list every nightly scenario"
expect_out 0 '^ok [0-9]+ max ' "nightly timings: every scenario recorded, within the bound" \
    python3 "$tmp/check.py" "$tmp/nightly.parts" fixtures/nightly-timings.json nightly

# A history folder: the newest night that ran an id gives its duration.
mkdir -p "$tmp/hist/n1" "$tmp/hist/n2" "$tmp/hist/n3"
python3 - "$tmp/hist" <<'PY' || die "could not write the nights"
import json, sys
def night(name, start, ms):
    json.dump({"schema": 1, "run": {"start": {"iso": "x", "unix_ms": start}},
               "scenarios": [{"id": "bal-%d" % (i + 1), "wall_ms": m} for i, m in enumerate(ms)]},
              open("%s/%s/results.json" % (sys.argv[1], name), "w"))
night("n1", 1000, [50] * 12)                       # oldest: all equal
night("n2", 3000, [900, 700, 500, 400, 300, 300, 200, 200, 100, 100, 50, 50])  # newest
night("n3", 2000, [10] * 12)
json.dump({"schema": 1, "scenarios": [{"id": "bal-%d" % (i + 1), "wall_ms": m} for i, m in
           enumerate([900, 700, 500, 400, 300, 300, 200, 200, 100, 100, 50, 50])]},
          open(sys.argv[1] + "/../newest.json", "w"))
PY
ln -s n1 "$tmp/hist/latest"
parts "$tmp/hist.parts" "$tmp/hist" "$tmp/suite"
expect 0 "a history folder's newest night gives the durations" cmp "$tmp/hist.parts" "$tmp/fixed.parts"

# Named errors, nothing run.
expect_out 2 'io\.error' "--timings of a missing file" \
    "$S" run --list --shard 1/4 --timings "$tmp/nonexistent.json" "$tmp/suite"
printf '{"schema": 1, "scenarios": []}\n' >"$tmp/empty.json"
expect_out 2 'holds no scenario duration \[usage\.invalid_argument\]' "--timings without a duration" \
    "$S" run --list --shard 1/4 --timings "$tmp/empty.json" "$tmp/suite"
printf '{"schema": 1, "scenarios": [{"wall_ms": "x"}]}\n' >"$tmp/bad.json"
expect_out 2 'json\.schema' "--timings of a malformed file" \
    "$S" run --list --shard 1/4 --timings "$tmp/bad.json" "$tmp/suite"

# Shards of different partitions are parts of no single run: given other timings, two shards
# can miss a scenario without running one twice, and their merge would be green without it. It
# is refused by name, even under one --run-group; shards of the same timings merge. Shard 1 of
# the first file (bal-1 dominates) is bal-1 alone; in the second, bal-1 and bal-2 dominate and
# shard 2 holds bal-2 and half of the rest: five scenarios run nowhere and none twice.
python3 - "$tmp" <<'PY' || die "could not write the one-heavy timings"
import json, sys
for name, heavy in (("heavy1", (1,)), ("heavy2", (1, 2))):
    json.dump({"schema": 1, "scenarios": [{"id": "bal-%d" % i,
                                           "wall_ms": 10000 if i in heavy else 10}
                                          for i in range(1, 13)]},
              open("%s/%s.json" % (sys.argv[1], name), "w"))
PY
"$S" run --list --shard 1/2 --timings "$tmp/heavy1.json" "$tmp/suite" >"$tmp/p1" 2>/dev/null
"$S" run --list --shard 2/2 --timings "$tmp/heavy2.json" "$tmp/suite" >"$tmp/p2" 2>/dev/null
[ "$(cat "$tmp/p1" "$tmp/p2" | sort -u | wc -l)" -eq 7 ] &&
    [ "$(cat "$tmp/p1" "$tmp/p2" | wc -l)" -eq 7 ] ||
    die "the two timings should leave five scenarios out of both shards and run none twice"
for run in "1 heavy1" "2 heavy2" "2 heavy1"; do
    set -- $run
    expect_out 0 ' passed, 0 failed$' "shard $1/2 by the $2 timings" \
        "$S" run --run-group g1 --shard "$1/2" --timings "$tmp/$2.json" --out "$tmp/m-$1-$2" \
        "$tmp/suite"
done
expect_out 2 'report\.run_mismatch.*partition=timings-' "shards of two partitions are not merged" \
    "$S" report --merge "$tmp/merged-bad" "$tmp/m-1-heavy1/latest" "$tmp/m-2-heavy2/latest"
[ ! -e "$tmp/merged-bad/results.json" ] || bad "a refused merge wrote results.json"
expect_out 0 '^merged 2 shards into ' "shards of one partition merge" \
    "$S" report --merge "$tmp/merged-ok" "$tmp/m-1-heavy1/latest" "$tmp/m-2-heavy1/latest"
# The selection line is never cut: with over 8 KiB of paths (each file named through 340 "./"),
# the partition still reaches it and the merge is still refused.
long=$(python3 -c 'import sys; print(" ".join("%s/%ss%d.json" % (sys.argv[1], "./" * 340, i)
                                              for i in range(1, 13)))' "$tmp/suite")
for run in "1 heavy1" "2 heavy2"; do
    set -- $run
    # shellcheck disable=SC2086 # the paths hold no spaces
    expect_out 0 ' passed, 0 failed$' "long paths: shard $1/2 by the $2 timings" \
        "$S" run --run-group g2 --shard "$1/2" --timings "$tmp/$2.json" --out "$tmp/l-$1" $long
done
expect_out 2 'report\.run_mismatch.*partition=timings-' "long paths: shards of two partitions" \
    "$S" report --merge "$tmp/merged-long" "$tmp/l-1/latest" "$tmp/l-2/latest"
finish
