/* fuzz/common.c — what every harness shares: findings and how they are reported, the shim names a case chooses
 * from, the optimizer harness's cases, and the translation-validation hook. */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ── Findings ────────────────────────────────────────────────────────────────────────────────────────────── */

int fuzz_fail(struct fuzz_finding *f, const char *check, const char *detail, const char *fmt, ...)
{
    snprintf(f->check, sizeof f->check, "%s", check);
    snprintf(f->detail, sizeof f->detail, "%s", detail && detail[0] ? detail : "-");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    /* A signature is one word: blanks in a detail would split it. */
    for (char *p = f->detail; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n')
            *p = '_';
    return 1;
}

void fuzz_report(const char *harness, const struct fuzz_finding *f)
{
    fprintf(stderr, "fusecheck-finding: %s %s:%s\n%s\n", harness, f->check, f->detail, f->message);
    fflush(stderr);
}

/* ── Shim names ──────────────────────────────────────────────────────────────────────────────────────────── */

#define FUZZ_MAX_SHIMS 160

/* Parameters tried for a parameterised shim row (name ending in ':' or holding a '<'): the CUDA lane's chips,
 * activation modes and knobs. Only the names shim_lookup accepts are kept. */
static const char *const lane_chips[] = {"h200", "h100", "a100", "l40s", "rtx4090"};
static const char *const lane_acts[] = {"int8", "dequant", "int8x2"};
static const char *const lane_knobs[] = {"",
                                         ":cache=f32",
                                         ":state=bf16",
                                         ":fuse_quant=off",
                                         ":batch",
                                         ":hold=gemv_parts",
                                         ":hold=latent_expanded",
                                         ":hold=rows_a_warp",
                                         ":cache=f32:state=bf16:fuse_quant=off"};

/* The names built once from shim_list, and the first row of the list no name of which loads; per name, once probed,
 * the misspelling at its separator that loads (empty: none). */
static struct {
    bool built;
    int n;
    char name[FUZZ_MAX_SHIMS][128];
    char dead_row[128];
    bool probed[FUZZ_MAX_SHIMS];
    char separator_loads[FUZZ_MAX_SHIMS][FUZZ_NAME_LEN + 2];
} shims;

/* Keep name when shim_lookup accepts it and no kept name makes the same shim. */
static void try_shim(const char *name)
{
    if (shims.n >= FUZZ_MAX_SHIMS)
        return;
    char err[IR_ERR_LEN];
    struct shim *s = shim_lookup(name, err);
    if (!s)
        return;
    bool seen = false;
    for (int i = 0; i < shims.n && !seen; i++)
        seen = strcmp(shims.name[i], s->name) == 0;
    if (!seen)
        snprintf(shims.name[shims.n++], sizeof shims.name[0], "%s", s->name);
    shim_free(s);
}

/* One row of shim_list: a plain name, or a pattern whose concrete names are tried. A row none of whose names loads
 * is remembered: the table offers a shim that shim_lookup refuses. */
static void on_shim(const char *name, const char *what, void *ctx)
{
    (void)what;
    (void)ctx;
    int before = shims.n;
    size_t n = strcspn(name, "<[ ");
    if (n == strlen(name) && (n == 0 || name[n - 1] != ':')) {
        try_shim(name);
        if (shims.n == before && !shims.dead_row[0] && shims.n < FUZZ_MAX_SHIMS)
            snprintf(shims.dead_row, sizeof shims.dead_row, "%s", name);
        return;
    }
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%.*s", (int)n, name);
    size_t p = strlen(prefix);
    if (p && prefix[p - 1] == ':')
        prefix[--p] = '\0';
    char full[200];
    for (size_t c = 0; c < sizeof lane_chips / sizeof lane_chips[0]; c++)
        for (size_t a = 0; a < sizeof lane_acts / sizeof lane_acts[0]; a++)
            for (size_t k = 0; k < sizeof lane_knobs / sizeof lane_knobs[0]; k++) {
                snprintf(full, sizeof full, "%s:%s:%s%s", prefix, lane_chips[c], lane_acts[a], lane_knobs[k]);
                try_shim(full);
            }
    if (shims.n == before && !shims.dead_row[0] && shims.n < FUZZ_MAX_SHIMS)
        snprintf(shims.dead_row, sizeof shims.dead_row, "%s", name);
}

/* Build the list on first use. */
static void build_shims(void)
{
    if (shims.built)
        return;
    shims.built = true;
    shim_list(on_shim, NULL);
    if (shims.n == 0)
        try_shim("reference");
}

int fuzz_shim_count(void)
{
    build_shims();
    return shims.n;
}

const char *fuzz_shim_dead_row(void)
{
    build_shims();
    return shims.dead_row[0] ? shims.dead_row : NULL;
}

const char *fuzz_shim_name(int i)
{
    build_shims();
    return i >= 0 && i < shims.n ? shims.name[i] : "reference";
}

/* Whether name is spelled as shim_list says a name is: a plain row's name, or a parameterised row's name (through its
 * ':') followed by the parameters. */
struct spelled {
    const char *name;
    bool ok;
};
static void on_spelling(const char *row, const char *what, void *ctx)
{
    (void)what;
    struct spelled *sp = ctx;
    size_t n = strcspn(row, "<[ ");
    if (n && row[n - 1] == ':')
        sp->ok = sp->ok || (strncmp(sp->name, row, n) == 0 && sp->name[n] != '\0');
    else
        sp->ok = sp->ok || (n == strlen(row) && strcmp(sp->name, row) == 0);
}

/* A name one edit away from `base` (a character replaced, one dropped, one put in, or the name cut short), chosen
 * by the bits of pick, in a buffer of its exact size (so a read past its end is the sanitizers' to see). */
static char *edited_name(const char *base, uint64_t pick)
{
    char c = (char)(32 + (pick >> 40) % 95), buf[FUZZ_NAME_LEN + 2];
    snprintf(buf, FUZZ_NAME_LEN + 1, "%s", base); /* room for one character put in */
    size_t n = strlen(buf), at = (size_t)((pick >> 8) % (n + 1));
    switch (pick & 3) {
    case 0: if (at < n) buf[at] = c; break;
    case 1: if (at < n) memmove(buf + at, buf + at + 1, n - at); break;
    case 2: buf[at] = '\0'; break;
    default: memmove(buf + at + 1, buf + at, n - at + 1); buf[at] = c; break;
    }
    char *out = strdup(buf);
    if (!out)
        abort();
    return out;
}

/* Whether probe loads a shim though it is spelled otherwise than the list says names are. */
static bool loads_misspelled(const char *probe)
{
    char err[IR_ERR_LEN];
    struct shim *s = shim_lookup(probe, err);
    struct spelled sp = {probe, false};
    bool loads = s != NULL;
    if (loads)
        shim_list(on_spelling, &sp);
    shim_free(s);
    return loads && !sp.ok;
}

/* The first of the two misspellings at base's separator (cut there, the ':' replaced) that loads, into out (empty
 * when neither does, or base has no separator). */
static void probe_separator(const char *base, char *out, size_t cap)
{
    size_t colon = strcspn(base, ":");
    uint64_t edits[2] = {((uint64_t)colon << 8) | 2, ((uint64_t)colon << 8) | ((uint64_t)('x' - 32) << 40) | 0};
    out[0] = '\0';
    for (int k = 0; k < 2 && base[colon] && !out[0]; k++) {
        char *probe = edited_name(base, edits[k]);
        if (loads_misspelled(probe))
            snprintf(out, cap, "%s", probe);
        free(probe);
    }
}

int fuzz_shim_name_probe(int i, uint64_t pick, char *name, size_t cap)
{
    const char *base = fuzz_shim_name(i);
    if (i >= 0 && i < shims.n && !shims.probed[i]) { /* the separator's edits depend on the name alone: once */
        probe_separator(base, shims.separator_loads[i], sizeof shims.separator_loads[i]);
        shims.probed[i] = true;
    }
    if (i >= 0 && i < shims.n && shims.separator_loads[i][0]) {
        snprintf(name, cap, "%s", shims.separator_loads[i]);
        return 1;
    }
    char *probe = edited_name(base, pick);
    int bad = loads_misspelled(probe);
    snprintf(name, cap, "%s", probe);
    free(probe);
    return bad;
}

/* ── Cases ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* How many of the offered shims, the first ones, are plain rows (no ':' in the name). */
static int plain_shims(void)
{
    int n = fuzz_shim_count(), plain = 0;
    while (plain < n && !strchr(fuzz_shim_name(plain), ':'))
        plain++;
    return plain;
}

/* The number the shim is picked by: byte 0's upper seven bits, and bit 4 of byte 1 (no hold uses it) as the eighth,
 * so that every one of more than 128 parameterised names can be drawn. */
static int row_pick(const uint8_t ctl[FUZZ_CTL]) { return ctl[0] >> 1 | (ctl[1] & 16) << 3; }

/* The plan the control bytes choose. Byte 0 the shim (the plain shims are as likely as all the parameterised ones
 * together, and the first plain one, reference, as likely as the other plain ones together); bytes 1-3 the holds
 * (and bit 4 of byte 1 the shim's eighth bit); byte 4 the prefix; bytes 5-7 the evaluator's seed. */
static struct fuzz_plan plan_of(const uint8_t ctl[FUZZ_CTL])
{
    struct fuzz_plan p;
    int n = fuzz_shim_count();
    int plain = plain_shims();
    int v = row_pick(ctl);
    if (plain == n || (ctl[0] & 1) == 0 || plain == 0) {
        int pick = v % (2 * (plain ? plain : n)); /* the first (reference, the widest) weighs most */
        p.shim = pick < (plain ? plain : n) ? pick : 0;
    } else
        p.shim = plain + v % (n - plain);
    p.hold[0] = (ctl[1] & 3) == 3 ? ctl[2] : -1;
    p.hold[1] = (ctl[1] & 12) == 12 ? ctl[3] : -1;
    p.prefix = ctl[4];
    p.seed = (uint64_t)ctl[5] | (uint64_t)ctl[6] << 8 | (uint64_t)ctl[7] << 16;
    return p;
}

int fuzz_shim_index(const char *name)
{
    for (int i = 0; i < fuzz_shim_count(); i++)
        if (strcmp(fuzz_shim_name(i), name) == 0)
            return i;
    return -1;
}

/* The number row_pick must give for offered shim s (an odd byte 0 when *lane: a parameterised name), or -1 when
 * none does. */
static int shim_pick(int s, bool *lane)
{
    int n = fuzz_shim_count(), plain = plain_shims();
    if (s < 0 || s >= n)
        return -1;
    *lane = !(plain == n || plain == 0 || s < plain); /* else plan_of's first branch: an even byte 0 picks s */
    int v = *lane ? s - plain : s;
    return v > 255 ? -1 : v;
}

int fuzz_plan_encode(const struct fuzz_plan *p, uint8_t ctl[FUZZ_CTL])
{
    bool lane;
    int v = shim_pick(p->shim, &lane);
    if (v < 0 || p->hold[0] > 255 || p->hold[1] > 255 || p->prefix < 0 || p->prefix > 255 ||
        p->seed >= (1u << 24))
        return 1;
    memset(ctl, 0, FUZZ_CTL);
    ctl[0] = (uint8_t)((v & 127) << 1 | lane);
    ctl[1] = (uint8_t)((p->hold[0] >= 0 ? 3 : 0) | (p->hold[1] >= 0 ? 12 : 0) | (v >> 7) << 4);
    ctl[2] = (uint8_t)(p->hold[0] >= 0 ? p->hold[0] : 0);
    ctl[3] = (uint8_t)(p->hold[1] >= 0 ? p->hold[1] : 0);
    ctl[4] = (uint8_t)p->prefix;
    ctl[5] = (uint8_t)(p->seed & 0xff);
    ctl[6] = (uint8_t)(p->seed >> 8 & 0xff);
    ctl[7] = (uint8_t)(p->seed >> 16 & 0xff);
    return 0;
}

int fuzz_case_decode(const uint8_t *data, size_t size, struct fuzz_case *c, char err[IR_ERR_LEN])
{
    memset(c, 0, sizeof *c);
    uint8_t ctl[FUZZ_CTL] = {0};
    size_t n = size < FUZZ_CTL ? size : FUZZ_CTL;
    if (n)
        memcpy(ctl, data, n);
    c->plan = plan_of(ctl);
    const uint8_t *body = data + n;
    size_t len = size - n;
    char perr[IR_ERR_LEN];
    c->g = len ? ir_parse((const char *)body, len, "case", perr) : NULL;
    if (c->g && c->g->nops > 0)
        return 0;
    ir_graph_free(c->g);
    struct fuzz_bytes b = {body, len, 0};
    c->generated = true;
    c->g = fuzz_generate_graph(&b, NULL, err);
    return c->g ? 0 : 1;
}

void fuzz_case_free(struct fuzz_case *c)
{
    ir_graph_free(c->g);
    c->g = NULL;
}

/* ── The validator hooks ──────────────────────────────────────────────────────────────────────────────────── */

static fuzz_decision_validator validator;

void fuzz_set_validator(fuzz_decision_validator fn) { validator = fn; }

fuzz_decision_validator fuzz_validator(void) { return validator; }

static fuzz_run_validator run_validator;

void fuzz_set_run_validator(fuzz_run_validator fn) { run_validator = fn; }

fuzz_run_validator fuzz_run_validator_installed(void) { return run_validator; }
