#include "jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Shortest round-trip digits: glibc's printf rounds correctly, so the p-digit rendering is the
 * p-digit decimal nearest to v; if it reads back as v, so does every longer one. That makes the
 * predicate monotonic in p and a search over 1..17 finds the shortest, which is also what Ryu
 * returns (the nearest among the shortest).
 */
static int digits_at(char *digits, int *exp10, double a, int p)
{
    char tmp[48];
    snprintf(tmp, sizeof(tmp), "%.*e", p - 1, a);
    int n = 0;
    const char *s = tmp;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            digits[n++] = *s;
    digits[n] = '\0';
    *exp10 = atoi(s + 1);
    return strtod(tmp, NULL) == a;
}

/*
 * At an exact power of two the gap below v is half the gap above it, so the nearest p-digit
 * decimal may miss while the one above still reads back; Ryu returns that one. Checks it.
 */
static int digits_up(char *digits, int *exp10, double a, int p)
{
    char d[24];
    int e;
    digits_at(d, &e, a, p);
    int i = p - 1;
    while (i >= 0 && d[i] == '9')
        d[i--] = '0';
    if (i < 0) {
        memmove(d + 1, d, (size_t)p);
        d[0] = '1';
        d[p] = '\0';
        e++;
    } else {
        d[i]++;
    }
    char tmp[48];
    snprintf(tmp, sizeof(tmp), "%c.%se%d", d[0], d + 1, e);
    if (strtod(tmp, NULL) != a)
        return 0;
    memcpy(digits, d, (size_t)p + 1);
    *exp10 = e;
    return 1;
}

/* digits_at, remembering the digits of the last precision that read back in *ok (ok->p). */
typedef struct probe_ok {
    char digits[24];
    int exp10, p;
} probe_ok;

static int probe(probe_ok *ok, double a, int p)
{
    char d[24];
    int e;
    if (!digits_at(d, &e, a, p))
        return 0;
    memcpy(ok->digits, d, sizeof d);
    ok->exp10 = e;
    ok->p = p;
    return 1;
}

/*
 * Rounds the 17 significant digits d17 (of exponent e) to p < 17 digits into out (NUL ended) and
 * *eout. Returns 0 when the digits past p are exactly half a unit ('5', "50", ...): then the
 * exact value may lie on either side and only formatting it at p digits tells.
 */
static int round_digits(char *out, int *eout, const char *d17, int e, int p)
{
    int cmp = d17[p] - '5';
    for (int i = p + 1; i < 17 && cmp == 0; i++)
        cmp = d17[i] != '0';
    if (cmp == 0)
        return 0;
    memcpy(out, d17, (size_t)p);
    out[p] = '\0';
    *eout = e;
    if (cmp < 0)
        return 1;
    int i = p - 1;
    while (i >= 0 && out[i] == '9')
        out[i--] = '0';
    if (i >= 0) {
        out[i]++;
        return 1;
    }
    out[0] = '1'; /* 9.99..9 rounds to 1.00..0 of the next decade */
    *eout = e + 1;
    return 1;
}

/* 1 when the digits d (at most 17; exponent e, |e| < 1000) read back as a. The text is built by
 * hand: a snprintf here cost as much as the strtod. */
static int reads_back(const char *d, int e, double a)
{
    char tmp[48];
    size_t n = strlen(d), i = 0;
    tmp[i++] = d[0];
    tmp[i++] = '.';
    memcpy(tmp + i, d + 1, n - 1);
    i += n - 1;
    tmp[i++] = 'e';
    if (e < 0) {
        tmp[i++] = '-';
        e = -e;
    }
    if (e >= 100)
        tmp[i++] = (char)('0' + e / 100);
    if (e >= 10)
        tmp[i++] = (char)('0' + e / 10 % 10);
    tmp[i++] = (char)('0' + e % 10);
    tmp[i] = '\0';
    return strtod(tmp, NULL) == a;
}

/*
 * The common cases of shortest() with one formatting: the 17 digits (which always read back)
 * give the 16- and 15-digit roundings of the exact value unless the digits past them are a tie
 * in the 17-digit text (round_digits). The engine's profile had two snprintf and two strtod per
 * logprob here; this is one snprintf and one or two strtod. Returns 0 when it cannot decide (a
 * tie, a power of two, 15 digits or fewer): the search then runs as before.
 */
static int shortest_fast(char *digits, int *exp10, double a)
{
    int e2;
    if (frexp(a, &e2) == 0.5)
        return 0;
    char tmp[48], d17[18], d16[18], d15[18];
    snprintf(tmp, sizeof(tmp), "%.16e", a);
    int n = 0;
    const char *s = tmp;
    for (; *s && *s != 'e' && n < 17; s++)
        if (*s >= '0' && *s <= '9')
            d17[n++] = *s;
    if (n != 17 || *s != 'e')
        return 0;
    d17[17] = '\0';
    int e = atoi(s + 1), e16, e15;
    if (!round_digits(d16, &e16, d17, e, 16))
        return 0;
    if (!reads_back(d16, e16, a)) {
        memcpy(digits, d17, sizeof d17);
        *exp10 = e;
        return 1;
    }
    if (!round_digits(d15, &e15, d17, e, 15) || reads_back(d15, e15, a))
        return 0;
    memcpy(digits, d16, 17);
    *exp10 = e16;
    return 1;
}

static void shortest(char *digits, int *exp10, double a)
{
    if (shortest_fast(digits, exp10, a))
        return;
    int e;
    int pow2 = frexp(a, &e) == 0.5;
    int lo = 1, hi = 17;
    probe_ok ok = {"", 0, 0};
    /* Most values of interest need 15-17 digits; probe there first. */
    if (!probe(&ok, a, 16))
        lo = 17;
    else if (!probe(&ok, a, 15))
        lo = hi = 16;
    else
        hi = 15;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (probe(&ok, a, mid))
            hi = mid;
        else
            lo = mid + 1;
    }
    if (pow2 && lo > 1 && digits_up(digits, exp10, a, lo - 1))
        return;
    /* The engine's per-reply profile had this format repeated for every logprob: the digits
     * of precision lo were usually just computed by the search. */
    if (ok.p == lo) {
        memcpy(digits, ok.digits, sizeof ok.digits);
        *exp10 = ok.exp10;
        return;
    }
    digits_at(digits, exp10, a, lo);
}

static size_t write_exp(char *p, int e)
{
    return (size_t)sprintf(p, "%d", e);
}

size_t sr_jw_format_double(char *dst, double v)
{
    if (!isfinite(v)) {
        memcpy(dst, "null", 5);
        return 4;
    }
    size_t i = 0;
    if (signbit(v))
        dst[i++] = '-';
    double a = fabs(v);
    if (a == 0.0) {
        memcpy(dst + i, "0.0", 4);
        return i + 3;
    }
    char d[24];
    int e10;
    shortest(d, &e10, a);
    int len = (int)strlen(d);
    while (len > 1 && d[len - 1] == '0')
        d[--len] = '\0';
    int k = e10 - (len - 1); /* value = d * 10^k */
    int kk = len + k;        /* 10^(kk-1) <= value < 10^kk */
    if (k >= 0 && kk <= 16) {
        memcpy(dst + i, d, (size_t)len);
        i += (size_t)len;
        for (int z = len; z < kk; z++)
            dst[i++] = '0';
        dst[i++] = '.';
        dst[i++] = '0';
    } else if (kk > 0 && kk <= 16) {
        memcpy(dst + i, d, (size_t)kk);
        i += (size_t)kk;
        dst[i++] = '.';
        memcpy(dst + i, d + kk, (size_t)(len - kk));
        i += (size_t)(len - kk);
    } else if (kk > -5 && kk <= 0) {
        dst[i++] = '0';
        dst[i++] = '.';
        for (int z = 0; z < -kk; z++)
            dst[i++] = '0';
        memcpy(dst + i, d, (size_t)len);
        i += (size_t)len;
    } else {
        dst[i++] = d[0];
        if (len > 1) {
            dst[i++] = '.';
            memcpy(dst + i, d + 1, (size_t)(len - 1));
            i += (size_t)(len - 1);
        }
        dst[i++] = 'e';
        i += write_exp(dst + i, kk - 1);
    }
    dst[i] = '\0';
    return i;
}

int sr_jw_double(sr_buf *b, double v, sr_err *err)
{
    char tmp[SR_JW_DOUBLE_MAX];
    size_t n = sr_jw_format_double(tmp, v);
    return sr_buf_append(b, tmp, n, err);
}

int sr_jw_string(sr_buf *b, const char *s, size_t n, sr_err *err)
{
    static const char hex[] = "0123456789abcdef";
    /* Worst case: every byte becomes \u00XX (6 bytes), plus the quotes. */
    if (n > (SIZE_MAX - 2) / 6)
        return sr_err_set(err, SR_E_LIMIT, "string too long to serialise");
    int rc = sr_buf_reserve(b, n * 6 + 2, err);
    if (rc)
        return rc;
    char *o = b->data + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c >= 0x20) {
            *o++ = (char)c;
        } else {
            *o++ = '\\';
            switch (c) {
            case '\b':
                *o++ = 'b';
                break;
            case '\f':
                *o++ = 'f';
                break;
            case '\n':
                *o++ = 'n';
                break;
            case '\r':
                *o++ = 'r';
                break;
            case '\t':
                *o++ = 't';
                break;
            default:
                *o++ = 'u';
                *o++ = '0';
                *o++ = '0';
                *o++ = hex[c >> 4];
                *o++ = hex[c & 15];
            }
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
    return 0;
}

int sr_jw_str(sr_buf *b, const char *s, sr_err *err)
{
    return sr_jw_string(b, s, strlen(s), err);
}

static size_t put_i64(char *o, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t i = 0;
    if (v < 0)
        o[i++] = '-';
    while (n)
        o[i++] = tmp[--n];
    return i;
}

int sr_jw_i64(sr_buf *b, int64_t v, sr_err *err)
{
    char tmp[24];
    size_t n = put_i64(tmp, v);
    return sr_buf_append(b, tmp, n, err);
}

int sr_jw_i32_array(sr_buf *b, const int32_t *v, size_t n, sr_err *err)
{
    /* An int32 takes at most 11 characters plus a comma. */
    if (n > (SIZE_MAX - 2) / 12)
        return sr_err_set(err, SR_E_LIMIT, "array too long to serialise");
    int rc = sr_buf_reserve(b, n * 12 + 2, err);
    if (rc)
        return rc;
    char *o = b->data + b->len;
    *o++ = '[';
    for (size_t i = 0; i < n; i++) {
        if (i)
            *o++ = ',';
        o += put_i64(o, v[i]);
    }
    *o++ = ']';
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
    return 0;
}

int sr_jw_hex64(sr_buf *b, uint64_t v, sr_err *err)
{
    return sr_buf_printf(b, err, "\"%016llx\"", (unsigned long long)v);
}
