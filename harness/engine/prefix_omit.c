/* The per-session prefix record behind engines.omit_prefix_routes (prefix_omit.h). */
#include "prefix_omit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *key;       /* NULL: free */
    int32_t *tokens; /* the computed tokens of the session's latest request */
    size_t n;
    uint64_t used; /* the table's clock at the last use: the smallest is evicted first */
} entry;

struct sr_prefix_table {
    pthread_mutex_t mu;
    entry e[SR_PREFIX_MAX_SESSIONS];
    uint64_t clock;
    int64_t evictions;
    size_t total; /* tokens recorded over every entry */
    size_t max_tokens;
};

int sr_prefix_table_new(sr_prefix_table **out, size_t max_tokens, sr_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the prefix-omission table");
    (*out)->max_tokens = max_tokens ? max_tokens : SR_PREFIX_MAX_TOKENS;
    pthread_mutex_init(&(*out)->mu, NULL);
    return 0;
}

void sr_prefix_table_free(sr_prefix_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < SR_PREFIX_MAX_SESSIONS; i++) {
        free(t->e[i].key);
        free(t->e[i].tokens);
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

int64_t sr_prefix_hit(const int32_t *held, size_t n_held, const int32_t *prompt, size_t P,
                      int64_t block)
{
    if (P == 0 || block < 1)
        return 0;
    size_t n = n_held < P - 1 ? n_held : P - 1; /* the last prompt token is always recomputed */
    size_t common = 0;
    while (common < n && held[common] == prompt[common])
        common++;
    return (int64_t)common - (int64_t)common % block; /* whole blocks only */
}

static entry *find(sr_prefix_table *t, const char *session)
{
    for (int i = 0; i < SR_PREFIX_MAX_SESSIONS; i++)
        if (t->e[i].key && strcmp(t->e[i].key, session) == 0)
            return &t->e[i];
    return NULL;
}

int64_t sr_prefix_cached(sr_prefix_table *t, const char *session, const int32_t *prompt, size_t P,
                         int64_t block)
{
    pthread_mutex_lock(&t->mu);
    entry *e = find(t, session);
    int64_t hit = 0;
    if (e) {
        e->used = ++t->clock;
        hit = sr_prefix_hit(e->tokens, e->n, prompt, P, block);
    }
    pthread_mutex_unlock(&t->mu);
    return hit;
}

static void evict(sr_prefix_table *t, entry *e)
{
    t->total -= e->n;
    free(e->key);
    free(e->tokens);
    memset(e, 0, sizeof(*e));
    t->evictions++;
}

/* The least recently used session other than `keep`, or NULL when there is none. */
static entry *lru_other(sr_prefix_table *t, const entry *keep)
{
    entry *lru = NULL;
    for (int i = 0; i < SR_PREFIX_MAX_SESSIONS; i++)
        if (t->e[i].key && &t->e[i] != keep && (!lru || t->e[i].used < lru->used))
            lru = &t->e[i];
    return lru;
}

/* A free entry, else the least recently used one, emptied (its session is evicted). */
static entry *take(sr_prefix_table *t)
{
    for (int i = 0; i < SR_PREFIX_MAX_SESSIONS; i++)
        if (!t->e[i].key)
            return &t->e[i];
    entry *lru = lru_other(t, NULL);
    evict(t, lru);
    return lru;
}

int sr_prefix_record(sr_prefix_table *t, const char *session, const int32_t *prompt, size_t P,
                     const int32_t *out, int64_t n_out, sr_err *err)
{
    if (n_out < 0)
        n_out = 0;
    size_t n = P + (size_t)n_out;
    if (n > t->max_tokens) {
        /* Too long to keep: the session misses next time, as after an eviction. */
        pthread_mutex_lock(&t->mu);
        entry *e = find(t, session);
        if (e)
            evict(t, e);
        pthread_mutex_unlock(&t->mu);
        return 0;
    }
    int32_t *tok = malloc((n ? n : 1) * sizeof(int32_t));
    if (!tok)
        return sr_err_set(err, SR_E_NOMEM, "cannot record %zu tokens of session '%.64s'", n,
                          session);
    if (P)
        memcpy(tok, prompt, P * sizeof(int32_t));
    if (n_out)
        memcpy(tok + P, out, (size_t)n_out * sizeof(int32_t));
    pthread_mutex_lock(&t->mu);
    entry *e = find(t, session);
    /* Room for n tokens: the session's own old record goes, then the least recently used. */
    size_t own = e ? e->n : 0;
    for (entry *v; t->total - own + n > t->max_tokens && (v = lru_other(t, e));)
        evict(t, v);
    char *key = NULL;
    if (!e && !(key = strdup(session))) {
        pthread_mutex_unlock(&t->mu);
        free(tok);
        return sr_err_set(err, SR_E_NOMEM, "cannot record session '%.64s'", session);
    }
    if (!e) {
        e = take(t);
        e->key = key;
    }
    t->total = t->total - e->n + n;
    free(e->tokens);
    e->tokens = tok;
    e->n = n;
    e->used = ++t->clock;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

int64_t sr_prefix_evictions(sr_prefix_table *t)
{
    pthread_mutex_lock(&t->mu);
    int64_t n = t->evictions;
    pthread_mutex_unlock(&t->mu);
    return n;
}
