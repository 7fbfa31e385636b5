/* Private to scenario*.c: the parse context and typed getters over the key table. */
#ifndef SR_SCENARIO_PRIV_H
#define SR_SCENARIO_PRIV_H

#include "scenario.h"
#include "sr_json.h"

typedef struct scn_parse {
    const sr_json_doc *doc;
    sr_scenario *s;
    sr_err *err;
} scn_parse;

/* Checks that `obj` is an object whose members are exactly table entries "<path>.<name>" (for
 * a step object: "steps.*.<name>" and "steps.<kind>.<name>"). */
int sr_scn_check_object(scn_parse *p, const cJSON *obj, const char *path);

/* Member `key` of obj, NULL when absent. JSON null counts as present (callers decide). */
const cJSON *sr_scn_member(const cJSON *obj, const char *key);

/* Integer getter: absent (or null when nullable) -> dflt. */
int sr_scn_int(scn_parse *p, const cJSON *obj, const char *key, int64_t lo, int64_t hi,
               int64_t dflt, int nullable, int64_t *out);
int sr_scn_num(scn_parse *p, const cJSON *obj, const char *key, double lo, double hi, double dflt,
               double *out);
/* Boolean getter; with nullable, null gives dflt too. */
int sr_scn_bool(scn_parse *p, const cJSON *obj, const char *key, int dflt, int nullable, int *out);
/* String getter: *out borrowed from the document or dflt; one of `choices` (NULL-terminated)
 * when choices is not NULL. */
int sr_scn_str(scn_parse *p, const cJSON *obj, const char *key, const char *dflt,
               const char *const *choices, const char **out);
/* A list of strings (absent: empty), each 1..maxlen-1 bytes, at most SR_SCN_MAX_LIST; copies. */
int sr_scn_strlist(scn_parse *p, const cJSON *obj, const char *key, size_t maxlen, char **out,
                   int *n);

/*
 * A folder named by a scenario (`path` at node `at`): relative to the scenario file's folder
 * unless absolute, resolved to an absolute path into out[cap] (its links followed), and holding
 * the regular file `holds`; else SR_E_SCENARIO at `at` saying "no <what> at '<path>' (<hint>;
 * ...)".
 */
int sr_scn_folder(scn_parse *p, const cJSON *at, const char *path, const char *holds,
                  const char *what, const char *hint, char *out, size_t cap);

/* Error at `node` with SR_E_SCENARIO. */
int sr_scn_fail(scn_parse *p, const cJSON *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Steps, expect and budgets (steps.c). */
int sr_scn_parse_steps(scn_parse *p, const cJSON *root);
int sr_scn_parse_expect(scn_parse *p, const cJSON *root);
int sr_scn_parse_budgets(scn_parse *p, const cJSON *root);

/* Writers of the step, expect and budget sections (write_steps.c). */
cJSON *sr_scn_steps_json(const sr_scenario *s);

/* The `soak` object: defaults, parser and writer (soak.c). */
void sr_scn_soak_defaults(sr_scenario *s);
int sr_scn_parse_soak(scn_parse *p, const cJSON *root);
cJSON *sr_scn_soak_json(const sr_scenario *s);

#endif /* SR_SCENARIO_PRIV_H */
