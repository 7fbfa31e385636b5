/*
 * Private to the meta files (meta.h): the probe context, one response kept as owned arrays, and
 * the per-response checks every relation shares. meta_ask.c defines them; meta_sync.c (the
 * relations that need a weight sync) and meta.c (the others, and the order) use them.
 */
#ifndef SR_META_PRIV_H
#define SR_META_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"

#define SR_META_MAX_PROMPT 256
#define SR_META_USER       3 /* tokens a "user" adds between turns */

/* One generate's answer, copied out of the conn (owned; release with sr_meta_resp_free). */
typedef struct sr_meta_resp {
    int32_t prompt[SR_META_MAX_PROMPT]; /* the probe's prompts (a replayed answer leaves it 0) */
    size_t P;
    int64_t start;   /* the first row asked for */
    int32_t *tokens; /* generated ids */
    size_t G;
    int has_routes;
    int32_t *rows; /* [n_rows][L][K], row r is position start + r */
    int64_t n_rows;
    int L, K;
    int64_t version; /* the engine's reported weight version, -1 unknown */
    char finish[16]; /* finish_reason, "" for null */
    int code;        /* 0, or the client's error (then nothing above past P is set) */
    int warm;        /* its cache salt was used before (a prefix may come from the cache) */
    int after_abort; /* it said "abort" and its decode failed after that (routes not null) */
} sr_meta_resp;

typedef struct sr_meta_ctx {
    sr_scenario_result *sc;
    const sr_client *c;
    sr_client_conn *k;
    const sr_meta_opts *o;
    sr_meta_stats *st;
    uint64_t draw;            /* the prompt generator's state */
    int salt_n;               /* salts handed out */
    int aborted;              /* a response finished "abort" (meta.missing_not_stale ran) */
    int synced;               /* a weight sync completed */
    int64_t held;             /* the highest weight version the engine reported, -1 none */
    unsigned failed, skipped; /* bit i: relation i of sr_meta_names failed / was skipped */
    sr_check_where at;        /* where a failure fired, before its row and layer */
    int once;                 /* record a relation's first failure only (replay: per session) */
} sr_meta_ctx;

/* The relation names (meta.h), in documentation order; *n gets the count. */
const char *const *sr_meta_names(int *n);

/* The index of relation `name` in that list, or -1. */
int sr_meta_index(const char *name);

void sr_meta_resp_free(sr_meta_resp *r);

/* The path where control plane `plane` reports the weight version (GET). */
const char *sr_meta_version_path(sr_sync_dialect plane);

/* The weight version engine 0 of c reports there (a number, or a string of digits; vLLM's label
 * "default", no publish yet, is `initial`: the version of the checkpoint it started on), else
 * `fallback`; -1 when neither is known. */
int64_t sr_meta_read_version(const sr_client *c, sr_sync_dialect plane, int64_t initial,
                             int64_t fallback);

/* The next prompt id (splitmix64 of the seed), in [1, min(vocab, 1000)). */
int32_t sr_meta_token(sr_meta_ctx *x);

/* Fills p[0..n) with fresh ids. */
void sr_meta_prompt(sr_meta_ctx *x, int32_t *p, size_t n);

/* A fresh cache salt into buf ("syncroll-probe-<seed>-<n>"). */
const char *sr_meta_salt(sr_meta_ctx *x, char *buf, size_t cap);

/* 1 when `n` more generates fit the budget and the deadline has not passed; else 0 and the
 * relation `name` is recorded as skipped with the reason. */
int sr_meta_afford(sr_meta_ctx *x, const char *name, int n);

/*
 * Sends prompt[0..P) from row `start` with `salt` (NULL: none), routes asked, and fills *r.
 * A failed generate is recorded as a check (meta.h) attributed to `relation`, and r->code is
 * set; the return value is 0 then too. Returns a negative code only for SR_E_NOMEM.
 */
int sr_meta_ask(sr_meta_ctx *x, sr_meta_resp *r, const int32_t *prompt, size_t P, int64_t start,
                const char *salt, int warm, const char *relation, sr_err *err);

/*
 * Copies a generate's outcome into *r (its prompt fields, start and warm already set): the
 * answer when rc is 0, or when the client named it client.aborted_turn for saying "abort" (kept
 * for meta.missing_not_stale; r->after_abort from the client's message `why`); any other rc is
 * only set as r->code. Returns 0, or SR_E_NOMEM.
 */
int sr_meta_keep(sr_meta_resp *r, int rc, const sr_client_result *res, const char *why,
                 sr_err *err);

/* The row of position pos at layer l (K ids), or NULL when r does not carry that position. */
const int32_t *sr_meta_row(const sr_meta_resp *r, int64_t pos, int l);

/* 1 when rows a and b of positions pa, pb are equal on every layer (a row holding a negative id
 * in a prompt position of a warm vllm-json response counts as unknown: equal). */
int sr_meta_same_row(const sr_meta_resp *a, int64_t pa, const sr_meta_resp *b, int64_t pb);

/*
 * The entropy floor of the rules that judge a coincidence. A row equal to its neighbour on every
 * layer (value_sanity's run of repeats, boundary_rows' copies) is judged only when the model's
 * route space, C(E, K)^L rows, is at least SR_META_SPACE_FLOOR: a real router then repeats a
 * whole row about never, while a small model (one layer, top-1 of 8) does it one row in 8 by
 * chance. A layer whose rows must move after a sync changed it (sync_effect) is judged only when
 * one layer's row can take at least SR_META_LAYER_FLOOR values.
 */
#define SR_META_SPACE_FLOOR 1e4
#define SR_META_LAYER_FLOOR 8.0

/* The values one row of r can take: C(E, K) at one layer (layers 1) or its L-th power (layers
 * r->L), stopping once it passes `cap`. E is the model's experts (opts.experts), else one more
 * than the largest id r holds (a lower bound, so the floor errs on the side of not judging). */
double sr_meta_route_space(const sr_meta_ctx *x, const sr_meta_resp *r, int layers, double cap);

/* 1 when the rows of r are above SR_META_SPACE_FLOOR (a repeat of a whole row is judged). */
int sr_meta_repeats_judged(const sr_meta_ctx *x, const sr_meta_resp *r);

/* Records a failed relation (meta.* name) with its message; counts the relation failed once
 * (with x->once, a relation that failed already is not recorded again). */
void sr_meta_fail(sr_meta_ctx *x, const char *name, int64_t row, int64_t layer, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));

/*
 * The checks every response gets: meta.row_count, meta.value_sanity and the prompt/output
 * boundary of meta.boundary_rows; a response that finished "abort" gets meta.missing_not_stale
 * instead. Returns how many failed.
 */
int sr_meta_check_resp(sr_meta_ctx *x, const sr_meta_resp *r, const char *what);

/*
 * Compares the rows of positions [lo, hi) of a and b under relation `name`; the first position
 * that differs is a failure naming `what`. Returns 1 on a failure, else 0.
 */
int sr_meta_same_span(sr_meta_ctx *x, const char *name, const sr_meta_resp *a,
                      const sr_meta_resp *b, int64_t lo, int64_t hi, const char *what);

/* The next turn's prompt into p (SR_META_MAX_PROMPT ids): t1's prompt and its output (as much of
 * them as fits before SR_META_USER ids) and SR_META_USER fresh "user" tokens; returns its length,
 * at most SR_META_MAX_PROMPT. */
size_t sr_meta_next_turn(sr_meta_ctx *x, int32_t *p, const sr_meta_resp *t1);

/* meta.boundary_rows at a turn boundary (meta.c): row b of t, the last sampled token of the
 * turn before, is a real route, not a placeholder (a negative id or one id twice) nor a copy of
 * a neighbour; `which` names t. Returns 1 when it failed. */
int sr_meta_turn_boundary(sr_meta_ctx *x, const sr_meta_resp *t, int64_t b, const char *which);

/* Relations that need a weight sync (meta_sync.c): sync_effect, cache_after_sync,
 * version_monotonic and the after-sync part of prefix_consistency. `base` is the first answer,
 * whose prompt the relations ask again under known weights. */
int sr_meta_sync_relations(sr_meta_ctx *x, const sr_meta_resp *base, sr_err *err);

/* meta.stack_contract (meta_stack.c): two capture requests over opts.stack_client. */
int sr_meta_stack_contract(sr_meta_ctx *x, sr_err *err);

#endif /* SR_META_PRIV_H */
