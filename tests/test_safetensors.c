/* unit.safetensors: lib/sr_safetensors on real files: round trips through one file and through
 * shards, every named error of the header parser on a crafted file, and the folder rules. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_safetensors.h"
#include "sr_test.h"

/* A fresh empty folder under /tmp (removed by rm_tree). */
static void tmp_dir(char *out, size_t cap)
{
    snprintf(out, cap, "/tmp/sr_st_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(out));
}

static void rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* The tensors of the round trip: several dtypes, a scalar, an empty tensor. */
static float f32[6] = {-1, -0.5f, 0, 0.5f, 1, 1.5f};
static uint16_t f16[5] = {0x3C00, 0x4000, 0xC000, 0x3800, 0};
static int64_t i64[1] = {-123456789012345LL};
static int32_t i32[3] = {-1, 0, 2147483647};
static const int64_t s23[2] = {2, 3}, s5[1] = {5}, s0[1] = {0}, s31[2] = {3, 1};

static size_t set_of(sr_st_in *t)
{
    t[0] = (sr_st_in){"b.half", SR_ST_F16, 1, s5, f16, sizeof f16};
    t[1] = (sr_st_in){"a.weight", SR_ST_F32, 2, s23, f32, sizeof f32};
    t[2] = (sr_st_in){"scalar", SR_ST_I64, 0, NULL, i64, sizeof i64};
    t[3] = (sr_st_in){"empty", SR_ST_U8, 1, s0, NULL, 0};
    t[4] = (sr_st_in){"layers.0.x", SR_ST_I32, 2, s31, i32, sizeof i32};
    return 5;
}

typedef struct got {
    unsigned char buf[8][64];
} got;

static int dest_buf(void *ctx, size_t i, const sr_st_info *x, void **dst, sr_err *err)
{
    (void)err;
    ck_assert_uint_le(x->nbytes, 64);
    *dst = ((got *)ctx)->buf[i];
    return 0;
}

static void check_roundtrip(int shards)
{
    char dir[64], ck[128];
    tmp_dir(dir, sizeof dir);
    snprintf(ck, sizeof ck, "%s/v3", dir);
    sr_st_in t[8];
    size_t n = set_of(t);
    sr_st_meta meta[2] = {{"format", "pt"}, {"syncroll_version", "3"}};
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_st_write_checkpoint(ck, t, n, meta, 2, shards, 2, &err), err);
    /* a second write of the same folder is refused, the first stays */
    ck_assert_sr_code(sr_st_write_checkpoint(ck, t, n, meta, 2, shards, 2, &err), err, SR_E_IO);
    sr_st_checkpoint *c = NULL;
    ck_assert_sr_ok(sr_st_checkpoint_open(&c, ck, &err), err);
    ck_assert_uint_eq(sr_st_checkpoint_files(c), (size_t)shards);
    ck_assert_uint_eq(sr_st_checkpoint_count(c), n);
    ck_assert_str_eq(sr_st_checkpoint_meta(c, "syncroll_version"), "3");
    got g;
    memset(&g, 0xAA, sizeof g);
    sr_st_read_stats st;
    ck_assert_sr_ok(sr_st_checkpoint_read(c, 2, dest_buf, &g, &st, &err), err);
    ck_assert_uint_eq(st.bytes, sizeof f16 + sizeof f32 + sizeof i64 + sizeof i32);
    for (size_t k = 0; k < n; k++) {
        int64_t i = sr_st_checkpoint_find(c, t[k].name);
        ck_assert_int_ge(i, 0);
        sr_st_info x;
        ck_assert_sr_ok(sr_st_checkpoint_tensor(&x, c, (size_t)i, &err), err);
        ck_assert_int_eq(x.t->dtype, t[k].dtype);
        ck_assert_int_eq(x.t->ndim, t[k].ndim);
        for (int d = 0; d < t[k].ndim; d++)
            ck_assert_int_eq(x.t->shape[d], t[k].shape[d]);
        ck_assert_uint_eq(x.nbytes, t[k].nbytes);
        if (t[k].nbytes)
            ck_assert_int_eq(memcmp(g.buf[i], t[k].data, t[k].nbytes), 0);
    }
    for (size_t f = 0; f < sr_st_checkpoint_files(c); f++)
        ck_assert_uint_eq(sr_st_checkpoint_header(c, f)->data_start % 8, 0);
    ck_assert_int_eq(sr_st_checkpoint_find(c, "nope"), -1);
    sr_st_checkpoint_free(c);
    rm_tree(dir);
}

START_TEST(roundtrip_one_file)
{
    check_roundtrip(1);
}
END_TEST

START_TEST(roundtrip_shards)
{
    check_roundtrip(3);
    check_roundtrip(5);
}
END_TEST

/* A file of 8 + len(json) + buffer bytes; the buffer is zeros. */
static unsigned char *craft(size_t *n, const char *json, size_t buffer)
{
    size_t h = strlen(json);
    *n = 8 + h + buffer;
    unsigned char *b = calloc(1, *n);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, json, h);
    return b;
}

static int parse(const char *json, size_t buffer, sr_err *err)
{
    size_t n;
    unsigned char *b = craft(&n, json, buffer);
    sr_st_header *h = NULL;
    int rc = sr_st_parse_header(&h, b, n, n, err);
    ck_assert(rc || h);
    sr_st_header_free(h);
    free(b);
    return rc;
}

#define T(dt, shape, off) "{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":" off "}"

START_TEST(parser_accepts_valid_variants)
{
    sr_err err = SR_ERR_INIT;
    /* padding, keys in any order, data in another order than names, metadata, empty, scalar */
    ck_assert_sr_ok(
        parse("{\"__metadata__\":{\"a\":\"b\"},\"z\":" T(
                  "F32", "[2]",
                  "[0,8]") ",\"a\":{\"data_offsets\":[8,10],\"shape\":[],\"dtype\":\"BF16\"},"
                           "\"e\":" T("U8", "[0,5]", "[10,10]") "}     ",
              10, &err),
        err);
    ck_assert_sr_ok(parse("{}", 0, &err), err);
    ck_assert_sr_ok(parse("{\"__metadata__\":{}}  \n", 0, &err), err);
    size_t n;
    unsigned char *b = craft(
        &n, "{\"w\":" T("F16", "[3,2]", "[0,12]") ",\"a\":" T("I8", "[1]", "[12,13]") "}", 13);
    sr_st_header *h = NULL;
    ck_assert_sr_ok(sr_st_parse_header(&h, b, n, n, &err), err);
    ck_assert_uint_eq(h->n_tensors, 2);
    ck_assert_str_eq(h->tensors[0].name, "a");
    ck_assert_int_eq(h->tensors[1].dtype, SR_ST_F16);
    ck_assert_int_eq(h->tensors[1].shape[0], 3);
    ck_assert_uint_eq(h->data_start, n - 13);
    ck_assert_int_eq(sr_st_header_find(h, "w"), 1);
    sr_st_header_free(h);
    free(b);
}
END_TEST

START_TEST(parser_names_each_framing_violation)
{
    sr_err err = SR_ERR_INIT;
    sr_st_header *h = NULL;
    unsigned char b[64] = {0};
    ck_assert_sr_code(sr_st_parse_header(&h, b, 7, 7, &err), err, SR_E_ST_TRUNCATED);
    b[0] = 0x01, b[4] = 0x10; /* N = 2^28 + 1 > 100 MB */
    ck_assert_sr_code(sr_st_parse_header(&h, b, 64, 64, &err), err, SR_E_ST_HEADER_TOO_LARGE);
    memset(b, 0, 8);
    b[0] = 57; /* N = 57 > 64 - 8 */
    ck_assert_sr_code(sr_st_parse_header(&h, b, 64, 64, &err), err, SR_E_ST_HEADER_LENGTH);
    ck_assert_sr_code(parse(" {}", 0, &err), err, SR_E_ST_HEADER_START);
    ck_assert_sr_code(parse("", 0, &err), err, SR_E_ST_HEADER_START);
    ck_assert_sr_code(parse("{\"a\":", 0, &err), err, SR_E_ST_HEADER_JSON);
    ck_assert_sr_code(parse("{} x", 0, &err), err, SR_E_ST_HEADER_JSON);
    ck_assert_sr_code(parse("{\"\xff\":1}", 0, &err), err, SR_E_ST_HEADER_JSON);
    ck_assert_sr_code(
        parse("{\"a\":" T("U8", "[1]", "[0,1]") ",\"a\":" T("U8", "[1]", "[1,2]") "}", 2, &err),
        err, SR_E_ST_DUPLICATE);
    ck_assert_sr_code(parse("{\"__metadata__\":[]}", 0, &err), err, SR_E_ST_METADATA);
    ck_assert_sr_code(parse("{\"__metadata__\":{\"k\":1}}", 0, &err), err, SR_E_ST_METADATA);
    ck_assert_sr_code(parse("{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, &err), err,
                      SR_E_ST_METADATA);
    ck_assert_sr_code(parse("{\"\":" T("U8", "[1]", "[0,1]") "}", 1, &err), err, SR_E_ST_NAME);
    ck_assert_sr_code(parse("{\"a\\u0000\":" T("U8", "[1]", "[0,1]") "}", 1, &err), err,
                      SR_E_ST_NAME);
}
END_TEST

START_TEST(parser_names_each_entry_violation)
{
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_code(parse("{\"a\":[]}", 0, &err), err, SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, &err), err,
                      SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[1.0]", "[0,1]") "}", 1, &err), err, SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[-1]", "[0,1]") "}", 1, &err), err, SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[1]", "[0]") "}", 1, &err), err, SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[1]", "[0,1e0]") "}", 1, &err), err, SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[9007199254740992]", "[0,1]") "}", 1, &err), err,
                      SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],"
                            "\"x\":0}}",
                            1, &err),
                      err, SR_E_ST_TENSOR);
    ck_assert_sr_code(parse("{\"a\":" T("F4", "[2]", "[0,1]") "}", 1, &err), err, SR_E_ST_DTYPE);
    ck_assert_sr_code(parse("{\"a\":" T("f32", "[1]", "[0,4]") "}", 4, &err), err, SR_E_ST_DTYPE);
    ck_assert_sr_code(parse("{\"a\":" T("F64", "[4294967296,4294967296]", "[0,0]") "}", 0, &err),
                      err, SR_E_ST_SHAPE_OVERFLOW);
    /* an empty dim after an overflowing prefix is an empty tensor */
    ck_assert_sr_ok(parse("{\"a\":" T("F64", "[4294967296,4294967296,0]", "[0,0]") "}", 0, &err),
                    err);
    ck_assert_sr_code(parse("{\"a\":" T("F32", "[2]", "[0,4]") "}", 4, &err), err,
                      SR_E_ST_BYTE_COUNT);
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[0]", "[3,2]") "}", 3, &err), err,
                      SR_E_ST_BYTE_COUNT);
    ck_assert_sr_code(
        parse("{\"a\":" T("U8", "[2]", "[0,2]") ",\"b\":" T("U8", "[2]", "[1,3]") "}", 3, &err),
        err, SR_E_ST_OFFSETS); /* overlap */
    ck_assert_sr_code(
        parse("{\"a\":" T("U8", "[2]", "[0,2]") ",\"b\":" T("U8", "[2]", "[3,5]") "}", 5, &err),
        err, SR_E_ST_OFFSETS); /* gap */
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[2]", "[1,3]") "}", 3, &err), err,
                      SR_E_ST_OFFSETS); /* not from 0 */
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[2]", "[0,2]") "}", 5, &err), err,
                      SR_E_ST_BUFFER); /* short of the buffer */
    ck_assert_sr_code(parse("{\"a\":" T("U8", "[2]", "[0,2]") "}", 1, &err), err,
                      SR_E_ST_BUFFER); /* past it */
    ck_assert_sr_code(parse("{\"__metadata__\":{}}", 1, &err), err, SR_E_ST_BUFFER);
}
END_TEST

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static int open_rc(const char *dir, sr_err *err)
{
    sr_st_checkpoint *c = NULL;
    int rc = sr_st_checkpoint_open(&c, dir, err);
    sr_st_checkpoint_free(c);
    return rc;
}

START_TEST(folder_rules)
{
    char dir[64], p[256];
    tmp_dir(dir, sizeof dir);
    sr_err err = SR_ERR_INIT;
    size_t n;
    unsigned char *one = craft(&n, "{\"a\":" T("U8", "[2]", "[0,2]") "}", 2);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_CHECKPOINT); /* empty */
    snprintf(p, sizeof p, "%s/absent", dir);
    ck_assert_sr_code(open_rc(p, &err), err, SR_E_ST_CHECKPOINT);
    snprintf(p, sizeof p, "%s/config.json", dir);
    write_bytes(p, "{}", 2); /* ignored */
    snprintf(p, sizeof p, "%s/model-00001-of-00003.safetensors", dir);
    write_bytes(p, one, n);
    snprintf(p, sizeof p, "%s/model-00003-of-00003.safetensors", dir);
    write_bytes(p, one, n);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_CHECKPOINT); /* lacks 2 */
    snprintf(p, sizeof p, "%s/model-00002-of-00003.safetensors", dir);
    write_bytes(p, one, n);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_DUPLICATE); /* "a" in all three */
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
    write_bytes(p, one, n);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_CHECKPOINT); /* two shard counts */
    rm_tree(dir);
    tmp_dir(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_bytes(p, one, n);
    ck_assert_sr_ok(open_rc(dir, &err), err);
    snprintf(p, sizeof p, "%s/weights.safetensors", dir);
    write_bytes(p, one, n);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_CHECKPOINT); /* a stray name */
    unlink(p);
    snprintf(p, sizeof p, "%s/model-00001-of-00001.safetensors", dir);
    write_bytes(p, one, n);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_CHECKPOINT); /* mixed */
    unlink(p);
    /* a crafted error inside a file names the file */
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    write_bytes(p, one, n - 1);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_BUFFER);
    ck_assert_ptr_nonnull(strstr(err.msg, "model.safetensors"));
    write_bytes(p, one, 5);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_TRUNCATED);
    unlink(p);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    ck_assert_sr_code(open_rc(dir, &err), err, SR_E_NOT_REGULAR);
    free(one);
    rm_tree(dir);
}
END_TEST

START_TEST(writer_refuses_bad_input)
{
    char dir[64], p[128];
    tmp_dir(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/ck", dir);
    sr_err err = SR_ERR_INIT;
    sr_st_in t[8];
    size_t n = set_of(t);
    t[1].nbytes = 4; /* a.weight short */
    ck_assert_sr_code(sr_st_write_checkpoint(p, t, n, NULL, 0, 1, 1, &err), err, SR_E_INVAL);
    n = set_of(t);
    t[2].name = "a.weight";
    ck_assert_sr_code(sr_st_write_checkpoint(p, t, n, NULL, 0, 2, 1, &err), err, SR_E_ST_DUPLICATE);
    n = set_of(t);
    ck_assert_sr_code(sr_st_write_checkpoint(p, t, n, NULL, 0, 6, 1, &err), err, SR_E_INVAL);
    ck_assert_sr_ok(sr_st_write_checkpoint(p, t, n, NULL, 0, 5, 1, &err), err);
    /* a crashed writer's .partial folder is replaced */
    snprintf(p, sizeof p, "%s/ck2.partial", dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/ck2.partial/model.safetensors", dir);
    write_bytes(p, "junk", 4);
    snprintf(p, sizeof p, "%s/ck2", dir);
    ck_assert_sr_ok(sr_st_write_checkpoint(p, t, n, NULL, 0, 1, 1, &err), err);
    ck_assert_sr_ok(open_rc(p, &err), err);
    rm_tree(dir);
}
END_TEST

/* A shard set missing its first, a middle or its last shard names the missing one; a shard
 * number 0 or one past the count next to a complete set is refused; the complete set opens. */
START_TEST(shard_set_limits)
{
    size_t n[3];
    unsigned char *f[3] = {craft(&n[0], "{\"a\":" T("U8", "[2]", "[0,2]") "}", 2),
                           craft(&n[1], "{\"b\":" T("U8", "[2]", "[0,2]") "}", 2),
                           craft(&n[2], "{\"c\":" T("U8", "[2]", "[0,2]") "}", 2)};
    sr_err err = SR_ERR_INIT;
    char dir[64], p[256], want[64];
    for (int missing = 0; missing <= 3; missing++) {
        tmp_dir(dir, sizeof dir);
        for (int k = 1; k <= 3; k++) {
            if (k == missing)
                continue;
            snprintf(p, sizeof p, "%s/model-%05d-of-00003.safetensors", dir, k);
            write_bytes(p, f[k - 1], n[k - 1]);
        }
        if (missing) {
            ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_CHECKPOINT);
            snprintf(want, sizeof want, "lacks shard %05d of 00003", missing);
            ck_assert_msg(strstr(err.msg, want) != NULL, "'%s' lacks '%s'", err.msg, want);
        } else {
            ck_assert_sr_ok(open_rc(dir, &err), err);
            for (int extra = 0; extra <= 4; extra += 4) {
                snprintf(p, sizeof p, "%s/model-%05d-of-00003.safetensors", dir, extra);
                write_bytes(p, f[0], n[0]);
                ck_assert_sr_code(open_rc(dir, &err), err, SR_E_ST_CHECKPOINT);
                ck_assert_ptr_nonnull(strstr(err.msg, "is neither model.safetensors"));
                unlink(p);
            }
            ck_assert_sr_ok(open_rc(dir, &err), err);
        }
        rm_tree(dir);
    }
    for (int k = 0; k < 3; k++)
        free(f[k]);
}
END_TEST

/* The header length, a name and a rank at their limits, one before and one past, in the parser
 * and in the writer: a length of exactly SR_ST_HEADER_MAX (and exactly the file's bytes after
 * the 8-byte prefix) frames, one more does not; names of SR_ST_NAME_MAX bytes and shapes of
 * SR_ST_NDIM_MAX dims are taken, one more byte or dim is refused by name; the writer takes 1 to
 * n shards and refuses 0 and SR_ST_MAX_SHARDS + 1. */
START_TEST(header_name_and_rank_limits)
{
    sr_err err = SR_ERR_INIT;
    unsigned char b[8];
    uint64_t hlen;
    for (int64_t d = -1; d <= 1; d++) {
        uint64_t v = SR_ST_HEADER_MAX + (uint64_t)d;
        for (int i = 0; i < 8; i++)
            b[i] = (unsigned char)(v >> (8 * i));
        int rc = sr_st_header_len(&hlen, b, 8, SR_ST_HEADER_MAX * 2, &err);
        ck_assert_int_eq(rc, d > 0 ? SR_E_ST_HEADER_TOO_LARGE : 0);
        ck_assert_uint_eq(hlen, d > 0 ? 0 : v);
        /* The file ends exactly after a header of 1000 bytes, or one before, or one after. */
        v = 1000;
        for (int i = 0; i < 8; i++)
            b[i] = (unsigned char)(v >> (8 * i));
        rc = sr_st_header_len(&hlen, b, 8, 8 + 1000 + (uint64_t)d, &err);
        ck_assert_int_eq(rc, d < 0 ? SR_E_ST_HEADER_LENGTH : 0);
    }
    static char name[SR_ST_NAME_MAX + 2], json[SR_ST_NAME_MAX + 256];
    char shape[128];
    static const int64_t ones[SR_ST_NDIM_MAX + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                     1, 1, 1, 1, 1, 1, 1, 1};
    static uint8_t byte[1];
    char dir[64], p[128];
    tmp_dir(dir, sizeof dir);
    for (int d = -1; d <= 1; d++) {
        size_t len = (size_t)(SR_ST_NAME_MAX + d);
        memset(name, 'n', len);
        name[len] = '\0';
        snprintf(json, sizeof json, "{\"%s\":" T("U8", "[1]", "[0,1]") "}", name);
        ck_assert_int_eq(parse(json, 1, &err), d > 0 ? SR_E_ST_NAME : 0);
        int nd = SR_ST_NDIM_MAX + d;
        size_t at = (size_t)snprintf(shape, sizeof shape, "[");
        for (int k = 0; k < nd; k++)
            at += (size_t)snprintf(shape + at, sizeof shape - at, "%s1", k ? "," : "");
        snprintf(shape + at, sizeof shape - at, "]");
        snprintf(json, sizeof json,
                 "{\"a\":{\"dtype\":\"U8\",\"shape\":%s,\"data_offsets\":[0,1]}}", shape);
        int rc = parse(json, 1, &err);
        ck_assert_int_eq(rc, d > 0 ? SR_E_ST_TENSOR : 0);
        if (rc)
            ck_assert_ptr_nonnull(strstr(err.msg, "dims (most 16)"));
        /* The writer: the same name, then the same rank. */
        sr_st_in t = {name, SR_ST_U8, 1, ones, byte, 1};
        snprintf(p, sizeof p, "%s/n%d", dir, d + 1);
        ck_assert_int_eq(sr_st_write_checkpoint(p, &t, 1, NULL, 0, 1, 1, &err),
                         d > 0 ? SR_E_INVAL : 0);
        t = (sr_st_in){"a", SR_ST_U8, nd, ones, byte, 1};
        snprintf(p, sizeof p, "%s/r%d", dir, d + 1);
        ck_assert_int_eq(sr_st_write_checkpoint(p, &t, 1, NULL, 0, 1, 1, &err),
                         d > 0 ? SR_E_INVAL : 0);
    }
    sr_st_in t[8];
    size_t n = set_of(t);
    snprintf(p, sizeof p, "%s/s", dir);
    ck_assert_sr_code(sr_st_write_checkpoint(p, t, n, NULL, 0, 0, 1, &err), err, SR_E_INVAL);
    ck_assert_sr_code(sr_st_write_checkpoint(p, t, n, NULL, 0, SR_ST_MAX_SHARDS + 1, 1, &err), err,
                      SR_E_INVAL);
    ck_assert_sr_ok(sr_st_write_checkpoint(p, t, n, NULL, 0, 1, 1, &err), err);
    rm_tree(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, roundtrip_one_file);
    tcase_add_test(tc, roundtrip_shards);
    tcase_add_test(tc, parser_accepts_valid_variants);
    tcase_add_test(tc, parser_names_each_framing_violation);
    tcase_add_test(tc, parser_names_each_entry_violation);
    tcase_add_test(tc, folder_rules);
    tcase_add_test(tc, writer_refuses_bad_input);
    tcase_add_test(tc, shard_set_limits);
    tcase_add_test(tc, header_name_and_rank_limits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sr_test_run(suite());
}
