/* oracle/query.c — running one query: a Z3 context with the options' timeout and seed, a check whose verdict says
 * proved (unsatisfiable), refuted (a model) or unknown (with Z3's reason), every query written as standard SMT-LIB
 * 2.6 for replay when asked, and re-decided by a second solver from that text when asked (prove --cross-check). */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const verdict_names[] = {"proved", "refuted", "unknown"};

const char *oracle_verdict_name(enum oracle_verdict v)
{
    return (unsigned)v < 3 ? verdict_names[v] : "?";
}

struct oracle_options oracle_defaults(void)
{
    struct oracle_options o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = 10000;
    o.seed = 1;
    o.bound = 8;
    o.unbounded = true;
    return o;
}

/* Z3's errors are recorded in the context and read back where it matters; nothing is fatal. */
static void ignore_error(Z3_context z, Z3_error_code e)
{
    (void)z;
    (void)e;
}

Z3_context oracle_z3_new(const struct oracle_options *opt)
{
    (void)opt;
    Z3_config cfg = Z3_mk_config();
    Z3_set_param_value(cfg, "model", "true");
    Z3_context z = Z3_mk_context(cfg);
    Z3_del_config(cfg);
    Z3_set_error_handler(z, ignore_error);
    return z;
}

void oracle_z3_free(Z3_context z)
{
    if (z)
        Z3_del_context(z);
}

void oracle_shutdown(void)
{
    Z3_finalize_memory();
}

/* Whether c may stand in an SMT-LIB simple symbol. */
static bool symbol_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("~!@$%^&*_-+=<>.?/", c);
}

/* Write Z3's text of a query as standard SMT-LIB 2.6: Z3's own symbols with a '!' (a let's `a!3`, a bound `w!19`)
 * spelled with "__" instead, which no solver reads as special and no symbol of the oracle's contains; the annotation
 * `!` itself, quoted symbols, strings and comments as they are. */
static void write_standard(FILE *f, const char *text)
{
    for (const char *p = text; *p;) {
        if (*p == '|' || *p == '"') { /* a quoted symbol or a string: to its closing character */
            const char *end = strchr(p + 1, *p);
            size_t n = end ? (size_t)(end - p) + 1 : strlen(p);
            fwrite(p, 1, n, f);
            p += n;
        } else if (*p == ';') { /* a comment: to the line's end */
            size_t n = strcspn(p, "\n");
            fwrite(p, 1, n, f);
            p += n;
        } else if (symbol_char(*p)) {
            size_t n = 0;
            while (p[n] && symbol_char(p[n]))
                n++;
            for (size_t i = 0; i < n; i++)
                fputs(p[i] == '!' && n > 1 ? "__" : (char[2]){p[i], 0}, f);
            p += n;
        } else {
            fputc(*p++, f);
        }
    }
}

/* Write a query as a standard SMT-LIB 2.6 script: its logic, its declarations and assertions (Z3's text of the
 * solver before its check: after it, the text carries the model), the check. */
static void write_query(FILE *f, const char *name, const char *text)
{
    fprintf(f, "; fusecheck oracle query %s\n(set-logic ALL)\n", name);
    write_standard(f, text);
    fprintf(f, "(check-sat)\n(exit)\n");
}

/* The file name of a query in dir (name's odd bytes made '_'). */
static void query_file(const char *dir, const char *name, char file[512])
{
    char clean[256];
    size_t n = 0;
    for (const char *p = name; *p && n + 1 < sizeof clean; p++)
        clean[n++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                                    *p == '-' || *p == '.'
                                ? *p
                                : '_');
    clean[n] = '\0';
    snprintf(file, 512, "%s/%s.smt2", dir, clean);
}

/* Write the query's text to dir/name.smt2 whole (a temporary file renamed over it); file gets its path, and false
 * when it could not be written. */
static bool dump(const char *text, const char *dir, const char *name, char file[512])
{
    query_file(dir, name, file);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", file);
    int fd = mkstemp(tmp);
    if (fd >= 0)
        (void)fchmod(fd, 0644); /* as a file the user writes: mkstemp's is private to its owner */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return false;
    }
    write_query(f, name, text);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok && rename(tmp, file) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

/* The allowed second solvers and how each is run on a file within a time limit (milliseconds). */
static const struct {
    const char *name, *args;
} cross_solvers[] = {{"cvc5", "--lang=smt2 --tlimit=%u"}};

/* The row of cross_solvers named solver, or -1. */
static int cross_row(const char *solver)
{
    for (size_t i = 0; solver && i < sizeof cross_solvers / sizeof cross_solvers[0]; i++)
        if (strcmp(cross_solvers[i].name, solver) == 0)
            return (int)i;
    return -1;
}

bool oracle_cross_available(const char *solver)
{
    int row = cross_row(solver);
    if (row < 0)
        return false;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", cross_solvers[row].name);
    return system(cmd) == 0;
}

/* The second solver's verdict on the query in file: unsat proves, sat refutes, unknown or nothing (its time ran out)
 * is unknown; *error is set when it answers with an error (it could not read the query). */
static enum oracle_verdict cross_decide(const char *solver, const char *file, unsigned timeout_ms, bool *error)
{
    int row = cross_row(solver);
    *error = row < 0;
    if (row < 0)
        return ORACLE_UNKNOWN;
    char args[64], cmd[1024];
    if (strchr(file, '\'')) /* the command quotes the path: a TMPDIR with a quote in it is not run */
        return ORACLE_UNKNOWN;
    snprintf(args, sizeof args, cross_solvers[row].args, timeout_ms);
    snprintf(cmd, sizeof cmd, "%s %s '%s' 2>/dev/null", cross_solvers[row].name, args, file); /* file: mkstemp's */
    FILE *p = popen(cmd, "r");
    if (!p)
        return ORACLE_UNKNOWN;
    char line[64] = "";
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    pclose(p);
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "unsat") == 0)
        return ORACLE_PROVED;
    if (strcmp(line, "sat") == 0)
        return ORACLE_REFUTED;
    *error = strncmp(line, "(error", 6) == 0; /* nothing (a timeout ends it silently) or unknown: undecided */
    return ORACLE_UNKNOWN;
}

/* The second solver's verdict on the query from its standard text: the file --smt2 wrote (written), else a
 * temporary one; error tells that the solver could not read it. */
static enum oracle_verdict cross_verdict(const char *text, const struct oracle_options *opt, const char *name,
                                         const char *written, bool *error)
{
    unsigned limit = opt->timeout_ms ? opt->timeout_ms : 10000;
    *error = true;
    if (written)
        return cross_decide(opt->cross->solver, written, limit, error);
    const char *dir = getenv("TMPDIR");
    char file[512];
    snprintf(file, sizeof file, "%s/fusecheck-query-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(file);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    enum oracle_verdict v = ORACLE_UNKNOWN;
    if (f) {
        write_query(f, name ? name : "query", text);
        fclose(f);
        v = cross_decide(opt->cross->solver, file, limit, error);
    } else if (fd >= 0) {
        close(fd);
    }
    if (fd >= 0)
        unlink(file);
    return v;
}

/* Milliseconds on the monotonic clock (for timings only). */
static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Re-decide the query with the second solver, its time added to the solver's own, and tally how its verdict meets
 * Z3's. */
static void cross_check(const char *text, const struct oracle_options *opt, const char *name, const char *written,
                        enum oracle_verdict z3)
{
    struct oracle_cross *x = opt->cross;
    bool error = true;
    double t0 = mono_ms();
    x->last = cross_verdict(text, opt, name, written, &error);
    x->ms += mono_ms() - t0;
    x->queries++;
    if (error) { /* the second solver could not read the query: its text is not what it should be */
        if (!x->disagreed)
            snprintf(x->first, sizeof x->first, "%s: %s could not read the query", name ? name : "a query",
                     x->solver);
        x->disagreed++;
    } else if (x->last == ORACLE_UNKNOWN || z3 == ORACLE_UNKNOWN) {
        x->undecided++;
    } else if (x->last == z3) {
        x->agreed++;
    } else {
        if (!x->disagreed)
            snprintf(x->first, sizeof x->first, "%s: z3 %s, %s %s", name ? name : "a query", oracle_verdict_name(z3),
                     x->solver, oracle_verdict_name(x->last));
        x->disagreed++;
    }
}

/* Set the solver's timeout and seed, and leave SIGINT to the caller: Z3's own handler would take it during a query
 * (cancelling that query, an `unknown` that is no verdict) and the command would never hear of it. */
static void configure(Z3_context z, Z3_solver s, const struct oracle_options *opt)
{
    Z3_params p = Z3_mk_params(z);
    Z3_params_inc_ref(z, p);
    Z3_params_set_uint(z, p, Z3_mk_string_symbol(z, "timeout"), opt->timeout_ms ? opt->timeout_ms : 10000);
    Z3_params_set_uint(z, p, Z3_mk_string_symbol(z, "random_seed"), opt->seed);
    Z3_params_set_bool(z, p, Z3_mk_string_symbol(z, "ctrl_c"), false);
    Z3_solver_set_params(z, s, p);
    Z3_params_dec_ref(z, p);
}

enum oracle_verdict oracle_check(Z3_context z, Z3_ast f, const struct oracle_options *opt, const char *name,
                                 Z3_model *model, char reason[ORACLE_REASON_LEN])
{
    reason[0] = '\0';
    if (model)
        *model = NULL;
    Z3_solver s = Z3_mk_solver(z);
    Z3_solver_inc_ref(z, s);
    configure(z, s, opt);
    Z3_solver_assert(z, s, f);
    char *text = (name && opt->smt2_dir) || opt->cross ? strdup(Z3_solver_to_string(z, s)) : NULL;
    char file[512];
    bool written = text && name && opt->smt2_dir && dump(text, opt->smt2_dir, name, file);
    Z3_lbool r = Z3_solver_check(z, s);
    enum oracle_verdict v;
    if (r == Z3_L_FALSE) {
        v = ORACLE_PROVED;
    } else if (r == Z3_L_TRUE) {
        v = ORACLE_REFUTED;
        if (model) {
            *model = Z3_solver_get_model(z, s);
            Z3_model_inc_ref(z, *model);
        }
    } else {
        v = ORACLE_UNKNOWN;
        const char *why = Z3_solver_get_reason_unknown(z, s);
        snprintf(reason, ORACLE_REASON_LEN, "%s", why && *why ? why : "unknown");
    }
    if (Z3_get_error_code(z) != Z3_OK && v != ORACLE_PROVED) {
        snprintf(reason, ORACLE_REASON_LEN, "z3 error: %s", Z3_get_error_msg(z, Z3_get_error_code(z)));
        v = ORACLE_UNKNOWN;
    }
    if (opt->cross && text)
        cross_check(text, opt, name, written ? file : NULL, v);
    free(text);
    Z3_solver_dec_ref(z, s);
    return v;
}

long long oracle_model_value(Z3_context z, Z3_model m, Z3_ast t)
{
    Z3_ast out = NULL;
    if (!Z3_model_eval(z, m, t, true, &out) || !out)
        return 0;
    if (Z3_get_sort_kind(z, Z3_get_sort(z, out)) == Z3_BOOL_SORT)
        return Z3_get_bool_value(z, out) == Z3_L_TRUE;
    int64_t v = 0;
    return Z3_get_numeral_int64(z, out, &v) ? (long long)v : 0;
}
