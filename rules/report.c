/* rules/report.c — the report of every decision, its lines and its sha256 digest. */
#include "rules.h"

#include <openssl/evp.h>
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
        return "supports.parts";
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
