/* Decimal to double, correctly rounded, without strtod where exact arithmetic allows. */
#include <float.h>
#include <string.h>

#include "sr_jdom_priv.h"

/* Powers of ten that doubles hold exactly. */
static const double k_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The fast path needs each double operation rounded once, straight to double precision. */
#if FLT_EVAL_METHOD == 0
static const int k_exact_ops = 1;
#else
static const int k_exact_ops = 0;
#endif

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
    /* The doubles of k_pow10 are exact, and 10^19 < 2^64. */
    u128 p =
        k <= 19 ? (uint64_t)k_pow10[k] : (u128)(uint64_t)k_pow10[19] * (uint64_t)k_pow10[k - 19];
    if (e10 >= 0) {
        *out = round_u128((u128)m * p, 0, 0);
        return 1;
    }
    int s = 64 + __builtin_clzll(m);
    u128 n = (u128)m << s;
    *out = round_u128(n / p, n % p != 0, -s);
    return 1;
}

int sr_jdom_i_decimal(uint64_t m, int e10, double *out)
{
    if (k_exact_ops && m <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
        double d = (double)m;
        *out = e10 < 0 ? d / k_pow10[-e10] : d * k_pow10[e10];
        return 1;
    }
    return convert_exact(m, e10, out);
}
