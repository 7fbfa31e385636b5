/*
 * proxy_answer: the JSON answers the proxy and the replay server make themselves, in the
 * engine's error shape {"error":{"message":..,"type":..,"code":N,"check":"<error name>"}}.
 * Private to harness/proxy/.
 */
#ifndef SR_PROXY_ANSWER_H
#define SR_PROXY_ANSWER_H

#include <microhttpd.h>

#include "sr_buf.h"

/* Queues the JSON text in *b (released here) as the answer with `status`, unless rc (the result
 * of building it) is an error: then MHD_NO, which closes the connection. */
enum MHD_Result sr_px_queue_json(struct MHD_Connection *c, unsigned status, sr_buf *b, int rc);

/* Queues an error answer naming `check` (an sr_err name) with message `msg`; its type is
 * NotFoundError for 404, ServerError from 500, else BadRequestError. */
enum MHD_Result sr_px_answer_error(struct MHD_Connection *c, unsigned status, const char *check,
                                   const char *msg);

#endif /* SR_PROXY_ANSWER_H */
