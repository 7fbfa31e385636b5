/*
 * unit.client_conns: the client's kept-alive connections (client.h, "Concurrency"). They belong
 * to the client, per engine: any thread reuses an engine's idle connection, one thread keeps one
 * to every engine, and the client never holds more TCP connections than conns + engines - 1, so a
 * soak's descriptor count settles after the first batch. Real engines, real loopback TCP.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "client_gen.h"

/* A session id that the client sends to `engine`. */
static void session_for(char *out, size_t cap, const sr_client *c, int engine, int salt)
{
    for (int i = 0; i < 10000; i++) {
        snprintf(out, cap, "conns-%d-%d", salt, i);
        if (sr_client_engine_for(c, out) == engine)
            return;
    }
    ck_abort_msg("no session id found for engine %d", engine);
}

/* One thread alternating between two engines keeps a connection to each: after the first
 * generate on each engine, none opens a new one. */
START_TEST(one_thread_keeps_a_connection_to_every_engine)
{
    fx f;
    fx_start(&f, 2, CFG_CLEAN, NULL);
    char sid[2][64];
    session_for(sid[0], sizeof sid[0], f.client, 0, 0);
    session_for(sid[1], sizeof sid[1], f.client, 1, 0);
    sr_err e = SR_ERR_INIT;
    for (int i = 0; i < 8; i++) {
        sr_client_result r;
        ck_assert_sr_ok(gen(&f, sid[i % 2], 0, &r, &e), e);
        ck_assert_int_eq(r.engine, i % 2);
        ck_assert_int_eq(r.n_attempts, 1);
        ck_assert_msg(r.attempts[0].new_connection == (i < 2),
                      "generate %d (engine %d): new_connection %d", i, i % 2,
                      r.attempts[0].new_connection);
        /* Each answer is the right engine's, routes included. */
        verify_routes(CFG_CLEAN, &r, 0);
    }
    ck_assert_int_eq(fx_count(&f, 0, "generate"), 4);
    ck_assert_int_eq(fx_count(&f, 1, "generate"), 4);
    fx_stop(&f);
}
END_TEST

/* Inodes of the TCP sockets in /proc/net/tcp (the engines' included), sorted. */
static size_t tcp_inodes(unsigned long *out, size_t cap)
{
    FILE *fp = fopen("/proc/net/tcp", "r");
    ck_assert_ptr_nonnull(fp);
    char line[512];
    size_t n = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, fp)); /* the header */
    while (fgets(line, sizeof line, fp)) {
        unsigned long inode = 0;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu", &inode) == 1 && inode &&
            n < cap)
            out[n++] = inode;
    }
    fclose(fp);
    return n;
}

/* TCP sockets this process holds open (the engines are other processes). */
static int own_tcp_sockets(void)
{
    static unsigned long tcp[65536];
    size_t nt = tcp_inodes(tcp, sizeof tcp / sizeof tcp[0]);
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char path[300], link[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
        ssize_t len = readlink(path, link, sizeof link - 1);
        unsigned long inode;
        if (len <= 0)
            continue;
        link[len] = '\0';
        if (sscanf(link, "socket:[%lu]", &inode) != 1)
            continue;
        for (size_t i = 0; i < nt; i++)
            if (tcp[i] == inode) {
                n++;
                break;
            }
    }
    closedir(d);
    return n;
}

typedef struct spread {
    char sid[8][64];
} spread;

static int spread_job(sr_client_conn *k, size_t i, void *ctx)
{
    spread *s = ctx;
    cJSON *sp = sampling(3);
    sr_client_req q = SR_CLIENT_REQ_INIT;
    q.token_ids = PROMPT;
    q.n_tokens = PROMPT_LEN;
    q.sampling_params = sp;
    q.session_id = s->sid[i];
    q.return_routes = 1;
    q.prompt_start = 0;
    sr_client_result r;
    int rc = sr_client_generate(&r, k, &q, NULL);
    cJSON_Delete(sp);
    return rc;
}

/* Four threads, eight jobs over two engines, twelve rounds: the client never holds more TCP
 * connections than conns (the fixture's and four pooled) + engines - 1, however the jobs fall. */
START_TEST(connections_stay_within_conns_plus_engines)
{
    fx f;
    fx_start(&f, 2, CFG_CLEAN, NULL);
    int before = own_tcp_sockets();
    spread s;
    memset(&s, 0, sizeof s);
    sr_err e = SR_ERR_INIT;
    int most = 0;
    for (int round = 0; round < 12; round++) {
        for (int j = 0; j < 8; j++)
            /* Rounds put 2..6 of the 8 jobs on engine 0. */
            session_for(s.sid[j], sizeof s.sid[j], f.client, j < 2 + round % 5 ? 0 : 1, round);
        int rcs[8];
        ck_assert_sr_ok(sr_client_parallel(f.client, 8, 4, spread_job, &s, rcs, &e), e);
        for (int j = 0; j < 8; j++)
            ck_assert_int_eq(rcs[j], 0);
        int now = own_tcp_sockets() - before;
        most = now > most ? now : most;
    }
    ck_assert_msg(most >= 2 && most <= 5 + 2 - 1,
                  "the client held %d TCP connections at most, bound conns 5 + engines 2 - 1",
                  most);
    fx_stop(&f);
}
END_TEST

static Suite *conns_suite(void)
{
    Suite *s = suite_create("client_conns");
    TCase *tc = tcase_create("conns");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, one_thread_keeps_a_connection_to_every_engine);
    tcase_add_test(tc, connections_stay_within_conns_plus_engines);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The one process-wide initialisation the client needs (client.h). */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = sr_test_run(conns_suite());
    curl_global_cleanup();
    return rc;
}
