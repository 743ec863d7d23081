/* cli/common.c — loading graphs from files or the zoo, writing outputs whole, usage errors, digests. */
#define _XOPEN_SOURCE 700 /* realpath: a symbolic link written through names its target */
#define _GNU_SOURCE       /* fopencookie: standard output's writes with their errno (cli_stdout_keep) */
#include "cli.h"
#include "rules/rules.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct cli_lift cli_lift_defaults(void)
{
    struct cli_lift l;
    l.options = models_default_options();
    l.mode_set = false;
    l.given = NULL;
    l.allow_empty = false;
    return l;
}

int cli_parse_count(const char *s, int32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > INT32_MAX)
        return 1;
    *out = (int32_t)v;
    return 0;
}

int cli_parse_layers(const char *s, int32_t *out)
{
    int32_t n = 0;
    if (strcmp(s, "all") != 0 && (cli_parse_count(s, &n) || n > MODELS_MAX_LAYERS)) {
        fprintf(stderr, "fusecheck: --layers: expected a count of 1..%d (at most the model's layers) or 'all', "
                "got '%s'\n", MODELS_MAX_LAYERS, s);
        return 1;
    }
    *out = n; /* 0: every layer */
    return 0;
}

int cli_lift_option(struct cli_lift *l, const char *name, const char *value)
{
    char err[IR_ERR_LEN];
    l->given = strcmp(name, "mode") == 0     ? "--mode"
               : strcmp(name, "layers") == 0 ? "--layers"
               : strcmp(name, "ctx") == 0    ? "--ctx"
                                             : "--weights";
    if (strcmp(name, "mode") == 0) {
        if (models_parse_mode(value, &l->options.mode, err)) {
            fprintf(stderr, "fusecheck: --mode: %s\n", err);
            return 1;
        }
        l->mode_set = true;
        return 0;
    }
    if (strcmp(name, "layers") == 0)
        return cli_parse_layers(value, &l->options.layers);
    if (strcmp(name, "weights") == 0) {
        int f = ir_format_lookup(value, strlen(value));
        if (f < 0) {
            fprintf(stderr, "fusecheck: --weights: unknown format '%s' (f32 f16 bf16 q8_0 q4_0 q4_k q6_k)\n", value);
            return 1;
        }
        l->options.weights = (enum ir_format)f;
        return 0;
    }
    if (strcmp(name, "ctx") == 0) {
        int32_t n;
        if (cli_parse_count(value, &n) || n > (1 << 24)) {
            fprintf(stderr, "fusecheck: --ctx: expected a context of 1..16777216 rows, got '%s'\n", value);
            return 1;
        }
        l->options.ctx = n;
        return 0;
    }
    fprintf(stderr, "fusecheck: unknown lift option '%s'\n", name);
    return 1;
}

int cli_lift_code(struct cli_lift *l, int code, const char *arg)
{
    static const struct {
        int code;
        const char *name;
    } codes[] = {{'m', "mode"}, {'l', "layers"}, {'w', "weights"}, {'C', "ctx"}};
    if (code == 'E') { /* --allow-empty: how a file is read, not how a MODEL is lifted */
        l->allow_empty = true;
        return 0;
    }
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (codes[i].code == code)
            return cli_lift_option(l, codes[i].name, arg);
    return -1;
}

int cli_threads(const char *cmd, const char *arg)
{
    const char *from = arg ? "--threads" : "FUSECHECK_THREADS";
    const char *s = arg ? arg : getenv("FUSECHECK_THREADS");
    int32_t n = 1;
    if (s && (cli_parse_count(s, &n) || n > 64))
        return cli_usage_error(cmd, "%s expects a thread count in 1..64, got '%s'", from, s);
    ir_eval_set_threads(n);
    return 0;
}

int64_t cli_lift_ctx(const struct cli_lift *l, const struct models_config *c)
{
    return l->options.ctx ? l->options.ctx : c->ctx;
}

/* Whether a path ends in ".json". */
static bool json_named(const char *arg)
{
    size_t n = strlen(arg);
    return n > 5 && strcmp(arg + n - 5, ".json") == 0;
}

/* Whether the regular file at path starts (after blanks) with '{': a JSON object, not a graph's text. */
static bool json_inside(const char *path)
{
    struct stat st;
    FILE *f = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
    int c = EOF;
    while (f && (c = fgetc(f)) != EOF && (c == ' ' || c == '\t' || c == '\n' || c == '\r'))
        ;
    if (f)
        fclose(f);
    return c == '{';
}

bool cli_is_config(const char *arg) { return !models_find(arg) && (json_named(arg) || json_inside(arg)); }

/* Whether the regular file at path starts with GGUF's magic. */
static bool gguf_inside(const char *path)
{
    struct stat st;
    FILE *f = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
    char magic[4] = {0};
    bool yes = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    if (f)
        fclose(f);
    return yes;
}

bool cli_is_gguf(const char *arg)
{
    size_t n = strlen(arg);
    return !models_find(arg) && ((n > 5 && strcmp(arg + n - 5, ".gguf") == 0) || gguf_inside(arg));
}

/* The GGUF files read this run, each with the configuration read from it: kept mapped until the process ends, as
 * the values of its lifts read their weights where they lie. */
#define MAX_GGUF 64
static struct {
    struct models_config *c;
    struct ir_gguf *f;
} ggufs[MAX_GGUF];
static int nggufs;

/* The configuration of the GGUF file at arg (opened and kept), into *owned; NULL with the error printed. */
static const struct models_config *gguf_model(const char *arg, struct models_config **owned)
{
    char err[IR_ERR_LEN];
    struct ir_gguf *f = nggufs < MAX_GGUF ? ir_gguf_open(arg, err) : NULL;
    if (nggufs == MAX_GGUF)
        snprintf(err, sizeof err, "%s: more than %d GGUF files in one run", arg, MAX_GGUF);
    struct models_config *c = f ? models_gguf_config(f, err) : NULL;
    *owned = NULL; /* the registry owns it */
    if (!c) {
        fprintf(stderr, "%s\n", err); /* file: byte N: what was expected */
        ir_gguf_close(f);
        return NULL;
    }
    ggufs[nggufs].c = c;
    ggufs[nggufs++].f = f;
    return c;
}

struct ir_graph *cli_lift_config(const struct models_config *c, const struct models_options *o, char err[IR_ERR_LEN])
{
    for (int i = 0; i < nggufs; i++)
        if (ggufs[i].c == c) {
            if (o->weights != models_default_options().weights) {
                snprintf(err, IR_ERR_LEN, "%s: --weights does not apply to a GGUF file: its tensors' formats are "
                         "the file's", ggufs[i].f->label);
                return NULL;
            }
            ir_values_use_gguf(ggufs[i].f);
            return models_gguf_lift(ggufs[i].f, o, err);
        }
    return models_lift(c, o, err);
}

const struct ir_gguf *cli_model_gguf(const struct models_config *c)
{
    for (int i = 0; i < nggufs; i++)
        if (ggufs[i].c == c)
            return ggufs[i].f;
    return NULL;
}

char *cli_command_line(int argc, char **argv)
{
    size_t n = sizeof "fusecheck";
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *s = malloc(n);
    if (!s)
        abort();
    size_t k = (size_t)snprintf(s, n, "fusecheck");
    for (int i = 0; i < argc; i++)
        k += (size_t)snprintf(s + k, n - k, " %s", argv[i]);
    return s;
}

const struct models_config *cli_model(const char *cmd, const char *arg, struct models_config **owned)
{
    struct stat st;
    *owned = NULL;
    const struct models_config *c = models_find(arg);
    if (c)
        return c;
    if (cli_is_gguf(arg))
        return gguf_model(arg, owned);
    if (!json_named(arg) && stat(arg, &st) != 0) {
        cli_usage_error(cmd, "unknown model '%s' (fusecheck models lists them; or give a config.json)", arg);
        return NULL;
    }
    char err[IR_ERR_LEN];
    *owned = models_read_config(arg, err);
    if (!*owned)
        fprintf(stderr, "%s\n", err); /* file:line:col: field: what was expected */
    return *owned;
}

struct ir_graph *cli_load(const char *arg, const struct cli_lift *l)
{
    char err[IR_ERR_LEN];
    struct models_config *owned = NULL;
    bool config = cli_is_config(arg) || cli_is_gguf(arg);
    const struct models_config *c = config ? cli_model("load", arg, &owned) : models_find(arg);
    if (config && !c)
        return NULL;
    if (!c && l->given) {
        fprintf(stderr, "fusecheck: %s applies to a zoo MODEL, not to the file '%s': a file's graph is as written\n",
                l->given, arg);
        return NULL;
    }
    struct ir_graph *g = c ? cli_lift_config(c, &l->options, err) : ir_parse_file_opt(arg, true, err);
    const char *label = strcmp(arg, "-") == 0 ? "stdin" : arg;
    if (g && !c && !l->allow_empty && ir_refuse_empty(g, label, err)) {
        fprintf(stderr, "%s (--allow-empty reads it)\n", err); /* file:1:1: empty graph: ... */
        ir_graph_free(g);
        models_config_free(owned);
        return NULL;
    }
    if (!g && c && cli_is_gguf(arg))
        fprintf(stderr, "%s\n", err); /* file: tensor NAME: what was expected */
    else if (!g && c)
        fprintf(stderr, "fusecheck: %s: %s\n", arg, err);
    else if (!g)
        fprintf(stderr, "%s\n", err); /* file:line:col: what was expected */
    models_config_free(owned);
    return g;
}

/* Whether standard output's loss was said already (said once a run). */
static bool stdout_said;
/* The errno of the first write to standard output that failed, 0 while none has: a stream's error flag keeps no
 * reason, and its buffer is dropped with the write that failed (cli_stdout_keep). */
static int stdout_errno;

/* Say that what was written to standard output was lost, and why (once); 1. */
static int stdout_lost(int e)
{
    if (!stdout_said)
        fprintf(stderr, "fusecheck: stdout: %s\n", strerror(stdout_errno ? stdout_errno : e ? e : EIO));
    stdout_said = true;
    return 1;
}

#ifdef __GLIBC__
/* Standard output's bytes written to its descriptor whole (a write interrupted or short goes on), the first failure's
 * errno kept; the count written (short: the stream's error). */
static ssize_t stdout_write(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!stdout_errno)
                stdout_errno = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    return (ssize_t)done;
}
#endif

void cli_stdout_keep(void)
{
#ifdef __GLIBC__
    FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){NULL, stdout_write, NULL, NULL});
    if (!f)
        return; /* the plain stream: a loss said without its reason */
    setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    stdout = f;
#endif
}

int cli_stdout_flush(void)
{
    bool lost = ferror(stdout) != 0; /* a write the buffer passed on failed already */
    errno = 0;
    if (fflush(stdout) != 0 || lost)
        return stdout_lost(errno);
    return stdout_said;
}

int cli_stdout_close(int rc)
{
    int lost = cli_stdout_flush();
    /* the close reports what a file system defers to it; a descriptor closed before the run wrote nothing */
    if (!lost && close(STDOUT_FILENO) != 0 && errno != EBADF)
        lost = stdout_lost(errno);
    return lost && rc == CLI_OK ? CLI_USAGE : rc;
}

/* Bytes to write, and writing them as ir_replace_file's body. */
struct bytes {
    const char *data;
    size_t len;
};
static int put_bytes(int fd, void *ctx)
{
    const struct bytes *b = ctx;
    return ir_write_all(fd, b->data, b->len);
}

/* Replace the regular file at path (absent when old is NULL) whole: a new file beside it, given the old one's
 * permissions (a new one's: 0666 less the umask), renamed over it. 0, or -1 with errno set. */
static int replace_regular(const char *path, const struct stat *old, const char *data, size_t len)
{
    struct bytes b = {data, len};
    return ir_replace_file(path, old ? (int)(old->st_mode & 07777) : -1, put_bytes, &b);
}

/* Write len bytes into what is at path now — a device, a FIFO — without replacing it. 0, or -1 with errno set. */
static int write_in_place(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = ir_write_all(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && rc == 0)
        rc = -1, e = errno;
    errno = e;
    return rc;
}

int cli_write(const char *path, const char *data, size_t len)
{
    if (!path || strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len)
            return stdout_lost(errno);
        return cli_stdout_flush();
    }
    /* A symbolic link is written through: what it points at is what gets written (and said so). */
    struct stat st;
    char *target = NULL;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        target = realpath(path, NULL);
        if (!target) {
            fprintf(stderr, "fusecheck: writing %s: a symbolic link to nothing that exists (%s); not written\n", path,
                    strerror(errno));
            return 1;
        }
        fprintf(stderr, "fusecheck: %s is a symbolic link: writing through it to %s\n", path, target);
    }
    const char *at = target ? target : path;
    int rc;
    if (lstat(at, &st) != 0)
        rc = errno == ENOENT ? replace_regular(at, NULL, data, len) : -1;
    else if (S_ISREG(st.st_mode))
        rc = replace_regular(at, &st, data, len);
    else if (S_ISDIR(st.st_mode))
        rc = -1, errno = EISDIR;
    else
        rc = write_in_place(at, data, len); /* a device or a FIFO: written, never replaced */
    if (rc != 0)
        fprintf(stderr, "fusecheck: writing %s: %s\n", at, strerror(errno));
    free(target);
    return rc != 0;
}

int cli_parse_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || s[0] == '-' || s[0] == '+' || errno == ERANGE)
        return 1;
    *out = (uint64_t)v;
    return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fusecheck: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (fusecheck help %s)\n", cmd);
    return CLI_USAGE;
}

void cli_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* The first line a shell command prints into out (its newline dropped; "" when none), and its exit status (-1 when it
 * could not be run or did not exit). */
static int first_line(const char *command, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *p = popen(command, "r");
    if (!p)
        return -1;
    if (fgets(out, (int)cap, p))
        out[strcspn(out, "\n")] = '\0';
    int status = pclose(p);
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void cli_git_revision(char *out, size_t cap)
{
    const char *env = getenv("FUSECHECK_GIT_REV");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    int rc = first_line("git rev-parse --short=12 HEAD 2>/dev/null", out, cap);
    if (rc == 0 && out[0])
        return;
    char dir[8];
    const char *why = rc == 127 ? "git not found"
                      : rc < 0  ? "git could not be run"
                      : first_line("git rev-parse --git-dir 2>/dev/null", dir, sizeof dir) == 0 ? "no commit yet"
                                                                                                 : "not a git checkout";
    snprintf(out, cap, "none: %s", why);
}

int cli_holds_add(struct cli_holds *h, const char *text)
{
    const char *at = text;
    for (;;) {
        size_t len = strcspn(at, ",");
        if (len == 0) {
            fprintf(stderr, "fusecheck: --hold: an empty rule name in '%s'\n", text);
            return 1;
        }
        bool seen = false;
        for (int i = 0; i < h->n && !seen; i++)
            seen = strlen(h->names[i]) == len && strncmp(h->names[i], at, len) == 0;
        if (!seen && h->n == CLI_MAX_HOLDS) {
            fprintf(stderr, "fusecheck: --hold: more than %d rules\n", CLI_MAX_HOLDS);
            return 1;
        }
        if (!seen) {
            h->names[h->n] = strndup(at, len);
            if (!h->names[h->n++])
                abort();
        }
        if (!at[len])
            return 0;
        at += len + 1;
    }
}

/* Whether a step's name is the one sought (rules_steps' callback). */
struct step_seek {
    const char *name;
    bool found;
};
static void seek_step(const char *name, void *ctx)
{
    struct step_seek *s = ctx;
    s->found = s->found || strcmp(s->name, name) == 0;
}

bool cli_holdable(const struct shim *shim, const char *name)
{
    struct step_seek s = {name, false};
    rules_steps(shim, seek_step, &s);
    for (int i = 0; i < shim->nholdable && !s.found; i++)
        s.found = strcmp(shim->holdable[i], name) == 0;
    return s.found;
}

void cli_holds_apply(const struct cli_holds *h, struct shim *shim)
{
    for (int i = 0; shim->hold && i < h->n; i++)
        shim->hold(shim, h->names[i]);
}

void cli_holds_free(struct cli_holds *h)
{
    for (int i = 0; i < h->n; i++)
        free(h->names[i]);
    h->n = 0;
}

/* The long option of opts whose code is val, or NULL. */
static const struct option *option_of(const struct option *opts, int val)
{
    for (; opts && opts->name; opts++)
        if (!opts->flag && opts->val == val)
            return opts;
    return NULL;
}

int cli_option_error(const char *cmd, const struct option *opts, const char *shorts, char **argv)
{
    const char *given = optind > 0 ? argv[optind - 1] : "";
    bool long_form = strncmp(given, "--", 2) == 0;
    bool valued = strchr(given, '=') != NULL;
    const struct option *o = optopt && long_form ? option_of(opts, optopt) : NULL;
    if (o && o->has_arg == required_argument && !valued)
        return cli_usage_error(cmd, "--%s needs a value", o->name);
    if (o && o->has_arg == no_argument && valued)
        return cli_usage_error(cmd, "--%s takes no value, got '%s'", o->name, given);
    const char *s = optopt && !long_form && shorts ? strchr(shorts, optopt) : NULL;
    if (s && s[1] == ':')
        return cli_usage_error(cmd, "-%c needs a value", optopt);
    return cli_usage_error(cmd, "unknown option '%s'", given);
}

int cli_values_fit(const char *cmd, const struct ir_graph *g)
{
    int64_t need = ir_values_plan_bytes(g);
    if (need <= IR_EVAL_MAX_BYTES) /* -1: a shape the evaluator refuses itself, saying which */
        return 0;
    fprintf(stderr, "fusecheck: %s: the graph's values need %lld bytes (%.1f GiB), more than the evaluator's limit of "
            "%lld bytes (%.1f GiB): refused (a smaller --ctx, --layers or --mode fits)\n", cmd, (long long)need,
            (double)need / (1 << 30), (long long)IR_EVAL_MAX_BYTES, (double)IR_EVAL_MAX_BYTES / (1 << 30));
    return CLI_USAGE;
}

int cli_last_needs_value(const char *cmd, int argc, char **argv, const char *const *valued)
{
    for (int k = 0; argc > 1 && valued[k]; k++)
        if (strcmp(argv[argc - 1], valued[k]) == 0)
            return cli_usage_error(cmd, "%s needs a value", valued[k]);
    return 0;
}

/* ── The optimizer a command checks ────────────────────────────────────────────────────────────────────────── */

int cli_optimizer_code(struct cli_optimizer *o, const char *cmd, int code, const char *arg)
{
    if (code == CLI_OPT_OPTIMIZER) {
        if (!arg[0]) {
            cli_usage_error(cmd, "--optimizer expects a command line, got ''");
            return 1;
        }
        o->command = arg;
        return 0;
    }
    if (code != CLI_OPT_OPTIMIZER_TIMEOUT)
        return -1;
    int32_t ms;
    if (cli_parse_count(arg, &ms) || ms > 86400000) {
        cli_usage_error(cmd, "--optimizer-timeout-ms expects 1..86400000, got '%s'", arg);
        return 1;
    }
    o->timeout_ms = ms;
    return 0;
}

bool cli_optimizer_external(const struct cli_optimizer *o) { return o->command != NULL; }

int cli_optimizer_start(struct cli_optimizer *o, const char *cmd)
{
    if (!o->command)
        return 0;
    struct rules_external_limits lim = {o->timeout_ms, 0, 0};
    enum rules_external_fault fault = RULES_EXTERNAL_NONE;
    char err[IR_ERR_LEN];
    o->x = rules_external_start(o->command, &lim, &fault, err);
    if (!o->x) {
        fprintf(stderr, "fusecheck: %s: --optimizer '%s': %s (%s): %s\n", cmd, o->command,
                rules_external_fault_name(fault), rules_external_fault_meaning(fault), err);
        return CLI_FAILED;
    }
    snprintf(o->name, sizeof o->name, "%s", rules_external_name(o->x));
    snprintf(o->version, sizeof o->version, "%s", rules_external_version(o->x));
    return 0;
}

int cli_optimizer_run(struct cli_optimizer *o, const struct ir_graph *g, const struct shim *shim,
                      const char *const *held, int nheld, struct rules_optimized *out, char err[IR_ERR_LEN])
{
    if (!o->x)
        return rules_optimize(g, shim, held, nheld, out, err) ? -1 : 0;
    char why[IR_ERR_LEN];
    enum rules_external_fault f =
        rules_external_optimize(o->x, g, shim->name, held, nheld, rules_seed_rules(), out, why);
    if (f == RULES_EXTERNAL_NONE)
        return 0;
    snprintf(err, IR_ERR_LEN, "optimizer %s: %.400s", rules_external_fault_name(f), why);
    return 1;
}

/* Write the last `keep` lines of text to out, each indented behind a bar, control bytes shown as '?'. */
static void tail_lines(const char *text, int keep, FILE *out)
{
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n')
        n--;
    size_t from = n;
    for (int lines = 0; from > 0; from--)
        if (text[from - 1] == '\n' && ++lines == keep)
            break;
    fputs("  | ", out);
    for (size_t i = from; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n')
            fputs("\n  | ", out);
        else
            fputc(c == '\t' || (c >= 0x20 && c != 0x7f) ? c : '?', out);
    }
    fputc('\n', out);
}

void cli_optimizer_say(const struct cli_optimizer *o, const char *what)
{
    fprintf(stderr, "%s\n", what);
    const char *tail = o->x ? rules_external_stderr(o->x) : "";
    if (!tail || !tail[0]) {
        fprintf(stderr, "  (the optimizer wrote nothing on its stderr)\n");
        return;
    }
    fprintf(stderr, "  the optimizer's stderr, its last lines:\n");
    tail_lines(tail, 12, stderr);
}

void cli_optimizer_stop(struct cli_optimizer *o)
{
    rules_external_stop(o->x);
    o->x = NULL;
}

/* ── The differential ──────────────────────────────────────────────────────────────────────────────────────── */

/* One decision as the differential compares it: its rule and the text of what it compares. */
struct diff_key {
    const char *rule;
    char *text;
};

/* A decision's compared fields as text: rule, class, covers, outcome and reason code. */
static char *decision_key(const struct rules_decision *d)
{
    static const char *const outcomes[] = {"fired", "refused", "held"};
    size_t cap = 96 + strlen(d->rule) + 12 * (size_t)d->ncovers + (d->code ? strlen(d->code) : 0);
    char *s = malloc(cap);
    if (!s)
        abort();
    size_t n = (size_t)snprintf(s, cap, "%s %s [", d->rule, ir_class_name(d->cls));
    for (int32_t i = 0; i < d->ncovers; i++)
        n += (size_t)snprintf(s + n, cap - n, i ? ",%d" : "%d", d->covers[i]);
    snprintf(s + n, cap - n, "] %s {%s}", outcomes[d->outcome], d->code ? d->code : "");
    return s;
}

/* Ascending order of keys by their text, for qsort. */
static int key_cmp(const void *a, const void *b)
{
    return strcmp(((const struct diff_key *)a)->text, ((const struct diff_key *)b)->text);
}

/* The keys of a report's decisions, sorted. */
static struct diff_key *report_keys(const struct rules_report *rep)
{
    struct diff_key *k = malloc(sizeof *k * (size_t)(rep->n ? rep->n : 1));
    if (!k)
        abort();
    for (int32_t i = 0; i < rep->n; i++)
        k[i] = (struct diff_key){rep->d[i].rule, decision_key(&rep->d[i])};
    qsort(k, (size_t)rep->n, sizeof *k, key_cmp);
    return k;
}

/* The tally of rule `rule`, added in name order when new. */
static struct cli_rule_tally *tally_of(struct cli_differential *d, const char *rule)
{
    int lo = 0, hi = d->nrules;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(d->rules[mid].rule, rule);
        if (c == 0)
            return &d->rules[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (d->nrules == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->rules = realloc(d->rules, sizeof *d->rules * (size_t)d->cap);
        if (!d->rules)
            abort();
    }
    memmove(d->rules + lo + 1, d->rules + lo, sizeof *d->rules * (size_t)(d->nrules - lo));
    d->nrules++;
    d->rules[lo] = (struct cli_rule_tally){strdup(rule), 0, 0};
    if (!d->rules[lo].rule)
        abort();
    return &d->rules[lo];
}

/* Print the first decision at which two reports, read in order, part: each side's line, or "(none)". */
static void show_first(const char *where, const struct rules_report *theirs, const struct rules_report *ours,
                       FILE *out)
{
    int32_t i = 0;
    for (; i < theirs->n && i < ours->n; i++) {
        char *a = decision_key(&theirs->d[i]), *b = decision_key(&ours->d[i]);
        bool same = strcmp(a, b) == 0;
        free(a);
        free(b);
        if (!same)
            break;
    }
    char *a = i < theirs->n ? rules_decision_line(&theirs->d[i]) : NULL;
    char *b = i < ours->n ? rules_decision_line(&ours->d[i]) : NULL;
    fprintf(out, "differential: first disagreement: %s, decision %d\ndifferential:   theirs: %s\n"
                 "differential:   ours:   %s\n", where, (int)i + 1, a ? a : "(none)", b ? b : "(none)");
    free(a);
    free(b);
}

int64_t cli_differential_add(struct cli_differential *d, const char *where, const struct rules_report *theirs,
                             const struct rules_report *ours, FILE *out)
{
    struct diff_key *a = report_keys(theirs), *b = report_keys(ours);
    int32_t i = 0, j = 0;
    int64_t differ = 0;
    while (i < theirs->n || j < ours->n) {
        int c = i == theirs->n ? 1 : j == ours->n ? -1 : strcmp(a[i].text, b[j].text);
        const char *rule = c <= 0 ? a[i].rule : b[j].rule;
        struct cli_rule_tally *t = tally_of(d, rule);
        if (c == 0)
            t->agree++, i++, j++;
        else
            t->disagree++, differ++, c < 0 ? i++ : j++;
    }
    d->agree += ((int64_t)theirs->n + ours->n - differ) / 2; /* each agreement pairs one of each */
    d->disagree += differ;
    d->reports++;
    if (differ) {
        d->differing++;
        if (!d->shown)
            show_first(where, theirs, ours, out);
        d->shown = true;
    }
    for (int32_t k = 0; k < theirs->n; k++)
        free(a[k].text);
    for (int32_t k = 0; k < ours->n; k++)
        free(b[k].text);
    free(a);
    free(b);
    return differ;
}

void cli_differential_print(const struct cli_differential *d, const char *ours, FILE *out)
{
    fprintf(out, "differential: %lld reports beside %s: %lld decisions agree, %lld differ (%lld report%s)\n",
            (long long)d->reports, ours, (long long)d->agree, (long long)d->disagree, (long long)d->differing,
            d->differing == 1 ? " differs" : "s differ");
    for (int i = 0; i < d->nrules; i++)
        fprintf(out, "differential: %-28s %6lld agree %6lld differ\n", d->rules[i].rule,
                (long long)d->rules[i].agree, (long long)d->rules[i].disagree);
}

void cli_differential_free(struct cli_differential *d)
{
    for (int i = 0; i < d->nrules; i++)
        free(d->rules[i].rule);
    free(d->rules);
    memset(d, 0, sizeof *d);
}
