/*
 * sr_hash: FNV-1a 64 of a NUL-terminated string (Fowler, Noll, Vo; offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3), the stable key of the shard partition
 * (harness/run/shard.h) and of the history's id table (harness/report/history.h). Not for
 * anything adversarial (no seed, trivially collided). Pure; thread-safe.
 */
#ifndef SR_HASH_H
#define SR_HASH_H

#include <stdint.h>

static inline uint64_t sr_hash_fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

#endif /* SR_HASH_H */
