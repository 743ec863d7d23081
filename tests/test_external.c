/* tests/test_external.c — an optimizer as its own process (rules/external.c, docs/optimizer-protocol.md): the report
 * read back from its lines exactly; fusecheck's own optimizer served by `fusecheck optimize --serve` answering as it
 * does in process over the tiny zoo; and hostile optimizers (the scripts in tests/external/), each held to the fault it earns,
 * within its limit, its stderr kept, no child left behind, and the next request starting it again. */
#include "check.h"
#include "models/models.h"
#include "rules/rules.h"
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
/* The shims ci/nightly --quick checks the zoo under. */
static const char *const shims[] = {"reference", "none", "cuda-lane:h100:int8", "cuda-lane:a100:dequant",
                                    "cuda-lane:rtx4090:int8x2:cache=f32"};
#define NSHIMS (sizeof shims / sizeof shims[0])
#define NMODES (sizeof modes / sizeof modes[0])

/* Milliseconds on the monotonic clock. */
static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A tiny zoo model lifted in mode, or NULL when the model has no such step. */
static struct ir_graph *lift(const struct models_config *c, const char *mode)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    if (models_parse_mode(mode, &o.mode, err))
        return NULL;
    return models_lift(c, &o, err);
}

/* Whether the zoo's i-th model is a tiny one. */
static bool tiny(int i) { return strncmp(models_get(i)->name, "tiny-", 5) == 0; }

/* Append a line and its newline to a text. */
static void add_line(const char *text, void *ctx) { ir_text_add(ctx, "%s\n", text); }

/* A report's lines as the protocol carries them ("seed-rules" first for the seed's rules), malloc'd. */
static char *report_text(const struct rules_report *rep, size_t *n)
{
    struct ir_text t = {0};
    ir_text_add(&t, "%s", rep->seed_rules ? "seed-rules\n" : "");
    rules_report_lines(rep, add_line, &t);
    *n = t.n;
    return ir_text_take(&t);
}

/* Optimize g in process as `fusecheck optimize --shim S --hold H` does (the shim holding what its knob holds),
 * under the seed's rules when seed. 0, or -1. */
static int optimize_here(const struct ir_graph *g, const char *shim_name, const char *const *held, int nheld,
                         bool seed, struct rules_optimized *o)
{
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim)
        return -1;
    for (int i = 0; shim->hold && i < nheld; i++)
        shim->hold(shim, held[i]);
    rules_seed_mode(seed);
    int rc = rules_optimize(g, shim, held, nheld, o, err);
    rules_seed_mode(false);
    shim_free(shim);
    return rc;
}

/* ── The report read back ─────────────────────────────────────────────────────────────────────────────── */

/* Every report of the tiny zoo under the nightly's shims, plain and seed: lines → parse → lines byte for byte, the
 * digest the same, every code the same static string. */
static void test_round_trip(void)
{
    int reports = 0, decisions = 0, coded = 0, chip = 0;
    for (int m = 0; m < models_count(); m++) {
        if (!tiny(m))
            continue;
        for (size_t k = 0; k < NMODES; k++) {
            struct ir_graph *g = lift(models_get(m), modes[k]);
            for (size_t s = 0; g && s < NSHIMS; s++)
                for (int seed = 0; seed < 2; seed++) {
                    struct rules_optimized o;
                    if (optimize_here(g, shims[s], NULL, 0, seed, &o)) {
                        CHECKF(0, "%s %s %s: does not optimize", models_get(m)->name, modes[k], shims[s]);
                        continue;
                    }
                    size_t n, n2;
                    char *text = report_text(&o.report, &n), err[IR_ERR_LEN];
                    struct rules_report back;
                    int rc = rules_report_parse(text, n, &back, err);
                    CHECKF(rc == 0, "%s %s %s: %s", models_get(m)->name, modes[k], shims[s], err);
                    if (rc == 0) {
                        char *again = report_text(&back, &n2), d1[65], d2[65];
                        CHECKF(n == n2 && memcmp(text, again, n) == 0, "%s %s %s: lines differ after the round trip",
                               models_get(m)->name, modes[k], shims[s]);
                        rules_report_digest(&o.report, d1);
                        rules_report_digest(&back, d2);
                        CHECK_STR(d1, d2);
                        bool codes = back.n == o.report.n;
                        for (int32_t i = 0; codes && i < back.n; i++) {
                            const char *rule = o.report.d[i].rule;
                            /* the same static name as the optimizer's (the fold's: the rule the oracle reads) */
                            codes = back.d[i].code == o.report.d[i].code &&
                                    (back.d[i].rule == rule || (strcmp(rule, "fused_quant") == 0 &&
                                                                back.d[i].rule == rules_rule_fused_quant.name));
                            coded += back.d[i].code != NULL;
                            chip += !rules_find(rule) && strcmp(rule, "fused_quant") != 0;
                        }
                        CHECKF(codes, "%s %s %s: a rule or code is not the optimizer's own static string",
                               models_get(m)->name, modes[k], shims[s]);
                        decisions += back.n;
                        free(again);
                        rules_report_free(&back);
                    }
                    reports++;
                    free(text);
                    rules_optimized_free(&o);
                }
            ir_graph_free(g);
        }
    }
    CHECK(reports > 300);
    CHECK(coded > 0 && chip > 0);
    printf("round trip: %d reports, %d decisions (%d with codes, %d by chip rules)\n", reports, decisions, coded, chip);
}

/* One malformed report: its text, and the start of the error it must give. */
struct bad_report {
    const char *text, *err;
};

/* Each kind of bad line refused with its line number and what was expected. */
static void test_malformed_lines(void)
{
    static const struct bad_report bad[] = {
        {"add_norm add_norm [1, 2] fired\nno_rule add_norm [1] fired\n", "report line 2: unknown rule"},
        {"add_norm no_class [1] fired", "report line 1: unknown class"},
        {"add_norm add_norm [2, 1] fired", "report line 1: covers must not descend"},
        {"add_norm add_norm [1, 3, 3, 2] fired", "report line 1: covers must not descend"},
        {"add_norm add_norm [01] fired", "report line 1: an op number with a leading zero"},
        {"add_norm add_norm [-1] fired", "report line 1: expected an op number"},
        {"add_norm add_norm [1,2] fired", "report line 1: expected ', ' or ']'"},
        {"add_norm add_norm [1, 2]fired", "report line 1: expected '] '"},
        {"add_norm add_norm [1, 2] done", "report line 1: expected 'fired', 'held' or 'refused: <why>'"},
        {"add_norm add_norm [1, 2] fired {supports.parts}", "report line 1: expected 'fired'"},
        {"add_norm add_norm [1] fired\nadd_norm add_norm [1] refused: no {no.such.code}",
         "report line 2: unknown reason code 'no.such.code'"},
        {"add_norm add_norm [1] refused: odd}", "report line 1: a line ending in '}' carries a code"},
        {"add_norm add_norm [1] fired\n\nadd_norm add_norm [2] fired\n", "report line 2: an empty line"},
        {"add_norm add_norm [1] refused: a\ttab", "report line 1: a control byte"},
        {"add_norm add_norm [1] fired\nseed-rules\n", "report line 2: expected '<rule>"},
        {"add_norm", "report line 1: expected '<rule> <class> [<covers>] <outcome>'"},
        {"add_norm add_norm [99999999999] fired", "report line 1: an op number past"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rules_report rep;
        char err[IR_ERR_LEN];
        int rc = rules_report_parse(bad[i].text, strlen(bad[i].text), &rep, err);
        CHECKF(rc == -1 && strncmp(err, bad[i].err, strlen(bad[i].err)) == 0, "case %zu: rc %d, '%s'", i, rc, err);
        CHECK(rep.n == 0 && rep.d == NULL);
    }
    /* an overlong line */
    size_t big = (1u << 20) + 64;
    char *text = malloc(big + 1);
    memset(text, 'x', big);
    memcpy(text, "add_norm add_norm [1] refused: ", 31);
    text[big] = '\0';
    struct rules_report rep;
    char err[IR_ERR_LEN];
    CHECK(rules_report_parse(text, big, &rep, err) == -1 && strstr(err, "report line 1: longer than") == err);
    free(text);
    /* what reads: names resolved to fusecheck's static ones, codes to the shims' static strings */
    /* an op copied by a rewrite (a recomputed activation) is covered once per copy: a repeat reads */
    static const char twice[] = "recompute_fanout recompute_fanout [0, 0] fired";
    CHECK(rules_report_parse(twice, strlen(twice), &rep, err) == 0);
    CHECK(rep.n == 1 && rep.d[0].ncovers == 2 && rep.d[0].covers[0] == 0 && rep.d[0].covers[1] == 0);
    rules_report_free(&rep);
    static const char good[] = "seed-rules\nargmax_advance fused_sampling [37] fired\nfused_quant gemv_quant [3] held\n"
                               "merged_projections merged_qkv [1, 2, 3] refused:  {supports.parts}\n"
                               "add_norm add_norm [] refused: the lane runs on a single device {lane.supports.allreduce_norm}";
    CHECK(rules_report_parse(good, strlen(good), &rep, err) == 0);
    CHECK(rep.seed_rules && rep.n == 4);
    if (rep.n == 4) {
        CHECK(rep.d[0].rule == rules_advance()->name);
        CHECK(rep.d[1].rule == rules_rule_fused_quant.name && rep.d[1].outcome == RULES_HELD);
        CHECK(rep.d[2].rule == rules_rule_merged_projections.name && rep.d[2].ncovers == 3);
        CHECK_STR(rep.d[2].why, "");
        CHECK_STR(rep.d[2].code, "supports.parts");
        CHECK(rep.d[3].ncovers == 0);
        CHECK(rep.d[2].code == rules_reason_code(NULL, "the chip runs `x` as its parts", true));
        int nr;
        const struct shim_reason *rs = shim_lane_reasons(&nr);
        CHECK(nr > 0 && rep.d[3].code == rs[0].code);
        CHECK_STR(rep.d[3].why, "the lane runs on a single device");
    }
    rules_report_free(&rep);
    CHECK(rules_report_parse("", 0, &rep, err) == 0 && rep.n == 0 && !rep.seed_rules);
}

/* ── fusecheck's own optimizer as a process ───────────────────────────────────────────────────────────── */

/* Whether two graphs print the same. */
static bool same_text(const struct ir_graph *a, const struct ir_graph *b)
{
    size_t la, lb;
    char *ta = ir_print(a, &la), *tb = ir_print(b, &lb);
    bool same = ta && tb && la == lb && memcmp(ta, tb, la) == 0;
    free(ta);
    free(tb);
    return same;
}

/* Whether two reports print the same lines (codes included) and have the same digest. */
static bool same_report(const struct rules_report *a, const struct rules_report *b)
{
    size_t na, nb;
    char *ta = report_text(a, &na), *tb = report_text(b, &nb), da[65], db[65];
    rules_report_digest(a, da);
    rules_report_digest(b, db);
    bool same = na == nb && memcmp(ta, tb, na) == 0 && strcmp(da, db) == 0;
    free(ta);
    free(tb);
    return same;
}

/* The served optimizer gives what the in-process one gives over every tiny zoo graph × mode × nightly shim, plain,
 * under the seed's rules and with steps held — one process for every request. */
static void test_served_equals_in_process(void)
{
    char err[IR_ERR_LEN], command[1024];
    enum rules_external_fault f;
    snprintf(command, sizeof command, "exec '%s' optimize --serve", FUSECHECK_BINARY);
    double t0 = now_ms();
    struct rules_external *x = rules_external_start(command, NULL, &f, err);
    CHECKF(x != NULL, "start: %s: %s", rules_external_fault_name(f), err);
    if (!x)
        return;
    CHECK_STR(rules_external_name(x), "fusecheck");
    CHECK_STR(rules_external_version(x), FUSECHECK_VERSION);
    CHECK_STR(rules_external_command(x), command);
    int requests = 0, equal = 0;
    for (int m = 0; m < models_count(); m++) {
        if (!tiny(m))
            continue;
        for (size_t k = 0; k < NMODES; k++) {
            struct ir_graph *g = lift(models_get(m), modes[k]);
            for (size_t s = 0; g && s < NSHIMS; s++)
                for (int variant = 0; variant < 3; variant++) {
                    /* plain, the seed's rules, steps held (a shared step; on the lane also its knob's gemv_parts) */
                    static const char *const holds[] = {"add_norm", "gemv_parts"};
                    int nheld = variant == 2 ? (strncmp(shims[s], "cuda-lane:", 10) == 0 ? 2 : 1) : 0;
                    bool seed = variant == 1;
                    struct rules_optimized here, there;
                    if (optimize_here(g, shims[s], holds, nheld, seed, &here))
                        continue;
                    f = rules_external_optimize(x, g, shims[s], holds, nheld, seed, &there, err);
                    requests++;
                    CHECKF(f == RULES_EXTERNAL_NONE, "%s %s %s variant %d: %s: %s", models_get(m)->name, modes[k],
                           shims[s], variant, rules_external_fault_name(f), err);
                    if (f == RULES_EXTERNAL_NONE) {
                        bool same = same_text(here.graph, there.graph) && same_report(&here.report, &there.report);
                        CHECKF(same, "%s %s %s variant %d: the served optimizer answers otherwise",
                               models_get(m)->name, modes[k], shims[s], variant);
                        equal += same;
                        rules_optimized_free(&there);
                    }
                    rules_optimized_free(&here);
                }
            ir_graph_free(g);
        }
    }
    /* an unknown shim and an unknown held step are refused, the process kept */
    struct ir_graph *g = lift(models_find("tiny-llama"), "decode");
    struct rules_optimized o;
    static const char *const nope[] = {"no_such_step"};
    CHECK(rules_external_optimize(x, g, "no-such-shim", NULL, 0, false, &o, err) == RULES_EXTERNAL_REFUSED);
    CHECKF(strstr(err, "no-such-shim") != NULL, "%s", err);
    CHECK(rules_external_optimize(x, g, "reference", nope, 1, false, &o, err) == RULES_EXTERNAL_REFUSED);
    CHECKF(strstr(err, "no_such_step") != NULL, "%s", err);
    CHECK(rules_external_optimize(x, g, "reference", NULL, 0, false, &o, err) == RULES_EXTERNAL_NONE);
    rules_optimized_free(&o);
    ir_graph_free(g);
    rules_external_stop(x);
    CHECK(requests > 500 && equal == requests);
    printf("served = in process: %d of %d requests over one process, %.0f ms\n", equal, requests, now_ms() - t0);
}

/* ── Hostile optimizers ───────────────────────────────────────────────────────────────────────────────── */

/* Whether this process has no child left, live or a zombie. */
static bool no_children(void)
{
    int st;
    return waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD;
}

/* Whether process pid is gone (or a zombie another parent has yet to reap), within a second. */
static bool gone(pid_t pid)
{
    for (int i = 0; i < 100; i++) {
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
            return true;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        if (paren && paren[1] == ' ' && paren[2] == 'Z')
            return true;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return false;
}

/* How many descriptors this process holds open. */
static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

/* One hostile optimizer: its script, the fault its start gives, the fault a request gives, and text its stderr tail
 * must hold (NULL: none asked). */
struct hostile {
    const char *script;
    enum rules_external_fault at_start, at_request;
    const char *stderr_has;
};

/* Each hostile optimizer earns its fault within its limit, keeps its stderr, leaves no child, and is started again
 * at the next request (which earns the same fault). */
static void test_hostile(void)
{
    static const struct hostile cases[] = {
        {"garbage.sh", RULES_EXTERNAL_HANDSHAKE, 0, NULL},
        {"mute.sh", RULES_EXTERNAL_TIMEOUT, 0, NULL},
        {"half_answer.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_EXIT, "half_answer: giving up"},
        {"wrong_id.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_WRONG_ID, NULL},
        {"huge.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_TOO_LARGE, NULL},
        {"silent.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_TIMEOUT, NULL},
        {"exit_mid.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_EXIT, "exit_mid: out of patience"},
        {"stderr_forever.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_TIMEOUT, "stderr-noise\nstderr-noise\n"},
        {"ignore_stdin.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_TIMEOUT, NULL},
        {"malformed.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_MALFORMED, NULL},
        {"refuse.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_REFUSED, NULL},
        {"close_stdin.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_EXIT, NULL},
        {"bad_graph.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_MALFORMED, NULL},
        {"bad_header.sh", RULES_EXTERNAL_NONE, RULES_EXTERNAL_FRAMING, NULL},
    };
    const struct rules_external_limits lim = {.timeout_ms = 400, .max_answer = 4096, .keep_stderr = 1024};
    int fds_before = open_fds();
    /* a graph whose request overfills a pipe (64 KiB), for the optimizer that never reads */
    struct models_options mo = models_default_options();
    char err[IR_ERR_LEN];
    models_parse_mode("prefill:64", &mo.mode, err);
    struct ir_graph *big = models_lift(models_find("tiny-qwen3-next"), &mo, err);
    struct ir_graph *small = lift(models_find("tiny-llama"), "decode");
    char pids[] = "/tmp/fusecheck-test-external-XXXXXX";
    int fd = mkstemp(pids);
    CHECK(fd >= 0 && big && small);
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct hostile *h = &cases[i];
        char command[256];
        snprintf(command, sizeof command, "FUSECHECK_TEST_PIDS=%s exec sh tests/external/%s", pids, h->script);
        enum rules_external_fault f;
        double t0 = now_ms();
        struct rules_external *x = rules_external_start(command, &lim, &f, err);
        double took = now_ms() - t0;
        CHECKF(f == h->at_start, "%s: start gave %s (%s), not %s", h->script, rules_external_fault_name(f), err,
               rules_external_fault_name(h->at_start));
        CHECKF(took < lim.timeout_ms + 1000, "%s: start took %.0f ms", h->script, took);
        CHECKF(x || no_children(), "%s: a child is left after a failed start", h->script);
        if (!x)
            continue;
        for (int round = 0; round < 2; round++) {
            struct rules_optimized o;
            t0 = now_ms();
            f = rules_external_optimize(x, strcmp(h->script, "ignore_stdin.sh") == 0 || strcmp(h->script, "close_stdin.sh") == 0 ? big : small, "reference",
                                        NULL, 0, false, &o, err);
            took = now_ms() - t0;
            CHECKF(f == h->at_request, "%s round %d: %s (%s), not %s", h->script, round, rules_external_fault_name(f),
                   err, rules_external_fault_name(h->at_request));
            CHECKF(err[0] != '\0', "%s: a fault says why", h->script);
            if (round == 0)
                printf("%-18s %-9s in %4.0f ms: %.100s\n", h->script, rules_external_fault_name(f), took, err);
            CHECKF(took < lim.timeout_ms + 1000, "%s round %d: took %.0f ms", h->script, round, took);
            CHECK(o.graph == NULL && o.report.n == 0);
            const char *tail = rules_external_stderr(x);
            CHECK(strlen(tail) <= lim.keep_stderr);
            if (h->stderr_has)
                CHECKF(strstr(tail, h->stderr_has) != NULL, "%s: its stderr tail lacks '%s': '%.80s'", h->script,
                       h->stderr_has, tail);
            if (f != RULES_EXTERNAL_REFUSED)
                CHECKF(no_children(), "%s round %d: a child is left after the fault", h->script, round);
            else
                CHECKF(!no_children(), "%s: a refusal keeps the process", h->script);
        }
        if (strcmp(h->script, "stderr_forever.sh") == 0) {
            FILE *p = fopen(pids, "r");
            int pid = 0;
            CHECK(p && fscanf(p, "%d", &pid) == 1 && pid > 0);
            if (p)
                fclose(p);
            CHECKF(pid > 0 && gone(pid), "stderr_forever.sh: its flood (pid %d) outlived it", pid);
        }
        t0 = now_ms();
        rules_external_stop(x);
        CHECKF(now_ms() - t0 < 1500, "%s: stop took %.0f ms", h->script, now_ms() - t0);
        CHECKF(no_children(), "%s: a child is left after the stop", h->script);
    }
    /* an optimizer that fails its first request is started again and then answers */
    char flag[] = "/tmp/fusecheck-test-flag-XXXXXX", command[1024];
    fd = mkstemp(flag);
    if (fd >= 0) {
        close(fd);
        unlink(flag);
    }
    snprintf(command, sizeof command, "FUSECHECK_TEST_FLAG=%s FUSECHECK_TEST_BINARY='%s' exec sh tests/external/flaky.sh",
             flag, FUSECHECK_BINARY);
    enum rules_external_fault f;
    const struct rules_external_limits roomy = {.timeout_ms = 10000};
    struct rules_external *x = rules_external_start(command, &roomy, &f, err);
    CHECK(x && rules_external_name(x) && strcmp(rules_external_name(x), "flaky") == 0);
    if (x) {
        struct rules_optimized o, here;
        CHECK(rules_external_optimize(x, small, "reference", NULL, 0, false, &o, err) == RULES_EXTERNAL_EXIT);
        f = rules_external_optimize(x, small, "reference", NULL, 0, false, &o, err);
        CHECKF(f == RULES_EXTERNAL_NONE, "restarted: %s: %s", rules_external_fault_name(f), err);
        CHECK_STR(rules_external_name(x), "fusecheck");
        if (f == RULES_EXTERNAL_NONE && optimize_here(small, "reference", NULL, 0, false, &here) == 0) {
            CHECK(same_text(here.graph, o.graph) && same_report(&here.report, &o.report));
            rules_optimized_free(&here);
            rules_optimized_free(&o);
        }
        rules_external_stop(x);
    }
    unlink(flag);
    /* a stop gives a process that does not exit at its stdin's end a second, then kills it */
    x = rules_external_start("exec sh tests/external/ignore_stdin.sh", &lim, &f, err);
    CHECK(x != NULL);
    double t0 = now_ms();
    rules_external_stop(x);
    double took = now_ms() - t0;
    CHECKF(took >= 900 && took < 1800, "stop of a process that stays: %.0f ms", took);
    CHECK(no_children());
    /* a command the shell cannot run */
    CHECK(rules_external_start("exec /nonexistent/optimizer", &lim, &f, err) == NULL && f == RULES_EXTERNAL_START);
    CHECK(no_children());
    unlink(pids);
    CHECKF(open_fds() == fds_before, "descriptors: %d before, %d after", fds_before, open_fds());
    ir_graph_free(big);
    ir_graph_free(small);
    /* the fault table */
    CHECK_STR(rules_external_fault_name(RULES_EXTERNAL_TOO_LARGE), "too-large");
    CHECK(strlen(rules_external_fault_meaning(RULES_EXTERNAL_WRONG_ID)) > 0);
}

/* The protocol document's example optimizer (tests/external/identity.py, where python3 is installed): the graph back
 * as it came, no decision; the seed's rules refused, the process kept. */
static void test_identity_example(void)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        printf("identity example: skipped: no python3\n");
        return;
    }
    char err[IR_ERR_LEN];
    enum rules_external_fault f;
    struct rules_external *x = rules_external_start("exec python3 tests/external/identity.py", NULL, &f, err);
    CHECKF(x != NULL, "identity.py: %s: %s", rules_external_fault_name(f), err);
    if (!x)
        return;
    CHECK_STR(rules_external_name(x), "identity");
    CHECK_STR(rules_external_version(x), "1.0");
    struct ir_graph *g = lift(models_find("tiny-qwen3"), "prefill:8");
    static const char *const held[] = {"add_norm"};
    struct rules_optimized o;
    f = rules_external_optimize(x, g, "cuda-lane:h100:int8", held, 1, false, &o, err);
    CHECKF(f == RULES_EXTERNAL_NONE, "identity.py: %s: %s", rules_external_fault_name(f), err);
    if (f == RULES_EXTERNAL_NONE) {
        CHECK(o.report.n == 0 && !o.report.seed_rules && same_text(g, o.graph));
        rules_optimized_free(&o);
    }
    CHECK(rules_external_optimize(x, g, "reference", NULL, 0, true, &o, err) == RULES_EXTERNAL_REFUSED);
    CHECK_STR(err, "it refused: identity has no seed rules");
    CHECK(rules_external_optimize(x, g, "reference", NULL, 0, false, &o, err) == RULES_EXTERNAL_NONE);
    rules_optimized_free(&o);
    ir_graph_free(g);
    rules_external_stop(x);
    CHECK(no_children());
}

int main(void)
{
    /* the scripts are named from the source tree; SIGPIPE stays at its default: a write to an optimizer that closed
     * its stdin must not raise it here */
    if (chdir(FUSECHECK_SOURCE_DIR) != 0) {
        perror("test_external: " FUSECHECK_SOURCE_DIR);
        return 1;
    }
    test_malformed_lines();
    test_round_trip();
    test_hostile();
    test_served_equals_in_process();
    test_identity_example();
    return check_done("test_external");
}
