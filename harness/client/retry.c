#include "retry.h"

#include <math.h>

#include "sr_splice.h"
#include "sr_mix.h"

#define GOLDEN 0x9E3779B97F4A7C15ull

uint64_t sr_client_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return sr_mix64(h);
}

uint64_t sr_retry_seed(uint64_t client_seed, const char *session_id, int64_t turn)
{
    return sr_mix64(sr_mix64(client_seed ^ 0x7265747279736564ull) ^ sr_client_hash(session_id) ^
                    sr_mix64((uint64_t)turn + GOLDEN));
}

static int is_splice_code(int code)
{
    return code <= -400 && code > -500;
}

static sr_retry_verdict classify_status(const sr_retry_facts *f, const sr_client_quirks *q)
{
    int s = f->http_status;
    if (q && q->retry_json_decode_only)
        /* The reference only retries a body its JSON decoder rejects, and never on a 4xx. */
        return (!f->body_json && (s < 400 || s >= 500)) ? SR_RETRY_YES : SR_RETRY_NO;
    return (s == 429 || (s >= 500 && s <= 599)) ? SR_RETRY_YES : SR_RETRY_NO;
}

sr_retry_verdict sr_retry_classify(const sr_retry_facts *f, const sr_client_quirks *q)
{
    int quirk = q && q->retry_json_decode_only;
    switch (f->code) {
    case SR_E_CLIENT_TRANSPORT:
    case SR_E_CLIENT_INVALID_JSON:
        return SR_RETRY_YES;
    case SR_E_CLIENT_HTTP_STATUS:
    case SR_E_ENGINE_CONN_LIMIT:
        return classify_status(f, q);
    case SR_E_CLIENT_ABORTED_TURN:
        return f->retry_abort ? SR_RETRY_YES : SR_RETRY_NO;
    default:
        break;
    }
    if (!is_splice_code(f->code))
        return SR_RETRY_NO;
    if (sr_splice_retryable(f->code, quirk))
        return SR_RETRY_YES;
    return sr_splice_retryable(f->code, 0) ? SR_RETRY_DECLINED : SR_RETRY_NO;
}

int64_t sr_retry_backoff_ms(int64_t initial_ms, int64_t max_ms, double jitter, uint64_t seed,
                            int failures, int64_t retry_after_ms)
{
    if (initial_ms < 0)
        initial_ms = 0;
    if (max_ms < initial_ms)
        max_ms = initial_ms;
    int64_t w = initial_ms;
    for (int i = 1; i < failures && w < max_ms; i++)
        w = w > max_ms / 2 ? max_ms : w * 2;
    if (w > max_ms)
        w = max_ms;
    if (jitter > 0) {
        double j = jitter > 1 ? 1 : jitter;
        uint64_t x = sr_mix64(seed + GOLDEN * (uint64_t)(failures + 1));
        double u = (double)(x >> 11) * 0x1.0p-53;
        w = (int64_t)floor((double)w * (1.0 - j * u));
    }
    return retry_after_ms > w ? retry_after_ms : w;
}
