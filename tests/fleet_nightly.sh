#!/bin/sh
# A 4-shard nightly as a CI system runs it (ctest fleet.nightly): twelve scenarios, one
# of them failing (routes dropped on turn 2 of 8 rollouts, no expectation), run as 4 shards from
# the CI systems' own variables (Buildkite for 1-2, GitLab for 3-4), merged with
# `report --merge`. The merge exits 1 as `run` does; every link of the merged report.html
# resolves to a file or folder under the merged folder (the shards' folders are removed before
# looking, as a CI job that uploads only merged/ would have it); the verdict table lists the
# failure first with the shard that ran it; the header names each shard's host and command; the
# 8 identical checks are grouped. A shard that was interrupted makes the merge exit 1 too, and
# a merge of passing shards exits 0. Needs python3 (make deps). About 5 s.
. "$(dirname "$0")/lib.sh"
cd "$SRC" || exit 2
unset BUILDKITE_PARALLEL_JOB BUILDKITE_PARALLEL_JOB_COUNT JOB_COMPLETION_INDEX CI_NODE_INDEX \
    CI_NODE_TOTAL CIRCLE_NODE_INDEX CIRCLE_NODE_TOTAL SYNCROLL_SHARD_COUNT SYNCROLL_RUN_GROUP
mkdir "$tmp/suite"
for i in 1 2 3 4 5 6 7 8 9 10 11; do
    sed "s/\"t-basic\"/\"nightly-sim-$i\"/" tests/scenarios/pass/basic.json >"$tmp/suite/s$i.json"
done
python3 - "$SRC/scenarios/bugs/routes-dropped.defect.json" "$tmp/suite/zz-failing.json" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
d["id"] = "nightly-sim-failing"
del d["expect"]
d["engines"] = {"faults": [{"kind": "routes_dropped", "turn": [2]}]}
d["steps"][0]["batch"] = 8
json.dump(d, open(sys.argv[2], "w"))
PY
    die "could not write the failing scenario"

export SYNCROLL_RUN_GROUP=nightly-sim-1
for k in 1 2 3 4; do
    if [ "$k" -le 2 ]; then
        vars="BUILDKITE_PARALLEL_JOB=$((k - 1)) BUILDKITE_PARALLEL_JOB_COUNT=4"
    else
        vars="CI_NODE_INDEX=$k CI_NODE_TOTAL=4"
    fi
    # shellcheck disable=SC2086 # $vars is a list of assignments
    env $vars "$S" run -j 2 --out "$tmp/job-$k/runs" "$tmp/suite" >"$tmp/job-$k.out" 2>&1
    rc=$?
    grep -q "shard $k/4 from" "$tmp/job-$k.out" || bad "job $k did not run shard $k/4 from its CI variables"
    if grep -q '^FAIL  nightly-sim-failing' "$tmp/job-$k.out"; then
        [ "$rc" -eq 1 ] || bad "the shard with the failure exited $rc, not 1"
        failing=$k
    fi
done
[ -n "${failing:-}" ] || die "no shard ran the failing scenario"
# A symbolic link inside the failure's artifacts (to a file outside): never followed nor copied.
art=$(ls -d "$tmp/job-$failing"/runs/2*/artifacts/nightly-sim-failing) || die "no artifacts kept"
echo "outside" >"$tmp/outside.txt"
ln -s "$tmp/outside.txt" "$art/leak"

expect_out 1 '^11 passed, 1 failed$' "the merge of a nightly with one failure exits 1" \
    "$S" report --merge "$tmp/merged" "$tmp/job-1/runs/latest" "$tmp/job-2/runs/latest" \
    "$tmp/job-3/runs/latest" "$tmp/job-4/runs/latest"
printf '%s\n' "$OUT" | grep -Eq '^carried [0-9]+ linked files and folders ' ||
    bad "the merge did not carry the failure's artifacts and expanded scenario"
printf '%s\n' "$OUT" | grep -q '^1 symbolic link or special file inside carried folders left out$' ||
    bad "the merge does not say it left the symbolic link out"
[ -e "$tmp/merged/shard-$failing/artifacts/nightly-sim-failing/leak" ] &&
    bad "a symbolic link of a shard folder was copied"
grep -rq outside "$tmp/merged" && bad "a file outside the shard folder was read into merged/"

# A second merge into the same folder (a CI workspace reused night after night): the shards'
# evidence paths are the same every night, so merged/shard-K is emptied first and the copy holds
# the shard's bytes as they are now, not the first merge's (before: the old copy stayed and was
# counted as carried). A file only the first merge wrote is gone too.
evsrc=$(ls "$art"/evidence/step*-sample*/index.txt 2>/dev/null | head -1)
[ -n "$evsrc" ] || die "no evidence index.txt in the failing shard"
evrel=${evsrc#"$art"/}
echo "stale from an earlier night" >"$tmp/merged/shard-$failing/artifacts/nightly-sim-failing/stale.txt"
echo "changed since the first merge" >>"$evsrc"
expect_out 1 '^11 passed, 1 failed$' "a second merge into the same folder exits 1" \
    "$S" report --merge "$tmp/merged" "$tmp/job-1/runs/latest" "$tmp/job-2/runs/latest" \
    "$tmp/job-3/runs/latest" "$tmp/job-4/runs/latest"
cmp -s "$evsrc" "$tmp/merged/shard-$failing/artifacts/nightly-sim-failing/$evrel" &&
    ok "the second merge's evidence holds the shard's new bytes" ||
    bad "the second merge kept the first merge's copy of $evrel"
[ -e "$tmp/merged/shard-$failing/artifacts/nightly-sim-failing/stale.txt" ] &&
    bad "a file of an earlier merge stayed in merged/shard-$failing"

# A symbolic link at OUT/shard-K is refused, named, and not followed: what it points to stays.
mkdir "$tmp/m2" "$tmp/linked"
echo "keep" >"$tmp/linked/keep.txt"
ln -s "$tmp/linked" "$tmp/m2/shard-1"
expect_out 2 "cannot clear what an earlier merge left: $tmp/m2/shard-1: cannot remove: .*\\[io\\.error\\]" \
    "a symbolic link at OUT/shard-K: refused, named" \
    "$S" report --merge "$tmp/m2" "$tmp/job-1/runs/latest" "$tmp/job-2/runs/latest" \
    "$tmp/job-3/runs/latest" "$tmp/job-4/runs/latest"
[ "$(cat "$tmp/linked/keep.txt" 2>/dev/null)" = keep ] && [ -L "$tmp/m2/shard-1" ] ||
    bad "the link at OUT/shard-1 was followed or removed"

# Over the bound (a 300 MiB sparse file, refused before a byte is copied): the folder is not
# carried and is named as text, not as a dead link; what fits is still carried.
truncate -s 300M "$art/huge.bin" || die "truncate"
expect_out 1 '^carried [0-9]+ linked files and folders .*; the rest is over the 256 MiB bound$' \
    "a merge over the carry bound says so" \
    "$S" report --merge "$tmp/big" "$tmp/job-1/runs/latest" "$tmp/job-2/runs/latest" \
    "$tmp/job-3/runs/latest" "$tmp/job-4/runs/latest"
printf '%s\n' "$OUT" | grep -q '^1 link not carried ' || bad "the merge does not count the link it left"
grep -q 'href="shard-[0-9]/[^"]*/artifacts/nightly-sim-failing"' "$tmp/big/report.html" &&
    bad "the folder over the bound is still a link"
grep -q "artifacts: $tmp/job-$failing/runs/2[^ ]*/artifacts/nightly-sim-failing " "$tmp/big/report.html" ||
    bad "the folder over the bound is not named in its shard folder"
[ -e "$tmp/big/shard-$failing/artifacts/nightly-sim-failing/huge.bin" ] &&
    bad "the file over the bound was written"
rm -rf "$tmp/job-1" "$tmp/job-2" "$tmp/job-3" "$tmp/job-4"
expect_out 0 '^ok [0-9]+ links$' "every link of the merged report.html resolves under merged/" \
    python3 - "$tmp/merged" <<'PY'
import html.parser, os, sys
root = os.path.realpath(sys.argv[1])
class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
p = Links()
p.feed(open(os.path.join(root, "report.html")).read())
files = 0
for h in p.hrefs:
    if h.startswith("#"):
        assert h[1:] in p.ids, ("dead anchor", h)
        continue
    t = os.path.realpath(os.path.join(root, h))
    assert t.startswith(root + os.sep), ("outside merged/", h)
    assert os.path.exists(t), ("does not resolve", h)
    files += 1
assert files >= 3, p.hrefs
print("ok", len(p.hrefs), "links")
PY
# The failure's evidence (per failing sample: index.txt, the failing turn's exchange, the checks)
# is carried with its artifacts and holds the failing exchange: routes dropped on turn 2.
ev=$(ls -d "$tmp/merged/shard-$failing"/artifacts/nightly-sim-failing/evidence/step*-sample*/ 2>/dev/null |
    head -1)
[ -n "$ev" ] && [ -f "$ev/index.txt" ] || bad "the failure's evidence folder was not carried into merged/"
if [ -n "$ev" ]; then
    grep -q 'client.routes_missing' "$ev/checks.txt" || bad "the evidence's checks.txt lacks the failing check"
    [ -s "$ev/response-turn2.bin" ] || bad "the evidence lacks the failing turn's response bytes"
    grep -q '"routed_experts":null' "$ev/response-turn2.bin" ||
        bad "the kept response of turn 2 is not the one whose routes were dropped"
    grep -q 'POST' "$ev/exchange-turn2.txt" || bad "the evidence lacks the failing exchange's request line"
fi
[ -s "$tmp/merged/shard-$failing/artifacts/nightly-sim-failing/engine-0.log" ] ||
    [ -f "$tmp/merged/shard-$failing/artifacts/nightly-sim-failing/engine-0.log" ] ||
    bad "the failure's engine log was not carried into merged/shard-$failing"

expect_out 0 '^ok$' "failure first (html, text, junit), shard column, shard header, grouped checks" python3 - \
    "$tmp/merged" "$failing" <<'PY'
import json, re, sys
root, k = sys.argv[1], sys.argv[2]
page = open(root + "/report.html").read()
rows = re.findall(r'<tr><td><span class="badge (\w+)">.*?</tr>', page)
assert rows[0] == "fail" and rows.count("fail") == 1, rows[:3]
first = re.search(r'<h2 id="verdicts">.*?</tr>\n(<tr>.*?</tr>)', page, re.S).group(1)
assert "nightly-sim-failing" in first and "<td>%s/4</td>" % k in first, first
assert "<th>shard</th>" in page
assert page.count('<tr><td>%s/4</td>' % k) >= 1
assert re.search(r'<table id="shards">.*(<tr><td>[1-4]/4</td>.*){4}', page, re.S), "no shards table"
assert "merged from 4 of 4 shards" in page
assert "... 5 more like these (8 in all)" in page, "checks not grouped"
text = open(root + "/summary.txt").read()
lines = [l for l in text.splitlines() if re.match(r"(\[\d/4\] )?(PASS|FAIL)", l)]
assert lines[0].startswith("[%s/4] FAIL  nightly-sim-failing" % k), lines[:2]
assert re.search(r"^  shard 4/4: .* on .*: .*syncroll run ", text, re.M), "no shard lines"
assert "... 5 more client.routes_missing like these (8 in all)" in text
import xml.etree.ElementTree as ET
cases = [c for c in ET.parse(root + "/junit.xml").getroot().iter("testcase")]
assert cases[0].find("failure") is not None and "nightly-sim-failing" in cases[0].get("name"), \
    [c.get("name") for c in cases[:2]]
d = json.load(open(root + "/results.json"))
assert d["run"]["merged_of"] == 4 and len(d["run"]["shards"]) == 4, d["run"]
assert {s["id"]: s["shard"] for s in d["scenarios"]}["nightly-sim-failing"] == int(k)
print("ok")
PY

# An interrupted shard: the merge is partial and exits 1; a merge of passing shards exits 0.
for k in 1 2; do
    "$S" run --shard "$k/2" --out "$tmp/p$k" "$tmp/suite/s1.json" "$tmp/suite/s2.json" \
        "$tmp/suite/s3.json" >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || bad "passing shard $k/2 exited $rc"
done
expect_out 0 '^merged 2 shards into .*[^)]$' "a merge of passing shards exits 0" \
    "$S" report --merge "$tmp/pm" "$tmp/p1/latest" "$tmp/p2/latest"
python3 - "$tmp/p2/latest/results.json" <<'PY' || bad "could not forge the interrupted shard"
import json, sys
d = json.load(open(sys.argv[1]))
d["partial"], d["partial_reason"] = True, "interrupted by SIGTERM"
for s in d["scenarios"][-1:]:
    s["verdict"] = "interrupted"
json.dump(d, open(sys.argv[1], "w"))
PY
expect_out 1 '^merged 2 shards into .* \(partial\)$' "a merge with an interrupted shard exits 1" \
    "$S" report --merge "$tmp/pi" "$tmp/p1/latest" "$tmp/p2/latest"
finish
