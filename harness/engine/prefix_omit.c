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
};

int sr_prefix_table_new(sr_prefix_table **out, sr_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the prefix-omission table");
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

/* A free entry, else the least recently used one, emptied (its session is evicted). */
static entry *take(sr_prefix_table *t)
{
    entry *lru = &t->e[0];
    for (int i = 0; i < SR_PREFIX_MAX_SESSIONS; i++) {
        if (!t->e[i].key)
            return &t->e[i];
        if (t->e[i].used < lru->used)
            lru = &t->e[i];
    }
    free(lru->key);
    free(lru->tokens);
    memset(lru, 0, sizeof(*lru));
    t->evictions++;
    return lru;
}

int sr_prefix_record(sr_prefix_table *t, const char *session, const int32_t *prompt, size_t P,
                     const int32_t *out, int64_t n_out, sr_err *err)
{
    if (n_out < 0)
        n_out = 0;
    size_t n = P + (size_t)n_out;
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
