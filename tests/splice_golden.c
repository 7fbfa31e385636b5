/*
 * ctest splice.golden_bodies: every golden body of fixtures/bodies/ spliced at the library level
 * in every way the splicer can run -- one-shot with one thread, threaded (2 threads, windows of
 * 16..64 characters, so blob ends and errors fall on window boundaries), streamed in 1-, 7- and
 * 64-byte chunks, with the base64 kernel SR_B64_AUTO picks (AVX-512 VBMI where the CPU has it),
 * AVX2 and scalar -- must give exactly the same result (error code, byte offset and message; or
 * the same entries with the same decoded bytes), and that result must be the body's
 * NAME.expected (the error name, or each entry's path and byte count) and NAME.offset (the
 * error's byte offset) when it exists.
 *
 * It is the second, independent witness (beside unit.splice's generated cases) for the threaded
 * path's blob ends and error offsets and for base64 padding rules reached through real bodies.
 * Bodies with a NAME.args file (registries, --fields, --expected-length) are check-body's alone
 * and are listed as skipped. A body of another engine dialect (NAME.expected says "dialect":"D",
 * or an error: the dialect told from the body's keys, harness/spec/dialect.h) is spliced with that
 * dialect's registry; the one whose keys tell two dialects must expect dialect.ambiguous. Usage:
 * splice_golden FIXTURES_DIR. Exit 0 when every body agrees.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sr_buf.h"
#include "sr_fields.h"
#include "sr_file.h"
#include "sr_splice.h"
#include "spec/dialect.h"

#define MAX_ENTRIES 64

/* What one way of splicing produced. */
typedef struct outcome {
    int code;
    int64_t offset;
    char msg[SR_ERR_MSG_MAX];
    size_t count;
    char path[MAX_ENTRIES][128];
    size_t nbytes[MAX_ENTRIES];
    uint64_t hash[MAX_ENTRIES];
} outcome;

typedef struct mode {
    const char *name;
    int threads;      /* > 1: threaded one-shot */
    size_t window;    /* par_window */
    size_t chunk;     /* > 0: streamed in chunks of this size */
    sr_b64_impl impl; /* base64 kernel */
} mode;

static const mode k_modes[] = {
    {"one-shot", 1, 0, 0, SR_B64_AUTO},
    {"one-shot scalar", 1, 0, 0, SR_B64_SCALAR},
    {"one-shot avx2", 1, 0, 0, SR_B64_AVX2},
    {"2 threads window 16", 2, 16, 0, SR_B64_AUTO},
    {"2 threads window 32", 2, 32, 0, SR_B64_AUTO},
    {"2 threads window 48", 2, 48, 0, SR_B64_AUTO},
    {"2 threads window 64", 2, 64, 0, SR_B64_AUTO},
    {"2 threads window 16 scalar", 2, 16, 0, SR_B64_SCALAR},
    {"2 threads window 16 avx2", 2, 16, 0, SR_B64_AVX2},
    {"streamed 1", 1, 0, 1, SR_B64_AUTO},
    {"streamed 7", 1, 0, 7, SR_B64_AUTO},
    {"streamed 64", 1, 0, 64, SR_B64_AUTO},
    {"streamed 7 scalar", 1, 0, 7, SR_B64_SCALAR},
    {"streamed 7 avx2", 1, 0, 7, SR_B64_AVX2},
};

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The whole file, NUL-terminated (free() it), or NULL if it cannot be read (sr_file_read). */
static char *read_file(const char *path, size_t *len)
{
    sr_buf b = SR_BUF_INIT;
    if (sr_file_read(&b, path, 0, NULL) != 0)
        return NULL;
    if (len)
        *len = b.len;
    return b.data;
}

static void splice_once(outcome *o, const sr_fields *fields, const mode *m, const char *body,
                        size_t len)
{
    memset(o, 0, sizeof(*o));
    o->offset = -1;
    sr_splice_opts opts = SR_SPLICE_OPTS_INIT;
    opts.threads = m->threads;
    opts.par_window = m->window;
    opts.impl = m->impl;
    sr_splicer *s = NULL;
    sr_err err = SR_ERR_INIT;
    const sr_splice_result *res = NULL;
    int rc = sr_splicer_new(&s, fields, &opts, &err);
    if (!rc && m->chunk == 0) {
        rc = sr_splice(s, body, len, -1, &res, &err);
    } else if (!rc) {
        rc = sr_splice_stream_begin(s, -1, &err);
        for (size_t at = 0; !rc && at < len; at += m->chunk)
            rc = sr_splice_stream_feed(s, body + at, len - at < m->chunk ? len - at : m->chunk,
                                       &err);
        if (!rc)
            rc = sr_splice_stream_finish(s, &res, &err);
    }
    o->code = rc;
    if (rc) {
        o->offset = err.offset;
        snprintf(o->msg, sizeof(o->msg), "%s", err.msg);
    } else {
        o->count = res->count < MAX_ENTRIES ? res->count : MAX_ENTRIES;
        for (size_t i = 0; i < o->count; i++) {
            const sr_splice_entry *e = &res->entries[i];
            snprintf(o->path[i], sizeof(o->path[i]), "%s", e->path);
            o->nbytes[i] = e->array.nbytes;
            o->hash[i] = fnv(e->array.data, e->array.nbytes);
        }
    }
    sr_splicer_free(s);
}

/* Describes the first difference between two outcomes into buf; 0 when they agree. */
static int differ(char *buf, size_t cap, const outcome *a, const outcome *b)
{
    if (a->code != b->code || a->offset != b->offset || strcmp(a->msg, b->msg) != 0) {
        snprintf(buf, cap, "error %s at %lld \"%s\" vs %s at %lld \"%s\"",
                 sr_code_name(a->code) ? sr_code_name(a->code) : "?", (long long)a->offset, a->msg,
                 sr_code_name(b->code) ? sr_code_name(b->code) : "?", (long long)b->offset, b->msg);
        return 1;
    }
    if (a->count != b->count) {
        snprintf(buf, cap, "%zu entries vs %zu", a->count, b->count);
        return 1;
    }
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->path[i], b->path[i]) != 0 || a->nbytes[i] != b->nbytes[i] ||
            a->hash[i] != b->hash[i]) {
            snprintf(buf, cap, "entry %zu (%s): %zu bytes vs %s: %zu bytes, or other bytes", i,
                     a->path[i], a->nbytes[i], b->path[i], b->nbytes[i]);
            return 1;
        }
    return 0;
}

/* Compares the reference outcome with NAME.expected and NAME.offset. */
static int against_golden(char *buf, size_t cap, const outcome *o, const char *stem)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s.expected", stem);
    char *exp = read_file(path, NULL);
    if (!exp) {
        snprintf(buf, cap, "cannot read %s", path);
        return 1;
    }
    int status = -1, bad = 0;
    char *line2 = strchr(exp, '\n');
    sscanf(exp, "exit %d", &status);
    if (line2)
        *line2++ = '\0';
    if (status != 0) {
        char name[100] = "";
        if (!line2 || sscanf(line2, "error %99s", name) != 1) {
            snprintf(buf, cap, "%s: no error line", path);
            bad = 1;
        } else if (!o->code || strcmp(name, sr_code_name(o->code) ? sr_code_name(o->code) : "?")) {
            snprintf(buf, cap, "spliced to %s, %s says %s",
                     o->code ? sr_code_name(o->code) : "valid", path, name);
            bad = 1;
        }
    } else if (o->code) {
        snprintf(buf, cap, "spliced to %s: %s; %s says valid", sr_code_name(o->code), o->msg, path);
        bad = 1;
    } else {
        cJSON *doc = line2 ? cJSON_Parse(line2) : NULL;
        const cJSON *ents = cJSON_GetObjectItemCaseSensitive(doc, "entries");
        size_t n = (size_t)cJSON_GetArraySize(ents), i = 0;
        if (!cJSON_IsArray(ents) || n != o->count) {
            snprintf(buf, cap, "%zu entries, %s lists %zu", o->count, path, n);
            bad = 1;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, ents)
        {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "path");
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes");
            size_t want = cJSON_IsNumber(b) ? (size_t)b->valuedouble : 0;
            if (!bad && i < o->count &&
                (!cJSON_IsString(p) || strcmp(p->valuestring, o->path[i]) ||
                 want != o->nbytes[i])) {
                snprintf(buf, cap, "entry %zu: %s %zu bytes, %s says %s %zu bytes", i, o->path[i],
                         o->nbytes[i], path, cJSON_IsString(p) ? p->valuestring : "?", want);
                bad = 1;
            }
            i++;
        }
        cJSON_Delete(doc);
    }
    free(exp);
    snprintf(path, sizeof(path), "%s.offset", stem);
    char *off = bad ? NULL : read_file(path, NULL);
    if (off) {
        long long want = strtoll(off, NULL, 10);
        if (o->offset != want) {
            snprintf(buf, cap, "error offset %lld, %s says %lld", (long long)o->offset, path, want);
            bad = 1;
        }
        free(off);
    }
    return bad;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The dialect of a golden body: the "dialect" of its .expected, else told from its keys (skyrl
 * when none tells); -2 when its keys tell two dialects and .expected says dialect.ambiguous. */
static int dialect_of(const char *stem, const char *body, size_t len)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s.expected", stem);
    char *exp = read_file(path, NULL);
    const char *at = exp ? strstr(exp, "\"dialect\":\"") : NULL;
    int d = -1;
    if (at) {
        char name[32] = "";
        sscanf(at + 11, "%31[^\"]", name);
        d = sr_dialect_lookup(name);
    } else {
        sr_err e = SR_ERR_INIT;
        d = sr_dialect_sniff(body, len, NULL, &e);
        if (d < 0 && exp && strstr(exp, "error dialect.ambiguous"))
            d = -2;
    }
    free(exp);
    return d;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: splice_golden FIXTURES_DIR (fixtures/bodies)\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        fprintf(stderr, "splice_golden: cannot open %s\n", argv[1]);
        return 2;
    }
    char *names[512];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 512) {
        size_t L = strlen(de->d_name);
        if (L > 5 && strcmp(de->d_name + L - 5, ".body") == 0)
            names[n++] = strndup(de->d_name, L - 5);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), by_name);
    sr_fields *reg[SR_DIALECT_COUNT] = {0};
    sr_err err = SR_ERR_INIT;
    for (int k = 0; k < SR_DIALECT_COUNT; k++)
        if (sr_fields_new(&reg[k], &err) || sr_dialect_add_fields(reg[k], (sr_dialect)k, &err)) {
            fprintf(stderr, "splice_golden: %s\n", err.msg);
            return 2;
        }
    int failed = 0, checked = 0;
    static outcome ref, got;
    for (size_t i = 0; i < n; i++) {
        char stem[1100], path[1200], why[2600];
        snprintf(stem, sizeof(stem), "%s/%s", argv[1], names[i]);
        snprintf(path, sizeof(path), "%s.args", stem);
        char *args = read_file(path, NULL);
        if (args) {
            printf("skip: %s (check-body arguments in %s.args)\n", names[i], names[i]);
            free(args);
            continue;
        }
        size_t len = 0;
        snprintf(path, sizeof(path), "%s.body", stem);
        char *body = read_file(path, &len);
        int bad = !body;
        if (bad)
            snprintf(why, sizeof(why), "cannot read %s", path);
        int dl = bad ? SR_DIALECT_SKYRL : dialect_of(stem, body, len);
        if (dl == -2) { /* told two dialects: check-body's refusal, nothing to splice */
            printf("ok: %s (dialect.ambiguous)\n", names[i]);
            checked++;
            free(body);
            continue;
        }
        const sr_fields *fields = reg[dl < 0 ? SR_DIALECT_SKYRL : dl];
        for (size_t m = 0; !bad && m < sizeof(k_modes) / sizeof(k_modes[0]); m++) {
            splice_once(m ? &got : &ref, fields, &k_modes[m], body, len);
            char diff[1200];
            if (m && differ(diff, sizeof(diff), &ref, &got)) {
                snprintf(why, sizeof(why), "%s differs from one-shot: %s", k_modes[m].name, diff);
                bad = 1;
            }
        }
        if (!bad && against_golden(why, sizeof(why), &ref, stem))
            bad = 1;
        printf("%s: %s%s%s\n", bad ? "FAIL" : "ok", names[i], bad ? ": " : "", bad ? why : "");
        failed += bad;
        checked++;
        free(body);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    for (int k = 0; k < SR_DIALECT_COUNT; k++)
        sr_fields_free(reg[k]);
    printf("%d of %d golden bodies agree in all %zu ways of splicing\n", checked - failed, checked,
           sizeof(k_modes) / sizeof(k_modes[0]));
    return failed || checked < 14 ? 1 : 0;
}
