/* The trainer's weights as a safetensors checkpoint folder (checkpoint.h). Uses lib/ only. */
#include <stdio.h>
#include <stdlib.h>

#include "checkpoint.h"
#include "sr_safetensors.h"

int sr_sync_checkpoint_path(char *out, size_t cap, const char *dir, int64_t version, sr_err *err)
{
    int n = snprintf(out, cap, "%s/v%lld", dir ? dir : "", (long long)version);
    if (n < 0 || (size_t)n >= cap)
        return sr_err_set(err, SR_E_LIMIT,
                          "checkpoint: the path of version %lld under %.200s is "
                          "longer than %zu bytes",
                          (long long)version, dir ? dir : "", cap);
    return 0;
}

int sr_sync_write_checkpoint(char *path, size_t cap, const sr_weights *w, const char *dir,
                             int64_t version, int shards, int workers, sr_err *err)
{
    if (!w || !dir || !*dir || version < 0 || version > SR_WEIGHTS_MAX_VERSION)
        return sr_err_set(err, SR_E_INVAL,
                          "checkpoint: needs weights, a folder and a version in "
                          "0..%d",
                          SR_WEIGHTS_MAX_VERSION);
    char at[4096];
    int rc = sr_sync_checkpoint_path(at, sizeof(at), dir, version, err);
    if (rc)
        return rc;
    size_t n = sr_weights_count(w);
    sr_st_in *t = calloc(n ? n : 1, sizeof(*t));
    if (!t)
        return sr_err_set(err, SR_E_NOMEM, "checkpoint: no memory for %zu tensors", n);
    sr_weights_info *info = calloc(n ? n : 1, sizeof(*info));
    if (!info) {
        free(t);
        return sr_err_set(err, SR_E_NOMEM, "checkpoint: no memory for %zu tensors", n);
    }
    for (size_t i = 0; i < n && !rc; i++) {
        rc = sr_weights_tensor(&info[i], w, i, err);
        if (!rc)
            t[i] = (sr_st_in){
                info[i].name,  sr_st_dtype_of(info[i].dtype), 2, info[i].shape, info[i].data,
                info[i].nbytes};
    }
    char vs[24];
    snprintf(vs, sizeof(vs), "%lld", (long long)version);
    sr_st_meta meta[2] = {{"format", "pt"}, {"syncroll_version", vs}};
    if (!rc)
        rc = sr_st_write_checkpoint(at, t, n, meta, 2, shards, workers, err);
    free(t);
    free(info);
    if (!rc && path)
        rc = sr_sync_checkpoint_path(path, cap, dir, version, err);
    return rc;
}
