#!/bin/sh
# `syncroll probe` against `syncroll serve`, table-driven (issue 33's kill table; the same table
# is in docs/reference/probe.md): with each catalogue fault a real engine could have switched
# on, the probe exits 1 naming the meta check of the row, in every dialect the row lists; with
# no fault it exits 0 for several seeds in every dialect (no false alarm). Real processes over
# loopback; serve picks the port and prints the URL, read from a FIFO.
#   PROBE_KILL_PART=kill|clean   only one half (two ctest entries run them side by side)
#   PROBE_SEEDS=N                seeds 1..N of the clean half (3; docs/reference/probe.md has
#                                the 20-seed run)
. "$(dirname "$0")/lib.sh"
part=${PROBE_KILL_PART:-all}
seeds=${PROBE_SEEDS:-3}
ALL="skyrl vllm vllm-json sglang dynamo nemo-rl"
CLEAN="$ALL skyrl-2086"                      # skyrl-2086: skyrl speaking the later stack (client.stack 2086)
NOSPLIT="skyrl vllm sglang dynamo nemo-rl" # vllm-json's wire carries the P+G-th row by rule
NOSTART="skyrl vllm sglang dynamo"         # the wires of vllm-json and nemo-rl start at row 0
NOSGL="skyrl vllm vllm-json dynamo nemo-rl" # SGLang's plane sets the version in a call of its own
MODEL='{"vocab": 500, "layers": 2, "experts": 16, "topk": 2, "eos_id": -1}' # start_serve's model
pid=
at_exit '[ -n "$pid" ] && kill "$pid" 2>/dev/null'

# The update endpoint a weights fault targets under each dialect's default control plane in
# `serve` (skyrl: skyrl's; vllm, vllm-json, dynamo, nemo-rl: vLLM's; sglang: SGLang's).
update_ep() {
    case $1 in
    skyrl | skyrl-2086) echo collective_rpc ;;
    sglang) echo update_weights_from_distributed ;;
    *) echo update_weights ;;
    esac
}

# The n-th request to that endpoint that is the second sync's update (skyrl's collective_rpc
# also carries the start and finish of each sync).
second_update() {
    case $1 in
    skyrl | skyrl-2086) echo 4 ;;
    *) echo 2 ;;
    esac
}

# start_serve DIALECT FAULTS [KEYS]: serve a one-engine config with FAULTS (a JSON list body)
# and the config keys KEYS (each followed by a comma) in the background ($pid); sets url.
# DIALECT skyrl-2086 is skyrl with "stack": "2086".
start_serve() {
    stack=${3:-}
    sd=$1
    if [ "$sd" = skyrl-2086 ]; then
        stack="$stack \"stack\": \"2086\","
        sd=skyrl
    fi
    cat >"$tmp/cfg.json" <<JSON
{"count": 1, "seed": 3, $stack
 "model": $MODEL,
 "faults": [$2]}
JSON
    rm -f "$tmp/fifo"
    mkfifo "$tmp/fifo"
    "$S" serve --stop-grace 2 --dialect "$sd" "$tmp/cfg.json" >"$tmp/fifo" 2>"$tmp/serve.err" &
    pid=$!
    exec 3<"$tmp/fifo"
    IFS= read -r line <&3 || die "serve --dialect $sd printed no line: $(cat "$tmp/serve.err")"
    exec 3<&-
    url=$(printf '%s\n' "$line" | grep -o '"url":"[^"]*"' | sed 's/"url":"//; s/"$//')
}

stop_serve() {
    kill -TERM "$pid"
    wait "$pid"
    pid=
}

# served: the generates the engine at $url answered so far (its state document's count).
served() {
    curl -sS -m 5 "$url/syncroll/v1/state" | grep -o '"generate":[0-9]*' | head -1 | cut -d: -f2
}

# probe SEED: probe the served engine with the config as --model; sets st and OUT.
probe() {
    OUT=$("$S" probe --model "$tmp/cfg.json" --seed "$1" --out "$tmp/rep" "$url" 2>&1)
    st=$?
}

# The kill table: fault (its JSON; @EP@ becomes the plane's update endpoint, @NTH@ the n-th
# request there that is the second sync's update) | dialects | the meta checks that must fail
# (the docs' "check" column, and where a row lists more, each of them).
TABLE='{"kind":"routes_all_zero"}|ALL|meta.value_sanity
{"kind":"rows_p_plus_g"}|NOSPLIT|meta.row_count
{"kind":"prompt_start_ignored"}|NOSTART|meta.row_count
{"kind":"routes","action":{"do":"drop_last"}}|ALL|meta.row_count
{"kind":"routes","action":{"do":"drop_first"}}|ALL|meta.row_count
{"kind":"routes","action":{"do":"shift","k":1}}|ALL|meta.prefix_consistency
{"kind":"duplicated_output_rows"}|ALL|meta.value_sanity
{"kind":"expert_out_of_range"}|ALL|meta.value_sanity
{"kind":"expert_duplicate"}|ALL|meta.value_sanity
{"kind":"routes_dropped"}|ALL|meta.row_count
{"kind":"stale_prefix_cache"}|ALL|meta.cache_after_sync
{"kind":"pd_decode_replica"}|ALL|meta.value_sanity
{"kind":"prefix_cached_sentinel","row":2}|vllm-json|meta.value_sanity
{"kind":"routes","select":{"rows":[1]},"action":{"do":"constant","value":255}}|ALL|meta.value_sanity
{"kind":"serve_before_sync"}|ALL|meta.sync_effect
{"kind":"stale_draft_model"}|ALL|meta.cache_after_sync
{"kind":"version_not_bumped","endpoints":["@EP@"]}|NOSGL|meta.sync_effect
{"kind":"partial_weight_apply","endpoints":["@EP@"]}|ALL|meta.sync_effect
{"kind":"update_ok_no_transfer","endpoints":["@EP@"]}|ALL|meta.sync_effect
{"kind":"ack_before_apply","endpoints":["@EP@"]}|ALL|meta.sync_effect meta.multiturn_prefix
{"kind":"partial_apply_on_error","endpoints":["@EP@"]}|ALL|meta.sync_effect
{"kind":"checksum_mismatch","endpoints":["@EP@"]}|ALL|meta.sync_effect
{"kind":"version_regress","nth":@NTH@,"endpoints":["@EP@"]}|NOSGL|meta.version_monotonic
{"kind":"version_regress","nth":@NTH@,"endpoints":["@EP@"]}|sglang|meta.sync_effect
{"kind":"routes","select":{"region":"turn_boundary"},"action":{"do":"zero"}}|NOSTART|meta.boundary_rows
{"kind":"routes","select":{"region":"chunk_boundary"},"action":{"do":"zero"}}|ALL|meta.boundary_rows
{"kind":"routes","select":{"region":"chunk_boundary"},"action":{"do":"repeat_previous"}}|ALL|meta.boundary_rows
{"kind":"routes","action":{"do":"mark_partial","tokens":2}}|ALL|meta.missing_not_stale
{"kind":"routes","action":{"do":"truncate","tokens":2,"partial":true}}|ALL|meta.missing_not_stale
{"kind":"routes","action":{"do":"truncate","tokens":2}}|ALL|meta.row_count
{"kind":"routes","action":{"do":"stale"}}|ALL|meta.sync_effect
{"kind":"routes","select":{"region":"output"},"action":{"do":"weight_version","version":0}}|ALL|meta.cache_after_sync
{"kind":"restart_loses_group"}|ALL|meta.version_monotonic
{"kind":"generate_fails_after_update","endpoints":["@EP@"]}|ALL|meta.sync_effect
{"kind":"support_unrepaired"}|skyrl-2086|meta.stack_contract'

# doc_dialects WHERE: the docs' "dialects" cell of a row of the table above.
doc_dialects() {
    case $1 in
    ALL) echo "all six" ;;
    NOSTART) echo "$NOSTART" | sed 's/ /, /g' ;;
    NOSPLIT) echo "$NOSPLIT" | sed 's/ /, /g' ;;
    NOSGL) echo "$NOSGL" | sed 's/ /, /g' ;;
    *) echo "$1" ;;
    esac
}

if [ "$part" != clean ]; then
    printf '%s\n' "$TABLE" >"$tmp/table"
    # The docs' kill table is this one, row for row: the same dialects and the same checks (the
    # meta.* names of its "check" cell, in order).
    sed -n '/^## Kill table/,/^What the table leaves out/p' "$SRC/docs/reference/probe.md" |
        grep '^| ' | sed '1d' >"$tmp/doc_rows"
    while IFS='|' read -r fault where check; do
        printf '%s|%s\n' "$(doc_dialects "$where")" "$check"
    done <"$tmp/table" >"$tmp/want_rows"
    while IFS='|' read -r _ _ _ dialects cell _; do
        dialects=$(printf '%s' "$dialects" | sed 's/^ *//; s/ *$//')
        printf '%s|%s\n' "$dialects" "$(printf '%s' "$cell" | grep -o 'meta\.[a-z_]*' | tr '\n' ' ' |
            sed 's/ $//')"
    done <"$tmp/doc_rows" >"$tmp/got_rows"
    if cmp -s "$tmp/want_rows" "$tmp/got_rows"; then
        ok "docs/reference/probe.md's kill table: the $(wc -l <"$tmp/want_rows") rows tested here"
    else
        bad "docs/reference/probe.md's kill table differs from this one (dialects|checks):"
        diff "$tmp/want_rows" "$tmp/got_rows"
    fi
    while IFS='|' read -r fault where check; do
        case $where in ALL) ds=$ALL ;; NOSTART) ds=$NOSTART ;; NOSPLIT) ds=$NOSPLIT ;; NOSGL) ds=$NOSGL ;; *) ds=$where ;; esac
        for d in $ds; do
            f=$(printf '%s' "$fault" | sed "s/@EP@/$(update_ep "$d")/; s/@NTH@/$(second_update "$d")/")
            # Each row's probe on its own engine, so a row's fault cannot leak into the next.
            start_serve "$d" "$f"
            probe 1
            stop_serve
            what="$d $f: probe fails with $check"
            missing=
            for c in $check; do
                printf '%s\n' "$OUT" | grep -q "^FAILED   $c\$" || missing="$missing $c"
            done
            if [ "$st" -ne 1 ]; then
                bad "$what: exit $st"
                printf '%s\n' "$OUT"
            elif [ -n "$missing" ]; then
                bad "$what: not named:$missing"
                printf '%s\n' "$OUT"
            else
                ok "$what"
            fi
        done
    done <"$tmp/table"
    # Where the plane has a weight checker (vLLM's POST /weight_checker), it is asked after
    # every sync: an update that skipped a layer is meta.sync_effect by its finding too.
    for d in vllm vllm-json dynamo nemo-rl; do
        start_serve "$d" '{"kind":"partial_weight_apply","endpoints":["update_weights"]}'
        probe 1
        stop_serve
        if printf '%s\n' "$OUT" | grep -q '^ *sync 2 (perturbed weights): .*weight_checker compare: [0-9]* tensors differ'; then
            ok "$d partial_weight_apply: meta.sync_effect names the weight checker's finding"
        else
            bad "$d partial_weight_apply: no weight checker finding"
            printf '%s\n' "$OUT"
        fi
    done
fi

if [ "$part" != kill ]; then
    # One engine per dialect, probed with seeds 1..N in a row: each probe finds the engine as
    # the one before left it (three syncs later, with SGLang's update group torn down).
    # Every relation holds but meta.missing_not_stale (the probe aborts nothing) and, but on the
    # later stack's engine, meta.stack_contract.
    for d in $CLEAN; do
        start_serve "$d" ""
        held=9
        [ "$d" = skyrl-2086 ] && held=10
        for seed in $(seq 1 "$seeds"); do
            probe "$seed"
            if [ "$st" -ne 0 ] || ! printf '%s\n' "$OUT" | grep -q "^$held held, 0 failed"; then
                bad "clean $d seed $seed: exit $st"
                printf '%s\n' "$OUT"
            else
                ok "clean $d seed $seed: every relation held"
            fi
            # The detected dialect and control plane are printed (serve's default plane of
            # each dialect: skyrl's, SGLang's, else vLLM's).
            case $d in skyrl*) pl=skyrl ;; sglang) pl=sglang ;; *) pl=vllm ;; esac
            if ! printf '%s\n' "$OUT" | grep -q "^probe: dialect ${d%-2086} (detected: POST /" ||
                ! printf '%s\n' "$OUT" | grep -q "^probe: weight-sync control plane $pl\$"; then
                bad "clean $d seed $seed: the detected dialect or plane is not printed"
                printf '%s\n' "$OUT"
            fi
            # An engine of the 2079 stack is told apart, with the reason.
            if [ "$d" = skyrl ] && ! printf '%s\n' "$OUT" |
                grep -q '^skipped  meta.stack_contract: the engine did not answer a capture request'; then
                bad "clean skyrl (2079): meta.stack_contract not skipped with its reason"
            fi
        done
        stop_serve
    done
    for f in summary.txt results.json junit.xml report.html; do
        [ -s "$tmp/rep/$f" ] || bad "probe wrote no $f"
    done
    grep -q '"verdict":[[:space:]]*"pass"' "$tmp/rep/results.json" || bad "results.json: no pass verdict"
    # Without --model the sync relations are skipped with the reason, the rest hold.
    start_serve vllm ""
    expect_out 0 'skipped  meta.sync_effect: no --model' "probe without --model skips the syncs" \
        "$S" probe --out "$tmp/rep2" "$url"
    # The budget bounds the requests: detection's one and two more, then everything is skipped.
    expect_out 0 'skipped  meta.determinism: the request budget is spent' "probe --budget 3" \
        "$S" probe --budget 3 --model "$tmp/cfg.json" --out "$tmp/rep3" "$url"
    printf '%s\n' "$OUT" | grep -q '(3 requests, 0 syncs)' || bad "budget 3: $OUT"
    # The engine's own count agrees: the budget's requests and no more reach it.
    for b in 1 2 5; do
        g0=$(served)
        "$S" probe --dialect vllm --budget "$b" --model "$tmp/cfg.json" --out "$tmp/rep3" "$url" \
            >/dev/null 2>&1
        g1=$(served)
        if [ $((g1 - g0)) -eq "$b" ]; then
            ok "budget $b: the engine served $b generates"
        else
            bad "budget $b: the engine served $((g1 - g0)) generates"
        fi
    done
    stop_serve
    # An engine that answers every generate 503 gets the budget's one request, not a retry of
    # it, and the failure is named.
    start_serve vllm '{"kind":"http_503_json"}'
    expect_out 1 '^FAILED   client.retry_exhausted: the base request.*attempt 1/1' "probe of a 503 engine fails" \
        "$S" probe --dialect vllm --budget 1 --out "$tmp/rep3" "$url"
    n=$(served)
    if [ "$n" -eq 1 ]; then
        ok "budget 1 against a 503 engine: 1 generate sent"
    else
        bad "budget 1 against a 503 engine: the engine saw $n generates"
    fi
    stop_serve
    # Detection's requests count: an engine of the last dialect tried (skyrl) is not reached
    # within a budget of 2, and the probe says so by name instead of guessing.
    start_serve skyrl ""
    expect_out 2 'usage.invalid_argument: the budget of 2 request.s. ran out while detecting the dialect' \
        "probe --budget 2 of a skyrl engine" "$S" probe --budget 2 --out "$tmp/rep3" "$url"
    stop_serve
    # Nothing answers on a port bound but not listening: a transport error, exit 4, not an
    # ambiguous dialect.
    python3 -c 'import os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0))
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1]); time.sleep(120)' "$tmp/deadport" &
    dead=$!
    while [ ! -s "$tmp/deadport" ]; do sleep 0.05; done
    expect_out 4 'client.transport: Couldn.t connect' "probe of a URL where nothing listens" \
        "$S" probe --budget 2 --out "$tmp/rep3" "http://127.0.0.1:$(cat "$tmp/deadport")"
    kill "$dead" 2>/dev/null
    # An engine whose initial checkpoint has weights.version 5 reports vLLM's "default" label
    # until its first update: the probe's syncs start above 5 (from --model), every one lands.
    for d in vllm sglang skyrl; do
        start_serve "$d" "" '"weights": {"version": 5},'
        expect_out 0 '^9 held, 0 failed' "weights.version 5 under $d's plane: every relation held" \
            "$S" probe --model "$tmp/cfg.json" --out "$tmp/rep3" "$url"
        stop_serve
    done
    # A model whose routes can take few values repeats rows by chance (one MoE layer, top-1 of
    # 8: a row equals its neighbour one time in 8; top-1 of 2: a changed router keeps half its
    # rows): below the entropy floor those rules are not judged, and every relation holds.
    for e in 8 2; do
        MODEL="{\"vocab\": 1000, \"layers\": 1, \"experts\": $e, \"topk\": 1, \"eos_id\": -1}"
        for d in $ALL; do
            start_serve "$d" ""
            for seed in 1 2 3; do
                probe "$seed"
                what="clean $d, one layer of top-1 of $e, seed $seed"
                if [ "$st" -ne 0 ] || ! printf '%s\n' "$OUT" | grep -q "^9 held, 0 failed"; then
                    bad "$what: exit $st"
                    printf '%s\n' "$OUT"
                else
                    ok "$what: every relation held"
                fi
            done
            stop_serve
        done
    done
    # A vocabulary of 2: every id the probe sends is in it (the prompts part at 0 where they
    # must differ; detection's prompt takes --model's ids), and every relation holds.
    MODEL='{"vocab": 2, "layers": 2, "experts": 16, "topk": 2, "eos_id": -1}'
    start_serve vllm ""
    expect_out 0 '^9 held, 0 failed' "a vocabulary of 2: every relation held" \
        "$S" probe --model "$tmp/cfg.json" --out "$tmp/rep3" "$url"
    stop_serve
    MODEL='{"vocab": 500, "layers": 2, "experts": 16, "topk": 2, "eos_id": -1}'
    # An engine whose version routes all fail (a proxy answers them 502) has no control plane
    # the probe can find: the relations that need a sync are skipped with that reason.
    start_serve vllm ""
    start proxy "$S" proxy --upstream "$url" --dialect vllm \
        --fault '{"kind":"http_502_html","endpoints":["weight_info","get_weight_version","state"]}'
    expect_out 0 '^skipped  meta.sync_effect: the engine exposes no weight-sync control plane' \
        "no control plane: the sync relations are skipped" \
        "$S" probe --model "$tmp/cfg.json" --out "$tmp/rep3" "$url"
    stop "$last_pid"
    stop_serve
    # --duration: every generate takes 300 ms, the duration is 200 ms, so at most the first
    # request is sent (whatever the machine's load) and every other relation is skipped.
    start_serve vllm '{"kind":"latency","ms":300}'
    expect_out 0 'skipped  meta.determinism: (the probe.s duration is over|the budget or duration)' \
        "probe --duration 0.2" "$S" probe --dialect vllm --duration 0.2 --out "$tmp/rep4" "$url"
    printf '%s\n' "$OUT" | grep -Eq '\((0|1) requests, 0 syncs\)' || bad "duration 0.2: $OUT"
    stop_serve
    # A scenario with engines.urls gets the relations by itself (no probe step, no syncs): on a
    # clean engine it passes; with all-zero routes the contract's routes.invalid and the
    # relations fire, the oracle's checks being skipped.
    for f in "" '{"kind":"routes_all_zero"}'; do
        start_serve skyrl "$f"
        if [ -z "$f" ]; then
            want='{"verdict": "pass"}'
        else
            want='{"verdict": "fail", "checks": ["routes.invalid", "meta.value_sanity", "meta.boundary_rows"]}'
        fi
        cat >"$tmp/ext.json" <<JSON
{"id": "t-ext", "description": "external engine, relations without the oracle",
 "model": {"vocab": 500, "layers": 2, "experts": 16, "topk": 2, "eos_id": -1},
 "engines": {"urls": ["$url"]}, "client": {"backoff_initial_ms": 1, "backoff_max_ms": 2},
 "steps": [{"kind": "rollout", "batch": 2, "turns": 2, "max_tokens": 8}],
 "expect": $want}
JSON
        expect_out 0 '^1 passed, 0 failed' "engines.urls scenario, fault [$f]: as expected" \
            "$S" run --out "$tmp/runs" "$tmp/ext.json"
        grep -q '"meta.sync_effect"' "$tmp/runs/latest/results.json" ||
            bad "engines.urls: the relations did not run"
        stop_serve
    done
    # Usage errors are named, exit 2.
    expect_out 2 'usage.invalid_argument: --budget .0.' "probe --budget 0" \
        "$S" probe --budget 0 "$url"
    expect_out 2 'usage.invalid_argument: no URL given' "probe without a URL" "$S" probe
    expect_out 2 "usage.invalid_argument: --dialect 'x' is not one of" "probe --dialect x" \
        "$S" probe --dialect x "$url"
    expect_out 0 'only to URL' "probe --help" "$S" probe --help
fi
finish
