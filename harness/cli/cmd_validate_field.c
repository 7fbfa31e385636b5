/*
 * syncroll validate-field: runs the new-field battery (validate_field.h) on every packed field of
 * a field-definition file, against bodies a mock engine produces with the field beside the
 * routes, and says whether each field is ready to ship.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "cmd_validate_field_priv.h"
#include "commands.h"
#include "run/procs.h"
#include "sr_buf.h"
#include "sr_fields.h"
#include "run/validate_field.h"
#include "spec/dialect.h"
#include "spec/stack.h"

/* The help, a printf format; %s: how a field travels in each dialect (from the dialect
 * table). */
static const char USAGE[] =
    "usage: syncroll validate-field [--seed N] [--rows N] [--dialect D] [--stack S]\n"
    "                               [--producer P.json] FIELD.json\n"
    "\n"
    "Validates new packed side-channel fields before they ship. FIELD.json holds their\n"
    "definitions in the registry format of lib/sr_fields.h ({\"fields\": [{\"name\": ...,\n"
    "\"dtypes\": [...], \"ndim\": N, ...}]}, as `check-body --field-registry` reads). A mock\n"
    "engine is started that emits every field beside routed_experts (a field it does not know\n"
    "from its definition, with seeded values inside the contract; rollout_sample_support from its\n"
    "own generator), and for each packed field the battery checks: emit (every response carries\n"
    "it, in a listed dtype, with the declared \"shape\" such as [\"T\", 8] and \"range\": else\n"
    "fields.shape_mismatch or fields.out_of_range, in every wire), round-trip (splice +\n"
    "decode give the engine's values, one-shot and streamed; every listed dtype survives\n"
    "pack -> splice -> decode), null (accepted exactly\n"
    "when nullable), fault (every packed-corruption fault of the engine aimed at the field gives\n"
    "its named error), one-pass (one pass over each body with the field registered), and\n"
    "reports decode throughput against memcpy and bytes per token.\n"
    "\n"
    "--dialect D runs it all in the wire an engine of dialect D uses (scenarios/FORMAT.md 5b):\n"
    "the engine serves D's generate route,\n"
    "the client's registry is D's (sr_dialect_add_fields) plus the file's definitions converted\n"
    "to D's wire (a definition's \"wire\" key is replaced by the converted kind), and the field\n"
    "travels as its routes do:\n"
    "%s"
    "A field the wire cannot carry FAILs the check `wire` (dialect.field_unsupported), and so do\n"
    "routed_experts and rollout_sample_support outside skyrl (the routes are the dialect's own;\n"
    "the engine emits the sample support in skyrl only). Every check runs in the dialect's\n"
    "wire but the engine's faults: its body faults act on skyrl's envelope only, so outside\n"
    "skyrl they are SKIPped and the battery corrupts the field in a clean body itself, each\n"
    "with its named error: bad_base64 (base64.invalid_char; not vllm-json), not_string\n"
    "(wire.not_string; vllm, sglang, nemo-rl), bad_leaf (nested.value; vllm-json),\n"
    "duplicate_field (json.duplicate_key; all).\n"
    "\n"
    "options:\n"
    "  --seed N         the engine's seed (default 1)\n"
    "  --rows N         token rows of the throughput body (default 30000)\n"
    "  --dialect D      the engine's wire (default skyrl); another name is a usage error\n"
    "  --stack S        the SkyRL contract (a scenario's client.stack): 2079 (default) or\n"
    "                   2086, whose engine answers rollout_sample_support only to a request\n"
    "                   that asks for it, so with that field under test (skyrl) every request\n"
    "                   carries top_k 4 and \"return_sample_support\": true\n"
    "  --producer P     the engine emits each field P.json defines from P's definition instead\n"
    "                   of FIELD.json's (a producer that breaks the contract fails emit); its\n"
    "                   \"shape\" and \"range\" state what the producer sends\n"
    "  -h, --help       show this help\n"
    "\n"
    "exit status: 0 every field is ready; 1 a check failed (or the engine could not run);\n"
    "2 usage error or a malformed definition file.\n";

/* One line per dialect of the table: its name and how a packed field travels in its wire. */
static const char *field_wires(char *dst, size_t cap)
{
    size_t len = 0;
    dst[0] = '\0';
    for (int d = 0; d < SR_DIALECT_COUNT; d++) {
        int n = snprintf(dst + len, cap - len, "  %-10s %s\n", sr_dialect_name((sr_dialect)d),
                         sr_dialect_get((sr_dialect)d)->field_wire);
        if (n < 0 || (size_t)n >= cap - len) {
            dst[len] = '\0';
            break;
        }
        len += (size_t)n;
    }
    return dst;
}

typedef struct vf_args {
    const char *path;
    uint64_t seed;
    size_t rows;
    sr_dialect dialect;
    int dialect_given;    /* --dialect: the file's definitions are converted to its wire */
    const char *producer; /* --producer: the definitions the engine emits from, or NULL */
    sr_stack stack;       /* --stack (spec/stack.h): the engine's and the requests' contract */
    int capture;          /* 2086 in skyrl with rollout_sample_support under test: every
                             request asks for it (top_k 4, "return_sample_support": true) */
} vf_args;

static int parse_args(vf_args *a, int argc, char **argv)
{
    a->path = NULL;
    a->seed = 1;
    a->rows = 30000;
    a->dialect = SR_DIALECT_SKYRL;
    a->dialect_given = 0;
    a->producer = NULL;
    a->stack = SR_STACK_2079;
    a->capture = 0;
    for (int i = 1; i < argc; i++) {
        long long v;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            char wires[2048];
            printf(USAGE, field_wires(wires, sizeof(wires)));
            return -1;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc &&
                   sr_arg_int(argv[i + 1], 0, (1LL << 53), &v) == 0) {
            a->seed = (uint64_t)v;
            i++;
        } else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc &&
                   sr_arg_int(argv[i + 1], 1, 1 << 24, &v) == 0) {
            a->rows = (size_t)v;
            i++;
        } else if (strcmp(argv[i], "--dialect") == 0 && i + 1 < argc) {
            int d;
            if (sr_arg_dialect("validate-field", "--dialect", argv[i + 1], &d))
                return SR_EXIT_USAGE;
            i++;
            a->dialect = (sr_dialect)d;
            a->dialect_given = 1;
        } else if (strcmp(argv[i], "--stack") == 0 && i + 1 < argc) {
            int st = sr_stack_lookup(argv[++i]);
            if (st < 0) {
                fprintf(stderr,
                        "syncroll validate-field: --stack must be 2079 or 2086, not '%.40s'\n",
                        argv[i]);
                return SR_EXIT_USAGE;
            }
            a->stack = (sr_stack)st;
        } else if (strcmp(argv[i], "--producer") == 0 && i + 1 < argc) {
            a->producer = argv[++i];
        } else if (argv[i][0] == '-' || a->path) {
            fprintf(stderr, "syncroll validate-field: bad argument '%s' (see --help)\n", argv[i]);
            return SR_EXIT_USAGE;
        } else {
            a->path = argv[i];
        }
    }
    if (!a->path) {
        fprintf(stderr, "syncroll validate-field: no FIELD.json given (see --help)\n");
        return SR_EXIT_USAGE;
    }
    return 0;
}

/* One packed field of the file under test: its definition (what the engine emits from) and the
 * registry entry that reads it in the dialect's wire, or why the wire cannot carry it. */
typedef struct vf_field {
    sr_field_def src;
    sr_field_def emit; /* what the engine emits from: src, or --producer's definition */
    sr_field_def wire;
    int refused; /* sr_code (dialect.field_unsupported), 0 when carried */
    char why[SR_ERR_MSG_MAX];
} vf_field;

/* A field the engine emits from its own generator rather than from the definition. */
static int engine_native(const sr_field_def *d)
{
    return strcmp(d->name, "routed_experts") == 0 || strcmp(d->name, "rollout_sample_support") == 0;
}

/* Whether field i of the file is under test: packed, or (with --dialect) a string wire's
 * definition, whose packed form is converted to the dialect's wire. */
static int under_test(const sr_field_def *d, const vf_args *a)
{
    return d->kind == SR_FIELD_PACKED || (a->dialect_given && d->kind == SR_FIELD_STRING);
}

/* The packed form of a definition (a string wire's definition loses its wire). */
static sr_field_def packed(const sr_field_def *d)
{
    sr_field_def p = *d;
    p.kind = SR_FIELD_PACKED;
    p.wire = SR_WIRE_RAW;
    return p;
}

/* The fields under test, converted to the dialect's wire; returns how many. `prod` (or NULL)
 * holds the producer's definitions, which the engine emits from in place of the file's. */
static size_t wire_fields(vf_field *out, const sr_fields *file, const sr_fields *prod,
                          const vf_args *a)
{
    size_t n = 0;
    for (size_t i = 0; i < sr_fields_count(file); i++) {
        const sr_field_def *d = sr_fields_at(file, i);
        if (!under_test(d, a))
            continue;
        vf_field *f = &out[n++];
        memset(f, 0, sizeof(*f));
        f->src = packed(d);
        const sr_field_def *pd = prod ? sr_fields_find(prod, d->name, d->name_len) : NULL;
        f->emit = pd && (pd->kind == SR_FIELD_PACKED || pd->kind == SR_FIELD_STRING) ? packed(pd)
                                                                                     : f->src;
        sr_err e = SR_ERR_INIT;
        sr_field_def unused;
        if (a->dialect != SR_DIALECT_SKYRL && engine_native(d)) {
            f->refused =
                sr_err_set(&e, SR_E_DIALECT_FIELD, "%s cannot be carried in the %s wire: %s",
                           d->name, sr_dialect_name(a->dialect),
                           strcmp(d->name, "routed_experts") == 0
                               ? "it is the dialect's own route field"
                               : "the engine emits it in skyrl's envelope only");
        } else {
            f->refused = sr_dialect_field_def(&f->wire, &f->src, a->dialect, &e);
            if (!f->refused && pd)
                f->refused = sr_dialect_field_def(&unused, &f->emit, a->dialect, &e);
        }
        if (f->refused)
            snprintf(f->why, sizeof(f->why), "%s", e.msg);
    }
    return n;
}

/* The client's registry: the file's other entries, the carried fields in the dialect's wire,
 * then the entries that read the dialect's responses (skyrl: the built-ins) that they do not
 * redefine. */
static int build_registry(sr_fields **out, const sr_fields *file, const vf_field *fs, size_t n,
                          const vf_args *a, sr_err *err)
{
    sr_fields *reg = NULL;
    int rc = sr_fields_new(&reg, err);
    for (size_t i = 0; !rc && i < sr_fields_count(file); i++)
        if (!under_test(sr_fields_at(file, i), a))
            rc = sr_fields_add(reg, sr_fields_at(file, i), err);
    for (size_t i = 0; !rc && i < n; i++)
        if (!fs[i].refused)
            rc = sr_fields_add(reg, &fs[i].wire, err);
    if (!rc)
        rc = sr_dialect_add_fields(reg, a->dialect, err);
    if (rc) {
        sr_fields_free(reg);
        reg = NULL;
    }
    *out = reg;
    return rc;
}

static cJSON *def_json(const sr_field_def *d)
{
    cJSON *o = cJSON_CreateObject(), *dt = cJSON_AddArrayToObject(o, "dtypes");
    cJSON_AddStringToObject(o, "name", d->name);
    for (int t = 1; t < SR_DTYPE_COUNT; t++)
        if (d->dtypes >> t & 1)
            cJSON_AddItemToArray(dt, cJSON_CreateString(sr_dtype_name((sr_dtype)t)));
    cJSON_AddNumberToObject(o, "ndim", d->ndim);
    cJSON_AddBoolToObject(o, "canonical", d->canonical);
    cJSON_AddBoolToObject(o, "nullable", d->nullable);
    cJSON_AddBoolToObject(o, "token_rows", d->token_rows);
    if (d->max_bytes)
        cJSON_AddNumberToObject(o, "max_bytes", (double)d->max_bytes);
    if (d->has_shape) {
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int a = 0; a < d->ndim; a++)
            cJSON_AddItemToArray(sh, d->dims[a] == SR_FIELD_DIM_T ? cJSON_CreateString("T")
                                     : d->dims[a] == SR_FIELD_DIM_ANY
                                         ? cJSON_CreateString("*")
                                         : cJSON_CreateNumber((double)d->dims[a]));
    }
    if (d->has_range) {
        /* Integer bounds exactly (cJSON prints doubles with 17 digits, which int64 may exceed). */
        char lo[32], hi[32];
        int ints = d->range_min != INT64_MIN || d->range_max != INT64_MAX;
        if (ints) {
            snprintf(lo, sizeof(lo), "%lld", (long long)d->range_min);
            snprintf(hi, sizeof(hi), "%lld", (long long)d->range_max);
        } else {
            snprintf(lo, sizeof(lo), "%.17g", d->range_lo);
            snprintf(hi, sizeof(hi), "%.17g", d->range_hi);
        }
        cJSON *rg = cJSON_AddArrayToObject(o, "range");
        cJSON_AddItemToArray(rg, cJSON_CreateRaw(lo));
        cJSON_AddItemToArray(rg, cJSON_CreateRaw(hi));
    }
    if (d->finite)
        cJSON_AddBoolToObject(o, "finite", 1);
    return o;
}

/* The engine's body faults act on skyrl's envelope only: other dialects run no fault request. */
static size_t n_faults(const vf_args *a)
{
    size_t nk;
    sr_vf_faults(&nk);
    return a->dialect == SR_DIALECT_SKYRL ? nk : 0;
}

/* Request ordinal (1-based) of fault k aimed at packed field f. */
static int fault_ordinal(const vf_args *a, size_t f, size_t k)
{
    return (int)(SR_VF_N_CLEAN + f * n_faults(a) + k + 1);
}

/* The engine config: the dialect, the fields beside the routes and one fault per (field, kind). */
static char *engine_config(const vf_field *fs, size_t n, const vf_args *a)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "seed", (double)a->seed);
    cJSON_AddStringToObject(r, "dialect", sr_dialect_name(a->dialect));
    cJSON_AddStringToObject(r, "stack", sr_stack_name(a->stack));
    cJSON *m = cJSON_AddObjectToObject(r, "model");
    cJSON_AddNumberToObject(m, "vocab", 1000);
    cJSON_AddNumberToObject(m, "layers", 2);
    cJSON_AddNumberToObject(m, "experts", 16);
    cJSON_AddNumberToObject(m, "topk", 4);
    cJSON *fl = cJSON_AddArrayToObject(r, "fields"), *fa = cJSON_AddArrayToObject(r, "faults");
    cJSON_AddItemToArray(fl, cJSON_CreateString("routed_experts"));
    size_t nk = n_faults(a);
    const sr_vf_fault *kinds = sr_vf_faults(&(size_t){0});
    for (size_t f = 0; f < n; f++) {
        const sr_field_def *d = &fs[f].emit;
        if (fs[f].refused)
            continue;
        if (strcmp(d->name, "rollout_sample_support") == 0)
            cJSON_AddItemToArray(fl, cJSON_CreateString(d->name));
        else if (!engine_native(d))
            cJSON_AddItemToArray(fl, def_json(d));
        for (size_t k = 0; k < nk; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "kind", kinds[k].kind);
            if (strcmp(kinds[k].kind, "respaced_json") != 0)
                cJSON_AddStringToObject(x, "field", d->name);
            if (strcmp(kinds[k].kind, "extra_envelope") == 0)
                cJSON_AddStringToObject(x, "key", "unregistered_side_channel");
            cJSON *nth = cJSON_AddArrayToObject(x, "nth");
            cJSON_AddItemToArray(nth, cJSON_CreateNumber(fault_ordinal(a, f, k)));
            cJSON_AddItemToArray(fa, x);
        }
    }
    char *txt = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return txt;
}

/* Starts the engine on `cfg` (its output into `log`), returns its URL in url. */
static int start_engine(sr_proc *p, const char *cfg, const char *log, char *url, size_t cap,
                        sr_err *err)
{
    char self[4096];
    int rc = sr_proc_self_exe(self, sizeof(self), err);
    char *argv[] = {"sh",         "-c",       "exec \"$@\" >>\"$0\" 2>&1",
                    (char *)log,  self,       "engine",
                    "--port",     "0",        "--ready-fd",
                    "3",          "--config", (char *)cfg,
                    "--lifetime", "600",      NULL};
    if (!rc)
        rc = sr_proc_spawn(p, "/bin/sh", argv, err);
    if (!rc)
        rc = sr_procs_wait_ready(p, 1, 20000, err);
    if (!rc)
        snprintf(url, cap, "http://127.0.0.1:%s", p->line);
    return rc;
}

static int write_text(const char *path, const char *text, sr_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0)
        return sr_err_set(err, SR_E_IO, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

static void describe(FILE *out, const sr_field_def *d)
{
    char dts[160], shape[128], range[96] = "";
    if (d->has_range && (d->range_min != INT64_MIN || d->range_max != INT64_MAX))
        snprintf(range, sizeof(range), ", values in [%lld, %lld]", (long long)d->range_min,
                 (long long)d->range_max);
    else if (d->has_range)
        snprintf(range, sizeof(range), ", finite values in [%.9g, %.9g]", d->range_lo, d->range_hi);
    else if (d->finite)
        snprintf(range, sizeof(range), ", finite values");
    fprintf(out, "%s  %s, %s%s, %s, %s, %s%s\n", d->name,
            sr_dtype_set_str(d->dtypes, dts, sizeof(dts)), d->has_shape ? "shape " : "ndim ",
            d->has_shape ? sr_field_shape_str(d, shape, sizeof(shape))
                         : (snprintf(shape, sizeof(shape), "%d", d->ndim), shape),
            d->nullable ? "nullable" : "not nullable",
            d->token_rows ? "token rows" : "no token rows",
            d->canonical ? "canonical" : "not canonical", range);
}

/* Runs the battery on every packed field; returns the exit status. */
static int battery(const vf_args *a, const sr_fields *reg, const vf_field *fs, size_t n,
                   const sr_vf_capture *cap, sr_err *err)
{
    sr_vf_body *bodies = calloc(cap->n, sizeof(*bodies));
    if (!bodies) {
        sr_err_set(err, SR_E_NOMEM, "cannot allocate the body list");
        return SR_EXIT_FAIL;
    }
    for (size_t i = 0; i < cap->n; i++) {
        bodies[i].data = cap->bodies[i].data;
        bodies[i].len = cap->bodies[i].len;
        bodies[i].prompt = cap->prompts + i * SR_VF_PROMPT_MAX;
        bodies[i].P = cap->P[i];
    }
    size_t ready = 0;
    int rc = 0;
    for (size_t f = 0; !rc && f < n; f++) {
        describe(stdout, &fs[f].src);
        if (fs[f].refused) {
            printf("  %-4s  %-10s  %s: %s\n", "FAIL", "wire", sr_code_name(fs[f].refused),
                   fs[f].why);
            printf("NOT READY %s\n", fs[f].src.name);
            continue;
        }
        const sr_field_def *d = sr_fields_find(reg, fs[f].src.name, fs[f].src.name_len);
        sr_vf_input in = {reg,
                          d,
                          &fs[f].src,
                          &fs[f].emit,
                          !engine_native(d),
                          a->dialect,
                          a->seed,
                          bodies,
                          SR_VF_N_CLEAN,
                          n_faults(a) ? bodies + fault_ordinal(a, f, 0) - 1 : NULL,
                          a->rows,
                          stdout};
        int failed = 0;
        rc = sr_vf_run(&failed, &in, err);
        if (!rc) {
            printf("%s %s\n", failed ? "NOT READY" : "READY", d->name);
            ready += failed == 0;
        }
    }
    free(bodies);
    if (rc)
        return SR_EXIT_FAIL;
    printf("%s: %zu of %zu packed fields ready\n", a->path, ready, n);
    return ready == n ? SR_EXIT_OK : SR_EXIT_FAIL;
}

static int run(const vf_args *a, const sr_fields *reg, const vf_field *fs, size_t n, sr_err *err)
{
    char dir[] = "/tmp/syncroll-validate-field-XXXXXX", cfg[128], log[128], url[160];
    if (!mkdtemp(dir)) {
        sr_err_set(err, SR_E_IO, "cannot create a work directory: %s", strerror(errno));
        return SR_EXIT_FAIL;
    }
    snprintf(cfg, sizeof(cfg), "%s/engine.json", dir);
    snprintf(log, sizeof(log), "%s/engine.log", dir);
    size_t nk = n_faults(a);
    sr_vf_capture cap = {NULL, NULL, NULL, SR_VF_N_CLEAN + n * nk};
    cap.bodies = calloc(cap.n, sizeof(*cap.bodies));
    cap.prompts = calloc(cap.n * SR_VF_PROMPT_MAX, sizeof(*cap.prompts));
    cap.P = calloc(cap.n, sizeof(*cap.P));
    char *text = engine_config(fs, n, a);
    sr_proc p = SR_PROC_INIT;
    int rc = cap.bodies && cap.prompts && cap.P && text
                 ? 0
                 : sr_err_set(err, SR_E_NOMEM, "cannot allocate the captures");
    if (!rc)
        rc = write_text(cfg, text, err);
    if (!rc)
        rc = start_engine(&p, cfg, log, url, sizeof(url), err);
    if (!rc)
        printf("validate-field: %s: %zu packed field(s); engine %s (seed %llu, dialect %s: %s) "
               "emits them beside routed_experts; %d clean responses, %zu faulted\n",
               a->path, n, url, (unsigned long long)a->seed, sr_dialect_name(a->dialect),
               sr_dialect_get(a->dialect)->routes[0].path, SR_VF_N_CLEAN, n * nk);
    if (!rc)
        rc = sr_vf_capture_all(&cap, url, a->dialect, a->capture, err);
    if (p.pid > 0)
        sr_procs_stop(&p, 1, 2000);
    int status = SR_EXIT_FAIL;
    if (!rc)
        status = battery(a, reg, fs, n, &cap, err);
    else
        fprintf(stderr,
                "syncroll validate-field: the engine could not run; its config and log are in %s\n",
                dir);
    if (!rc) {
        unlink(cfg);
        unlink(log);
        rmdir(dir);
    }
    for (size_t i = 0; cap.bodies && i < cap.n; i++)
        sr_buf_release(&cap.bodies[i]);
    free(cap.bodies);
    free(cap.prompts);
    free(cap.P);
    cJSON_free(text);
    return status;
}

int sr_cmd_validate_field(int argc, char **argv)
{
    vf_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? SR_EXIT_OK : rc;
    sr_err err = SR_ERR_INIT;
    sr_fields *file = NULL, *reg = NULL;
    vf_field *fs = calloc(SR_FIELDS_MAX, sizeof(*fs));
    size_t n = 0;
    if (!fs)
        rc = sr_err_set(&err, SR_E_NOMEM, "cannot allocate the field list");
    sr_fields *prod = NULL;
    if (!rc && a.producer && !(rc = sr_fields_new(&prod, &err)))
        rc = sr_fields_load_file(prod, a.producer, &err);
    if (!rc && !(rc = sr_fields_new(&file, &err)) &&
        !(rc = sr_fields_load_file(file, a.path, &err))) {
        n = wire_fields(fs, file, prod, &a);
        rc = build_registry(&reg, file, fs, n, &a, &err);
    }
    if (rc) {
        fprintf(stderr, "syncroll validate-field: %s: %s\n", sr_code_name(rc), err.msg);
        sr_fields_free(file);
        sr_fields_free(prod);
        free(fs);
        return rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE;
    }
    int status;
    if (n == 0) {
        fprintf(stderr,
                "syncroll validate-field: %s defines no packed field (a definition with a "
                "\"wire\" key is validated with --dialect, in that dialect's wire)\n",
                a.path);
        status = SR_EXIT_USAGE;
    } else {
        /* The later stack answers the support only to a request that asks for it. */
        const char *ss = "rollout_sample_support";
        a.capture = a.stack == SR_STACK_2086 && a.dialect == SR_DIALECT_SKYRL &&
                    sr_fields_find(file, ss, strlen(ss)) != NULL;
        status = run(&a, reg, fs, n, &err);
        if (err.code)
            fprintf(stderr, "syncroll validate-field: %s: %s\n", sr_code_name(err.code), err.msg);
    }
    sr_fields_free(reg);
    sr_fields_free(file);
    sr_fields_free(prod);
    free(fs);
    return status;
}
