/* Internals of sr_fields shared by its files (not part of the library's interface). */
#ifndef SR_FIELDS_PRIV_H
#define SR_FIELDS_PRIV_H

#include "sr_fields.h"
#include "sr_json.h"

/* The first problem of d's declared shape and value constraints (a static text), or NULL. */
const char *sr_fields_constraint_problem(const sr_field_def *d);

/*
 * Reads "shape", "range" and "finite" of definition object `obj` into d, whose dtypes, ndim (0
 * when the key is absent) and token_rows are already read: "ndim" is required unless "shape"
 * gives it, and must agree with it. SR_E_FIELD_DEF with the position of the bad entry.
 */
int sr_fields_read_constraints(sr_field_def *d, const sr_json_doc *doc, const cJSON *obj,
                               sr_err *err);

#endif /* SR_FIELDS_PRIV_H */
