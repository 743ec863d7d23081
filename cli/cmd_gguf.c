/* cli/cmd_gguf.c — `fusecheck export`: a model written as a GGUF v3 file with seeded weights; `fusecheck gguf`: a
 * file's keys and tensor infos as fusecheck reads them. */
#define _XOPEN_SOURCE 700 /* realpath: a symbolic link written through names its target */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Where -o PATH writes: a regular file or a new one is replaced whole; a symbolic link is written through (and said
 * so); anything else (a directory, a device, a link to nothing) refused. The path to write, malloc'd, or NULL. */
static char *export_target(const char *path)
{
    struct stat st;
    char *at = strdup(path);
    if (!at)
        abort();
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        free(at);
        at = realpath(path, NULL);
        if (!at) {
            fprintf(stderr, "fusecheck: export: %s: a symbolic link to nothing that exists (%s); not written\n", path,
                    strerror(errno));
            return NULL;
        }
        fprintf(stderr, "fusecheck: %s is a symbolic link: writing through it to %s\n", path, at);
    }
    if (lstat(at, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "fusecheck: export: %s: not a regular file; a GGUF file replaces only one\n", at);
        free(at);
        return NULL;
    }
    return at;
}

int cli_cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {CLI_LIFT_OPTIONS, {"seed", required_argument, NULL, 's'},
                                         {"output", required_argument, NULL, 'o'}, {0, 0, 0, 0}};
    struct cli_lift l = cli_lift_defaults();
    uint64_t seed = 1;
    const char *out = NULL;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "o:", opts, NULL)) != -1;) {
        if (c == 'o') {
            out = optarg;
            continue;
        }
        if (c == 's') {
            if (cli_parse_seed(optarg, &seed))
                return cli_usage_error("export", "--seed expects an integer in 0..18446744073709551615, got '%s'",
                                       optarg);
            continue;
        }
        int r = cli_lift_code(&l, c, optarg);
        if (r == 1)
            return CLI_USAGE;
        if (r == -1)
            return cli_option_error("export", opts, "o:", argv);
    }
    if (optind != argc - 1 || !out)
        return cli_usage_error("export", "expected one MODEL or config.json and -o FILE.gguf");
    struct models_config *owned;
    const struct models_config *c = cli_model("export", argv[optind], &owned);
    if (!c)
        return CLI_USAGE;
    char err[IR_ERR_LEN];
    struct ir_graph *g = cli_lift_config(c, &l.options, err);
    struct ir_values *v = g ? ir_values_new(g, seed, err) : NULL;
    char *target = v ? export_target(out) : NULL;
    int rc = target && models_gguf_export(c, g, v, target, err) == 0 ? CLI_OK : CLI_USAGE;
    if ((!g || !v || (target && rc != CLI_OK)))
        fprintf(stderr, "fusecheck: export: %s\n", err);
    free(target);
    ir_values_free(v);
    ir_graph_free(g);
    models_config_free(owned);
    return rc;
}

/* Print one value: integers in decimal, floats as their bits in hex (exact), strings quoted, arrays by count. */
static void print_value(const struct ir_gguf_value *v)
{
    if (v->type == IR_GGUF_STRING)
        printf("\"%.*s\"", (int)(v->len > 4096 ? 4096 : v->len), v->str);
    else if (v->type == IR_GGUF_ARRAY)
        printf("%s[%llu]", ir_gguf_vtype_name(v->elem), (unsigned long long)v->n);
    else if (v->type == IR_GGUF_FLOAT32 || v->type == IR_GGUF_FLOAT64)
        printf("0x%llx", (unsigned long long)v->u);
    else if (v->type == IR_GGUF_INT8 || v->type == IR_GGUF_INT16 || v->type == IR_GGUF_INT32 ||
             v->type == IR_GGUF_INT64)
        printf("%lld", (long long)v->i);
    else
        printf("%llu", (unsigned long long)v->u);
}

int cli_cmd_gguf(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage_error("gguf", "expected one FILE.gguf");
    char err[IR_ERR_LEN];
    struct ir_gguf *f = ir_gguf_open(argv[1], err);
    if (!f) {
        fprintf(stderr, "%s\n", err); /* file: byte N: what was expected */
        return CLI_USAGE;
    }
    printf("version %u\nalignment %llu\ndata %llu\n", f->version, (unsigned long long)f->alignment,
           (unsigned long long)f->data_offset);
    for (int64_t k = 0; k < f->nkv; k++) {
        const struct ir_gguf_kv *kv = &f->kv[k];
        printf("kv %.*s %s ", (int)kv->key_len, kv->key, ir_gguf_vtype_name(kv->value.type));
        print_value(&kv->value);
        printf("\n");
    }
    for (int64_t k = 0; k < f->ntensors; k++) {
        const struct ir_gguf_tensor *t = &f->tensors[k];
        printf("tensor %.*s ", (int)t->name_len, t->name);
        for (uint32_t d = 0; d < t->ndims; d++)
            printf("%s%llu", d ? "," : "", (unsigned long long)t->dims[d]);
        printf(" %u %llu\n", t->type, (unsigned long long)t->offset);
    }
    ir_gguf_close(f);
    return CLI_OK;
}
