/* cli/main.c — the fusecheck command: dispatch to a subcommand (cli/helpdocs.c holds the table), `--version`. */
#include "cli.h"

#include <string.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "rules/rules.h"

/* Run the command argv names (or --version, --help); its exit code. */
static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        cli_overview(stderr);
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
        return cli_cmd_help(1, argv);
    /* The harness's self-test: FUSECHECK_PLANT=<bug> plants one of the optimizer bugs the checks must catch, or the
     * evaluator fault crosscheck must catch. */
    const char *plant = getenv("FUSECHECK_PLANT");
    if (plant && plant[0] && ir_eval_plant(plant) != 0 && rules_plant(plant)) {
        fprintf(stderr, "fusecheck: FUSECHECK_PLANT: no planted bug '%s' (", plant);
        cli_print_plants(stderr);
        fprintf(stderr, ")\n");
        return CLI_USAGE;
    }
    const struct cli_command *c = cli_find_command(argv[1]);
    if (!c) {
        fprintf(stderr, "fusecheck: unknown command '%s' (fusecheck help lists them)\n", argv[1]);
        return CLI_USAGE;
    }
    /* `fusecheck COMMAND --help` (or -h) anywhere among its arguments: that command's help */
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            char *help[2] = {"help", argv[1]};
            return cli_cmd_help(2, help);
        }
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    /* every command's output checked in one place: a write or the final flush or close that failed is exit 2 */
    cli_stdout_keep();
    return cli_stdout_close(dispatch(argc, argv));
}
