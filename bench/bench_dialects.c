/*
 * bench_dialects: decoding a 30,000-token routed-experts response in every engine dialect
 * (issue 19), against memcpy of the same body in the same process. One choice of 30,000 route
 * rows x 48 layers x top-8 (256 experts: uint8 in skyrl, vllm and dynamo, int32 in sglang,
 * int16 in nemo-rl, JSON integers in vllm-json), token ids beside them, in each dialect's frame
 * (fixtures/dialects/ shows a small one of each):
 *
 *   dialect.<d>.oneshot     sr_splice of the whole body with the dialect's registry
 *                           (target for skyrl, vllm, sglang, dynamo, nemo-rl: <= 1.5 x memcpy)
 *   dialect.<d>.stream_64k  the same body streamed in 64 KiB chunks (reported)
 *   dialect.vllm-json.vs_py the vllm-json one-shot against Python's json.loads + np.asarray of
 *                           both route lists on the same body (bench/dialect_json_py.py, Debian's
 *                           python3 + numpy; BENCH_NO_PYTHON=1 skips it): ratio and speedup
 *
 * Every decode is checked against the values written before it is timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "spec/dialect.h"
#include "sr_base64.h"
#include "sr_buf.h"
#include "sr_npy.h"
#include "sr_nrlre.h"
#include "sr_splice.h"

#define ROWS    30000
#define LAYERS  48
#define TOPK    8
#define EXPERTS 256
#define PROMPT  2000 /* vllm-json: rows of prompt_routed_experts; the rest are the choice's */

static _Noreturn void die(const char *what, const sr_err *e)
{
    fprintf(stderr, "bench_dialects: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

static uint8_t value(size_t i)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull;
    return (uint8_t)((x >> 29) % EXPERTS);
}

/* `"` + base64(head, then the values typed dt) + `"`. */
static void put_b64(sr_buf *b, const void *head, size_t hl, sr_dtype dt)
{
    size_t n = (size_t)ROWS * LAYERS * TOPK, isz = sr_dtype_size(dt);
    unsigned char *raw = malloc(hl + n * isz);
    if (!raw)
        die("alloc", NULL);
    memcpy(raw, head, hl);
    for (size_t i = 0; i < n; i++) {
        uint32_t v = value(i);
        memcpy(raw + hl + i * isz, &v, isz); /* little-endian */
    }
    size_t enc = sr_base64_encoded_len(hl + n * isz);
    if (sr_buf_reserve(b, enc + 2, NULL))
        die("reserve", NULL);
    b->data[b->len++] = '"';
    b->len += sr_base64_encode(b->data + b->len, raw, hl + n * isz, SR_B64_AUTO);
    b->data[b->len++] = '"';
    b->data[b->len] = '\0';
    free(raw);
}

static void put_tokens(sr_buf *b, const char *key)
{
    sr_buf_printf(b, NULL, "\"%s\":[", key);
    for (int i = 0; i < 512; i++)
        sr_buf_printf(b, NULL, "%s%d", i ? "," : "", 1000 + i);
    sr_buf_puts(b, "]", NULL);
}

static void put_nested(sr_buf *b, size_t r0, size_t r1)
{
    sr_buf_puts(b, "[", NULL);
    for (size_t r = r0; r < r1; r++) {
        sr_buf_puts(b, r > r0 ? ",[" : "[", NULL);
        for (size_t l = 0; l < LAYERS; l++) {
            sr_buf_puts(b, l ? ",[" : "[", NULL);
            for (size_t k = 0; k < TOPK; k++)
                sr_buf_printf(b, NULL, k ? ",%u" : "%u", value((r * LAYERS + l) * TOPK + k));
            sr_buf_puts(b, "]", NULL);
        }
        sr_buf_puts(b, "]", NULL);
    }
    sr_buf_puts(b, "]", NULL);
}

/* The body of dialect d, in the frame its engine writes (harness/engine/gen_dialect.c). */
static void make_body(sr_buf *b, sr_dialect d)
{
    sr_buf_reset(b);
    b->max = (size_t)4 << 30;
    int64_t shape[3] = {ROWS, LAYERS, TOPK};
    char head[SR_NPY_HEADER_MAX];
    size_t hl = 0;
    sr_err e = SR_ERR_INIT;
    switch (d) {
    case SR_DIALECT_SKYRL:
        sr_buf_puts(b, "{\"choices\":[{", NULL);
        put_tokens(b, "token_ids");
        sr_buf_puts(b, ",\"finish_reason\":\"length\",\"routed_experts\":{\"data\":", NULL);
        put_b64(b, NULL, 0, SR_DTYPE_UINT8);
        sr_buf_printf(b, NULL, ",\"shape\":[%d,%d,%d],\"dtype\":\"uint8\"}}]}", ROWS, LAYERS, TOPK);
        break;
    case SR_DIALECT_VLLM:
        if (sr_npy_write_header(&hl, head, sizeof head, SR_DTYPE_UINT8, shape, 3, &e))
            die("npy header", &e);
        sr_buf_puts(b, "{\"request_id\":\"r\",\"choices\":[{\"index\":0,", NULL);
        put_tokens(b, "token_ids");
        sr_buf_puts(b, ",\"finish_reason\":\"length\",\"routed_experts\":", NULL);
        put_b64(b, head, hl, SR_DTYPE_UINT8);
        sr_buf_puts(b, "}]}", NULL);
        break;
    case SR_DIALECT_VLLM_JSON:
        sr_buf_puts(b, "{\"request_id\":\"r\",\"choices\":[{\"index\":0,", NULL);
        put_tokens(b, "token_ids");
        sr_buf_puts(b, ",\"finish_reason\":\"length\",\"routed_experts\":", NULL);
        put_nested(b, PROMPT, ROWS);
        sr_buf_puts(b, "}],\"prompt_routed_experts\":", NULL);
        put_nested(b, 0, PROMPT);
        sr_buf_puts(b, "}", NULL);
        break;
    case SR_DIALECT_SGLANG:
        sr_buf_puts(b, "{\"text\":\"\",", NULL);
        put_tokens(b, "output_ids");
        sr_buf_puts(b, ",\"meta_info\":{\"id\":\"r\",\"routed_experts\":", NULL);
        put_b64(b, NULL, 0, SR_DTYPE_INT32);
        sr_buf_puts(b, "}}", NULL);
        break;
    case SR_DIALECT_DYNAMO:
        sr_buf_puts(b, "{\"id\":\"r\",\"choices\":[{\"index\":0,", NULL);
        put_tokens(b, "token_ids");
        sr_buf_puts(b, "}],\"nvext\":{\"engine_data\":{\"routed_experts\":{\"data\":", NULL);
        put_b64(b, NULL, 0, SR_DTYPE_UINT8);
        sr_buf_printf(b, NULL, ",\"shape\":[%d,%d,%d],\"start\":0,\"dtype\":\"uint8\"}}}}", ROWS,
                      LAYERS, TOPK);
        break;
    default: /* nemo-rl */
        if (sr_nrlre_write_prefix(&hl, head, sizeof head, SR_DTYPE_INT16, shape, &e))
            die("nrlre prefix", &e);
        sr_buf_puts(
            b, "{\"id\":\"r\",\"choices\":[{\"index\":0,\"message\":{\"routed_experts\":", NULL);
        size_t at = b->len;
        put_b64(b, NULL, 0, SR_DTYPE_INT16);
        /* the prefix goes after the opening quote */
        sr_buf_reserve(b, hl, NULL);
        memmove(b->data + at + 1 + hl, b->data + at + 1, b->len - at - 1);
        memcpy(b->data + at + 1, head, hl);
        b->len += hl;
        sr_buf_puts(b, "},", NULL);
        put_tokens(b, "token_ids");
        sr_buf_puts(b, "}]}", NULL);
        break;
    }
}

typedef struct run_ctx {
    sr_splicer *s;
    const sr_buf *body;
    int stream;
} run_ctx;

static void run(void *p)
{
    run_ctx *c = p;
    const sr_splice_result *r;
    sr_err e = SR_ERR_INIT;
    int rc = 0;
    if (!c->stream) {
        rc = sr_splice(c->s, c->body->data, c->body->len, (int64_t)c->body->len, &r, &e);
    } else {
        rc = sr_splice_stream_begin(c->s, (int64_t)c->body->len, &e);
        for (size_t at = 0; !rc && at < c->body->len; at += (size_t)64 << 10) {
            size_t n = c->body->len - at < ((size_t)64 << 10) ? c->body->len - at : 64 << 10;
            rc = sr_splice_stream_feed(c->s, c->body->data + at, n, &e);
        }
        if (!rc)
            rc = sr_splice_stream_finish(c->s, &r, &e);
    }
    if (rc)
        die("splice", &e);
    bench_sink(&r, sizeof r);
}

/* Checks the decoded routes against the values written (the rows of both regions in vllm-json). */
static void verify(sr_splicer *s, const sr_buf *body)
{
    const sr_splice_result *r;
    sr_err e = SR_ERR_INIT;
    if (sr_splice(s, body->data, body->len, -1, &r, &e))
        die("splice", &e);
    size_t seen = 0;
    for (size_t i = 0; i < r->count; i++) {
        const sr_splice_entry *x = &r->entries[i];
        if (strstr(x->field->name, "routed_experts") == NULL)
            continue;
        size_t base = strcmp(x->field->name, "routed_experts") == 0 && x->kind == SR_SPLICE_NESTED
                          ? (size_t)PROMPT * LAYERS * TOPK
                          : 0;
        size_t n = x->array.nbytes / sr_dtype_size(x->array.dtype);
        for (size_t j = 0; j < n; j += 997)
            if (sr_ndarray_get_i64(&x->array, j) != value(base + j))
                die("decoded routes differ from the values written", NULL);
        seen += n;
    }
    if (seen != (size_t)ROWS * LAYERS * TOPK)
        die("not every route value was decoded", NULL);
}

/* Python's json.loads + np.asarray on the vllm-json body: its median in ms, or -1. */
static double python_json(const sr_buf *body, int reps)
{
    if (getenv("BENCH_NO_PYTHON"))
        return -1;
    const char *py = getenv("BENCH_PYTHON");
    char path[] = "/tmp/syncroll-bench-dialect-XXXXXX", cmd[1400];
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, body->data, body->len) != (ssize_t)body->len) {
        if (fd >= 0)
            close(fd);
        unlink(path);
        return -1;
    }
    close(fd);
    snprintf(cmd, sizeof cmd, "'%s' '%s/bench/dialect_json_py.py' '%s' %d",
             py && *py ? py : "/usr/bin/python3", SR_SOURCE_DIR, path, reps);
    FILE *p = popen(cmd, "r");
    double ms = -1;
    char line[256];
    while (p && fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        sscanf(line, "bench: pyjson.vllm-json median_ms=%lf", &ms);
    }
    if (p && pclose(p) != 0)
        ms = -1;
    unlink(path);
    return ms;
}

int main(void)
{
    int reps = bench_reps(11);
    sr_buf body = SR_BUF_INIT;
    for (int d = 0; d < SR_DIALECT_COUNT; d++) {
        sr_fields *f;
        sr_splicer *s;
        sr_err e = SR_ERR_INIT;
        sr_splice_opts o = SR_SPLICE_OPTS_INIT;
        o.max_body = (size_t)4 << 30;
        if (sr_fields_new(&f, &e) || sr_dialect_add_fields(f, (sr_dialect)d, &e) ||
            sr_splicer_new(&s, f, &o, &e))
            die("registry", &e);
        make_body(&body, (sr_dialect)d);
        verify(s, &body);
        const char *name = sr_dialect_name((sr_dialect)d);
        int r = d == SR_DIALECT_VLLM_JSON ? (reps < 11 ? reps : 11) : reps;
        for (int stream = 0; stream < 2; stream++) {
            run_ctx c = {s, &body, stream};
            bench_stats st, base;
            bench_measure_vs_memcpy(&st, &base, NULL, run, &c, body.len, r);
            char line[96];
            snprintf(line, sizeof line, "dialect.%s.%s", name, stream ? "stream_64k" : "oneshot");
            bench_report_ex(line, st, base, "memcpy_body", "body_mb=%.1f",
                            (double)body.len / (1 << 20));
            if (d == SR_DIALECT_VLLM_JSON && !stream) {
                double py = python_json(&body, 3);
                if (py > 0)
                    bench_report_value("dialect.vllm-json.vs_py", st.median_ms / py, "pyjson",
                                       "speedup=%.2f", py / st.median_ms);
            }
        }
        sr_splicer_free(s);
        sr_fields_free(f);
    }
    sr_buf_release(&body);
    return 0;
}
