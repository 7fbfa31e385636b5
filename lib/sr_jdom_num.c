/* Decimal to double, correctly rounded, without strtod where exact arithmetic allows: Clinger's
 * fast path, then one product with a power of five, then exact 128-bit arithmetic. */
#include <float.h>
#include <string.h>

#include "sr_jdom_pow5_priv.h"
#include "sr_jdom_priv.h"

/* The powers of ten that doubles hold exactly (sr_jdom_i_decimal's fast path inlines them). */
const double sr_jdom_i_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

__extension__ typedef unsigned __int128 u128;

/* The double with bits mant * 2^e2 for mant < 2^53 and a normal result (both exact). */
static double scale2(uint64_t mant, int e2)
{
    uint64_t bits = (uint64_t)(1023 + e2) << 52;
    double p2;
    memcpy(&p2, &bits, sizeof(p2));
    return (double)mant * p2;
}

/*
 * Rounds q * 2^e2 to the nearest double, ties to even; `sticky` says that nonzero bits below q
 * were cut off. q has at least 54 bits when sticky is set, so the round bit is in q.
 */
static double round_u128(u128 q, int sticky, int e2)
{
    uint64_t hi = (uint64_t)(q >> 64), lo = (uint64_t)q;
    int bits = hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
    if (bits <= 53)
        return scale2(lo, e2);
    int sh = bits - 53;
    uint64_t mant = (uint64_t)(q >> sh);
    u128 rest = q & (((u128)1 << sh) - 1), half = (u128)1 << (sh - 1);
    mant += rest > half || (rest == half && (sticky || (mant & 1)));
    if (mant == (uint64_t)1 << 53) {
        mant >>= 1;
        sh++;
    }
    return scale2(mant, e2 + sh);
}

/*
 * m * 10^e10 correctly rounded, with exact 128-bit integer arithmetic, for the ranges where
 * that is possible: 10^e10 < 2^64 for a product, and a quotient of at least 54 bits for a
 * division of m (shifted to the top of 128 bits) by 10^-e10 < 2^74. Returns 0 outside them.
 */
static int convert_exact(uint64_t m, int e10, double *out)
{
    if (m == 0 || e10 > 19 || e10 < -22)
        return 0;
    int k = e10 < 0 ? -e10 : e10;
    /* The doubles of sr_jdom_i_pow10 are exact, and 10^19 < 2^64. */
    const double *p10 = sr_jdom_i_pow10;
    u128 p = k <= 19 ? (uint64_t)p10[k] : (u128)(uint64_t)p10[19] * (uint64_t)p10[k - 19];
    if (e10 >= 0) {
        *out = round_u128((u128)m * p, 0, 0);
        return 1;
    }
    int s = 64 + __builtin_clzll(m);
    u128 n = (u128)m << s;
    *out = round_u128(n / p, n % p != 0, -s);
    return 1;
}

/*
 * m * 10^q correctly rounded from one 64 x 128-bit product, after the method of Michael Eisel and
 * Daniel Lemire (Lemire, "Number Parsing at a Gigabyte per Second", 2021), with a check of our
 * own that makes it exact or declines. m * 10^q = (m << lz) * T * 2^(b - 127 + q - lz), with
 * T = k_pow5[q] (sr_jdom_pow5_priv.h), |T - 5^q 2^(127 - b)| < 1. Of the 192-bit product
 * (m << lz) * T the top 128 bits are computed (hi:lo); the exact product's top 128 bits differ
 * from them by less than 2 (T's error times m < 2^64 is below one unit of lo, and so are the
 * dropped low 64 bits). hi is at least 2^62, so its top 54 bits are the 53 of the double and a
 * round bit, and the bits below them (R, the rest of hi and lo) decide nothing unless R is within
 * 2 of zero or of its maximum: then the exact value may be a tie or carry into the kept bits,
 * and the function returns 0 for the caller's exact method. Otherwise R is not zero, so the
 * exact value is not a tie and the round bit alone rounds to nearest. Results are normal for
 * every q of the table (|log10| < 84), so 2^e2 is too. Returns 1 with *out set, or 0.
 */
static int convert_pow5(uint64_t m, int q, double *out)
{
    if (m == 0 || q < SR_JDOM_POW5_MIN || q > SR_JDOM_POW5_MAX)
        return 0;
    const sr_jdom_pow5 *t = &k_pow5[q - SR_JDOM_POW5_MIN];
    int lz = __builtin_clzll(m);
    uint64_t w = m << lz;
    u128 top = (u128)w * t->hi;
    top += (uint64_t)(((u128)w * t->lo) >> 64);
    uint64_t hi = (uint64_t)(top >> 64), lo = (uint64_t)top;
    int upper = (int)(hi >> 63), shift = 9 + upper;
    uint64_t rmask = ((uint64_t)1 << shift) - 1, rhi = hi & rmask;
    if ((rhi == 0 && lo <= 2) || (rhi == rmask && lo >= UINT64_MAX - 2))
        return 0;
    uint64_t mant = hi >> shift; /* 54 bits: the double's 53 and the round bit */
    int e2 = shift + 2 + t->b + q - lz;
    mant = (mant + 1) >> 1;
    if (mant == (uint64_t)1 << 53) {
        mant >>= 1;
        e2++;
    }
    *out = scale2(mant, e2);
    return 1;
}

int sr_jdom_i_decimal_wide(uint64_t m, int e10, double *out)
{
    return convert_pow5(m, e10, out) || convert_exact(m, e10, out);
}
