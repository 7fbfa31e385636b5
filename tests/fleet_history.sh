#!/bin/sh
# `syncroll report --history` (ctest fleet.history, issue 23) over the ten synthetic nights of
# tests/history_fixture.c plus hostile folders: two corrupt results.json (reported as SKIPPED,
# left out, not fatal), a folder without one (ignored) and a `latest` link (not followed). The
# first failing night and the revs around it, the flaky scenario, history.json, a well-formed
# history.html, --last, and the usage errors. Needs xmllint and python3 (make deps).
. "$(dirname "$0")/lib.sh"
F=${HISTORY_FIXTURE:?HISTORY_FIXTURE must point at history_fixture}
command -v xmllint >/dev/null 2>&1 || die "xmllint not found; 'make deps' installs libxml2-utils"
N=$tmp/nights
"$F" "$N" || die "history_fixture"
mkdir "$N/night-corrupt" "$N/night-truncated" "$N/not-a-run"
printf '{"schema": 1, "scenarios": [{"verdict": 3}]}\n' >"$N/night-corrupt/results.json"
head -c 700 "$N/night-05/results.json" >"$N/night-truncated/results.json"
ln -s night-10 "$N/latest"

expect_out 0 '^FAILING regressing: first failing night night-07 \(git r40000000000\), last passing night night-06 \(git r30000000000\)$' \
    "the first failing night and the git revs around it" "$S" report --history "$N"
printf '%s\n' "$OUT" >"$tmp/out"
grep -Eq '^FAILING late-error: first failing night night-09 \(git r5' "$tmp/out" ||
    bad "late-error's first failing night is not night-09"
grep -Eq '^FLAKY flaky: passed and failed on git rev r20000000000 \(nights night-03 and night-04\)$' \
    "$tmp/out" || bad "flaky is not named flaky with its rev"
grep -Eq '^SKIPPED night-corrupt: json\.schema: .*\(this night is left out\)$' "$tmp/out" ||
    bad "the corrupt night is not reported by name"
grep -Eq '^SKIPPED night-truncated: json\.syntax: ' "$tmp/out" ||
    bad "the truncated night is not reported by name"
grep -Eq '^10 nights \(2026-01-01T02:00:00Z \.\. 2026-01-10T02:00:00Z\), 6 scenarios, 2 failing, 1 flaky, 2 skipped' \
    "$tmp/out" || bad "the count line is wrong"
grep -q 'not-a-run\|latest' "$tmp/out" && bad "a folder without results.json or the link was read"
[ "$(grep -c '^FLAKY' "$tmp/out")" -eq 1 ] || bad "more than one scenario called flaky"

expect_out 0 '^ok$' "history.json" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [n["name"] for n in d["nights"]] == ["night-%02d" % k for k in range(1, 11)], d["nights"]
assert sorted((s["name"], s["error"]) for s in d["skipped"]) == [
    ("night-corrupt", "json.schema"), ("night-truncated", "json.syntax")], d["skipped"]
sc = {s["id"]: s for s in d["scenarios"]}
assert sorted(i for i in sc if sc[i]["flaky"]) == ["flaky"]
assert sorted(i for i in sc if sc[i]["failing"]) == ["late-error", "regressing"]
r = sc["regressing"]
assert r["first_fail"] == {"night": "night-07", "git_rev": "r4" + "0" * 37 + "4"}, r
assert r["last_pass"]["night"] == "night-06"
assert r["timeline"] == ["pass"] * 6 + ["fail"] * 4
assert sc["late-error"]["timeline"][-2:] == ["error", "error"]
assert sc["new-scenario"]["timeline"][:5] == ["absent"] * 4 + ["pass"]
req = [n["phases"]["request"]["p99_ms"] for n in d["nights"]]
assert req[-1] > req[0] * 1.5, req
# Per scenario: a wall time and a p99 per phase for every night, null where it did not run.
lat = sc["regressing"]["latency"]
assert len(lat["wall_ms"]) == 10 and all(v > 0 for v in lat["wall_ms"]), lat["wall_ms"]
r = lat["p99_ms"]["request"]
assert len(r) == 10 and r[-1] > r[0] * 1.5, r
assert sc["new-scenario"]["latency"]["p99_ms"]["request"][:4] == [None] * 4
print("ok")' "$N/history.json"
expect 0 "history.html is well-formed (XHTML)" xmllint --noout "$N/history.html"
errs=$(xmllint --html --noout "$N/history.html" 2>&1 | grep 'parser error' |
    grep -Ev 'Tag (svg|line|text|title|polyline|circle|footer|section) invalid')
[ -z "$errs" ] || bad "history.html has HTML parser errors: $errs"
grep -q '<svg' "$N/history.html" || bad "history.html has no SVG chart"
[ "$(sed -n '/id="scenario-trends"/,/<\/table>/p' "$N/history.html" | grep -c '^<tr><td>.*<svg')" -eq 6 ] ||
    bad "history.html has no trend row with sparklines for each of the 6 scenarios"
urls=$(grep -o 'https\{0,1\}://[^"]*' "$N/history.html" | grep -v '^http://www.w3.org/')
[ -z "$urls" ] || bad "history.html references outside the page: $urls"

# --last keeps the newest nights; --out writes elsewhere.
expect_out 0 '^FAILING regressing: first failing night night-08 .*, no passing night before it in the window$' \
    "--last 3" "$S" report --history "$N" --last 3 --out "$tmp/last3"
printf '%s\n' "$OUT" | grep -q '^FLAKY' && bad "--last 3 still calls flaky flaky"
printf '%s\n' "$OUT" | grep -q ', 7 older left out by --last' || bad "--last 3 does not count the rest"
[ -f "$tmp/last3/history.json" ] && [ -f "$tmp/last3/history.html" ] || bad "--out wrote nothing"

# A pass/fail alternation on changing revs is flaky too.
mkdir "$tmp/alt"
for k in 01 02 03 04 05 06 07 08 09 10; do cp -r "$N/night-$k" "$tmp/alt/"; done
python3 - "$tmp/alt" <<'EOF' || bad "could not forge the alternating nights"
import json, sys
for k in range(1, 11):
    p = "%s/night-%02d/results.json" % (sys.argv[1], k)
    d = json.load(open(p))
    d["run"]["git_rev"] = "rev%02d" % k
    for s in d["scenarios"]:
        if s["id"] == "steady-a" and k % 2 == 0:
            s["verdict"] = "fail"
    json.dump(d, open(p, "w"))
EOF
expect_out 0 '^FLAKY steady-a: changed between pass and fail 9 times in 10 nights$' \
    "alternating verdicts are flaky" "$S" report --history "$tmp/alt" --out "$tmp/alt-out"
# Its newest night failed: it is failing now, flaky or not (the page listed it only as flaky).
printf '%s\n' "$OUT" | grep -q '^FAILING steady-a: first failing night night-10 (git rev10), last passing night night-09 (git rev09)$' ||
    bad "a flaky scenario whose latest night failed is not listed as failing"
grep -q '<h2>Failing now (3)</h2>' "$tmp/alt-out/history.html" &&
    grep -q '<tr><td>steady-a <span class="badge skip">flaky</span></td><td>night-10</td>' \
        "$tmp/alt-out/history.html" ||
    bad "history.html's Failing now does not count the flaky scenario that failed last"

# A crafted results.json: markup in the start time, terminal escapes in the id and git rev.
mkdir "$tmp/hostile"
cp -r "$N/night-01" "$N/night-02" "$tmp/hostile/"
python3 - "$tmp/hostile/night-02/results.json" <<'EOF2' || bad "could not forge the hostile night"
import json, sys
d = json.load(open(sys.argv[1]))
d["run"]["start"]["iso"] = "P\"'><script>alert(9)</script>\u001b]0;x\u0007"
d["run"]["git_rev"] = "\u001b[2J\u0007rev"
d["scenarios"][0]["id"] = "<b>x</b>\u001b[31m\u0007"
d["scenarios"][0]["verdict"] = "fail"
json.dump(d, open(sys.argv[1], "w"))
EOF2
expect 0 "history of a crafted night" "$S" report --history "$tmp/hostile" --out "$tmp/hostile-out"
printf '%s' "$OUT" | od -c | grep -q '033\|007' && bad "ESC or BEL from results.json reached the terminal"
grep -q '<script\|<b>x' "$tmp/hostile-out/history.html" && bad "markup from results.json is in history.html unescaped"
grep -q 'to invalid;' "$tmp/hostile-out/history.html" || bad "a start time that is no time is not shown as invalid"
expect 0 "the crafted night's history.html is well-formed" xmllint --noout "$tmp/hostile-out/history.html"

# A night whose results.json is a symbolic link (to another night's, or any file) is not read.
mkdir "$tmp/linked" "$tmp/linked/night-x"
cp -r "$N/night-01" "$N/night-02" "$tmp/linked/"
ln -s ../night-02/results.json "$tmp/linked/night-x/results.json"
expect_out 0 '^SKIPPED night-x: io\.not_regular_file: night-x/results\.json is a symbolic link: not followed \(this night is left out\)$' \
    "a symlinked results.json is skipped by name" "$S" report --history "$tmp/linked" --out "$tmp/linked-out"
printf '%s\n' "$OUT" | grep -q '^2 nights ' || bad "the symlinked night was counted"

mkdir "$tmp/empty"
expect_out 2 'usage\.invalid_argument: .*holds no readable run folder' "no night" \
    "$S" report --history "$tmp/empty"
expect 2 "--history without DIR" "$S" report --history
expect 2 "--last 0" "$S" report --history "$N" --last 0
expect 2 "--last x" "$S" report --history "$N" --last x
expect 2 "unknown option" "$S" report --history "$N" --frobnicate
expect 2 "missing folder" "$S" report --history "$tmp/nonexistent"
finish
