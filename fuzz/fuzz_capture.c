/*
 * libFuzzer target for the capture reader (proxy/capture.h, sr_capture_parse), which reads
 * captures that `syncroll proxy --record` wrote, possibly on another machine: any bytes either
 * fail with a named capture.* (or resource.*) error and no capture, or give exchanges whose
 * strings are NUL-terminated within their fields, whose body files are all under bodies/, and
 * that are in seq order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sr_capture *c = NULL;
    sr_err err = SR_ERR_INIT;
    int rc = sr_capture_parse(&c, (const char *)data, size, NULL, &err);
    if (rc) {
        if (c || (rc != SR_E_CAPTURE_VERSION && rc != SR_E_CAPTURE_TRUNCATED &&
                  rc != SR_E_CAPTURE_CORRUPT && rc != SR_E_LIMIT && rc != SR_E_NOMEM)) {
            fprintf(stderr, "unexpected result %s: %s\n", sr_code_name(rc), err.msg);
            abort();
        }
        return 0;
    }
    int64_t last = 0;
    for (size_t i = 0; i < sr_capture_count(c); i++) {
        const sr_capture_exchange *x = sr_capture_at(c, i);
        if (x->seq < last || memchr(x->uri, '\0', sizeof x->uri) == NULL || x->uri[0] != '/')
            abort();
        last = x->seq;
        const sr_capture_body *b[2] = {&x->request, &x->response};
        for (int k = 0; k < 2; k++)
            if (b[k]->file[0] && (strncmp(b[k]->file, "bodies/", 7) != 0 ||
                                  strstr(b[k]->file, "..") != NULL))
                abort();
        /* Without a folder no body can be read: a named error, not an open. */
        sr_buf out = SR_BUF_INIT;
        if (x->response.file[0] &&
            sr_capture_read_body(c, &x->response, &out, 1 << 20, &err) != SR_E_CAPTURE_BODY)
            abort();
        sr_buf_release(&out);
    }
    sr_capture_free(c);
    return 0;
}
