/* cli/main.c — the fusecheck command: a table of subcommands, `--version` and `help`. */
#include "cli.h"

#include <string.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "rules/rules.h"

static int cmd_help(int argc, char **argv);

/* Every subcommand, in the order `help` lists them. */
static const struct cli_command commands[] = {
    {"print", "print a graph in canonical text form", "fusecheck print FILE|MODEL [--mode M] [--layers N] [--ctx N] [--weights F] [-o OUT]",
     cli_cmd_print},
    {"validate", "check a graph file's invariants", "fusecheck validate FILE", cli_cmd_validate},
    {"models", "list the model zoo", "fusecheck models", cli_cmd_models},
    {"lift", "lift one step of a zoo model (or a Hugging Face config.json, or a GGUF file) into a graph",
     "fusecheck lift MODEL|CONFIG.json|FILE.gguf [--mode decode|prefill:N|batch:N] [--layers N] [--ctx N] [--weights FORMAT] [-o FILE]", cli_cmd_lift},
    {"export", "write a model (a zoo MODEL, a config.json or a GGUF file) as a GGUF v3 file with seeded weights",
     "fusecheck export MODEL|CONFIG.json|FILE.gguf [--mode M] [--layers N] [--ctx N] [--weights F] [--seed N] -o OUT.gguf",
     cli_cmd_export},
    {"gguf", "list a GGUF file's keys and tensor infos as fusecheck reads them (floats as their bits)",
     "fusecheck gguf FILE.gguf", cli_cmd_gguf},
    {"crosscheck", "run GGUF files and token sequences through the evaluator and llama.cpp; compare every "
     "position's logits",
     "fusecheck crosscheck [MODEL|CONFIG.json|FILE.gguf...] [--weights F]... [--mode decode|prefill]... "
     "[--tokens T1,T2,... | --count N] [--activations q8_0|f32] [--layers N] [--ctx N] [--seed N] [--bound NMSE] "
     "[--keep OUT.gguf] [--db FILE]   (no MODEL: every tiny zoo model)",
     cli_cmd_crosscheck},
    {"eval", "evaluate a graph; print each observed and carried tensor's digest",
     "fusecheck eval FILE|MODEL [--mode M] [--layers N] [--ctx N] [--weights F] [--seed N] [--tokens T1,T2,... "
     "[--logits OUT.f32|OUT.npy] [--top K] [--activations f32|q8_0]]", cli_cmd_eval},
    {"rules", "list every step of the optimizer in order, with the classes it builds",
     "fusecheck rules [--guards] [--shim NAME]", cli_cmd_rules},
    {"shims", "list the shims", "fusecheck shims", cli_cmd_shims},
    {"optimize", "rewrite a graph under a shim; print it and, with --report, every decision",
     "fusecheck optimize FILE|MODEL [--mode M] [--layers N] [--ctx N] [--weights F] --shim NAME [--hold R1,R2] [--report] "
     "[-o OUT] [--seed-rules]",
     cli_cmd_optimize},
    {"diff", "evaluate the lifted and the rewritten graph and compare them bit for bit",
     "fusecheck diff FILE|MODEL [--mode M] [--layers N] [--ctx N] [--weights F] --shim NAME [--hold R1,R2] [--seed N] "
     "[--seed-rules]",
     cli_cmd_diff},
    {"dot", "an optimization as a Graphviz picture: fused ops as clusters by rule, refusals as dashed notes",
     "fusecheck dot FILE|MODEL [--mode M] [--layers N] [--ctx N] [--weights F] --shim NAME [--hold R1,R2] [--svg] "
     "[-o OUT]",
     cli_cmd_dot},
    {"coverage", "each rule, and the zoo graphs it fired on", "fusecheck coverage --shim NAME", cli_cmd_coverage},
    {"check", "the main job: every zoo graph under every shim, optimized, diffed and logged to results.db",
     "fusecheck check [MODEL...] [--mode M]... [--shim NAME]... [--db FILE] [--eval-real] [--layers N] [--ctx N] "
     "[--weights F] [--seed N] [--no-progress] [--tolerance [--device host|cuda[:N]]] [--hold R1,R2]... [--seed-rules] "
     "[--fixtures DIR]",
     cli_cmd_check},
    {"db", "results.db: list runs, the decision changes between two runs, merge shards",
     "fusecheck db runs [--db FILE] | db diff RUN_A RUN_B [--db FILE] | db merge IN... -o OUT [--append | --force]",
     cli_cmd_db},
    {"fuzz", "fuzz campaigns' side: seed corpora, the guard atoms, logging a campaign to results.db",
     "fusecheck fuzz seeds DIR [--rules DIR] | fuzz atoms [--shim NAME] | fuzz begin [--command TEXT] | "
     "fuzz stat RUN HARNESS EXECS SECONDS CORPUS COVERAGE | fuzz finding RUN HARNESS SIGNATURE SHA256 | "
     "fuzz mutant RUN RULE:ATOM killed|survived SECONDS BUDGET [SIGNATURE [SHA256]] | "
     "fuzz code-mutant --run N --id FILE:LINE:COL:OPERATOR --outcome killed|survived|stillborn|timeout "
     "[--killed-by CHECK] [--seconds S] [--original TEXT] [--mutated TEXT] | fuzz end RUN complete|failed "
     "(each logging command takes --db FILE)",
     cli_cmd_fuzz},
    {"prove", "prove every rule's dataflow legality with Z3; --mutants: each guard atom's necessity",
     "fusecheck prove [RULE...] [--mutants] [--db FILE] [--timeout-ms N] [--seed N] [--bound K] [--smt2 DIR] "
     "[--no-unbounded] [--assume-fresh-results] [--replay DIR] [--fixtures DIR] [--explain] [--cross-check cvc5] "
     "[--seed-rules]",
     cli_cmd_prove},
    {"validate-run", "re-check every firing of one optimization against its guards, premises and motion",
     "fusecheck validate-run FILE|MODEL --shim NAME [--mode M] [--layers N] [--ctx N] [--weights F] [--timeout-ms N] "
     "[--verbose] [--seed-rules]",
     cli_cmd_validate_run},
    {"tolerance", "the CUDA lane's kernels (host lane or a CUDA device) against the evaluator, launch by launch and end to end",
     "fusecheck tolerance FILE|MODEL --shim cuda-lane:CHIP:ACTS[:knobs] [--mode M] [--layers N] [--ctx N] [--weights F] "
     "[--steps N] [--device host|cuda[:N]] [--seed N] [--db FILE] [--all]",
     cli_cmd_tolerance},
    {"launches", "every distinct launch the CUDA lane makes on the zoo: kernel, stages, their numerics' variants",
     "fusecheck launches [--shim NAME]... [--mode M]... [--layers N|all]", cli_cmd_launches},
    {"golden", "the optimizer's decisions on every zoo graph, pinned in tests/golden/: compare, or --update rewrite",
     "fusecheck golden [--update] [--dir DIR] [MODEL...]", cli_cmd_golden},
    {"report", "one self-contained HTML page of runs in results.db against the runs before them",
     "fusecheck report [--db FILE] [--run N]... -o FILE|-", cli_cmd_report},
    {"help", "show help for a command", "fusecheck help [COMMAND]", cmd_help},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* The command named name, or NULL. */
static const struct cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* The overview: what fusecheck is and its commands. */
static void overview(FILE *out)
{
    fprintf(out, "fusecheck %s — checks a fusion optimizer for LLM inference\n\nusage: fusecheck COMMAND [ARGS]\n\n",
            FUSECHECK_VERSION);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-13s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 ok, 1 a check failed, 2 bad usage or bad input\n"
                 "a MODEL lifts with --mode M (default decode), --layers N (default all), --weights F (default q8_0)\n"
                 "and --ctx N (the rows of every cache and rotary table; default the model's, `fusecheck models`)\n"
                 "a MODEL is a zoo name or a Hugging Face config.json (a path ending in .json, or any existing file\n"
                 "where a command takes only a MODEL): architectures[0] picks the family; or a GGUF file (a path\n"
                 "ending in .gguf, or a file starting GGUF): its metadata picks the family, its tensors' formats and\n"
                 "weights are the graph's (fusecheck export writes one)\n"
                 "--seed-rules (optimize, diff, check, validate-run, prove) runs the seed's rules: fusecheck's added\n"
                 "guard atoms dropped, its fixed matchers as the seed's (docs/findings.md)\n"
                 "fusecheck help COMMAND shows a command's usage.\n");
}

/* `help [COMMAND]`. */
static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        overview(stdout);
        return CLI_OK;
    }
    const struct cli_command *c = find_command(argv[1]);
    if (!c)
        return cli_usage_error("help", "unknown command '%s'", argv[1]);
    printf("%s\n\n  %s\n", c->summary, c->usage);
    if (strstr(c->usage, "--ctx"))
        printf("\n  --ctx N: the context a MODEL is lifted with (its caches' and rotary tables' rows); default the "
               "model's (fusecheck models)\n  a MODEL may be a Hugging Face config.json (a path ending in .json)\n");
    return CLI_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        overview(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("fusecheck %s\n", FUSECHECK_VERSION);
        if (kernels_device_built())
            printf("cuda: built for %s\n", kernels_device_archs());
        else
            printf("cuda: not built\n");
        return CLI_OK;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return cmd_help(1, argv);
    /* The harness's self-test: FUSECHECK_PLANT=<bug> plants one of the optimizer bugs the checks must catch, or the
     * evaluator fault crosscheck must catch. */
    const char *plant = getenv("FUSECHECK_PLANT");
    if (plant && plant[0] && ir_eval_plant(plant) != 0 && rules_plant(plant)) {
        fprintf(stderr, "fusecheck: FUSECHECK_PLANT: no planted bug '%s' (", plant);
        for (int p = 1; p < RULES_PLANT_COUNT; p++)
            fprintf(stderr, "%s%s", p > 1 ? ", " : "", rules_plant_name((enum rules_plant)p));
        fprintf(stderr, "; in the evaluator: %s)\n", IR_EVAL_PLANTS);
        return CLI_USAGE;
    }
    const struct cli_command *c = find_command(argv[1]);
    if (!c) {
        fprintf(stderr, "fusecheck: unknown command '%s' (fusecheck help lists them)\n", argv[1]);
        return CLI_USAGE;
    }
    /* `fusecheck COMMAND --help` (or -h) anywhere among its arguments: that command's help */
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            char *help[2] = {"help", argv[1]};
            return cmd_help(2, help);
        }
    return c->run(argc - 1, argv + 1);
}
