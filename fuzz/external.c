/* fuzz/external.c — the optimizer the harness checks when it is not fusecheck's own: a command run as its own
 * process and spoken to by the optimizer protocol (rules_external_*, docs/optimizer-protocol.md). One process
 * serves every input of a run; a fault (a crash, a hang past the per-graph timeout, a malformed answer, a broken
 * protocol) is a finding named "external:<fault>", and the process is started again for the next input. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The default time one answer may take: generous for a graph of at most FUZZ_MAX_CASE_OPS ops, short enough that
 * a hang is found long before libFuzzer's own -timeout. */
#define EXTERNAL_DEFAULT_TIMEOUT_MS 2000
/* The stderr bytes kept for a finding. */
#define EXTERNAL_KEEP_STDERR (16 << 10)

/* The harness's one external optimizer: its command (NULL: none, fusecheck's own is checked), limits, the process
 * (started with the command) and the stderr tail taken at the last fault. */
static struct {
    char *command;
    struct rules_external_limits lim;
    struct rules_external *x;
    char *fault_stderr;
} ext;

/* Stop the process and forget the command (atexit). */
static void external_release(void)
{
    rules_external_stop(ext.x);
    ext.x = NULL;
    free(ext.command);
    ext.command = NULL;
    free(ext.fault_stderr);
    ext.fault_stderr = NULL;
}

/* Keep a copy of s as the stderr tail of the last fault. */
static void keep_stderr(const char *s)
{
    free(ext.fault_stderr);
    ext.fault_stderr = strdup(s ? s : "");
}

int fuzz_external_use(const char *command, int32_t timeout_ms, char err[IR_ERR_LEN])
{
    external_release();
    if (!command || !command[0]) {
        snprintf(err, IR_ERR_LEN, "the optimizer's command is empty");
        return -1;
    }
    static bool registered;
    if (!registered)
        atexit(external_release);
    registered = true;
    ext.command = strdup(command);
    ext.lim.timeout_ms = timeout_ms > 0 ? timeout_ms : EXTERNAL_DEFAULT_TIMEOUT_MS;
    ext.lim.keep_stderr = EXTERNAL_KEEP_STDERR;
    enum rules_external_fault fault = RULES_EXTERNAL_NONE;
    char why[IR_ERR_LEN];
    ext.x = ext.command ? rules_external_start(ext.command, &ext.lim, &fault, why) : NULL;
    if (!ext.x) {
        snprintf(err, IR_ERR_LEN, "'%.200s' (%s): %.250s", command, rules_external_fault_name(fault), why);
        external_release();
        return -1;
    }
    return 0;
}

bool fuzz_external_on(void) { return ext.command != NULL; }

const char *fuzz_external_command(void) { return ext.command; }

const char *fuzz_external_name(void) { return ext.x ? rules_external_name(ext.x) : NULL; }

const char *fuzz_external_version(void) { return ext.x ? rules_external_version(ext.x) : NULL; }

const char *fuzz_external_fault_stderr(void) { return ext.fault_stderr ? ext.fault_stderr : ""; }

int fuzz_external_optimize(const struct ir_graph *g, const char *shim, const char *const *held, int nheld,
                           struct rules_optimized *out, struct fuzz_finding *f)
{
    char err[IR_ERR_LEN];
    enum rules_external_fault fault;
    /* after a fault the client has ended the process; this request starts it again */
    fault = rules_external_optimize(ext.x, g, shim, held, nheld, false, out, err);
    if (fault == RULES_EXTERNAL_NONE)
        return 0;
    keep_stderr(rules_external_stderr(ext.x));
    return fuzz_fail(f, "external", rules_external_fault_name(fault), "%s: %.400s",
                     rules_external_fault_meaning(fault), err);
}

/* The optimizer's command from the harness's arguments (--optimizer=CMD, or --optimizer CMD) or the environment
 * (FUSECHECK_OPTIMIZER); NULL when neither names one. The same for the timeout (--optimizer-timeout=MS,
 * FUSECHECK_OPTIMIZER_TIMEOUT). */
static const char *arg_value(int argc, char **argv, const char *name, const char *env)
{
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], name, n) != 0)
            continue;
        if (argv[i][n] == '=')
            return argv[i] + n + 1;
        if (argv[i][n] == '\0' && i + 1 < argc)
            return argv[i + 1];
    }
    const char *e = getenv(env);
    return e && e[0] ? e : NULL;
}

int fuzz_external_from_args(int argc, char **argv, char err[IR_ERR_LEN])
{
    const char *command = arg_value(argc, argv, "--optimizer", "FUSECHECK_OPTIMIZER");
    const char *timeout = arg_value(argc, argv, "--optimizer-timeout", "FUSECHECK_OPTIMIZER_TIMEOUT");
    if (!command)
        return 0;
    long ms = EXTERNAL_DEFAULT_TIMEOUT_MS;
    if (timeout) {
        char *end;
        ms = strtol(timeout, &end, 10);
        if (*end || ms <= 0 || ms > 600000) {
            snprintf(err, IR_ERR_LEN, "--optimizer-timeout '%.40s' is not a time in milliseconds (1 to 600000)",
                     timeout);
            return -1;
        }
    }
    return fuzz_external_use(command, (int32_t)ms, err) ? -1 : 1;
}
