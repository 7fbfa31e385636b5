/*
 * libFuzzer target for envelope unpacking: any JSON document is unpacked under four contracts,
 * into owned memory and into a small arena (with and without an error record); a success must
 * re-pack and unpack to the same array.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_envelope.h"

#include "fuzz_check.h"

static void fz_env(const uint8_t *data, size_t size)
{
    cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
    if (!doc)
        return;
    sr_contract cs[4];
    cs[0] = sr_contract_routes();
    sr_contract any = SR_CONTRACT_INIT;
    cs[1] = any;
    sr_contract i32 = SR_CONTRACT_INIT;
    i32.allowed = SR_DTYPE_BIT(SR_DTYPE_INT32);
    i32.ndim = 2;
    cs[2] = i32;
    sr_contract f32 = SR_CONTRACT_INIT;
    f32.allowed = SR_DTYPE_BIT(SR_DTYPE_FLOAT32);
    f32.ndim = 1;
    f32.max_bytes = 64;
    cs[3] = f32;
    sr_arena *ar;
    sr_err e = SR_ERR_INIT;
    CHECK(sr_arena_new(&ar, 4096, &e) == 0);
    int shape_text = size ? data[0] % 3 : 0;
    for (int k = 0; k < 4; k++) {
        sr_ndarray a, b;
        sr_err e1 = SR_ERR_INIT, e2 = SR_ERR_INIT;
        int r1 = sr_envelope_unpack(&a, doc, shape_text, &cs[k], NULL, &e1);
        int r2 = sr_envelope_unpack(&b, doc, shape_text, &cs[k], ar, &e2);
        int r3 = sr_envelope_unpack(&b, doc, shape_text, &cs[k], ar, NULL);
        CHECK(r1 == e1.code && r2 == e2.code);
        (void)r3;
        if (r1 == 0) {
            size_t nb;
            CHECK(sr_shape_bytes(&nb, NULL, a.shape, a.ndim, sr_dtype_size(a.dtype), NULL) == 0);
            CHECK(nb == a.nbytes && a.owned == 1);
            if (r2 == 0)
                CHECK(sr_ndarray_equal(&a, &b));
            else
                CHECK(r2 == SR_E_LIMIT);
            /* repack and unpack */
            sr_buf out = SR_BUF_INIT;
            const cJSON *extra = NULL;
            int rp = sr_envelope_pack(&out, &a, cs[k].allowed, extra, SR_B64_AUTO, &e1);
            CHECK(rp == 0);
            cJSON *d2 = cJSON_ParseWithLength(out.data, out.len);
            CHECK(d2);
            sr_ndarray c;
            CHECK(sr_envelope_unpack(&c, d2, SR_SHAPE_TEXT_INTEGERS, &cs[k], NULL, &e1) == 0);
            CHECK(sr_ndarray_equal(&a, &c));
            sr_ndarray_release(&c);
            cJSON_Delete(d2);
            sr_buf_release(&out);
            if (sr_dtype_is_integer(a.dtype) && a.ndim == 3) {
                sr_buf o2 = SR_BUF_INIT;
                sr_err e3 = SR_ERR_INIT;
                int rr = sr_routes_pack(&o2, &a, NULL, SR_B64_AUTO, &e3);
                CHECK(rr == 0 || rr == SR_E_ROUTES_NEGATIVE || rr == SR_E_ROUTES_TOO_WIDE);
                sr_buf_release(&o2);
            }
        } else {
            CHECK(a.data == NULL && a.nbytes == 0);
            CHECK(r2 == r1 || r2 == SR_E_LIMIT);
        }
        sr_ndarray_release(&a);
        sr_arena_reset(ar);
    }
    sr_arena_free(ar);
    cJSON_Delete(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_env(data, size);
    return 0;
}
