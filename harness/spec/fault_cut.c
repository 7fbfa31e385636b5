/* Where a body-shaping transport fault cuts an answer (spec/faults.h, sr_fault_cut_offset):
 * shared by the mock engine and the proxy so both cut the same bytes. */
#include <string.h>

#include "faults.h"

/* Offsets of the first blob's start and end (its closing quote) and the last blob's end, or -1. */
static void find_blobs(const char *body, size_t len, int64_t *first_start, int64_t *first_end,
                       int64_t *last_end)
{
    *first_start = *first_end = *last_end = -1;
    const char *p = body, *end = body + len;
    while (p && p < end) {
        const char *k = memmem(p, (size_t)(end - p), "\"data\":", 7);
        if (!k)
            break;
        const char *q = k + 7;
        if (q < end && *q == ' ')
            q++;
        if (q >= end || *q != '"') {
            p = k + 7;
            continue;
        }
        const char *close = memchr(q + 1, '"', (size_t)(end - q - 1));
        if (!close)
            break;
        if (*first_start < 0) {
            *first_start = q + 1 - body;
            *first_end = close - body;
        }
        *last_end = close - body;
        p = close + 1;
    }
}

size_t sr_fault_cut_offset(const sr_fault *t, const char *body, size_t len)
{
    int64_t fs, fe, le;
    switch (t->kind) {
    case SR_FK_TRUNCATE:
        return (size_t)t->bytes < len ? (size_t)t->bytes : len;
    case SR_FK_STALL_MID_BODY:
        if (t->has_bytes)
            return (size_t)t->bytes < len ? (size_t)t->bytes : len;
        return len / 2;
    case SR_FK_TRUNCATE_IN_BLOB:
        find_blobs(body, len, &fs, &fe, &le);
        if (fs < 0)
            return len / 2;
        int64_t in = t->has_bytes ? t->bytes : (fe - fs) / 2;
        return (size_t)(fs + (in < fe - fs ? in : (fe > fs ? fe - fs - 1 : 0)));
    case SR_FK_TRUNCATE_AFTER_BLOBS:
        find_blobs(body, len, &fs, &fe, &le);
        int64_t at = (le < 0 ? 0 : le + 1) + (t->has_bytes ? t->bytes : 0);
        return (size_t)at < len ? (size_t)at : (len ? len - 1 : 0);
    default:
        return len;
    }
}
