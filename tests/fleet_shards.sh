#!/bin/sh
# CI sharding end to end (ctest fleet.shards, issue 23): the bug catalogue run as 4 shards, two
# by Buildkite's variables and two by GitLab's, merged with `syncroll report --merge`, equals
# the unsharded run (same scenario executions, verdicts and fired checks; both junit.xml valid
# against tests/junit.xsd with the same test cases and outcomes); 3 of 4 shards name the
# missing one; shards of other runs, duplicate shards and a scenario in two shards are refused
# by name; malformed and conflicting CI variables are run.shard_env; the partition moves only a
# scenario that is added. Needs xmllint (libxml2-utils) and python3 (make deps). About 10 s.
. "$(dirname "$0")/lib.sh"
XSD=${JUNIT_XSD:-$SRC/tests/junit.xsd}
command -v xmllint >/dev/null 2>&1 || die "xmllint not found; 'make deps' installs libxml2-utils"
cd "$SRC" || exit 2
# The test's own CI variables only, whatever CI runs the test.
unset BUILDKITE_PARALLEL_JOB BUILDKITE_PARALLEL_JOB_COUNT JOB_COMPLETION_INDEX CI_NODE_INDEX \
    CI_NODE_TOTAL CIRCLE_NODE_INDEX CIRCLE_NODE_TOTAL SYNCROLL_SHARD_COUNT SYNCROLL_RUN_GROUP

# ---- the runs: unsharded, then 4 shards from two CI systems' variables ----
expect_out 0 ' passed, 0 failed$' "unsharded bug catalogue" \
    "$S" run -j 2 --out "$tmp/full" scenarios/bugs
# The shards are pinned to the commit the unsharded run read from .git: a commit made in this
# checkout while the test runs (a mutation run takes minutes) would otherwise give them two
# git_revs, and the merge would refuse them as shards of different runs.
rev=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"]["git_rev"] or "")' \
    "$tmp/full/latest/results.json") || die "the unsharded run wrote no results.json"
[ -n "$rev" ] || die "the unsharded run recorded no git_rev"
SYNCROLL_GIT_REV=$rev
export SYNCROLL_GIT_REV
expect_out 0 'shard 1/4 from buildkite \(BUILDKITE_PARALLEL_JOB=0 ' "shard 1/4 by Buildkite" \
    env BUILDKITE_PARALLEL_JOB=0 BUILDKITE_PARALLEL_JOB_COUNT=4 \
    "$S" run -j 2 --out "$tmp/s1" scenarios/bugs
expect_out 0 'shard 2/4 from buildkite' "shard 2/4 by Buildkite" \
    env BUILDKITE_PARALLEL_JOB=1 BUILDKITE_PARALLEL_JOB_COUNT=4 \
    "$S" run -j 2 --out "$tmp/s2" scenarios/bugs
expect_out 0 'shard 3/4 from gitlab \(CI_NODE_INDEX=3 CI_NODE_TOTAL=4\)' "shard 3/4 by GitLab" \
    env CI_NODE_INDEX=3 CI_NODE_TOTAL=4 "$S" run -j 2 --out "$tmp/s3" scenarios/bugs
expect_out 0 'shard 4/4 from gitlab' "shard 4/4 by GitLab" \
    env CI_NODE_INDEX=4 CI_NODE_TOTAL=4 "$S" run -j 2 --out "$tmp/s4" scenarios/bugs
for k in 1 2 3 4; do
    [ -f "$tmp/s$k/latest/results.json" ] || die "shard $k wrote no results.json"
done
expect_out 0 '^ok gitlab 4 CI_NODE_INDEX=3 CI_NODE_TOTAL=4$' "results.json records the shard" \
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["run"]
o = r["options"]
assert o["shard"] == "3/4", o
assert r["run_group"].startswith("auto-") and r["git_rev"] is not None, r
assert "shards=4" in r["selection"], r["selection"]
print("ok", o["shard_source"], o["shard"][-1], o["shard_detail"])' "$tmp/s3/latest/results.json"

# ---- merge all four and compare with the unsharded run ----
expect_out 0 '^merged 4 shards into ' "merge of 4 shards" \
    "$S" report --merge "$tmp/merged" "$tmp/s3/latest" "$tmp/s1/latest" "$tmp/s4/latest" \
    "$tmp/s2/latest"
for f in results.json junit.xml report.html summary.txt; do
    [ -s "$tmp/merged/$f" ] || bad "merged run has no $f"
done
tail -n 1 "$tmp/merged/summary.txt" >"$tmp/m.last"
tail -n 1 "$tmp/full/latest/summary.txt" >"$tmp/f.last"
expect 0 "merged summary.txt ends like the unsharded one" cmp "$tmp/m.last" "$tmp/f.last"
expect 0 "merged junit.xml is valid against junit.xsd" \
    xmllint --noout --schema "$XSD" "$tmp/merged/junit.xml"
expect 0 "unsharded junit.xml is valid against junit.xsd" \
    xmllint --noout --schema "$XSD" "$tmp/full/latest/junit.xml"
expect 0 "merged report.html is well-formed" xmllint --noout "$tmp/merged/report.html"
cp -r "$tmp/merged" "$tmp/rerender"
expect 0 "report re-renders the merged run" "$S" report "$tmp/rerender" --report all
for f in results.json junit.xml report.html summary.txt; do
    cmp -s "$tmp/merged/$f" "$tmp/rerender/$f" || bad "re-rendered merged $f differs"
done
cat >"$tmp/compare.py" <<'EOF'
import json, sys
import xml.etree.ElementTree as ET

def runs(path):
    d = json.load(open(path))
    return d, sorted((s["id"], s["repeat"], s["verdict"], tuple(sorted(s["fired"])))
                     for s in d["scenarios"])

def cases(path):
    out = []
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for c in suite.iter("testcase"):
            kids = sorted(k.tag for k in c if k.tag in ("failure", "error", "skipped"))
            kind = [(k.tag, k.get("type")) for k in c if k.tag in ("failure", "error")]
            out.append((suite.get("name"), c.get("classname"), c.get("name"), tuple(kids),
                        tuple(kind)))
    return sorted(out)

merged, m = runs(sys.argv[1] + "/results.json")
full, f = runs(sys.argv[2] + "/results.json")
assert m == f, ("scenario executions differ", set(m) ^ set(f))
assert len(m) == len(full["scenarios"]) and len(m) > 0
assert merged["totals"]["pass"] == full["totals"]["pass"]
assert len(merged["run"]["merged_from"]) == 4, merged["run"]["merged_from"]
assert merged["run"]["options"]["shard"] is None and merged["partial"] is False
assert cases(sys.argv[1] + "/junit.xml") == cases(sys.argv[2] + "/junit.xml"), "junit differs"
print("same", len(m), "executions")
EOF
expect_out 0 '^same [0-9]+ executions$' "merged = unsharded (executions, verdicts, checks, JUnit)" \
    python3 "$tmp/compare.py" "$tmp/merged" "$tmp/full/latest"

# ---- refusals and the missing shard ----
expect_out 1 'report\.shard_missing: 1 of 4 shards missing: shard 3/4 ' \
    "3 of 4 shards name the missing one" \
    "$S" report --merge "$tmp/m3" "$tmp/s1/latest" "$tmp/s2/latest" "$tmp/s4/latest"
expect_out 0 '^partial shard 3/4 missing$' "the 3-shard merge is marked partial" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("partial" if d["partial"] else "complete", d["partial_reason"])' "$tmp/m3/results.json"
grep -q 'PARTIAL' "$tmp/m3/summary.txt" || bad "the 3-shard summary.txt does not say PARTIAL"
grep -q 'PARTIAL RUN: shard 3/4 missing\.</p>' "$tmp/m3/report.html" ||
    bad "the 3-shard report.html has no banner naming the missing shard"
grep -q 'name="partial" value="shard 3/4 missing"' "$tmp/m3/junit.xml" ||
    bad "the 3-shard junit.xml does not say partial"
expect_out 2 'report\.shard_duplicate: .*s1/latest .*s1/latest both hold shard 1/4' \
    "the same shard twice" \
    "$S" report --merge "$tmp/dup" "$tmp/s1/latest" "$tmp/s1/latest" "$tmp/s2/latest"
[ -e "$tmp/dup" ] && bad "a refused merge created its folder"
# OUT must not be one of the shards: the merged run would overwrite it.
cp "$tmp/s1/latest/results.json" "$tmp/s1-before.json"
expect_out 2 'OUT .* is the run folder of .*s1/latest; the merged run would overwrite that shard \[usage.invalid_argument\]' \
    "OUT is one of the shards" \
    "$S" report --merge "$tmp/s1/latest" "$tmp/s1/latest" "$tmp/s2/latest" "$tmp/s3/latest" \
    "$tmp/s4/latest"
cmp -s "$tmp/s1/latest/results.json" "$tmp/s1-before.json" || bad "a refused merge changed its shard"
# Forged shards: another git rev; another shard count; shard 2's scenarios claiming shard 3.
forge() { # forge SRC_RUN DEST_DIR PYTHON_EXPR_ON_d
    mkdir -p "$2" && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2] + "/results.json", "w"))' "$1/results.json" "$2" "$3"
}
forge "$tmp/s2/latest" "$tmp/rev" 'd["run"]["git_rev"] = "f" * 40'
forge "$tmp/s2/latest" "$tmp/count" 'd["run"]["options"]["shard"] = "2/5"'
forge "$tmp/s2/latest" "$tmp/twice" 'd["run"]["options"]["shard"] = "3/4"'
forge "$tmp/full/latest" "$tmp/unsharded" 'pass'
expect_out 2 'report\.run_mismatch: .*/rev is not a shard of the run of .*: git_rev' \
    "a shard of another git rev" \
    "$S" report --merge "$tmp/x" "$tmp/s1/latest" "$tmp/rev" "$tmp/s3/latest" "$tmp/s4/latest"
expect_out 2 'report\.run_mismatch: .*different shard counts' "a shard of another shard count" \
    "$S" report --merge "$tmp/x" "$tmp/s1/latest" "$tmp/count"
expect_out 2 'report\.run_mismatch: .*unsharded is not a shard' "an unsharded run" \
    "$S" report --merge "$tmp/x" "$tmp/s1/latest" "$tmp/unsharded"
expect_out 2 "report\\.scenario_twice: scenario '[^']+' \\(repeat 1\\) ran twice: in .*s2/latest \\(shard 2/4\\) and in .*twice \\(shard 3/4\\)" \
    "a scenario in two shards" \
    "$S" report --merge "$tmp/x" "$tmp/s1/latest" "$tmp/s2/latest" "$tmp/twice" "$tmp/s4/latest"
printf '{"schema": 1, "run": {"options": {"shard": "9/4"}}}\n' >"$tmp/bad.json"
expect_out 2 "'shard' must be" "a corrupt shard is refused by name" \
    "$S" report --merge "$tmp/x" "$tmp/s1/latest" "$tmp/bad.json"
expect 2 "--merge without folders" "$S" report --merge "$tmp/x"
[ -e "$tmp/x" ] && bad "a refused merge created its folder"

# ---- the shard's sources and their errors (no engine runs: --list) ----
L="run --list scenarios/bugs"
expect_out 0 'shard 3/4 from kubernetes \(JOB_COMPLETION_INDEX=2 SYNCROLL_SHARD_COUNT=4\)' \
    "Kubernetes index with SYNCROLL_SHARD_COUNT" env JOB_COMPLETION_INDEX=2 SYNCROLL_SHARD_COUNT=4 "$S" $L
expect_out 0 'shard 1/2 from kubernetes \(JOB_COMPLETION_INDEX=0 --shard-count 2\)' "Kubernetes index with --shard-count" \
    env JOB_COMPLETION_INDEX=0 "$S" $L --shard-count 2
expect_out 0 'shard 2/3 from circleci \(CIRCLE_NODE_INDEX=1 CIRCLE_NODE_TOTAL=3\)' "CircleCI" \
    env CIRCLE_NODE_INDEX=1 CIRCLE_NODE_TOTAL=3 "$S" $L
expect_out 0 'shard 2/2 from option \(--shard 2/2\)' "--shard wins over the environment" \
    env CI_NODE_INDEX=1 CI_NODE_TOTAL=4 "$S" $L --shard 2/2
env CI_NODE_TOTAL=1 "$S" $L >"$tmp/one" 2>&1 || bad "CI_NODE_TOTAL=1 alone is refused"
grep -q 'shard' "$tmp/one" && bad "CI_NODE_TOTAL=1 alone shards the run"
E='run\.shard_env: '
expect_out 2 "${E}gitlab says shard 2/4 .* but circleci says 1/4" "two CI systems disagree" \
    env CI_NODE_INDEX=2 CI_NODE_TOTAL=4 CIRCLE_NODE_INDEX=0 CIRCLE_NODE_TOTAL=4 "$S" $L
expect_out 2 "${E}BUILDKITE_PARALLEL_JOB='x'" "a malformed index" \
    env BUILDKITE_PARALLEL_JOB=x BUILDKITE_PARALLEL_JOB_COUNT=4 "$S" $L
expect_out 2 "${E}BUILDKITE_PARALLEL_JOB_COUNT='-4'" "a malformed count" \
    env BUILDKITE_PARALLEL_JOB=0 BUILDKITE_PARALLEL_JOB_COUNT=-4 "$S" $L
expect_out 2 "${E}CI_NODE_INDEX=0 is out of range for 4 shards \\(1-based\\)" "GitLab is 1-based" \
    env CI_NODE_INDEX=0 CI_NODE_TOTAL=4 "$S" $L
expect_out 2 "${E}CIRCLE_NODE_INDEX=3 is out of range for 3 shards" "CircleCI is 0-based" \
    env CIRCLE_NODE_INDEX=3 CIRCLE_NODE_TOTAL=3 "$S" $L
expect_out 2 "${E}JOB_COMPLETION_INDEX=1 gives no shard count" "Kubernetes needs a count" \
    env JOB_COMPLETION_INDEX=1 "$S" $L
expect_out 2 "${E}--shard-count 3 conflicts with SYNCROLL_SHARD_COUNT=4" "two counts disagree" \
    env JOB_COMPLETION_INDEX=1 SYNCROLL_SHARD_COUNT=4 "$S" $L --shard-count 3
expect_out 2 "${E}BUILDKITE_PARALLEL_JOB_COUNT=4 conflicts with the shard count 2" \
    "a count against the CI system's" \
    env BUILDKITE_PARALLEL_JOB=0 BUILDKITE_PARALLEL_JOB_COUNT=4 "$S" $L --shard-count 2
expect_out 2 "${E}CI_NODE_TOTAL=4 is set but CI_NODE_INDEX is not" "a count without its index" \
    env CI_NODE_TOTAL=4 "$S" $L
expect_out 2 "${E}a shard count \\(3\\) without a shard index" "--shard-count alone" \
    "$S" $L --shard-count 3
expect_out 2 "${E}--shard '0/4'" "--shard 0/4" "$S" $L --shard 0/4
expect_out 2 "${E}--shard '2/4' conflicts|${E}--shard 2/4 conflicts" "--shard against --shard-count" \
    "$S" $L --shard 2/4 --shard-count 3
expect_out 2 "SYNCROLL_RUN_GROUP='a b'" "a malformed run group" env SYNCROLL_RUN_GROUP='a b' "$S" $L

# ---- the partition is a stable hash of the id: adding a scenario moves only that one ----
mkdir "$tmp/suite"
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
    sed "s/\"t-basic\"/\"fleet-$i\"/" tests/scenarios/pass/basic.json >"$tmp/suite/s$i.json"
done
part() { # part OUT: "shard id" lines of the suite's 4 shards
    for k in 1 2 3 4; do
        "$S" run --list --shard "$k/4" "$tmp/suite" 2>/dev/null | sed "s/^/$k /"
    done | sort >"$1"
}
part "$tmp/before"
[ "$(wc -l <"$tmp/before")" -eq 12 ] || bad "4 shards list $(wc -l <"$tmp/before") of 12 scenarios"
[ "$(cut -d' ' -f2 "$tmp/before" | sort -u | wc -l)" -eq 12 ] || bad "a scenario is in two shards"
[ "$(cut -d' ' -f1 "$tmp/before" | sort -u | wc -l)" -ge 2 ] || bad "every scenario in one shard"
sed 's/"t-basic"/"fleet-new"/' tests/scenarios/pass/basic.json >"$tmp/suite/s0.json"
part "$tmp/after"
grep -v ' fleet-new$' "$tmp/after" >"$tmp/after.old"
expect 0 "adding a scenario moves no other scenario" cmp "$tmp/before" "$tmp/after.old"
[ "$(grep -c ' fleet-new$' "$tmp/after")" -eq 1 ] || bad "the added scenario is not in one shard"
finish
