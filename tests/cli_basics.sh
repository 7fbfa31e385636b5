#!/bin/sh
# CLI contract of the built executable: help, version, unknown commands and their exit codes.
. "$(dirname "$0")/lib.sh"
expect 0 "--help" "$S" --help
expect 0 "help lists version" sh -c "'$S' --help | grep -q '^  version '"
expect 2 "no arguments is a usage error" "$S"
expect 2 "unknown command" "$S" frobnicate
expect 0 "version" sh -c "'$S' version | grep -Eq '^syncroll [0-9]+\.[0-9]+\.[0-9]+ \(base64: (scalar|avx2|avx512vbmi)\)$'"
expect 2 "version rejects arguments" "$S" version extra
expect 0 "errors lists envelope.byte_count" sh -c "'$S' errors | grep -q '^envelope.byte_count '"
for c in $("$S" --help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1}'); do
    expect 0 "$c --help" "$S" "$c" --help
done
# Option ranges at their limits: a run group of 1 and 128 characters is taken, 0 and 129 are
# usage errors (checked before --help prints); an engine index of 0 and 63 starts an engine (the
# watchdog stops it: exit 1), -1 and 64 are usage errors.
g128=$(printf '%0128d' 0 | tr 0 a)
expect 0 "--run-group of 128 characters" "$S" run --run-group "$g128" --help
expect 0 "--run-group of 1 character" "$S" run --run-group a --help
expect 2 "--run-group of 129 characters" "$S" run --run-group "${g128}a" --help
expect 2 "--run-group empty" "$S" run --run-group "" --help
for i in 0 63; do
    expect 1 "engine --index $i starts" "$S" engine --index "$i" --lifetime 0.2
done
for i in -1 64; do
    expect_out 2 "bad option or value: --index $i" "engine --index $i is a usage error" \
        "$S" engine --index "$i" --lifetime 0.2
done
# Every command's error line names the error (its dotted name), not only the message.
expect_out 2 "^syncroll lint: io.error: /nonexistent-scenario: " "lint of a missing path names io.error" \
    "$S" lint /nonexistent-scenario
expect_out 2 "^syncroll report: usage.invalid_argument: unknown reporter 'bogus'" \
    "report --report with an unknown reporter names usage.invalid_argument" \
    "$S" report --report bogus /nonexistent-run
expect_out 2 "^syncroll run: io.error: /nonexistent-scenario: " "run of a missing path names io.error" \
    "$S" run --out "${TMPDIR:-/tmp}" /nonexistent-scenario
# lint refuses what run refuses: a setting one execution of the dialect matrix cannot have.
mx=$(mktemp "${TMPDIR:-/tmp}/syncroll-lint-XXXXXX.json")
printf '%s\n' '{"id": "lint-matrix", "description": "delta transport where a plane has none",' \
    ' "engines": {"dialects": ["skyrl", "vllm"]}, "weights": {"transport": "delta"},' \
    ' "steps": [{"kind": "rollout", "batch": 1, "turns": 1, "max_tokens": 4}]}' >"$mx"
expect_out 2 "its vllm execution \(engines.dialects\).*\[scenario.invalid\]" \
    "lint names a dialect execution run would refuse" "$S" lint "$mx"
sed -i 's/"dialects": \["skyrl", "vllm"\]/"dialects": ["skyrl"]/' "$mx"
expect 0 "lint accepts the same file with its skyrl execution only" "$S" lint "$mx"
rm -f "$mx"
finish
