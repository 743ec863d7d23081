/* cli/cmd_report.c — `fusecheck report`: one self-contained HTML page of runs in results.db, each against the newest
 * earlier run of its kind and configuration (cli/report_runs.c). The page (cli/report_page.c) opens on the verdict,
 * a line a stage (cli/report_verdict.c), then each headline figure's trend (cli/report_trends.c), the runs'
 * identities, the rule × graph heat map, the changes summarised by rule and by graph before their raw rows, the
 * comparisons that failed, the proofs, the fuzz figures, the tolerance per launch class and the crosscheck (one file
 * a section, cli/report_<section>.c). Inline CSS and SVG only: no script, nothing fetched, so it renders offline.
 * Every section that has nothing says why. The bytes depend on the file's content alone (every time shown is one the
 * file holds). The file is only read. This file holds the command: its options, the output, the results file. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report.h"

/* Refuse an output that is there and is not a regular file (a link, a directory, a device): only a regular file is
 * replaced. 0, or 1 said on stderr. */
static int check_output(const char *out)
{
    struct stat st;
    if (strcmp(out, "-") == 0 || lstat(out, &st) != 0 || S_ISREG(st.st_mode))
        return 0;
    fprintf(stderr, "fusecheck: report: %s is %s, not a regular file: not replaced\n", out,
            S_ISLNK(st.st_mode)   ? "a symbolic link"
            : S_ISDIR(st.st_mode) ? "a directory"
                                  : "a device or a FIFO");
    return 1;
}

/* Open the results file for reading and check it holds this fusecheck's schema. 0, or 1 said on stderr. */
static int open_results(const char *path, struct db **db)
{
    char err[DB_ERR_LEN];
    if (db_open_readonly(path, db, err)) {
        fprintf(stderr, "fusecheck: report: %s\n", err);
        return 1;
    }
    int v = db_schema_version(*db);
    if (v == DB_SCHEMA_VERSION)
        return 0;
    fprintf(stderr,
            "fusecheck: report: %s: schema version %d, not %d: fusecheck db merge %s -o NEW.db brings a copy "
            "forward\n",
            path, v, DB_SCHEMA_VERSION, path);
    db_close(*db);
    *db = NULL;
    return 1;
}

/* Parse the command line: --db FILE, --run N (repeatable), -o OUT. 0, or CLI_USAGE said on stderr. */
static int parse_args(int argc, char **argv, const char **path, const char **out, int64_t *runs, int *nruns)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'}, {"run", required_argument, NULL, 'r'}, {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "o:", opts, NULL)) != -1;) {
        char *end;
        if (c == 'd')
            *path = optarg;
        else if (c == 'o')
            *out = optarg;
        else if (c != 'r')
            return cli_option_error("report", opts, "o:", argv);
        else if (*nruns == CLI_REPORT_MAX_RUNS)
            return cli_usage_error("report", "at most %d runs a page", CLI_REPORT_MAX_RUNS);
        else if ((runs[*nruns] = strtoll(optarg, &end, 10)) < 1 || end == optarg || *end)
            return cli_usage_error("report", "--run expects a run id (a positive number), got '%s'", optarg);
        else
            (*nruns)++;
    }
    if (optind != argc)
        return cli_usage_error("report", "unexpected argument '%s'", argv[optind]);
    if (!*out)
        return cli_usage_error("report", "expected -o FILE (or -o - for standard output)");
    return 0;
}

/* `fusecheck report [--db FILE] [--run N]... -o FILE|-`. */
int cli_cmd_report(int argc, char **argv)
{
    const char *path = "results.db", *out = NULL;
    int64_t asked[CLI_REPORT_MAX_RUNS];
    int nasked = 0;
    if (parse_args(argc, argv, &path, &out, asked, &nasked))
        return CLI_USAGE;
    if (check_output(out))
        return CLI_USAGE;
    struct cli_report r;
    memset(&r, 0, sizeof r);
    if (open_results(path, &r.db))
        return CLI_USAGE;
    int rc = cli_report_pick_runs(&r, asked, nasked, path);
    if (!rc)
        cli_report_write_page(&r);
    if (r.failed)
        fprintf(stderr, "fusecheck: report: %s: %s\n", path, r.err);
    db_close(r.db);
    rc = rc || r.failed || cli_write(out, r.page.s, r.page.len);
    free(r.page.s);
    return rc ? CLI_USAGE : CLI_OK;
}
