/*
 * sr_mix: the splitmix64 finaliser, the one 64-bit mixing function every seeded draw in syncroll
 * uses (the oracle's documented `mix`, weight contents, fault probabilities, retry jitter,
 * environments). Header-only and pure; thread-safe.
 */
#ifndef SR_MIX_H
#define SR_MIX_H

#include <stdint.h>

/* The golden-ratio increment of splitmix64. */
#define SR_MIX_GOLDEN 0x9E3779B97F4A7C15ull

/* z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^ (z >> 31). */
static inline uint64_t sr_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif /* SR_MIX_H */
