/* rules/report.c — the report of every decision, its lines and its sha256 digest. */
#include "rules.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One decision as its line, with its refusal's code or without it (the digest's line, as before codes). */
static char *decision_text(const struct rules_decision *d, bool with_code)
{
    struct ir_text t = {0};
    ir_text_add(&t, "%s %s [", d->rule, ir_class_name(d->cls));
    for (int32_t i = 0; i < d->ncovers; i++)
        ir_text_add(&t, i ? ", %d" : "%d", d->covers[i]);
    ir_text_add(&t, "] ");
    switch (d->outcome) {
    case RULES_FIRED: ir_text_add(&t, "fired"); break;
    case RULES_REFUSED: ir_text_add(&t, "refused: %s", d->why ? d->why : ""); break;
    case RULES_HELD: ir_text_add(&t, "held"); break;
    }
    if (with_code && d->outcome == RULES_REFUSED && d->code)
        ir_text_add(&t, " {%s}", d->code);
    return ir_text_take(&t);
}

char *rules_decision_line(const struct rules_decision *d) { return decision_text(d, true); }

/* The code of the optimizer's own reason "the chip runs `X` as its parts" (one static string: a parsed report's code
 * is this pointer). */
static const char parts_code[] = "supports.parts";

/* The text "the chip runs `X` as its parts" the optimizer writes for a class the chip runs as its parts. */
static bool runs_as_parts(const char *why)
{
    static const char head[] = "the chip runs `", tail[] = "` as its parts";
    size_t n = strlen(why), h = sizeof head - 1, t = sizeof tail - 1;
    return n > h + t && strncmp(why, head, h) == 0 && strcmp(why + n - t, tail) == 0;
}

const char *rules_reason_code(const struct shim *shim, const char *why, bool supports)
{
    if (!why)
        return NULL;
    if (runs_as_parts(why))
        return parts_code;
    return shim && shim->reason_code ? shim->reason_code(shim, why, supports) : NULL;
}

void rules_report_lines(const struct rules_report *rep, void (*line)(const char *text, void *ctx), void *ctx)
{
    for (int32_t i = 0; i < rep->n; i++) {
        char *s = rules_decision_line(&rep->d[i]);
        line(s, ctx);
        free(s);
    }
}

void rules_report_digest(const struct rules_report *rep, char hex[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL))
        abort();
    /* A report of the seed's rules never shares a digest with fusecheck's own. */
    if (rep->seed_rules)
        EVP_DigestUpdate(ctx, rep->n ? "seed-rules\n" : "seed-rules", rep->n ? 11 : 10);
    for (int32_t i = 0; i < rep->n; i++) {
        char *s = decision_text(&rep->d[i], false); /* codes never enter the digest */
        if (i)
            EVP_DigestUpdate(ctx, "\n", 1);
        EVP_DigestUpdate(ctx, s, strlen(s));
        free(s);
    }
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

int32_t rules_report_count(const struct rules_report *rep, enum rules_outcome outcome, const char *rule)
{
    int32_t n = 0;
    for (int32_t i = 0; i < rep->n; i++)
        if (rep->d[i].outcome == outcome && (!rule || rules_same_name(rep->d[i].rule, rule)))
            n++;
    return n;
}

void rules_report_free(struct rules_report *rep)
{
    for (int32_t i = 0; i < rep->n; i++) {
        free(rep->d[i].covers);
        free(rep->d[i].why);
    }
    free(rep->d);
    memset(rep, 0, sizeof *rep);
}

/* Room for one more decision in rep; the new slot. */
static struct rules_decision *report_slot(struct rules_report *rep)
{
    if (rep->n == rep->cap) {
        rep->cap = rep->cap ? rep->cap * 2 : 64;
        rep->d = realloc(rep->d, sizeof *rep->d * (size_t)rep->cap);
        if (!rep->d)
            abort();
    }
    return &rep->d[rep->n++];
}

void rules_report_take(struct rules_report *rep, struct rules_decision d)
{
    *report_slot(rep) = d;
}

void rules_report_push(struct rules_report *rep, const char *rule, enum ir_class cls, const int32_t *covers,
                       int32_t ncovers, enum rules_outcome outcome, const char *why)
{
    struct rules_decision *d = report_slot(rep);
    d->rule = rule;
    d->cls = cls;
    d->ncovers = ncovers;
    d->covers = malloc(sizeof *d->covers * (size_t)(ncovers ? ncovers : 1));
    if (!d->covers)
        abort();
    if (ncovers)
        memcpy(d->covers, covers, sizeof *covers * (size_t)ncovers);
    qsort(d->covers, (size_t)ncovers, sizeof *d->covers, rules_cmp_i32);
    d->outcome = outcome;
    d->why = why ? strdup(why) : NULL;
    d->code = NULL;
}

bool rules_report_repeats(const struct rules_report *rep, const char *rule, enum ir_class cls, const int32_t *covers,
                          int32_t ncovers, enum rules_outcome outcome, const char *why)
{
    if (rep->n == 0)
        return false;
    const struct rules_decision *d = &rep->d[rep->n - 1];
    if (!rules_same_name(d->rule, rule) || d->cls != cls || d->outcome != outcome || d->ncovers != ncovers)
        return false;
    if ((d->why == NULL) != (why == NULL) || (why && strcmp(d->why, why) != 0))
        return false;
    for (int32_t i = 0; i < ncovers; i++)
        if (d->covers[i] != covers[i])
            return false;
    return true;
}

/* ── Reading a report back from its lines ────────────────────────────────────────────────────────────────── */

/* The longest report line read back (a fused op's covers can run to thousands of op numbers). */
#define REPORT_LINE_MAX ((size_t)1 << 20)

/* The lane point whose chip rules name what a report may say beyond the shared table (its chip rules are one static
 * table, whatever its knobs). */
static const char chip_rule_source[] = "cuda-lane:h100:dequant";

/* What a parse reads from: the line, its number, and the chip rules' names once looked up. */
struct line_reader {
    const char *p, *end;
    int32_t number;
    char *err;
    struct shim *chips; /* looked up at the first name the shared table lacks */
    bool chips_tried;
};

/* Fail with "report line N: what" (printf-style). */
__attribute__((format(printf, 2, 3))) static int line_fail(struct line_reader *r, const char *fmt, ...)
{
    char what[IR_ERR_LEN - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(r->err, IR_ERR_LEN, "report line %d: %s", (int)r->number, what);
    return -1;
}

/* The static name of the step a report calls `s` (n bytes): a shared rule's, the numerics fold's or a chip rule's;
 * NULL when fusecheck knows none by that name. */
static const char *step_name(struct line_reader *r, const char *s, size_t n)
{
    char name[128];
    if (n == 0 || n >= sizeof name)
        return NULL;
    memcpy(name, s, n);
    name[n] = '\0';
    const struct rules_rule *rule = rules_find(name);
    if (rule)
        return rule->name;
    if (strcmp(name, rules_rule_fused_quant.name) == 0)
        return rules_rule_fused_quant.name;
    if (!r->chips_tried) {
        char err[IR_ERR_LEN];
        r->chips = shim_lookup(chip_rule_source, err);
        r->chips_tried = true;
    }
    for (int i = 0; r->chips && i < r->chips->nrules; i++)
        if (strcmp(r->chips->rules[i].name, name) == 0)
            return r->chips->rules[i].name;
    return NULL;
}

/* The static code string a refusal's code `s` (n bytes) names: the optimizer's own or one the lane gives; NULL when
 * fusecheck knows no such code. */
static const char *known_code(const char *s, size_t n)
{
    if (n == sizeof parts_code - 1 && memcmp(s, parts_code, n) == 0)
        return parts_code;
    int count;
    const struct shim_reason *reasons = shim_lane_reasons(&count);
    for (int i = 0; i < count; i++)
        if (strlen(reasons[i].code) == n && memcmp(reasons[i].code, s, n) == 0)
            return reasons[i].code;
    return NULL;
}

/* Whether byte c may stand in a report line: printable, no control byte. */
static bool line_byte(unsigned char c) { return c >= 0x20 && c != 0x7f; }

/* Read one op number of a decision's covers as "%d" prints it (no sign, no leading zero) at *p; 0, or -1. */
static int read_cover(struct line_reader *r, const char **p, int32_t *out)
{
    const char *s = *p;
    if (s >= r->end || *s < '0' || *s > '9')
        return line_fail(r, "expected an op number in the covers");
    if (*s == '0' && s + 1 < r->end && s[1] >= '0' && s[1] <= '9')
        return line_fail(r, "an op number with a leading zero");
    int64_t v = 0;
    for (; s < r->end && *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v > INT32_MAX)
            return line_fail(r, "an op number past %d", INT32_MAX);
    }
    *out = (int32_t)v;
    *p = s;
    return 0;
}

/* Read "[a, b, ...] " at *p into d's covers (ascending, each once). 0, or -1. */
static int read_covers(struct line_reader *r, const char **p, struct rules_decision *d)
{
    const char *s = *p;
    if (s >= r->end || *s != '[')
        return line_fail(r, "expected '[' and the covered ops");
    s++;
    struct rules_list l = {0};
    while (s < r->end && *s != ']') {
        if (l.n && (r->end - s < 2 || s[0] != ',' || s[1] != ' ')) {
            rules_list_free(&l);
            return line_fail(r, "expected ', ' or ']' in the covers");
        }
        s += l.n ? 2 : 0;
        int32_t v = 0;
        if (read_cover(r, &s, &v)) {
            rules_list_free(&l);
            return -1;
        }
        if (l.n && v < l.v[l.n - 1]) { /* an op a rewrite copies (recomputed) is covered once per copy */
            int32_t before = l.v[l.n - 1];
            rules_list_free(&l);
            return line_fail(r, "covers must not descend: %d after %d", (int)v, (int)before);
        }
        rules_list_push(&l, v);
    }
    if (r->end - s < 2 || s[0] != ']' || s[1] != ' ') {
        rules_list_free(&l);
        return line_fail(r, "expected '] ' after the covers");
    }
    d->covers = rules_xmalloc(sizeof *d->covers * (size_t)(l.n ? l.n : 1));
    if (l.n)
        memcpy(d->covers, l.v, sizeof *l.v * (size_t)l.n);
    d->ncovers = l.n;
    rules_list_free(&l);
    *p = s + 2;
    return 0;
}

/* Read the outcome at s to the line's end: "fired", "held", or "refused: <why>[ {<code>}]". 0, or -1. */
static int read_outcome(struct line_reader *r, const char *s, struct rules_decision *d)
{
    size_t n = (size_t)(r->end - s);
    if (n == 5 && memcmp(s, "fired", 5) == 0) {
        d->outcome = RULES_FIRED;
        return 0;
    }
    if (n == 4 && memcmp(s, "held", 4) == 0) {
        d->outcome = RULES_HELD;
        return 0;
    }
    static const char refused[] = "refused: ";
    if (n < sizeof refused - 1 || memcmp(s, refused, sizeof refused - 1) != 0)
        return line_fail(r, "expected 'fired', 'held' or 'refused: <why>' after the covers");
    d->outcome = RULES_REFUSED;
    const char *why = s + sizeof refused - 1, *why_end = r->end;
    /* A line ending in '}' carries its code after the reason's last " {". */
    if (why_end > why && why_end[-1] == '}') {
        const char *open = NULL;
        for (const char *q = why_end - 2; q > why && !open; q--)
            if (q[-1] == ' ' && q[0] == '{')
                open = q;
        if (!open)
            return line_fail(r, "a line ending in '}' carries a code: expected ' {<code>}'");
        d->code = known_code(open + 1, (size_t)(why_end - 1 - (open + 1)));
        if (!d->code)
            return line_fail(r, "unknown reason code '%.*s'", (int)(why_end - 1 - (open + 1)) > 200 ? 200
                                                                : (int)(why_end - 1 - (open + 1)), open + 1);
        why_end = open - 1;
    }
    d->why = rules_xmalloc((size_t)(why_end - why) + 1);
    memcpy(d->why, why, (size_t)(why_end - why));
    d->why[why_end - why] = '\0';
    return 0;
}

/* Read one decision from the line [r->p, r->end). 0, or -1 with d's allocations freed. */
static int read_decision(struct line_reader *r, struct rules_decision *d)
{
    memset(d, 0, sizeof *d);
    const char *s = r->p;
    for (const char *q = s; q < r->end; q++)
        if (!line_byte((unsigned char)*q))
            return line_fail(r, "a control byte (0x%02x) at column %d", (unsigned)(unsigned char)*q,
                             (int)(q - s) + 1);
    const char *sp = memchr(s, ' ', (size_t)(r->end - s));
    if (!sp)
        return line_fail(r, "expected '<rule> <class> [<covers>] <outcome>'");
    d->rule = step_name(r, s, (size_t)(sp - s));
    if (!d->rule)
        return line_fail(r, "unknown rule '%.*s'", (int)(sp - s) > 120 ? 120 : (int)(sp - s), s);
    s = sp + 1;
    sp = memchr(s, ' ', (size_t)(r->end - s));
    int cls = sp ? ir_class_lookup(s, (size_t)(sp - s)) : -1;
    if (cls < 0)
        return line_fail(r, "unknown class '%.*s'", sp ? ((int)(sp - s) > 120 ? 120 : (int)(sp - s)) : 0, s);
    d->cls = (enum ir_class)cls;
    s = sp + 1;
    if (read_covers(r, &s, d) || read_outcome(r, s, d)) {
        free(d->covers);
        free(d->why);
        return -1;
    }
    return 0;
}

int rules_report_parse(const char *text, size_t len, struct rules_report *rep, char err[IR_ERR_LEN])
{
    memset(rep, 0, sizeof *rep);
    err[0] = '\0';
    struct line_reader r = {.err = err};
    const char *p = text, *end = text + len;
    int rc = 0;
    while (p < end && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        r.p = p;
        r.end = nl ? nl : end;
        r.number++;
        p = nl ? nl + 1 : end;
        struct rules_decision d;
        if ((size_t)(r.end - r.p) > REPORT_LINE_MAX)
            rc = line_fail(&r, "longer than %zu bytes", REPORT_LINE_MAX);
        else if (r.end == r.p)
            rc = line_fail(&r, "an empty line");
        else if (r.number == 1 && r.end - r.p == 10 && memcmp(r.p, "seed-rules", 10) == 0)
            rep->seed_rules = true;
        else if ((rc = read_decision(&r, &d)) == 0)
            rules_report_take(rep, d);
    }
    shim_free(r.chips);
    if (rc)
        rules_report_free(rep);
    return rc;
}
