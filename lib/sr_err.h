/*
 * sr_err: the error model of libsyncroll.
 *
 * Every fallible function returns int: 0 on success or a negative sr_code, and takes an
 * `sr_err *err` (may be NULL) that receives the same code plus a message with context (field,
 * byte offset, token row). Each code has a stable dotted name (e.g. "envelope.byte_count") that
 * reports, scenario `expect` lists and exit paths print, a class that tells the caller what to
 * do, and a one-line description. The table below is the single source of truth; the meta-test
 * tests/test_err.c fails if a code lacks a name, a class or a description, or if two codes
 * share a number or a name.
 *
 * Classes (what the caller must do):
 *   transient  the same request may succeed if retried (truncated body, reset, timeout);
 *   protocol   the peer broke the contract; retrying will not help (layout drift, byte count);
 *   usage      the caller passed bad arguments or a bad file (scenario, CLI, field definition);
 *   resource   a limit or the system ran out (memory, configured maximum size);
 *   internal   a bug in syncroll itself.
 *
 * Thread-safety: the table is immutable; an sr_err belongs to one thread at a time.
 */
#ifndef SR_ERR_H
#define SR_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sr_class {
    SR_CLASS_NONE = 0,
    SR_CLASS_TRANSIENT,
    SR_CLASS_PROTOCOL,
    SR_CLASS_USAGE,
    SR_CLASS_RESOURCE,
    SR_CLASS_INTERNAL
} sr_class;

/*
 * X(symbol, number, "dotted.name", class, "description")
 * Numbers are stable once published; groups of 100 per module.
 */
#define SR_ERR_TABLE(X)                                                                            \
    /* generic (-1xx) */                                                                           \
    X(SR_E_NOMEM, -100, "resource.nomem", SR_CLASS_RESOURCE, "memory allocation failed")           \
    X(SR_E_LIMIT, -101, "resource.limit", SR_CLASS_RESOURCE,                                       \
      "a configured maximum size or count was exceeded")                                           \
    X(SR_E_INVAL, -102, "usage.invalid_argument", SR_CLASS_USAGE,                                  \
      "a function or command was called with an invalid argument")                                 \
    X(SR_E_IO, -103, "io.error", SR_CLASS_RESOURCE, "reading or writing a file failed")            \
    X(SR_E_INTERNAL, -104, "internal.bug", SR_CLASS_INTERNAL,                                      \
      "an internal invariant was violated (a bug in syncroll)")                                    \
    X(SR_E_JSON_SYNTAX, -105, "json.syntax", SR_CLASS_USAGE,                                       \
      "a JSON document given by the user is not valid JSON")                                       \
    X(SR_E_JSON_SCHEMA, -106, "json.schema", SR_CLASS_USAGE,                                       \
      "a JSON document given by the user has a missing, unknown or mistyped key")                  \
    X(SR_E_NOT_REGULAR, -107, "io.not_regular_file", SR_CLASS_USAGE,                               \
      "a path to read names a FIFO, device, socket or directory instead of a regular file")        \
    X(SR_E_TOO_MUCH_MEMORY, -108, "resource.memory_estimate", SR_CLASS_RESOURCE,                   \
      "a scenario's estimated memory exceeds the machine's physical memory (lint/run --force)")    \
    X(SR_E_SYMLINK, -109, "io.symlink", SR_CLASS_USAGE,                                            \
      "a file or folder under a sync folder (delta store, receiver state, checkpoint) is a "       \
      "symlink: refused, never followed")                                                          \
    /* base64 (-2xx) */                                                                            \
    X(SR_E_B64_CHAR, -200, "base64.invalid_char", SR_CLASS_PROTOCOL,                               \
      "a byte outside the RFC 4648 standard alphabet (whitespace, url-safe, backslash, ...)")      \
    X(SR_E_B64_PADDING, -201, "base64.bad_padding", SR_CLASS_PROTOCOL,                             \
      "'=' padding in the wrong place, too much of it, or non-zero trailing bits")                 \
    X(SR_E_B64_LENGTH, -202, "base64.bad_length", SR_CLASS_PROTOCOL,                               \
      "the encoded length is not a multiple of 4")                                                 \
    /* dtype and envelope (-3xx) */                                                                \
    X(SR_E_DTYPE_UNKNOWN, -300, "dtype.unknown", SR_CLASS_PROTOCOL,                                \
      "a dtype name that is not a known NumPy dtype name")                                         \
    X(SR_E_ENV_NOT_OBJECT, -301, "envelope.not_object", SR_CLASS_PROTOCOL,                         \
      "a packed array payload is not a JSON object")                                               \
    X(SR_E_ENV_INVALID, -302, "envelope.invalid", SR_CLASS_PROTOCOL,                               \
      "a packed array envelope lacks data/shape/dtype or has one of the wrong JSON type")          \
    X(SR_E_ENV_DTYPE, -303, "envelope.dtype", SR_CLASS_PROTOCOL,                                   \
      "the envelope's dtype is not one the field allows")                                          \
    X(SR_E_ENV_SHAPE, -304, "envelope.shape", SR_CLASS_PROTOCOL,                                   \
      "the envelope's shape is not ndim non-negative integer dimensions")                          \
    X(SR_E_ENV_BYTE_COUNT, -305, "envelope.byte_count", SR_CLASS_PROTOCOL,                         \
      "the decoded byte count differs from prod(shape) * itemsize")                                \
    X(SR_E_ENV_OVERFLOW, -306, "envelope.shape_overflow", SR_CLASS_PROTOCOL,                       \
      "the product of the shape (times the item size) overflows 64 bits")                          \
    X(SR_E_ENV_TOO_LARGE, -307, "envelope.too_large", SR_CLASS_RESOURCE,                           \
      "the array is larger than the configured maximum array size")                                \
    X(SR_E_ENV_SIDECAR, -308, "envelope.sidecar_collision", SR_CLASS_USAGE,                        \
      "a sidecar key collides with data, shape or dtype")                                          \
    X(SR_E_ENV_NON_CANONICAL, -309, "envelope.non_canonical", SR_CLASS_PROTOCOL,                   \
      "routes are not in their smallest canonical dtype")                                          \
    X(SR_E_ROUTES_INVALID, -310, "routes.invalid", SR_CLASS_PROTOCOL,                              \
      "routes are not an integer [tokens, layers, topk] array")                                    \
    X(SR_E_ROUTES_NEGATIVE, -311, "routes.negative", SR_CLASS_PROTOCOL,                            \
      "a routed expert index is negative")                                                         \
    X(SR_E_ROUTES_TOO_WIDE, -312, "routes.too_wide", SR_CLASS_PROTOCOL,                            \
      "a routed expert index exceeds signed int32")                                                \
    /* splice, fields and integer arrays (-4xx) */                                                 \
    X(SR_E_SPLICE_DRIFT, -400, "splice.layout_drift", SR_CLASS_PROTOCOL,                           \
      "a registered field holds an envelope that the scan did not splice (reordered, re-spaced)")  \
    X(SR_E_SPLICE_UNTERMINATED, -401, "splice.unterminated", SR_CLASS_TRANSIENT,                   \
      "the body ends inside a packed blob")                                                        \
    X(SR_E_SPLICE_ORPHAN, -402, "splice.orphan_blob", SR_CLASS_PROTOCOL,                           \
      "a spliced blob found no envelope of its field in the parsed body")                          \
    X(SR_E_SPLICE_TRUNCATED, -404, "splice.truncated", SR_CLASS_TRANSIENT,                         \
      "the body is shorter than announced or ends before the JSON document does")                  \
    X(SR_E_SPLICE_JSON, -405, "splice.invalid_json", SR_CLASS_TRANSIENT,                           \
      "the body with its blobs removed does not parse as JSON")                                    \
    X(SR_E_SPLICE_TOO_LARGE, -406, "splice.body_too_large", SR_CLASS_RESOURCE,                     \
      "the response body exceeds the configured maximum body size")                                \
    X(SR_E_SPLICE_SHORT, -407, "splice.short_body", SR_CLASS_TRANSIENT,                            \
      "the body ended before its announced Content-Length")                                        \
    X(SR_E_SPLICE_LONG, -408, "splice.long_body", SR_CLASS_PROTOCOL,                               \
      "the body continued past its announced Content-Length")                                      \
    X(SR_E_SPLICE_MISATTRIBUTED, -409, "splice.misattributed", SR_CLASS_PROTOCOL,                  \
      "a blob cut at a look-alike key (quirk prefix_without_quote) went to a registered field")    \
    X(SR_E_FIELD_DEF, -410, "fields.invalid_definition", SR_CLASS_USAGE,                           \
      "a packed-field definition is malformed")                                                    \
    X(SR_E_FIELD_UNKNOWN, -411, "fields.unknown", SR_CLASS_USAGE,                                  \
      "a packed-field name is not in the registry")                                                \
    X(SR_E_FIELD_SHAPE, -412, "fields.shape_mismatch", SR_CLASS_PROTOCOL,                          \
      "a field's array does not have the shape its definition declares (\"shape\": [\"T\", 8])")   \
    X(SR_E_FIELD_RANGE, -413, "fields.out_of_range", SR_CLASS_PROTOCOL,                            \
      "a field's values lie outside the range its definition declares, or a float that must be "   \
      "finite is not")                                                                             \
    X(SR_E_INTARRAY_SYNTAX, -420, "intarray.syntax", SR_CLASS_TRANSIENT,                           \
      "a registered integer array (token_ids) is not valid JSON ([01], [1,], [1 2]): the "         \
      "reference's JSON decoder fails too and its client retries")                                 \
    X(SR_E_INTARRAY_STRICT, -421, "intarray.stricter_than_reference", SR_CLASS_PROTOCOL,           \
      "a registered integer array is valid JSON the reference accepts, but holds a value "         \
      "syncroll refuses: not an integer literal ([1.0], [1e2], a string) or outside the field's "  \
      "range ([-1], [2^31])")                                                                      \
    /* the reference parser's rules for a response body's JSON (-43x) */                           \
    X(SR_E_JSON_DUPLICATE_KEY, -430, "json.duplicate_key", SR_CLASS_PROTOCOL,                      \
      "an object of a response body's JSON has the same key twice (compared after unescaping); "   \
      "the reference keeps the last silently, so syncroll fails closed")                           \
    X(SR_E_JSON_TOO_DEEP, -431, "json.too_deep", SR_CLASS_PROTOCOL,                                \
      "a response body's JSON nests arrays and objects deeper than 1000 levels")                   \
    X(SR_E_JSON_UTF8, -432, "json.invalid_utf8", SR_CLASS_TRANSIENT,                               \
      "a string of a response body's JSON is not valid UTF-8 (RFC 3629) or holds a lone "          \
      "surrogate escape: the reference's JSON decoder fails and its client retries")               \
    X(SR_E_JSON_NUMBER_OVERFLOW, -433, "json.number_overflow", SR_CLASS_TRANSIENT,                 \
      "a number of a response body's JSON overflows a double (1e400): the reference's JSON "       \
      "decoder fails and its client retries")                                                      \
    /* traces (-5xx) */                                                                            \
    X(SR_E_TRACE_FINALIZED, -500, "trace.finalized", SR_CLASS_USAGE,                               \
      "the trace was already finalized")                                                           \
    X(SR_E_TRACE_EXPECTED_ROWS, -501, "trace.expected_rows", SR_CLASS_USAGE,                       \
      "expected_rows is not a non-negative integer")                                               \
    X(SR_E_TRACE_NO_TOKEN_DIM, -502, "trace.no_token_dim", SR_CLASS_USAGE,                         \
      "token metadata has no token-row dimension")                                                 \
    X(SR_E_TRACE_ROW_COUNT, -503, "trace.row_count", SR_CLASS_PROTOCOL,                            \
      "a chunk or a finalized trace has a different number of rows than expected")                 \
    X(SR_E_TRACE_SCHEMA, -504, "trace.schema_changed", SR_CLASS_PROTOCOL,                          \
      "a chunk's row shape or dtype differs from the trace's schema")                              \
    X(SR_E_TRACE_NO_CHUNKS, -505, "trace.no_chunks", SR_CLASS_USAGE,                               \
      "the trace was finalized before any chunk was appended")                                     \
    X(SR_E_TRACE_PROMPT_START, -506, "trace.prompt_start", SR_CLASS_PROTOCOL,                      \
      "the routed-expert prompt start exceeds the prompt length")                                  \
    X(SR_E_TRACE_NO_GENERATION, -507, "trace.no_generation", SR_CLASS_PROTOCOL,                    \
      "a routed-expert generation produced no token")                                              \
    X(SR_E_TRACE_LOSS_MASK, -508, "trace.loss_mask", SR_CLASS_USAGE,                               \
      "the loss mask length differs from the token count")                                         \
    X(SR_E_TRACE_TOO_MANY_ROWS, -509, "trace.too_many_rows", SR_CLASS_PROTOCOL,                    \
      "the trace holds more route rows than the trajectory has tokens")                            \
    X(SR_E_TRACE_MISSING_ROUTE, -510, "trace.missing_route", SR_CLASS_PROTOCOL,                    \
      "a loss-active target token has no captured route row")                                      \
    X(SR_E_TRACE_EMPTY, -511, "trace.empty", SR_CLASS_PROTOCOL,                                    \
      "the routed-expert trace is finalized or padded before any routes were captured")            \
    X(SR_E_TRACE_LAYERS, -512, "trace.layer_indices", SR_CLASS_PROTOCOL,                           \
      "layer indices are invalid or changed mid-trajectory")                                       \
    /* collation, pools and configuration (-6xx) */                                                \
    X(SR_E_COLLATE_INPUT, -600, "collate.input", SR_CLASS_USAGE,                                   \
      "the routes to collate are missing, of a non-canonical dtype or of mismatched shape")        \
    X(SR_E_COLLATE_ROWS, -601, "collate.rows", SR_CLASS_PROTOCOL,                                  \
      "a sample has more route rows than real tokens, or none")                                    \
    X(SR_E_POOL_ARG, -610, "pool.invalid_argument", SR_CLASS_USAGE,                                \
      "a pool cap, reserve, worker count or row count is out of range")                            \
    X(SR_E_POOL_AFFINITY, -611, "pool.affinity", SR_CLASS_RESOURCE,                                \
      "the CPU affinity of the process could not be read")                                         \
    X(SR_E_POOL_ROW, -612, "pool.row_failed", SR_CLASS_INTERNAL,                                   \
      "a parallel row-fill callback failed")                                                       \
    X(SR_E_CONFIG_VPP, -620, "config.vpp_incompatible", SR_CLASS_USAGE,                            \
      "routing replay is enabled with interleaved virtual pipeline parallelism")                   \
    X(SR_E_CONFIG_INCONSISTENT, -621, "config.inconsistent", SR_CLASS_INTERNAL,                    \
      "the config-level and worker-level routing-replay checks disagree on one configuration")     \
    /* routing oracle and synthetic weights (-7xx) */                                              \
    X(SR_E_ORACLE_MODEL, -700, "oracle.invalid_model", SR_CLASS_USAGE,                             \
      "a model shape is invalid (vocab, layers, experts, top-k, EOS, stop sequences, rates)")      \
    X(SR_E_ORACLE_TOKEN, -701, "oracle.invalid_token", SR_CLASS_PROTOCOL,                          \
      "a token id is outside [0, vocab)")                                                          \
    X(SR_E_ORACLE_REQUEST, -702, "oracle.invalid_request", SR_CLASS_USAGE,                         \
      "a generate request is invalid (empty prompt, max_tokens, route start, dtype, buffer)")      \
    X(SR_E_WEIGHTS_SPEC, -750, "weights.invalid_spec", SR_CLASS_USAGE,                             \
      "a weight-set spec is invalid (budget, layers, expert tensors, rates, version)")             \
    X(SR_E_WEIGHTS_UNKNOWN, -751, "weights.unknown_tensor", SR_CLASS_PROTOCOL,                     \
      "a tensor name or index is not in the weight set")                                           \
    X(SR_E_WEIGHTS_SIZE, -752, "weights.size_mismatch", SR_CLASS_PROTOCOL,                         \
      "received tensor bytes differ in length from the tensor's byte size")                        \
    /* delta store (-8xx) */                                                                       \
    X(SR_E_DELTA_MANIFEST, -800, "delta.manifest", SR_CLASS_PROTOCOL,                              \
      "a delta manifest is missing, not JSON, too large, or breaks its schema or bounds")          \
    X(SR_E_DELTA_PAYLOAD, -801, "delta.payload", SR_CLASS_PROTOCOL,                                \
      "a delta payload file or blob is missing, malformed, or differs in size from the manifest")  \
    X(SR_E_DELTA_CHECKSUM, -802, "delta.checksum", SR_CLASS_PROTOCOL,                              \
      "tensor bytes after applying a delta differ from the manifest's xxh3-128 checksum")          \
    X(SR_E_DELTA_VERSION, -803, "delta.version", SR_CLASS_PROTOCOL,                                \
      "a delta's version or base_version does not follow the receiver's, or it is ahead")          \
    X(SR_E_DELTA_STATE, -804, "delta.state", SR_CLASS_PROTOCOL,                                    \
      "the delta receiver's state file is corrupt (reset the receiver to recover)")                \
    X(SR_E_DELTA_TENSOR, -805, "delta.tensor_mismatch", SR_CLASS_PROTOCOL,                         \
      "a tensor's dtype, shape or byte count differs from the base, local or manifest tensor")     \
    X(SR_E_DELTA_IO, -806, "delta.io", SR_CLASS_RESOURCE,                                          \
      "reading, writing, syncing or renaming a file of the delta store failed")                    \
    X(SR_E_DELTA_LOCKED, -807, "delta.locked", SR_CLASS_TRANSIENT,                                 \
      "another receiver held the lock of the delta state folder past the lock wait")               \
    /* generate client and rollout loop (-95x, -96x of the -9xx range) */                          \
    X(SR_E_CLIENT_INVALID, -950, "client.invalid_request", SR_CLASS_USAGE,                         \
      "a generate request fails the client-side checks (docs/reference/skyrl.md section 1.2) "     \
      "and is never sent")                                                                         \
    X(SR_E_CLIENT_ROUTES_MISSING, -951, "client.routes_missing", SR_CLASS_PROTOCOL,                \
      "routed experts were requested but the response carries null or no routed_experts")          \
    X(SR_E_CLIENT_RETRY_EXHAUSTED, -952, "client.retry_exhausted", SR_CLASS_RESOURCE,              \
      "every allowed attempt of a request failed transiently; the attempt budget is spent")        \
    X(SR_E_CLIENT_DEADLINE, -953, "client.deadline", SR_CLASS_RESOURCE,                            \
      "a request (attempts and waits included) did not complete within its total deadline")        \
    X(SR_E_CLIENT_HTTP_STATUS, -954, "client.http_status", SR_CLASS_PROTOCOL,                      \
      "the server answered with an HTTP status the client does not retry (4xx, 3xx)")              \
    X(SR_E_CLIENT_NOT_RETRIED, -955, "client.not_retried", SR_CLASS_TRANSIENT,                     \
      "a transient failure that the quirk retry_json_decode_only declined to retry")               \
    X(SR_E_CLIENT_TRANSPORT, -956, "client.transport", SR_CLASS_TRANSIENT,                         \
      "connecting, sending or receiving failed (refused, reset, closed early, timed out)")         \
    X(SR_E_CLIENT_BAD_RESPONSE, -957, "client.bad_response", SR_CLASS_PROTOCOL,                    \
      "a decodable response breaks the response schema (choices, token_ids, finish_reason)")       \
    X(SR_E_CLIENT_INVALID_JSON, -958, "client.invalid_json", SR_CLASS_TRANSIENT,                   \
      "an unspliced response body (native generate, control plane) does not parse as JSON")        \
    X(SR_E_CLIENT_ABORTED_TURN, -959, "client.aborted_turn", SR_CLASS_TRANSIENT,                   \
      "the engine answered a generate with finish_reason abort: the turn is partial, never "       \
      "committed as finished (client.on_abort decides whether the rollout goes on)")               \
    X(SR_E_CLIENT_SUPPORT_TOP_K, -965, "client.support_top_k", SR_CLASS_USAGE,                     \
      "the engine refused return_sample_support (HTTP 400): sampling_params.top_k is not an "      \
      "integer > 1 (SkyRL #2082); never retried")                                                  \
    X(SR_E_CLIENT_SUPPORT_MISSING, -966, "client.support_missing", SR_CLASS_PROTOCOL,              \
      "sample support was requested but rollout_sample_support is null, absent or not an "         \
      "envelope")                                                                                  \
    X(SR_E_CLIENT_SUPPORT_INVALID, -967, "client.support_invalid", SR_CLASS_PROTOCOL,              \
      "rollout_sample_support is not [generated tokens, top_k] of vocabulary ids with trailing "   \
      "-1 padding")                                                                                \
    X(SR_E_CLIENT_SUPPORT_MEMBERSHIP, -968, "client.support_membership", SR_CLASS_PROTOCOL,        \
      "a sampled token is not a member of its own rollout_sample_support row (the server's "       \
      "repair of a miss did not happen)")                                                          \
    X(SR_E_CLIENT_OMITTED_START, -969, "client.omitted_start", SR_CLASS_PROTOCOL,                  \
      "with prefix omission (engines.omit_prefix_routes, vllm-project/vllm#57025) the reply's "    \
      "routes begin (P + G - 1 minus their rows) where the caller cannot assemble them: before "   \
      "the start it sent, past the last prompt token or past the rows it holds")                   \
    X(SR_E_ROLLOUT_CONFIG, -960, "rollout.invalid_config", SR_CLASS_USAGE,                         \
      "a rollout configuration is invalid or refused (routes with the single-turn template)")      \
    X(SR_E_ROLLOUT_TOKEN_LIMIT, -961, "rollout.token_limit", SR_CLASS_RESOURCE,                    \
      "a rollout passed its token limit (steps.rollout.max_rollout_tokens, route-trace bytes)")    \
    /* mock engine, faults and child processes (-9xx) */                                           \
    X(SR_E_FAULT_SPEC, -900, "fault.invalid_spec", SR_CLASS_USAGE,                                 \
      "a declared fault is malformed (unknown kind, key, endpoint, or a parameter out of range)")  \
    X(SR_E_ENGINE_CONFIG, -901, "engine.invalid_config", SR_CLASS_USAGE,                           \
      "a mock engine configuration is malformed (model, weights, fields, server limits)")          \
    X(SR_E_ENGINE_REQUEST, -902, "engine.bad_request", SR_CLASS_PROTOCOL,                          \
      "a request to the mock engine breaks the contract (answered with HTTP 400)")                 \
    X(SR_E_ENGINE_SESSION_REQUIRED, -931, "engine.session_required", SR_CLASS_USAGE,               \
      "an engine with engines.omit_prefix_routes refused (400) a generate without X-Session-ID: "  \
      "prefix omission needs a stable session identity (vllm-project/vllm#57025)")                 \
    X(SR_E_ENGINE_START, -903, "engine.start_failed", SR_CLASS_RESOURCE,                           \
      "the mock engine could not bind its address or start its HTTP server")                       \
    X(SR_E_SYNC_ORDER, -904, "sync.protocol_order", SR_CLASS_PROTOCOL,                             \
      "a weight-sync phase arrived out of order (start while active, update or finish unstarted)") \
    X(SR_E_SYNC_DEADLINE, -905, "sync.deadline", SR_CLASS_TRANSIENT,                               \
      "a weight-sync phase did not complete on an engine within its deadline")                     \
    X(SR_E_SYNC_PARTIAL, -906, "sync.partial_update", SR_CLASS_PROTOCOL,                           \
      "after a sync an engine holds bytes that differ from the published ones (layers, tensors)")  \
    X(SR_E_SYNC_VERSION_SKEW, -907, "sync.version_skew", SR_CLASS_PROTOCOL,                        \
      "after a sync an engine reports a weight version other than the published one")              \
    X(SR_E_SYNC_CHECKSUM, -908, "sync.checksum", SR_CLASS_PROTOCOL,                                \
      "an engine refused a weight payload whose checksum did not match (corrupted in transit)")    \
    X(SR_E_SYNC_FAILED, -909, "sync.engine_failed", SR_CLASS_PROTOCOL,                             \
      "a weight-sync phase failed on an engine for another reason (status, transport, refusal)")   \
    X(SR_E_PROC_SPAWN, -910, "proc.spawn", SR_CLASS_RESOURCE,                                      \
      "a child process could not be started")                                                      \
    X(SR_E_PROC_READY, -911, "proc.ready_timeout", SR_CLASS_TRANSIENT,                             \
      "a child process did not report readiness before its deadline")                              \
    X(SR_E_PROC_EXITED, -912, "proc.exited", SR_CLASS_TRANSIENT,                                   \
      "a child process exited or closed its readiness pipe before reporting readiness")            \
    X(SR_E_ENGINE_CONN_LIMIT, -913, "engine.connection_limit", SR_CLASS_RESOURCE,                  \
      "an engine answered 503: the connection came over engines.server.max_connections")           \
    X(SR_E_ENGINE_FORBIDDEN_PATH, -920, "engine.forbidden_path", SR_CLASS_USAGE,                   \
      "an engine refused (403) a sync_dir outside the folders of its server.sync_dirs")            \
    X(SR_E_ENGINE_REQUEST_TIMEOUT, -921, "engine.request_timeout", SR_CLASS_TRANSIENT,             \
      "an engine closed a connection whose request headers or body came too slowly (408)")         \
    X(SR_E_ENGINE_PENDING_LIMIT, -922, "engine.pending_limit", SR_CLASS_TRANSIENT,                 \
      "an engine closed a connection still waiting for request headers to make room for a new "    \
      "one")                                                                                       \
    X(SR_E_ENGINE_BAD_FRAMING, -923, "engine.bad_framing", SR_CLASS_PROTOCOL,                      \
      "a request's HTTP framing is invalid (conflicting Content-Length), answered 400 and closed") \
    X(SR_E_ENGINE_UNSUPPORTED, -924, "engine.unsupported_encoding", SR_CLASS_PROTOCOL,             \
      "a request uses a transfer or content coding the engine does not implement (501)")           \
    X(SR_E_SYNC_NO_TRANSFER, -925, "sync.no_transfer", SR_CLASS_PROTOCOL,                          \
      "a weight update call would move no bytes (update_weights_nccl/_ipc as JSON only), refused") \
    X(SR_E_SYNC_VERSION_BACKWARDS, -926, "sync.version_backwards", SR_CLASS_PROTOCOL,              \
      "a finish or version update named a weight version below the one the engine holds")          \
    X(SR_E_SYNC_ENGINE_PAUSED, -927, "sync.engine_paused", SR_CLASS_PROTOCOL,                      \
      "a call that needs an awake, unpaused engine (weight_checker) came while it was not (409)")  \
    X(SR_E_SYNC_INCOMPLETE, -928, "sync.incomplete_update", SR_CLASS_PROTOCOL,                     \
      "a finish came while a bucket of the update was still arriving: nothing of it is applied")   \
    X(SR_E_SYNC_CONCURRENT, -929, "sync.concurrent_update", SR_CLASS_PROTOCOL,                     \
      "a bucket named a tensor that another bucket still arriving is writing: refused")            \
    X(SR_E_SYNC_WIRE_VERSION, -930, "sync.wire_version", SR_CLASS_PROTOCOL,                        \
      "a weight-sync request is in another form of vLLM's API than the engine's sync_version (a "  \
      "key moved between init_info and update_info, vllm#50902): refused 400 naming the key")      \
    /* NumPy .npy and NeMo-RL nrlre1 route payloads (-12xx) */                                     \
    X(SR_E_NPY_MAGIC, -1200, "npy.magic", SR_CLASS_PROTOCOL,                                       \
      "a .npy route payload does not start with the magic \\x93NUMPY")                             \
    X(SR_E_NPY_VERSION, -1201, "npy.version", SR_CLASS_PROTOCOL,                                   \
      "a .npy route payload has a format version other than 1.0")                                  \
    X(SR_E_NPY_HEADER, -1202, "npy.header", SR_CLASS_PROTOCOL,                                     \
      "a .npy header is cut short or is not a dict literal of descr, fortran_order and shape")     \
    X(SR_E_NPY_DESCR, -1203, "npy.descr", SR_CLASS_PROTOCOL,                                       \
      "a .npy descr is not a known dtype, or not one the field allows")                            \
    X(SR_E_NPY_BYTE_ORDER, -1204, "npy.byte_order", SR_CLASS_PROTOCOL,                             \
      "a .npy descr is big-endian or lacks the little-endian mark on a multi-byte dtype")          \
    X(SR_E_NPY_FORTRAN, -1205, "npy.fortran_order", SR_CLASS_PROTOCOL,                             \
      "a .npy header says fortran_order True; routes must be C order")                             \
    X(SR_E_NPY_SHAPE, -1206, "npy.shape", SR_CLASS_PROTOCOL,                                       \
      "a .npy shape is not a tuple of decimal non-negative integers of the field's ndim")          \
    X(SR_E_NPY_BYTE_COUNT, -1207, "npy.byte_count", SR_CLASS_PROTOCOL,                             \
      "the bytes after a .npy header are not exactly prod(shape) * itemsize")                      \
    X(SR_E_NRLRE_SYNTAX, -1220, "nrlre.syntax", SR_CLASS_PROTOCOL,                                 \
      "a NeMo-RL routes string is not 'nrlre1:<dtype>:<SxLxK>:<base64>'")                          \
    X(SR_E_NRLRE_DTYPE, -1221, "nrlre.dtype", SR_CLASS_PROTOCOL,                                   \
      "a NeMo-RL routes string names a dtype other than int8, int16 or int32")                     \
    X(SR_E_NRLRE_SHAPE, -1222, "nrlre.shape", SR_CLASS_PROTOCOL,                                   \
      "a NeMo-RL routes string's shape is not three plain decimal dims joined by 'x'")             \
    /* route wires of the engine dialects, read by the splice and the client (-123x..-125x) */     \
    X(SR_E_WIRE_NOT_STRING, -1230, "wire.not_string", SR_CLASS_PROTOCOL,                           \
      "a route field of a string wire (.npy, raw int32, nrlre1) holds something but a string")     \
    X(SR_E_WIRE_BYTE_COUNT, -1231, "wire.byte_count", SR_CLASS_PROTOCOL,                           \
      "a route payload's decoded bytes do not fit its dtype and shape")                            \
    X(SR_E_WIRE_SHAPE, -1232, "wire.shape", SR_CLASS_PROTOCOL,                                     \
      "a route payload's shape does not match the model's layers and top_k, or its rows")          \
    X(SR_E_NESTED_SHAPE, -1233, "nested.shape", SR_CLASS_PROTOCOL,                                 \
      "nested route lists are not a rectangular array of the field's ndim")                        \
    X(SR_E_NESTED_VALUE, -1234, "nested.value", SR_CLASS_PROTOCOL,                                 \
      "a nested route list holds a value that is not an integer in the field's range")             \
    X(SR_E_DIALECT_AMBIGUOUS, -1235, "dialect.ambiguous", SR_CLASS_USAGE,                          \
      "a body's dialect cannot be told from its keys; name it with --dialect")                     \
    X(SR_E_DIALECT_FIELD, -1260, "dialect.field_unsupported", SR_CLASS_USAGE,                      \
      "a packed field definition cannot be carried in the engine dialect's wire")                  \
    /* safetensors checkpoints (-13xx) */                                                          \
    X(SR_E_ST_TRUNCATED, -1300, "st.truncated", SR_CLASS_PROTOCOL,                                 \
      "a safetensors file is shorter than its 8-byte header length")                               \
    X(SR_E_ST_HEADER_TOO_LARGE, -1301, "st.header_too_large", SR_CLASS_PROTOCOL,                   \
      "a safetensors header length is above the 100 MB cap")                                       \
    X(SR_E_ST_HEADER_LENGTH, -1302, "st.header_length", SR_CLASS_PROTOCOL,                         \
      "a safetensors header length runs past the end of the file")                                 \
    X(SR_E_ST_HEADER_START, -1303, "st.header_start", SR_CLASS_PROTOCOL,                           \
      "a safetensors header does not start with '{'")                                              \
    X(SR_E_ST_HEADER_JSON, -1304, "st.header_json", SR_CLASS_PROTOCOL,                             \
      "a safetensors header is not one UTF-8 JSON object (space padding allowed)")                 \
    X(SR_E_ST_DUPLICATE, -1305, "st.duplicate_name", SR_CLASS_PROTOCOL,                            \
      "a safetensors header names a tensor (or a key) twice")                                      \
    X(SR_E_ST_TENSOR, -1306, "st.tensor_entry", SR_CLASS_PROTOCOL,                                 \
      "a safetensors tensor entry is not {dtype, shape, data_offsets} of the right types")         \
    X(SR_E_ST_DTYPE, -1307, "st.dtype", SR_CLASS_PROTOCOL,                                         \
      "a safetensors dtype is not one this reader knows (BOOL, U8, F16, BF16, F32, ...)")          \
    X(SR_E_ST_SHAPE_OVERFLOW, -1308, "st.shape_overflow", SR_CLASS_PROTOCOL,                       \
      "a safetensors shape's product times the item size overflows 64 bits")                       \
    X(SR_E_ST_BYTE_COUNT, -1309, "st.byte_count", SR_CLASS_PROTOCOL,                               \
      "a safetensors tensor's end - begin differs from prod(shape) * itemsize")                    \
    X(SR_E_ST_OFFSETS, -1310, "st.offsets", SR_CLASS_PROTOCOL,                                     \
      "safetensors data_offsets out of order, overlapping or leaving a gap")                       \
    X(SR_E_ST_BUFFER, -1311, "st.buffer_size", SR_CLASS_PROTOCOL,                                  \
      "safetensors tensors do not cover the byte buffer exactly (short or past it)")               \
    X(SR_E_ST_METADATA, -1312, "st.metadata", SR_CLASS_PROTOCOL,                                   \
      "a safetensors __metadata__ is not an object of string values")                              \
    X(SR_E_ST_CHECKPOINT, -1313, "st.checkpoint", SR_CLASS_PROTOCOL,                               \
      "a checkpoint folder lacks model.safetensors or a full shard set, or is mixed")              \
    X(SR_E_ST_MISSING, -1314, "st.missing_tensor", SR_CLASS_PROTOCOL,                              \
      "a checkpoint lacks a tensor the loader needs")                                              \
    X(SR_E_ST_EXTRA, -1315, "st.extra_tensor", SR_CLASS_PROTOCOL,                                  \
      "a checkpoint holds a tensor the loader does not know")                                      \
    X(SR_E_ST_MISMATCH, -1316, "st.tensor_mismatch", SR_CLASS_PROTOCOL,                            \
      "a checkpoint tensor (or its version) differs in dtype or shape from the loader's")          \
    X(SR_E_ST_NAME, -1317, "st.name", SR_CLASS_PROTOCOL,                                           \
      "a safetensors tensor name is empty, too long, or holds a NUL")                              \
    /* the sglang control plane of the mock engine (-1320..-1339) */                               \
    X(SR_E_SGL_UNSUPPORTED, -1320, "sglang.unsupported", SR_CLASS_PROTOCOL,                        \
      "an sglang weight route whose payload this engine cannot carry (pickled tensors, gguf)")     \
    /* scenarios and the runner (-10xx) */                                                         \
    X(SR_E_SCENARIO, -1000, "scenario.invalid", SR_CLASS_USAGE,                                    \
      "a scenario breaks a rule of scenarios/FORMAT.md beyond key types (reference, combination)") \
    X(SR_E_NOT_IMPLEMENTED, -1001, "harness.not_implemented", SR_CLASS_INTERNAL,                   \
      "a scenario asks for a step this build of syncroll cannot execute yet")                      \
    X(SR_E_SCENARIO_TOO_LARGE, -1002, "scenario.too_large", SR_CLASS_RESOURCE,                     \
      "a scenario file is larger than its bound (4 MiB, or --max-scenario-bytes)")                 \
    /* CI sharding, merged reports and history (-11xx) */                                          \
    X(SR_E_SHARD_ENV, -1100, "run.shard_env", SR_CLASS_USAGE,                                      \
      "shard index or count from --shard, --shard-count or CI variables is malformed or "          \
      "conflicts")                                                                                 \
    X(SR_E_REPORT_RUN_MISMATCH, -1101, "report.run_mismatch", SR_CLASS_USAGE,                      \
      "run folders to merge are not shards of one run (git rev, options, group or shard count)")   \
    X(SR_E_REPORT_SHARD_MISSING, -1102, "report.shard_missing", SR_CLASS_USAGE,                    \
      "a shard of the run is missing from the folders to merge")                                   \
    X(SR_E_REPORT_SHARD_DUPLICATE, -1103, "report.shard_duplicate", SR_CLASS_USAGE,                \
      "two folders to merge hold the same shard")                                                  \
    X(SR_E_REPORT_SCENARIO_TWICE, -1104, "report.scenario_twice", SR_CLASS_USAGE,                  \
      "the same scenario execution (id and repeat) appears in two shards to merge")                \
    /* the recording proxy and its captures (-14xx) */                                             \
    X(SR_E_CAPTURE_VERSION, -1400, "capture.version", SR_CLASS_USAGE,                              \
      "a capture's index does not start with a syncroll capture header of a version this build "   \
      "reads")                                                                                     \
    X(SR_E_CAPTURE_TRUNCATED, -1401, "capture.truncated", SR_CLASS_USAGE,                          \
      "a capture's index ends inside a record (the proxy was stopped while writing it)")           \
    X(SR_E_CAPTURE_CORRUPT, -1402, "capture.corrupt", SR_CLASS_USAGE,                              \
      "a capture record is not JSON, or a key is missing, of the wrong type or out of range, or "  \
      "a body file is named outside the capture's bodies/ folder")                                 \
    X(SR_E_CAPTURE_BODY, -1403, "capture.body", SR_CLASS_USAGE,                                    \
      "a captured body file is missing, is not one zstd frame, or does not match its recorded "    \
      "size or digest")                                                                            \
    X(SR_E_PROXY_UPSTREAM, -1410, "proxy.upstream", SR_CLASS_TRANSIENT,                            \
      "the proxy could not reach its upstream engine or lost it mid-answer (the client gets a "    \
      "502, or a cut body)")                                                                       \
    X(SR_E_REPLAY_NO_MATCH, -1420, "replay.no_match", SR_CLASS_USAGE,                              \
      "`syncroll replay --serve` got a request its capture has no answer for (no exchange of "     \
      "that session and turn, none with that method, URI and body; answered 404)")                 \
    X(SR_E_REPLAY_PREFIX, -1421, "replay.prefix", SR_CLASS_PROTOCOL,                               \
      "in a captured session, a turn's request does not start with the previous turn's prompt "    \
      "and output (the client changed the conversation between turns)")                            \
    X(SR_E_REPLAY_OUT_NOT_EMPTY, -1422, "replay.out_not_empty", SR_CLASS_USAGE,                    \
      "`syncroll replay --to-scenario` was given an output folder that exists and is not empty, "  \
      "or is not a folder (it writes a new scenario, never over other files)")

typedef enum sr_code {
    SR_OK = 0,
#define SR_ERR_ENUM_(sym, num, name, cls, doc) sym = num,
    SR_ERR_TABLE(SR_ERR_ENUM_)
#undef SR_ERR_ENUM_
} sr_code;

/* Maximum length of an error message, including the terminating NUL; longer ones are cut. */
#define SR_ERR_MSG_MAX 512

typedef struct sr_err {
    int code;                 /* 0 or a negative sr_code */
    int64_t offset;           /* byte offset or token row the error refers to, -1 if none */
    char msg[SR_ERR_MSG_MAX]; /* human-readable, with context; "" when code == 0 */
} sr_err;

#define SR_ERR_INIT                                                                                \
    {                                                                                              \
        0, -1,                                                                                     \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }

/*
 * Records `code` and a printf-style message in `err` (if not NULL) and returns `code`, so that
 * callers can write `return sr_err_set(err, SR_E_..., "...")`. The offset is reset to -1.
 */
int sr_err_set(sr_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* As sr_err_set, and records `offset` (a byte offset or row index). */
int sr_err_set_at(sr_err *err, int code, int64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prefixes the existing message with printf-style context ("field routed_experts: ..."). */
void sr_err_prefix(sr_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resets `err` to SR_ERR_INIT. */
void sr_err_clear(sr_err *err);

/*
 * Makes *err an empty record (code 0, offset -1, msg "") without clearing the rest of its message
 * buffer, which SR_ERR_INIT fills with zeros (~70 instructions): for a local record that a callee
 * writes only when it fails and that is read only then, on a path run per chunk or per response.
 */
static inline void sr_err_empty(sr_err *err)
{
    err->code = 0;
    err->offset = -1;
    err->msg[0] = '\0';
}

/* Dotted name of a code ("envelope.byte_count"); "ok" for 0; NULL for an unknown code. */
const char *sr_code_name(int code);

/* Class of a code; SR_CLASS_NONE for 0 and for unknown codes. */
sr_class sr_code_class(int code);

/* One-line description of a code; NULL for an unknown code. */
const char *sr_code_doc(int code);

/* "transient", "protocol", "usage", "resource", "internal" or "none". */
const char *sr_class_name(sr_class cls);

/* Looks a code up by its dotted name; returns 0 (SR_OK) if there is no such name. */
int sr_code_by_name(const char *name);

/* Number of codes in the table and the i-th code (0 <= i < count), for meta-tests and docs. */
size_t sr_code_count(void);
int sr_code_at(size_t i);

#endif /* SR_ERR_H */
