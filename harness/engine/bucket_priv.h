/* The broadcast bucket's header, parsed (bucket_header.c) for the streaming receiver (bucket.c).
 * Private to those two files. */
#ifndef SR_ENGINE_BUCKET_PRIV_H
#define SR_ENGINE_BUCKET_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "sr_err.h"

typedef struct bucket_item {
    size_t index;  /* tensor index in the model and the stage */
    size_t offset; /* into the payload */
    size_t nbytes;
    uint64_t hi, lo; /* xxh3-128 the sender computed */
} bucket_item;

typedef struct bucket_plan {
    bucket_item *items;
    size_t n;
    int64_t target, index;
    size_t payload_len; /* bytes the tensors need after the header */
    int whole;          /* sglang: the request is a whole update, committed at its end */
    int flush;          /* sglang: flush_cache (the prefix cache resets after the commit) */
    const char *call;   /* the call the bucket arrived on, for messages (sr_bucket_rx's) */
} bucket_plan;

/* Sets err to SR_E_ENGINE_REQUEST "<call> bucket: <what>" and returns it. */
int sr_bucket_bad(sr_err *err, const char *call, const char *what);

/*
 * Parses the header line text[0, len) (without its '\n') of a bucket that arrived on bp->call
 * and checks every tensor it names against e's model: bp receives the target version, the
 * bucket index, one item per tensor (bp->items, owned by bp: free() it) and the payload length
 * the items need. Returns 0, or SR_E_ENGINE_REQUEST / SR_E_NOMEM with err set; bp->items is set
 * (possibly to an empty allocation) either way.
 */
int sr_bucket_parse_header(bucket_plan *bp, sr_engine *e, const char *text, size_t len,
                           sr_err *err);

#endif
