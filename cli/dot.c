/* cli/dot.c — an optimization as a Graphviz picture (`fusecheck dot`): the lifted ops as nodes joined by the
 * activations they pass, each op of the rewritten graph that fuses several of them a cluster around them coloured by
 * its class and labelled with the rule that made it, each refusal a dashed note carrying the chip's reason. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "rules/rules.h"

/* Pale fill colours for clusters, picked by class so one class has one colour in every picture. */
static const char *const palette[] = {"#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc", "#d9d2e9", "#fce5cd",
                                      "#d0e0e3", "#ead1dc", "#e6e6e6", "#c9daf8", "#b6d7a8", "#ffe599"};
#define PALETTE ((int)(sizeof palette / sizeof palette[0]))

/* Write s as the inside of a double-quoted Graphviz string. */
static void put_escaped(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
}

/* What a lifted op is, in a word: its primitive's kind, or its symbol's. */
static const char *op_word(const struct ir_op *op)
{
    static const char *const syms[] = {"prim", "fused", "view", "quantize"};
    if (op->sym == IR_SYM_PRIM)
        return ir_kind_name(op->spec.kind);
    if (op->sym == IR_SYM_FUSED)
        return ir_class_name(op->cls);
    return (unsigned)op->sym < 4 ? syms[op->sym] : "?";
}

/* Whether two cover lists are the same ops. */
static bool same_covers(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, sizeof *a * (size_t)na) == 0);
}

/* The rule that fired to make a rewritten op: the last fired decision with its covers (NULL when none did). */
static const char *maker_of(const struct rules_report *rep, const struct ir_op *op)
{
    const char *rule = NULL;
    for (int32_t i = 0; i < rep->n; i++)
        if (rep->d[i].outcome == RULES_FIRED && same_covers(rep->d[i].covers, rep->d[i].ncovers, op->covers, op->ncovers))
            rule = rep->d[i].rule;
    return rule;
}

/* One lifted op as a node: its index, what it is, what it writes. */
static void put_node(FILE *f, const struct ir_graph *g, int32_t i, const char *indent)
{
    const struct ir_op *op = &g->ops[i];
    fprintf(f, "%sop%d [label=\"%d %s\\n", indent, (int)i, (int)i, op_word(op));
    put_escaped(f, op->out >= 0 && op->out < g->ntensors ? g->tensors[op->out].name : "");
    fprintf(f, "\"];\n");
}

/* The fill colour of a cluster around rewritten op `op`: its class's, or the last one's for an op of no fused class. */
static const char *cluster_colour(const struct ir_op *op)
{
    return palette[(op->sym == IR_SYM_FUSED ? (int)op->cls : PALETTE - 1) % PALETTE];
}

/* The clusters: each rewritten op fusing more than one lifted op (or of a fused class), around the ops it covers;
 * mark[i] is set for every lifted op put in one, shown[c] for every fused class c a cluster shows (shown[
 * IR_CLASS_COUNT]: an op of no fused class). */
static void put_clusters(FILE *f, const struct ir_graph *g, const struct rules_optimized *o, bool *mark, bool *shown)
{
    const struct ir_graph *rw = o->graph;
    for (int32_t j = 0; j < rw->nops; j++) {
        const struct ir_op *op = &rw->ops[j];
        if (op->ncovers < 2 && op->sym != IR_SYM_FUSED)
            continue;
        const char *rule = maker_of(&o->report, op);
        shown[op->sym == IR_SYM_FUSED && op->cls < IR_CLASS_COUNT ? (int)op->cls : IR_CLASS_COUNT] = true;
        fprintf(f, "  subgraph cluster_%d {\n    label=\"%s%s%s\"; style=filled; fillcolor=\"%s\"; fontsize=11;\n",
                (int)j, op->sym == IR_SYM_FUSED ? ir_class_name(op->cls) : op_word(op), rule ? " by " : "",
                rule ? rule : "", cluster_colour(op));
        for (int32_t k = 0; k < op->ncovers; k++) {
            int32_t i = op->covers[k];
            if (i < 0 || i >= g->nops || mark[i])
                continue;
            mark[i] = true;
            put_node(f, g, i, "    ");
        }
        fprintf(f, "  }\n");
    }
}

/* The edges: each activation a lifted op writes, to every later op reading it (constants and inputs left out). */
static void put_edges(FILE *f, const struct ir_graph *g)
{
    int32_t *writer = malloc(sizeof *writer * (size_t)(g->ntensors ? g->ntensors : 1));
    if (!writer)
        abort();
    for (int32_t t = 0; t < g->ntensors; t++)
        writer[t] = -1;
    for (int32_t i = 0; i < g->nops; i++) {
        const struct ir_op *op = &g->ops[i];
        for (int32_t k = 0; k < op->nins; k++) {
            ir_tid t = op->ins[k];
            if (t < 0 || t >= g->ntensors || writer[t] < 0)
                continue;
            fprintf(f, "  op%d -> op%d [label=\"", (int)writer[t], (int)i);
            put_escaped(f, g->tensors[t].name);
            fprintf(f, "\", fontsize=8];\n");
        }
        if (op->out >= 0 && op->out < g->ntensors)
            writer[op->out] = i;
    }
    free(writer);
}

/* The refusals: a dashed note for each (rule, covers, reason), joined by dashed lines to the ops it would have
 * fused, one line an op (covers name a recomputed op once a copy). */
static void put_refusals(FILE *f, const struct ir_graph *g, const struct rules_report *rep)
{
    for (int32_t i = 0; i < rep->n; i++) {
        const struct rules_decision *d = &rep->d[i];
        if (d->outcome != RULES_REFUSED)
            continue;
        fprintf(f, "  refused%d [shape=note, style=dashed, fontsize=9, label=\"%s refused: ", (int)i, d->rule);
        put_escaped(f, d->why);
        fprintf(f, "\"];\n");
        for (int32_t k = 0; k < d->ncovers; k++)
            if (d->covers[k] >= 0 && d->covers[k] < g->nops && (k == 0 || d->covers[k] != d->covers[k - 1]))
                fprintf(f, "  refused%d -> op%d [style=dashed, arrowhead=none, color=gray50];\n", (int)i,
                        (int)d->covers[k]);
    }
}

/* The legend, a cluster of its own: each colour the picture's clusters use with its class, a lifted op left unfused,
 * an edge's activation and a refusal's note. */
static void put_legend(FILE *f, const bool *shown)
{
    fprintf(f, "  subgraph cluster_legend {\n    label=\"legend\"; style=rounded; fontsize=11;\n");
    fprintf(f, "    node [fontsize=9];\n");
    for (int c = 0; c <= IR_CLASS_COUNT; c++) {
        if (!shown[c])
            continue;
        struct ir_op like = {.sym = c < IR_CLASS_COUNT ? IR_SYM_FUSED : IR_SYM_PRIM, .cls = (enum ir_class)(c % IR_CLASS_COUNT)};
        fprintf(f, "    legend_class%d [label=\"%s: the lifted ops one rewritten op fuses\", style=filled, "
                   "fillcolor=\"%s\"];\n",
                c, c < IR_CLASS_COUNT ? ir_class_name((enum ir_class)c) : "no fused class", cluster_colour(&like));
    }
    fprintf(f, "    legend_op [label=\"lifted op left as it is: index, kind, what it writes\"];\n");
    fprintf(f, "    legend_reader [label=\"a later op\"];\n");
    fprintf(f, "    legend_op -> legend_reader [label=\"the activation it reads\", fontsize=8];\n");
    fprintf(f, "    legend_refused [shape=note, style=dashed, label=\"RULE refused: the chip's reason (dashed lines: "
               "the ops it would have fused)\"];\n");
    fprintf(f, "  }\n");
}

int cli_dot_text(const struct ir_graph *g, const char *shim, const struct rules_optimized *o, char **text,
                 size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = open_memstream(text, len);
    if (!f)
        return 1;
    bool *mark = calloc((size_t)(g->nops ? g->nops : 1), sizeof *mark), shown[IR_CLASS_COUNT + 1] = {false};
    if (!mark)
        abort();
    fprintf(f, "digraph fusecheck {\n  graph [fontname=\"Helvetica\", labelloc=t, label=\"");
    put_escaped(f, g->name ? g->name : "graph");
    fprintf(f, " %s under ", g->mode ? g->mode : "");
    put_escaped(f, shim);
    fprintf(f, ": %d lifted ops, %d after; %d fired, %d refused, %d held\"];\n", (int)g->nops, (int)o->graph->nops,
            (int)rules_report_count(&o->report, RULES_FIRED, NULL),
            (int)rules_report_count(&o->report, RULES_REFUSED, NULL),
            (int)rules_report_count(&o->report, RULES_HELD, NULL));
    fprintf(f, "  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n");
    put_clusters(f, g, o, mark, shown);
    for (int32_t i = 0; i < g->nops; i++)
        if (!mark[i])
            put_node(f, g, i, "  ");
    put_edges(f, g);
    put_refusals(f, g, &o->report);
    put_legend(f, shown);
    fprintf(f, "}\n");
    free(mark);
    return fclose(f) != 0;
}
