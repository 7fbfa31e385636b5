/*
 * Shared fixtures of the sr_delta suites (test_delta.c, test_delta_input.c): a small tensor set
 * with every kind of shape, a temporary directory under /tmp, and file helpers.
 */
#ifndef DELTA_FIXTURE_H
#define DELTA_FIXTURE_H

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sr_delta.h"
#include "sr_test.h"

#define NT 6

static const struct {
    const char *name, *dtype;
    int ndim;
    int64_t shape[3];
} k_spec[NT] = {
    {"embed.weight", "float16", 2, {64, 32}},
    {"layers.0.w1", "float32", 2, {128, 16}},
    {"layers.0.w2", "bfloat16", 1, {3000}},
    {"lm_head.weight", "float32", 2, {512, 100}}, /* 200 KiB: more than one 128 KiB chunk */
    {"scalar", "int64", 0, {0}},
    {"empty", "uint8", 1, {0}},
};

typedef struct tset {
    sr_delta_tensor t[NT];
} tset;

typedef struct fixture {
    char root[64], sync[96], state[96];
    tset trainer, base, local;
} fixture;

static inline uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline void tset_init(tset *s, uint64_t seed)
{
    for (int i = 0; i < NT; i++) {
        sr_delta_tensor *t = &s->t[i];
        memset(t, 0, sizeof(*t));
        t->name = k_spec[i].name;
        t->dtype = k_spec[i].dtype;
        t->ndim = k_spec[i].ndim;
        size_t n = sr_delta_dtype_size(t->dtype);
        for (int d = 0; d < t->ndim; d++) {
            t->shape[d] = k_spec[i].shape[d];
            n *= (size_t)t->shape[d];
        }
        t->nbytes = n;
        t->data = malloc(n ? n : 1);
        unsigned char *b = t->data;
        for (size_t k = 0; k < n; k++)
            b[k] = (unsigned char)next_rand(&seed);
    }
}

static inline void tset_copy(tset *dst, const tset *src)
{
    for (int i = 0; i < NT; i++)
        memcpy(dst->t[i].data, src->t[i].data, src->t[i].nbytes);
}

static inline void tset_free(tset *s)
{
    for (int i = 0; i < NT; i++)
        free(s->t[i].data);
}

static inline int tset_equal(const tset *a, const tset *b)
{
    for (int i = 0; i < NT; i++) {
        if (memcmp(a->t[i].data, b->t[i].data, a->t[i].nbytes) != 0)
            return 0;
    }
    return 1;
}

/* Changes tensor i: a few scattered bytes (sparse) or every byte (dense). */
static inline void mutate(tset *s, int i, uint64_t seed, int dense)
{
    unsigned char *b = s->t[i].data;
    size_t n = s->t[i].nbytes;
    for (size_t k = 0; k < n; k++) {
        if (dense || next_rand(&seed) % 61 == 0)
            b[k] ^= (unsigned char)(1 + next_rand(&seed) % 255);
    }
}

static inline void fx_init(fixture *f)
{
    strcpy(f->root, "/tmp/sr_delta_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->root));
    snprintf(f->sync, sizeof(f->sync), "%s/sync", f->root);
    snprintf(f->state, sizeof(f->state), "%s/state", f->root);
    ck_assert_int_eq(mkdir(f->sync, 0755), 0);
    tset_init(&f->trainer, 42);
    tset_init(&f->base, 7);
    tset_init(&f->local, 9);
    tset_copy(&f->base, &f->trainer);
}

static inline int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static inline void fx_free(fixture *f)
{
    nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    tset_free(&f->trainer);
    tset_free(&f->base);
    tset_free(&f->local);
}

static inline sr_delta_publisher *new_pub(const fixture *f)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_publisher *p = NULL;
    sr_delta_publish_opts o = SR_DELTA_PUBLISH_OPTS_INIT;
    o.fsync = 0;
    ck_assert_sr_ok(sr_delta_publisher_new(&p, f->sync, f->base.t, NT, &o, &e), e);
    return p;
}

static inline sr_delta_receiver *new_rx(fixture *f, int max_workers)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_receiver *rx = NULL;
    sr_delta_receiver_opts o = SR_DELTA_RECEIVER_OPTS_INIT;
    o.max_workers = max_workers;
    o.fsync = 0;
    o.lock_wait_ms = 100; /* the lock test waits this long for a lock it holds itself */
    ck_assert_sr_ok(sr_delta_receiver_new(&rx, f->state, f->local.t, NT, f->base.t, NT, &o, &e), e);
    return rx;
}

static inline sr_delta_publish_result publish(sr_delta_publisher *p, const fixture *f, int workers)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_publish_result r;
    ck_assert_sr_ok(sr_delta_publish(&r, p, f->trainer.t, NT, workers, &e), e);
    return r;
}

static inline sr_delta_fetch_result fetch(sr_delta_receiver *rx, const fixture *f, int64_t v)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_fetch_result r;
    ck_assert_sr_ok(sr_delta_fetch(&r, rx, f->sync, v, &e), e);
    return r;
}

static inline char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, fp), (size_t)n);
    b[n] = 0;
    fclose(fp);
    if (len)
        *len = (size_t)n;
    return b;
}

static inline void spit(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(text, 1, len, fp), len);
    fclose(fp);
}

/* Replaces the first occurrence of `from` with `to` in a file. */
static inline void edit(const char *path, const char *from, const char *to)
{
    size_t len;
    char *s = slurp(path, &len);
    char *at = strstr(s, from);
    ck_assert_msg(at != NULL, "'%s' not found in %s", from, path);
    char *out = malloc(len + strlen(to) + 1);
    size_t head = (size_t)(at - s);
    memcpy(out, s, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    spit(path, out, strlen(out));
    free(s);
    free(out);
}

static inline void path_of(char *out, size_t cap, const fixture *f, int64_t v, const char *file)
{
    snprintf(out, cap, "%s/delta-%08lld/%s", f->sync, (long long)v, file);
}

static inline sr_delta_state read_state(const sr_delta_receiver *rx)
{
    sr_err e = SR_ERR_INIT;
    sr_delta_state s;
    int exists;
    ck_assert_sr_ok(sr_delta_receiver_state(&s, &exists, rx, &e), e);
    ck_assert_int_eq(exists, 1);
    return s;
}

static inline void assert_in_progress(const sr_delta_receiver *rx, int64_t version, int64_t target)
{
    sr_delta_state s = read_state(rx);
    ck_assert_int_eq(s.version, version);
    ck_assert_int_eq(s.write_in_progress, 1);
    ck_assert_int_eq(s.target_version, target);
}

#endif /* DELTA_FIXTURE_H */
