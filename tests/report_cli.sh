#!/bin/sh
# Reports on disk: junit.xml valid against tests/junit.xsd, report.html well-formed (XHTML) and
# parsed as HTML without errors other than HTML5/SVG tag names, `syncroll report` re-rendering
# byte for byte, and its --baseline exit codes. Needs xmllint (libxml2-utils, make deps).
. "$(dirname "$0")/lib.sh"
F=${REPORT_FIXTURE:?REPORT_FIXTURE must point at report_fixture}
XSD=${JUNIT_XSD:?JUNIT_XSD must point at tests/junit.xsd}
command -v xmllint >/dev/null 2>&1 || die "xmllint not found; 'make deps' installs libxml2-utils"

"$F" "$tmp/a" 1 && "$F" "$tmp/b" 2 || die "report_fixture"

# junit.xml against the schema, and a broken variant the schema must reject.
expect 0 "junit.xml is valid against junit.xsd" xmllint --noout --schema "$XSD" "$tmp/a/junit.xml"
sed 's/ classname="[^"]*"//' "$tmp/a/junit.xml" >"$tmp/bad1.xml"
sed 's/<skipped /<skipped bogus="1" /' "$tmp/a/junit.xml" >"$tmp/bad2.xml"
for b in bad1 bad2; do
    if xmllint --noout --schema "$XSD" "$tmp/$b.xml" >/dev/null 2>&1; then
        bad "junit.xsd accepts $b.xml"
    else
        ok "junit.xsd rejects $b.xml"
    fi
done

# The counts per suite: one failure in bugs, one error in faults/http (report_fixture's run).
for want in 'name="bugs" tests="1" failures="1" errors="0" skipped="0"' \
    'name="faults/http" tests="1" failures="0" errors="1" skipped="0"' \
    'name="syncroll" tests="5" failures="1" errors="1" skipped="1"'; do
    if grep -q "$want" "$tmp/a/junit.xml"; then ok "junit.xml: $want"; else bad "junit.xml lacks $want"; fi
done

# report.html: well-formed XML, and no HTML parser error except HTML5/SVG tag names.
expect 0 "report.html is well-formed (XHTML)" xmllint --noout "$tmp/a/report.html"
errs=$(xmllint --html --noout "$tmp/a/report.html" 2>&1 | grep 'parser error' |
    grep -Ev 'Tag (svg|rect|line|text|title|footer|section) invalid')
if [ -n "$errs" ]; then
    bad "report.html has HTML parser errors:"
    echo "$errs"
else
    ok "report.html parses as HTML"
fi

# Re-rendering from results.json gives the same files, results.json included.
mkdir "$tmp/c" && cp "$tmp/a/results.json" "$tmp/c/"
expect_out 0 '^2 passed, 2 failed, 1 skipped$' "report re-renders a run" "$S" report "$tmp/c"
for f in summary.txt junit.xml report.html; do
    expect 0 "re-rendered $f is identical" cmp "$tmp/a/$f" "$tmp/c/$f"
done
expect 0 "report --report json" "$S" report "$tmp/c" --report json
expect 0 "re-written results.json is identical" cmp "$tmp/a/results.json" "$tmp/c/results.json"

# Baselines: b is a with every latency doubled.
# Largest increase first, the top 10 only, and nothing that grew by 0.1 ms or less.
expect_out 1 '^REGRESSED row-mismatch .* sync_total p99 224\.693 ms -> 449\.386 ms \(\+224\.693 ms, \+100\.0%\)$' \
    "slower run regresses, largest first" "$S" report "$tmp/b" --baseline "$tmp/a"
printf '%s\n' "$OUT" | grep -m 1 '^REGRESSED' | grep -q ' sync_total p99 224\.693 ms' ||
    bad "the largest increase is not listed first"
[ "$(printf '%s\n' "$OUT" | grep -c '^REGRESSED')" -eq 10 ] || bad "--baseline did not print the top 10"
printf '%s\n' "$OUT" | grep -q '^\.\.\. 11 more regressions, smaller (--top 21 shows them)$' ||
    bad "--baseline did not count the regressions beyond the top 10"
expect_out 1 '^21 p99 regressions above 20% and 0\.1 ms against .*; 6 under the floor ignored$' \
    "regressions are counted, those under the floor apart" \
    "$S" report "$tmp/b" --baseline "$tmp/a/results.json" --report text
printf '%s\n' "$OUT" | awk '/^REGRESSED/ { d = $(NF - 2); sub(/^\(\+/, "", d); if (d + 0 <= 0.1) exit 1 }' ||
    bad "--baseline printed an increase under the floor"
expect_out 1 '^27 p99 regressions above 20% and 0 ms ' "--floor 0 keeps every one" \
    "$S" report "$tmp/b" --baseline "$tmp/a" --floor 0 --top 30
[ "$(printf '%s\n' "$OUT" | grep -c '^REGRESSED')" -eq 27 ] || bad "--top 30 did not print all 27"
expect 2 "bad --floor" "$S" report "$tmp/b" --baseline "$tmp/a" --floor -1
expect 2 "bad --top" "$S" report "$tmp/b" --baseline "$tmp/a" --top 0
expect_out 0 '^no p99 regression' "faster run does not regress" "$S" report "$tmp/a" --baseline "$tmp/b"
expect 0 "threshold above the slowdown" "$S" report "$tmp/b" --baseline "$tmp/a" --threshold 500

# Usage errors and bad inputs exit 2.
printf '{"schema": 1, "scenarios": [{"verdict": 3}]}\n' >"$tmp/bad.json"
expect 2 "no run folder" "$S" report
expect 2 "two run folders" "$S" report "$tmp/a" "$tmp/b"
expect 2 "missing run folder" "$S" report "$tmp/nonexistent"
expect 2 "malformed results.json" "$S" report "$tmp/bad.json"
expect 2 "bad --threshold" "$S" report "$tmp/a" --threshold abc
expect 2 "negative --threshold" "$S" report "$tmp/a" --threshold -5
expect 2 "unknown reporter" "$S" report "$tmp/a" --report pdf
expect 2 "unknown option" "$S" report "$tmp/a" --frobnicate 1
expect 2 "missing baseline" "$S" report "$tmp/a" --baseline "$tmp/nonexistent"
expect 0 "report --help" "$S" report --help
finish
