#!/bin/sh
# CLI contract of the built executable: help, version, unknown commands and their exit codes.
. "$(dirname "$0")/lib.sh"
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
finish
