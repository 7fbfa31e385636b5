#!/bin/sh
# Issue #21 items 6-9, 11 and 14 through the executable: FIFOs are refused (never waited for),
# an escaped NUL never cuts a name or dtype, output built from untrusted bytes is escaped,
# report.html links only to paths inside the run folder, messages name the real problem, and
# lint and run estimate a scenario's memory.
. "$(dirname "$0")/lib.sh"

B=$SRC/fixtures/bodies
MIN=$SRC/scenarios/examples/minimal.json

# --- 9: a FIFO with no writer; `timeout` turns a regression (a hang) into a failure (-k: the old
# serve did not even stop on SIGTERM). ---
mkfifo "$tmp/fifo" || die "mkfifo"
expect_out 2 'not a regular file \(a FIFO\) \[io.not_regular_file\]' "lint refuses a FIFO" \
    timeout -k 2 10 "$S" lint "$tmp/fifo"
expect_out 2 'io.not_regular_file' "run refuses a FIFO" \
    timeout -k 2 10 "$S" run --out "$tmp/runs" "$tmp/fifo"
expect_out 2 'check-body: io.not_regular_file: .*fifo: not a regular file' \
    "check-body refuses a FIFO" timeout -k 2 10 "$S" check-body "$tmp/fifo"
expect_out 2 'serve: io.not_regular_file' "serve refuses a FIFO" \
    timeout -k 2 10 "$S" serve "$tmp/fifo"
expect_out 2 'check-body: io.not_regular_file: .*fifo: not a regular file \(a FIFO\)' \
    "check-body refuses a FIFO as --field-registry" \
    timeout -k 2 10 "$S" check-body --field-registry "$tmp/fifo" "$B/both_fields.body"
expect_out 2 'validate-field: io.not_regular_file: .*fifo: not a regular file \(a FIFO\)' \
    "validate-field refuses a FIFO" timeout -k 2 10 "$S" validate-field "$tmp/fifo"

# --- 6: \u0000 in a scenario id, a scenario key and a body's dtype. ---
sed 's/"id": *"[^"]*"/"id": "ok\\u0000..\/..\/x"/' "$MIN" >"$tmp/nul-id.json"
expect_out 2 'nul-id.json:2:3: the value of .id. contains an escaped NUL.*\[json.schema\]' \
    "lint refuses an id cut by \\u0000" "$S" lint "$tmp/nul-id.json"
expect_out 2 'json.schema' "run refuses an id cut by \\u0000" \
    "$S" run --out "$tmp/runs" "$tmp/nul-id.json"
sed 's/"tags"/"tags\\u0000x"/' "$MIN" >"$tmp/nul-key.json"
expect_out 2 'nul-key.json:4:3: key .tags. contains an escaped NUL.*\[json.schema\]' \
    "lint refuses a key cut by \\u0000" "$S" lint "$tmp/nul-key.json"
sed 's/"dtype":"uint8"/"dtype":"uint8\\u0000"/' "$B/both_fields.body" >"$tmp/nul.body"
expect_out 3 'envelope.dtype: .*dtype .uint8. \(or its key\) holds an escaped NUL' \
    "check-body refuses a dtype cut by \\u0000" "$S" check-body "$tmp/nul.body"
sed 's/"shape":\[3,2,2\]/"shape\\u0000x":[3,2,2]/' "$B/both_fields.body" >"$tmp/nul-key.body"
expect_out 3 'envelope.invalid: .*.shape. holds an escaped NUL' \
    "check-body refuses an envelope key cut by \\u0000" "$S" check-body "$tmp/nul-key.body"

# --- 11: raw control characters inside JSON strings. ---
printf '{"id": "a\tb", "description": "x", "steps": [{"kind": "rollout"}]}\n' >"$tmp/tab.json"
expect_out 2 'tab.json:1:10: invalid JSON \(raw control character in a string\) \[json.syntax\]' \
    "lint refuses a raw tab in a string" "$S" lint "$tmp/tab.json"
printf '{"id": "a\nb", "description": "x", "steps": [{"kind": "rollout"}]}\n' >"$tmp/nl.json"
expect_out 2 'nl.json:1:10: invalid JSON \(raw control character in a string\)' \
    "lint refuses a raw newline in a string" "$S" lint "$tmp/nl.json"

# --- 7: bytes of the body reach the terminal and the JSON output escaped. ---
esc=$(printf '\033')
# (\xc2\x9b is U+009B, the C1 control CSI: valid UTF-8, which the splice's parser must accept.)
sed 's/"dtype":"uint8"/"dtype":"\xc2\x9b\\u001b[31mred\\n"/' "$B/both_fields.body" >"$tmp/ctl.body"
"$S" check-body "$tmp/ctl.body" >"$tmp/ctl.out" 2>"$tmp/ctl.err"
[ $? -eq 3 ] || bad "check-body ctl.body: exit status"
if grep -q "$esc" "$tmp/ctl.err" || [ "$(wc -l <"$tmp/ctl.err")" -ne 1 ] ||
    ! grep -Fq "dtype '\\xc2\\x9b\\x1b[31mred\\n' is not one of" "$tmp/ctl.err"; then
    bad "check-body text: raw bytes of a dtype reach stderr"
    od -c "$tmp/ctl.err" | head
else
    ok "check-body text escapes ESC, newline and C1 controls"
fi
sed 's/"choices"/"ch\\u001b[31m\xffoices"/; s/"dtype":"uint8"}/"dtype":"uint8","note":"\xfe"}/' \
    "$B/both_fields.body" >"$tmp/odd.body"
for args in "--json $tmp/ctl.body" "--json $tmp/odd.body" "$tmp/odd.body"; do
    # shellcheck disable=SC2086 # args is split on purpose
    "$S" check-body $args >"$tmp/o.out" 2>"$tmp/o.err"
    if ! iconv -f UTF-8 -t UTF-8 "$tmp/o.out" >/dev/null 2>&1 || grep -q "$esc" "$tmp/o.out" ||
        grep -q "$esc" "$tmp/o.err"; then
        bad "check-body $args: invalid UTF-8 or a raw ESC in the output"
        od -c "$tmp/o.out" | head
    else
        ok "check-body $args: output valid UTF-8, no raw ESC"
    fi
done
# Invalid UTF-8 never reaches the output: the splice refuses it like the reference's parser.
if "$S" check-body --json "$tmp/odd.body" | grep -q '"name":"json.invalid_utf8"'; then
    ok "a body with invalid UTF-8 is json.invalid_utf8"
else
    bad "a body with invalid UTF-8 is not json.invalid_utf8"
fi

# --- 8: report.html links only to relative paths inside the run folder. ---
"$S" run --out "$tmp/runs8" "$MIN" >/dev/null 2>&1 || die "a minimal run failed"
run8=$(ls -d "$tmp"/runs8/2*)
# Links are drawn for failures: the scenario is made to fail as well.
sed -e 's|"artifacts":[[:space:]]*"[^"]*"|"artifacts": "javascript:alert(1)"|' \
    -e 's|"artifacts":[[:space:]]*null|"artifacts": "javascript:alert(1)"|' \
    -e 's|"expanded":[[:space:]]*"[^"]*"|"expanded": "../../etc/passwd"|' \
    -e 's|"verdict":[[:space:]]*"pass"|"verdict": "fail"|' "$run8/results.json" >"$tmp/r.json"
mv "$tmp/r.json" "$run8/results.json"
grep -q 'javascript:alert' "$run8/results.json" || die "the crafted results.json lacks its link"
expect 0 "syncroll report renders a crafted results.json" "$S" report "$run8"
if grep -q 'href="javascript\|href="\.\./' "$run8/report.html"; then
    bad "report.html links to a path outside the run folder"
    grep -o 'href="[^"]*"' "$run8/report.html"
elif ! grep -q 'artifacts: javascript:alert(1)' "$run8/report.html"; then
    bad "report.html does not show the refused path as text"
else
    ok "report.html shows javascript: and ../ paths as text, not links"
fi
grep -q 'log: <a href="artifacts/' "$run8/report.html" && ok "an engine log inside the run is a link" ||
    bad "an engine log inside the run folder is no longer a link"

# --- 11: messages name the option, the real errno and the range; no rounding past 2^53. ---
expect_out 2 "serve: usage.invalid_argument: --ready-timeout '0': want a number of seconds in \[0.001, 3600\]" \
    "serve names a bad --ready-timeout and its range" "$S" serve --ready-timeout 0 "$MIN"
ln -s loop-b "$tmp/loop-a" && ln -s loop-a "$tmp/loop-b"
expect_out 2 'loop-a: Too many levels of symbolic links' "lint reports ELOOP as such" \
    "$S" lint "$tmp/loop-a"
sed 's/"tags"/"seed": 9223372036854775807, "tags"/' "$MIN" >"$tmp/seed63.json"
expect_out 2 "'seed' is 9223372036854775807, outside \[0, 9007199254740992\]" \
    "a seed of 2^63-1 is out of range, not 'not an integer'" "$S" lint "$tmp/seed63.json"
sed 's/"tags"/"seed": 9007199254740993, "tags"/' "$MIN" >"$tmp/seed53.json"
expect_out 2 "'seed' is 9007199254740993, outside \[0, 9007199254740992\]" \
    "a seed of 2^53+1 is refused, not rounded" "$S" lint "$tmp/seed53.json"

# --- 14: lint estimates the memory of a scenario and refuses one beyond the machine's. ---
sed 's/"tags"/"engines": {"count": 64}, "weights": {"total_bytes": 1073741824}, "tags"/' \
    "$MIN" >"$tmp/big.json"
expect_out 2 'big.json: estimated memory [0-9]+ MiB exceeds the machine.s .*\[resource.memory_estimate\]' \
    "lint refuses 64 engines x 1 GiB of weights" "$S" lint "$tmp/big.json"
expect_out 0 'memory estimate: at most [0-9]+ MiB \(example-minimal\)' \
    "lint --force accepts it and prints the estimate" "$S" lint --force "$tmp/big.json"
expect_out 0 'memory estimate: at most [0-9]+ MiB' "lint prints the estimate of a small scenario" \
    "$S" lint "$MIN"
# The failure evidence a rollout keeps until it is judged counts too: 4 turns of at most 1 MiB of
# response each (and the requests) per sample, so 256 more samples add at least 1024 MiB.
sed 's/"steps": \[{"kind": "rollout"}\]/"steps": [{"kind": "rollout", "batch": 257}]/' "$MIN" \
    >"$tmp/b257.json"
one=$("$S" lint "$MIN" | sed -n 's/^memory estimate: at most \([0-9]*\) MiB.*/\1/p')
many=$("$S" lint "$tmp/b257.json" | sed -n 's/^memory estimate: at most \([0-9]*\) MiB.*/\1/p')
[ -n "$one" ] && [ -n "$many" ] && [ $((many - one)) -ge 1024 ] &&
    ok "the estimate counts the evidence of 256 more samples ($one -> $many MiB)" ||
    bad "the estimate does not count the rollouts' evidence: $one -> $many MiB"
# run applies the same check before anything starts. Its scenario must be cheap to run should
# the check regress (a refused 64 x 1 GiB scenario would allocate them): max_body_bytes, a
# limit rather than an allocation, makes the estimate exceed the machine's memory with as few
# engines as it takes, each holding 1 MiB of weights. One engine counts 3 x 1 MiB + 4096 MiB +
# 32 MiB, the trainer 3 MiB + 64 MiB.
mib=$(($(getconf _PHYS_PAGES) / 1024 * $(getconf PAGESIZE) / 1024))
n=$((mib / 4131 + 1))
if [ "$n" -gt 64 ]; then
    bad "this machine's $mib MiB are beyond what 64 engines' max_body_bytes can exceed"
else
    sed "s/\"tags\"/\"engines\": {\"count\": $n, \"server\": {\"max_body_bytes\": 4294967296}}, \"tags\"/" \
        "$MIN" >"$tmp/wide.json"
    expect_out 2 'wide.json: estimated memory [0-9]+ MiB exceeds .*--force to run anyway \[resource.memory_estimate\]' \
        "run refuses $n engines with a 4 GiB max_body_bytes each" \
        "$S" run --out "$tmp/runs14" "$tmp/wide.json"
    [ -e "$tmp/runs14" ] && bad "run made a run folder for a refused scenario" ||
        ok "run refused it before making a run folder"
    expect_out 0 '1 passed, 0 failed' "run --force runs it" \
        "$S" run --force --out "$tmp/runs14" "$tmp/wide.json"
fi

# --- 13: syncroll run adds its own sync folder, so a scenario names at most 7 (lint agrees). ---
dirs=""
for i in 1 2 3 4 5 6 7 8; do mkdir -p "$tmp/sd$i"; dirs="$dirs\"$tmp/sd$i\","; done
sed "s#\"tags\"#\"engines\": {\"server\": {\"sync_dirs\": [${dirs%,}]}}, \"tags\"#" "$MIN" >"$tmp/sd8.json"
expect_out 2 'sync_dirs names 8 folders; a scenario may name at most 7 .*\[scenario.invalid\]' \
    "lint refuses 8 sync_dirs in a scenario" "$S" lint "$tmp/sd8.json"
expect_out 2 'sync_dirs names 8 folders' "run refuses them the same way" \
    "$S" run --out "$tmp/runs13" "$tmp/sd8.json"

finish
