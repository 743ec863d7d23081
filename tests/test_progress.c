/* tests/test_progress.c — a long command's progress (cli/progress.c): when a log's line is due, the lines' text (the
 * ETA, the rate, the percentage), a terminal's line and its blanking. The clock is a fake one the tests set: nothing
 * sleeps, nothing depends on timing. */
#include "check.h"
#include "cli/progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The fake clock: the seconds a test sets. */
static double fake_now;

/* Read the fake clock. */
static double fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* A progress printing into a memory stream, started at second 0 of the fake clock. */
struct captured {
    struct cli_progress p;
    FILE *f;
    char *text;
    size_t len;
};

/* Start one of kind over total units. */
static void capture(struct captured *c, enum cli_progress_kind kind, long total)
{
    c->text = NULL;
    c->len = 0;
    c->f = open_memstream(&c->text, &c->len);
    fake_now = 0;
    cli_progress_begin(&c->p, kind, c->f, "check", total, fake_clock, NULL);
}

/* Close the stream (its text stays in c->text, freed by the caller). */
static void finish(struct captured *c) { fclose(c->f); }

/* How many lines s holds. */
static int lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* Durations: seconds, minutes and seconds, hours and minutes; unknown as "--". */
static void test_duration(void)
{
    char b[CLI_PROGRESS_DURATION_LEN];
    cli_progress_duration(0, b, sizeof b);
    CHECK_STR(b, "0s");
    cli_progress_duration(44.4, b, sizeof b);
    CHECK_STR(b, "44s");
    cli_progress_duration(59.6, b, sizeof b);
    CHECK_STR(b, "1m00s");
    cli_progress_duration(185, b, sizeof b);
    CHECK_STR(b, "3m05s");
    cli_progress_duration(7440, b, sizeof b);
    CHECK_STR(b, "2h04m");
    cli_progress_duration(-1, b, sizeof b);
    CHECK_STR(b, "--");
    cli_progress_duration(NAN, b, sizeof b);
    CHECK_STR(b, "--");
    cli_progress_duration(INFINITY, b, sizeof b);
    CHECK_STR(b, "--");
}

/* The ETA: the rate so far over what is left; unknown before a unit is done or without a total; 0 when done. */
static void test_eta(void)
{
    struct cli_progress p;
    fake_now = 0;
    cli_progress_begin(&p, CLI_PROGRESS_LOG, stderr, "check", 420, fake_clock, NULL);
    CHECK(fabs(cli_progress_eta(&p, 84, 11) - 44) < 1e-9);
    CHECK(cli_progress_eta(&p, 0, 11) < 0);
    CHECK(cli_progress_eta(&p, 84, 0) < 0);
    CHECK(cli_progress_eta(&p, 420, 55) == 0);
    cli_progress_begin(&p, CLI_PROGRESS_LOG, stderr, "check", 0, fake_clock, NULL);
    CHECK(cli_progress_eta(&p, 5, 10) < 0);
}

/* When a log's line is due: the first; a tenth passed; ten seconds since the last; the end; not the same count
 * again before ten seconds. */
static void test_due(void)
{
    struct cli_progress p;
    fake_now = 0;
    cli_progress_begin(&p, CLI_PROGRESS_LOG, stderr, "check", 100, fake_clock, NULL);
    CHECK(cli_progress_due(&p, 0, 0));
    p.last_done = 0, p.last = 0;
    CHECK(!cli_progress_due(&p, 1, 1));
    CHECK(!cli_progress_due(&p, 9, 9.9));
    CHECK(cli_progress_due(&p, 10, 2));  /* a tenth */
    CHECK(cli_progress_due(&p, 3, 10));  /* ten seconds */
    CHECK(cli_progress_due(&p, 100, 1)); /* the end */
    CHECK(!cli_progress_due(&p, 0, 9));  /* the same count, not yet a heartbeat */
    CHECK(cli_progress_due(&p, 0, 10));  /* the same count after ten seconds: a heartbeat */
    p.last_done = 19, p.last = 5;
    CHECK(cli_progress_due(&p, 20, 6));  /* 19 → 20 crosses into the third tenth */
    p.last_done = 20, p.last = 6;
    CHECK(!cli_progress_due(&p, 29, 7)); /* still the third tenth */
    p.last_done = 100, p.last = 5;
    CHECK(!cli_progress_due(&p, 100, 6)); /* the end said once */
    cli_progress_begin(&p, CLI_PROGRESS_LOG, stderr, "check", 0, fake_clock, NULL); /* no total: time alone */
    p.last_done = 1, p.last = 0;
    CHECK(!cli_progress_due(&p, 50, 9));
    CHECK(cli_progress_due(&p, 50, 10));
}

/* The lines' text: the start, the middle (percentage, time, rate, ETA, the next unit), the end, no total. */
static void test_text(void)
{
    struct cli_progress p;
    char b[256];
    fake_now = 0;
    cli_progress_begin(&p, CLI_PROGRESS_LOG, stderr, "check", 420, fake_clock, NULL);
    cli_progress_log_line(&p, 0, 0, "tiny-llama decode under reference", b, sizeof b);
    CHECK_STR(b, "check: 0/420 (0%); next: tiny-llama decode under reference");
    cli_progress_log_line(&p, 84, 11, "tiny-qwen3 decode under none", b, sizeof b);
    CHECK_STR(b, "check: 84/420 (20%) in 11s, 7.6/s, ETA 44s; next: tiny-qwen3 decode under none");
    cli_progress_log_line(&p, 420, 55.2, NULL, b, sizeof b);
    CHECK_STR(b, "check: 420/420 (100%) in 55s, 7.6/s");
    cli_progress_log_line(&p, 2, 100, NULL, b, sizeof b);
    CHECK_STR(b, "check: 2/420 (0%) in 1m40s, 1.2/min, ETA 5h48m");
    cli_progress_log_line(&p, 21, 1, NULL, b, sizeof b);
    CHECK_STR(b, "check: 21/420 (5%) in 1s, 21/s, ETA 19s");
    cli_progress_terminal_line(&p, 0, 0, "tiny-llama decode", b, sizeof b);
    CHECK_STR(b, "[1/420] tiny-llama decode");
    cli_progress_terminal_line(&p, 84, 11, "tiny-qwen3 decode", b, sizeof b);
    CHECK_STR(b, "[85/420] tiny-qwen3 decode  ETA 44s");
    cli_progress_begin(&p, CLI_PROGRESS_LOG, stderr, "prove", 0, fake_clock, NULL);
    cli_progress_log_line(&p, 5, 2, "add_norm", b, sizeof b);
    CHECK_STR(b, "prove: 5 in 2s, 2.5/s; next: add_norm");
}

/* A log over work of many quick units prints the start and every tenth; over slow units, a line at least every ten
 * seconds; each line its own. */
static void test_log(void)
{
    struct captured c;
    capture(&c, CLI_PROGRESS_LOG, 100); /* 100 units of half a second: a tenth every 5 s */
    for (long d = 0; d <= 100; d++) {
        fake_now = 0.5 * (double)d;
        cli_progress_update(&c.p, d, d < 100 ? "unit" : NULL);
    }
    cli_progress_end(&c.p);
    finish(&c);
    CHECKF(lines(c.text) == 11, "%d lines:\n%s", lines(c.text), c.text);
    CHECK(strstr(c.text, "check: 0/100 (0%); next: unit\n") == c.text);
    CHECK(strstr(c.text, "check: 50/100 (50%) in 25s, 2.0/s, ETA 25s; next: unit\n") != NULL);
    CHECK(strstr(c.text, "check: 100/100 (100%) in 50s, 2.0/s\n") != NULL);
    CHECK(strchr(c.text, '\r') == NULL);
    free(c.text);

    capture(&c, CLI_PROGRESS_LOG, 1000); /* 1000 units of a second: a tenth every 100 s, so a line every 10 s */
    double last = 0, gap = 0;
    int printed = 0;
    for (long d = 0; d <= 1000; d++) {
        fake_now = (double)d;
        long before = c.p.last_done;
        cli_progress_update(&c.p, d, d < 1000 ? "unit" : NULL);
        if (c.p.last_done != before) {
            gap = fmax(gap, fake_now - last);
            last = fake_now;
            printed++;
        }
    }
    finish(&c);
    CHECKF(lines(c.text) == 101 && printed == 101, "%d lines", lines(c.text));
    CHECKF(gap <= CLI_PROGRESS_LOG_SECONDS, "a gap of %g s", gap);
    free(c.text);

    capture(&c, CLI_PROGRESS_LOG, 4); /* 4 units of 25 s: every one a line */
    for (long d = 0; d <= 4; d++) {
        fake_now = 25.0 * (double)d;
        cli_progress_update(&c.p, d, d < 4 ? "unit" : NULL);
    }
    finish(&c);
    CHECKF(lines(c.text) == 5, "%d lines:\n%s", lines(c.text), c.text);
    free(c.text);
}

/* A terminal's line is rewritten in place (with its ETA once known), padded over a longer one, blanked at the end;
 * off prints nothing; the kind follows the wish and the descriptor. */
static void test_terminal(void)
{
    struct captured c;
    capture(&c, CLI_PROGRESS_TERMINAL, 3);
    cli_progress_update(&c.p, 0, "a-long-first-unit");
    fake_now = 10;
    cli_progress_update(&c.p, 1, "b");
    cli_progress_end(&c.p);
    finish(&c);
    char want[128]; /* the second line padded over the first's 23 characters; its own 16 blanked */
    snprintf(want, sizeof want, "\r[1/3] a-long-first-unit\r[2/3] b  ETA 20s%7s\r%16s\r", "", "");
    CHECKF(strcmp(c.text, want) == 0, "'%s'", c.text);
    CHECK(strchr(c.text, '\n') == NULL);
    free(c.text);

    capture(&c, CLI_PROGRESS_OFF, 3);
    cli_progress_update(&c.p, 0, "a");
    cli_progress_update(&c.p, 3, NULL);
    cli_progress_end(&c.p);
    finish(&c);
    CHECK(c.len == 0);
    free(c.text);

    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK(cli_progress_kind_for(true, fileno(f)) == CLI_PROGRESS_LOG);
        CHECK(cli_progress_kind_for(false, fileno(f)) == CLI_PROGRESS_OFF);
        fclose(f);
    }
}

int main(void)
{
    test_duration();
    test_eta();
    test_due();
    test_text();
    test_log();
    test_terminal();
    return check_done("progress");
}
