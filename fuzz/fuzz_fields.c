/*
 * libFuzzer target for packed-field definitions (the format of fixtures/fields/ files): a failed
 * load leaves the registry as it was; every loaded definition is well formed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_fields.h"

#include "fuzz_check.h"

static void fz_fields(const uint8_t *data, size_t size)
{
    sr_fields *f;
    sr_err e = SR_ERR_INIT;
    CHECK(sr_fields_new(&f, &e) == 0);
    CHECK(sr_fields_add_builtins(f, &e) == 0);
    int rc = sr_fields_load_json(f, (const char *)data, size, "fz", &e);
    CHECK(rc == e.code);
    if (rc)
        CHECK(sr_fields_count(f) == 3 &&
              (rc == SR_E_FIELD_DEF || rc == SR_E_LIMIT || rc == SR_E_NOMEM));
    for (size_t i = 0; i < sr_fields_count(f); i++) {
        const sr_field_def *d = sr_fields_at(f, i);
        CHECK(d->name_len >= 1 && d->name_len <= SR_FIELD_NAME_MAX &&
              strlen(d->name) == d->name_len);
        /* A declared shape is consistent, and the array check runs on any small array. */
        CHECK(!d->has_shape || (d->ndim >= 1 && (d->dims[0] == SR_FIELD_DIM_T) == d->token_rows));
        CHECK(!d->has_range || d->range_lo <= d->range_hi);
        int32_t v[6] = {0, 1, -1, 255, 256, 7};
        sr_ndarray a = SR_NDARRAY_INIT;
        a.dtype = SR_DTYPE_INT32;
        a.ndim = 2;
        a.shape[0] = 3;
        a.shape[1] = 2;
        a.data = v;
        a.nbytes = sizeof(v);
        int c = sr_field_check_array(d, &a, 3, 0, &e);
        CHECK(c == 0 || c == SR_E_FIELD_SHAPE || c == SR_E_FIELD_RANGE);
        c = sr_field_check_array(d, &a, -1, 1, &e);
        CHECK(c == 0 || c == SR_E_FIELD_SHAPE || c == SR_E_FIELD_RANGE);
    }
    sr_fields_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_fields(data, size);
    return 0;
}
