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
# --stack: each SkyRL contract's registry (fixtures/fields/) is ready against an engine of that
# stack. Under 2086 the engine answers rollout_sample_support only to a request that asks for it
# (SkyRL #2082), so the battery must ask: without the switch every reply would carry null.
for st in 2079 2086; do
    "$S" validate-field --rows 500 --stack "$st" "fixtures/fields/sample_support_$st.json" \
        >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 0 ] || grep -q '^  FAIL' "$tmp/out" ||
        ! grep -q '^  PASS  emit        8/8 responses carry rollout_sample_support' "$tmp/out"; then
        cat "$tmp/out"
        bad "sample_support_$st.json was not ready with --stack $st (exit $status)"
    else
        ok "sample_support_$st.json ready with --stack $st"
    fi
done
"$S" validate-field --stack 2237 fixtures/fields/sample_support_2086.json >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q 'must be 2079 or 2086' "$tmp/out" && ok "bad --stack refused" ||
    bad "a bad --stack was not a usage error"
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
# A declared shape and range (tests/fields/topk_logits.field.json: float16 [T, 8] in [-8, 8]):
# the mock emits them, so the field is ready in every wire that can carry a float16 field; a
# producer that sends [T, 7] fails emit with fields.shape_mismatch naming the dimension in each
# of those wires (sglang's flat bytes too), one whose values leave the range with
# fields.out_of_range; nemo-rl and vllm-json cannot carry the field at all (wire).
topk=tests/fields/topk_logits.field.json
for d in skyrl vllm sglang dynamo; do
    "$S" validate-field --rows 200 --dialect "$d" "$topk" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 0 ] || grep -q '^  FAIL' "$tmp/out" ||
        ! grep -q '^topk_logits  .*shape \[T, 8\]' "$tmp/out"; then
        cat "$tmp/out"
        bad "$topk was not ready in $d (exit $status)"
    else
        ok "$topk (shape [T, 8], range) ready in $d"
    fi
    "$S" validate-field --rows 200 --dialect "$d" --producer tests/fields/topk_logits_7.producer.json \
        "$topk" >"$tmp/out" 2>&1
    status=$?
    if [ "$d" = sglang ]; then
        want='fields.shape_mismatch: topk_logits: 7 elements in the flat wire = T x 7 for T = 1 tokens: the trailing size is 7, the definition declares 8'
    else
        want='fields.shape_mismatch: topk_logits: axis 1 has length 7, the definition declares 8 (shape \[T, 8\])'
    fi
    if [ "$status" -ne 1 ] || ! grep -q "^  FAIL  emit        response 1: $want" "$tmp/out" ||
        grep -q '^  PASS  emit' "$tmp/out" || ! grep -q '^NOT READY topk_logits$' "$tmp/out"; then
        cat "$tmp/out"
        bad "a [T, 7] producer was not NOT READY in $d naming the dimension (exit $status)"
    else
        ok "a [T, 7] producer is NOT READY in $d: $(grep -o 'axis 1 has length 7\|trailing size is 7' "$tmp/out" | head -n 1)"
    fi
    "$S" validate-field --rows 200 --dialect "$d" --producer tests/fields/topk_logits_wide.producer.json \
        "$topk" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 1 ] ||
        ! grep -q '^  FAIL  emit        response [0-9]*: fields.out_of_range: topk_logits: element [0-9]* (flat index) is [0-9.e+]*; the definition declares finite values in \[-8, 8\]' "$tmp/out"; then
        cat "$tmp/out"
        bad "a producer outside [-8, 8] was not caught in $d (exit $status)"
    else
        ok "a producer outside the range is caught in $d with fields.out_of_range"
    fi
done
for d in nemo-rl vllm-json; do
    "$S" validate-field --rows 200 --dialect "$d" --producer tests/fields/topk_logits_7.producer.json \
        "$topk" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 1 ] || ! grep -q '^  FAIL  wire  .*dialect.field_unsupported' "$tmp/out"; then
        cat "$tmp/out"
        bad "$d did not refuse the float16 field as wire (exit $status)"
    else
        ok "$d cannot carry the float16 field (wire)"
    fi
done
# Without a declared shape, sglang's raw bytes cannot tell a float32 producer from float16: emit
# passes, and the round trip that fails says what differs (the dtype), not only a count.
"$S" validate-field --rows 200 --dialect sglang --producer tests/fields/topk_logits_f32.producer.json \
    tests/fields/topk_logits_noshape.field.json >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 1 ] ||
    ! grep -q '^  FAIL  round-trip  8 of 8 bodies decoded to other values; response 1: the wire decodes float16\[8\], the engine sent float32\[1, 4\]: other dtype' "$tmp/out"; then
    cat "$tmp/out"
    bad "sglang's failing round trip did not name the difference (exit $status)"
else
    ok "sglang's failing round trip names the dtype the producer sent"
fi
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
