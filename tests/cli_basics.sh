#!/bin/sh
# CLI contract of the built executable: help, version, unknown commands and their exit codes.
set -u
S=${SYNCROLL:?SYNCROLL must point at the syncroll executable}
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
expect 0 "--help" "$S" --help
expect 0 "help lists version" sh -c "'$S' --help | grep -q '^  version '"
expect 2 "no arguments is a usage error" "$S"
expect 2 "unknown command" "$S" frobnicate
expect 0 "version" sh -c "'$S' version | grep -Eq '^syncroll [0-9]+\.[0-9]+\.[0-9]+ \(base64: (scalar|avx2)\)$'"
expect 2 "version rejects arguments" "$S" version extra
expect 0 "errors lists envelope.byte_count" sh -c "'$S' errors | grep -q '^envelope.byte_count '"
for c in $("$S" --help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1}'); do
    expect 0 "$c --help" "$S" "$c" --help
done
exit $fail
