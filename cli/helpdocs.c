/* cli/helpdocs.c — the help texts, written once: each command's summary, usage and options, the overview, and
 * `fusecheck help`. The manual page and the shell completions (cli/helpgen.c) are made from these same texts. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "rules/rules.h"

/* Every subcommand, in the order `help` lists them. */
static const struct cli_command commands[] = {
    {"print", "print a graph in canonical text form", "fusecheck print FILE|MODEL [--mode M] [--layers N|all] [--ctx N] [--weights F] [--allow-empty] [-o OUT]",
     cli_cmd_print},
    {"validate", "check a graph file's invariants", "fusecheck validate FILE [--allow-empty]", cli_cmd_validate},
    {"models", "list the model zoo", "fusecheck models", cli_cmd_models},
    {"lift", "lift one step of a zoo model (or a Hugging Face config.json, or a GGUF file) into a graph",
     "fusecheck lift MODEL|CONFIG.json|FILE.gguf [--mode decode|prefill:N|batch:N] [--layers N|all] [--ctx N] [--weights FORMAT] [-o FILE]", cli_cmd_lift},
    {"export", "write a model (a zoo MODEL, a config.json or a GGUF file) as a GGUF v3 file with seeded weights",
     "fusecheck export MODEL|CONFIG.json|FILE.gguf [--mode M] [--layers N|all] [--ctx N] [--weights F] [--seed N] -o OUT.gguf",
     cli_cmd_export},
    {"gguf", "list a GGUF file's keys and tensor infos as fusecheck reads them (floats as their bits)",
     "fusecheck gguf FILE.gguf", cli_cmd_gguf},
    {"crosscheck", "run GGUF files and token sequences through the evaluator and llama.cpp; compare every "
     "position's logits",
     "fusecheck crosscheck [MODEL|CONFIG.json|FILE.gguf...] [--weights F]... [--mode decode|prefill]... "
     "[--tokens T1,T2,... | --count N] [--activations q8_0|f32] [--layers N|all] [--ctx N] [--seed N] [--bound NMSE] "
     "[--keep OUT.gguf] [--db FILE] [--no-progress]   (no MODEL: every tiny zoo model)",
     cli_cmd_crosscheck},
    {"eval", "evaluate a graph; print each observed and carried tensor's digest",
     "fusecheck eval FILE|MODEL [--mode M] [--layers N|all] [--ctx N] [--weights F] [--allow-empty] [--seed N] [--tokens T1,T2,... "
     "[--logits OUT.f32|OUT.npy] [--top K] [--activations f32|q8_0] [--last]] [--threads N]", cli_cmd_eval},
    {"rules", "list every step of the optimizer in order, with the classes it builds",
     "fusecheck rules [--guards] [--shim NAME]", cli_cmd_rules},
    {"shims", "list the shims", "fusecheck shims", cli_cmd_shims},
    {"optimize", "rewrite a graph under a shim; print it and, with --report, every decision",
     "fusecheck optimize FILE|MODEL [--mode M] [--layers N|all] [--ctx N] [--weights F] --shim NAME [--hold R1,R2] [--report] "
     "[-o OUT] [--seed-rules] [--allow-empty]\n"
     "       fusecheck optimize --serve [--seed-rules]   (serve the optimizer protocol on stdin/stdout: "
     "docs/optimizer-protocol.md)",
     cli_cmd_optimize},
    {"diff", "evaluate the lifted and the rewritten graph and compare them bit for bit",
     "fusecheck diff FILE|MODEL [--mode M] [--layers N|all] [--ctx N] [--weights F] --shim NAME [--hold R1,R2] [--seed N] "
     "[--seed-rules] [--allow-empty] [--optimizer CMD [--optimizer-timeout-ms N] [--expect-same]] [--threads N]",
     cli_cmd_diff},
    {"dot", "an optimization as a Graphviz picture: fused ops as clusters by rule, refusals as dashed notes",
     "fusecheck dot FILE|MODEL [--mode M] [--layers N|all] [--ctx N] [--weights F] --shim NAME [--hold R1,R2] [--svg] "
     "[--allow-empty] [-o OUT]",
     cli_cmd_dot},
    {"coverage", "each rule, and the zoo graphs it fired on", "fusecheck coverage --shim NAME", cli_cmd_coverage},
    {"check", "the main job: every zoo graph under every shim, optimized, diffed and logged to results.db",
     "fusecheck check [MODEL...] [--mode M]... [--shim NAME]... [--db FILE] [--eval-real] [--layers N|all] [--ctx N] "
     "[--weights F] [--seed N] [--no-progress] [--tolerance [--device host|sim|cuda[:N]]] [--hold R1,R2]... [--seed-rules] "
     "[--fixtures DIR] [--json] [--optimizer CMD [--optimizer-timeout-ms N] [--expect-same]]",
     cli_cmd_check},
    {"db", "results.db: list runs, the decision changes between two runs, merge shards",
     "fusecheck db runs [--db FILE] [--json]\n"
     "fusecheck db diff RUN_A RUN_B [--db FILE] [--allow-partial] [--limit N] [--rule R] [--json]\n"
     "fusecheck db merge IN... -o OUT [--append | --force]",
     cli_cmd_db},
    {"fuzz", "fuzz campaigns' side: seed corpora, the guard atoms, logging a campaign to results.db",
     "fusecheck fuzz seeds DIR [--rules DIR]\n"
     "fusecheck fuzz atoms [--shim NAME]\n"
     "fusecheck fuzz begin [--command TEXT] [--optimizer CMD] [--db FILE]\n"
     "fusecheck fuzz stat RUN HARNESS EXECS SECONDS CORPUS COVERAGE [--db FILE]\n"
     "fusecheck fuzz finding RUN HARNESS SIGNATURE SHA256 [--db FILE]\n"
     "fusecheck fuzz mutant RUN RULE:ATOM killed|survived SECONDS BUDGET [SIGNATURE [SHA256]] [--db FILE]\n"
     "fusecheck fuzz code-mutant --run N --id FILE:LINE:COL:OPERATOR --outcome killed|survived|stillborn|timeout "
     "[--killed-by CHECK] [--seconds S] [--original TEXT] [--mutated TEXT] [--db FILE]\n"
     "fusecheck fuzz end RUN complete|failed|interrupted [--db FILE]",
     cli_cmd_fuzz},
    {"prove", "prove every rule's dataflow legality with Z3; --mutants: each guard atom's necessity",
     "fusecheck prove [RULE...] [--mutants] [--db FILE] [--timeout-ms N] [--seed N] [--bound K] [--smt2 DIR] "
     "[--no-unbounded] [--assume-fresh-results] [--replay DIR] [--fixtures DIR] [--explain] [--cross-check cvc5] "
     "[--no-progress] [--seed-rules] [--json]",
     cli_cmd_prove},
    {"validate-run", "re-check every firing of one optimization against its guards, premises and motion",
     "fusecheck validate-run FILE|MODEL --shim NAME [--mode M] [--layers N|all] [--ctx N] [--weights F] [--timeout-ms N] "
     "[--verbose] [--seed-rules] [--allow-empty] [--optimizer CMD [--optimizer-timeout-ms N]]",
     cli_cmd_validate_run},
    {"tolerance", "the CUDA lane's kernels (host lane or a CUDA device) against the evaluator, launch by launch and end to end",
     "fusecheck tolerance FILE|MODEL --shim cuda-lane:CHIP:ACTS[:knobs] [--mode M] [--layers N|all] [--ctx N] [--weights F] "
     "[--steps N] [--device host|sim|cuda[:N]] [--seed N] [--db FILE] [--all] [--allow-empty] "
     "[--optimizer CMD [--optimizer-timeout-ms N]]",
     cli_cmd_tolerance},
    {"launches", "every distinct launch the CUDA lane makes on the zoo: kernel, stages, their numerics' variants",
     "fusecheck launches [--shim NAME]... [--mode M]... [--layers N|all]", cli_cmd_launches},
    {"golden", "the optimizer's decisions on every zoo graph, pinned in tests/golden/: compare, or --update rewrite",
     "fusecheck golden [--update] [--dir DIR] [MODEL...]", cli_cmd_golden},
    {"report",
     "one self-contained HTML page of runs in results.db, each against the previous run of its command and "
     "configuration",
     "fusecheck report [--db FILE] [--run N]... -o FILE|-", cli_cmd_report},
    {"help", "show help for a command; --man: the manual page (roff); --completion bash|zsh: a completion script",
     "fusecheck help [COMMAND]\nfusecheck help --man | --completion bash|zsh", cli_cmd_help},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

size_t cli_command_count(void) { return NCOMMANDS; }

const struct cli_command *cli_command_at(size_t i) { return i < NCOMMANDS ? &commands[i] : NULL; }

const struct cli_command *cli_find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

void cli_print_plants(FILE *out)
{
    fprintf(out, "in the optimizer: ");
    for (int p = 1; p < RULES_PLANT_COUNT; p++)
        fprintf(out, "%s%s", p > 1 ? ", " : "", rules_plant_name((enum rules_plant)p));
    fprintf(out, "; in the evaluator: %s", IR_EVAL_PLANTS);
}

void cli_overview(FILE *out)
{
    fprintf(out, "fusecheck %s — checks a fusion optimizer for LLM inference\n\nusage: fusecheck COMMAND [ARGS]\n\n",
            FUSECHECK_VERSION);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-13s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 ok; 1 a check failed; 2 bad usage, bad input, a resource refusal (a graph too large to\n"
                 "evaluate) or standard output lost (a write, flush or close that failed); 130/143 interrupted by\n"
                 "SIGINT/SIGTERM\n"
                 "a MODEL lifts with --mode M (default decode), --layers N|all (N of 1..the model's layers; default\n"
                 "all), --weights F (default q8_0) and --ctx N (the rows of every cache and rotary table; default the\n"
                 "model's, `fusecheck models`)\n"
                 "a MODEL is a zoo name or a Hugging Face config.json (a path ending in .json, or any existing file\n"
                 "where a command takes only a MODEL): architectures[0] picks the family; or a GGUF file (a path\n"
                 "ending in .gguf, or a file starting GGUF): its metadata picks the family, its tensors' formats and\n"
                 "weights are the graph's (fusecheck export writes one)\n"
                 "a graph FILE with no tensor and no op is refused (exit 2) unless --allow-empty\n"
                 "--seed-rules (optimize, diff, check, validate-run, prove) runs the seed's rules: fusecheck's added\n"
                 "guard atoms dropped, its fixed matchers as the seed's (docs/findings.md)\n"
                 "FUSECHECK_PLANT=BUG (the harness's self-test) plants one bug the checks must catch: ");
    cli_print_plants(out);
    fprintf(out, "\nfusecheck help COMMAND shows a command's usage and options.\n");
}

/* What an option of several commands means, said in each one's help when its usage names it (first the option as
 * the usage writes it, then its meaning). */
static const struct {
    const char *option, *meaning;
} shared_options[] = {
    {"--mode M", "a MODEL's step: decode (default), prefill:N (a chunk of N rows) or batch:N (N sequences)"},
    {"--layers N|all", "a MODEL's first N layers: a count of 1..the model's layers (at most 1024), or all (default)"},
    {"--ctx N", "the context a MODEL is lifted with (its caches' and rotary tables' rows); default the model's "
                "(fusecheck models)"},
    {"--weights F", "a MODEL's matrices' block format: f32 f16 bf16 q8_0 (default) q4_0 q4_k q6_k"},
    {"--allow-empty", "read a graph FILE that declares no tensor and no op (refused by default, exit 2)"},
    {"--seed-rules", "run the seed's rules: fusecheck's added guard atoms dropped, its fixed matchers the seed's "
                     "(docs/findings.md)"},
    {"--optimizer CMD", "check another optimizer, a process speaking docs/optimizer-protocol.md (started once by "
                        "/bin/sh -c CMD), in place of fusecheck's own: its faults are findings (exit 1), its "
                        "decisions set beside fusecheck's own (diff, check: the differential)"},
    {"--optimizer-timeout-ms N", "the most the optimizer may take for one answer, its greeting included: "
                                 "1..86400000 ms (default the protocol client's)"},
    {"--expect-same", "a decision the optimizer makes otherwise than fusecheck's own fails the run (by default the "
                      "differential is reported and does not fail it)"},
};

/* A command's own options, each with its meaning (NULL ends a list). */
struct option_text {
    const char *option, *meaning;
};
static const struct option_text prove_options[] = {
    {"RULE...", "the rules to prove (default every rule; fusecheck rules lists them)"},
    {"--mutants", "also each guard atom's necessity: the obligations asked again with each atom dropped in turn"},
    {"--db FILE", "log the run to the results file FILE: one row per obligation, its verdict, time and "
                  "counterexample"},
    {"--timeout-ms N", "each query's time limit: 1..86400000 ms (default 10000)"},
    {"--seed N", "Z3's random seed: a 32-bit count (default 1)"},
    {"--bound K", "the most ops of a window the bounded queries consider: 2..64 (default 8)"},
    {"--smt2 DIR", "write every query into DIR as standard SMT-LIB 2.6, which any solver reads"},
    {"--no-unbounded", "only the bounded queries: no proof for windows of any length"},
    {"--assume-fresh-results", "assume A5: the tensor a rule's producer computes is fresh (docs/oracle.md)"},
    {"--replay DIR", "write each counterexample into DIR as a text-format graph, and run it concretely"},
    {"--fixtures DIR", "the rules' firing cases the replays start from (default tests/rules)"},
    {"--explain", "print each rule's guard atoms and the premises the oracle assumes of it"},
    {"--cross-check cvc5", "re-decide every query with cvc5 from its SMT-LIB text: a disagreement fails the run"},
    {"--no-progress", "no progress lines on stderr (in a log, where stderr is no terminal: one at least every 10 s "
                      "or every tenth of the rules, with the rate and ETA)"},
    {"--json", "the table and its totals as one JSON document on stdout (keys in a fixed order), no text"},
    {NULL, NULL},
};
static const struct option_text launches_options[] = {
    {"--shim NAME", "a lane shim to walk (repeatable; default 120 points: every chip, activations, cache, state and fold)"},
    {"--mode M", "a mode to lift each model in (repeatable; default decode, prefill:8, prefill:16 and batch:4)"},
    {"--layers N|all", "each model's first N layers (all it has when fewer): 1..1024, or all; default 8"},
    {NULL, NULL},
};
static const struct option_text db_options[] = {
    {"--db FILE", "the results file (default results.db), opened read-only by runs and diff"},
    {"--json", "runs, diff: one JSON document on stdout (keys in a fixed order) in place of the text"},
    {"--allow-partial", "diff: a comparison of partial runs (either not complete, or the later lacking graphs or "
                        "shims) passes (exit 0), still said"},
    {"--limit N", "diff: print at most N raw changes after the summary (default 100; 0: every one)"},
    {"--rule R", "diff: only rule R's changes (the totals, the summary, the rows and the exit code)"},
    {"--append", "merge: add the inputs' runs to OUT as it stands"},
    {"--force", "merge: replace OUT"},
    {NULL, NULL},
};
static const struct {
    const char *command;
    const struct option_text *options;
} command_options[] = {{"prove", prove_options}, {"launches", launches_options}, {"db", db_options}};

/* The widest a help line's usage runs before it continues on the next line. */
#define HELP_WIDTH 100

/* Print one usage line indented, continued (further indented) before a top-level `[` where it would pass
 * HELP_WIDTH. */
static void print_usage_line(const char *line, size_t len)
{
    size_t col = 2, depth = 0, start = 0;
    printf("  ");
    for (size_t i = 0; i <= len; i++) {
        bool end = i == len, gap = !end && line[i] == ' ' && depth == 0 && i + 1 < len && line[i + 1] == '[';
        if (!end && line[i] == '[')
            depth++;
        if (!end && line[i] == ']' && depth)
            depth--;
        if (!end && !gap)
            continue;
        size_t piece = i - start;
        if (col + piece > HELP_WIDTH && col > 8) { /* this piece starts a continuation line */
            printf("\n      ");
            col = 6;
            start += line[start] == ' ';
            piece = i - start;
        }
        printf("%.*s", (int)piece, line + start);
        col += piece;
        start = i;
    }
    printf("\n");
}

/* Print a command's usage: each of its forms (lines of the usage text) on lines of its own. */
static void print_usage(const char *usage)
{
    for (const char *p = usage; *p;) {
        size_t n = strcspn(p, "\n");
        print_usage_line(p, n);
        p += n + (p[n] == '\n');
    }
}

/* Print one option and its meaning, the meaning continued under itself where it would pass HELP_WIDTH. */
static void print_option(const char *option, const char *meaning)
{
    printf("  %-24s", option);
    size_t col = strlen(option) > 24 ? 2 + strlen(option) : 26;
    while (*meaning) {
        size_t word = strcspn(meaning, " ");
        if (col > 27 && col + 1 + word > HELP_WIDTH) {
            printf("\n%27s", "");
            col = 27;
        } else {
            printf(" ");
            col++;
        }
        printf("%.*s", (int)word, meaning);
        col += word;
        meaning += word + (meaning[word] == ' ');
    }
    printf("\n");
}

/* Whether usage names the option `shown` (its name: what comes before a space), as a whole word. */
static bool names_option(const char *usage, const char *shown)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(shown, " "), shown);
    size_t n = strlen(name);
    for (const char *p = strstr(usage, name); p; p = strstr(p + 1, name))
        if (p[n] != '-' && !(p[n] >= 'a' && p[n] <= 'z'))
            return true;
    return false;
}

int cli_command_options(const struct cli_command *c, struct cli_option_text *out, int cap)
{
    const struct option_text *own = NULL;
    for (size_t i = 0; i < sizeof command_options / sizeof command_options[0]; i++)
        if (strcmp(command_options[i].command, c->name) == 0)
            own = command_options[i].options;
    int n = 0;
    for (const struct option_text *o = own; o && o->option && n < cap; o++)
        out[n++] = (struct cli_option_text){o->option, o->meaning};
    for (size_t i = 0; i < sizeof shared_options / sizeof shared_options[0] && n < cap; i++) {
        bool said = false; /* a command's own meaning of a shared option stands in for the shared one */
        for (const struct option_text *o = own; o && o->option && !said; o++)
            said = names_option(o->option, shared_options[i].option);
        if (!said && names_option(c->usage, shared_options[i].option))
            out[n++] = (struct cli_option_text){shared_options[i].option, shared_options[i].meaning};
    }
    return n;
}

/* Print what the options of command c mean: its own, then each shared one its usage names. */
static void print_options(const struct cli_command *c)
{
    struct cli_option_text opts[64];
    int n = cli_command_options(c, opts, 64);
    if (n == 0)
        return;
    printf("\noptions:\n");
    for (int i = 0; i < n; i++)
        print_option(opts[i].option, opts[i].meaning);
    if (strstr(c->usage, "MODEL"))
        printf("  a MODEL may be a Hugging Face config.json (a path ending in .json) or a GGUF file\n");
}

int cli_cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        cli_overview(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--man") == 0 && argc == 2) {
        cli_help_man(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--completion") == 0) {
        if (argc == 3 && (strcmp(argv[2], "bash") == 0 || strcmp(argv[2], "zsh") == 0)) {
            cli_help_completion(stdout, argv[2]);
            return CLI_OK;
        }
        return cli_usage_error("help", "--completion expects bash or zsh");
    }
    const struct cli_command *c = cli_find_command(argv[1]);
    if (!c)
        return cli_usage_error("help", "unknown command '%s'", argv[1]);
    printf("%s\n\n", c->summary);
    print_usage(c->usage);
    print_options(c);
    return CLI_OK;
}
