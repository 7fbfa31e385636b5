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
    }
    sr_fields_free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_fields(data, size);
    return 0;
}
