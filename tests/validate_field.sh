#!/bin/sh
# `syncroll validate-field` (ctest cli.validate_field): every example definition under
# scenarios/fields/ is ready (exit 0, every check PASS); a definition whose dtype list the engine
# violates (tests/fields/sample_support_int16.field.json: the engine emits rollout_sample_support
# as int32) is rejected with envelope.dtype (exit 1); a malformed file is a usage error (exit 2).
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
