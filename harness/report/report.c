/* The reporter table, the list parser and atomic writing of report files (report.h). */
#include "report_priv.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr_suggest.h"

/* The reporter table of report.h, row i at index i (whose bit is 1u << i). */
static const sr_reporter reporters[SR_REPORTER_COUNT] = {
#define REPORTER_ROW(sym, name, file, render) {name, SR_REPORT_##sym, file, render},
    SR_REPORTER_TABLE(REPORTER_ROW)
#undef REPORTER_ROW
};
#define N_REPORTERS ((size_t)SR_REPORTER_COUNT)

static const sr_reporter *by_bit(unsigned bit)
{
    for (size_t i = 0; i < N_REPORTERS; i++)
        if (reporters[i].bit == bit)
            return &reporters[i];
    return NULL;
}

const char *sr_report_file_name(unsigned bit)
{
    const sr_reporter *r = by_bit(bit);
    return r ? r->file : NULL;
}

const char *sr_report_names(char *dst, size_t cap, unsigned which, const char *sep)
{
    size_t len = 0;
    if (!cap)
        return dst;
    dst[0] = '\0';
    for (size_t i = 0; i < N_REPORTERS; i++) {
        if (!(which & reporters[i].bit))
            continue;
        int n = snprintf(dst + len, cap - len, "%s%s", len ? sep : "", reporters[i].name);
        if (n < 0 || (size_t)n >= cap - len) {
            dst[len] = '\0'; /* only whole names */
            break;
        }
        len += (size_t)n;
    }
    return dst;
}

int sr_report_parse_list(unsigned *out, const char *list, sr_err *err)
{
    if (!out || !list)
        return sr_err_set(err, SR_E_INVAL, "no reporter list");
    unsigned bits = 0;
    const char *p = list;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        size_t n = strcspn(p, ",");
        size_t m = n;
        while (m > 0 && isspace((unsigned char)p[m - 1]))
            m--;
        if (m == 0)
            return sr_err_set(err, SR_E_INVAL, "empty entry in reporter list '%s'", list);
        unsigned bit = 0;
        if (m == 3 && strncmp(p, "all", 3) == 0)
            bit = SR_REPORT_ALL;
        for (size_t i = 0; i < N_REPORTERS && !bit; i++)
            if (strlen(reporters[i].name) == m && strncmp(p, reporters[i].name, m) == 0)
                bit = reporters[i].bit;
        if (!bit) {
            const char *known[N_REPORTERS + 1];
            for (size_t i = 0; i < N_REPORTERS; i++)
                known[i] = reporters[i].name;
            known[N_REPORTERS] = "all";
            char word[32], hint[160];
            snprintf(word, sizeof(word), "%.*s", (int)(m < 31 ? m : 31), p);
            sr_suggest_text(hint, sizeof(hint), word, known, N_REPORTERS + 1, "known");
            return sr_err_set(err, SR_E_INVAL, "unknown reporter '%.*s'; %s", (int)m, p, hint);
        }
        bits |= bit;
        if (!p[n])
            break;
        p += n + 1;
    }
    *out = bits;
    return 0;
}

int sr_report_render(sr_buf *out, const sr_run_result *run, unsigned bit, sr_err *err)
{
    const sr_reporter *r = by_bit(bit);
    if (!out || !run || !r)
        return sr_err_set(err, SR_E_INVAL, "sr_report_render: bad argument");
    sr_rw w = sr_report_writer(out, err);
    r->render(&w, run);
    return w.rc;
}

int sr_report_write_atomic(const char *dir, const char *name, const char *data, size_t len,
                           sr_err *err)
{
    char path[4096], tmp[4200];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
        return sr_err_set(err, SR_E_INVAL, "report path too long: %s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp-%ld", dir, name, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return sr_err_set(err, SR_E_IO, "%s: cannot create (as %s): %s", path, tmp,
                          strerror(errno));
    int bad = len && fwrite(data, 1, len, f) != len;
    int e = bad ? errno : 0;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad || rename(tmp, path) != 0) {
        e = bad ? e : errno;
        unlink(tmp);
        return sr_err_set(err, SR_E_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}

int sr_report_write(const sr_run_result *run, const char *dir, unsigned which, sr_err *err)
{
    if (!run || !dir || !(which & SR_REPORT_ALL))
        return sr_err_set(err, SR_E_INVAL, "sr_report_write: no run, folder or reporter");
    int first = 0;
    for (size_t i = 0; i < N_REPORTERS; i++) {
        if (!(which & reporters[i].bit))
            continue;
        sr_buf b = SR_BUF_INIT;
        sr_err e = SR_ERR_INIT;
        int rc = sr_report_render(&b, run, reporters[i].bit, &e);
        if (!rc)
            rc = sr_report_write_atomic(dir, reporters[i].file, b.data ? b.data : "", b.len, &e);
        sr_buf_release(&b);
        if (rc && !first) {
            first = rc;
            if (err)
                *err = e;
        }
    }
    return first;
}
