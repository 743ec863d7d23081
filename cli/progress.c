/* cli/progress.c — a long command's progress on stderr: a terminal's line, or a log's lines (cli/progress.h). */
#include "cli/progress.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock (the default clock). */
static double monotonic(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum cli_progress_kind cli_progress_kind_for(bool wanted, int fd)
{
    if (!wanted)
        return CLI_PROGRESS_OFF;
    return isatty(fd) ? CLI_PROGRESS_TERMINAL : CLI_PROGRESS_LOG;
}

void cli_progress_begin(struct cli_progress *p, enum cli_progress_kind kind, FILE *out, const char *command,
                        long total, cli_progress_clock clock, void *clock_ctx)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->out = out;
    p->command = command;
    p->total = total;
    p->clock = clock ? clock : monotonic;
    p->clock_ctx = clock_ctx;
    p->start = p->last = p->clock(p->clock_ctx);
    p->last_done = -1;
}

/* The tenth of the work that `done` units reach (0..10); 0 when the total is unknown. */
static long tenth(const struct cli_progress *p, long done)
{
    return p->total > 0 ? (done >= p->total ? 10 : done * 10 / p->total) : 0;
}

bool cli_progress_due(const struct cli_progress *p, long done, double now)
{
    if (p->last_done < 0)
        return true;
    if (done == p->last_done && now - p->last < CLI_PROGRESS_LOG_SECONDS)
        return false; /* nothing new: the same line again only as a heartbeat */
    if (p->total > 0 && done >= p->total)
        return true;
    return tenth(p, done) > tenth(p, p->last_done) || now - p->last >= CLI_PROGRESS_LOG_SECONDS;
}

void cli_progress_duration(double seconds, char *buf, size_t n)
{
    if (!(seconds >= 0) || !isfinite(seconds) || seconds > 1e9) {
        snprintf(buf, n, "--");
        return;
    }
    long s = lround(seconds);
    if (s < 60)
        snprintf(buf, n, "%lds", s);
    else if (s < 3600)
        snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, n, "%ldh%02ldm", s / 3600, s % 3600 / 60);
}

double cli_progress_eta(const struct cli_progress *p, long done, double now)
{
    double spent = now - p->start;
    if (p->total <= 0 || done <= 0 || !(spent > 0))
        return -1;
    if (done >= p->total)
        return 0;
    return spent / (double)done * (double)(p->total - done);
}

/* The rate so far, units a second, as "7.6/s" (or "40/min" when slower than one in ten seconds). */
static void rate_text(double rate, char *buf, size_t n)
{
    if (rate >= 10)
        snprintf(buf, n, "%.0f/s", rate);
    else if (rate >= 0.1)
        snprintf(buf, n, "%.1f/s", rate);
    else
        snprintf(buf, n, "%.1f/min", rate * 60);
}

void cli_progress_log_line(const struct cli_progress *p, long done, double now, const char *next, char *buf, size_t n)
{
    char spent[CLI_PROGRESS_DURATION_LEN], eta[CLI_PROGRESS_DURATION_LEN], rate[24];
    size_t k = (size_t)snprintf(buf, n, "%s: %ld", p->command, done);
    if (p->total > 0 && k < n)
        k += (size_t)snprintf(buf + k, n - k, "/%ld (%ld%%)", p->total, done >= p->total ? 100 : done * 100 / p->total);
    cli_progress_duration(now - p->start, spent, sizeof spent);
    if (done > 0 && now > p->start && k < n) {
        rate_text((double)done / (now - p->start), rate, sizeof rate);
        k += (size_t)snprintf(buf + k, n - k, " in %s, %s", spent, rate);
        double left = cli_progress_eta(p, done, now);
        cli_progress_duration(left, eta, sizeof eta);
        if (left >= 0 && done < p->total && k < n)
            k += (size_t)snprintf(buf + k, n - k, ", ETA %s", eta);
    }
    if (next && k < n)
        snprintf(buf + k, n - k, "; next: %s", next);
}

void cli_progress_terminal_line(const struct cli_progress *p, long done, double now, const char *next, char *buf,
                                size_t n)
{
    char eta[CLI_PROGRESS_DURATION_LEN];
    double left = cli_progress_eta(p, done, now);
    size_t k = (size_t)snprintf(buf, n, "[%ld/%ld] %s", done + 1, p->total, next ? next : "");
    if (left >= 0 && k < n) {
        cli_progress_duration(left, eta, sizeof eta);
        snprintf(buf + k, n - k, "  ETA %s", eta);
    }
}

/* Blank a terminal's line and return the cursor to its start. */
static void blank(struct cli_progress *p)
{
    if (p->width > 0)
        fprintf(p->out, "\r%*s\r", p->width, "");
    p->width = 0;
}

void cli_progress_update(struct cli_progress *p, long done, const char *next)
{
    char line[512];
    double now = p->kind == CLI_PROGRESS_OFF ? 0 : p->clock(p->clock_ctx);
    if (p->kind == CLI_PROGRESS_TERMINAL) {
        if (!next) {
            blank(p);
        } else {
            cli_progress_terminal_line(p, done, now, next, line, sizeof line);
            int len = (int)strlen(line);
            fprintf(p->out, "\r%s%*s", line, p->width > len ? p->width - len : 0, "");
            p->width = len;
        }
        fflush(p->out);
    } else if (p->kind == CLI_PROGRESS_LOG && cli_progress_due(p, done, now)) {
        cli_progress_log_line(p, done, now, next, line, sizeof line);
        fprintf(p->out, "%s\n", line);
        fflush(p->out);
        p->last = now;
        p->last_done = done;
    }
}

void cli_progress_end(struct cli_progress *p)
{
    if (p->kind == CLI_PROGRESS_TERMINAL) {
        blank(p);
        fflush(p->out);
    }
}
