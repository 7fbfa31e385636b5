#!/bin/sh
# Reports on disk: junit.xml valid against tests/junit.xsd, report.html well-formed (XHTML) and
# parsed as HTML without errors other than HTML5/SVG tag names, `syncroll report` re-rendering
# byte for byte, and its --baseline exit codes. Needs xmllint (libxml2-utils, make deps).
set -u
S=${SYNCROLL:?SYNCROLL must point at the syncroll executable}
F=${REPORT_FIXTURE:?REPORT_FIXTURE must point at report_fixture}
XSD=${JUNIT_XSD:?JUNIT_XSD must point at tests/junit.xsd}
if ! command -v xmllint >/dev/null 2>&1; then
    echo "FAIL: xmllint not found; 'make deps' installs libxml2-utils"
    exit 1
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
expect() { # expect <status> <description> <command...>
    want=$1; what=$2; shift 2
    out=$("$@" 2>&1); got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want"; echo "$out"; fail=1
    else
        echo "ok: $what"
    fi
}
expect_out() { # expect_out <status> <grep -E pattern> <description> <command...>
    want=$1; pat=$2; what=$3; shift 3
    out=$("$@" 2>&1); got=$?
    if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -Eq "$pat"; then
        echo "FAIL: $what: exit $got (expected $want), output lacks /$pat/"; echo "$out"; fail=1
    else
        echo "ok: $what"
    fi
}

"$F" "$T/a" 1 && "$F" "$T/b" 2 || { echo "FAIL: report_fixture"; exit 1; }

# junit.xml against the schema, and a broken variant the schema must reject.
expect 0 "junit.xml is valid against junit.xsd" xmllint --noout --schema "$XSD" "$T/a/junit.xml"
sed 's/ classname="[^"]*"//' "$T/a/junit.xml" >"$T/bad1.xml"
sed 's/<skipped /<skipped bogus="1" /' "$T/a/junit.xml" >"$T/bad2.xml"
for b in bad1 bad2; do
    if xmllint --noout --schema "$XSD" "$T/$b.xml" >/dev/null 2>&1; then
        echo "FAIL: junit.xsd accepts $b.xml"; fail=1
    else
        echo "ok: junit.xsd rejects $b.xml"
    fi
done

# report.html: well-formed XML, and no HTML parser error except HTML5/SVG tag names.
expect 0 "report.html is well-formed (XHTML)" xmllint --noout "$T/a/report.html"
errs=$(xmllint --html --noout "$T/a/report.html" 2>&1 | grep 'parser error' |
    grep -Ev 'Tag (svg|rect|line|text|title|footer|section) invalid')
if [ -n "$errs" ]; then
    echo "FAIL: report.html has HTML parser errors:"; echo "$errs"; fail=1
else
    echo "ok: report.html parses as HTML"
fi

# Re-rendering from results.json gives the same files, results.json included.
mkdir "$T/c" && cp "$T/a/results.json" "$T/c/"
expect_out 0 '^2 passed, 2 failed, 1 skipped$' "report re-renders a run" "$S" report "$T/c"
for f in summary.txt junit.xml report.html; do
    expect 0 "re-rendered $f is identical" cmp "$T/a/$f" "$T/c/$f"
done
expect 0 "report --report json" "$S" report "$T/c" --report json
expect 0 "re-written results.json is identical" cmp "$T/a/results.json" "$T/c/results.json"

# Baselines: b is a with every latency doubled.
expect_out 1 '^REGRESSED run request p99 ' "slower run regresses" "$S" report "$T/b" --baseline "$T/a"
expect_out 1 '^27 p99 regressions above 20% ' "regressions are counted" \
    "$S" report "$T/b" --baseline "$T/a/results.json" --report text
expect_out 0 '^no p99 regression' "faster run does not regress" "$S" report "$T/a" --baseline "$T/b"
expect 0 "threshold above the slowdown" "$S" report "$T/b" --baseline "$T/a" --threshold 500

# Usage errors and bad inputs exit 2.
printf '{"schema": 1, "scenarios": [{"verdict": 3}]}\n' >"$T/bad.json"
expect 2 "no run folder" "$S" report
expect 2 "two run folders" "$S" report "$T/a" "$T/b"
expect 2 "missing run folder" "$S" report "$T/nonexistent"
expect 2 "malformed results.json" "$S" report "$T/bad.json"
expect 2 "bad --threshold" "$S" report "$T/a" --threshold abc
expect 2 "negative --threshold" "$S" report "$T/a" --threshold -5
expect 2 "unknown reporter" "$S" report "$T/a" --report pdf
expect 2 "unknown option" "$S" report "$T/a" --frobnicate 1
expect 2 "missing baseline" "$S" report "$T/a" --baseline "$T/nonexistent"
expect 0 "report --help" "$S" report --help
exit $fail
