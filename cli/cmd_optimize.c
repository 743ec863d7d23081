/* cli/cmd_optimize.c — the optimizer's commands: rules, shims, optimize, diff, coverage. */
#include "cli.h"
#include "rules/rules.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Print one step's name and the classes it builds. */
static void print_step(const char *name, void *ctx)
{
    const struct shim *shim = ctx;
    const struct rules_rule *rule = rules_find(name);
    printf("%-28s", name);
    if (rule) {
        for (int i = 0; i < rule->nbuilds; i++)
            printf(" %s", ir_class_name(rule->builds[i]));
    } else {
        for (int i = 0; i < shim->nrules; i++)
            if (strcmp(shim->rules[i].name, name) == 0)
                for (int k = 0; k < shim->rules[i].nbuilds; k++)
                    printf(" %s (chip rule)", ir_class_name(shim->rules[i].builds[k]));
        if (strcmp(name, "fused_quant") == 0)
            printf(" quantize folds (the numerics fold)");
    }
    printf("\n");
}

/* Print a rule's guard atoms and motion. */
static void print_guards(const struct rules_rule *rule)
{
    printf("%s: motion %s — %s\n", rule->name, rules_motion_name(rule->motion), rules_motion_meaning(rule->motion));
    printf("  %s\n", rule->what);
    for (int i = 0; i < rule->nguards; i++) {
        const struct rules_atom *a = &rule->guards[i];
        printf("  %-22s %s(", a->name, rules_atom_name(a->kind));
        const char *sep = "";
        const struct {
            const char *label;
            enum rules_role role;
        } args[] = {{"t", a->t}, {"a", a->a}, {"b", a->b}, {"g", a->g}};
        for (size_t k = 0; k < sizeof args / sizeof args[0]; k++)
            if (args[k].role != RULES_ROLE_NONE) {
                printf("%s%s=%s", sep, args[k].label, rules_role_name(args[k].role));
                sep = ", ";
            }
        printf(")");
        if (a->forall != RULES_ROLE_NONE)
            printf(" for each in %s", rules_role_name(a->forall));
        printf("  — %s [%s%s%s]\n", rules_atom_meaning(a->kind), rules_origin_name(a->origin), a->finding ? " " : "",
               a->finding ? a->finding : "");
    }
}

int cli_cmd_rules(int argc, char **argv)
{
    static const struct option opts[] = {{"guards", no_argument, NULL, 'g'}, {"shim", required_argument, NULL, 's'},
                                         {0, 0, 0, 0}};
    bool guards = false;
    const char *shim_name = "reference";
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'g')
            guards = true;
        else if (c == 's')
            shim_name = optarg;
        else
            return cli_option_error("rules", opts, "", argv);
    }
    if (optind != argc)
        return cli_usage_error("rules", "takes no arguments");
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim) {
        fprintf(stderr, "fusecheck: rules: %s\n", err);
        return CLI_USAGE;
    }
    if (!guards) {
        rules_steps(shim, print_step, shim);
        printf("%-28s %s (closes the table, before fused_quant)\n", rules_advance()->name,
               ir_class_name(rules_advance()->builds[0]));
        /* what the chip's hold knob holds that is no step: a kernel fact */
        for (int i = 0; i < shim->nholdable; i++) {
            const struct rules_rule *rule = rules_find(shim->holdable[i]);
            bool chip_rule = false;
            for (int k = 0; k < shim->nrules; k++)
                chip_rule = chip_rule || strcmp(shim->rules[k].name, shim->holdable[i]) == 0;
            if (!rule && !chip_rule)
                printf("%-28s (a kernel fact the chip can hold: --hold %s, or its hold knob)\n", shim->holdable[i],
                       shim->holdable[i]);
        }
    } else {
        int n;
        const struct rules_rule *const *t = rules_table(&n);
        for (int i = 0; i < n; i++)
            print_guards(t[i]);
        print_guards(rules_advance());
        print_guards(&rules_rule_fused_quant);
        t = rules_late(&n);
        for (int i = 0; i < n; i++)
            print_guards(t[i]);
        for (int i = 0; i < shim->nrules; i++)
            if (shim->rules[i].rule)
                print_guards(shim->rules[i].rule);
    }
    shim_free(shim);
    return CLI_OK;
}

/* Print one shim row. */
static void print_shim(const char *name, const char *what, void *ctx)
{
    (void)ctx;
    printf("%-40s %s\n", name, what);
}

int cli_cmd_shims(int argc, char **argv)
{
    (void)argv;
    if (argc != 1)
        return cli_usage_error("shims", "takes no arguments");
    shim_list(print_shim, NULL);
    return CLI_OK;
}

/* What optimize and diff read from their command lines. */
struct opt_args {
    struct cli_lift lift;
    const char *shim, *hold, *out, *arg;
    bool report, svg;
    uint64_t seed;
};

/* Parse optimize's and diff's options. 0 on success. */
static int parse_opt_args(const char *cmd, int argc, char **argv, struct opt_args *a)
{
    static const struct option opts[] = {
        CLI_LIFT_OPTIONS, {"shim", required_argument, NULL, 's'},
        {"hold", required_argument, NULL, 'h'}, {"report", no_argument, NULL, 'r'},
        {"output", required_argument, NULL, 'o'}, {"seed", required_argument, NULL, 'S'},
        {"svg", no_argument, NULL, 'v'},          CLI_SEED_RULES_OPTION, CLI_EMPTY_OPTION, {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->lift = cli_lift_defaults();
    a->seed = 1;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "o:", opts, NULL)) != -1;) {
        int lifted = cli_lift_code(&a->lift, c, optarg);
        if (lifted > 0)
            return CLI_USAGE;
        switch (lifted == 0 ? 0 : c) {
        case 0: break;
        case 's': a->shim = optarg; break;
        case 'h': a->hold = optarg; break;
        case 'r': a->report = true; break;
        case 'v':
            if (strcmp(cmd, "dot") != 0)
                return cli_usage_error(cmd, "--svg applies to dot");
            a->svg = true;
            break;
        case 'o': a->out = optarg; break;
        case 'R': rules_seed_mode(true); break;
        case 'S': {
            if (cli_parse_seed(optarg, &a->seed))
                return cli_usage_error(cmd, "--seed expects an integer in 0..18446744073709551615, got '%s'", optarg);
            break;
        }
        default: return cli_option_error(cmd, opts, "o:", argv);
        }
    }
    if (!a->shim)
        return cli_usage_error(cmd, "--shim NAME is required");
    if (optind != argc - 1)
        return cli_usage_error(cmd, "expected one FILE or MODEL");
    a->arg = argv[optind];
    return 0;
}

/* The index of step `name` in names, or -1. */
static int step_index(char **names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* Collect step names. */
struct step_names {
    char *names[128];
    int n;
};
static void collect_step(const char *name, void *ctx)
{
    struct step_names *s = ctx;
    if (s->n < 128)
        s->names[s->n++] = strdup(name);
}

/* Optimize g under the named shim with the comma-separated holds: each a step the compile runs or what the shim's
 * hold knob holds. 0 on success, else a message on stderr. */
static int run_optimizer(const struct ir_graph *g, const char *shim_name, const char *hold, struct rules_optimized *o)
{
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim) {
        fprintf(stderr, "fusecheck: %s\n", err);
        return CLI_USAGE;
    }
    struct cli_holds h = {{0}, 0};
    int rc = hold && cli_holds_add(&h, hold) ? CLI_USAGE : CLI_OK;
    for (int i = 0; rc == CLI_OK && i < h.n; i++)
        if (!cli_holdable(shim, h.names[i])) {
            fprintf(stderr, "fusecheck: --hold: '%s' is no step under %s, nor anything it holds (fusecheck rules "
                    "--shim %s lists them)\n", h.names[i], shim->name, shim->name);
            rc = CLI_USAGE;
        }
    if (rc == CLI_OK) {
        cli_holds_apply(&h, shim);
        if (rules_optimize(g, shim, (const char *const *)h.names, h.n, o, err)) {
            fprintf(stderr, "fusecheck: %s\n", err);
            rc = CLI_FAILED;
        }
    }
    cli_holds_free(&h);
    shim_free(shim);
    return rc;
}

/* Print a report line. */
static void print_line(const char *text, void *ctx)
{
    (void)ctx;
    printf("%s\n", text);
}

/* What optimize, diff and dot share: their options parsed, the graph loaded (*g, the caller frees it) and optimized
 * (*o, freed by the caller when this returns CLI_OK). CLI_OK, or the exit code with a message printed. */
static int load_optimized(const char *cmd, int argc, char **argv, struct opt_args *a, struct ir_graph **g,
                          struct rules_optimized *o)
{
    *g = NULL;
    int rc = parse_opt_args(cmd, argc, argv, a);
    if (rc)
        return rc;
    *g = cli_load(a->arg, &a->lift);
    return *g ? run_optimizer(*g, a->shim, a->hold, o) : CLI_USAGE;
}

/* Whether optimize's command line asks to serve the protocol (--serve anywhere in it). */
static bool wants_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--serve") == 0)
            return true;
    return false;
}

/* `fusecheck optimize --serve [--seed-rules]`: fusecheck's optimizer as a process speaking the optimizer protocol
 * (docs/optimizer-protocol.md) on stdin and stdout until stdin ends. CLI_OK at a clean end; CLI_USAGE when the client
 * broke the protocol (said on stderr). */
static int serve(int argc, char **argv)
{
    static const struct option opts[] = {{"serve", no_argument, NULL, 'P'}, CLI_SEED_RULES_OPTION, {0, 0, 0, 0}};
    bool seed = false;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'R')
            seed = true;
        else if (c != 'P')
            return cli_usage_error("optimize", "--serve takes only --seed-rules (each request names its graph, shim "
                                   "and holds)");
    }
    if (optind != argc)
        return cli_usage_error("optimize", "--serve takes no FILE or MODEL: each request carries its graph");
    char err[IR_ERR_LEN];
    if (rules_external_serve(STDIN_FILENO, STDOUT_FILENO, "fusecheck", FUSECHECK_VERSION, seed, err)) {
        fprintf(stderr, "fusecheck: optimize --serve: %s\n", err);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_cmd_optimize(int argc, char **argv)
{
    if (wants_serve(argc, argv))
        return serve(argc, argv);
    struct opt_args a;
    struct ir_graph *g;
    struct rules_optimized o;
    int rc = load_optimized("optimize", argc, argv, &a, &g, &o);
    if (rc == CLI_OK) {
        size_t len;
        char *text = ir_print(o.graph, &len);
        if (!text || cli_write(a.out, text, len))
            rc = CLI_USAGE;
        free(text);
        if (rc == CLI_OK && a.report) {
            char hex[65];
            rules_report_lines(&o.report, print_line, NULL);
            rules_report_digest(&o.report, hex);
            printf("digest %s\n", hex);
        }
        rules_optimized_free(&o);
    }
    ir_graph_free(g);
    return rc;
}

/* The SVG Graphviz's dot renders from the text (through a temporary file), malloc'd into *svg; 0, or 1 with a message
 * on stderr. */
static int render_svg(const char *text, size_t len, char **svg, size_t *svg_len)
{
    *svg = NULL;
    *svg_len = 0;
    if (system("dot -V >/dev/null 2>&1") != 0) {
        fprintf(stderr, "fusecheck: dot: --svg: Graphviz's dot is not on PATH (apt-get install graphviz)\n");
        return 1;
    }
    const char *dir = getenv("TMPDIR");
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/fusecheck-dot-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    FILE *in = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = in && fwrite(text, 1, len, in) == len;
    if (in)
        ok = fclose(in) == 0 && ok;
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s'", path);
    FILE *p = ok && !strchr(path, '\'') ? popen(cmd, "r") : NULL; /* the command quotes the path */
    FILE *out = p ? open_memstream(svg, svg_len) : NULL;
    char buf[65536];
    for (size_t n; out && (n = fread(buf, 1, sizeof buf, p)) > 0;)
        fwrite(buf, 1, n, out);
    int status = p ? pclose(p) : -1;
    if (out)
        fclose(out);
    if (fd >= 0)
        unlink(path);
    if (status != 0 || !*svg || !*svg_len) {
        fprintf(stderr, "fusecheck: dot: --svg: Graphviz's dot did not render the picture\n");
        free(*svg);
        *svg = NULL;
        return 1;
    }
    return 0;
}

int cli_cmd_dot(int argc, char **argv)
{
    struct opt_args a;
    struct ir_graph *g;
    struct rules_optimized o;
    int rc = load_optimized("dot", argc, argv, &a, &g, &o);
    if (rc == CLI_OK) {
        char *text = NULL, *svg = NULL;
        size_t len = 0, svg_len = 0;
        if (cli_dot_text(g, a.shim, &o, &text, &len) || (a.svg && render_svg(text, len, &svg, &svg_len)) ||
            cli_write(a.out, svg ? svg : text, svg ? svg_len : len))
            rc = CLI_USAGE;
        free(text);
        free(svg);
        rules_optimized_free(&o);
    }
    ir_graph_free(g);
    return rc;
}

/* Per rule: the graphs it fired on (a growing list of names). */
struct fired_on {
    char **graphs;
    int n, cap;
};

/* Add a name (a graph, or a refusal's reason) to a step's list, once. */
static void fired_add(struct fired_on *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->graphs[i], name) == 0)
            return;
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->graphs = realloc(f->graphs, sizeof *f->graphs * (size_t)f->cap);
        if (!f->graphs)
            abort();
    }
    f->graphs[f->n++] = strdup(name);
}

int cli_cmd_coverage(int argc, char **argv)
{
    static const struct option opts[] = {{"shim", required_argument, NULL, 's'}, {0, 0, 0, 0}};
    const char *shim_name = NULL;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c != 's')
            return cli_option_error("coverage", opts, "", argv);
        shim_name = optarg;
    }
    if (!shim_name || optind != argc)
        return cli_usage_error("coverage", "expected --shim NAME and nothing else");
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim) {
        fprintf(stderr, "fusecheck: coverage: %s\n", err);
        return CLI_USAGE;
    }
    struct step_names steps = {.n = 0};
    rules_steps(shim, collect_step, &steps);
    collect_step(rules_advance()->name, &steps);
    struct fired_on *fired = calloc((size_t)steps.n, sizeof *fired);
    struct fired_on *refused = calloc((size_t)steps.n, sizeof *refused);
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    int graphs = 0;
    for (int m = 0; m < models_count(); m++) {
        for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
            struct cli_lift l = cli_lift_defaults();
            cli_lift_option(&l, "mode", modes[k]);
            const struct models_config *c = models_get(m);
            struct ir_graph *g = cli_lift_config(c, &l.options, err);
            if (!g)
                continue;
            char name[96];
            snprintf(name, sizeof name, "%s/%s", c->name, modes[k]);
            struct rules_optimized o;
            if (rules_optimize(g, shim, NULL, 0, &o, err) == 0) {
                graphs++;
                for (int32_t i = 0; i < o.report.n; i++) {
                    int s = step_index(steps.names, steps.n, o.report.d[i].rule);
                    if (s >= 0 && o.report.d[i].outcome == RULES_FIRED)
                        fired_add(&fired[s], name);
                    else if (s >= 0 && o.report.d[i].outcome == RULES_REFUSED)
                        fired_add(&refused[s], o.report.d[i].why);
                }
                rules_optimized_free(&o);
            }
            ir_graph_free(g);
        }
    }
    printf("coverage under %s over %d zoo graphs\n", shim->name, graphs);
    for (int s = 0; s < steps.n; s++) {
        printf("%-28s fired on %d graph%s", steps.names[s], fired[s].n, fired[s].n == 1 ? "" : "s");
        for (int i = 0; i < fired[s].n; i++)
            printf("%s%s", i ? ", " : ": ", fired[s].graphs[i]);
        printf("\n");
        for (int i = 0; i < refused[s].n; i++)
            printf("%-28s   refused: %s\n", "", refused[s].graphs[i]);
    }
    for (int s = 0; s < steps.n; s++) {
        for (int i = 0; i < fired[s].n; i++)
            free(fired[s].graphs[i]);
        for (int i = 0; i < refused[s].n; i++)
            free(refused[s].graphs[i]);
        free(fired[s].graphs);
        free(refused[s].graphs);
        free(steps.names[s]);
    }
    free(fired);
    free(refused);
    shim_free(shim);
    return CLI_OK;
}
