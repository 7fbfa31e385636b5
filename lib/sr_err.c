#include "sr_err.h"

#include <stdio.h>
#include <string.h>

typedef struct code_info {
    int code;
    const char *name;
    sr_class cls;
    const char *doc;
} code_info;

static const code_info k_codes[] = {
#define SR_ERR_ROW_(sym, num, name, cls, doc) {num, name, cls, doc},
    SR_ERR_TABLE(SR_ERR_ROW_)
#undef SR_ERR_ROW_
};

#define N_CODES (sizeof(k_codes) / sizeof(k_codes[0]))

static const code_info *find(int code)
{
    for (size_t i = 0; i < N_CODES; i++) {
        if (k_codes[i].code == code)
            return &k_codes[i];
    }
    return NULL;
}

static void vset(sr_err *err, int code, int64_t offset, const char *fmt, va_list ap)
{
    err->code = code;
    err->offset = offset;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int sr_err_set(sr_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vset(err, code, -1, fmt, ap);
        va_end(ap);
    }
    return code;
}

int sr_err_set_at(sr_err *err, int code, int64_t offset, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vset(err, code, offset, fmt, ap);
        va_end(ap);
    }
    return code;
}

void sr_err_prefix(sr_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char head[SR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* Truncation is intended: the message is cut at SR_ERR_MSG_MAX - 1 bytes. */
    char old[SR_ERR_MSG_MAX];
    memcpy(old, err->msg, sizeof(old));
    size_t hl = (size_t)n < sizeof(err->msg) - 1 ? (size_t)n : sizeof(err->msg) - 1;
    memcpy(err->msg, head, hl);
    size_t ol = strnlen(old, sizeof(old) - 1);
    if (ol > sizeof(err->msg) - 1 - hl)
        ol = sizeof(err->msg) - 1 - hl;
    memcpy(err->msg + hl, old, ol);
    err->msg[hl + ol] = '\0';
}

void sr_err_clear(sr_err *err)
{
    if (err) {
        err->code = 0;
        err->offset = -1;
        err->msg[0] = '\0';
    }
}

const char *sr_code_name(int code)
{
    if (code == SR_OK)
        return "ok";
    const code_info *ci = find(code);
    return ci ? ci->name : NULL;
}

sr_class sr_code_class(int code)
{
    const code_info *ci = find(code);
    return ci ? ci->cls : SR_CLASS_NONE;
}

const char *sr_code_doc(int code)
{
    const code_info *ci = find(code);
    return ci ? ci->doc : NULL;
}

const char *sr_class_name(sr_class cls)
{
    switch (cls) {
    case SR_CLASS_TRANSIENT:
        return "transient";
    case SR_CLASS_PROTOCOL:
        return "protocol";
    case SR_CLASS_USAGE:
        return "usage";
    case SR_CLASS_RESOURCE:
        return "resource";
    case SR_CLASS_INTERNAL:
        return "internal";
    case SR_CLASS_NONE:
        break;
    }
    return "none";
}

int sr_code_by_name(const char *name)
{
    if (!name)
        return SR_OK;
    for (size_t i = 0; i < N_CODES; i++) {
        if (strcmp(k_codes[i].name, name) == 0)
            return k_codes[i].code;
    }
    return SR_OK;
}

size_t sr_code_count(void)
{
    return N_CODES;
}

int sr_code_at(size_t i)
{
    return i < N_CODES ? k_codes[i].code : SR_OK;
}
