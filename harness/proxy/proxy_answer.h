/*
 * proxy_answer: what the proxy and the replay server share on their HTTP side: the JSON answers
 * they make themselves, in the engine's error shape
 * {"error":{"message":..,"type":..,"code":N,"check":"<error name>"}}, and their listening
 * address. Private to harness/proxy/.
 */
#ifndef SR_PROXY_ANSWER_H
#define SR_PROXY_ANSWER_H

#include <netinet/in.h>

#include <microhttpd.h>

#include "sr_buf.h"

/* Queues the JSON text in *b (released here) as the answer with `status`, unless rc (the result
 * of building it) is an error: then MHD_NO, which closes the connection. */
enum MHD_Result sr_px_queue_json(struct MHD_Connection *c, unsigned status, sr_buf *b, int rc);

/* Queues an error answer naming `check` (an sr_err name) with message `msg`; its type is
 * NotFoundError for 404, ServerError from 500, else BadRequestError. */
enum MHD_Result sr_px_answer_error(struct MHD_Connection *c, unsigned status, const char *check,
                                   const char *msg);

/* The socket address of `addr` (numeric IPv4; NULL: 127.0.0.1) and `port` (0: any free one)
 * into *sin, and the address text into *text. SR_E_INVAL naming `addr` when it is not numeric
 * IPv4. */
int sr_px_listen_addr(struct sockaddr_in *sin, const char **text, const char *addr, int port,
                      sr_err *err);

/* The port daemon d listens on (port 0 asked for a free one), or `fallback` if unknown. */
int sr_px_bound_port(struct MHD_Daemon *d, int fallback);

#endif /* SR_PROXY_ANSWER_H */
