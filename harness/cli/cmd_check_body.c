/* syncroll check-body: splice and validate a captured response body, print what it carries. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "args.h"
#include "cmd_check_body_priv.h"
#include "commands.h"
#include "sr_buf.h"
#include "sr_envelope.h"
#include "sr_err.h"
#include "sr_fields.h"
#include "sr_file.h"
#include "sr_splice.h"
#include "sr_stats.h"
#include "spec/dialect.h"
#include "spec/stack.h"

/* The help, a printf format; %s: the dialect names (from the dialect table). */
static const char USAGE[] =
    "usage: syncroll check-body [options] FILE|-\n"
    "\n"
    "Splices and validates a captured generate response body exactly as the client does\n"
    "(docs/reference/skyrl.md section 3 for /skyrl/v1/generate): packed blobs are cut out\n"
    "and decoded, the rest is parsed, each envelope is checked against its field's contract.\n"
    "The body is read in 64 KiB chunks and streamed through the splicer; '-' reads standard\n"
    "input.\n"
    "\n"
    "Dialects (scenarios/FORMAT.md section 5b): the body may be in any engine dialect's wire\n"
    "(%s); its route fields are then read as that\n"
    "wire carries them (.npy, raw int32 and nrlre1 strings, nested lists, dynamo's object).\n"
    "Without --dialect the dialect is told from the body's keys and printed (\"dialect: vllm\n"
    "(detected: ...)\" first, \"dialect\" in --json); a body whose keys tell none (e.g. no\n"
    "routes) is read as skyrl, and one with keys of two dialects is dialect.ambiguous (exit 2).\n"
    "\n"
    "For every registered key found\n"
    "it prints the JSON path, field, dtype and shape, byte count, whether the dtype is the\n"
    "canonical (smallest) one for the values, and min and max (exact integers; floats over\n"
    "the finite values with NaN/inf counts; bools as 0/1 with non-canonical bytes counted).\n"
    "\n"
    "Contracts: routed_experts is uint8/int16/int32, 3-D, canonical (#2079) in skyrl's\n"
    "envelope; in another dialect it has that wire's dtype rule (vllm and dynamo: uint8, or\n"
    "uint16 past 256 experts; sglang: int32; nemo-rl: int8/int16/int32), and a dtype wider\n"
    "than the values need is printed as not canonical without failing. For\n"
    "rollout_sample_support check-body applies the later stack's contract (#2082+): int32,\n"
    "2-D. The #2079 client's splice itself checks no dtype (its tests decode float32 support):\n"
    "to check a body as #2079 would, pass --stack 2079 (the same as --field-registry\n"
    "fixtures/fields/sample_support_2079.json); --stack 2086 is the default's contract\n"
    "(fixtures/fields/sample_support_2086.json). A --field-registry that defines\n"
    "rollout_sample_support itself wins over --stack.\n"
    "\n"
    "An object shaped like an envelope ({\"data\", \"shape\", \"dtype\"}) under a key no\n"
    "registry names is left to the JSON parser; it is named in a note on standard error and in\n"
    "unregistered_envelopes in --json (the body stays valid).\n"
    "\n"
    "Base64 is read as the reference's pybase64 validate=True: non-zero trailing bits in the\n"
    "last quad (\"AR==\" for the byte 1) are dropped and reported as a note (non-canonical\n"
    "encoding; b64_noncanonical in --json), not an error; a scenario's client.strict_base64\n"
    "refuses them as base64.bad_padding.\n"
    "\n"
    "options:\n"
    "  --fields a,b             splice only these registered names (packed fields or integer\n"
    "                           arrays); the others are left to the JSON parser\n"
    "  --field-registry F.json  add the definitions of F.json to the built-in registry\n"
    "                           (routed_experts, rollout_sample_support, token_ids); a\n"
    "                           definition named like a built-in replaces it; a declared\n"
    "                           \"shape\" or \"range\" is checked (fields.shape_mismatch,\n"
    "                           fields.out_of_range)\n"
    "  --stack S                the SkyRL contract of rollout_sample_support: 2079 or 2086\n"
    "                           (a scenario's client.stack; default: 2086's)\n"
    "  --dialect D              read the body as dialect D (one of the dialects above)\n"
    "                           instead of telling it from its keys\n"
    "  --expected-length N      the announced Content-Length: fewer bytes is\n"
    "                           splice.short_body, more is splice.long_body\n"
    "  --json                   print one JSON object on standard output instead of text\n"
    "  --npy-dir DIR            also write each decoded array as DIR/<i>.npy (i: its index in\n"
    "                           the entries; np.load reads it); --json names it as \"npy\"\n"
    "  -h, --help               show this help\n"
    "\n"
    "exit status: 0 valid; 3 protocol error (layout drift, orphan blob, duplicate key, nesting\n"
    "deeper than 1000, dtype, shape, byte count, non-canonical dtype, ...); 4 transient error\n"
    "(body cut inside a blob or short of its length, JSON that ends early or does not parse,\n"
    "invalid UTF-8 in a string, a number that overflows a double, a token_ids syntax error: what\n"
    "the reference client retries); 2 usage (bad option, unreadable file, bad field registry);\n"
    "1 resource or internal error. A JSON-level error (exit 4) wins over any envelope-level one,\n"
    "wherever it is in the body, as the reference parses the whole body first. Duplicate keys\n"
    "anywhere are refused (json.duplicate_key): the reference keeps the last silently.\n"
    "intarray.stricter_than_reference (exit 3) is a token_ids value the reference never checks\n"
    "(-1, 1e2, 1.0, 2^31): it is reported only if nothing else fails, with a note that the\n"
    "reference would accept the body. On error the error's dotted name is printed on standard\n"
    "error as 'syncroll check-body: <name>: <message>'.\n";

typedef struct opts {
    const char *path, *fields, *registry, *npy_dir;
    int json;
    int stack; /* --stack (spec/stack.h), -1: not given */
    int64_t expected;
    int dialect;        /* -1: tell it from the body */
    const char *source; /* "given", "detected" or "default" */
    const char *why;    /* the pattern that told it (detected) */
} opts;

static int parse_args(opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->expected = -1;
    o->dialect = -1;
    o->stack = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            char names[SR_DIALECT_NAMES_MAX];
            printf(USAGE, sr_dialect_names(names, sizeof(names), ", "));
            return -1;
        }
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else if ((strcmp(a, "--fields") == 0 || strcmp(a, "--field-registry") == 0 ||
                    strcmp(a, "--expected-length") == 0 || strcmp(a, "--dialect") == 0 ||
                    strcmp(a, "--npy-dir") == 0 || strcmp(a, "--stack") == 0) &&
                   i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(a, "--stack") == 0) {
                if ((o->stack = sr_stack_lookup(v)) < 0) {
                    fprintf(stderr,
                            "syncroll check-body: --stack must be 2079 or 2086, not '%.40s'\n", v);
                    return SR_EXIT_USAGE;
                }
            } else if (strcmp(a, "--dialect") == 0) {
                if (sr_arg_dialect("check-body", a, v, &o->dialect))
                    return SR_EXIT_USAGE;
                o->source = "given";
            } else if (strcmp(a, "--fields") == 0)
                o->fields = v;
            else if (strcmp(a, "--npy-dir") == 0)
                o->npy_dir = v;
            else if (strcmp(a, "--field-registry") == 0)
                o->registry = v;
            else {
                long long n;
                if (sr_arg_int(v, 0, LLONG_MAX, &n)) {
                    fprintf(stderr, "syncroll check-body: bad --expected-length '%s'\n", v);
                    return SR_EXIT_USAGE;
                }
                o->expected = n;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "syncroll check-body: unknown or incomplete option '%s' (see --help)\n",
                    a);
            return SR_EXIT_USAGE;
        } else if (o->path) {
            fprintf(stderr, "syncroll check-body: more than one input file\n");
            return SR_EXIT_USAGE;
        } else {
            o->path = a;
        }
    }
    if (!o->path) {
        fprintf(stderr, "syncroll check-body: no input file (use - for standard input)\n");
        return SR_EXIT_USAGE;
    }
    return 0;
}

/*
 * Everything printed here may hold bytes of the body (keys in paths, dtype names, sidecars), so
 * text output escapes every byte outside printable ASCII (\xHH, \n, \t; an escape already in
 * a message stays as it is), and JSON output replaces invalid UTF-8 by \ufffd (cJSON escapes
 * the control characters): a terminal never receives ESC or a raw newline from a body, and the
 * JSON is always valid UTF-8.
 */
static void put_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p >= 0x20 && *p < 0x7f)
            fputc(*p, f);
        else if (*p == '\n' || *p == '\t' || *p == '\r')
            fprintf(f, "\\%c", *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r');
        else
            fprintf(f, "\\x%02x", *p);
    }
}

/* Prints cJSON's text of `root` on standard output as valid UTF-8, then frees `root`. */
static void put_json(cJSON *root)
{
    char *txt = cJSON_PrintUnformatted(root);
    sr_buf b = SR_BUF_INIT;
    if (txt && sr_buf_put_json_utf8(&b, txt, strlen(txt), NULL) == 0)
        puts(b.data);
    sr_buf_release(&b);
    free(txt);
    cJSON_Delete(root);
}

static int report_error(const opts *o, const sr_err *err, int exit_code)
{
    const char *name = sr_code_name(err->code) ? sr_code_name(err->code) : "internal.bug";
    /* The one refusal the reference client would not make (sr_splice.h). */
    int reference_accepts = err->code == SR_E_INTARRAY_STRICT;
    fprintf(stderr, "syncroll check-body: %s: ", name);
    put_text(stderr, err->msg);
    fputc('\n', stderr);
    if (reference_accepts)
        fputs("syncroll check-body: note: the reference client would accept this body (it never "
              "checks integer array values); syncroll is stricter on purpose\n",
              stderr);
    if (o->json) {
        cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
        cJSON_AddBoolToObject(root, "valid", 0);
        cJSON_AddStringToObject(e, "name", name);
        cJSON_AddStringToObject(e, "class", sr_class_name(sr_code_class(err->code)));
        cJSON_AddStringToObject(e, "message", err->msg);
        cJSON_AddBoolToObject(e, "reference_accepts", reference_accepts);
        if (err->offset >= 0)
            cJSON_AddNumberToObject(e, "offset", (double)err->offset);
        else
            cJSON_AddNullToObject(e, "offset");
        cJSON_AddItemToObject(root, "error", e);
        put_json(root);
    }
    return exit_code;
}

static int build_registry(sr_fields **out, const opts *o, sr_err *err)
{
    sr_fields *f;
    int rc = sr_fields_new(&f, err);
    if (rc)
        return rc;
    /* The file's definitions first: one named like a built-in replaces it (a registry file
     * defining rollout_sample_support with any dtype selects the #2079 contract). */
    const char *ss = "rollout_sample_support";
    int by_stack = o->stack >= 0;
    if ((o->registry && (rc = sr_fields_load_file(f, o->registry, err))) ||
        (by_stack && !sr_fields_find(f, ss, strlen(ss)) &&
         (rc = sr_fields_load_json(f, sr_stack_support_json((sr_stack)o->stack),
                                   strlen(sr_stack_support_json((sr_stack)o->stack)), "--stack",
                                   err))) ||
        (rc = sr_dialect_add_fields(f, (sr_dialect)o->dialect, err))) {
        sr_fields_free(f);
        return rc;
    }
    if (o->fields) {
        char *list = strdup(o->fields);
        const char *names[SR_FIELDS_MAX + 1];
        size_t n = 0;
        for (char *tok = list ? strtok(list, ",") : NULL; tok && n <= SR_FIELDS_MAX;
             tok = strtok(NULL, ","))
            names[n++] = tok;
        sr_fields *narrow = NULL;
        rc = list ? sr_fields_narrow(&narrow, f, names, n, err)
                  : sr_err_set(err, SR_E_NOMEM, "cannot copy --fields");
        free(list);
        sr_fields_free(f);
        f = narrow;
    }
    *out = f;
    return rc;
}

/* The body read whole (to tell its dialect), fed in the same 64 KiB chunks. */
static int feed_buf(sr_splicer *s, const sr_buf *b, sr_err *err)
{
    int rc = 0;
    for (size_t at = 0; !rc && at < b->len; at += (size_t)64 << 10) {
        size_t n = b->len - at < ((size_t)64 << 10) ? b->len - at : (size_t)64 << 10;
        rc = sr_splice_stream_feed(s, b->data + at, n, err);
    }
    return rc;
}

/* Reads the body whole and tells its dialect (o->dialect, o->source, o->why). */
static int detect(opts *o, sr_buf *b, sr_err *err)
{
    int rc = strcmp(o->path, "-") == 0
                 ? sr_file_read_stream(b, stdin, "standard input", SR_SPLICE_DEFAULT_MAX_BODY, err)
                 : sr_file_read(b, o->path, SR_SPLICE_DEFAULT_MAX_BODY, err);
    if (rc)
        return rc;
    sr_err e = SR_ERR_INIT;
    int d = sr_dialect_sniff(b->data ? b->data : "", b->len, &o->why, &e);
    if (d >= 0) {
        o->dialect = d;
        o->source = "detected";
        return 0;
    }
    /* No key tells: skyrl, as before dialects; keys of two: the reader must say. */
    if (strstr(e.msg, "several dialects")) {
        *err = e;
        return e.code;
    }
    o->dialect = SR_DIALECT_SKYRL;
    o->source = "default";
    return 0;
}

static int feed_file(sr_splicer *s, const char *path, sr_err *err)
{
    FILE *fp = stdin;
    int rc = strcmp(path, "-") == 0 ? 0 : sr_file_open_regular(&fp, path, err);
    if (rc)
        return rc;
    static char chunk[64 << 10];
    size_t n;
    while (!rc && (n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
        rc = sr_splice_stream_feed(s, chunk, n, err);
    if (!rc && ferror(fp))
        rc = sr_err_set(err, SR_E_IO, "%s: read error: %s", path, strerror(errno ? errno : EIO));
    if (fp != stdin)
        fclose(fp);
    return rc;
}

/* The canonical verdict of an envelope's integer array: 1, 0, or -1 when it does not apply. */
static int canonical_of(const sr_ndarray *a, const sr_array_stats *st)
{
    sr_dtype canon;
    if (!sr_dtype_is_integer(a->dtype))
        return -1;
    if (!st->has_range) /* empty: canonical is uint8, as the reference's max of nothing is 0 */
        return a->dtype == SR_DTYPE_UINT8;
    if (st->kind == SR_STATS_SIGNED && st->imin < 0)
        return -1;
    int64_t hi = st->kind == SR_STATS_SIGNED      ? st->imax
                 : st->umax > (uint64_t)INT64_MAX ? INT64_MAX
                                                  : (int64_t)st->umax;
    return sr_routes_canonical_dtype(&canon, hi, NULL) == 0 && canon == a->dtype;
}

static const char *kind_name(sr_splice_kind k)
{
    return k == SR_SPLICE_ENVELOPE ? "envelope"
           : k == SR_SPLICE_NULL   ? "null"
           : k == SR_SPLICE_STRING ? "string"
           : k == SR_SPLICE_NESTED ? "nested"
                                   : "int_array";
}

/* min/max (exact integers, finite floats, or null) and the dtype's counts
 * (docs/reference/check-body.md, "--json output"). */
static void stats_json(cJSON *o, const sr_array_stats *st)
{
    char num[32];
    for (int m = 0; m < 2; m++) {
        const char *key = m ? "max" : "min";
        if (!st->has_range)
            cJSON_AddNullToObject(o, key);
        else if (st->kind == SR_STATS_FLOAT) /* %.17g: the double exactly (cJSON rounds) */
            cJSON_AddItemToObject(
                o, key,
                cJSON_CreateRaw((snprintf(num, 32, "%.17g", m ? st->fmax : st->fmin), num)));
        else
            cJSON_AddItemToObject(o, key, cJSON_CreateRaw(sr_stats_int_text(st, m, num, 32)));
    }
    if (st->kind == SR_STATS_FLOAT) {
        cJSON_AddNumberToObject(o, "nan", (double)st->nan);
        cJSON_AddNumberToObject(o, "posinf", (double)st->posinf);
        cJSON_AddNumberToObject(o, "neginf", (double)st->neginf);
    }
}

static cJSON *entry_json(const sr_splice_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", e->path);
    cJSON_AddStringToObject(o, "field", e->field->name);
    cJSON_AddStringToObject(o, "kind", kind_name(e->kind));
    if (e->kind == SR_SPLICE_NULL)
        return o;
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < e->array.ndim; d++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)e->array.shape[d]));
    cJSON_AddStringToObject(o, "dtype", sr_dtype_name(e->array.dtype));
    cJSON_AddNumberToObject(o, "bytes", (double)e->array.nbytes);
    sr_array_stats st;
    sr_array_stats_compute(&st, &e->array);
    int canon = canonical_of(&e->array, &st);
    if (e->kind == SR_SPLICE_INT_ARRAY || canon < 0)
        cJSON_AddNullToObject(o, "canonical");
    else
        cJSON_AddBoolToObject(o, "canonical", canon);
    stats_json(o, &st);
    if (e->array.dtype == SR_DTYPE_BOOL)
        cJSON_AddNumberToObject(o, "noncanonical_bool", (double)st.noncanonical_bool);
    cJSON_AddBoolToObject(o, "spliced", e->spliced);
    if (e->kind == SR_SPLICE_ENVELOPE) {
        if (e->b64_noncanonical >= 0)
            cJSON_AddNumberToObject(o, "b64_noncanonical", (double)e->b64_noncanonical);
        cJSON_AddItemToObject(o, "sidecar",
                              e->sidecar ? cJSON_Duplicate(e->sidecar, 1) : cJSON_CreateObject());
    }
    return o;
}

/* At most this many unregistered envelopes are named (the count is exact). */
#define UNREG_MAX 16

/* Envelope-shaped objects ({"data": string, "shape": array, "dtype": string}) that no registry
 * entry read: the splice leaves them to the JSON parser, unchecked. */
typedef struct unreg {
    char paths[UNREG_MAX][256];
    size_t n, total;
} unreg;

static int registered_node(const sr_splice_result *r, const cJSON *node)
{
    for (size_t i = 0; i < r->count; i++)
        if (r->entries[i].node == node)
            return 1;
    return 0;
}

static void find_unregistered(unreg *u, const sr_splice_result *r, const cJSON *node, char *path,
                              size_t len, int depth)
{
    if (!node || depth > 64)
        return;
    if (cJSON_IsObject(node)) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(node, "data");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(node, "shape");
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(node, "dtype");
        if (cJSON_IsString(d) && cJSON_IsArray(sh) && cJSON_IsString(dt) &&
            !registered_node(r, node)) {
            if (u->n < UNREG_MAX)
                snprintf(u->paths[u->n++], sizeof(u->paths[0]), "%s", len ? path : "$");
            u->total++;
            return;
        }
    }
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return;
    size_t i = 0;
    for (const cJSON *c = node->child; c; c = c->next, i++) {
        int n = cJSON_IsObject(node)
                    ? snprintf(path + len, 1024 - len, "%s%s", len ? "." : "", c->string)
                    : snprintf(path + len, 1024 - len, "[%zu]", i);
        if (n > 0 && len + (size_t)n < 1024)
            find_unregistered(u, r, c, path, len + (size_t)n, depth + 1);
        path[len] = '\0';
    }
}

/* The note on standard error, one line per envelope named. */
static void note_unregistered(const unreg *u)
{
    for (size_t i = 0; i < u->n; i++) {
        fputs("syncroll check-body: note: ", stderr);
        put_text(stderr, u->paths[i]);
        fputs(" is a packed-array envelope {data, shape, dtype} that no registry names: the JSON "
              "parser read it unchecked (give its definition with --field-registry)\n",
              stderr);
    }
    if (u->total > u->n)
        fprintf(stderr, "syncroll check-body: note: %zu more unregistered envelopes\n",
                u->total - u->n);
}

/* The declared shape and value constraints of the registry entries that have them. */
static int check_declared(const sr_splice_result *r, sr_err *err)
{
    for (size_t i = 0; i < r->count; i++) {
        const sr_splice_entry *e = &r->entries[i];
        const sr_field_def *d = e->field;
        if (e->kind == SR_SPLICE_NULL || e->kind == SR_SPLICE_INT_ARRAY ||
            !(d->has_shape || d->has_range || d->finite))
            continue;
        int rc = sr_field_check_array(d, &e->array, -1,
                                      d->kind == SR_FIELD_STRING && d->wire == SR_WIRE_RAW, err);
        if (rc)
            return rc;
    }
    return 0;
}

static void print_json(const sr_splice_result *r, const opts *o, const unreg *u,
                       char (*npy)[SR_CHECK_BODY_NPY_NAME_MAX])
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddBoolToObject(root, "valid", 1);
    cJSON_AddStringToObject(root, "dialect", sr_dialect_name((sr_dialect)o->dialect));
    cJSON_AddStringToObject(root, "dialect_source", o->source);
    cJSON_AddNumberToObject(root, "body_bytes", (double)r->stats.body_bytes);
    cJSON_AddNumberToObject(root, "blobs", (double)r->stats.blobs);
    cJSON_AddNumberToObject(root, "int_arrays", (double)r->stats.int_arrays);
    cJSON *list = cJSON_AddArrayToObject(root, "entries");
    for (size_t i = 0; i < r->count; i++) {
        cJSON *e = entry_json(&r->entries[i]);
        if (npy && npy[i][0])
            cJSON_AddStringToObject(e, "npy", npy[i]);
        cJSON_AddItemToArray(list, e);
    }
    if (u->total) { /* only then: the keys of a body without one stay as they were */
        cJSON *un = cJSON_AddArrayToObject(root, "unregistered_envelopes");
        for (size_t i = 0; i < u->n; i++)
            cJSON_AddItemToArray(un, cJSON_CreateString(u->paths[i]));
        cJSON_AddNumberToObject(root, "unregistered_envelopes_total", (double)u->total);
    }
    put_json(root);
}

/* ", min X, max Y" and the counts and notes of one entry, as text. */
static void print_stats_text(const sr_splice_entry *e, const sr_array_stats *st)
{
    char lo[32], hi[32];
    if (st->has_range && st->kind == SR_STATS_FLOAT)
        printf(", min %.17g, max %.17g", st->fmin, st->fmax);
    else if (st->has_range)
        printf(", min %s, max %s", sr_stats_int_text(st, 0, lo, 32),
               sr_stats_int_text(st, 1, hi, 32));
    if (st->kind == SR_STATS_FLOAT && st->count && !st->finite)
        printf(", no finite values");
    if (st->nan || st->posinf || st->neginf)
        printf(" (nan %llu, +inf %llu, -inf %llu%s)", (unsigned long long)st->nan,
               (unsigned long long)st->posinf, (unsigned long long)st->neginf,
               st->finite ? "; min and max of the finite values" : "");
    if (st->noncanonical_bool)
        printf(", %llu non-canonical bool bytes (neither 0 nor 1; read as True)",
               (unsigned long long)st->noncanonical_bool);
    if (e->b64_noncanonical >= 0)
        printf("\nnote: %s: non-canonical base64 (non-zero trailing bits at body byte %lld, "
               "dropped as the reference does; client.strict_base64 refuses them)",
               e->path, (long long)e->b64_noncanonical);
}

static void print_text(const sr_splice_result *r, const opts *o)
{
    if (strcmp(o->source, "default") != 0) {
        printf("dialect: %s (%s", sr_dialect_name((sr_dialect)o->dialect), o->source);
        if (o->why) {
            fputs(": ", stdout);
            put_text(stdout, o->why);
        }
        printf(")\n");
    }
    for (size_t i = 0; i < r->count; i++) {
        const sr_splice_entry *e = &r->entries[i];
        put_text(stdout, e->path);
        fputs(": ", stdout);
        put_text(stdout, e->field->name);
        if (e->kind == SR_SPLICE_NULL) {
            printf(" null\n");
            continue;
        }
        char desc[160];
        sr_array_stats st;
        sr_array_stats_compute(&st, &e->array);
        int canon = canonical_of(&e->array, &st);
        printf(" %s %zu bytes",
               sr_ndarray_desc(e->array.dtype, e->array.ndim, e->array.shape, desc, sizeof(desc)),
               e->array.nbytes);
        if (e->kind == SR_SPLICE_ENVELOPE)
            printf(", %s", canon < 0 ? "canonical n/a" : canon ? "canonical" : "not canonical");
        print_stats_text(e, &st);
        printf("\n");
    }
    printf("valid: %zu entries, %zu blobs, %zu integer arrays, %llu body bytes\n", r->count,
           r->stats.blobs, r->stats.int_arrays, (unsigned long long)r->stats.body_bytes);
}

int sr_cmd_check_body(int argc, char **argv)
{
    opts o;
    int rc = parse_args(&o, argc, argv);
    if (rc)
        return rc < 0 ? SR_EXIT_OK : rc;
    sr_err err = SR_ERR_INIT;
    sr_fields *f = NULL;
    sr_splicer *s = NULL;
    sr_buf body = SR_BUF_INIT;
    const sr_splice_result *r = NULL;
    int whole = o.dialect < 0;
    if ((whole && (rc = detect(&o, &body, &err))) || (rc = build_registry(&f, &o, &err)) ||
        (rc = sr_splicer_new(&s, f, NULL, &err))) {
        sr_fields_free(f);
        sr_buf_release(&body);
        return report_error(&o, &err, rc == SR_E_NOMEM ? SR_EXIT_FAIL : SR_EXIT_USAGE);
    }
    int status = SR_EXIT_OK;
    if ((rc = sr_splice_stream_begin(s, o.expected, &err)) ||
        (rc = whole ? feed_buf(s, &body, &err) : feed_file(s, o.path, &err)) ||
        (rc = sr_splice_stream_finish(s, &r, &err)) || (rc = check_declared(r, &err)))
        status = report_error(&o, &err, rc == SR_E_IO ? SR_EXIT_USAGE : sr_exit_for_code(rc));
    char(*npy)[SR_CHECK_BODY_NPY_NAME_MAX] = NULL;
    if (!rc && o.npy_dir && r->count && !(npy = calloc(r->count, sizeof *npy))) {
        rc = sr_err_set(&err, SR_E_NOMEM, "no memory for %zu .npy names", r->count);
        status = report_error(&o, &err, SR_EXIT_FAIL);
    }
    for (size_t i = 0; !rc && npy && i < r->count; i++)
        if (r->entries[i].kind != SR_SPLICE_NULL &&
            (rc = sr_check_body_write_npy(o.npy_dir, i, &r->entries[i].array, npy[i], &err)))
            status = report_error(&o, &err, SR_EXIT_USAGE);
    if (!rc) {
        static unreg u; /* 4 KiB of paths: off the stack */
        char path[1024] = "";
        memset(&u, 0, sizeof(u));
        find_unregistered(&u, r, r->doc, path, 0, 0);
        note_unregistered(&u);
        if (o.json)
            print_json(r, &o, &u, npy);
        else
            print_text(r, &o);
    }
    free(npy);
    sr_splicer_free(s);
    sr_fields_free(f);
    sr_buf_release(&body);
    return status;
}
