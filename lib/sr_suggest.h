/*
 * sr_suggest: the text an "unknown name" error ends with: the valid names and the closest one.
 *
 * Closeness is the optimal-string-alignment edit distance (insertions, deletions, substitutions
 * and swaps of two adjacent bytes each cost 1), compared on at most SR_SUGGEST_LEN_MAX bytes of
 * each name so that the work is bounded whatever the input. A name is suggested when its
 * distance is at most max(1, length of the unknown word / 3) (a typo, not another word; words
 * of one or two bytes get no suggestion by distance) or when
 * one name starts with the other (e.g. "abort" for "abort_sync"); ties go to the earlier name.
 * Failing both, the name sharing the longest beginning with the word is suggested when that
 * beginning is 4 bytes or more and at least a third of the word ("stale_prefix" ->
 * "stale_weights").
 *
 * Pure functions of their arguments: thread-safe, nothing to free.
 */
#ifndef SR_SUGGEST_H
#define SR_SUGGEST_H

#include <stddef.h>

#define SR_SUGGEST_LEN_MAX 64

/* The edit distance of a and b (each cut at SR_SUGGEST_LEN_MAX bytes). */
size_t sr_suggest_distance(const char *a, const char *b);

/* The name of names[0..n) (NULL entries skipped) closest to `word`, or NULL when none is close
 * enough (see above). */
const char *sr_suggest_closest(const char *word, const char *const *names, size_t n);

/*
 * Writes "did you mean 'x'? valid: a, b, c" (or "valid: a, b, c" when nothing is close) into
 * buf, cut with "..." to fit `cap` bytes (cap >= 4); returns buf. `what` may replace "valid"
 * (e.g. "known kinds"); NULL keeps "valid".
 */
const char *sr_suggest_text(char *buf, size_t cap, const char *word, const char *const *names,
                            size_t n, const char *what);

#endif /* SR_SUGGEST_H */
