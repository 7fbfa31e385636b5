/*
 * report_load_priv: what results.json's loader shares between its files (report_load.c, the
 * run and its scenarios; report_load_hist.c, the phases' histograms; report_load_get.c, the
 * state's first error and the getters both use). Private to harness/report/.
 */
#ifndef SR_REPORT_LOAD_PRIV_H
#define SR_REPORT_LOAD_PRIV_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "report_priv.h"
#include "sr_json.h"

/* The loader's state: the document and the first error (later failures are ignored). */
typedef struct ld {
    const sr_json_doc *doc;
    sr_err *err;
    int rc;
} ld;

/* Keeps the first error: SR_E_JSON_SCHEMA placed at node, the message formatted from fmt. */
void sr_ld_fail(ld *l, const cJSON *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Keeps SR_E_NOMEM as the first error. */
void sr_ld_nomem(ld *l);

/* Member k of o, or NULL when o is not an object, k is absent or its value is null. */
const cJSON *sr_ld_get(const cJSON *o, const char *k);

/* 1 when member k is not to be read: an error is kept already, or k is null or absent (results.json
 * writes null for "not applicable": the getters leave their output as it is then). */
int sr_ld_skip(const ld *l, const cJSON *o, const char *k);

/* Member k of o as an unsigned integer; 0 when null or absent or once an error is kept. */
uint64_t sr_ld_get_u64(ld *l, const cJSON *o, const char *k);

/* Member k of o as an object, or as an array when `array`; NULL when null, absent or of the
 * wrong type (the last keeps an error). */
const cJSON *sr_ld_get_typed(ld *l, const cJSON *o, const char *k, int array);

/* Reads a scenario's "phases" object into its histograms h[SR_PHASE_COUNT] and CPU totals
 * cpu[SR_PHASE_COUNT]: each histogram is rebuilt so that its buckets, count, min, max and sum are
 * the file's exactly. An inconsistent histogram keeps SR_E_JSON_SCHEMA. */
void sr_ld_phases(ld *l, const cJSON *o, sr_hist *const *h, sr_phase_cpu *cpu);

#endif /* SR_REPORT_LOAD_PRIV_H */
