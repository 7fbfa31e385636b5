#!/bin/sh
# Unknown names (ctest cli.names): every "unknown name" error says which names are valid and
# suggests the closest (lib/sr_suggest.h). tests/names/*.json each misspell one name of a
# scenario; the CLI's dialect and report-format options too.
. "$(dirname "$0")/lib.sh"
N=$SRC/tests/names
lint() { # lint <file> <expected fixed string>
    "$S" lint "$N/$1" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne 2 ] || ! grep -qF -- "$2" "$tmp/out"; then
        cat "$tmp/out"
        bad "$1: exit $status, output lacks '$2'"
    else
        ok "$1: $2"
    fi
}
lint fault-kind.json "unknown fault kind; did you mean 'routes_all_zero'? kinds (all of them: \`syncroll faults\`): latency, routes_all_zero,"
lint fault-kind.json "[scenario.invalid]"
lint step-kind.json "unknown step kind 'abort'; step kinds: rollout, sync_weights, collate, pause, resume, wait, check_state, kill_engine, probe, sleep, wake_up, replay [json.schema]"
lint classification.json "'stale_prefix' is not a classification of trace.row_mismatch; did you mean 'stale_weights'? classifications: all_zero_capture, duplicated_row, overwritten_prefix, off_by_one, stale_weights, newer_weights, unclassified [scenario.invalid]"
lint check.json "'client.routes_mising' is not a check name; did you mean 'client.routes_missing'? the verifier's checks (\`syncroll errors\` lists the module errors): trace.row_mismatch,"
lint dialect.json "dialect must be one of skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl, not \"vlm\"; did you mean 'vllm'? [scenario.invalid]"
lint key.json "unknown key 'bacth' in steps.rollout; did you mean 'batch'? valid keys: kind, name, async, batch,"

cli() { # cli <want-status> <expected fixed string> <args...>
    want=$1
    text=$2
    shift 2
    "$S" "$@" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -ne "$want" ] || ! grep -qF -- "$text" "$tmp/out"; then
        cat "$tmp/out"
        bad "syncroll $*: exit $status, output lacks '$text'"
    else
        ok "syncroll $*: $text"
    fi
}
cli 2 "usage.invalid_argument: --dialect 'sglng' is not one of skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl; did you mean 'sglang'?" \
    check-body --dialect sglng -
cli 2 "usage.invalid_argument: unknown reporter 'jsn'; did you mean 'json'? known: text, json, junit, html, all" \
    run --report text,jsn --out "$tmp/r" "$N/key.json"
finish
