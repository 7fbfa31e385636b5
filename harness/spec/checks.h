/*
 * checks: the names of the verdict's checks and of the classes of a mismatching route row.
 *
 * A scenario's `expect.checks` and `expect.classifications` name them (the scenario loader
 * refuses unknown names), the verifier and the runner record them (harness/run/verify.h says
 * when each fires) and scenarios/FORMAT.md documents them (a test keeps the three in step).
 * A check is either one of the verifier's and runner's own checks listed here or the dotted name
 * of an sr_err code (lib/sr_err.h): errors raised by lower modules become checks of that name.
 *
 * Pure lookups in constant tables: thread-safe, nothing to free, no errors.
 */
#ifndef SR_SPEC_CHECKS_H
#define SR_SPEC_CHECKS_H

#include <stddef.h>

typedef struct sr_check_info {
    const char *name; /* "trace.row_mismatch", ... */
    const char *doc;  /* one line: when it fires */
} sr_check_info;

/* The verifier's and runner's own checks (not the module errors), in documentation order. */
size_t sr_check_info_count(void);
/* Entry i (borrowed, static), or NULL past the end. */
const sr_check_info *sr_check_info_at(size_t i);

/* 1 if `name` is one of those or the dotted name of an sr_err code; 0 otherwise or for NULL. */
int sr_check_known(const char *name);

/* Classes of a mismatching route row (trace.row_mismatch), in the order they are tried. */
typedef enum sr_row_class {
    SR_ROW_ALL_ZERO = 0,
    SR_ROW_DUPLICATED,
    SR_ROW_OVERWRITTEN,
    SR_ROW_OFF_BY_ONE,
    SR_ROW_STALE,
    SR_ROW_NEWER,
    SR_ROW_UNCLASSIFIED,
    SR_ROW_CLASS_COUNT
} sr_row_class;

/* "all_zero_capture", "duplicated_row", "overwritten_prefix", "off_by_one", "stale_weights",
 * "newer_weights", "unclassified"; NULL outside the enum. */
const char *sr_row_class_name(sr_row_class c);

/* One line: what a row of class c is like ("holds expert 0 in every slot ..."); NULL outside
 * the enum. */
const char *sr_row_class_doc(sr_row_class c);

/* The class called `name`, or -1 (also for NULL). */
int sr_row_class_lookup(const char *name);

#endif /* SR_SPEC_CHECKS_H */
