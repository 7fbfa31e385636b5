/*
 * The differential check of the splice against the reference model (tests/splice_model.h),
 * shared by fuzz/fuzz_splice_diff.c and tests/test_splice_diff.c:
 *
 *   - sd_generate writes a valid generate response body from a seeded random stream (choices
 *     with token_ids, routes and sample-support envelopes in canonical dtypes, sidecars) and,
 *     as the stream says, mutates it while writing: duplicate keys, keys spelled with escapes,
 *     invalid UTF-8 and lone surrogates, numbers beyond a double or 64 bits, deep nesting,
 *     non-zero trailing base64 bits, '=' after a quad, reordered envelope keys, whitespace, a
 *     nested envelope under an unspliced one, token_ids values, and afterwards truncation or a
 *     changed byte.
 *   - sd_check splices a body one-shot, one-shot with 2 threads (16-character windows),
 *     streamed in 7-byte chunks and in chunks of varying size, requires the four to agree
 *     exactly (code, offset, message, entries, decoded bytes, notes), and compares the outcome
 *     with the model (sm_compare).
 *
 * Everything is static inline: include it where it is used.
 */
#ifndef SPLICE_DIFF_H
#define SPLICE_DIFF_H

#include <stdio.h>
#include <string.h>

#include "splice_model.h"
#include "sr_buf.h"

typedef struct sd_rng {
    uint64_t s;
    const unsigned char *bytes; /* when not NULL, choices come from these bytes first */
    size_t n, p;
} sd_rng;

static inline uint64_t sd_next(sd_rng *r)
{
    if (r->bytes && r->p < r->n) {
        uint64_t v = 0;
        for (int k = 0; k < 4 && r->p < r->n; k++)
            v = v << 8 | r->bytes[r->p++];
        return v ^ (r->s += 0x9e3779b97f4a7c15ull);
    }
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static inline unsigned sd_below(sd_rng *r, unsigned n)
{
    return n ? (unsigned)(sd_next(r) % n) : 0;
}

/* The mutation classes; sd_generate applies each with probability 1 / rate. */
enum {
    SD_DUP_SHAPE,
    SD_DUP_FIELD,
    SD_DUP_CHOICES,
    SD_ESC_KEY,
    SD_BAD_UTF8,
    SD_HUGE_NUMBER,
    SD_DEEP,
    SD_TRAILING_BITS,
    SD_PAD_AFTER_QUAD,
    SD_REORDER,
    SD_SPACES,
    SD_NESTED_ENVELOPE,
    SD_TOKEN_VALUES,
    SD_TRUNCATE,
    SD_BYTE,
    SD_CLASSES
};

static inline int sd_want(sd_rng *r, unsigned rate)
{
    return rate && sd_below(r, rate) == 0;
}

static inline void sd_put(sr_buf *b, const char *s)
{
    sr_buf_puts(b, s, NULL);
}

/* Writes the values of an n-element array of `dtype` (uint8/int16/int32) as base64 into b. */
static inline void sd_blob(sr_buf *b, sd_rng *r, sr_dtype dtype, size_t n, int trailing,
                           int pad_quad)
{
    size_t item = sr_dtype_size(dtype), nb = n * item;
    unsigned char *raw = calloc(nb + 1, 1);
    unsigned top = dtype == SR_DTYPE_UINT8 ? 256 : dtype == SR_DTYPE_INT16 ? 32768 : 1u << 31;
    unsigned floor = dtype == SR_DTYPE_UINT8 ? 0 : dtype == SR_DTYPE_INT16 ? 256 : 32768;
    for (size_t i = 0; raw && i < n; i++) {
        uint32_t v = sd_below(r, top);
        if (i == 0)
            v = floor + sd_below(r, top - floor); /* keeps the dtype canonical */
        for (size_t k = 0; k < item; k++)
            raw[i * item + k] = (unsigned char)(v >> (8 * k));
    }
    char *txt = malloc(sr_base64_encoded_len(nb) + 1);
    size_t tn = raw && txt ? sr_base64_encode(txt, raw, nb, SR_B64_SCALAR) : 0;
    if (trailing && tn >= 4 && txt[tn - 1] == '=') {
        /* Non-zero bits below the decoded ones: the reference drops them. */
        size_t at = txt[tn - 2] == '=' ? tn - 3 : tn - 2;
        const char *al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        int v = (int)(strchr(al, txt[at]) - al);
        txt[at] = al[v | (txt[tn - 2] == '=' ? 1 + (int)sd_below(r, 15) : 1 + (int)sd_below(r, 3))];
    }
    if (txt)
        sr_buf_append(b, txt, tn, NULL);
    if (pad_quad)
        sd_put(b, sd_below(r, 2) ? "=" : "=AAAA");
    free(txt);
    free(raw);
}

static inline void sd_deep(sr_buf *b, sd_rng *r)
{
    static const unsigned depths[] = {3, 40, 500, 899, 1001, 1100};
    unsigned d = depths[sd_below(r, 6)];
    for (unsigned i = 0; i < d; i++)
        sd_put(b, i % 2 ? "{\"k\":" : "[");
    sd_put(b, "0");
    for (unsigned i = d; i-- > 0;)
        sd_put(b, i % 2 ? "}" : "]");
}

static inline void sd_number(sr_buf *b, sd_rng *r, unsigned rate)
{
    static const char *const huge[] = {"1e400",
                                       "-1e400",
                                       "123456789012345678901234567890",
                                       "-9223372036854775809",
                                       "18446744073709551615",
                                       "1E+309",
                                       "0.5e-400"};
    if (sd_want(r, rate))
        sd_put(b, huge[sd_below(r, 7)]);
    else
        sr_buf_printf(b, NULL, "%u", sd_below(r, 1000));
}

/* A string value, maybe with invalid UTF-8 or a lone surrogate. */
static inline void sd_string(sr_buf *b, sd_rng *r, const char *s, unsigned rate)
{
    static const char *const bad[] = {"\xff",     "\xc0\xaf",         "\xed\xa0\x80", "\\ud800",
                                      "\\udc00x", "\xf4\x90\x80\x80", "\xe2\x82",     "\xc3"};
    static const char *const good[] = {"\xc3\xa9", "\\u00e9", "\\ud83d\\ude00", "\xf0\x9f\x98\x80"};
    sd_put(b, "\"");
    sd_put(b, s);
    if (sd_want(r, rate))
        sd_put(b, bad[sd_below(r, 8)]);
    else if (sd_want(r, 4))
        sd_put(b, good[sd_below(r, 4)]);
    sd_put(b, "\"");
}

static inline void sd_key(sr_buf *b, sd_rng *r, const char *k, unsigned rate)
{
    if (sd_want(r, rate) && strchr(k, '_')) {
        /* `routed\u005fexperts`: the same key for the parser, not for the byte scan. */
        const char *u = strchr(k, '_');
        sr_buf_printf(b, NULL, "\"%.*s\\u005f%s\":", (int)(u - k), k, u + 1);
        return;
    }
    sr_buf_printf(b, NULL, "\"%s\":", k);
}

typedef struct sd_plan {
    unsigned rate[SD_CLASSES]; /* 1 / probability of each mutation (0: never) */
} sd_plan;

static inline void sd_envelope(sr_buf *b, sd_rng *r, const sd_plan *pl, int routes)
{
    int t = 1 + (int)sd_below(r, 6), l = 1 + (int)sd_below(r, 3), k = 1 + (int)sd_below(r, 3);
    sr_dtype dt =
        !routes ? SR_DTYPE_INT32
                : (sr_dtype[]){SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT32}[sd_below(r, 3)];
    if (sd_want(r, 8))
        t = 0;
    size_t n = (size_t)t * (size_t)(routes ? l * k : k);
    char shape[64];
    if (routes)
        snprintf(shape, sizeof(shape), "[%d,%d,%d]", t, l, k);
    else
        snprintf(shape, sizeof(shape), "[%d,%d]", t, k);
    if (n == 0 && routes)
        dt = SR_DTYPE_UINT8;
    int reorder = pl->rate[SD_REORDER] && sd_want(r, pl->rate[SD_REORDER]);
    sd_put(b, "{");
    if (reorder)
        sr_buf_printf(b, NULL, "\"dtype\":\"%s\",", sr_dtype_name(dt));
    sd_put(b, "\"data\":\"");
    sd_blob(b, r, dt, n, pl->rate[SD_TRAILING_BITS] && sd_want(r, pl->rate[SD_TRAILING_BITS]),
            pl->rate[SD_PAD_AFTER_QUAD] && sd_want(r, pl->rate[SD_PAD_AFTER_QUAD]));
    sr_buf_printf(b, NULL, "\",\"shape\":%s", shape);
    if (pl->rate[SD_DUP_SHAPE] && sd_want(r, pl->rate[SD_DUP_SHAPE]))
        sr_buf_printf(b, NULL, ",\"shape\":[%d,%d%s]", k, t, routes ? ",1" : "");
    if (!reorder) {
        sd_put(b, ",");
        sd_key(b, r, "dtype", pl->rate[SD_ESC_KEY] ? pl->rate[SD_ESC_KEY] * 4 : 0);
        sr_buf_printf(b, NULL, "\"%s\"", sr_dtype_name(dt));
    }
    if (sd_want(r, 3)) {
        sd_put(b, ",\"layer_indices\":[");
        for (int i = 0; i < l; i++)
            sr_buf_printf(b, NULL, "%s%d", i ? "," : "", 2 * i + 1);
        sd_put(b, "]");
    }
    if (pl->rate[SD_HUGE_NUMBER] && sd_want(r, 4)) {
        sd_put(b, ",\"scale\":");
        sd_number(b, r, pl->rate[SD_HUGE_NUMBER]);
    }
    if (pl->rate[SD_DEEP] && sd_want(r, pl->rate[SD_DEEP])) {
        sd_put(b, ",\"extra\":");
        sd_deep(b, r);
    }
    sd_put(b, "}");
}

static inline void sd_token_ids(sr_buf *b, sd_rng *r, const sd_plan *pl)
{
    static const char *const odd[] = {"-1", "1e2", "2147483648", "01", "1.0", "true"};
    sd_put(b, "\"token_ids\":[");
    unsigned n = sd_below(r, 5);
    for (unsigned i = 0; i < n; i++)
        sr_buf_printf(b, NULL, "%s%u", i ? "," : "", sd_below(r, 50000));
    if (pl->rate[SD_TOKEN_VALUES] && sd_want(r, pl->rate[SD_TOKEN_VALUES]))
        sr_buf_printf(b, NULL, "%s%s", n ? "," : "", sd_below(r, 5) ? odd[sd_below(r, 6)] : "");
    sd_put(b, "]");
}

static inline void sd_choice(sr_buf *b, sd_rng *r, const sd_plan *pl, unsigned idx)
{
    sr_buf_printf(b, NULL, "{\"index\":%u,", idx);
    sd_token_ids(b, r, pl);
    sd_put(b, ",\"finish_reason\":");
    sd_string(b, r, sd_below(r, 2) ? "stop" : "length", pl->rate[SD_BAD_UTF8]);
    sd_put(b, ",\"logprobs\":null,");
    if (pl->rate[SD_DUP_FIELD] && sd_want(r, pl->rate[SD_DUP_FIELD])) {
        sd_put(b, "\"routed_experts\":");
        if (sd_below(r, 2))
            sd_put(b, "null");
        else
            sd_envelope(b, r, pl, 1);
        sd_put(b, ",");
    }
    int nested = pl->rate[SD_NESTED_ENVELOPE] && sd_want(r, pl->rate[SD_NESTED_ENVELOPE]);
    sd_key(b, r, "routed_experts", pl->rate[SD_ESC_KEY]);
    if (nested) {
        /* An unspliced envelope ("data": null) whose sidecar holds a registered envelope. */
        sd_put(b, "{\"data\":null,\"shape\":[1,1,1],\"dtype\":\"uint8\",\"debug\":{"
                  "\"routed_experts\":");
        sd_envelope(b, r, pl, 1);
        sd_put(b, "}}");
    } else if (sd_want(r, 6)) {
        sd_put(b, "null");
    } else {
        sd_envelope(b, r, pl, 1);
    }
    if (sd_want(r, 3)) {
        sd_put(b, ",\"rollout_sample_support\":");
        sd_envelope(b, r, pl, 0);
    }
    if (sd_want(r, 4)) {
        sd_put(b, ",\"note\":");
        sd_string(b, r, "x\\\"routed_experts\\\":{\\\"data\\\":\\\"AAAA", pl->rate[SD_BAD_UTF8]);
    }
    sd_put(b, "}");
}

/* Applies the whitespace mutation: a space after some ':' and ',' outside strings. */
static inline void sd_respace(sr_buf *b, sd_rng *r)
{
    sr_buf o = SR_BUF_INIT;
    int in = 0;
    for (size_t i = 0; i < b->len; i++) {
        char c = b->data[i];
        sr_buf_append(&o, &c, 1, NULL);
        if (c == '"' && (i == 0 || b->data[i - 1] != '\\'))
            in = !in;
        if (!in && (c == ':' || c == ',') && sd_want(r, 6))
            sd_put(&o, sd_below(r, 2) ? " " : "\n\t");
    }
    sr_buf_release(b);
    *b = o;
}

/* A mutated body into b (reset first). */
static inline void sd_generate(sr_buf *b, sd_rng *r, const sd_plan *pl)
{
    b->len = 0;
    sd_put(b, "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",");
    int dupc = pl->rate[SD_DUP_CHOICES] && sd_want(r, pl->rate[SD_DUP_CHOICES]);
    for (int rep = 0; rep <= dupc; rep++) {
        sd_put(b, "\"choices\":[");
        unsigned n = 1 + sd_below(r, 3);
        for (unsigned i = 0; i < n; i++) {
            if (i)
                sd_put(b, ",");
            sd_choice(b, r, pl, i);
        }
        sd_put(b, "],");
    }
    sd_put(b, "\"usage\":{\"prompt_tokens\":");
    sd_number(b, r, pl->rate[SD_HUGE_NUMBER]);
    if (pl->rate[SD_DEEP] && sd_want(r, pl->rate[SD_DEEP])) {
        sd_put(b, ",\"trace\":");
        sd_deep(b, r);
    }
    sd_put(b, "}}");
    if (pl->rate[SD_SPACES] && sd_want(r, pl->rate[SD_SPACES]))
        sd_respace(b, r);
    if (pl->rate[SD_TRUNCATE] && sd_want(r, pl->rate[SD_TRUNCATE]) && b->len)
        b->len = sd_below(r, (unsigned)b->len);
    if (pl->rate[SD_BYTE] && sd_want(r, pl->rate[SD_BYTE]) && b->len) {
        static const char set[] = "\"{}[],:\\ =AQ0-e\x80\xff";
        b->data[sd_below(r, (unsigned)b->len)] = set[sd_below(r, sizeof(set) - 1)];
    }
}

/* Every mutation at rate `rate` (a plan for the fuzz target and the unit test). */
static inline sd_plan sd_plan_all(unsigned rate)
{
    sd_plan p;
    for (int i = 0; i < SD_CLASSES; i++)
        p.rate[i] = rate;
    return p;
}

/* ---- running syncroll every way ---- */

typedef struct sd_ctx {
    sr_fields *f;
    sr_splicer *one, *two, *stream;
} sd_ctx;

static inline int sd_init(sd_ctx *c)
{
    memset(c, 0, sizeof(*c));
    sr_splice_opts o = SR_SPLICE_OPTS_INIT, o2 = SR_SPLICE_OPTS_INIT;
    o.max_body = o2.max_body = 16 << 20;
    o2.threads = 2;
    o2.par_window = 16;
    if (sr_fields_new(&c->f, NULL) || sr_fields_add_builtins(c->f, NULL) ||
        sr_splicer_new(&c->one, c->f, &o, NULL) || sr_splicer_new(&c->two, c->f, &o2, NULL) ||
        sr_splicer_new(&c->stream, c->f, &o, NULL))
        return -1;
    return 0;
}

static inline void sd_fini(sd_ctx *c)
{
    sr_splicer_free(c->one);
    sr_splicer_free(c->two);
    sr_splicer_free(c->stream);
    sr_fields_free(c->f);
}

/* Everything one way of splicing says, as text (to free). */
static inline char *sd_print(const sd_ctx *c, int rc, const sr_err *e, const sr_splice_result *r)
{
    sr_buf b = SR_BUF_INIT;
    if (rc) {
        sr_buf_printf(&b, NULL, "%s@%lld %s", sr_code_name(rc), (long long)e->offset, e->msg);
        return b.data;
    }
    sm_result s;
    sm_from_splice(&s, c->f, 0, r);
    for (size_t i = 0; i < s.n && i < r->count; i++)
        sr_buf_printf(&b, NULL, "%d %d %d %zu %016llx %s nc=%lld|", s.e[i].field, s.e[i].kind,
                      (int)s.e[i].dtype, s.e[i].nbytes, (unsigned long long)s.e[i].hash,
                      r->entries[i].path, (long long)r->entries[i].b64_noncanonical);
    sr_buf_printf(&b, NULL, "blobs=%zu ints=%zu", r->stats.blobs, r->stats.int_arrays);
    return b.data;
}

static inline char *sd_stream(sd_ctx *c, const char *body, size_t len, size_t chunk, int vary)
{
    sr_err e = SR_ERR_INIT;
    const sr_splice_result *r = NULL;
    int rc = sr_splice_stream_begin(c->stream, -1, &e);
    for (size_t at = 0, k = 0; !rc && at < len; k++) {
        size_t n = vary ? 1 + (k * 7919 + len) % (chunk + 1) : chunk;
        n = n < len - at ? n : len - at;
        rc = sr_splice_stream_feed(c->stream, body + at, n, &e);
        at += n;
    }
    if (!rc)
        rc = sr_splice_stream_finish(c->stream, &r, &e);
    return sd_print(c, rc, &e, r);
}

/*
 * Splices `body` every way and compares with the model. Returns NULL when all is as
 * documented, else writes what differs into msg and returns it.
 */
static inline const char *sd_check(sd_ctx *c, const char *body, size_t len, char *msg, size_t cap)
{
    sm_result m;
    sm_run(&m, c->f, body, len);
    sr_err e1 = SR_ERR_INIT, e2 = SR_ERR_INIT;
    const sr_splice_result *r1 = NULL, *r2 = NULL;
    int rc2 = sr_splice(c->two, body, len, -1, &r2, &e2);
    char *w2 = sd_print(c, rc2, &e2, r2);
    int rc1 = sr_splice(c->one, body, len, -1, &r1, &e1);
    char *w1 = sd_print(c, rc1, &e1, r1);
    char *w3 = sd_stream(c, body, len, 7, 0);
    char *w4 = sd_stream(c, body, len, 61, 1);
    const char *bad = NULL, *got = NULL;
    if (strcmp(w1, w2) != 0)
        bad = "one-shot and threaded splices differ", got = w2;
    else if (strcmp(w1, w3) != 0)
        bad = "one-shot and streamed (7-byte chunks) splices differ", got = w3;
    else if (strcmp(w1, w4) != 0)
        bad = "one-shot and streamed (varying chunks) splices differ", got = w4;
    else
        bad = sm_compare(&m, c->f, rc1, r1);
    if (bad)
        snprintf(msg, cap, "%s\n  syncroll: %s\n  other:    %s\n  model:    status %d%s (%s)", bad,
                 w1, got ? got : "-", m.status, m.stricter ? " stricter" : "",
                 m.why ? m.why : "accepts");
    free(w1);
    free(w2);
    free(w3);
    free(w4);
    return bad ? msg : NULL;
}

#endif /* SPLICE_DIFF_H */
