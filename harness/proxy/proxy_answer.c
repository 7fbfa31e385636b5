/* The proxy's and the replay server's own JSON answers (proxy_answer.h). */
#include "proxy_answer.h"

#include <arpa/inet.h>
#include <string.h>

enum MHD_Result sr_px_queue_json(struct MHD_Connection *c, unsigned status, sr_buf *b, int rc)
{
    struct MHD_Response *resp =
        rc ? NULL : MHD_create_response_from_buffer(b->len, b->data, MHD_RESPMEM_MUST_COPY);
    sr_buf_release(b);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result sr_px_answer_error(struct MHD_Connection *c, unsigned status, const char *check,
                                   const char *msg)
{
    sr_buf b = SR_BUF_INIT;
    sr_err err = SR_ERR_INIT;
    const char *type = status == 404   ? "NotFoundError"
                       : status >= 500 ? "ServerError"
                                       : "BadRequestError";
    int rc = sr_buf_puts(&b, "{\"error\":{\"message\":", &err);
    if (!rc)
        rc = sr_buf_put_json_string(&b, msg, &err);
    if (!rc)
        rc = sr_buf_printf(&b, &err, ",\"type\":\"%s\",\"code\":%u,\"check\":\"%s\"}}", type,
                           status, check);
    return sr_px_queue_json(c, status, &b, rc);
}

int sr_px_listen_addr(struct sockaddr_in *sin, const char **text, const char *addr, int port,
                      sr_err *err)
{
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    *text = addr ? addr : "127.0.0.1";
    if (inet_pton(AF_INET, *text, &sin->sin_addr) != 1)
        return sr_err_set(err, SR_E_INVAL, "--listen address '%s' is not a numeric IPv4 address",
                          *text);
    return 0;
}

int sr_px_bound_port(struct MHD_Daemon *d, int fallback)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : fallback;
}
