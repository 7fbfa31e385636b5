/*
 * Private to sr_jdom*.c: the parser object shared by the parser (sr_jdom.c), the decimal to
 * double conversion (sr_jdom_num.c) and the duplicate-key check of the reference rules
 * (sr_jdom_keys.c). Not part of the library's contract.
 */
#ifndef SR_JDOM_PRIV_H
#define SR_JDOM_PRIV_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

#include "sr_jdom.h"

/* A chunk's bytes follow its header; 16 header bytes keep them as aligned as malloc's. */
typedef struct chunk {
    struct chunk *next;
    size_t size;
} chunk;

#define CHUNK_DATA(c) ((unsigned char *)(c) + sizeof(chunk))

/* The first chunk's size: the non-blob remainder of a typical response body fits in it. */
#define CHUNK_MIN ((size_t)32 << 10)

struct sr_jdom {
    chunk *head, *tail;
    chunk *cur;         /* the chunk being filled; NULL until a parse takes its first bytes */
    uintptr_t pos, lim; /* the free bytes of cur; both 0 when cur is NULL */
    size_t behind;      /* bytes of the chunks this parse has moved past */
    size_t capacity;    /* sum of the chunks' sizes */
    size_t nchunks;
    size_t max;
    locale_t c_locale; /* numbers are converted in the "C" locale whatever the process's is */
    unsigned flags;    /* SR_JDOM_REFERENCE */
    cJSON *stack[SR_JDOM_MAX_DEPTH];

    /* SR_JDOM_REFERENCE: the keys of the open objects (sr_jdom_keys.c). */
    struct jdom_key *keys;
    size_t nkeys, cap_keys;
    size_t key_base[SR_JDOM_MAX_DEPTH]; /* per open container: its first key in `keys` */
    size_t dup_off;                     /* text offset of the held duplicate key, or SIZE_MAX */
    sr_err dup;                         /* its error, reported once the whole text parsed */
};

/* One key of an open object: its unescaped bytes (in the arena) and its text offset. */
typedef struct jdom_key {
    const char *s;
    size_t len, off;
} jdom_key;

/*
 * m * 10^e10 rounded to the nearest double exactly as strtod rounds it, when that can be done
 * with one double operation (Clinger's fast path), one product with a 128-bit power of five
 * (|e10| <= 64, unless the product cannot decide) or exact 128-bit integer arithmetic; returns 1
 * with *out set, or 0 when the caller must use strtod (sr_jdom_num.c).
 */
int sr_jdom_i_decimal(uint64_t m, int e10, double *out);

/* Grows j->keys by at least one slot (SR_E_NOMEM). */
int sr_jdom_i_keys_grow(sr_jdom *j, sr_err *err);

/* Records the key just parsed of the innermost open object (SR_E_NOMEM). Inline: every member
 * of a response body's objects passes here. */
static inline int sr_jdom_i_key_push(sr_jdom *j, const char *s, size_t len, size_t off, sr_err *err)
{
    if (j->nkeys == j->cap_keys) {
        int rc = sr_jdom_i_keys_grow(j, err);
        if (rc)
            return rc;
    }
    j->keys[j->nkeys++] = (jdom_key){s, len, off};
    return 0;
}

/*
 * The object stack[depth] closes: checks its keys (those from key_base[depth] on) for one that
 * appears twice and drops them. The duplicate earliest in the text is held in j->dup, its message
 * naming the member's JSON path and the key. SR_E_NOMEM.
 */
int sr_jdom_i_keys_close(sr_jdom *j, size_t depth, sr_err *err);

#endif /* SR_JDOM_PRIV_H */
