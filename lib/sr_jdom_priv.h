/*
 * Private to sr_jdom*.c: the parser object shared by the parser (sr_jdom.c), its arena growth,
 * errors and strings (sr_jdom_str.c), the decimal to double conversion (sr_jdom_num.c) and the
 * duplicate-key check of the reference rules (sr_jdom_keys.c). Not part of the library's
 * contract.
 */
#ifndef SR_JDOM_PRIV_H
#define SR_JDOM_PRIV_H

#include <float.h>
#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* One parse: the text, where errors go, and what the last string and key were. */
typedef struct jdom_parser {
    sr_jdom *j;
    const unsigned char *t;   /* the text */
    const unsigned char *end; /* t + n, where the NUL sentinel is */
    sr_err *err;
    int rc;      /* the error of a function that returned NULL */
    int nul;     /* the last string parsed held an escaped NUL */
    int esc;     /* the last string parsed held an escape */
    int not_int; /* SR_JDOM_NOT_INT under the reference rules, else 0 */
    /* The last key parsed that had no escape: the members of an array of objects repeat their
     * keys, and a key whose text equals it takes its arena copy (sr_jdom.c, parse_key). */
    const char *last_key;
    size_t last_len;
    /* That key followed by '"' and ':' as two 8-byte words of text, the masks of its kpat_len
     * bytes (0: the key has an escape or is longer than 14 bytes) and of the bytes before the
     * ':': one_member and parse_key in sr_jdom.c compare the text after an object's '{' or at a
     * key with it in two word compares. */
    uint64_t kw[2], km[2], kq[2];
    size_t kpat_len;
    /* Where reading by the word may start: a digit run's 8 bytes from q <= wlim, a short
     * string's 16 from its first byte s <= slim (both 0 under SR_JDOM_I_GENERAL, so that the
     * byte loops do all). */
    uintptr_t wlim, slim;
} jdom_parser;

/* In j->flags, for tests only: the parse takes none of its fast paths, so that tests can hold
 * them to the general ones (unit.jdom_fast, unit.jdom_num, fuzz_jdom): no key pattern is made,
 * so neither an object whose first member repeats the last key (sr_jdom.c, one_member) nor a key
 * is compared with it by the word, and digits (sr_jdom.c, digit_run) and short strings
 * (sr_jdom_i_short_ascii) are read byte by byte. */
#define SR_JDOM_I_GENERAL (1u << 8)

/* A word's low k bytes set (k <= 8). */
static inline uint64_t sr_jdom_i_low_bytes(size_t k)
{
    return k >= 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * k)) - 1;
}

/* Moves the arena to a chunk with `size` free bytes: the next one kept from earlier parses, or a
 * new one (SR_E_LIMIT past the maximum, SR_E_NOMEM), with p->rc set (sr_jdom_str.c). */
int sr_jdom_i_arena_grow(jdom_parser *p, size_t size);

/* `size` bytes aligned to `align` (a power of two up to 16), or NULL with p->rc set. */
static inline void *take(jdom_parser *p, size_t size, size_t align)
{
    sr_jdom *j = p->j;
    uintptr_t a = (j->pos + (align - 1)) & ~(uintptr_t)(align - 1);
    if (a > j->lim || size > j->lim - a) {
        if (sr_jdom_i_arena_grow(p, size))
            return NULL;
        a = j->pos;
    }
    j->pos = a + size;
    return (void *)a;
}

/* Sets the error `code` at text byte `at` ("json: <what> at byte N") and returns it in p->rc. */
int sr_jdom_i_fail_at(jdom_parser *p, int code, const unsigned char *at, const char *what);

static inline int sr_jdom_i_syntax(jdom_parser *p, const unsigned char *at, const char *what)
{
    return sr_jdom_i_fail_at(p, SR_E_JSON_SYNTAX, at, what);
}

/* sr_jdom_i_parse_string past its fast path (which has cleared p->nul): any string, escapes and
 * UTF-8 checks included. Under the reference rules the raw bytes must be UTF-8 (escapes are
 * ASCII, so checking the raw text checks every byte that is not an escape) (sr_jdom_str.c). */
int sr_jdom_i_parse_string_general(jdom_parser *p, const unsigned char **ps, char **out,
                                   size_t *outlen);

/* The high bit of every byte of w that is '"', '\\' or below 0x20 (a string's stops). Exact for
 * the lowest such byte: a borrow only moves up from a byte that is flagged already. */
static inline uint64_t sr_jdom_i_stops(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t xq = w ^ (ones * '"'), xb = w ^ (ones * '\\');
    return (((xq - ones) & ~xq) | ((xb - ones) & ~xb) | ((w - ones * 0x20) & ~w)) & highs;
}

/*
 * The fast path of sr_jdom_i_parse_string for keys and short values: a string of fewer than 16
 * bytes, all ASCII and none a backslash or control byte, read as two words (the caller has
 * checked that the 16 bytes after the opening quote are readable), where the arena's chunk has
 * 16 free bytes: the copy is the two words stored with the bytes from the closing quote on
 * zeroed (the bytes past the NUL are free arena that later takes overwrite). Returns 1 with the
 * results set as sr_jdom_i_parse_string sets them, or 0 (nothing done) for the general path.
 */
static inline int sr_jdom_i_short_ascii(jdom_parser *p, const unsigned char **ps, char **out,
                                        size_t *outlen)
{
    const unsigned char *s = *ps + 1;
    uint64_t w0, w1, st;
    memcpy(&w0, s, 8);
    memcpy(&w1, s + 8, 8);
    size_t len;
    if ((st = sr_jdom_i_stops(w0)) != 0)
        len = (size_t)__builtin_ctzll(st) >> 3;
    else if ((st = sr_jdom_i_stops(w1)) != 0)
        len = 8 + ((size_t)__builtin_ctzll(st) >> 3);
    else
        return 0;
    uint64_t m0 = sr_jdom_i_low_bytes(len), m1 = len > 8 ? sr_jdom_i_low_bytes(len - 8) : 0;
    if (s[len] != '"' || (((w0 & m0) | (w1 & m1)) & 0x8080808080808080ull))
        return 0;
    sr_jdom *j = p->j;
    if (j->lim - j->pos < 16)
        return 0;
    unsigned char *dst = (unsigned char *)j->pos; /* take(p, len + 1, 1) */
    j->pos += len + 1;
    w0 &= m0;
    w1 &= m1;
    memcpy(dst, &w0, 8);
    memcpy(dst + 8, &w1, 8);
    p->esc = 0;
    *out = (char *)dst;
    *outlen = len;
    *ps = s + len + 1;
    return 1;
}

/*
 * Parses the string whose opening quote is at *ps into a NUL-terminated arena copy; *outlen is
 * its unescaped length (NULs included), p->nul and p->esc tell whether it held an escaped NUL or
 * any escape, and *ps moves past the closing quote. Errors (with p->rc set) as sr_jdom.h lists
 * for strings. Inline: a body's keys and short values take the fast path, without a call.
 */
static inline __attribute__((always_inline)) int
sr_jdom_i_parse_string(jdom_parser *p, const unsigned char **ps, char **out, size_t *outlen)
{
    p->nul = 0;
    if ((uintptr_t)*ps + 1 <= p->slim && sr_jdom_i_short_ascii(p, ps, out, outlen))
        return 0;
    return sr_jdom_i_parse_string_general(p, ps, out, outlen);
}

/* 10^0 .. 10^22, the powers of ten that doubles hold exactly (sr_jdom_num.c). */
extern const double sr_jdom_i_pow10[23];

/* sr_jdom_i_decimal past Clinger's fast path: the product with a power of five, then exact
 * 128-bit arithmetic (sr_jdom_num.c). */
int sr_jdom_i_decimal_wide(uint64_t m, int e10, double *out);

/*
 * m * 10^e10 rounded to the nearest double exactly as strtod rounds it, when that can be done
 * with one double operation (Clinger's fast path), one product with a 128-bit power of five
 * (|e10| <= 64, unless the product cannot decide) or exact 128-bit integer arithmetic; returns 1
 * with *out set, or 0 when the caller must use strtod. Inline: the fast path is a few
 * instructions, and every number of a body takes it or the call after it.
 */
static inline int sr_jdom_i_decimal(uint64_t m, int e10, double *out)
{
    /* The fast path needs each double operation rounded once, straight to double precision. */
#if FLT_EVAL_METHOD == 0
    if (m <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
        double d = (double)m;
        *out = e10 < 0 ? d / sr_jdom_i_pow10[-e10] : d * sr_jdom_i_pow10[e10];
        return 1;
    }
#endif
    return sr_jdom_i_decimal_wide(m, e10, out);
}

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
