/*
 * retry: the client's retry classification and backoff, as pure functions (client.h states the
 * policy; this module is its single implementation, unit-tested without a network).
 *
 * Thread-safety: reentrant; no state.
 */
#ifndef SR_CLIENT_RETRY_H
#define SR_CLIENT_RETRY_H

#include <stdint.h>

#include "client.h"

/* What to do after a failed attempt. */
typedef enum sr_retry_verdict {
    SR_RETRY_NO = 0,  /* final: return the attempt's code */
    SR_RETRY_YES,     /* retry after the backoff */
    SR_RETRY_DECLINED /* transient, but the quirk retry_json_decode_only declines it */
} sr_retry_verdict;

/* The facts of one failed attempt. */
typedef struct sr_retry_facts {
    int code;        /* the attempt's outcome code (non-zero) */
    int http_status; /* 0 if none arrived */
    int body_json;   /* non-2xx: the body parsed as JSON */
    int retry_abort; /* client.aborted_turn is retried (on_abort RETRY), else final */
} sr_retry_facts;

/*
 * Classifies a failed attempt. Default policy: client.transport, client.invalid_json and the
 * transient splice codes are retried; client.http_status is retried for 429 and 5xx only, and
 * engine.connection_limit (a 503 naming that check) like the 503 it is; client.aborted_turn
 * only when the facts say so (the scenario's client.on_abort, not a quirk: it is retried under
 * both policies); everything else is final. With retry_json_decode_only: transport failures, the
 * JSON decode errors of sr_splice_retryable (splice.invalid_json, splice.truncated,
 * intarray.syntax, json.invalid_utf8, json.number_overflow) and client.invalid_json are retried;
 * other transient splice codes are DECLINED; an HTTP status is retried only if its body was not
 * JSON and the status is not 4xx.
 */
sr_retry_verdict sr_retry_classify(const sr_retry_facts *f, const sr_client_quirks *q);

/*
 * The wait in ms before attempt failures+1, after `failures` (>= 1) failed attempts:
 * min(max_ms, initial_ms * 2^(failures-1)) * (1 - jitter * u), with u in [0, 1) a pure function
 * of (seed, failures). retry_after_ms >= 0 (a 429's Retry-After) raises the wait to at least that.
 */
int64_t sr_retry_backoff_ms(int64_t initial_ms, int64_t max_ms, double jitter, uint64_t seed,
                            int failures, int64_t retry_after_ms);

/* The per-request jitter seed: a mix of the client seed, the session id bytes and the turn. */
uint64_t sr_retry_seed(uint64_t client_seed, const char *session_id, int64_t turn);

/* FNV-1a 64 of a string's bytes, finished with splitmix64's mixer (NULL hashes as ""). */
uint64_t sr_client_hash(const char *s);

#endif /* SR_CLIENT_RETRY_H */
