/* Terminal output of a run: scenario lines, the progress line, the last line (term.h). */
#include "term.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report_priv.h"
#include "sr_clock.h"

struct sr_term {
    pthread_mutex_t mu;
    FILE *f;
    sr_term_opts o;
    size_t total, done, failed;
    int64_t t0_ns; /* sr_clock_ns() at the start */
    int drawn;     /* a progress line is on screen */
};

static int env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

void sr_term_detect(sr_term_opts *out, FILE *f)
{
    const char *term = getenv("TERM");
    int tty = f && isatty(fileno(f));
    out->progress = tty && !env_set("CI");
    /* NO_COLOR counts when present at all (no-color.org), even empty. */
    out->color = out->progress && !getenv("NO_COLOR") && !(term && strcmp(term, "dumb") == 0);
}

int sr_term_start(sr_term **out, FILE *f, size_t total, const sr_term_opts *opts, sr_err *err)
{
    if (!out || !f)
        return sr_err_set(err, SR_E_INVAL, "sr_term_start: no stream");
    sr_term *t = calloc(1, sizeof(*t));
    if (!t)
        return sr_err_set(err, SR_E_NOMEM, "cannot allocate the terminal state");
    pthread_mutex_init(&t->mu, NULL);
    t->f = f;
    t->total = total;
    if (opts)
        t->o = *opts;
    else
        sr_term_detect(&t->o, f);
    t->t0_ns = sr_clock_ns();
    *out = t;
    return 0;
}

void sr_term_add_total(sr_term *t, size_t more)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->total += more;
    pthread_mutex_unlock(&t->mu);
}

static void erase(sr_term *t)
{
    if (t->drawn)
        fputs("\r\033[K", t->f);
    t->drawn = 0;
}

static void draw(sr_term *t)
{
    long s = (long)((sr_clock_ns() - t->t0_ns) / 1000000000);
    if (t->total)
        fprintf(t->f, "[%*zu/%zu] ", (int)snprintf(NULL, 0, "%zu", t->total), t->done, t->total);
    else
        fprintf(t->f, "[%zu] ", t->done);
    if (t->failed && t->o.color)
        fprintf(t->f, "\033[1;31m%zu failed\033[0m", t->failed);
    else
        fprintf(t->f, "%zu failed", t->failed);
    fprintf(t->f, "  %ld:%02ld", s / 60, s % 60);
    t->drawn = 1;
}

/* Prints text built by a reporter helper; falls back to nothing when out of memory. */
static void emit(sr_term *t, const sr_buf *b)
{
    if (b->data)
        fwrite(b->data, 1, b->len, t->f);
}

void sr_term_scenario_done(sr_term *t, const sr_scenario_result *s)
{
    if (!t || !s)
        return;
    sr_buf b = SR_BUF_INIT;
    sr_rw w = {&b, 0, NULL};
    sr_report_line(&w, s, t->o.color);
    pthread_mutex_lock(&t->mu);
    t->done++;
    t->failed += s->verdict == SR_VERDICT_FAIL || s->verdict == SR_VERDICT_ERROR;
    if (t->o.progress)
        erase(t);
    emit(t, &b);
    if (t->o.progress)
        draw(t);
    fflush(t->f);
    pthread_mutex_unlock(&t->mu);
    sr_buf_release(&b);
}

void sr_term_note(sr_term *t, const char *line)
{
    if (!t || !line)
        return;
    sr_buf b = SR_BUF_INIT;
    sr_rw w = {&b, 0, NULL};
    sr_rw_utf8(&w, line);
    sr_rw_puts(&w, "\n");
    pthread_mutex_lock(&t->mu);
    if (t->o.progress)
        erase(t);
    emit(t, &b);
    if (t->o.progress)
        draw(t);
    fflush(t->f);
    pthread_mutex_unlock(&t->mu);
    sr_buf_release(&b);
}

void sr_term_finish(sr_term *t, const sr_run_result *run)
{
    if (!t)
        return;
    erase(t);
    if (run) {
        sr_buf b = SR_BUF_INIT;
        sr_rw w = {&b, 0, NULL};
        sr_report_summary_line(&w, run->counts);
        emit(t, &b);
        sr_buf_release(&b);
    }
    fflush(t->f);
    sr_term_free(t);
}

void sr_term_free(sr_term *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}
