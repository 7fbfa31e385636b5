/*
 * The vllm control plane of the mock engine over real HTTP (engines.sync_dialect "vllm"): the
 * happy path (init, start, a bucket of every tensor on /update_weights, finish with a version,
 * weight_info, weight_checker checksum and compare against the oracle's digests) and the
 * out-of-order cells of the vllm table (harness/engine/sync_table.c), each answered with its
 * status, vLLM's {"detail": ...} body and the named check, after each of which the engine still
 * answers a generate.
 */
#include "engine_util.h"
#include "sr_clock.h"

#define VCFG "{\"sync_dialect\":\"vllm\",\"seed\":3,\"model\":{\"layers\":2}}"
#define GEN  "{\"token_ids\":[5,6,7],\"sampling_params\":{\"max_tokens\":3}}"

/* A refused call: its status, the vLLM body shape {"detail": ...} with the check, and the engine
 * serving afterwards. */
static void refused(const eng *e, const char *method, const char *path, const char *body,
                    long status, const char *check)
{
    char want[96];
    snprintf(want, sizeof(want), "\"check\":\"%s\"", check);
    hresp r;
    http_req(&r, NULL, e, method, path, body, NULL, 20000);
    ck_assert_msg(r.status == status, "%s %s: status %ld, want %ld: %s", method, path, r.status,
                  status, r.body.data);
    ck_assert_msg(strncmp(r.body.data, "{\"detail\":\"", 11) == 0 && strstr(r.body.data, want),
                  "%s %s: want {\"detail\":..,%s}: %s", method, path, want, r.body.data);
    hresp_free(&r);
    eng_expect(e, "POST", "/skyrl/v1/generate", GEN, 200, "\"finish_reason\"");
}

/* The engine's synthetic weights at `version` (the trainer's bytes of that version). */
static sr_weights *weights_at(int64_t version)
{
    sr_engine_config c;
    sr_err err = SR_ERR_INIT;
    ck_assert_sr_ok(sr_engine_config_parse(&c, VCFG, strlen(VCFG), "t", 0, &err), err);
    sr_weights_spec ws = sr_engine_config_weights(&c);
    sr_weights *w;
    ck_assert_sr_ok(sr_weights_new(&w, &ws, version, &err), err);
    sr_engine_config_release(&c);
    return w;
}

/* Cells of state uninit, then idle. */
START_TEST(out_of_order_before_start)
{
    eng e;
    eng_start(&e, VCFG);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"dialect\":\"vllm\",\"state\":\"uninit\"");
    refused(&e, "POST", "/start_weight_update", "{}", 409, "sync.protocol_order");
    refused(&e, "POST", "/update_weights", "{\"update_info\":{\"names\":[]}}", 409,
            "sync.protocol_order");
    refused(&e, "POST", "/finish_weight_update", "", 409, "sync.protocol_order");
    refused(&e, "POST", "/init_weight_transfer_engine", "{}", 400, "engine.bad_request");
    eng_expect(&e, "POST", "/update_weight_version", "{\"new_version\":\"3\"}", 200,
               "{\"success\":true,\"new_version\":\"3\"}");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"3\"}");
    refused(&e, "POST", "/update_weight_version", "{\"new_version\":1}", 409,
            "sync.version_backwards");
    refused(&e, "POST", "/update_weight_version", "{\"new_version\":\"\"}", 400,
            "engine.bad_request");
    eng_expect(&e, "POST", "/pause?mode=abort", "", 200, "{\"status\":\"paused\"}");
    eng_expect(&e, "GET", "/is_paused", NULL, 200, "{\"is_paused\":true}");
    hresp r;
    http_req(&r, NULL, &e, "POST", "/weight_checker", "{\"action\":\"checksum\"}", NULL, 20000);
    ck_assert_int_eq(r.status, 409);
    ck_assert_msg(strstr(r.body.data, "requires an awake, unpaused engine") &&
                      strstr(r.body.data, "\"check\":\"sync.engine_paused\""),
                  "%s", r.body.data);
    hresp_free(&r);
    eng_expect(&e, "POST", "/resume", "", 200, "{\"status\":\"resumed\"}");
    eng_expect(&e, "POST", "/weight_checker", "{\"action\":\"checksum\"}", 200, "{\"checksums\":{");
    refused(&e, "POST", "/weight_checker", "{\"action\":\"compare\"}", 400, "engine.bad_request");
    eng_expect(&e, "POST", "/init_weight_transfer_engine",
               "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"master_port\":29500,"
               "\"rank_offset\":1,\"world_size\":2}}",
               200, "{\"message\":\"Weight transfer initialized\"}");
    refused(&e, "POST", "/update_weights", "{\"update_info\":{\"names\":[]}}", 409,
            "sync.protocol_order");
    refused(&e, "POST", "/finish_weight_update", "{\"weight_version\":\"4\"}", 409,
            "sync.protocol_order");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"idle\"");
    eng_stop(&e);
}
END_TEST

/* The "fingerprints" object of the engine's state (what its bytes are), into out[cap]. */
static void fingerprints(const eng *e, char *out, size_t cap)
{
    hresp r;
    http_req(&r, NULL, e, "GET", "/syncroll/v1/state", NULL, NULL, 20000);
    ck_assert_int_eq(r.status, 200);
    const char *a = strstr(r.body.data, "\"fingerprints\":{");
    const char *b = a ? strstr(a, "]}") : NULL;
    ck_assert_msg(a && b && (size_t)(b - a) < cap, "%s", r.body.data);
    memcpy(out, a, (size_t)(b - a));
    out[b - a] = '\0';
    hresp_free(&r);
}

/* vLLM's finish_weight_update sets the version it names even when no bucket came (a label, as
 * LLM.finish_weight_update calls set_weight_version): the version moves, the bytes do not, so
 * the routes and weight_checker still tell what the engine holds. */
START_TEST(finish_without_buckets_sets_the_version_label)
{
    eng e;
    eng_start(&e, VCFG);
    char before[512], after[512];
    fingerprints(&e, before, sizeof(before));
    eng_expect(&e, "POST", "/init_weight_transfer_engine",
               "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"master_port\":29500,"
               "\"rank_offset\":1,\"world_size\":2}}",
               200, "Weight transfer initialized");
    eng_expect(&e, "POST", "/start_weight_update", "{\"is_checkpoint_format\":true}", 200, NULL);
    eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":\"7\"}", 200,
               "Weight update finished");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"7\"}");
    fingerprints(&e, after, sizeof(after));
    ck_assert_str_eq(before, after);
    /* Without a version the finish changes nothing. */
    eng_expect(&e, "POST", "/start_weight_update", "{\"is_checkpoint_format\":true}", 200, NULL);
    eng_expect(&e, "POST", "/finish_weight_update", "", 200, "Weight update finished");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"7\"}");
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, "\"weight_version\":7");
    eng_stop(&e);
}
END_TEST

/* The happy path, then the cells of state active. */
START_TEST(happy_path_and_out_of_order_while_active)
{
    eng e;
    eng_start(&e, VCFG);
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{\"world_size\":2}}",
               200, NULL);
    eng_expect(&e, "POST", "/start_weight_update", "{\"is_checkpoint_format\":true}", 200,
               "{\"message\":\"Weight update started\"}");
    refused(&e, "POST", "/start_weight_update", "{}", 409, "sync.protocol_order");
    refused(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{}}", 409,
            "sync.protocol_order");
    refused(&e, "POST", "/update_weight_version", "{\"new_version\":\"9\"}", 409,
            "sync.protocol_order");
    /* The data moves while generation is paused, as a trainer does it. */
    eng_expect(&e, "POST", "/pause?mode=keep", "", 200, "{\"status\":\"paused\"}");
    sr_weights *w = weights_at(2);
    sr_buf b = SR_BUF_INIT;
    eng_bucket_of(&b, w, 2);
    hresp r;
    eng_post_bucket(&r, &e, &b);
    ck_assert_msg(r.status == 200 && strstr(r.body.data, "{\"message\":\"Weights updated\"}"),
                  "bucket: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":\"2\"}", 200,
               "{\"message\":\"Weight update finished\"}");
    eng_expect(&e, "POST", "/resume", "", 200, NULL);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"2\"}");
    /* What the engine holds is what was sent: its checksums match the trainer's digests. */
    sr_buf base = SR_BUF_INIT;
    eng_baseline_of(&base, w);
    sr_buf_append(&base, "", 0, NULL);
    eng_expect(&e, "POST", "/weight_checker", base.data, 200, "{\"match\":true,\"mismatches\":[]}");
    /* Reset overwrites the weights: the compare now names every tensor. */
    eng_expect(&e, "POST", "/weight_checker", "{\"action\":\"reset\"}", 200,
               "{\"status\":\"reset\"}");
    eng_expect(&e, "POST", "/weight_checker", base.data, 200,
               "{\"match\":false,\"mismatches\":[\"");
    /* A finish naming a version below the held one is refused and discards the update. */
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    eng_post_bucket(&r, &e, &b);
    ck_assert_int_eq(r.status, 200);
    hresp_free(&r);
    refused(&e, "POST", "/finish_weight_update", "{\"weight_version\":1}", 409,
            "sync.version_backwards");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"2\"}");
    eng_expect(&e, "POST", "/weight_checker", base.data, 200, "{\"match\":false");
    /* JSON-only updates move nothing and spoil the update; the finish says so. */
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    refused(&e, "POST", "/update_weights", "{\"update_info\":{\"names\":[\"x\"]}}", 500,
            "sync.no_transfer");
    refused(&e, "POST", "/finish_weight_update", "", 500, "sync.no_transfer");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"idle\"");
    /* A refused bucket's message names the route it was posted to, not skyrl's method. */
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    sr_buf cut = SR_BUF_INIT;
    ck_assert_int_eq(sr_buf_append(&cut, b.data, b.len - 1, NULL), 0);
    eng_post_bucket(&r, &e, &cut);
    ck_assert_msg(r.status == 400 &&
                      strstr(r.body.data, "{\"detail\":\"POST /update_weights: the tensors need "),
                  "bucket: %ld %s", r.status, r.body.data);
    hresp_free(&r);
    sr_buf_release(&cut);
    refused(&e, "POST", "/finish_weight_update", "", 400, "engine.bad_request");
    /* The skyrl plane does not have these routes. */
    sr_buf_release(&base);
    sr_buf_release(&b);
    sr_weights_free(w);
    eng_stop(&e);
    eng_start(&e, "{\"model\":{\"layers\":2}}");
    eng_expect(&e, "POST", "/start_weight_update", "{}", 404, "sync_dialect");
    eng_expect(&e, "GET", "/weight_info", NULL, 404, NULL);
    eng_stop(&e);
}
END_TEST

/* POST /abort_requests (vllm/entrypoints/serve/disagg/api_router.py): a bad body is 400 with
 * vLLM's detail; a native generate in flight (its reply's request_id "<engine>-<n>") and one
 * named by its X-Request-Id header finish at once with finish_reason "abort" and fewer tokens
 * than asked; an unknown id is ignored (200); the engine serves on. 404 in the skyrl plane. */
#define SLOW                                                                                       \
    "{\"id\":\"a\",\"sync_dialect\":\"vllm\",\"seed\":3,\"model\":{\"layers\":2,\"eos_id\":-1},"   \
    "\"timing\":{\"prefill_ms\":0,\"decode_ms_per_token\":50}}"
#define LONG_GEN "{\"token_ids\":[5,6,7],\"sampling_params\":{\"max_tokens\":200}}"

typedef struct hdr_req {
    pthread_t t;
    const eng *e;
    hresp r;
} hdr_req;

/* A generate with the header X-Request-Id: mine-7. */
static void *hdr_main(void *arg)
{
    hdr_req *b = arg;
    memset(&b->r, 0, sizeof(b->r));
    CURL *h = curl_easy_init();
    char url[256];
    snprintf(url, sizeof(url), "%s/skyrl/v1/generate", b->e->url);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    hd = curl_slist_append(hd, "X-Request-Id: mine-7");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, hresp_body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b->r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, LONG_GEN);
    curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &b->r.status);
    sr_buf_append(&b->r.body, "", 0, NULL);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return NULL;
}

START_TEST(abort_requests_aborts_in_flight_generates)
{
    eng e;
    eng_start(&e, SLOW);
    refused(&e, "POST", "/abort_requests", "{}", 400, "engine.bad_request");
    refused(&e, "POST", "/abort_requests", "not json", 400, "engine.bad_request");
    refused(&e, "POST", "/abort_requests", "{\"request_ids\":[1]}", 400, "engine.bad_request");
    eng_expect(&e, "POST", "/abort_requests", "{\"request_ids\":[\"nobody\"]}", 200, NULL);
    bg_req nat;
    hdr_req hd = {.e = &e};
    bg_start(&nat, &e, "/inference/v1/generate", LONG_GEN);
    ck_assert_int_eq(pthread_create(&hd.t, NULL, hdr_main, &hd), 0);
    eng_wait_state(&e, "inflight", 2);
    hresp r;
    http_post(&r, &e, "/abort_requests", "{\"request_ids\":[\"a-1\",\"mine-7\"]}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq((int)r.body.len, 0);
    hresp_free(&r);
    bg_join(&nat);
    pthread_join(hd.t, NULL);
    /* "abort", not "length": the requests did not run on (no wall-clock bound needed). */
    hresp *got[2] = {&nat.r, &hd.r};
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(got[i]->status == 200, "%ld %s", got[i]->status, got[i]->body.data);
        ck_assert_msg(strstr(got[i]->body.data, "\"finish_reason\":\"abort\""), "%s",
                      got[i]->body.data);
    }
    ck_assert_ptr_nonnull(strstr(nat.r.body.data, "{\"request_id\":\"a-1\""));
    hresp_free(&nat.r), hresp_free(&hd.r);
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, "\"finish_reason\":\"length\"");
    eng_stop(&e);
    eng_start(&e, "{\"seed\":3}");
    eng_expect(&e, "POST", "/abort_requests", "{\"request_ids\":[]}", 404, NULL);
    eng_stop(&e);
}
END_TEST

/*
 * vLLM's current weight-transfer API (engines.sync_version "vllm#50902", the default):
 * - vllm/distributed/weight_transfer/nccl_common.py NCCLWeightTransferInitInfo carries `packed`,
 *   `packed_buffer_size_bytes` and `packed_num_buffers` (vllm#50902 for NCCL, vllm#48981 for
 *   IPC), and nccl_engine.py NCCLWeightTransferUpdateInfo only names, dtype_names and shapes, so
 *   base.py parse_update_info raises "Invalid update_info ... unexpected keyword argument" for a
 *   per-round `packed`: here 400 sync.wire_version naming the key and where it moved;
 * - the weight version is an opaque string that starts as "default" and is published only after
 *   a successful finish_weight_update (vllm#49040): a finish that fails publishes nothing, a
 *   finish naming none keeps it, /update_weight_version sets one without an update.
 */
#define INIT_PACKED                                                                                \
    "{\"init_info\":{\"master_address\":\"127.0.0.1\",\"master_port\":29500,\"rank_offset\":1,"    \
    "\"world_size\":2,\"packed\":true,\"packed_buffer_size_bytes\":1048576,"                       \
    "\"packed_num_buffers\":2}}"

/* b's vllm bucket with "packed":true at the head of its update_info (the earlier form). */
static void with_packed(sr_buf *out, const sr_buf *b)
{
    const char *head = "{\"update_info\":{";
    ck_assert(strncmp(b->data, head, strlen(head)) == 0);
    ck_assert_int_eq(sr_buf_puts(out, head, NULL), 0);
    ck_assert_int_eq(sr_buf_puts(out, "\"packed\":true,", NULL), 0);
    ck_assert_int_eq(sr_buf_append(out, b->data + strlen(head), b->len - strlen(head), NULL), 0);
}

static void post_bucket_expect(const eng *e, const sr_buf *b, long status, const char *want)
{
    hresp r;
    eng_post_bucket(&r, e, b);
    ck_assert_msg(r.status == status && strstr(r.body.data, want), "bucket: %ld %s", r.status,
                  r.body.data);
    hresp_free(&r);
}

START_TEST(current_form_packed_in_init_and_opaque_versions)
{
    eng e;
    eng_start(&e, VCFG);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"default\"}");
    refused(&e, "POST", "/init_weight_transfer_engine",
            "{\"init_info\":{\"world_size\":2,\"packed\":\"yes\"}}", 400, "engine.bad_request");
    refused(&e, "POST", "/init_weight_transfer_engine",
            "{\"init_info\":{\"world_size\":2,\"packed_num_buffers\":0}}", 400,
            "engine.bad_request");
    eng_expect(&e, "POST", "/init_weight_transfer_engine", INIT_PACKED, 200,
               "Weight transfer initialized");
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200,
               "\"packed\":true,\"packed_buffer_size_bytes\":1048576,\"packed_num_buffers\":2");
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    /* The old shape: packed in the per-round update_info, named with where it went. */
    hresp r;
    http_req(&r, NULL, &e, "POST", "/update_weights",
             "{\"update_info\":{\"names\":[],\"dtype_names\":[],\"shapes\":[],"
             "\"packed_num_buffers\":2}}",
             NULL, 20000);
    ck_assert_msg(r.status == 400 && strstr(r.body.data, "\"check\":\"sync.wire_version\"") &&
                      strstr(r.body.data, "unexpected keyword argument 'packed_num_buffers'") &&
                      strstr(r.body.data, "moved 'packed_num_buffers' to the init_info"),
                  "%ld %s", r.status, r.body.data);
    hresp_free(&r);
    sr_weights *w = weights_at(2);
    sr_buf b = SR_BUF_INIT, old = SR_BUF_INIT;
    eng_bucket_of(&b, w, 2);
    with_packed(&old, &b);
    post_bucket_expect(&e, &old, 400, "\"check\":\"sync.wire_version\"");
    /* That update is spoiled: its finish fails and publishes no version. */
    refused(&e, "POST", "/finish_weight_update", "{\"weight_version\":\"step-2\"}", 400,
            "sync.wire_version");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"default\"}");
    /* The current shape lands, and an opaque version is published by the finish. */
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    post_bucket_expect(&e, &b, 200, "Weights updated");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"default\"}");
    eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":\"step-2\"}", 200,
               "Weight update finished");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"step-2\"}");
    /* The label names no integer: the engine's version is its buckets' (what routes follow). */
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, "\"weight_version\":2");
    /* A finish naming no version keeps the label. */
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    eng_expect(&e, "POST", "/finish_weight_update", "", 200, NULL);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"step-2\"}");
    eng_expect(&e, "POST", "/update_weight_version", "{\"new_version\":\"rc-7\"}", 200,
               "{\"success\":true,\"new_version\":\"rc-7\"}");
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"rc-7\"}");
    eng_expect(&e, "POST", "/skyrl/v1/generate", GEN, 200, "\"weight_version\":2");
    sr_buf_release(&b);
    sr_buf_release(&old);
    sr_weights_free(w);
    eng_stop(&e);
}
END_TEST

/* The earlier form (engines.sync_version "vllm#31943"): packed rides in every update_info, so the
 * current trainer's init info is refused naming the key, and versions are integers. */
#define VCFG_OLD                                                                                   \
    "{\"sync_dialect\":\"vllm\",\"sync_version\":\"vllm#31943\",\"seed\":3,\"model\":"             \
    "{\"layers\":2}}"

START_TEST(earlier_form_packed_in_every_update_info)
{
    eng e;
    eng_start(&e, VCFG_OLD);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"0\"}");
    hresp r;
    http_req(&r, NULL, &e, "POST", "/init_weight_transfer_engine", INIT_PACKED, NULL, 20000);
    ck_assert_msg(r.status == 400 && strstr(r.body.data, "\"check\":\"sync.wire_version\"") &&
                      strstr(r.body.data, "unexpected keyword argument 'packed'"),
                  "%ld %s", r.status, r.body.data);
    hresp_free(&r);
    eng_expect(&e, "GET", "/syncroll/v1/state", NULL, 200, "\"state\":\"uninit\"");
    eng_expect(&e, "POST", "/init_weight_transfer_engine", "{\"init_info\":{\"world_size\":2}}",
               200, NULL);
    eng_expect(&e, "POST", "/start_weight_update", "{}", 200, NULL);
    sr_weights *w = weights_at(2);
    sr_buf b = SR_BUF_INIT, old = SR_BUF_INIT;
    eng_bucket_of(&b, w, 2);
    with_packed(&old, &b);
    post_bucket_expect(&e, &old, 200, "Weights updated");
    eng_expect(&e, "POST", "/finish_weight_update", "{\"weight_version\":\"2\"}", 200, NULL);
    eng_expect(&e, "GET", "/weight_info", NULL, 200, "{\"weight_version\":\"2\"}");
    refused(&e, "POST", "/update_weight_version", "{\"new_version\":\"rc-7\"}", 400,
            "engine.bad_request");
    sr_buf_release(&b);
    sr_buf_release(&old);
    sr_weights_free(w);
    eng_stop(&e);
}
END_TEST

/* The weight_checker's compare uses every hex digit of a digest: the engine's own baseline
 * matches, and one digit changed at each of the 32 positions (both 64-bit halves) of the first
 * or the last tensor's digest names exactly that tensor (docs/internals/testing.md, boundary
 * checklist: each byte of a digest). */
START_TEST(compare_uses_every_digit_of_a_digest)
{
    eng e;
    eng_start(&e, VCFG);
    sr_weights *w = weights_at(0);
    size_t n = sr_weights_count(w);
    ck_assert_uint_ge(n, 2);
    char(*hex)[33] = calloc(n, sizeof(*hex));
    ck_assert_ptr_nonnull(hex);
    for (size_t i = 0; i < n; i++) {
        sr_weights_info t;
        ck_assert_int_eq(sr_weights_tensor(&t, w, i, NULL), 0);
        snprintf(hex[i], sizeof hex[i], "%016llx%016llx", (unsigned long long)t.digest_hi,
                 (unsigned long long)t.digest_lo);
    }
    for (int changed = -1; changed < 2 * 32; changed++) {
        size_t which = changed < 32 ? 0 : n - 1; /* the first, then the last tensor */
        int at = changed % 32;
        sr_buf b = SR_BUF_INIT;
        sr_buf_puts(&b, "{\"action\":\"compare\",\"baseline\":{", NULL);
        for (size_t i = 0; i < n; i++) {
            sr_weights_info t;
            sr_weights_tensor(&t, w, i, NULL);
            char d[33];
            memcpy(d, hex[i], sizeof d);
            if (changed >= 0 && i == which)
                d[at] = d[at] == '0' ? '1' : '0';
            sr_buf_printf(&b, NULL, "%s\"%s\":\"%s\"", i ? "," : "", t.name, d);
        }
        sr_buf_puts(&b, "}}", NULL);
        char want[256] = "{\"match\":true,\"mismatches\":[]}";
        if (changed >= 0) {
            sr_weights_info t;
            sr_weights_tensor(&t, w, which, NULL);
            snprintf(want, sizeof want, "{\"match\":false,\"mismatches\":[\"%s\"]}", t.name);
        }
        hresp r;
        http_post(&r, &e, "/weight_checker", b.data);
        ck_assert_msg(r.status == 200 && r.body.data && strcmp(r.body.data, want) == 0,
                      "digit %d of tensor %zu changed: %ld %s, want %s", at, which, r.status,
                      r.body.data ? r.body.data : "", want);
        hresp_free(&r);
        sr_buf_release(&b);
    }
    free(hex);
    sr_weights_free(w);
    eng_stop(&e);
}
END_TEST

static Suite *vllm_suite(void)
{
    Suite *s = suite_create("engine_vllm");
    TCase *tc = tcase_create("vllm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, out_of_order_before_start);
    tcase_add_test(tc, finish_without_buckets_sets_the_version_label);
    tcase_add_test(tc, happy_path_and_out_of_order_while_active);
    tcase_add_test(tc, abort_requests_aborts_in_flight_generates);
    tcase_add_test(tc, current_form_packed_in_init_and_opaque_versions);
    tcase_add_test(tc, earlier_form_packed_in_every_update_info);
    tcase_add_test(tc, compare_uses_every_digit_of_a_digest);
    suite_add_tcase(s, tc);
    return s;
}

ENGINE_TEST_MAIN(vllm_suite)
