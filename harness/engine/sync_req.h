/*
 * sync_req: the JSON bodies of vLLM's native weight-transfer routes as the mock engine reads them
 * (vllm/entrypoints/serve/dev/rlhf/api_router.py; /abort_requests from its disagg router): pure
 * parsers of untrusted bytes, fuzzed by
 * fuzz/fuzz_sync_request.c.
 *
 * Versions. vLLM carries weight versions as strings (opaque labels since vllm#49040: the
 * *_label parsers below); the mock's are integers
 * 0..SR_WEIGHTS_MAX_VERSION (100000, the one ceiling of every weight-sync path: finish, version,
 * buckets, disk), so a version is a JSON integer in that range or a string of 1..10 decimal digits
 * naming one.
 *
 * Strings: a JSON string holding an escaped NUL (\u0000) is refused (sr_sync_req_no_nul), since
 * the parsed C string would end at the NUL and name something else ("3\u0000" as 3).
 *
 * Errors: SR_E_ENGINE_REQUEST naming the field (answered 400), SR_E_SYNC_WIRE_VERSION for a key
 * of the other form of vLLM's API (sr_sync_req_wire_*, answered 400), SR_E_NOMEM. Bodies are
 * bounded by the server's max_body_bytes before they get here. Thread-safe; no global state.
 */
#ifndef SR_ENGINE_SYNC_REQ_H
#define SR_ENGINE_SYNC_REQ_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "spec/engine_config.h" /* sr_sync_api */
#include "sr_err.h"
#include "sr_weights.h" /* SR_WEIGHTS_MAX_VERSION */

#define SR_SYNC_REQ_MAX_VERSION  SR_WEIGHTS_MAX_VERSION
#define SR_SYNC_REQ_MAX_BASELINE 65536 /* tensors a weight_checker baseline may name */
#define SR_SYNC_REQ_NAME_MAX     256   /* bytes of a tensor name in a baseline */
#define SR_SYNC_REQ_DIGEST_HEX   32    /* hex digits of a checksum (xxh3-128) */

/* 0, or SR_E_ENGINE_REQUEST when a string (a key or a value) of the JSON text body[0..len) holds
 * an escaped NUL (\u0000), naming the offset; `what` names the request in the message. The text
 * is walked string by string as RFC 8259 writes them ("\\u0000", an escaped backslash, is no
 * NUL); a text that is not JSON is left to its parser. Every control-plane body and bucket header
 * passes here before it is parsed. */
int sr_sync_req_no_nul(const char *body, size_t len, const char *what, sr_err *err);

/* POST /start_weight_update [{"is_checkpoint_format": bool, ...}]: a JSON object (an empty body is
 * {}), refused as finish refuses one that is not. */
int sr_sync_req_start(const char *body, size_t len, sr_err *err);

/* POST /finish_weight_update [{"weight_version": v}] (an empty body is no version): *version
 * receives v, or -1 when none is given (null or absent). */
int sr_sync_req_finish(int64_t *version, const char *body, size_t len, sr_err *err);

/* POST /update_weight_version {"new_version": v} (required). */
int sr_sync_req_version(int64_t *version, const char *body, size_t len, sr_err *err);

/*
 * The same two bodies as vLLM's current form reads them (engines.sync_version "vllm#50902";
 * vllm#49040): the version is an opaque string of 1..SR_SYNC_REQ_LABEL_MAX-1 bytes (an integer
 * 0..SR_SYNC_REQ_MAX_VERSION is taken as its decimal digits). label[SR_SYNC_REQ_LABEL_MAX]
 * receives it ("" when a finish names none); *version the mock's integer version when the label
 * is one (digits naming 0..SR_SYNC_REQ_MAX_VERSION), else -1: a label such as "step-42" moves no
 * integer version. A string of more than 10 digits, or digits above the ceiling, is refused as
 * sr_sync_req_finish refuses it (the mock could not hold the version it names).
 */
#define SR_SYNC_REQ_LABEL_MAX 129
int sr_sync_req_finish_label(int64_t *version, char *label, const char *body, size_t len,
                             sr_err *err);
int sr_sync_req_version_label(int64_t *version, char *label, const char *body, size_t len,
                              sr_err *err);

/*
 * The keys vllm#50902 (NCCL) and vllm#48981 (IPC) moved from every update_info into the init
 * info: "packed", "packed_buffer_size_bytes", "packed_num_buffers"
 * (vllm/distributed/weight_transfer/nccl_common.py NCCLWeightTransferInitInfo).
 *
 * sr_sync_req_wire_init: the init_info object of /init_weight_transfer_engine. Under
 * SR_SYNC_API_50902 the keys are optional and typed (packed a boolean, the other two integers
 * 1..2^53), else SR_E_ENGINE_REQUEST naming the key; under SR_SYNC_API_31943 any of them is
 * SR_E_SYNC_WIRE_VERSION naming it (that form's NCCLWeightTransferInitInfo has no such field).
 * sr_sync_req_wire_update: an update_info object, posted on `call` (named in the message). Under
 * SR_SYNC_API_50902 any of the keys is SR_E_SYNC_WIRE_VERSION naming it and saying where it
 * moved (vLLM's parse_update_info raises "Invalid update_info ... unexpected keyword argument");
 * under SR_SYNC_API_31943 "packed" is optional and must be a boolean. A NULL object passes
 * (the caller refuses a missing one itself).
 */
int sr_sync_req_wire_init(const cJSON *init_info, sr_sync_api v, sr_err *err);
int sr_sync_req_wire_update(const cJSON *update_info, sr_sync_api v, const char *call, sr_err *err);

typedef enum sr_checker_action {
    SR_CHECK_CHECKSUM = 0,
    SR_CHECK_RESET,
    SR_CHECK_COMPARE
} sr_checker_action;

/* One baseline entry of a compare: a tensor name and its expected digest (hex, lower case). */
typedef struct sr_checker_entry {
    char name[SR_SYNC_REQ_NAME_MAX];
    char digest[SR_SYNC_REQ_DIGEST_HEX + 1];
} sr_checker_entry;

/* A parsed /weight_checker body. Plain struct: start from SR_CHECKER_REQ_INIT, release with
 * sr_checker_req_release (owns `baseline`). */
typedef struct sr_checker_req {
    sr_checker_action action;
    sr_checker_entry *baseline; /* compare only */
    size_t n_baseline;
} sr_checker_req;
#define SR_CHECKER_REQ_INIT                                                                        \
    {                                                                                              \
        SR_CHECK_CHECKSUM, NULL, 0                                                                 \
    }

/* POST /weight_checker {"action": "checksum"|"reset"|"compare", "baseline": {name: hex}}:
 * compare requires the baseline object (at most SR_SYNC_REQ_MAX_BASELINE names of 1..255 bytes,
 * each with a 32-digit hex digest); the others ignore it. */
int sr_sync_req_checker(sr_checker_req *out, const char *body, size_t len, sr_err *err);
void sr_checker_req_release(sr_checker_req *r);

#define SR_SYNC_REQ_MAX_ABORT_IDS 1024 /* request ids one /abort_requests may name */
#define SR_SYNC_REQ_ID_MAX        128  /* bytes of one request id, including the NUL */

/* A parsed /abort_requests body: ids[n] (owned; release with sr_abort_req_release). */
typedef struct sr_abort_req {
    char (*ids)[SR_SYNC_REQ_ID_MAX];
    size_t n;
} sr_abort_req;
#define SR_ABORT_REQ_INIT                                                                          \
    {                                                                                              \
        NULL, 0                                                                                    \
    }

/* POST /abort_requests {"request_ids": [id, ..]} (vllm/entrypoints/serve/disagg/api_router.py):
 * at most SR_SYNC_REQ_MAX_ABORT_IDS strings of 1..127 bytes each (an empty list is allowed).
 * The message names vLLM's detail: "JSON decode error: ..." for a body that is not a JSON
 * object, "Missing 'request_ids' in request body" without the key (or null). */
int sr_sync_req_abort(sr_abort_req *out, const char *body, size_t len, sr_err *err);
void sr_abort_req_release(sr_abort_req *r);

#endif /* SR_ENGINE_SYNC_REQ_H */
