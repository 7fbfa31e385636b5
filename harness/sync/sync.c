/* Trainer-side weight-sync orchestration (sync.h): options, the trainer's phases and the protocol
 * sequence over the engines. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "sr_clock.h"
#include "sync_priv.h"

int sr_sync_transport_parse(sr_sync_transport *out, const char *name, sr_err *err)
{
    if (name && strcmp(name, "delta") == 0)
        *out = SR_SYNC_DELTA;
    else if (name && strcmp(name, "broadcast") == 0)
        *out = SR_SYNC_BROADCAST;
    else if (name && strcmp(name, "disk") == 0)
        *out = SR_SYNC_DISK;
    else
        return sr_err_set(err, SR_E_INVAL,
                          "sync: transport must be delta, broadcast or disk, got '%s'",
                          name ? name : "(null)");
    return 0;
}

/* Copies s into out as the body of a JSON string (quotes and backslashes escaped). */
static void json_body_str(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
}

static void set_salt(sr_sync *s)
{
    snprintf(s->salt, sizeof(s->salt), "%s@%lld", s->model, (long long)s->version);
}

/* ---- creation ---- */

static int check_opts(const sr_sync_opts *o, size_t n_urls, sr_err *err)
{
    if (n_urls < 1 || n_urls > SR_CLIENT_MAX_ENGINES)
        return sr_err_set(err, SR_E_INVAL, "sync: 1..%d engines, got %zu", SR_CLIENT_MAX_ENGINES,
                          n_urls);
    if ((unsigned)o->transport > SR_SYNC_DISK || o->deadline_ms < 1 || o->total_deadline_ms < 0 ||
        o->bucket_bytes < 1 || o->send_workers < 0 || o->send_workers > SR_SYNC_MAX_INFLIGHT ||
        o->initial_version < 0 || o->initial_version > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_INVAL,
                          "sync: bad options (transport, deadline_ms >= 1, bucket_bytes >= 1, "
                          "send_workers 0..%d, initial_version)",
                          SR_SYNC_MAX_INFLIGHT);
    for (int p = 0; p < SR_SYNC_PHASE_COUNT; p++)
        if (o->phase_deadline_ms[p] < 0)
            return sr_err_set(err, SR_E_INVAL, "sync: negative deadline for phase %s",
                              sr_sync_phase_name((sr_sync_phase)p));
    if (o->transport != SR_SYNC_BROADCAST && (!o->sync_dir || !*o->sync_dir))
        return sr_err_set(err, SR_E_INVAL, "sync: the %s transport needs a sync_dir",
                          o->transport == SR_SYNC_DELTA ? "delta" : "disk");
    if (o->transport == SR_SYNC_DISK && o->control != SR_SYNC_DIALECT_SGLANG)
        return sr_err_set(err, SR_E_INVAL,
                          "sync: the disk transport is SGLang's /update_weights_from_disk "
                          "(engines.sync_dialect \"sglang\")");
    if ((unsigned)o->control >= SR_SYNC_DIALECT_COUNT ||
        (o->control != SR_SYNC_DIALECT_SKYRL && o->transport == SR_SYNC_DELTA))
        return sr_err_set(err, SR_E_INVAL,
                          "sync: the %s control plane syncs by broadcast (weights.transport "
                          "\"broadcast\"), not delta",
                          sr_sync_dialect_name(o->control) ? sr_sync_dialect_name(o->control)
                                                           : "?");
    return 0;
}

/* A publisher-view of a weight set (pointers into it). */
static int make_view(sr_delta_tensor **out, const sr_weights *w, sr_err *err)
{
    size_t n = sr_weights_count(w);
    sr_delta_tensor *v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate a tensor view");
    for (size_t i = 0; i < n; i++) {
        sr_weights_info t;
        int rc = sr_weights_tensor(&t, w, i, err);
        if (rc) {
            free(v);
            return rc;
        }
        v[i] = (sr_delta_tensor){
            t.name, sr_dtype_name(t.dtype), 2, {t.shape[0], t.shape[1]}, (void *)t.data, t.nbytes};
    }
    *out = v;
    return 0;
}

/* The delta publisher, whose base is content version 0 (the receivers' base). */
static int make_publisher(sr_sync *s, const sr_weights_spec *spec, sr_err *err)
{
    if (mkdir(s->sync_dir, 0755) != 0 && errno != EEXIST)
        return sr_err_set(err, SR_E_DELTA_IO, "sync: cannot create %s: %s", s->sync_dir,
                          strerror(errno));
    sr_weights *base0 = NULL;
    int rc = s->o.initial_version ? sr_weights_new(&base0, spec, 0, err) : 0;
    sr_delta_tensor *bv = NULL;
    if (!rc && base0)
        rc = make_view(&bv, base0, err);
    sr_delta_publish_opts po = SR_DELTA_PUBLISH_OPTS_INIT;
    po.fsync = s->o.fsync;
    if (!rc)
        rc = sr_delta_publisher_new(&s->pub, s->sync_dir, bv ? bv : s->view, sr_weights_count(s->w),
                                    &po, err);
    free(bv);
    sr_weights_free(base0);
    return rc;
}

int sr_sync_new(sr_sync **out, const char *const *urls, size_t n_urls, const sr_weights_spec *spec,
                const sr_sync_opts *opts, sr_err *err)
{
    *out = NULL;
    sr_sync_opts o = SR_SYNC_OPTS_INIT;
    if (opts)
        o = *opts;
    int rc = !urls || !spec ? sr_err_set(err, SR_E_INVAL, "sync: NULL urls or spec")
                            : check_opts(&o, n_urls, err);
    if (rc)
        return rc;
    sr_sync *s = calloc(1, sizeof(*s));
    if (!s)
        return sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate");
    s->o = o;
    s->n = n_urls;
    s->model = strdup(o.model ? o.model : "default");
    s->sync_dir = o.sync_dir ? strdup(o.sync_dir) : NULL;
    s->o.model = s->model;
    s->o.sync_dir = s->sync_dir;
    size_t L = (size_t)(spec->num_layers > 0 ? spec->num_layers : 1);
    s->known_version = calloc(n_urls, sizeof(int64_t));
    s->known_fp = calloc(n_urls * (L + 1), sizeof(uint64_t));
    if (!s->model || (o.sync_dir && !s->sync_dir) || !s->known_version || !s->known_fp)
        rc = sr_err_set(err, SR_E_NOMEM, "sync: cannot allocate");
    if (!rc)
        rc = sr_pool_workers(&s->pool, o.workers_cap, o.workers_reserved, o.cores, NULL, err);
    if (!rc)
        rc = sr_fanout_new(&s->fan, urls, n_urls, 0, err);
    if (!rc)
        rc = sr_weights_new(&s->w, spec, o.initial_version, err);
    if (!rc)
        rc = make_view(&s->view, s->w, err);
    if (!rc && o.transport == SR_SYNC_DELTA)
        rc = make_publisher(s, spec, err);
    if (rc) {
        sr_sync_free(s);
        return rc;
    }
    s->content = o.initial_version;
    s->version = o.initial_version;
    s->last_target = o.initial_version;
    for (size_t i = 0; i < n_urls; i++) {
        s->known_version[i] = o.initial_version;
        sr_weights_fingerprints(&s->known_fp[i * (L + 1) + L], &s->known_fp[i * (L + 1)], s->w);
    }
    set_salt(s);
    *out = s;
    return 0;
}

void sr_sync_free(sr_sync *s)
{
    if (!s)
        return;
    sync_bcast_free(s);
    sr_delta_publisher_free(s->pub);
    free(s->view);
    sr_weights_free(s->w);
    sr_fanout_free(s->fan);
    free(s->known_version);
    free(s->known_fp);
    free(s->disk_held);
    free(s->model);
    free(s->sync_dir);
    free(s);
}

int64_t sr_sync_version(const sr_sync *s)
{
    return s->version;
}

int64_t sr_sync_last_target(const sr_sync *s)
{
    return s->last_target;
}

const char *sr_sync_cache_salt(const sr_sync *s)
{
    return s->salt;
}

const sr_weights *sr_sync_weights(const sr_sync *s)
{
    return s->w;
}

/* ---- trainer-side phases ---- */

static void phase_done(sr_sync *s, sr_sync_result *res, sr_sync_phase p, double t0)
{
    double now = sr_clock_ms(), ms = now - t0;
    res->phase_ns[p] += (uint64_t)(ms * 1e6);
    res->phase_ran[p] = 1;
    int64_t dl = sync_deadline(s, p), total = s->o.total_deadline_ms;
    if (p <= SR_SYNC_PUBLISH && ms > (double)dl)
        sync_check(res, SR_E_SYNC_DEADLINE, -1, -1,
                   "the trainer's %s phase took %.0f ms, over its deadline of %lld ms",
                   sr_sync_phase_name(p), ms, (long long)dl);
    else if (p <= SR_SYNC_PUBLISH && total > 0 && now - s->t0_ms > (double)total)
        sync_check(res, SR_E_SYNC_DEADLINE, -1, -1,
                   "the trainer's %s phase ended %.0f ms into the sync, past its deadline of %lld "
                   "ms",
                   sr_sync_phase_name(p), now - s->t0_ms, (long long)total);
}

/* Sets the trainer's bytes to content version c (no-op for SR_SYNC_SAME_BYTES). */
static int gather(sr_sync *s, sr_sync_result *res, int64_t c, sr_err *err)
{
    double t0 = sr_clock_ms();
    int rc = 0;
    if (c >= 0 && c != s->content) {
        rc = sr_weights_reset(s->w, c, err);
        s->content = rc ? -1 : c;
    }
    phase_done(s, res, SR_SYNC_GATHER, t0);
    return rc;
}

/* Compares w's tensor digests with the last version every engine loaded and verified
 * (compare = 1), or stores them as that version (compare = 0). */
static int disk_digests(sr_sync *s, int compare, sr_err *err)
{
    size_t n = sr_weights_count(s->w);
    if (!s->disk_held && !(s->disk_held = calloc(2 * (n ? n : 1), sizeof(uint64_t))))
        return compare ? 0 : sr_err_set(err, SR_E_NOMEM, "sync: no memory for %zu digests", n);
    int same = 1;
    for (size_t i = 0; i < n; i++) {
        sr_weights_info t;
        int rc = sr_weights_tensor(&t, s->w, i, err);
        if (rc)
            return compare ? 0 : rc;
        if (compare) {
            same &= s->disk_held[2 * i] == t.digest_hi && s->disk_held[2 * i + 1] == t.digest_lo;
        } else {
            s->disk_held[2 * i] = t.digest_hi;
            s->disk_held[2 * i + 1] = t.digest_lo;
        }
    }
    return compare ? same : 0;
}

/* The disk transport's publish: version `target` as a checkpoint folder {sync_dir}/v<target>/
 * (two shards, written by the publish pool), its path in s->disk_path. A version is written once:
 * syncing a version again reuses its folder. A version whose bytes equal the last one every
 * engine loaded and verified, and which every engine still reports holding, is not written
 * (s->disk_same): the engines only set its number, as a delta version in which nothing changed
 * moves nothing. */
static int publish_disk(sr_sync *s, int64_t target, sr_err *err)
{
    sr_err e2 = SR_ERR_INIT;
    int hold = 0;
    /* The engines are asked too: one restarted or reset since holds other bytes. */
    s->disk_same =
        s->disk_held_ok && disk_digests(s, 1, &e2) && !sync_engines_hold(s, &hold, &e2) && hold;
    if (s->disk_same)
        return 0;
    if (mkdir(s->sync_dir, 0777) != 0 && errno != EEXIST)
        return sr_err_set(err, SR_E_IO, "sync: cannot create %s: %s", s->sync_dir, strerror(errno));
    struct stat st;
    int rc = sr_sync_checkpoint_path(s->disk_path, sizeof(s->disk_path), s->sync_dir, target, err);
    if (!rc && stat(s->disk_path, &st) != 0) {
        /* A failed write removes its own partial folder (sr_st_write_checkpoint). */
        rc = sr_sync_write_checkpoint(s->disk_path, sizeof(s->disk_path), s->w, s->sync_dir, target,
                                      2, s->pool > 0 ? s->pool : 1, err);
    }
    return rc;
}

/* Publishes every delta version P+1 .. target. */
static int publish_delta(sr_sync *s, sr_sync_result *res, int64_t target, int64_t content,
                         sr_err *err)
{
    int64_t P = sr_delta_publisher_version(s->pub);
    if (target < 1 || target < P)
        return sr_err_set(err, SR_E_INVAL,
                          "sync: delta target %lld must be >= 1 and not below the last published "
                          "version %lld",
                          (long long)target, (long long)P);
    if (target == P && content >= 0 && content != s->content)
        return sr_err_set(err, SR_E_INVAL,
                          "sync: version %lld is already published with other bytes",
                          (long long)target);
    int rc = 0;
    res->phase_ran[SR_SYNC_GATHER] = res->phase_ran[SR_SYNC_PUBLISH] = 1;
    for (int64_t v = P + 1; !rc && v <= target; v++) {
        rc = gather(s, res, content < 0 ? content : (v == target ? content : v), err);
        double t0 = sr_clock_ms();
        sr_delta_publish_result pr;
        if (!rc)
            rc = sr_delta_publish(&pr, s->pub, s->view, sr_weights_count(s->w), s->pool, err);
        if (!rc) {
            res->versions_published++;
            res->records += pr.records;
            res->bytes_changed += pr.uncompressed_bytes;
            res->bytes_compressed += pr.compressed_bytes;
        }
        phase_done(s, res, SR_SYNC_PUBLISH, t0);
    }
    return rc;
}

/* ---- engine phases ---- */

/*
 * Sends the same request to every engine with on[i] set. A failure becomes a check and clears
 * ok[i]. *failures receives how many engines failed.
 */
static int phase_http(sr_sync *s, sr_sync_result *res, sr_sync_phase p, const char *path,
                      const char *body, const int *on, int *ok, int *failures, sr_err *err)
{
    sr_fanout_req reqs[SR_CLIENT_MAX_ENGINES];
    sr_fanout_seg seg = {body, body ? strlen(body) : 0};
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!on[i])
            continue;
        sr_fanout_req *r = &reqs[n++];
        memset(r, 0, sizeof(*r));
        r->engine = (int)i;
        r->get = body == NULL;
        r->path = path;
        r->segs = &seg;
        r->nseg = body ? 1 : 0;
    }
    double t0 = sr_clock_ms();
    int64_t budget;
    double end = sync_phase_end(s, p, &budget);
    int rc = 0;
    /* One engine at a time: the next request leaves once the previous one has its answer, so
     * what an engine did in its update (a checkpoint removed) is done before the next starts.
     * Once one was cut at the phase's deadline, the later ones are not sent. */
    if (s->o.serial_update && p == SR_SYNC_UPDATE)
        for (size_t k = 0, cut = 0; !rc && k < n; k++) {
            if (!cut && sr_clock_ms() < end) {
                double sent = sr_clock_ms() - t0;
                rc = sr_fanout_run(s->fan, &reqs[k], 1, 1, end, budget, err);
                cut = reqs[k].code == SR_E_CLIENT_DEADLINE;
                if (cut && k > 0) {
                    /* Its share of the deadline was what the engines before it left: say so,
                     * or a slow engine 0 reads as engine k's fault. */
                    size_t m = strlen(reqs[k].msg);
                    snprintf(reqs[k].msg + m, sizeof(reqs[k].msg) - m,
                             " (sent %.0f ms into the phase's %lld ms, after the engines before it "
                             "updated one at a time)",
                             sent, (long long)budget);
                }
                continue;
            }
            reqs[k].code = SR_E_CLIENT_DEADLINE;
            snprintf(reqs[k].msg, sizeof(reqs[k].msg),
                     "not sent: the phase's deadline (%lld ms) passed while the engines before it "
                     "updated one at a time",
                     (long long)budget);
        }
    else
        rc = sr_fanout_run(s->fan, reqs, n, 1, end, budget, err);
    *failures = 0;
    for (size_t k = 0; !rc && k < n; k++) {
        int i = reqs[k].engine;
        if (p == SR_SYNC_FETCH)
            res->engines[i].apply_ns = (uint64_t)((reqs[k].end_ms - reqs[k].start_ms) * 1e6);
        if (!reqs[k].code)
            continue;
        ok[i] = 0;
        (*failures)++;
        sync_check(res, sync_code(&reqs[k]), i, -1, "engine %d (%s): %s %s (phase %s): %s", i,
                   sr_fanout_url(s->fan, i), body ? "POST" : "GET", path, sr_sync_phase_name(p),
                   reqs[k].msg);
    }
    sr_fanout_reqs_release(reqs, n);
    res->phase_ns[p] += (uint64_t)((sr_clock_ms() - t0) * 1e6);
    res->phase_ran[p] = 1;
    return rc;
}

/* Runs phase p on the engines in `on`; returns 1 if every one of them succeeded. */
static int step(sr_sync *s, sr_sync_result *res, sr_sync_phase p, const char *path,
                const char *body, const int *on, int *ok, int *rc, sr_err *err)
{
    int failures = 0;
    if (!*rc)
        *rc = phase_http(s, res, p, path, body, on, ok, &failures, err);
    return !*rc && failures == 0;
}

/*
 * The plane's init, engine by engine, once per engine of an sr_sync, as SkyRL's client does: the
 * broadcast group's rank, or (delta_dir not NULL: the skyrl plane's delta transport) the delta
 * receiver's DeltaTransferInitInfo with its state folder under the sync folder. An engine whose
 * init succeeded is not asked again after another one failed (the sglang plane refuses a second
 * init while the group exists).
 */
/* The init info of vLLM's current form: the NCCL rendezvous (rank_offset, world_size) and the
 * packed wire params (buffer bytes, buffers in flight), vllm/distributed/weight_transfer/
 * nccl_common.py NCCLWeightTransferInitInfo (vllm#50902). */
#define VLLM_INIT_PACKED                                                                           \
    "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"master_port\":0,\"rank_offset\":%zu,"      \
    "\"world_size\":%zu,\"packed\":true,\"packed_buffer_size_bytes\":%zu,"                         \
    "\"packed_num_buffers\":%d}}"

static int init_group(sr_sync *s, sr_sync_result *res, const sync_plane *pl, const char *delta_dir,
                      int *ok, int *rc, sr_err *err)
{
    char body[4400];
    int good = 1;
    for (size_t i = 0; good && i < s->n; i++) {
        if (s->inited[i])
            continue;
        int one[SR_CLIENT_MAX_ENGINES] = {0};
        one[i] = 1;
        if (delta_dir)
            snprintf(body, sizeof(body),
                     "{\"init_info\":{\"base_model_path\":\"syncroll:synthetic\","
                     "\"local_checkpoint_dir\":\"%s/receiver-%zu\"}}",
                     delta_dir, i);
        else if (s->o.control == SR_SYNC_DIALECT_VLLM && s->o.api == SR_SYNC_API_50902)
            /* vllm#50902: the packed wire params travel once, here (sr_sync_opts.api). */
            snprintf(body, sizeof(body), VLLM_INIT_PACKED, i + 1, s->n + 1, s->o.bucket_bytes,
                     sync_bcast_inflight(s));
        else
            snprintf(body, sizeof(body), pl->init_fmt, i + 1, s->n + 1);
        good =
            step(s, res, SR_SYNC_INIT, delta_dir ? "/init_weight_transfer_engine" : pl->init_path,
                 body, one, ok, rc, err);
        s->inited[i] = (unsigned char)good;
    }
    return good;
}

static int run_protocol(sr_sync *s, sr_sync_result *res, int64_t target, int *ok, sr_err *err)
{
    int all[SR_CLIENT_MAX_ENGINES], started[SR_CLIENT_MAX_ENGINES];
    for (size_t i = 0; i < s->n; i++)
        all[i] = 1;
    const sync_plane *pl = sync_plane_of(s->o.control);
    char body[4400], dir[4096] = "";
    int rc = 0, good = 1;
    int delta = s->o.transport == SR_SYNC_DELTA, disk = s->o.transport == SR_SYNC_DISK;
    if (delta)
        json_body_str(dir, sizeof(dir), s->sync_dir);
    else if (disk)
        json_body_str(dir, sizeof(dir), s->disk_path);
    /* From disk needs no group: each engine reads the checkpoint folder itself. */
    if (!disk)
        good = init_group(s, res, pl, delta ? dir : NULL, ok, &rc, err);
    if (good && delta) {
        snprintf(body, sizeof(body), "{\"target_version\":%lld,\"sync_dir\":\"%s\"}",
                 (long long)target, dir);
        good = step(s, res, SR_SYNC_FETCH, "/fetch_weights", body, all, ok, &rc, err);
    }
    if (good)
        good = step(s, res, SR_SYNC_PAUSE, pl->pause_path, pl->pause_body, all, ok, &rc, err);
    if (good && pl->reset_path)
        good = step(s, res, SR_SYNC_RESET_CACHE, pl->reset_path, pl->reset_body, all, ok, &rc, err);
    memset(started, 0, sizeof(started));
    if (good) {
        memcpy(started, ok, s->n * sizeof(int));
        if (pl->start_path)
            good =
                step(s, res, SR_SYNC_START, pl->start_path, pl->start_body, all, started, &rc, err);
        for (size_t i = 0; i < s->n; i++)
            ok[i] = ok[i] && started[i];
    }
    if (good && delta) {
        snprintf(body, sizeof(body),
                 "{\"update_info\":{\"target_version\":%lld,\"version\":%lld,\"sync_dir\":\"%s\"}}",
                 (long long)target, (long long)target, dir);
        good = step(s, res, SR_SYNC_UPDATE, "/update_weights", body, started, ok, &rc, err);
    } else if (good && disk) {
        /* Bytes every engine verifiably holds already: only the version is set (finish). */
        if (!s->disk_same) {
            snprintf(body, sizeof(body),
                     "{\"model_path\":\"%s\",\"load_format\":\"safetensors\",\"weight_version\":"
                     "\"%lld\",\"flush_cache\":true}",
                     dir, (long long)target);
            good = step(s, res, SR_SYNC_UPDATE, "/update_weights_from_disk", body, started, ok, &rc,
                        err);
        }
    } else if (good && !rc) {
        double t0 = sr_clock_ms();
        rc = sync_bcast_send(s, ok, res, err);
        for (size_t i = 0; i < s->n; i++)
            good = good && ok[i];
        res->phase_ns[SR_SYNC_UPDATE] += (uint64_t)((sr_clock_ms() - t0) * 1e6);
        res->phase_ran[SR_SYNC_UPDATE] = 1;
    }
    /* Finish ends every started update; a plane without one sets the version only where every
     * bucket landed. */
    int fin_on[SR_CLIENT_MAX_ENGINES], any = 0;
    for (size_t i = 0; i < s->n; i++)
        any |= fin_on[i] = pl->finish_all_ok ? started[i] && ok[i] : started[i];
    if (any) {
        snprintf(body, sizeof(body), pl->finish_fmt, (long long)target);
        int fin = step(s, res, SR_SYNC_FINISH, pl->finish_path, body, fin_on, ok, &rc, err);
        good = good && fin;
    }
    if (good && s->o.on_applied)
        s->o.on_applied(s->o.on_applied_ctx, target);
    /* Always, whatever failed: an engine left paused would hang every later rollout. */
    int rc2 = 0;
    int resumed =
        step(s, res, SR_SYNC_RESUME, pl->resume_path, pl->resume_body, all, ok, &rc2, err);
    res->completed = good && resumed && !rc && !rc2;
    return rc ? rc : rc2;
}

int sr_sync_run(sr_sync_result *res, sr_sync *s, int64_t target, int64_t content, sr_err *err)
{
    memset(res, 0, sizeof(*res));
    res->target_version = target;
    res->version = s->version;
    res->n_engines = s->n;
    res->publish_workers = s->pool;
    for (size_t i = 0; i < s->n; i++) {
        res->engines[i].version = -1;
        res->engines[i].apply_payloads = -1;
        res->engines[i].ok = 1;
    }
    if (target < 0 || target > SR_WEIGHTS_MAX_VERSION || content < SR_SYNC_SAME_BYTES ||
        content > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_INVAL, "sync: target %lld or content %lld out of range",
                          (long long)target, (long long)content);
    double t0 = sr_clock_ms();
    s->t0_ms = t0;
    if (target > s->last_target)
        s->last_target = target;
    int rc;
    if (s->o.transport == SR_SYNC_DELTA) {
        rc = publish_delta(s, res, target, content, err);
    } else if (s->o.transport == SR_SYNC_DISK) {
        rc = gather(s, res, content, err);
        double t1 = sr_clock_ms();
        if (!rc)
            rc = publish_disk(s, target, err);
        phase_done(s, res, SR_SYNC_PUBLISH, t1);
    } else {
        rc = gather(s, res, content, err);
        double t1 = sr_clock_ms();
        if (!rc)
            rc = sync_bcast_plan(s, target, res, err);
        phase_done(s, res, SR_SYNC_PUBLISH, t1);
    }
    int ok[SR_CLIENT_MAX_ENGINES];
    for (size_t i = 0; i < s->n; i++)
        ok[i] = 1;
    if (!rc)
        rc = run_protocol(s, res, target, ok, err);
    if (!rc && s->o.verify) {
        double t1 = sr_clock_ms();
        /* The vllm plane can say what each engine holds: compare it with what was sent (first,
         * so that its finding is the one an engine's partial update is reported by). */
        if (res->completed && sync_plane_of(s->o.control)->compare)
            rc = sync_compare_weights(s, res, err);
        if (!rc)
            rc = sync_verify(s, res, target, err);
        phase_done(s, res, SR_SYNC_VERIFY, t1);
    }
    for (size_t i = 0; i < s->n; i++)
        res->engines[i].ok = res->engines[i].ok && ok[i];
    if (!rc && res->completed) {
        s->version = target;
        set_salt(s);
    }
    if (s->o.transport == SR_SYNC_DISK) {
        /* Only bytes every engine loaded and verified may be skipped next time. */
        int all_ok = !rc && res->completed && s->o.verify && res->verified && !res->n_checks;
        for (size_t i = 0; i < s->n; i++)
            all_ok = all_ok && res->engines[i].ok;
        sr_err e2 = SR_ERR_INIT;
        s->disk_held_ok = all_ok && (s->disk_same || !disk_digests(s, 0, &e2));
    }
    res->version = s->version;
    res->total_ns = (uint64_t)((sr_clock_ms() - t0) * 1e6);
    return rc;
}
