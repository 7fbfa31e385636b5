/*
 * libFuzzer target for the scenario loader: any bytes are parsed as a scenario file (sr_json
 * positions, key tables, types, ranges, steps, faults, fields, expectations); a success must
 * write its expanded form and engine config, and the expanded form must load again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "scenario/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_scenario *s = NULL;
    sr_err e = SR_ERR_INIT;
    int rc = sr_scenario_parse(&s, (const char *)data, size, "fuzz.json", &e);
    if (rc) {
        if (e.code != rc || s)
            abort();
        return 0;
    }
    char exp[64], eng[64];
    snprintf(exp, sizeof(exp), "/tmp/fuzz_scenario.%d.json", (int)getpid());
    snprintf(eng, sizeof(eng), "/tmp/fuzz_scenario.%d.engine.json", (int)getpid());
    if (sr_scenario_write_expanded(s, exp, &e) || sr_scenario_write_engine(s, eng, NULL, &e)) {
        fprintf(stderr, "write failed: %s: %s\n", sr_code_name(e.code), e.msg);
        abort();
    }
    sr_scenario *again = NULL;
    if (sr_scenario_load(&again, exp, &e)) {
        fprintf(stderr, "expanded scenario does not load: %s: %s\n", sr_code_name(e.code), e.msg);
        abort();
    }
    sr_scenario_free(again);
    sr_scenario_free(s);
    unlink(exp);
    unlink(eng);
    return 0;
}
