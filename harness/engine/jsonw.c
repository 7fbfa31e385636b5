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

/*
 * The same probes in integer arithmetic, for the values most logprobs take: a = m 2^-s with
 * 10^-6 <= a < 10 (decimal exponent e10 in [-6, 0]). At p digits the scale 10^k, k = p - 1 - e10
 * <= 22, keeps N = m 10^k below 2^127, so the correctly rounded p-digit decimal (what glibc's
 * printf writes: round half to even) is D = N / 2^s rounded, and it reads back (what strtod
 * decides: round half to even) when |D 2^s - N| is below half the gap to the neighbouring double
 * in the same scale (10^k / 2, or 10^k / 4 below a power of two), or equal to it with m even.
 * The answers equal snprintf's and strtod's, so shortest() makes the same choices with them;
 * tests compare both paths (sr_jw_format_double_libc). Of the boundary rules, only printf's
 * half-to-even is met in this range (1 + 2^-17 at 17 digits): a midpoint between two doubles
 * here has more than 40 significant digits, so strtod's tie never arises, and no power of two
 * of the range has its answer below it by more than a quarter gap; both are kept as defined.
 */
typedef unsigned __int128 u128;

typedef struct exact {
    uint64_t m; /* significand with the implicit bit, 2^52 <= m < 2^53 */
    int s;      /* a = m 2^-s, 1 <= s <= 100 */
    int e10;    /* 10^e10 <= a < 10^(e10 + 1) */
    int pow2;   /* m == 2^52: the gap below is half the gap above */
} exact;

static const uint64_t POW10[20] = {1ull,
                                   10ull,
                                   100ull,
                                   1000ull,
                                   10000ull,
                                   100000ull,
                                   1000000ull,
                                   10000000ull,
                                   100000000ull,
                                   1000000000ull,
                                   10000000000ull,
                                   100000000000ull,
                                   1000000000000ull,
                                   10000000000000ull,
                                   100000000000000ull,
                                   1000000000000000ull,
                                   10000000000000000ull,
                                   100000000000000000ull,
                                   1000000000000000000ull,
                                   10000000000000000000ull};

/* 10^k for 0 <= k <= 38. */
static u128 pow10_u128(int k)
{
    return k < 20 ? (u128)POW10[k] : (u128)POW10[19] * POW10[k - 19];
}

/* 1 when a is in the integer path's range; fills *x. */
static int exact_init(exact *x, double a)
{
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int be = (int)(bits >> 52 & 0x7FF);
    if (be == 0 || be == 0x7FF)
        return 0;
    x->m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    x->s = 1075 - be;
    if (x->s < 1 || x->s > 100) /* a < 2^-48: below the range anyway; keeps 10 2^s in range */
        return 0;
    x->pow2 = x->m == 1ull << 52;
    u128 one = (u128)1 << x->s; /* 1.0 in the scale of m */
    if ((u128)x->m >= one * 10)
        return 0;
    for (int t = 0; t <= 6; t++)
        if ((u128)x->m * pow10_u128(t) >= one) {
            x->e10 = -t;
            return 1;
        }
    return 0;
}

/* 1 when D 10^(e10 + 1 - p) reads back as a, in the scale k = p - 1 - e10 (N = m 10^k). */
static int exact_reads_back(const exact *x, u128 N, u128 D, int k)
{
    u128 up = D << x->s;
    u128 gap = pow10_u128(k); /* one double's gap above a, in this scale */
    if (up >= N) {
        u128 d2 = (up - N) * 2;
        return d2 < gap || (d2 == gap && !(x->m & 1));
    }
    u128 below = (N - up) * (x->pow2 ? 4 : 2);
    return below < gap || (below == gap && !(x->m & 1));
}

/* digits_at in integers: 0 when the scale leaves the range (the caller falls back), else 1
 * with *rb the read-back answer. */
static int exact_digits_at(const exact *x, int p, char *digits, int *exp10, int *rb)
{
    int k = p - 1 - x->e10;
    if (k < 0 || k > 22)
        return 0;
    u128 N = (u128)x->m * pow10_u128(k);
    u128 D = N >> x->s, R = N - (D << x->s), half = (u128)1 << (x->s - 1);
    if (R > half || (R == half && (D & 1)))
        D++;
    *rb = exact_reads_back(x, N, D, k);
    int e = x->e10;
    if (D == pow10_u128(p)) {
        D /= 10;
        e++;
    }
    uint64_t d = (uint64_t)D;
    for (int i = p - 1; i >= 0; i--, d /= 10)
        digits[i] = (char)('0' + d % 10);
    digits[p] = '\0';
    *exp10 = e;
    return 1;
}

/* digits_up in integers: the p-digit decimal one unit above round_p(a). Returns -1 outside the
 * range, else whether it reads back (then written to digits, *exp10). */
static int exact_digits_up(const exact *x, int p, char *digits, int *exp10)
{
    char d[24];
    int e, rb;
    if (!exact_digits_at(x, p, d, &e, &rb))
        return -1;
    int k = p - 1 - e; /* the scale of the (carried) digits */
    if (k < 0 || k > 22)
        return -1;
    u128 D = 0;
    for (int i = 0; i < p; i++)
        D = D * 10 + (u128)(d[i] - '0');
    D++;
    if (!exact_reads_back(x, (u128)x->m * pow10_u128(k), D, k))
        return 0;
    if (D == pow10_u128(p)) {
        D /= 10;
        e++;
    }
    uint64_t v = (uint64_t)D;
    for (int i = p - 1; i >= 0; i--, v /= 10)
        digits[i] = (char)('0' + v % 10);
    digits[p] = '\0';
    *exp10 = e;
    return 1;
}

/* probe() in integers: *rb as probe's answer; 0 when p leaves the range. */
static int exact_probe(probe_ok *ok, const exact *x, int p, int *rb)
{
    char d[24];
    int e;
    if (!exact_digits_at(x, p, d, &e, rb))
        return 0;
    if (*rb) {
        memcpy(ok->digits, d, sizeof d);
        ok->exp10 = e;
        ok->p = p;
    }
    return 1;
}

/* shortest() with the integer probes: the same search, the same choices. 0 outside the range. */
static int shortest_exact(char *digits, int *exp10, double a)
{
    exact x;
    probe_ok ok = {"", 0, 0};
    int lo = 1, hi = 17, rb;
    if (!exact_init(&x, a) || !exact_probe(&ok, &x, 16, &rb))
        return 0;
    if (!rb) {
        lo = 17;
    } else {
        if (!exact_probe(&ok, &x, 15, &rb))
            return 0;
        if (!rb)
            lo = hi = 16;
        else
            hi = 15;
    }
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (!exact_probe(&ok, &x, mid, &rb))
            return 0;
        if (rb)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (x.pow2 && lo > 1) {
        int up = exact_digits_up(&x, lo - 1, digits, exp10);
        if (up)
            return up > 0;
    }
    if (ok.p == lo) {
        memcpy(digits, ok.digits, sizeof ok.digits);
        *exp10 = ok.exp10;
        return 1;
    }
    return exact_digits_at(&x, lo, digits, exp10, &rb);
}

static void shortest(char *digits, int *exp10, double a, int libc_only)
{
    if (!libc_only && shortest_exact(digits, exp10, a))
        return;
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

static size_t format_double(char *dst, double v, int libc_only)
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
    shortest(d, &e10, a, libc_only);
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

size_t sr_jw_format_double(char *dst, double v)
{
    return format_double(dst, v, 0);
}

size_t sr_jw_format_double_libc(char *dst, double v)
{
    return format_double(dst, v, 1);
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

int sr_jw_cat(sr_buf *b, const char *a, const char *s, const char *c, sr_err *err)
{
    size_t na = strlen(a), ns = strlen(s), nc = strlen(c);
    int rc = sr_buf_reserve(b, na + ns + nc, err);
    if (rc)
        return rc;
    char *o = b->data + b->len;
    memcpy(o, a, na);
    memcpy(o + na, s, ns);
    memcpy(o + na + ns, c, nc);
    b->len += na + ns + nc;
    b->data[b->len] = '\0';
    return 0;
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
