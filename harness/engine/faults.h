/*
 * faults: the mock engine's fault plan, declared as JSON, seeded and targetable.
 *
 * A plan is a JSON array of fault objects (the scenario's `engines.faults` embeds it verbatim):
 *
 *   {"kind": "truncate", "bytes": 100,            kind-specific parameters (see faults.c table)
 *    "id": "cut-turn-2",                          label used in reports (default "<kind>#<i>")
 *    "engines": [0],                              engine indices (default: every engine)
 *    "endpoints": ["generate"],                   endpoint names (default per kind, see below)
 *    "nth": [2, 3],                               1-based ordinals among matching requests
 *    "turn": [2],                                 1-based turn within the X-Session-ID session
 *    "probability": 0.5,                          Bernoulli, seeded (default 1)
 *    "count": 1}                                  maximum firings (default unlimited)
 *
 * Matching a request, in this order: engine index; endpoint; turn (requests without a session
 * have turn 0 and never match a turn filter); then the fault's own ordinal counter advances
 * (n = 1, 2, ...), and n must be in `nth` (if given); then the probability draw, a pure
 * function of (seed, fault position, n) so a rerun fires on the same requests; then `count`.
 *
 * Each kind belongs to one layer, and a request gets at most one fault per layer (the first
 * matching one in declaration order; later ones in that layer do not advance their counters
 * past the ordinal check and are not counted as fired):
 *   delay      latency
 *   model      routes_all_zero rows_p_plus_g prompt_start_ignored duplicated_output_rows
 *              expert_out_of_range expert_duplicate routes_dropped stale_prefix_cache
 *   body       bad_base64 byte_count_off non_canonical_dtype reordered_envelope respaced_json
 *              data_null lookalike_field escaped_quote_key duplicate_field extra_envelope
 *   http       http_502_html http_503_json http_429 http_400_text
 *   transport  truncate truncate_in_blob truncate_after_blobs reset refuse stall stall_mid_body
 *              dribble
 *   weights    partial_weight_apply version_not_bumped checksum_mismatch
 * The kind string is the fault's stable name in reports. Model and body kinds apply to the
 * generate endpoints only; weights kinds to the weight-sync endpoints only.
 *
 * Errors: every problem is SR_E_FAULT_SPEC naming the fault (index and kind) and the key.
 * Thread-safety: sr_faults_pick may run concurrently (counters are atomic); parse and free not.
 */
#ifndef SR_ENGINE_FAULTS_H
#define SR_ENGINE_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "spec/endpoints.h"
#include "sr_buf.h"
#include "sr_err.h"

typedef enum sr_fault_layer {
    SR_FL_DELAY = 0,
    SR_FL_MODEL,
    SR_FL_BODY,
    SR_FL_HTTP,
    SR_FL_TRANSPORT,
    SR_FL_WEIGHTS,
    SR_FL_COUNT
} sr_fault_layer;

typedef enum sr_fault_kind {
    SR_FK_LATENCY = 0,
    SR_FK_ROUTES_ALL_ZERO,
    SR_FK_ROWS_P_PLUS_G,
    SR_FK_PROMPT_START_IGNORED,
    SR_FK_DUPLICATED_OUTPUT_ROWS,
    SR_FK_EXPERT_OUT_OF_RANGE,
    SR_FK_EXPERT_DUPLICATE,
    SR_FK_ROUTES_DROPPED,
    SR_FK_STALE_PREFIX_CACHE,
    SR_FK_BAD_BASE64,
    SR_FK_BYTE_COUNT_OFF,
    SR_FK_NON_CANONICAL_DTYPE,
    SR_FK_REORDERED_ENVELOPE,
    SR_FK_RESPACED_JSON,
    SR_FK_DATA_NULL,
    SR_FK_LOOKALIKE_FIELD,
    SR_FK_ESCAPED_QUOTE_KEY,
    SR_FK_DUPLICATE_FIELD,
    SR_FK_EXTRA_ENVELOPE,
    SR_FK_HTTP_502_HTML,
    SR_FK_HTTP_503_JSON,
    SR_FK_HTTP_429,
    SR_FK_HTTP_400_TEXT,
    SR_FK_TRUNCATE,
    SR_FK_TRUNCATE_IN_BLOB,
    SR_FK_TRUNCATE_AFTER_BLOBS,
    SR_FK_RESET,
    SR_FK_REFUSE,
    SR_FK_STALL,
    SR_FK_STALL_MID_BODY,
    SR_FK_DRIBBLE,
    SR_FK_PARTIAL_WEIGHT_APPLY,
    SR_FK_VERSION_NOT_BUMPED,
    SR_FK_CHECKSUM_MISMATCH,
    SR_FK_COUNT
} sr_fault_kind;

/* Stable name of a kind ("truncate_in_blob"); NULL for an invalid kind. */
const char *sr_fault_kind_name(sr_fault_kind k);

/* Layer of a kind. */
sr_fault_layer sr_fault_kind_layer(sr_fault_kind k);

/* Latency distributions. */
typedef enum sr_latency_dist { SR_LAT_FIXED = 0, SR_LAT_UNIFORM, SR_LAT_LOGNORMAL } sr_latency_dist;

#define SR_FAULT_MAX      64       /* faults in one plan */
#define SR_FAULT_MAX_LIST 64       /* entries of nth / turn / engines / layers lists */
#define SR_FAULT_ID_MAX   64       /* label length, including the NUL */
#define SR_FAULT_TEXT_MAX 256      /* http_400_text body and similar, including the NUL */
#define SR_FAULT_MAX_MS   86400000 /* one day: the longest delay or window a fault may ask for */

/* One declared fault (parsed; read-only after sr_faults_parse). */
typedef struct sr_fault {
    sr_fault_kind kind;
    char id[SR_FAULT_ID_MAX];
    uint64_t engines;   /* bit mask of engine indices 0..63; all ones = any */
    uint32_t endpoints; /* bit mask of sr_endpoint */
    int64_t nth[SR_FAULT_MAX_LIST];
    int n_nth;
    int64_t turns[SR_FAULT_MAX_LIST];
    int n_turns;
    double probability; /* 0..1 */
    int64_t count;      /* maximum firings, -1 unlimited */
    /* latency */
    sr_latency_dist dist;
    double ms, min_ms, max_ms, median_ms, sigma;
    /* truncation / stalls: byte position or offset, see faults.c */
    int64_t bytes;
    int has_bytes;
    int keep_length; /* truncate*: 1 announces the full Content-Length and closes after the cut */
    double bytes_per_second; /* dribble */
    int64_t retry_after;     /* http_429, seconds */
    /* routes corruption */
    int64_t row, layer;
    char field[SR_FAULT_ID_MAX];   /* body faults: the packed field they corrupt */
    char key[SR_FAULT_ID_MAX];     /* extra_envelope: the unregistered key */
    char text[SR_FAULT_TEXT_MAX];  /* http_400_text body, http_5xx message */
    int layers[SR_FAULT_MAX_LIST]; /* partial_weight_apply: MoE layer slots left stale */
    int n_layers;
} sr_fault;

typedef struct sr_faults sr_faults;

/*
 * Parses a plan from a cJSON array (NULL or an empty array: no faults). `seed` seeds the
 * probability and latency draws. *out is freed with sr_faults_free.
 */
int sr_faults_parse(sr_faults **out, const cJSON *plan, uint64_t seed, sr_err *err);

/* Parses a plan from JSON text (for tests and the fuzz target). */
int sr_faults_parse_text(sr_faults **out, const char *text, size_t len, uint64_t seed, sr_err *err);

void sr_faults_free(sr_faults *fs);

size_t sr_faults_count(const sr_faults *fs);
const sr_fault *sr_faults_at(const sr_faults *fs, size_t i);

/* What fired for one request: at most one fault per layer. */
typedef struct sr_fault_pick {
    const sr_fault *f[SR_FL_COUNT]; /* NULL: nothing in that layer */
    int64_t ordinal[SR_FL_COUNT];   /* the fault's ordinal n for this request */
    double delay_ms;                /* the latency drawn, when f[SR_FL_DELAY] is set */
} sr_fault_pick;

/*
 * Decides which faults fire for a request to `ep` on engine `engine_index` whose session turn
 * is `turn` (1-based; 0 = no session). Updates the counters. Never fails.
 */
void sr_faults_pick(sr_fault_pick *out, sr_faults *fs, int engine_index, sr_endpoint ep,
                    int64_t turn);

/* Counters of fault i: requests that reached its ordinal check, and firings. */
void sr_faults_counters(const sr_faults *fs, size_t i, int64_t *seen, int64_t *fired);

/* Appends [{"id":..,"kind":..,"layer":..,"seen":n,"fired":n},...] to b. */
int sr_faults_state_json(sr_buf *b, const sr_faults *fs, sr_err *err);

#endif /* SR_ENGINE_FAULTS_H */
