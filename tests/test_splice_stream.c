/*
 * sr_splice on random and mutated bodies: one-shot, threaded and streamed in random chunkings
 * agree on every result and error (splice_harness.h); integer arrays equal cJSON's reading of the
 * whole body; envelopes equal the slow path (cJSON + sr_envelope_unpack); the OR-based canonical
 * check equals sr_routes_check_canonical.
 */
#include "splice_harness.h"

/* ---- random bodies ---- */

static void put_ws(sr_buf *b)
{
    if (rnd() % 4 == 0)
        sr_buf_puts(b, rnd() % 2 ? " " : "\n ", NULL);
}

/* Appends a routes envelope of t rows x 4 x 2 in a random route dtype with canonical values. */
static void put_routes(sr_buf *b, size_t t, const char *key)
{
    static const sr_dtype dts[] = {SR_DTYPE_UINT8, SR_DTYPE_INT16, SR_DTYPE_INT32};
    static const int64_t hi[] = {255, 32767, 100000};
    int k = (int)(rnd() % 3);
    size_t isz = sr_dtype_size(dts[k]), n = t * 8;
    unsigned char *raw = calloc(n * isz + 1, 1);
    for (size_t i = 0; i < n; i++) {
        int64_t v = (int64_t)(rnd() % (uint64_t)(hi[k] + 1));
        if (i == 0)
            v = hi[k];
        memcpy(raw + i * isz, &v, isz);
    }
    size_t enc = sr_base64_encoded_len(n * isz);
    char *txt = malloc(enc + 1);
    sr_base64_encode(txt, raw, n * isz, SR_B64_AUTO);
    sr_buf_printf(b, NULL, "\"%s\":{\"data\":\"", key);
    sr_buf_append(b, txt, enc, NULL);
    sr_buf_printf(b, NULL, "\",\"shape\":[%zu,4,2],\"dtype\":\"%s\"}", t, sr_dtype_name(dts[k]));
    free(raw);
    free(txt);
}

static void put_ids(sr_buf *b, size_t n)
{
    sr_buf_puts(b, rnd() % 5 ? "\"token_ids\":[" : "\"token_ids\": [", NULL);
    for (size_t i = 0; i < n; i++) {
        put_ws(b);
        sr_buf_printf(b, NULL, "%s%u", i ? "," : "", (unsigned)(rnd() % 200000));
    }
    put_ws(b);
    sr_buf_puts(b, "]", NULL);
}

static void gen_body(sr_buf *b, int big)
{
    sr_buf_reset(b);
    sr_buf_puts(b, "{\"choices\":[", NULL);
    int nc = (int)(rnd() % 4) + 1;
    for (int c = 0; c < nc; c++) {
        sr_buf_puts(b, c ? ",{" : "{", NULL);
        put_ids(b, rnd() % 300);
        sr_buf_puts(b, ",\"finish_reason\":\"stop\",\"text\":\"a:{\\\"data\\\":\\\"q\\\"}\",",
                    NULL);
        switch (rnd() % 4) {
        case 0:
            sr_buf_puts(b, "\"routed_experts\":null", NULL);
            break;
        default:
            put_routes(b, big && c == 0 ? 20000 + rnd() % 5000 : 1 + rnd() % 400, "routed_experts");
        }
        if (rnd() % 2) {
            sr_buf_puts(b, ",", NULL);
            put_routes(b, rnd() % 50, rnd() % 3 ? "other_packed" : "routed_experts_x");
        }
        sr_buf_puts(b, "}", NULL);
    }
    sr_buf_puts(b, "]}", NULL);
}

/* Walks the reference parse of the original body and collects token_ids arrays in order. */
static void ref_ids(const cJSON *n, int32_t *out, size_t *k, size_t *arrays)
{
    for (const cJSON *c = n ? n->child : NULL; c; c = c->next) {
        if (c->string && strcmp(c->string, "token_ids") == 0 && cJSON_IsArray(c)) {
            (*arrays)++;
            for (const cJSON *v = c->child; v; v = v->next)
                out[(*k)++] = (int32_t)v->valuedouble;
        } else {
            ref_ids(c, out, k, arrays);
        }
    }
}

START_TEST(random_bodies_agree_every_way_and_with_cjson)
{
    sr_buf b = SR_BUF_INIT;
    static int32_t want[1 << 14];
    for (int iter = 0; iter < 40; iter++) {
        gen_body(&b, iter % 8 == 7);
        ck_assert_sr_ok(check_len(b.data, b.len, iter % 2 ? (int64_t)b.len : -1), g_err);
        cJSON *ref = cJSON_Parse(b.data);
        ck_assert_ptr_nonnull(ref);
        size_t k = 0, arrays = 0, got = 0, garrays = 0;
        ref_ids(ref, want, &k, &arrays);
        for (size_t i = 0; i < g_res->count; i++) {
            const sr_splice_entry *e = &g_res->entries[i];
            if (e->kind != SR_SPLICE_INT_ARRAY)
                continue;
            garrays++;
            ck_assert_mem_eq(e->array.data, want + got, e->array.nbytes);
            got += (size_t)e->array.shape[0];
        }
        ck_assert_uint_eq(got, k);
        ck_assert_uint_eq(garrays, arrays);
        /* Every routes envelope decodes to what the slow path (cJSON + unpack) gives. */
        sr_contract c = sr_contract_routes();
        size_t j = 0;
        for (cJSON *ch = cJSON_GetObjectItem(ref, "choices")->child; ch; ch = ch->next) {
            cJSON *env = cJSON_GetObjectItem(ch, "routed_experts");
            while (j < g_res->count && g_res->entries[j].kind == SR_SPLICE_INT_ARRAY)
                j++;
            ck_assert_uint_lt(j, g_res->count);
            if (cJSON_IsObject(env)) {
                sr_ndarray a;
                sr_err err = SR_ERR_INIT;
                ck_assert_sr_ok(sr_envelope_unpack(&a, env, SR_SHAPE_TEXT_UNKNOWN, &c, NULL, &err),
                                err);
                ck_assert(sr_ndarray_equal(&a, &g_res->entries[j].array));
                sr_ndarray_release(&a);
            }
            j++;
        }
        cJSON_Delete(ref);
    }
    sr_buf_release(&b);
}
END_TEST

START_TEST(mutated_bodies_agree_every_way)
{
    sr_buf b = SR_BUF_INIT;
    static const char junk[] = "\"\\:{}[],=!A0 ";
    for (int iter = 0; iter < 150; iter++) {
        gen_body(&b, 0);
        size_t len = b.len;
        switch (rnd() % 3) {
        case 0:
            len = (size_t)(rnd() % (b.len + 1));
            break;
        case 1:
            b.data[rnd() % b.len] = junk[rnd() % (sizeof(junk) - 1)];
            break;
        default:
            for (int m = 0; m < 3; m++)
                b.data[rnd() % b.len] = junk[rnd() % (sizeof(junk) - 1)];
        }
        check_len(b.data, len, -1);
    }
    sr_buf_release(&b);
}
END_TEST

/* The OR-based canonical check agrees with the min/max check of sr_envelope. */
START_TEST(canonical_statistics_match_minmax)
{
    static const char *names[] = {"uint8", "int16", "int32"};
    for (int iter = 0; iter < 300; iter++) {
        int k = (int)(rnd() % 3);
        size_t isz = (size_t)1 << k, t = rnd() % 9, n = t * 4;
        int64_t lim[] = {1, 255, 256, 32767, 32768, 70000};
        int64_t hi = lim[rnd() % 6];
        unsigned char raw[64 * 4] = {0};
        for (size_t i = 0; i < n; i++) {
            int64_t v = (int64_t)(rnd() % (uint64_t)(hi + 1));
            if (rnd() % 20 == 0)
                v = -v - 1;
            memcpy(raw + i * isz, &v, isz);
        }
        char b64[400], q[600];
        b64[sr_base64_encode(b64, raw, n * isz, SR_B64_SCALAR)] = '\0';
        snprintf(q, sizeof(q), "{'routed_experts':{'data':'%s','shape':[%zu,2,2],'dtype':'%s'}}",
                 b64, t, names[k]);
        int rc = checkq(q);
        sr_ndarray a = SR_NDARRAY_INIT;
        a.dtype = k == 0 ? SR_DTYPE_UINT8 : k == 1 ? SR_DTYPE_INT16 : SR_DTYPE_INT32;
        a.ndim = 3;
        a.shape[0] = (int64_t)t;
        a.shape[1] = a.shape[2] = 2;
        a.data = raw;
        a.nbytes = n * isz;
        sr_err err = SR_ERR_INIT;
        int want = sr_routes_check_canonical(&a, "routed_experts", &err);
        ck_assert_msg(rc == want, "iteration %d: splice %s, minmax %s", iter, sr_code_name(rc),
                      sr_code_name(want));
        if (want == SR_E_ENV_NON_CANONICAL)
            ck_assert_str_eq(strstr(g_err.msg, "packed routed_experts"), err.msg);
    }
}
END_TEST

/* Splices `body` one-shot, streamed in 7-byte pieces and, with `threaded`, by the threaded
 * splicer's tiny windows (all must agree) and returns the code: a lighter check_len for the
 * many small bodies of a position table. */
static int splice_ways(const char *body, int threaded)
{
    size_t len = strlen(body);
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r = NULL;
    int rc = sr_splice(g_one, body, len, -1, &r, &err);
    char *want = fingerprint(rc, &err, r);
    char *other = run_stream(g_stream, body, len, -1, -1, 7, 0);
    ck_assert_str_eq(other, want);
    free(other);
    if (threaded) {
        sr_err err2 = SR_ERR_INIT;
        int rc2 = sr_splice(g_two, body, len, -1, &r, &err2);
        other = fingerprint(rc2, &err2, r);
        ck_assert_str_eq(other, want);
        free(other);
    }
    free(want);
    return rc;
}

/* The canonical check ORs the decoded bytes in blocks (128 bytes with AVX2, 64 portably, then a
 * byte tail): a value that needs the declared width (int32: 40000; int16: 300) or is negative
 * (-1) decides the verdict at every position of arrays whose byte counts end in each kind of
 * block and tail, one-shot, streamed and (the negative value) threaded. */
START_TEST(canonical_check_at_every_position_of_the_or_blocks)
{
    static const struct {
        int k; /* item size 1 << k */
        size_t n;
    } cs[] = {{2, 20}, {2, 40}, {2, 100}, {2, 112}, {1, 40}, {1, 100}, {1, 224}};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        size_t isz = (size_t)1 << cs[c].k, n = cs[c].n;
        const char *dt = cs[c].k == 2 ? "int32" : "int16";
        int64_t wide = cs[c].k == 2 ? 40000 : 300;
        for (size_t pos = 0; pos <= n; pos++) {
            for (int w = 0; w < 3; w++) {
                /* w 0: the wide value at pos (canonical), 1: -1 there, 2: one step narrower. */
                int64_t v = w == 0 ? wide : w == 1 ? -1 : cs[c].k == 2 ? 300 : 1;
                if (pos == n && w) /* pos n: no value placed, all ones: too wide a dtype */
                    continue;
                unsigned char raw[224 * 2];
                for (size_t i = 0; i < n; i++) {
                    int64_t x = i == pos ? v : 1;
                    memcpy(raw + i * isz, &x, isz);
                }
                char b64[700], q[900];
                b64[sr_base64_encode(b64, raw, n * isz, SR_B64_SCALAR)] = '\0';
                snprintf(q, sizeof q,
                         "{'routed_experts':{'data':'%s','shape':[%zu,2,2],'dtype':'%s'}}", b64,
                         n / 4, dt);
                /* The threaded splicer (slow to start) for the negative value of the largest
                 * arrays. */
                int rc = splice_ways(J(q), w == 1 && n >= 112);
                int want = pos == n ? SR_E_ENV_NON_CANONICAL
                           : w == 0 ? 0
                           : w == 1 ? SR_E_ROUTES_NEGATIVE
                                    : SR_E_ENV_NON_CANONICAL;
                ck_assert_msg(rc == want, "%s[%zu] with %lld at %zu: %s, want %s", dt, n,
                              (long long)v, pos, sr_code_name(rc), sr_code_name(want));
            }
        }
    }
}
END_TEST

/* Streams `body` through g_stream with its routes decoded at dest[0, cap) (sr_splice_set_dest)
 * and returns the fingerprint; *at_dest counts the entries whose array lies at dest. */
static char *stream_to_dest(const char *body, size_t len, unsigned char *dest, size_t cap,
                            int *at_dest, size_t *used)
{
    sr_splice_set_dest(g_stream, "routed_experts", dest, cap);
    char *got =
        run_stream(g_stream, body, len, -1, rnd() % 2 ? (int64_t)len : -1, 1 + rnd() % 9000, 1);
    *at_dest = 0;
    *used = 0;
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *r = NULL;
    /* The same body once more, one-shot, to read where its entries are. */
    sr_splice_set_dest(g_one, "routed_experts", dest, cap);
    int rc = sr_splice(g_one, body, len, -1, &r, &err);
    for (size_t i = 0; !rc && i < r->count; i++) {
        if (r->entries[i].array.nbytes && r->entries[i].array.data == dest) {
            (*at_dest)++;
            *used = r->entries[i].array.nbytes;
        }
    }
    char *one = fingerprint(rc, &err, r);
    ck_assert_str_eq(one, got);
    free(one);
    sr_splice_set_dest(g_one, NULL, NULL, 0);
    sr_splice_set_dest(g_stream, NULL, NULL, 0);
    return got;
}

/* A destination for the routes changes where the first routes blob of a response is decoded and
 * nothing else: the same results and errors with a destination that holds it (the entry's array
 * is then there, and the destination's bytes past it are untouched), one it outgrows (moved to
 * the region while decoding), and a misaligned one (ignored); on random and mutated bodies. */
START_TEST(a_destination_changes_only_where_the_routes_are)
{
    sr_buf b = SR_BUF_INIT;
    size_t cap = (size_t)1 << 20;
    unsigned char *dest = aligned_alloc(64, cap + 64);
    for (int iter = 0; iter < 120; iter++) {
        gen_body(&b, iter % 20 == 0);
        size_t len = b.len;
        if (iter % 3 == 2) /* mutated: cut, or a byte replaced */
            len = rnd() % 2 ? (size_t)(rnd() % (b.len + 1)) : len;
        if (iter % 3 == 2 && len == b.len)
            b.data[rnd() % b.len] = "\"\\:{}[],=!A0 "[rnd() % 13];
        sr_err err = SR_ERR_INIT;
        const sr_splice_result *r = NULL;
        int rc = sr_splice(g_one, b.data, len, -1, &r, &err);
        char *want = fingerprint(rc, &err, r);
        int routes = 0;
        for (size_t i = 0; !rc && i < r->count; i++)
            routes += r->entries[i].kind == SR_SPLICE_ENVELOPE &&
                      strcmp(r->entries[i].field->name, "routed_experts") == 0;
        memset(dest, 0xA5, cap + 64);
        int at = 0;
        size_t used = 0;
        char *got = stream_to_dest(b.data, len, dest, cap, &at, &used);
        ck_assert_str_eq(got, want);
        free(got);
        ck_assert_int_eq(at, routes ? 1 : 0);
        /* (A failed response may leave decoded bytes of its blob there.) */
        for (size_t i = used; !rc && i < cap + 64; i += 1 + rnd() % 61)
            ck_assert_msg(dest[i] == 0xA5, "byte %zu past the blob's %zu was written (%s)", i, used,
                          want);
        /* Too small for most blobs (moved while decoding), then misaligned (ignored). */
        got = stream_to_dest(b.data, len, dest, rnd() % 700, &at, &used);
        ck_assert_str_eq(got, want);
        free(got);
        got = stream_to_dest(b.data, len, dest + 4, cap, &at, &used);
        ck_assert_str_eq(got, want);
        ck_assert_int_eq(at, 0);
        free(got);
        free(want);
    }
    free(dest);
    sr_buf_release(&b);
}
END_TEST

/* The splicer's max_body at, before and past: a body of L bytes (an object padded with spaces)
 * is taken with max_body L and L + 1 and refused splice.body_too_large at offset L - 1 with
 * max_body L - 1: one-shot and streamed in pieces of 1, 7 and L bytes, announced (Content-Length
 * L) or not. */
START_TEST(max_body_at_its_limit)
{
    enum { L = 100 };
    char body[L + 1];
    memset(body, ' ', L);
    memcpy(body, "{\"n\":1", 6);
    body[L - 1] = '}';
    body[L] = '\0';
    for (size_t max = L - 1; max <= L + 1; max++)
        for (int announced = 0; announced <= 1; announced++)
            for (int way = 0; way < 4; way++) {
                sr_splice_opts o = SR_SPLICE_OPTS_INIT;
                o.max_body = max;
                sr_splicer *s = NULL;
                sr_err err = SR_ERR_INIT;
                ck_assert_sr_ok(sr_splicer_new(&s, g_fields, &o, &err), err);
                const sr_splice_result *r = NULL;
                int64_t expected = announced ? L : -1;
                int rc;
                if (way == 0) {
                    rc = sr_splice(s, body, L, expected, &r, &err);
                } else {
                    size_t piece = way == 1 ? 1 : way == 2 ? 7 : L;
                    rc = sr_splice_stream_begin(s, expected, &err);
                    for (size_t at = 0; !rc && at < L; at += piece)
                        rc = sr_splice_stream_feed(s, body + at, L - at < piece ? L - at : piece,
                                                   &err);
                    if (!rc)
                        rc = sr_splice_stream_finish(s, &r, &err);
                }
                if (max >= L) {
                    ck_assert_msg(rc == 0, "max_body %zu, way %d, announced %d: %s", max, way,
                                  announced, err.msg);
                } else {
                    ck_assert_msg(rc == SR_E_SPLICE_TOO_LARGE && err.offset == (int64_t)max,
                                  "max_body %zu, way %d, announced %d: %s at %lld", max, way,
                                  announced, sr_code_name(rc), (long long)err.offset);
                }
                sr_splicer_free(s);
            }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("splice_stream");
    TCase *eq = tcase_create("equivalence");
    tcase_add_checked_fixture(eq, setup, teardown);
    tcase_set_timeout(eq, 240);
    tcase_add_test(eq, random_bodies_agree_every_way_and_with_cjson);
    tcase_add_test(eq, mutated_bodies_agree_every_way);
    tcase_add_test(eq, canonical_statistics_match_minmax);
    tcase_add_test(eq, canonical_check_at_every_position_of_the_or_blocks);
    tcase_add_test(eq, a_destination_changes_only_where_the_routes_are);
    tcase_add_test(eq, max_body_at_its_limit);
    suite_add_tcase(s, eq);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
