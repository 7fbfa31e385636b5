#!/bin/sh
# `syncroll validate-field` (ctest cli.validate_field): every example definition under
# scenarios/fields/ is ready (exit 0, every check PASS); a definition whose dtype list the engine
# violates (tests/fields/sample_support_int16.field.json: the engine emits rollout_sample_support
# as int32) is rejected with envelope.dtype (exit 1); a malformed file is a usage error (exit 2).
# Then the same in other dialects' wires (--dialect), with a producer that violates the contract
# (--producer), and a bad --dialect name (exit 2).
. "$(dirname "$0")/lib.sh"
cd "$SRC" || exit 2
count=0
for f in scenarios/fields/*.field.json; do
    count=$((count + 1))
    "$S" validate-field --rows 2000 "$f" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 0 ] || grep -q '^  FAIL' "$tmp/out" ||
        ! tail -n 1 "$tmp/out" | grep -Eq ': ([0-9]+) of \1 packed fields ready$'; then
        cat "$tmp/out"
        bad "$f was not accepted (exit $status)"
    else
        ok "$f ready"
    fi
done
[ "$count" -ge 1 ] || bad "no examples in scenarios/fields"
rejected=tests/fields/sample_support_int16.field.json
"$S" validate-field --rows 2000 "$rejected" >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 1 ] || ! grep -q '^  FAIL  emit .*envelope.dtype' "$tmp/out" ||
    ! grep -q '^NOT READY rollout_sample_support$' "$tmp/out"; then
    cat "$tmp/out"
    bad "$rejected was not rejected with envelope.dtype (exit $status)"
else
    ok "$rejected rejected"
fi
# --dialect D: the engine serves D and the fields travel in D's wire. Every example is ready in
# vllm's .npy strings; tests/fields/dialect_sides.field.json (int32 1-D, int16 3-D) is ready in
# every dialect but nemo-rl, whose nrlre1 strings carry 3-D fields only (dialect.field_unsupported).
for f in scenarios/fields/*.field.json; do
    "$S" validate-field --rows 500 --dialect vllm "$f" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 0 ] || grep -q '^  FAIL' "$tmp/out" ||
        ! grep -q 'dialect vllm: /inference/v1/generate' "$tmp/out"; then
        cat "$tmp/out"
        bad "$f was not accepted in vllm (exit $status)"
    else
        ok "$f ready in vllm"
    fi
done
sides=tests/fields/dialect_sides.field.json
# Outside skyrl the engine's body faults are skipped and the battery's own corruptions of the
# field run in the wire (a '!' in the base64, a number for the string, a 1.5 leaf, a duplicate).
for case in "skyrl byte_count_off.*envelope.byte_count" "vllm not_string.*wire.not_string" \
    "vllm-json bad_leaf.*nested.value" "sglang bad_base64.*base64.invalid_char" \
    "dynamo duplicate_field.*json.duplicate_key"; do
    set -- $case
    d=$1
    "$S" validate-field --rows 500 --dialect "$d" "$sides" >"$tmp/out" 2>&1
    status=$?
    skips=$(grep -c '^  SKIP  fault' "$tmp/out")
    if [ "$d" = skyrl ]; then want_skips=0; else want_skips=2; fi
    if [ "$status" -ne 0 ] || grep -q '^  FAIL' "$tmp/out" || [ "$skips" -ne "$want_skips" ] ||
        [ "$(grep -c "^  PASS  fault  *$2" "$tmp/out")" -ne 2 ] ||
        ! tail -n 1 "$tmp/out" | grep -q ': 2 of 2 packed fields ready$'; then
        cat "$tmp/out"
        bad "$sides was not accepted in $d (exit $status)"
    else
        ok "$sides ready in $d"
    fi
done
"$S" validate-field --rows 500 --dialect nemo-rl "$sides" >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 1 ] ||
    ! grep -q '^  FAIL  wire  .*dialect.field_unsupported: draft_tokens cannot be carried in the nemo-rl wire' "$tmp/out" ||
    ! grep -q '^READY expert_counts$' "$tmp/out"; then
    cat "$tmp/out"
    bad "nemo-rl did not refuse the 1-D field alone (exit $status)"
else
    ok "nemo-rl refuses the 1-D field with dialect.field_unsupported"
fi
# A producer that violates the contract (--producer: it emits draft_tokens as int16, the
# contract says int32) fails emit with the wire's named error.
prod=tests/fields/draft_tokens_int16.producer.json
for case in "vllm npy.descr" "sglang wire.byte_count" "dynamo envelope.dtype"; do
    set -- $case
    "$S" validate-field --rows 500 --dialect "$1" --producer "$prod" \
        tests/fields/draft_tokens.field.json >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 1 ] || ! grep -q "^  FAIL  emit .*$2" "$tmp/out" ||
        ! grep -q '^NOT READY draft_tokens$' "$tmp/out"; then
        cat "$tmp/out"
        bad "an int16 producer was not rejected in $1 with $2 (exit $status)"
    else
        ok "an int16 producer is rejected in $1 with $2"
    fi
done
"$S" validate-field --dialect vllm-npy tests/fields/draft_tokens.field.json >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 2 ] ||
    ! grep -q "usage.invalid_argument: --dialect 'vllm-npy' is not one of skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl" "$tmp/out"; then
    cat "$tmp/out"
    bad "a bad --dialect gave exit $status"
else
    ok "a bad --dialect is a usage error naming the dialects"
fi
printf '{"fields": [{"name": "x", "dtypes": ["int33"], "ndim": 1}]}\n' >"$tmp/bad.field.json"
"$S" validate-field "$tmp/bad.field.json" >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 2 ] || ! grep -q 'fields.invalid_definition' "$tmp/out"; then
    cat "$tmp/out"
    bad "a malformed definition gave exit $status"
else
    ok "malformed definition is a usage error"
fi
finish
