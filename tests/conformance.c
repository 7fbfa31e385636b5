/*
 * The conformance corpus runner (fixtures/conformance/README.md describes the format): every
 * NAME.body with its NAME.expect goes through `syncroll check-body --json` (exit status, error
 * name and class, entries) and through libsyncroll's splice one-shot, threaded and streamed in
 * 7-byte chunks (error name and class, or entries with the FNV-1a hash of their decoded bytes).
 * Every route must give the outcome the .expect file states.
 *
 * usage: conformance SYNCROLL SOURCE_DIR [NAME...]   (NAMEs: run only these cases)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sr_err.h"
#include "sr_buf.h"
#include "sr_fields.h"
#include "sr_file.h"
#include "sr_json.h"
#include "sr_splice.h"
#include "spec/dialect.h"

#define MAX_ENTRIES  64
#define LINE_MAX_LEN 4096

typedef struct expect_entry {
    char path[512], kind[16], dtype[16], shape[64], min[32], max[32], hash[32];
} expect_entry;

typedef struct expect {
    char ref[LINE_MAX_LEN], args[LINE_MAX_LEN];
    int ok;        /* expect: ok */
    char name[64]; /* expect: error NAME CLASS */
    char cls[16];
    expect_entry e[MAX_ENTRIES];
    size_t n;
} expect;

static int g_failures;

static void fail(const char *name, const char *route, const char *fmt, const char *a, const char *b)
{
    printf("FAIL %s [%s]: ", name, route);
    printf(fmt, a ? a : "(none)", b ? b : "(none)");
    printf("\n");
    g_failures++;
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

/* Copies the next space-separated word of *s into w (size cap). */
static int word(const char **s, char *w, size_t cap)
{
    const char *p = *s;
    while (*p == ' ')
        p++;
    size_t n = 0;
    while (*p && *p != ' ' && n + 1 < cap)
        w[n++] = *p++;
    w[n] = '\0';
    *s = p;
    return n > 0;
}

static int parse_expect(const char *path, expect *x)
{
    memset(x, 0, sizeof(*x));
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[LINE_MAX_LEN];
    int have_expect = 0, bad = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *v = strchr(line, ':');
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (!v) {
            bad = 1;
            break;
        }
        size_t klen = (size_t)(v - line);
        v++;
        while (*v == ' ')
            v++;
        if (klen == 3 && strncmp(line, "ref", 3) == 0) {
            snprintf(x->ref, sizeof(x->ref), "%s", v);
        } else if (klen == 4 && strncmp(line, "args", 4) == 0) {
            snprintf(x->args, sizeof(x->args), "%s", v);
        } else if (klen == 6 && strncmp(line, "expect", 6) == 0) {
            char w[64];
            word(&v, w, sizeof(w));
            have_expect = 1;
            if (strcmp(w, "ok") == 0)
                x->ok = 1;
            else if (strcmp(w, "error") != 0 || !word(&v, x->name, sizeof(x->name)) ||
                     !word(&v, x->cls, sizeof(x->cls)))
                bad = 1;
        } else if (klen == 5 && strncmp(line, "entry", 5) == 0 && x->n < MAX_ENTRIES) {
            expect_entry *e = &x->e[x->n++];
            if (!word(&v, e->path, sizeof(e->path)) || !word(&v, e->kind, sizeof(e->kind)))
                bad = 1;
            else if (strcmp(e->kind, "null") != 0 &&
                     (!word(&v, e->dtype, sizeof(e->dtype)) ||
                      !word(&v, e->shape, sizeof(e->shape)) || !word(&v, e->min, sizeof(e->min)) ||
                      !word(&v, e->max, sizeof(e->max)) || !word(&v, e->hash, sizeof(e->hash))))
                bad = 1;
        } else {
            bad = 1;
        }
    }
    fclose(f);
    if (bad || !have_expect || !x->ref[0])
        return -1;
    return 0;
}

static uint64_t fnv1a64(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static const char *kind_name(sr_splice_kind k)
{
    return k == SR_SPLICE_ENVELOPE ? "envelope"
           : k == SR_SPLICE_NULL   ? "null"
           : k == SR_SPLICE_STRING ? "string"
           : k == SR_SPLICE_NESTED ? "nested"
                                   : "int_array";
}

static void shape_text(const sr_ndarray *a, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int d = 0; d < a->ndim && n < cap; d++)
        n += (size_t)snprintf(out + n, cap - n, "%s%lld", d ? "," : "", (long long)a->shape[d]);
    if (n < cap)
        snprintf(out + n, cap - n, "]");
}

/* ---- the library route ---- */

typedef struct lib_opts {
    char fields[LINE_MAX_LEN], registry[LINE_MAX_LEN];
    long long expected;
    int dialect; /* --dialect: that dialect's registry (harness/spec/dialect.h) */
} lib_opts;

static int parse_args(const char *args, lib_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->expected = -1;
    const char *s = args;
    char w[LINE_MAX_LEN];
    while (word(&s, w, sizeof(w))) {
        char v[LINE_MAX_LEN];
        if (!word(&s, v, sizeof(v)))
            return -1;
        if (strcmp(w, "--fields") == 0)
            snprintf(o->fields, sizeof(o->fields), "%s", v);
        else if (strcmp(w, "--field-registry") == 0)
            snprintf(o->registry, sizeof(o->registry), "%s", v);
        else if (strcmp(w, "--expected-length") == 0)
            o->expected = atoll(v);
        else if (strcmp(w, "--dialect") == 0 && sr_dialect_lookup(v) >= 0)
            o->dialect = sr_dialect_lookup(v);
        else
            return -1;
    }
    return 0;
}

static sr_fields *make_registry(const lib_opts *o, sr_err *err)
{
    sr_fields *f = NULL;
    /* As check-body: the file's definitions replace built-ins of the same name. */
    if (sr_fields_new(&f, err) || (o->registry[0] && sr_fields_load_file(f, o->registry, err)) ||
        sr_dialect_add_fields(f, (sr_dialect)o->dialect, err)) {
        sr_fields_free(f);
        return NULL;
    }
    if (!o->fields[0])
        return f;
    char list[LINE_MAX_LEN];
    snprintf(list, sizeof(list), "%s", o->fields);
    const char *names[SR_FIELDS_MAX + 1];
    size_t n = 0;
    for (char *t = strtok(list, ","); t && n <= SR_FIELDS_MAX; t = strtok(NULL, ","))
        names[n++] = t;
    sr_fields *narrow = NULL;
    int rc = sr_fields_narrow(&narrow, f, names, n, err);
    sr_fields_free(f);
    return rc ? NULL : narrow;
}

/* Compares one splice outcome with the expectation. */
static void check_lib(const char *name, const char *route, const expect *x, int rc,
                      const sr_err *err, const sr_splice_result *r)
{
    if (!x->ok) {
        const char *got = rc ? sr_code_name(rc) : "ok";
        if (!rc || strcmp(got, x->name) != 0)
            fail(name, route, "expected error %s, got %s", x->name, got);
        else if (strcmp(sr_class_name(sr_code_class(rc)), x->cls) != 0)
            fail(name, route, "expected class %s, got %s", x->cls,
                 sr_class_name(sr_code_class(rc)));
        return;
    }
    if (rc) {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s: %s", sr_code_name(rc), err->msg);
        fail(name, route, "expected ok, got %s%s", msg, "");
        return;
    }
    if (r->count != x->n) {
        char a[32], b[32];
        snprintf(a, sizeof(a), "%zu", x->n);
        snprintf(b, sizeof(b), "%zu", r->count);
        fail(name, route, "expected %s entries, got %s", a, b);
        return;
    }
    for (size_t i = 0; i < r->count; i++) {
        const sr_splice_entry *e = &r->entries[i];
        const expect_entry *w = &x->e[i];
        if (strcmp(e->path, w->path) != 0 || strcmp(kind_name(e->kind), w->kind) != 0) {
            fail(name, route, "entry path/kind: expected %s, got %s", w->path, e->path);
            continue;
        }
        if (e->kind == SR_SPLICE_NULL)
            continue;
        char shape[64], hash[32];
        shape_text(&e->array, shape, sizeof(shape));
        snprintf(hash, sizeof(hash), "%016llx",
                 (unsigned long long)fnv1a64(e->array.data, e->array.nbytes));
        if (strcmp(sr_dtype_name(e->array.dtype), w->dtype) != 0)
            fail(name, route, "dtype: expected %s, got %s", w->dtype,
                 sr_dtype_name(e->array.dtype));
        if (strcmp(shape, w->shape) != 0)
            fail(name, route, "shape: expected %s, got %s", w->shape, shape);
        if (strcmp(hash, w->hash) != 0)
            fail(name, route, "fnv1a64 of the decoded bytes: expected %s, got %s", w->hash, hash);
    }
}

static void run_lib(const char *name, const expect *x, const char *body, size_t len)
{
    lib_opts o;
    sr_err err = SR_ERR_INIT;
    if (parse_args(x->args, &o)) {
        fail(name, "args", "unsupported args '%s'%s", x->args, "");
        return;
    }
    sr_fields *f = make_registry(&o, &err);
    if (!f) {
        fail(name, "registry", "%s%s", err.msg, "");
        return;
    }
    for (int route = 0; route < 4; route++) {
        sr_splice_opts so = SR_SPLICE_OPTS_INIT;
        if (route == 1) {
            so.threads = 2;
            so.par_window = 16;
        }
        sr_splicer *s = NULL;
        const sr_splice_result *r = NULL;
        sr_err e = SR_ERR_INIT;
        if (sr_splicer_new(&s, f, &so, &e)) {
            fail(name, "splicer", "%s%s", e.msg, "");
            break;
        }
        int rc;
        const char *rname;
        if (route <= 1) {
            rname = route ? "one-shot, 2 threads" : "one-shot";
            rc = sr_splice(s, body, len, o.expected, &r, &e);
        } else {
            /* Streamed in 7-byte chunks, with the announced length and without. */
            rname = route == 2 ? "streamed 7-byte chunks" : "streamed 7-byte chunks, length known";
            int64_t exp = route == 3 && o.expected < 0 ? (int64_t)len : o.expected;
            rc = sr_splice_stream_begin(s, exp, &e);
            for (size_t i = 0; !rc && i < len; i += 7)
                rc = sr_splice_stream_feed(s, body + i, len - i < 7 ? len - i : 7, &e);
            if (!rc)
                rc = sr_splice_stream_finish(s, &r, &e);
        }
        check_lib(name, rname, x, rc, &e, r);
        sr_splicer_free(s);
    }
    sr_fields_free(f);
}

/* ---- the check-body route ---- */

static const char *exit_class(int status)
{
    switch (status) {
    case 0:
        return "ok";
    case 2:
        return "usage";
    case 3:
        return "protocol";
    case 4:
        return "transient";
    default:
        return "resource-or-internal";
    }
}

/* The text of a value of the one-line document `text` (a number as written), to free. */
static char *value_text(const sr_json_doc *doc, const char *text, const cJSON *node)
{
    int line, col;
    if (!cJSON_IsNumber(node) || sr_json_where(doc, node, 0, &line, &col) != 0 || line != 1)
        return node ? cJSON_PrintUnformatted(node) : NULL;
    const char *p = text + col - 1;
    size_t k = strspn(p, "-+0123456789.eE");
    char *r = malloc(k + 1);
    if (r) {
        memcpy(r, p, k);
        r[k] = '\0';
    }
    return r;
}

static void run_cli(const char *name, const expect *x, const char *syncroll, const char *body_path)
{
    char cmd[8 * LINE_MAX_LEN];
    snprintf(cmd, sizeof(cmd), "\"%s\" check-body --json %s \"%s\" 2>/dev/null", syncroll, x->args,
             body_path);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fail(name, "check-body", "cannot run %s%s", cmd, "");
        return;
    }
    static char out[1 << 20];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    const char *want_class = x->ok ? "ok" : x->cls;
    const char *got_class = exit_class(status);
    int class_ok = strcmp(want_class, got_class) == 0 ||
                   (strcmp(got_class, "resource-or-internal") == 0 &&
                    (strcmp(want_class, "resource") == 0 || strcmp(want_class, "internal") == 0));
    if (!class_ok)
        fail(name, "check-body exit status", "expected %s, got %s", want_class, got_class);
    /* sr_json keeps the source text, so min/max are compared as check-body printed them (exact
     * integers beyond 2^53, %.17g floats), not as cJSON's doubles. */
    sr_json_doc *doc = NULL;
    sr_err perr = SR_ERR_INIT;
    const cJSON *j =
        sr_json_parse(&doc, out, n, "check-body output", 0, &perr) == 0 ? sr_json_root(doc) : NULL;
    if (!j) {
        fail(name, "check-body --json", "output is not JSON: %s%s", out, "");
        return;
    }
    if (!x->ok) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
        const char *cl = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "class"));
        if (!nm || strcmp(nm, x->name) != 0)
            fail(name, "check-body --json", "expected error %s, got %s", x->name, nm);
        if (!cl || strcmp(cl, x->cls) != 0)
            fail(name, "check-body --json", "expected class %s, got %s", x->cls, cl);
        /* Only the stricter-than-reference refusal is one the reference would not make. */
        int strict = strcmp(x->name, "intarray.stricter_than_reference") == 0;
        const cJSON *ra = cJSON_GetObjectItemCaseSensitive(e, "reference_accepts");
        if (!cJSON_IsBool(ra) || cJSON_IsTrue(ra) != strict)
            fail(name, "check-body --json", "error.reference_accepts should be %s%s",
                 strict ? "true" : "false", "");
        sr_json_free(doc);
        return;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "entries");
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "valid")) ||
        (size_t)cJSON_GetArraySize(list) != x->n) {
        fail(name, "check-body --json", "expected %s entries, got %s", "the listed", out);
        sr_json_free(doc);
        return;
    }
    size_t i = 0;
    for (const cJSON *e = list ? list->child : NULL; e; e = e->next, i++) {
        const expect_entry *w = &x->e[i];
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "path"));
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "kind"));
        if (!path || !kind || strcmp(path, w->path) != 0 || strcmp(kind, w->kind) != 0) {
            fail(name, "check-body --json", "entry: expected %s, got %s", w->path, path);
            continue;
        }
        if (strcmp(kind, "null") == 0)
            continue;
        const char *dt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "dtype"));
        char *shape = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "shape"));
        char *mn = value_text(doc, out, cJSON_GetObjectItemCaseSensitive(e, "min"));
        char *mx = value_text(doc, out, cJSON_GetObjectItemCaseSensitive(e, "max"));
        const char *want_min = strcmp(w->min, "-") == 0 ? "null" : w->min;
        const char *want_max = strcmp(w->max, "-") == 0 ? "null" : w->max;
        if (!dt || strcmp(dt, w->dtype) != 0)
            fail(name, "check-body --json", "dtype: expected %s, got %s", w->dtype, dt);
        if (!shape || strcmp(shape, w->shape) != 0)
            fail(name, "check-body --json", "shape: expected %s, got %s", w->shape, shape);
        if (!mn || strcmp(mn, want_min) != 0)
            fail(name, "check-body --json", "min: expected %s, got %s", want_min, mn);
        if (!mx || strcmp(mx, want_max) != 0)
            fail(name, "check-body --json", "max: expected %s, got %s", want_max, mx);
        free(shape);
        free(mn);
        free(mx);
    }
    sr_json_free(doc);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: conformance SYNCROLL SOURCE_DIR [NAME...]\n");
        return 2;
    }
    const char *syncroll = argv[1];
    char dir[LINE_MAX_LEN];
    snprintf(dir, sizeof(dir), "fixtures/conformance");
    /* Relative paths in args (--field-registry) are relative to the source directory. */
    if (chdir(argv[2]) != 0) {
        perror(argv[2]);
        return 2;
    }
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 2;
    }
    char *names[4096];
    size_t n = 0;
    for (struct dirent *de; (de = readdir(d)) && n < 4096;) {
        size_t L = strlen(de->d_name);
        if (L > 5 && strcmp(de->d_name + L - 5, ".body") == 0)
            names[n++] = strndup(de->d_name, L - 5);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_str);
    size_t ran = 0;
    for (size_t i = 0; i < n; i++) {
        int wanted = argc == 3;
        for (int a = 3; a < argc; a++)
            wanted |= strcmp(argv[a], names[i]) == 0;
        if (!wanted)
            continue;
        char bp[3 * LINE_MAX_LEN], ep[3 * LINE_MAX_LEN];
        snprintf(bp, sizeof(bp), "%s/%s.body", dir, names[i]);
        snprintf(ep, sizeof(ep), "%s/%s.expect", dir, names[i]);
        expect *x = malloc(sizeof(*x));
        size_t len = 0;
        char *body = read_file(bp, &len);
        int before = g_failures;
        if (!x || !body) {
            fail(names[i], "read", "cannot read %s%s", bp, "");
        } else if (parse_expect(ep, x)) {
            fail(names[i], "expect", "missing or malformed %s (see README.md)%s", ep, "");
        } else {
            run_lib(names[i], x, body, len);
            run_cli(names[i], x, syncroll, bp);
        }
        if (g_failures == before)
            printf("ok   %s\n", names[i]);
        ran++;
        free(body);
        free(x);
        free(names[i]);
    }
    if (ran == 0) {
        printf("FAIL: no conformance case found in %s\n", dir);
        return 1;
    }
    printf("%zu cases, %d failures\n", ran, g_failures);
    return g_failures ? 1 : 0;
}
