/*
 * cmd_check_body_priv: what check-body's files share (cmd_check_body.c, cmd_check_body_npy.c).
 * Private to harness/cli/.
 */
#ifndef SR_CMD_CHECK_BODY_PRIV_H
#define SR_CMD_CHECK_BODY_PRIV_H

#include <stddef.h>

#include "sr_err.h"
#include "sr_ndarray.h"

/* The longest file name sr_check_body_write_npy gives ("<index>.npy"), including the NUL. */
#define SR_CHECK_BODY_NPY_NAME_MAX 32

/*
 * Writes array `a` (the decoded value of the index-th spliced entry) as `dir`/<index>.npy, the
 * bytes np.save writes for it (format 1.0, C order, little-endian), and stores that file name
 * (without `dir`) in name[SR_CHECK_BODY_NPY_NAME_MAX]. The folder must exist; a file of that name
 * is replaced. Errors: SR_E_INVAL (a dtype .npy cannot carry), SR_E_IO (naming the path and the
 * system's reason), SR_E_NOMEM never.
 */
int sr_check_body_write_npy(const char *dir, size_t index, const sr_ndarray *a,
                            char name[SR_CHECK_BODY_NPY_NAME_MAX], sr_err *err);

#endif /* SR_CMD_CHECK_BODY_PRIV_H */
