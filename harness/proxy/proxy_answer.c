/* The proxy's and the replay server's own JSON answers (proxy_answer.h). */
#include "proxy_answer.h"

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
