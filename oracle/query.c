/* oracle/query.c — running one query: a Z3 context with the options' timeout and seed, a check whose verdict says
 * proved (unsatisfiable), refuted (a model) or unknown (with Z3's reason), and every query dumped as SMT-LIB 2 for
 * replay when asked. */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Write the solver's assertions as SMT-LIB 2 to dir/name.smt2 (name's odd bytes made '_'). */
static void dump(Z3_context z, Z3_solver s, const char *dir, const char *name)
{
    char file[512], clean[256];
    size_t n = 0;
    for (const char *p = name; *p && n + 1 < sizeof clean; p++)
        clean[n++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                                    *p == '-' || *p == '.'
                                ? *p
                                : '_');
    clean[n] = '\0';
    snprintf(file, sizeof file, "%s/%s.smt2", dir, clean);
    FILE *f = fopen(file, "w");
    if (!f)
        return;
    fprintf(f, "; fusecheck oracle query %s\n%s(check-sat)\n", name, Z3_solver_to_string(z, s));
    fclose(f);
}

/* Set the solver's timeout and seed. */
static void configure(Z3_context z, Z3_solver s, const struct oracle_options *opt)
{
    Z3_params p = Z3_mk_params(z);
    Z3_params_inc_ref(z, p);
    Z3_params_set_uint(z, p, Z3_mk_string_symbol(z, "timeout"), opt->timeout_ms ? opt->timeout_ms : 10000);
    Z3_params_set_uint(z, p, Z3_mk_string_symbol(z, "random_seed"), opt->seed);
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
    if (name && opt->smt2_dir)
        dump(z, s, opt->smt2_dir, name);
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
