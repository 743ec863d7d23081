/* cli/progress.h — how a long command (check, prove) shows its progress on stderr.
 *
 * On a terminal: one line rewritten in place before each unit of work, "[k/total] what  ETA 1m05s" (the ETA once a
 * unit is done). In a log (stderr not a terminal: CI), where such a line would show only at the end: a line of its
 * own when the work starts, at least every CLI_PROGRESS_LOG_SECONDS seconds and at every tenth of it (whichever
 * comes first, at the unit boundaries the command reports), and when it ends:
 *
 *     check: 84/420 (20%) in 11s, 7.6/s, ETA 44s; next: tiny-qwen3 decode under none
 *
 * --no-progress silences both. The clock is a parameter, so the tests decide without sleeping. */
#ifndef FUSECHECK_CLI_PROGRESS_H
#define FUSECHECK_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CLI_PROGRESS_LOG_SECONDS 10.0 /* a log's lines come at least this often (while units end) */

/* Where the progress goes: nowhere, a terminal's line, or a log's lines. */
enum cli_progress_kind { CLI_PROGRESS_OFF, CLI_PROGRESS_TERMINAL, CLI_PROGRESS_LOG };

/* A clock: seconds, from any origin, never going back. */
typedef double (*cli_progress_clock)(void *ctx);

/* One command's progress. */
struct cli_progress {
    enum cli_progress_kind kind;
    FILE *out;
    const char *command; /* the log lines' prefix: "check" */
    long total;          /* units of work in all (≤ 0: unknown; no percentage, no ETA) */
    cli_progress_clock clock;
    void *clock_ctx;
    double start;        /* when the work began */
    double last;         /* when the log's last line was printed */
    long last_done;      /* the units that line counted (-1: none printed yet) */
    int width;           /* the terminal line's length, to blank it */
};

/* The kind for a command: off when not wanted (--no-progress), else a terminal's line when fd is a terminal, else a
 * log's lines. */
enum cli_progress_kind cli_progress_kind_for(bool wanted, int fd);
/* Start counting total units of work, printing to out; clock NULL: the monotonic clock. */
void cli_progress_begin(struct cli_progress *p, enum cli_progress_kind kind, FILE *out, const char *command,
                        long total, cli_progress_clock clock, void *clock_ctx);
/* Whether a log line is due at `now` with `done` units done: none printed yet, a tenth of the work passed since the
 * last, the work done, or CLI_PROGRESS_LOG_SECONDS since the last line. */
bool cli_progress_due(const struct cli_progress *p, long done, double now);
/* A duration as the lines show it: "45s", "3m05s", "2h04m"; "--" when unknown (negative or not finite). */
void cli_progress_duration(double seconds, char *buf, size_t n);
/* Room for any duration cli_progress_duration writes ("%ldh%02ldm" of the largest long is 24 bytes). */
#define CLI_PROGRESS_DURATION_LEN 32
/* The seconds left at `now` with `done` units done, at the rate so far; -1 when unknown (nothing done yet, no total). */
double cli_progress_eta(const struct cli_progress *p, long done, double now);
/* A log line (without its newline): "check: 84/420 (20%) in 11s, 7.6/s, ETA 44s; next: WHAT". */
void cli_progress_log_line(const struct cli_progress *p, long done, double now, const char *next, char *buf, size_t n);
/* A terminal line (without its "\r"): "[85/420] WHAT  ETA 44s". */
void cli_progress_terminal_line(const struct cli_progress *p, long done, double now, const char *next, char *buf,
                                size_t n);
/* Report that `done` units are done and the next one, `next` (NULL when none: the work is done), begins. */
void cli_progress_update(struct cli_progress *p, long done, const char *next);
/* The work is over (done or stopped): a terminal's line is blanked. */
void cli_progress_end(struct cli_progress *p);

#endif
