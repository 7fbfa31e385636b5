/*
 * checkpoint: the trainer side of SGLang's /update_weights_from_disk (issue #20): version v of the
 * trainer's weights written as a safetensors checkpoint folder <dir>/v<version>/, the folder an
 * engine then loads (harness/engine/engine.h, sr_engine_load_disk).
 *
 * Every tensor of the sr_weights set is written under its own name, dtype (float16 -> F16,
 * float32 -> F32) and shape [rows, 64], in name order, as model.safetensors (shards == 1) or
 * model-0000i-of-0000n.safetensors; every file's __metadata__ is {"format": "pt",
 * "syncroll_version": "<v>"}. lib/sr_safetensors.h does the writing: the files go to
 * <dir>/v<version>.partial/, each fsynced, the folder fsynced and renamed, <dir> fsynced, so an
 * engine never reads a half-written version. <dir> must exist; an existing v<version> is
 * SR_E_IO (versions are written once).
 *
 * Thread-safety: reads `w` only (concurrently with other readers); no global state.
 */
#ifndef SR_SYNC_CHECKPOINT_H
#define SR_SYNC_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "sr_err.h"
#include "sr_weights.h"

/* The folder name of version v under dir: "<dir>/v<version>" into out[cap]. SR_E_LIMIT if it
 * does not fit. */
int sr_sync_checkpoint_path(char *out, size_t cap, const char *dir, int64_t version, sr_err *err);

/*
 * Writes `w` as version `version` (0 .. SR_WEIGHTS_MAX_VERSION) under `dir` in `shards` files
 * (1 .. number of tensors) with `workers` (>= 1) threads writing files at once; the folder's path
 * into path[cap] (may be NULL). Errors: SR_E_INVAL (arguments), SR_E_LIMIT (path), SR_E_IO,
 * SR_E_NOMEM.
 */
int sr_sync_write_checkpoint(char *path, size_t cap, const sr_weights *w, const char *dir,
                             int64_t version, int shards, int workers, sr_err *err);

#endif /* SR_SYNC_CHECKPOINT_H */
