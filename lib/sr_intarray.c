#include "sr_intarray.h"

#include <string.h>

enum {
    ST_FIRST = 0, /* just after '[': a value or ']' */
    ST_VALUE,     /* after ',': a value */
    ST_MINUS,     /* after '-': a digit */
    ST_ZERO,      /* a value that is exactly 0 or -0: a delimiter */
    ST_DIGITS,    /* inside a value's digits */
    ST_AFTER,     /* after a value: ',' or ']' */
    ST_DONE
};

sr_dtype sr_intarray_dtype(int64_t min, int64_t max)
{
    return (min >= INT32_MIN && max <= INT32_MAX) ? SR_DTYPE_INT32 : SR_DTYPE_INT64;
}

size_t sr_intarray_max_values(size_t n)
{
    return n / 2 + 1;
}

void sr_intarray_init(sr_intarray_parser *p, int64_t min, int64_t max)
{
    memset(p, 0, sizeof(*p));
    p->min = min;
    p->max = max;
    p->width = sr_intarray_dtype(min, max) == SR_DTYPE_INT32 ? 4 : 8;
    p->state = ST_FIRST;
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int syntax(sr_intarray_parser *p, uint64_t at, unsigned char c, const char *what,
                  sr_err *err)
{
    p->state = ST_DONE;
    if (c >= 0x20 && c < 0x7f)
        return sr_err_set_at(err, SR_E_INTARRAY_SYNTAX, (int64_t)at,
                             "integer array: %s at byte %llu, got '%c'", what,
                             (unsigned long long)at, c);
    return sr_err_set_at(err, SR_E_INTARRAY_SYNTAX, (int64_t)at,
                         "integer array: %s at byte %llu, got byte 0x%02x", what,
                         (unsigned long long)at, c);
}

/* Stores the pending value after its range checks. */
static int emit(sr_intarray_parser *p, void *dst, sr_err *err)
{
    int64_t v = 0;
    int bad = p->overflow;
    if (!bad && !p->neg) {
        bad = p->mag > (uint64_t)INT64_MAX;
        v = (int64_t)p->mag;
    } else if (!bad) {
        bad = p->mag > (uint64_t)INT64_MAX + 1;
        v = p->mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)p->mag;
    }
    if (bad || v < p->min || v > p->max) {
        p->state = ST_DONE;
        if (bad)
            return sr_err_set_at(err, SR_E_INTARRAY_STRICT, (int64_t)p->start,
                                 "integer array: value at byte %llu does not fit 64 bits",
                                 (unsigned long long)p->start);
        return sr_err_set_at(err, SR_E_INTARRAY_STRICT, (int64_t)p->start,
                             "integer array: value %lld at byte %llu is outside [%lld, %lld]",
                             (long long)v, (unsigned long long)p->start, (long long)p->min,
                             (long long)p->max);
    }
    if (p->width == 4) {
        int32_t w = (int32_t)v;
        memcpy((char *)dst + p->count * 4, &w, 4);
    } else {
        memcpy((char *)dst + p->count * 8, &v, 8);
    }
    p->count++;
    return 0;
}

static void begin_value(sr_intarray_parser *p, unsigned char c, uint64_t at)
{
    p->start = at;
    p->neg = c == '-';
    p->overflow = 0;
    p->mag = 0;
    if (c == '-')
        p->state = ST_MINUS;
    else if (c == '0')
        p->state = ST_ZERO;
    else {
        p->mag = (uint64_t)(c - '0');
        p->state = ST_DIGITS;
    }
}

/* Handles the byte that ends a value (ws, ',' or ']'); returns 1 at ']', 0, or an error. */
static int end_value(sr_intarray_parser *p, void *dst, unsigned char c, uint64_t at, sr_err *err)
{
    if (c == '.' || c == 'e' || c == 'E')
        return syntax(p, at, c, "expected an integer (no fraction or exponent)", err);
    if (c >= '0' && c <= '9')
        return syntax(p, at, c, "expected no leading zero", err);
    if (!is_ws(c) && c != ',' && c != ']')
        return syntax(p, at, c, "expected ',' or ']' after a value", err);
    int rc = emit(p, dst, err);
    if (rc)
        return rc;
    p->state = c == ',' ? ST_VALUE : c == ']' ? ST_DONE : ST_AFTER;
    return c == ']';
}

/*
 * The common case, compact non-negative values ("123,45,6"), without the state machine: takes
 * values while each is 1-18 digits without a leading zero followed by ',' inside the buffer, and
 * stops (returning the bytes taken, all before a value's first byte) at anything else, which the
 * general loop then handles with exact errors.
 */
static size_t fast_values(sr_intarray_parser *p, void *dst, const unsigned char *u, size_t n,
                          size_t i)
{
    size_t start = i;
    uint64_t lim = p->max < 0 ? 0 : (uint64_t)p->max;
    int ok_min = p->min <= 0;
    while (ok_min && i + 20 <= n) {
        if ((unsigned)(u[i] - '1') > 8) /* a value starts with 1..9 here */
            break;
        /* Up to 7 digits at once (SWAR): find the first non-digit of 8 bytes, then convert. */
        uint64_t x, v;
        memcpy(&x, u + i, 8);
        uint64_t t = x - 0x3030303030303030ull;
        uint64_t nd = (t | (t + 0x7676767676767676ull)) & 0x8080808080808080ull;
        size_t len = nd ? (size_t)__builtin_ctzll(nd) / 8 : 8, j;
        if (len < 8) {
            t <<= 8 * (8 - len);
            t = (t & 0x0f0f0f0f0f0f0f0full) * 2561 >> 8;
            t = (t & 0x00ff00ff00ff00ffull) * 6553601 >> 16;
            v = (t & 0x0000ffff0000ffffull) * 42949672960001ull >> 32;
            j = i + len;
        } else {
            v = 0;
            for (j = i; j - i < 18 && u[j] >= '0' && u[j] <= '9'; j++)
                v = v * 10 + (uint64_t)(u[j] - '0');
        }
        if (u[j] != ',' || v > lim)
            break;
        if (p->width == 4) {
            int32_t w = (int32_t)v;
            memcpy((char *)dst + p->count * 4, &w, 4);
        } else {
            int64_t w = (int64_t)v;
            memcpy((char *)dst + p->count * 8, &w, 8);
        }
        p->count++;
        i = j + 1;
    }
    return i - start;
}

/* One byte outside a value's digits; returns 1 when it is the closing ']', 0, or an error. */
static int step(sr_intarray_parser *p, unsigned char c, uint64_t at, sr_err *err)
{
    switch (p->state) {
    case ST_FIRST:
    case ST_VALUE:
        if ((c >= '0' && c <= '9') || c == '-')
            begin_value(p, c, at);
        else if (c == ']' && p->state == ST_FIRST)
            return 1;
        else if (!is_ws(c))
            return syntax(p, at, c, "expected an integer", err);
        return 0;
    case ST_MINUS:
        if (c < '0' || c > '9')
            return syntax(p, at, c, "expected a digit after '-'", err);
        begin_value(p, c, p->start);
        p->neg = 1;
        return 0;
    case ST_AFTER:
        if (c == ',')
            p->state = ST_VALUE;
        else if (c == ']')
            return 1;
        else if (!is_ws(c))
            return syntax(p, at, c, "expected ',' or ']'", err);
        return 0;
    default:
        return sr_err_set(err, SR_E_INTERNAL, "integer array: bad parser state");
    }
}

int sr_intarray_feed(sr_intarray_parser *p, void *dst, const char *s, size_t n, size_t *consumed,
                     int *done, sr_err *err)
{
    const unsigned char *u = (const unsigned char *)s;
    *consumed = 0;
    *done = 0;
    if (p->state == ST_DONE)
        return sr_err_set(err, SR_E_INVAL, "integer array: fed after its end or an error");
    size_t i = 0;
    int r = 0;
    while (i < n && r == 0) {
        if (p->state == ST_VALUE || p->state == ST_FIRST) {
            size_t k = fast_values(p, dst, u, n, i);
            if (k) {
                i += k;
                p->state = ST_VALUE;
                if (i == n)
                    break;
            }
        }
        unsigned char c = u[i];
        if (p->state == ST_DIGITS) {
            /* The hot loop: most bytes of a token-id array are digits of a running value. */
            while (c >= '0' && c <= '9') {
                if (p->mag > (UINT64_MAX - 9) / 10)
                    p->overflow = 1;
                else
                    p->mag = p->mag * 10 + (uint64_t)(c - '0');
                if (++i == n)
                    break;
                c = u[i];
            }
            if (i == n)
                break;
        }
        if (p->state == ST_DIGITS || p->state == ST_ZERO)
            r = end_value(p, dst, c, p->pos + i, err);
        else
            r = step(p, c, p->pos + i, err);
        if (r < 0) {
            p->pos += i;
            *consumed = i;
            return r;
        }
        i++;
    }
    p->pos += i;
    *consumed = i;
    if (r == 1) {
        p->state = ST_DONE;
        *done = 1;
    }
    return 0;
}

int sr_intarray_parse(void *dst, size_t *count, size_t *end, const char *s, size_t n, int64_t min,
                      int64_t max, sr_err *err)
{
    *count = 0;
    *end = 0;
    size_t i = 0;
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    if (i == n)
        return sr_err_set_at(err, SR_E_INTARRAY_SYNTAX, (int64_t)n,
                             "integer array: text ends before '['");
    if (s[i] != '[') {
        sr_intarray_parser tmp;
        sr_intarray_init(&tmp, min, max);
        return syntax(&tmp, i, (unsigned char)s[i], "expected '['", err);
    }
    i++;
    sr_intarray_parser p;
    sr_intarray_init(&p, min, max);
    p.pos = i;
    size_t used = 0;
    int done = 0;
    int rc = sr_intarray_feed(&p, dst, s + i, n - i, &used, &done, err);
    if (rc)
        return rc;
    if (!done)
        return sr_err_set_at(err, SR_E_INTARRAY_SYNTAX, (int64_t)n,
                             "integer array: text ends before ']'");
    *count = (size_t)p.count;
    *end = i + used;
    return 0;
}
