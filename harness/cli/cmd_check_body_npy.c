/* check-body --npy-dir: each decoded array as a .npy file, for callers that want the values
 * (the Python package's check_body(...).arrays) without a second decoder of the wire. */
#include "cmd_check_body_priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sr_npy.h"

int sr_check_body_write_npy(const char *dir, size_t index, const sr_ndarray *a,
                            char name[SR_CHECK_BODY_NPY_NAME_MAX], sr_err *err)
{
    char header[SR_NPY_HEADER_MAX];
    size_t hlen = 0;
    int rc = sr_npy_write_header(&hlen, header, sizeof header, a->dtype, a->shape, a->ndim, err);
    if (rc)
        return rc;
    snprintf(name, SR_CHECK_BODY_NPY_NAME_MAX, "%zu.npy", index);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return sr_err_set(err, SR_E_IO, "--npy-dir '%s': path too long", dir);
    FILE *f = fopen(path, "wb");
    if (!f)
        return sr_err_set(err, SR_E_IO, "cannot create '%s': %s", path, strerror(errno));
    /* The elements are C-contiguous little-endian already (sr_ndarray.h): written as they are. */
    int ok = fwrite(header, 1, hlen, f) == hlen &&
             (a->nbytes == 0 || fwrite(a->data, 1, a->nbytes, f) == a->nbytes);
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok)
        return sr_err_set(err, SR_E_IO, "cannot write '%s': %s", path, strerror(saved));
    return 0;
}
