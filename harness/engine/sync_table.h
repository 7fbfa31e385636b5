/*
 * sync_table: the weight-sync receiver of the mock engine as a state table, one per control plane
 * (engines.sync_dialect): state x call -> next state, or a named error with the HTTP status and
 * message the engine answers. The engine's weight-sync functions (engine.c, bucket.c) look every
 * protocol-order decision up here instead of deciding it themselves, and the unit suites walk
 * every cell (tests/test_sync_table.c in-process, tests/test_sync_table_http.c over HTTP), so the
 * table is the whole protocol.
 *
 * States: UNINIT (no init_weight_transfer_engine yet), IDLE (initialised, no update active),
 * ACTIVE (between start and finish). The skyrl plane does not require init (its delta transport
 * never calls it, docs/reference/skyrl.md §8.2), so there UNINIT answers exactly as IDLE does.
 *
 * Calls are what the engine classifies a request as: the endpoint plus the one condition that
 * changes its answer (a finish or version naming a version below the one held; a weight check
 * while paused or asleep; a bucket naming a tensor that another bucket still arriving writes; a
 * finish while a bucket of the update is still arriving), so that every guard of the protocol is
 * a cell.
 *
 * Atomic versions: nothing of an update is visible (version, weight_checker, routes) until every
 * bucket of it has arrived complete and verified. A finish while a bucket of the update is still
 * arriving (from sr_engine_bucket_begin, its header line included) is finish_incomplete: refused
 * sync.incomplete_update and the update discarded (-> idle), and the late bucket is answered
 * sync.incomplete_update too (bucket.c); a bucket naming a tensor another bucket still writes is
 * update_busy: refused sync.concurrent_update, the other one goes on. Outside an active update no
 * bucket of the vllm and skyrl planes is in flight (a finish ends or discards them all), so there
 * those two calls answer as update and finish.
 *
 * Status and body shape per plane: skyrl answers a refusal 500 with the engine's error body
 * {"error":{"message","type":"RuntimeError","code","check"}} (the reference raises RuntimeError
 * in a collective_rpc, skyrl.md §8.3); vllm answers 409 {"detail": message, "check": name}
 * as vLLM's dev-mode RLHF routes do for ordering violations
 * (vllm/entrypoints/serve/dev/rlhf/rl_state_machine.py, require_update_active/_inactive) and for a
 * weight check on a paused engine (vllm/entrypoints/serve/dev/rlhf/api_router.py weight_checker).
 * sglang answers a refusal 400 {"success": false, "message": msg} as SGLang's http_server.py does
 * for every failed weight route (python/sglang/srt/entrypoints/http_server.py,
 * init_weights_update_group, update_weights_from_distributed, destroy_weights_update_group). SGLang
 * has no start or finish: each update_weights_from_distributed is a whole update, so the engine
 * steps `update` when its header arrives and `finish` (or finish_backwards, a weight_version below
 * the one held) when its bytes are in, and a request never sees ACTIVE (that row answers as IDLE).
 * UNINIT there means no weights update group: init moves to IDLE, destroy back.
 *
 * A call that the plane has no route for is an absent cell, SR_E_ENGINE_REQUEST 404 "%s: no such
 * call in this control plane", which keeps the table total; over HTTP no request reaches it: the
 * router (engine_control.c, sr_srv_control) answers the route of another plane first with its own
 * 404,
 * {"error":{"message":"Not Found (a route of the <plane> control plane; this engine speaks another
 * engines.sync_dialect)","type":"NotFoundError","code":404}} without a "check", and the receiver's
 * state does not move. tests/test_sync_table_http.c drives every cell over HTTP and asserts that
 * 404 for the absent ones.
 *
 * Everything here is a lookup in constant tables: thread-safe, nothing to free.
 */
#ifndef SR_ENGINE_SYNC_TABLE_H
#define SR_ENGINE_SYNC_TABLE_H

#include "spec/engine_config.h" /* sr_sync_dialect */

typedef enum sr_sync_state {
    SR_SS_UNINIT = 0,
    SR_SS_IDLE,
    SR_SS_ACTIVE,
    SR_SS_COUNT
} sr_sync_state;

typedef enum sr_sync_call {
    SR_SC_INIT = 0,              /* init_weight_transfer_engine */
    SR_SC_START,                 /* start a weight update */
    SR_SC_UPDATE,                /* an update that carries tensors (a bucket) */
    SR_SC_FINISH,                /* finish the update (no version, or one not below the held) */
    SR_SC_FINISH_BACKWARDS,      /* finish naming a version below the one held */
    SR_SC_SET_VERSION,           /* update_weight_version to a version not below the held */
    SR_SC_SET_VERSION_BACKWARDS, /* update_weight_version to a lower version */
    SR_SC_CHECK,                 /* weight_checker on an awake, unpaused engine */
    SR_SC_CHECK_PAUSED,          /* weight_checker while paused or asleep */
    SR_SC_DESTROY,               /* destroy_weights_update_group (sglang) */
    SR_SC_UPDATE_BUSY,           /* an update naming a tensor a bucket still arriving writes */
    SR_SC_FINISH_INCOMPLETE,     /* finish while a bucket of the update is still arriving */
    SR_SC_COUNT
} sr_sync_call;

/* One cell. `code` 0: accepted, the state becomes `next`. Otherwise refused with `code` (an
 * sr_code), HTTP `status` and `msg` (a format with one %s, the call's name in the request); the
 * state becomes `next` all the same (a refused finish still ends the update, so a failed one never
 * blocks the next start). */
typedef struct sr_sync_cell {
    sr_sync_state next;
    int code;
    unsigned status;
    const char *msg;
} sr_sync_cell;

/* The cell for (dialect, state, call); NULL outside the enums. */
const sr_sync_cell *sr_sync_table_cell(sr_sync_dialect d, sr_sync_state s, sr_sync_call c);

/* The name of call `c` in plane `d`'s requests ("skyrl_start_weight_update", "start_weight_update",
 * ...), for messages; NULL outside the enums. */
const char *sr_sync_call_method(sr_sync_dialect d, sr_sync_call c);

/* "uninit", "idle", "active" and "init", "start", "update", "finish", "finish_backwards",
 * "set_version", "set_version_backwards", "check", "check_paused", "destroy", "update_busy",
 * "finish_incomplete"; NULL outside the enums. */
const char *sr_sync_state_name(sr_sync_state s);
const char *sr_sync_call_name(sr_sync_call c);

#endif /* SR_ENGINE_SYNC_TABLE_H */
