/* ir/format.c — fusecheck's text format: the canonical printer and the line-based parser (see docs/format.md).
 *
 * The printer writes one declaration a line in a fixed order and spacing, so that printing a graph, parsing that
 * text and printing again gives the same bytes. The parser reads the text line by line without copying it, checks
 * every byte before it reads a line, bounds every number, name, list and nesting level, and reports the first error
 * as "file:line:col: message". Field syntax is driven by the spec field tables of ir.h. */
#include "ir.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(enum ir_ewop) == sizeof(int), "enum spec fields are stored as int");
_Static_assert(sizeof(enum ir_moeact) == sizeof(int), "enum spec fields are stored as int");
_Static_assert(sizeof(enum ir_gateact) == sizeof(int), "enum spec fields are stored as int");
_Static_assert(sizeof(enum ir_normkind) == sizeof(int), "enum spec fields are stored as int");

/* The keywords of op symbols other than primitives ("fused", "view", "quantize"), by enum ir_sym. */
static const char *const sym_names[] = {
#define X(e, s) s,
    IR_SYM_NAMES(X)
#undef X
};

/* Longest piece of an offending token quoted in a message. */
#define QUOTE_MAX 48
/* Longest number token the parser converts (a longer one is an error, not a silent truncation). */
#define NUM_MAX 512
/* Most tensors, and most top-level ops, one graph's text may declare (keeps every count far from overflow). */
#define IR_MAX_DECLS (1 << 28)

/* ── Enumerated field values ─────────────────────────────────────────────────────────────────────────────── */

/* The name of an enum value, and the value of a name (-1 when unknown), for one enum-typed spec field. */
struct enum_table {
    const char *(*name)(int v);
    int (*lookup)(const char *s, size_t n);
};

/* Names of the elementwise operators, mixture activations and gate activations, by int. */
static const char *ewop_name(int v) { return ir_ewop_name((enum ir_ewop)v); }
static const char *moeact_name(int v) { return ir_moeact_name((enum ir_moeact)v); }
static const char *gateact_name(int v) { return ir_gateact_name((enum ir_gateact)v); }
static const char *normkind_name(int v) { return ir_normkind_name((enum ir_normkind)v); }
static const char *ropescale_name(int v) { return ir_ropescale_name((enum ir_ropescale)v); }

static const struct enum_table ewop_table = {ewop_name, ir_ewop_lookup};
static const struct enum_table moeact_table = {moeact_name, ir_moeact_lookup};
static const struct enum_table gateact_table = {gateact_name, ir_gateact_lookup};
static const struct enum_table normkind_table = {normkind_name, ir_normkind_lookup};
static const struct enum_table ropescale_table = {ropescale_name, ir_ropescale_lookup};

/* ── Output buffer ───────────────────────────────────────────────────────────────────────────────────────── */

/* Text being printed; once an allocation fails, oom stays set and nothing more is written. */
struct out {
    char *p;
    size_t n, cap;
    bool oom;
};

/* Append n bytes. */
static void out_bytes(struct out *o, const char *s, size_t n)
{
    if (o->oom)
        return;
    if (n >= o->cap - o->n) {
        size_t cap = o->cap ? o->cap : 256;
        while (n >= cap - o->n) {
            if (cap > SIZE_MAX / 2) {
                o->oom = true;
                return;
            }
            cap *= 2;
        }
        char *q = realloc(o->p, cap);
        if (!q) {
            o->oom = true;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
    o->p[o->n] = '\0';
}

/* Append a NUL-terminated string. */
static void out_str(struct out *o, const char *s) { out_bytes(o, s, strlen(s)); }

/* Append a decimal integer (digits written from the right, without printf: the printer's hottest call). */
static void out_int(struct out *o, int64_t v)
{
    char buf[24];
    size_t at = sizeof buf;
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        buf[--at] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0)
        buf[--at] = '-';
    out_bytes(o, buf + at, sizeof buf - at);
}

/* Append 4 spaces a nesting level. */
static void out_indent(struct out *o, int level)
{
    for (int i = 0; i < level; i++)
        out_str(o, "    ");
}

/* Hand the text over (NULL when an allocation failed); *len receives its length. */
static char *out_finish(struct out *o, size_t *len)
{
    if (!o->oom && !o->p)
        out_bytes(o, "", 0);
    if (o->oom) {
        free(o->p);
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = o->n;
    return o->p;
}

/* ── Printing ────────────────────────────────────────────────────────────────────────────────────────────── */

/* The name of tensor t, or "?" when t is not one of g's tensors. */
static const char *tname(const struct ir_graph *g, ir_tid t)
{
    return t >= 0 && t < g->ntensors && g->tensors[t].name ? g->tensors[t].name : "?";
}

/* Append the shortest decimal that reads back to exactly v (inf and nan by name). */
static void print_float(struct out *o, double v)
{
    if (isnan(v)) {
        out_str(o, signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        out_str(o, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (memcmp(&back, &v, sizeof v) == 0)
            break;
    }
    out_str(o, buf);
}

/* Append "pitch:offset:width". */
static void print_strided(struct out *o, const struct ir_strided *s)
{
    out_int(o, s->pitch);
    out_str(o, ":");
    out_int(o, s->offset);
    out_str(o, ":");
    out_int(o, s->width);
}

/* Append "(a, b[pitch:offset:width], ...)". */
static void print_operands(struct out *o, const struct ir_graph *g, const struct ir_op *op)
{
    out_str(o, "(");
    for (int32_t i = 0; i < op->nins; i++) {
        if (i)
            out_str(o, ", ");
        out_str(o, tname(g, op->ins[i]));
        if (op->access && op->access[i].strided) {
            out_str(o, "[");
            print_strided(o, &op->access[i].s);
            out_str(o, "]");
        }
    }
    out_str(o, ")");
}

/* Append " name=" for a field. */
static void print_key(struct out *o, const struct ir_field *f)
{
    out_str(o, " ");
    out_str(o, f->name);
    out_str(o, "=");
}

/* Field printers, one a field type: each appends " name=value" (or " name" for a flag) when the field shows. */

/* An int field; an optional one only when non-zero. */
static void print_f_int(struct out *o, const struct ir_field *f, const void *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    if (f->type == IR_F_INT_OPT && v == 0)
        return;
    print_key(o, f);
    out_int(o, v);
}

/* A float field. */
static void print_f_float(struct out *o, const struct ir_field *f, const void *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    print_key(o, f);
    print_float(o, v);
}

/* An optional float, only when present. */
static void print_f_optf(struct out *o, const struct ir_field *f, const void *p)
{
    struct ir_optf v;
    memcpy(&v, p, sizeof v);
    if (v.has)
        print_f_float(o, f, (const char *)p + offsetof(struct ir_optf, v));
}

/* A flag, as its bare name when true. */
static void print_f_flag(struct out *o, const struct ir_field *f, const void *p)
{
    bool v;
    memcpy(&v, p, sizeof v);
    if (v) {
        out_str(o, " ");
        out_str(o, f->name);
    }
}

/* The enum table of an enum-typed field. */
static const struct enum_table *enum_of(enum ir_field_type t)
{
    return t == IR_F_EWOP        ? &ewop_table
           : t == IR_F_MOEACT    ? &moeact_table
           : t == IR_F_NORMKIND  ? &normkind_table
           : t == IR_F_ROPESCALE ? &ropescale_table
                                 : &gateact_table;
}

/* An enum field, by its value's name. */
static void print_f_enum(struct out *o, const struct ir_field *f, const void *p)
{
    int v;
    memcpy(&v, p, sizeof v);
    print_key(o, f);
    out_str(o, enum_of(f->type)->name(v));
}

/* An optional enum field: nothing for its table's first row (the default), else as print_f_enum. */
static void print_f_enum_opt(struct out *o, const struct ir_field *f, const void *p)
{
    int v;
    memcpy(&v, p, sizeof v);
    if (v != 0)
        print_f_enum(o, f, p);
}

/* A row index: its literal row or "named"; nothing when absent. */
static void print_f_rowidx(struct out *o, const struct ir_field *f, const void *p)
{
    struct ir_rowidx v;
    memcpy(&v, p, sizeof v);
    if (v.kind == IR_RIDX_NONE)
        return;
    print_key(o, f);
    if (v.kind == IR_RIDX_NAMED)
        out_str(o, "named");
    else
        out_int(o, v.literal);
}

/* A field type's printer and parser (the parsers are defined with the parser below). */
struct parser;
typedef void (*field_print_fn)(struct out *o, const struct ir_field *f, const void *p);
typedef int (*field_parse_fn)(struct parser *P, const struct ir_field *f, void *p);

static int parse_f_int(struct parser *P, const struct ir_field *f, void *p);
static int parse_f_float(struct parser *P, const struct ir_field *f, void *p);
static int parse_f_optf(struct parser *P, const struct ir_field *f, void *p);
static int parse_f_flag(struct parser *P, const struct ir_field *f, void *p);
static int parse_f_enum(struct parser *P, const struct ir_field *f, void *p);
static int parse_f_rowidx(struct parser *P, const struct ir_field *f, void *p);

/* How each field type prints and parses, whether it must be given, and whether it takes "=value". */
static const struct field_codec {
    field_print_fn print;
    field_parse_fn parse;
    bool required;
    bool valued;
} codecs[] = {
    [IR_F_INT] = {print_f_int, parse_f_int, true, true},
    [IR_F_INT_OPT] = {print_f_int, parse_f_int, false, true},
    [IR_F_FLOAT] = {print_f_float, parse_f_float, true, true},
    [IR_F_FLOAT_OPT] = {print_f_optf, parse_f_optf, false, true},
    [IR_F_FLAG] = {print_f_flag, parse_f_flag, false, false},
    [IR_F_EWOP] = {print_f_enum, parse_f_enum, true, true},
    [IR_F_MOEACT] = {print_f_enum, parse_f_enum, true, true},
    [IR_F_GATEACT] = {print_f_enum, parse_f_enum, true, true},
    [IR_F_NORMKIND] = {print_f_enum_opt, parse_f_enum, false, true},
    [IR_F_ROPESCALE] = {print_f_enum_opt, parse_f_enum, false, true},
    [IR_F_ROWIDX] = {print_f_rowidx, parse_f_rowidx, true, true},
    [IR_F_ROWIDX_OPT] = {print_f_rowidx, parse_f_rowidx, false, true},
};

/* The one field of a view ("offset") and of a quantize ("words"), parsed into an int64_t. */
static const struct ir_field view_fields[] = {{"offset", IR_F_INT, 0}};
static const struct ir_field quant_fields[] = {{"words", IR_F_INT, 0}};

/* Append a primitive op's fields in table order. */
static void print_fields(struct out *o, const struct ir_spec *spec)
{
    int n;
    const struct ir_field *f = ir_spec_fields(spec->kind, &n);
    for (int i = 0; i < n; i++)
        codecs[f[i].type].print(o, &f[i], (const char *)spec + f[i].offset);
}

/* Whether op's destination is its result's own buffer. */
static bool dst_own(const struct ir_op *op)
{
    return op->dst.buf == op->out && op->dst.row == IR_ROWSEL_NONE && !op->dst.has_unit;
}

/* Append " -> buf [row(r, cols)] [unit(p:o:w)]" unless the destination is the result's own buffer. */
static void print_dst(struct out *o, const struct ir_graph *g, const struct ir_op *op)
{
    const struct ir_dst *d = &op->dst;
    if (dst_own(op))
        return;
    out_str(o, " -> ");
    out_str(o, tname(g, d->buf));
    if (d->row != IR_ROWSEL_NONE) {
        out_str(o, " row(");
        if (d->row == IR_ROWSEL_FIXED)
            out_int(o, d->row_fixed);
        else
            out_str(o, tname(g, d->row_param));
        out_str(o, ", ");
        out_int(o, d->row_cols);
        out_str(o, ")");
    }
    if (d->has_unit) {
        out_str(o, " unit(");
        print_strided(o, &d->unit);
        out_str(o, ")");
    }
}

/* Whether a top-level op's covers are exactly {its own index}, the default its text omits. */
static bool covers_default(const struct ir_op *op, int32_t index)
{
    return op->ncovers == 1 && op->covers[0] == index;
}

/* Append the tail: destination, keeps, covers. `index` is a top-level op's index, or -1 for a part. */
static void print_tail(struct out *o, const struct ir_graph *g, const struct ir_op *op, int32_t index)
{
    print_dst(o, g, op);
    for (int32_t i = 0; i < op->nkeeps; i++) {
        out_str(o, i ? ", " : " keep ");
        out_str(o, tname(g, op->keeps[i]));
    }
    if (index >= 0 ? covers_default(op, index) : op->ncovers == 0)
        return;
    if (op->ncovers == 0)
        out_str(o, " covers -");
    for (int32_t i = 0; i < op->ncovers; i++) {
        out_str(o, i ? ", " : " covers ");
        out_int(o, op->covers[i]);
    }
}

/* Append the head of a non-fused op: "op out = kind(ins) fields". */
static void print_op_head(struct out *o, const struct ir_graph *g, const struct ir_op *op)
{
    out_str(o, "op ");
    out_str(o, tname(g, op->out));
    out_str(o, " = ");
    if (op->sym == IR_SYM_PRIM) {
        out_str(o, ir_kind_name(op->spec.kind));
        print_operands(o, g, op);
        print_fields(o, &op->spec);
    } else if (op->sym == IR_SYM_VIEW) {
        out_str(o, sym_names[IR_SYM_VIEW]);
        print_operands(o, g, op);
        out_str(o, " offset=");
        out_int(o, op->view_offset);
    } else {
        out_str(o, sym_names[IR_SYM_QUANT]);
        print_operands(o, g, op);
        out_str(o, " words=");
        out_int(o, op->quant_words);
    }
}

/* Append an op (a fused one as its block of parts) at `level`; `index` as for print_tail. */
static void print_op(struct out *o, const struct ir_graph *g, const struct ir_op *op, int level, int32_t index)
{
    out_indent(o, level);
    if (op->sym != IR_SYM_FUSED) {
        print_op_head(o, g, op);
        print_tail(o, g, op, index);
        out_str(o, "\n");
        return;
    }
    out_str(o, sym_names[IR_SYM_FUSED]);
    out_str(o, " ");
    out_str(o, ir_class_name(op->cls));
    out_str(o, " ");
    out_str(o, tname(g, op->out));
    out_str(o, " = ");
    print_operands(o, g, op);
    print_tail(o, g, op, index);
    out_str(o, " {\n");
    for (int32_t i = 0; i < op->nparts; i++)
        print_op(o, g, &op->parts[i], level + 1, -1);
    out_indent(o, level);
    out_str(o, "}\n");
}

/* Append a tensor declaration line. */
static void print_tensor(struct out *o, const struct ir_tensor *t)
{
    out_str(o, "tensor ");
    out_str(o, t->name ? t->name : "?");
    out_str(o, " ");
    out_str(o, ir_elem_name(t->elem));
    out_str(o, " ");
    out_int(o, t->rows);
    out_str(o, "x");
    out_int(o, t->cols);
    out_str(o, " ");
    out_str(o, ir_role_name(t->role));
    if (t->checkpoint) {
        out_str(o, " ");
        out_str(o, ir_format_name(t->format));
        if (t->transposed)
            out_str(o, " transposed");
    }
    if (t->observed)
        out_str(o, " observed");
    if (t->carried)
        out_str(o, " carried");
    if (t->next)
        out_str(o, " next");
    if (t->tied)
        out_str(o, " tied");
    out_str(o, "\n");
}

/* Whether a graph attribute is set (NULL and "" are unset). */
static bool meta_set(const char *s) { return s && *s; }

/* Append the graph header line, when the graph has a name, family or mode. */
static void print_header(struct out *o, const struct ir_graph *g)
{
    if (!meta_set(g->name) && !meta_set(g->family) && !meta_set(g->mode))
        return;
    out_str(o, "graph");
    if (meta_set(g->name)) {
        out_str(o, " ");
        out_str(o, g->name);
    }
    if (meta_set(g->family)) {
        out_str(o, " family=");
        out_str(o, g->family);
    }
    if (meta_set(g->mode)) {
        out_str(o, " mode=");
        out_str(o, g->mode);
    }
    out_str(o, "\n");
}

char *ir_print(const struct ir_graph *g, size_t *len)
{
    struct out o = {0};
    print_header(&o, g);
    for (int32_t i = 0; i < g->ntensors; i++)
        print_tensor(&o, &g->tensors[i]);
    for (int32_t i = 0; i < g->nops; i++)
        print_op(&o, g, &g->ops[i], 0, i);
    return out_finish(&o, len);
}

char *ir_print_op(const struct ir_graph *g, const struct ir_op *op)
{
    struct out o = {0};
    print_op(&o, g, op, 0, -1);
    if (!o.oom && o.n)
        o.p[--o.n] = '\0'; /* no final newline: callers embed it in their own lines */
    return out_finish(&o, NULL);
}

/* ── Parser state and errors ─────────────────────────────────────────────────────────────────────────────── */

/* Where a declaration starts. */
struct pos {
    size_t line, col;
};

/* The parse in progress: the text, the current line (start, end of its content, cursor), the graph being built,
 * and where each tensor and top-level op was declared (so validation errors can name their line). */
struct parser {
    const char *file;
    const char *end;  /* one past the text */
    const char *next; /* start of the line after the current one */
    size_t line;      /* the current line, 1-based */
    const char *ls;   /* the current line's start */
    const char *le;   /* end of its content: before any comment, line end and trailing blanks */
    const char *p;    /* the cursor */
    char *err;
    char scratch[IR_ERR_LEN]; /* the message buffer when the caller gives none */
    const char *last_value;   /* where the last field's value began */
    bool failed;
    bool any_decl;    /* a declaration was read (the graph header must come first) */
    struct ir_graph *g;
    struct pos *tpos, *opos;
    int32_t tpos_cap, opos_cap;
};

/* Record an error at a line and column (only the first is kept). Returns -1. */
static int fail_pos(struct parser *P, size_t line, size_t col, const char *fmt, ...)
{
    if (P->failed)
        return -1;
    P->failed = true;
    int n = snprintf(P->err, IR_ERR_LEN, "%s:%zu:%zu: ", P->file, line, col);
    if (n < 0 || n >= IR_ERR_LEN)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->err + n, (size_t)(IR_ERR_LEN - n), fmt, ap);
    va_end(ap);
    return -1;
}

/* The 1-based column of a byte of the current line. */
static size_t col_of(const struct parser *P, const char *at) { return (size_t)(at - P->ls) + 1; }

/* Record an error at a byte of the current line. Returns -1. */
static int fail(struct parser *P, const char *at, const char *fmt, ...)
{
    if (P->failed)
        return -1;
    char msg[IR_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail_pos(P, P->line, col_of(P, at), "%s", msg);
}

/* Record an allocation failure. */
static int oom(struct parser *P) { return fail(P, P->p, "out of memory"); }

/* How many bytes of a token to quote, and the ellipsis that marks a cut. */
static int qlen(size_t n) { return n > QUOTE_MAX ? QUOTE_MAX : (int)n; }
static const char *qcut(size_t n) { return n > QUOTE_MAX ? "..." : ""; }

/* ── Characters and lines ────────────────────────────────────────────────────────────────────────────────── */

/* Character classes of the grammar, one bit each in a table of every byte value (computed at compile time): a class
 * test is one load, with no comparison for the fuzz build's comparison tracing to record on every byte read. */
enum {
    C_BLANK = 1,       /* ' ' '\t' */
    C_DIGIT = 2,       /* 0-9 */
    C_ALPHA = 4,       /* a-z A-Z */
    C_IDENT = 8,       /* alpha, digit, '_' */
    C_NAME_START = 16, /* alpha, '_' */
    C_NAME = 32,       /* ident, '.', '-' */
    C_WORD = 64,       /* name, ':' */
    C_NUM = 128,       /* alpha, digit, '.', '+', '-' */
};
#define CC_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define CC_ALPHA(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z'))
#define CC_IDENT(c) (CC_ALPHA(c) || CC_DIGIT(c) || (c) == '_')
#define CC_NAME(c) (CC_IDENT(c) || (c) == '.' || (c) == '-')
#define CC(c)                                                                                                          \
    (((c) == ' ' || (c) == '\t') * C_BLANK | CC_DIGIT(c) * C_DIGIT | CC_ALPHA(c) * C_ALPHA | CC_IDENT(c) * C_IDENT |  \
     (CC_ALPHA(c) || (c) == '_') * C_NAME_START | CC_NAME(c) * C_NAME | (CC_NAME(c) || (c) == ':') * C_WORD |          \
     (CC_ALPHA(c) || CC_DIGIT(c) || (c) == '.' || (c) == '+' || (c) == '-') * C_NUM)
#define CC4(c) CC(c), CC((c) + 1), CC((c) + 2), CC((c) + 3)
#define CC16(c) CC4(c), CC4((c) + 4), CC4((c) + 8), CC4((c) + 12)
static const unsigned char char_classes[256] = {CC16(0),   CC16(16),  CC16(32),  CC16(48),  CC16(64),  CC16(80),
                                                CC16(96),  CC16(112), CC16(128), CC16(144), CC16(160), CC16(176),
                                                CC16(192), CC16(208), CC16(224), CC16(240)};

/* Whether c is in one of the classes `cls` (bytes beyond ASCII are in none). */
static bool in_class(char c, unsigned cls) { return (char_classes[(unsigned char)c] & cls) != 0; }
static bool is_blank(char c) { return in_class(c, C_BLANK); }
static bool is_digit(char c) { return in_class(c, C_DIGIT); }
static bool is_name_start(char c) { return in_class(c, C_NAME_START); }

/* Whether a byte may appear outside a comment: printable ASCII and tab. */
static bool byte_ok(unsigned char c) { return c == '\t' || (c >= 0x20 && c < 0x7f); }

/* Move to the next line, checking its bytes and finding where its content ends. 1 when there is a line, 0 at the
 * end of the text, -1 on a byte the format does not allow. */
static int next_line(struct parser *P)
{
    if (P->next >= P->end)
        return 0;
    const char *ls = P->next, *nl = memchr(ls, '\n', (size_t)(P->end - ls));
    const char *stop = nl ? nl : P->end;
    P->line++;
    P->ls = ls;
    P->next = nl ? nl + 1 : P->end;
    const char *q = ls;
    for (; q < stop && *q != '#'; q++) {
        if (*q == '\r' && nl && q + 1 == nl)
            break;
        if (!byte_ok((unsigned char)*q))
            return fail(P, q, "unexpected byte 0x%02x", (unsigned)(unsigned char)*q);
    }
    while (q > ls && is_blank(q[-1]))
        q--;
    P->le = q;
    P->p = ls;
    return 1;
}

/* Skip blanks. */
static void skip_ws(struct parser *P)
{
    while (P->p < P->le && is_blank(*P->p))
        P->p++;
}

/* Whether the cursor has reached the end of the line's content. */
static bool at_eol(const struct parser *P) { return P->p >= P->le; }

/* Move to the next line that has content (blank and comment-only lines are skipped); as next_line. */
static int next_content_line(struct parser *P)
{
    for (;;) {
        int r = next_line(P);
        if (r <= 0)
            return r;
        skip_ws(P);
        if (!at_eol(P))
            return 1;
    }
}

/* Bytes from the cursor that satisfy cls. */
static size_t span(const struct parser *P, unsigned cls)
{
    const char *q = P->p;
    while (q < P->le && in_class(*q, cls))
        q++;
    return (size_t)(q - P->p);
}

/* Whether the cursor is at exactly the string s. */
static bool looking_at(const struct parser *P, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(P->le - P->p) >= n && memcmp(P->p, s, n) == 0;
}

/* Whether the cursor is at the identifier w (not a longer one). */
static bool at_word(const struct parser *P, const char *w)
{
    size_t n = span(P, C_IDENT);
    return n == strlen(w) && memcmp(P->p, w, n) == 0;
}

/* Whether the cursor is at the identifier w followed by '('. */
static bool at_call(const struct parser *P, const char *w)
{
    size_t n = strlen(w);
    return at_word(P, w) && P->p + n < P->le && P->p[n] == '(';
}

/* Whether a blank comes just before the cursor (items of a line are separated by blanks). */
static bool after_blank(const struct parser *P) { return P->p > P->ls && is_blank(P->p[-1]); }

/* Consume the character c (blanks before it skipped), else fail with msg. */
static int expect(struct parser *P, char c, const char *msg)
{
    skip_ws(P);
    if (at_eol(P) || *P->p != c)
        return fail(P, P->p, "%s", msg);
    P->p++;
    return 0;
}

/* Fail unless the line's content ends at the cursor (blanks skipped). */
static int expect_eol(struct parser *P)
{
    skip_ws(P);
    if (!at_eol(P))
        return fail(P, P->p, "expected end of line, found '%c'", *P->p);
    return 0;
}

/* ── Tokens ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* Scan a name (words also allow ':'), at most IR_MAX_NAME bytes; `what` says what was expected. */
static int scan_name(struct parser *P, bool word, const char *what, const char **s, size_t *n)
{
    skip_ws(P);
    if (at_eol(P) || !is_name_start(*P->p))
        return fail(P, P->p, "expected %s", what);
    size_t len = span(P, word ? C_WORD : C_NAME);
    if (len > IR_MAX_NAME)
        return fail(P, P->p, "name longer than %d bytes", IR_MAX_NAME);
    *s = P->p;
    *n = len;
    P->p += len;
    return 0;
}

/* Scan the name of a declared tensor; `what` says what was expected. */
static int scan_tensor(struct parser *P, const char *what, ir_tid *t)
{
    const char *s = NULL;
    size_t n = 0;
    if (scan_name(P, false, what, &s, &n))
        return -1;
    *t = ir_tensor_find(P->g, s, n);
    if (*t == IR_NONE)
        return fail(P, s, "unknown tensor '%.*s'", (int)n, s);
    return 0;
}

/* Scan a non-negative decimal integer of at most `limit`; `what` says what was expected. */
static int scan_uint(struct parser *P, int64_t limit, const char *what, int64_t *v)
{
    skip_ws(P);
    const char *s = P->p;
    size_t n = span(P, C_DIGIT);
    if (n == 0)
        return fail(P, s, "expected %s", what);
    int64_t x = 0;
    for (size_t i = 0; i < n && x <= limit; i++)
        x = x * 10 + (s[i] - '0');
    if (x > limit)
        return fail(P, s, "size %.*s%s exceeds %" PRId64, qlen(n), s, qcut(n), limit);
    P->p += n;
    *v = x;
    return 0;
}

/* Whether s[0..n) is a decimal float: -?(d+(.d*)?|.d+)([eE][+-]?d+)?. */
static bool float_syntax(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && s[i] == '-')
        i++;
    for (; i < n && is_digit(s[i]); i++)
        digits++;
    if (i < n && s[i] == '.')
        for (i++; i < n && is_digit(s[i]); i++)
            digits++;
    if (digits == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t e = i;
        while (i < n && is_digit(s[i]))
            i++;
        if (i == e)
            return false;
    }
    return i == n;
}

/* The special float spellings and their values. */
static bool float_special(const char *s, size_t n, double *v)
{
    static const struct {
        const char *text;
        int inf, neg;
    } specials[] = {{"inf", 1, 0}, {"-inf", 1, 1}, {"nan", 0, 0}, {"-nan", 0, 1}};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        if (strlen(specials[i].text) == n && memcmp(specials[i].text, s, n) == 0) {
            double x = specials[i].inf ? HUGE_VAL : NAN;
            *v = specials[i].neg ? copysign(x, -1.0) : x;
            return true;
        }
    }
    return false;
}

/* Scan a float: a decimal (optionally negative), or inf, -inf, nan, -nan. */
static int scan_float(struct parser *P, double *v)
{
    skip_ws(P);
    const char *s = P->p;
    size_t n = span(P, C_NUM);
    if (float_special(s, n, v)) {
        P->p += n;
        return 0;
    }
    if (n == 0 || n > NUM_MAX || !float_syntax(s, n))
        return fail(P, s, "expected a number, found '%.*s%s'", qlen(n), s, qcut(n));
    char buf[NUM_MAX + 1];
    memcpy(buf, s, n);
    buf[n] = '\0';
    *v = strtod(buf, NULL);
    if (isinf(*v))
        return fail(P, s, "number %.*s%s is out of range", qlen(n), s, qcut(n));
    P->p += n;
    return 0;
}

/* Scan "pitch:offset:width". */
static int scan_strided(struct parser *P, struct ir_strided *s)
{
    if (scan_uint(P, IR_MAX_DIM, "a pitch", &s->pitch) || expect(P, ':', "expected ':' after the pitch") ||
        scan_uint(P, IR_MAX_DIM, "an offset", &s->offset) || expect(P, ':', "expected ':' after the offset") ||
        scan_uint(P, IR_MAX_DIM, "a width", &s->width))
        return -1;
    return 0;
}

/* ── Growing arrays ──────────────────────────────────────────────────────────────────────────────────────── */

/* arr (n used, *cap room, elements of sz bytes) with room for one more: arr itself or a larger copy; NULL when
 * out of memory (arr still valid). */
static void *grow(void *arr, int32_t *cap, int32_t n, size_t sz)
{
    if (n < *cap)
        return arr;
    int32_t c = *cap ? *cap * 2 : 4;
    void *q = realloc(arr, (size_t)c * sz);
    if (q)
        *cap = c;
    return q;
}

/* Record where the next tensor (or top-level op) was declared. */
static int note_pos(struct parser *P, struct pos **v, int32_t *cap, int32_t n, struct pos at)
{
    struct pos *q = grow(*v, cap, n, sizeof **v);
    if (!q)
        return oom(P);
    *v = q;
    q[n] = at;
    return 0;
}

/* ── Operands, fields and tails ──────────────────────────────────────────────────────────────────────────── */

/* An op's operands while they are read: on the stack for the usual few, on the heap past that. */
#define OPERANDS_ON_STACK 16
struct operands {
    ir_tid *ins;
    struct ir_access *access;
    int32_t n, cap;
    ir_tid ins_stack[OPERANDS_ON_STACK];
    struct ir_access access_stack[OPERANDS_ON_STACK];
};

/* Room for one more operand in o; -1 when out of memory. */
static int operands_room(struct operands *o)
{
    if (o->n < o->cap)
        return 0;
    int32_t cap = 2 * o->cap;
    ir_tid *ins = malloc(sizeof *ins * (size_t)cap);
    struct ir_access *access = malloc(sizeof *access * (size_t)cap);
    if (!ins || !access) {
        free(ins);
        free(access);
        return -1;
    }
    memcpy(ins, o->ins, sizeof *ins * (size_t)o->n);
    memcpy(access, o->access, sizeof *access * (size_t)o->n);
    if (o->ins != o->ins_stack) {
        free(o->ins);
        free(o->access);
    }
    o->ins = ins;
    o->access = access;
    o->cap = cap;
    return 0;
}

/* Read the operands after '(' up to and including ')' into o. */
static int read_operands(struct parser *P, struct operands *o)
{
    skip_ws(P);
    if (!at_eol(P) && *P->p == ')') {
        P->p++;
        return 0;
    }
    for (;;) {
        skip_ws(P);
        if (o->n == IR_MAX_OPERANDS)
            return fail(P, P->p, "more than %d operands", IR_MAX_OPERANDS);
        ir_tid t;
        if (scan_tensor(P, "an operand", &t))
            return -1;
        if (operands_room(o))
            return oom(P);
        struct ir_access *acc = &o->access[o->n];
        memset(acc, 0, sizeof *acc);
        o->ins[o->n] = t;
        if (!at_eol(P) && *P->p == '[') {
            P->p++;
            acc->strided = true;
            if (scan_strided(P, &acc->s) || expect(P, ']', "expected ']' after a strided access"))
                return -1;
        }
        o->n++;
        skip_ws(P);
        if (!at_eol(P) && *P->p == ',') {
            P->p++;
            continue;
        }
        return expect(P, ')', "expected ')' after operands");
    }
}

/* Parse the operand list after '(' up to and including ')' into op's inputs (one allocation, ir_op_set_ins). */
static int parse_operands(struct parser *P, struct ir_op *op)
{
    struct operands o;
    o.ins = o.ins_stack;
    o.access = o.access_stack;
    o.n = 0;
    o.cap = OPERANDS_ON_STACK;
    int rc = read_operands(P, &o);
    if (rc == 0)
        ir_op_set_ins(op, o.ins, o.access, o.n);
    if (o.ins != o.ins_stack) {
        free(o.ins);
        free(o.access);
    }
    return rc;
}

/* Field parsers, one a field type, each reading the value after "name=" (a flag reads nothing). */

/* An int field: a size. */
static int parse_f_int(struct parser *P, const struct ir_field *f, void *p)
{
    int64_t v;
    (void)f;
    if (scan_uint(P, IR_MAX_DIM, "a non-negative integer", &v))
        return -1;
    memcpy(p, &v, sizeof v);
    return 0;
}

/* A float field. */
static int parse_f_float(struct parser *P, const struct ir_field *f, void *p)
{
    double v;
    (void)f;
    if (scan_float(P, &v))
        return -1;
    memcpy(p, &v, sizeof v);
    return 0;
}

/* An optional float: given, so present. */
static int parse_f_optf(struct parser *P, const struct ir_field *f, void *p)
{
    struct ir_optf v = {true, 0.0};
    (void)f;
    if (scan_float(P, &v.v))
        return -1;
    memcpy(p, &v, sizeof v);
    return 0;
}

/* A flag: given, so true. */
static int parse_f_flag(struct parser *P, const struct ir_field *f, void *p)
{
    bool v = true;
    (void)P;
    (void)f;
    memcpy(p, &v, sizeof v);
    return 0;
}

/* An enum field: a name of its table. */
static int parse_f_enum(struct parser *P, const struct ir_field *f, void *p)
{
    const char *s = P->p;
    size_t n = span(P, C_IDENT);
    int v = enum_of(f->type)->lookup(s, n);
    if (n == 0)
        return fail(P, s, "expected a value for field '%s'", f->name);
    if (v < 0)
        return fail(P, s, "unknown value '%.*s%s' for field '%s'", qlen(n), s, qcut(n), f->name);
    P->p += n;
    memcpy(p, &v, sizeof v);
    return 0;
}

/* A row index: a literal 1-based row, or "named". */
static int parse_f_rowidx(struct parser *P, const struct ir_field *f, void *p)
{
    struct ir_rowidx v = {IR_RIDX_NAMED, 0};
    if (at_word(P, "named")) {
        P->p += 5;
    } else {
        skip_ws(P);
        if (at_eol(P) || !is_digit(*P->p))
            return fail(P, P->p, "expected a row or 'named' for field '%s'", f->name);
        if (scan_uint(P, IR_MAX_DIM, "a row", &v.literal))
            return -1;
        v.kind = IR_RIDX_LITERAL;
    }
    memcpy(p, &v, sizeof v);
    return 0;
}

/* Whether the cursor is at the start of an op's tail ("->", "keep", "covers"). */
static bool at_tail(const struct parser *P)
{
    return looking_at(P, "->") || at_word(P, "keep") || at_word(P, "covers");
}

/* The index of the field named s[0..n) in f[0..count), or -1. */
static int field_index(const struct ir_field *f, int count, const char *s, size_t n)
{
    for (int i = 0; i < count; i++)
        if (strlen(f[i].name) == n && memcmp(f[i].name, s, n) == 0)
            return i;
    return -1;
}

/* Parse "name=value" fields in any order (each at most once) into `base` by table f[0..count); the op kind is the
 * `kind_len` bytes at `kind`, where a missing field is reported. */
static int parse_fields(struct parser *P, const struct ir_field *f, int count, void *base, const char *kind,
                        size_t kind_len)
{
    uint64_t seen = 0;
    for (;;) {
        skip_ws(P);
        if (at_eol(P) || at_tail(P))
            break;
        const char *s = P->p;
        size_t n = span(P, C_IDENT);
        if (!after_blank(P))
            return fail(P, s, "expected a blank before '%c'", *s);
        if (n == 0)
            return fail(P, s, "expected a field, found '%c'", *s);
        int i = field_index(f, count, s, n);
        if (i < 0)
            return fail(P, s, "unknown field '%.*s%s' for %.*s", qlen(n), s, qcut(n), qlen(kind_len), kind);
        if (seen >> i & 1)
            return fail(P, s, "field '%s' given twice", f[i].name);
        seen |= (uint64_t)1 << i;
        P->p += n;
        const struct field_codec *c = &codecs[f[i].type];
        bool eq = !at_eol(P) && *P->p == '=';
        if (c->valued && !eq)
            return fail(P, P->p, "expected '=' after field '%s'", f[i].name);
        if (!c->valued && eq)
            return fail(P, P->p, "field '%s' is a flag and takes no value", f[i].name);
        P->p += eq;
        P->last_value = P->p;
        if (c->parse(P, &f[i], (char *)base + f[i].offset))
            return -1;
        if (!at_eol(P) && !is_blank(*P->p))
            return fail(P, P->p, "expected a blank after field '%s'", f[i].name);
    }
    for (int i = 0; i < count; i++)
        if (codecs[f[i].type].required && !(seen >> i & 1))
            return fail(P, kind, "missing field '%s'", f[i].name);
    return 0;
}

/* Parse " -> buf [row(r, cols)] [unit(p:o:w)]" if present; else the destination is out's own buffer. */
static int parse_dst(struct parser *P, struct ir_op *op)
{
    op->dst = ir_dst_own(op->out);
    skip_ws(P);
    if (!looking_at(P, "->"))
        return 0;
    P->p += 2;
    struct ir_dst *d = &op->dst;
    if (scan_tensor(P, "a tensor name after '->'", &d->buf))
        return -1;
    skip_ws(P);
    if (at_call(P, "row")) {
        P->p += 4;
        skip_ws(P);
        if (!at_eol(P) && is_digit(*P->p)) {
            d->row = IR_ROWSEL_FIXED;
            if (scan_uint(P, IR_MAX_DIM, "a row", &d->row_fixed))
                return -1;
        } else {
            d->row = IR_ROWSEL_PARAM;
            if (scan_tensor(P, "a row or a param tensor", &d->row_param))
                return -1;
        }
        if (expect(P, ',', "expected ',' after the row") || scan_uint(P, IR_MAX_DIM, "a column count", &d->row_cols) ||
            expect(P, ')', "expected ')' after the row's columns"))
            return -1;
        skip_ws(P);
    }
    if (at_call(P, "unit")) {
        P->p += 5;
        d->has_unit = true;
        if (scan_strided(P, &d->unit) || expect(P, ')', "expected ')' after the unit"))
            return -1;
    }
    return 0;
}

/* Parse "keep t, t..." if present. */
static int parse_keeps(struct parser *P, struct ir_op *op)
{
    skip_ws(P);
    if (!at_word(P, "keep"))
        return 0;
    P->p += 4;
    int32_t cap = 0;
    for (;;) {
        if (op->nkeeps == IR_MAX_OPERANDS)
            return fail(P, P->p, "more than %d kept tensors", IR_MAX_OPERANDS);
        ir_tid t;
        if (scan_tensor(P, "a tensor name to keep", &t))
            return -1;
        ir_tid *k = grow(op->keeps, &cap, op->nkeeps, sizeof *k);
        if (!k)
            return oom(P);
        op->keeps = k;
        k[op->nkeeps++] = t;
        skip_ws(P);
        if (at_eol(P) || *P->p != ',')
            return 0;
        P->p++;
    }
}

/* Parse "covers i, i..." or "covers -" if present; *given says whether it was. */
static int parse_covers(struct parser *P, struct ir_op *op, bool *given)
{
    skip_ws(P);
    *given = at_word(P, "covers");
    if (!*given)
        return 0;
    P->p += 6;
    skip_ws(P);
    if (!at_eol(P) && *P->p == '-') {
        P->p++;
        return 0;
    }
    int32_t cap = 0;
    for (;;) {
        if (op->ncovers == IR_MAX_COVERS)
            return fail(P, P->p, "more than %d covered ops", (int)IR_MAX_COVERS);
        int64_t v;
        if (scan_uint(P, INT32_MAX, "an op index or '-' after 'covers'", &v))
            return -1;
        int32_t *c = grow(op->covers, &cap, op->ncovers, sizeof *c);
        if (!c)
            return oom(P);
        op->covers = c;
        c[op->ncovers++] = (int32_t)v;
        skip_ws(P);
        if (at_eol(P) || *P->p != ',')
            return 0;
        P->p++;
    }
}

/* Parse an op's tail: destination, keeps, covers, each optional, in that order. */
static int parse_tail(struct parser *P, struct ir_op *op, bool *covers_given)
{
    *covers_given = false;
    skip_ws(P);
    if (!at_eol(P) && *P->p != '{' && !after_blank(P))
        return fail(P, P->p, "expected a blank before '%c'", *P->p);
    if (parse_dst(P, op) || parse_keeps(P, op) || parse_covers(P, op, covers_given))
        return -1;
    return 0;
}

/* ── Declarations ────────────────────────────────────────────────────────────────────────────────────────── */

/* Parse the rest of a "graph [name] [family=word] [mode=word]" line. */
static int parse_graph(struct parser *P, const char *kw)
{
    if (P->any_decl)
        return fail(P, kw, "the graph line must come before every other declaration");
    P->any_decl = true;
    const char *at[3] = {NULL, NULL, NULL};
    size_t len[3] = {0, 0, 0};
    static const char *const keys[3] = {NULL, "family", "mode"};
    for (int first = 1;; first = 0) {
        skip_ws(P);
        if (at_eol(P))
            break;
        const char *s = P->p;
        size_t n = span(P, C_NAME);
        bool keyed = P->p + n < P->le && P->p[n] == '=';
        int k = 0;
        if (keyed) {
            for (k = 1; k < 3 && !(strlen(keys[k]) == n && memcmp(keys[k], s, n) == 0); k++)
                ;
            if (k == 3)
                return fail(P, s, "unknown graph attribute '%.*s%s' (expected family= or mode=)", qlen(n), s,
                            qcut(n));
            if (at[k])
                return fail(P, s, "graph attribute '%s' given twice", keys[k]);
            P->p += n + 1;
            if (!at_eol(P) && is_blank(*P->p))
                return fail(P, P->p, "expected a word after '%s='", keys[k]);
        } else if (!first) {
            return fail(P, s, "expected family=<word> or mode=<word>");
        }
        if (scan_name(P, keyed, keyed ? "a word" : "a graph name", &at[k], &len[k]))
            return -1;
    }
    char buf[3][IR_MAX_NAME + 1];
    for (int k = 0; k < 3; k++) {
        memcpy(buf[k], at[k] ? at[k] : "", len[k]);
        buf[k][len[k]] = '\0';
    }
    ir_graph_set_meta(P->g, at[0] ? buf[0] : NULL, at[1] ? buf[1] : NULL, at[2] ? buf[2] : NULL);
    return 0;
}

/* Scan an identifier token and look it up in a table; `what` names the table in messages. */
static int scan_table(struct parser *P, int (*lookup)(const char *, size_t), const char *what, int *v)
{
    skip_ws(P);
    const char *s = P->p;
    size_t n = span(P, C_IDENT);
    if (n == 0)
        return fail(P, s, "expected %s", what);
    *v = lookup(s, n);
    if (*v < 0)
        return fail(P, s, "unknown %s '%.*s%s'", what, qlen(n), s, qcut(n));
    P->p += n;
    return 0;
}

/* Parse the flags after a tensor's role: [format [transposed]], then observed, carried, next, tied (each at most
 * once). */
static int parse_tensor_flags(struct parser *P, struct ir_tensor *t)
{
    static const char *const flags[] = {"transposed", "observed", "carried", "next", "tied"};
    bool *const slots[] = {&t->transposed, &t->observed, &t->carried, &t->next, &t->tied};
    const int nflags = (int)(sizeof flags / sizeof flags[0]);
    for (int nth = 0;; nth++) {
        skip_ws(P);
        if (at_eol(P))
            return 0;
        const char *s = P->p;
        size_t n = span(P, C_IDENT);
        int fmt = ir_format_lookup(s, n);
        if (nth == 0 && fmt >= 0) {
            t->checkpoint = true;
            t->format = (enum ir_format)fmt;
            P->p += n;
            continue;
        }
        int i = 0;
        while (i < nflags && !(strlen(flags[i]) == n && memcmp(flags[i], s, n) == 0))
            i++;
        if (n == 0)
            return fail(P, s, "expected a tensor flag, found '%c'", *s);
        if (i == nflags)
            return fail(P, s, "unknown tensor flag '%.*s%s' (expected a format, observed, carried, next or tied)",
                        qlen(n), s, qcut(n));
        if (i == 0 && (nth != 1 || !t->checkpoint))
            return fail(P, s, "'transposed' must follow the tensor's format");
        if (*slots[i])
            return fail(P, s, "tensor flag '%s' given twice", flags[i]);
        *slots[i] = true;
        P->p += n;
    }
}

/* Parse the rest of a "tensor name elem RxC role [flags]" line. */
static int parse_tensor(struct parser *P, const char *kw)
{
    P->any_decl = true;
    const char *s;
    size_t n;
    if (scan_name(P, false, "a tensor name", &s, &n))
        return -1;
    if (ir_tensor_find(P->g, s, n) != IR_NONE)
        return fail(P, s, "duplicate tensor name '%.*s'", (int)n, s);
    int elem, role;
    int64_t rows, cols;
    if (scan_table(P, ir_elem_lookup, "element type", &elem))
        return -1;
    skip_ws(P);
    const char *shape = P->p;
    if (scan_uint(P, IR_MAX_DIM, "rows (a shape is <rows>x<cols>)", &rows))
        return -1;
    if (at_eol(P) || *P->p != 'x')
        return fail(P, P->p, "expected 'x' between rows and cols");
    P->p++;
    if (at_eol(P) || !is_digit(*P->p))
        return fail(P, P->p, "expected cols after 'x'");
    if (scan_uint(P, IR_MAX_DIM, "cols after 'x'", &cols))
        return -1;
    if (rows != 0 && cols > IR_MAX_ELEMS / rows)
        return fail(P, shape, "size %" PRId64 "x%" PRId64 " exceeds %" PRId64 " values", rows, cols, IR_MAX_ELEMS);
    if (scan_table(P, ir_role_lookup, "role", &role))
        return -1;
    struct ir_tensor t;
    memset(&t, 0, sizeof t);
    if (parse_tensor_flags(P, &t))
        return -1;
    if (P->g->ntensors >= IR_MAX_DECLS)
        return fail(P, kw, "more than %d tensors", IR_MAX_DECLS);
    struct pos at = {P->line, col_of(P, kw)};
    if (note_pos(P, &P->tpos, &P->tpos_cap, P->g->ntensors, at))
        return -1;
    char name[IR_MAX_NAME + 1];
    memcpy(name, s, n);
    name[n] = '\0';
    ir_tid id = ir_tensor_add(P->g, name, (enum ir_elem)elem, rows, cols, (enum ir_role)role);
    struct ir_tensor *d = &P->g->tensors[id];
    d->checkpoint = t.checkpoint;
    d->format = t.format;
    d->transposed = t.transposed;
    d->observed = t.observed;
    d->carried = t.carried;
    d->next = t.next;
    d->tied = t.tied;
    return 0;
}

/* Parse "out = kind(ins) fields" after "op" (or view(...) offset=, quantize(...) words=). */
static int parse_op_head(struct parser *P, struct ir_op *op)
{
    if (scan_tensor(P, "a result tensor name", &op->out) || expect(P, '=', "expected '=' after the result"))
        return -1;
    skip_ws(P);
    const char *ks = P->p;
    size_t n = span(P, C_IDENT);
    if (n == 0)
        return fail(P, ks, "expected a kind");
    const struct ir_field *f;
    int count = 1;
    int64_t extra = 0;
    void *base = &extra;
    if (at_word(P, sym_names[IR_SYM_VIEW])) {
        op->sym = IR_SYM_VIEW;
        f = view_fields;
    } else if (at_word(P, sym_names[IR_SYM_QUANT])) {
        op->sym = IR_SYM_QUANT;
        f = quant_fields;
    } else {
        int k = ir_kind_lookup(ks, n);
        if (k < 0)
            return fail(P, ks, "unknown kind '%.*s%s'", qlen(n), ks, qcut(n));
        op->sym = IR_SYM_PRIM;
        op->spec.kind = (enum ir_kind)k;
        f = ir_spec_fields(op->spec.kind, &count);
        base = &op->spec;
    }
    P->p += n;
    if (expect(P, '(', "expected '(' after the kind") || parse_operands(P, op) || parse_fields(P, f, count, base, ks, n))
        return -1;
    if (op->sym == IR_SYM_VIEW)
        op->view_offset = extra;
    if (op->sym == IR_SYM_QUANT) {
        if (extra < 1 || extra > 2)
            return fail(P, P->last_value, "words must be 1 or 2");
        op->quant_words = (int32_t)extra;
    }
    return 0;
}

/* Parse an op line after "op" into op (which is cleared first); *covers_given says whether covers were written. */
static int parse_op_line(struct parser *P, struct ir_op *op, bool *covers_given)
{
    memset(op, 0, sizeof *op);
    if (parse_op_head(P, op) || parse_tail(P, op, covers_given) || expect_eol(P))
        return -1;
    return 0;
}

static int parse_fused(struct parser *P, struct ir_op *op, int depth, const char *kw, bool *covers_given);

/* Parse the lines of a fused block up to its '}' into op's parts; the block opened at `open` and nests `depth`
 * levels deep. */
static int parse_parts(struct parser *P, struct ir_op *op, int depth, struct pos open)
{
    int32_t cap = 0;
    for (;;) {
        int r = next_content_line(P);
        if (r < 0)
            return -1;
        if (r == 0)
            return fail_pos(P, open.line, open.col, "unterminated fused block");
        const char *kw = P->p;
        if (*kw == '}') {
            P->p++;
            return expect_eol(P);
        }
        bool is_op = at_word(P, "op"), is_fused = at_word(P, sym_names[IR_SYM_FUSED]);
        if (!is_op && !is_fused)
            return fail(P, kw, "expected 'op', 'fused' or '}' in a fused block");
        if (is_fused && depth >= IR_MAX_DEPTH)
            return fail(P, kw, "fused blocks nest deeper than %d", IR_MAX_DEPTH);
        if (op->nparts >= IR_MAX_DECLS)
            return fail(P, kw, "more than %d parts", IR_MAX_DECLS);
        struct ir_op *parts = grow(op->parts, &cap, op->nparts, sizeof *parts);
        if (!parts)
            return oom(P);
        op->parts = parts;
        struct ir_op *part = &parts[op->nparts++];
        memset(part, 0, sizeof *part);
        bool given;
        P->p += strlen(is_op ? "op" : sym_names[IR_SYM_FUSED]);
        if (is_op ? parse_op_line(P, part, &given) : parse_fused(P, part, depth + 1, kw, &given))
            return -1;
    }
}

/* Parse a fused line after "fused" (class, result, operands, tail, '{') and its block; depth is its nesting level
 * (1 at top level). op is cleared first. */
static int parse_fused(struct parser *P, struct ir_op *op, int depth, const char *kw, bool *covers_given)
{
    memset(op, 0, sizeof *op);
    op->sym = IR_SYM_FUSED;
    struct pos open = {P->line, col_of(P, kw)};
    int cls;
    if (scan_table(P, ir_class_lookup, "class", &cls))
        return -1;
    op->cls = (enum ir_class)cls;
    if (scan_tensor(P, "a result tensor name", &op->out) || expect(P, '=', "expected '=' after the result") ||
        expect(P, '(', "expected '(' before the fused op's operands") || parse_operands(P, op) ||
        parse_tail(P, op, covers_given))
        return -1;
    skip_ws(P);
    if (at_eol(P) || *P->p != '{')
        return fail(P, P->p, "expected '{' at the end of a fused line");
    P->p++;
    if (expect_eol(P))
        return -1;
    return parse_parts(P, op, depth, open);
}

/* Parse a top-level op line or fused block (the cursor at its keyword) and append it to the graph. */
static int parse_top_op(struct parser *P, bool fused)
{
    const char *kw = P->p;
    struct pos at = {P->line, col_of(P, kw)};
    P->any_decl = true;
    if (P->g->nops >= IR_MAX_DECLS)
        return fail(P, kw, "more than %d ops", IR_MAX_DECLS);
    struct ir_op op;
    bool given = false;
    P->p += strlen(fused ? sym_names[IR_SYM_FUSED] : "op");
    int rc = fused ? parse_fused(P, &op, 1, kw, &given) : parse_op_line(P, &op, &given);
    if (rc || note_pos(P, &P->opos, &P->opos_cap, P->g->nops, at)) {
        ir_op_free(&op);
        return -1;
    }
    int32_t i = ir_graph_push(P->g, op);
    if (given && P->g->ops[i].ncovers == 1 && op.ncovers == 0)
        ir_op_set_covers(&P->g->ops[i], NULL, 0); /* "covers -": push gave it its own index */
    return 0;
}

/* Parse every line of the text into P->g. */
static int parse_lines(struct parser *P)
{
    int r;
    while ((r = next_content_line(P)) > 0) {
        const char *kw = P->p;
        size_t n = span(P, C_IDENT);
        int rc;
        if (*kw == '}') {
            rc = fail(P, kw, "'}' without an open fused block");
        } else if (at_word(P, "graph")) {
            P->p += n;
            rc = parse_graph(P, kw);
        } else if (at_word(P, "tensor")) {
            P->p += n;
            rc = parse_tensor(P, kw);
        } else if (at_word(P, "op") || at_word(P, sym_names[IR_SYM_FUSED])) {
            rc = parse_top_op(P, at_word(P, sym_names[IR_SYM_FUSED]));
        } else if (n == 0) {
            rc = fail(P, kw, "expected a declaration, found '%c'", *kw);
        } else {
            rc = fail(P, kw, "unknown declaration '%.*s%s' (expected graph, tensor, op or fused)", qlen(n), kw,
                      qcut(n));
        }
        if (rc)
            return -1;
    }
    return r;
}

/* Parse text into a new graph held by P (with where each tensor and op was declared). 0 on success; else -1 with
 * the message in err and nothing held. */
static int parse_run(struct parser *P, const char *text, size_t len, const char *file, char *err)
{
    memset(P, 0, sizeof *P);
    if (!text)
        text = "";
    P->file = file ? file : "<input>";
    P->err = err ? err : P->scratch;
    P->err[0] = '\0';
    P->next = text;
    P->end = text + len;
    P->ls = P->le = P->p = text;
    P->g = ir_graph_new();
    if (!P->g)
        return fail_pos(P, 1, 1, "out of memory");
    if (parse_lines(P) == 0)
        return 0;
    ir_graph_free(P->g);
    P->g = NULL;
    free(P->tpos);
    free(P->opos);
    P->tpos = P->opos = NULL;
    return -1;
}

struct ir_graph *ir_parse_unchecked(const char *text, size_t len, const char *file, char err[IR_ERR_LEN])
{
    struct parser P;
    if (parse_run(&P, text, len, file, err))
        return NULL;
    free(P.tpos);
    free(P.opos);
    return P.g;
}

struct ir_graph *ir_parse(const char *text, size_t len, const char *file, char err[IR_ERR_LEN])
{
    struct parser P;
    if (parse_run(&P, text, len, file, err))
        return NULL;
    int32_t op = -1;
    ir_tid t = IR_NONE;
    char msg[IR_ERR_LEN];
    msg[0] = '\0';
    if (ir_validate_where(P.g, &op, &t, msg) != 0) {
        struct pos at = {1, 1};
        if (op >= 0 && op < P.g->nops)
            at = P.opos[op];
        else if (t >= 0 && t < P.g->ntensors)
            at = P.tpos[t];
        fail_pos(&P, at.line, at.col, "%s", msg);
        ir_graph_free(P.g);
        P.g = NULL;
    }
    free(P.tpos);
    free(P.opos);
    return P.g;
}

/* Read a whole file into a malloc'd buffer; NULL (errno set) on failure. */
static char *read_all(FILE *f, size_t *len)
{
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        n += fread(buf + n, 1, cap - n, f);
        if (ferror(f)) {
            free(buf);
            return NULL;
        }
        if (n < cap)
            break;
        char *q = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!q) {
            free(buf);
            errno = ENOMEM;
            return NULL;
        }
        buf = q;
        cap *= 2;
    }
    *len = n;
    return buf;
}

char *ir_read_file(const char *path, size_t *len)
{
    *len = 0;
    bool in = strcmp(path, "-") == 0; /* standard input */
    FILE *f = in ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = read_all(f, len);
    int e = errno;
    if (!in)
        fclose(f);
    errno = e;
    if (text)
        text[*len] = '\0'; /* read_all stops with room to spare */
    return text;
}

/* Write "path:1:1: what: reason" to err. */
static void file_error(char *err, const char *path, const char *what, int e)
{
    struct parser P;
    memset(&P, 0, sizeof P);
    P.file = path;
    P.err = err ? err : P.scratch;
    fail_pos(&P, 1, 1, "%s: %s", what, strerror(e));
}

bool ir_graph_empty(const struct ir_graph *g) { return g->ntensors == 0 && g->nops == 0; }

int ir_refuse_empty(const struct ir_graph *g, const char *file, char err[IR_ERR_LEN])
{
    if (!ir_graph_empty(g))
        return 0;
    struct parser P;
    memset(&P, 0, sizeof P);
    P.file = file ? file : "<input>";
    P.err = err ? err : P.scratch;
    return fail_pos(&P, 1, 1, "empty graph: no tensor and no op");
}

struct ir_graph *ir_parse_file(const char *path, char err[IR_ERR_LEN]) { return ir_parse_file_opt(path, false, err); }

struct ir_graph *ir_parse_file_opt(const char *path, bool allow_empty, char err[IR_ERR_LEN])
{
    const char *label = strcmp(path, "-") == 0 ? "stdin" : path;
    errno = 0;
    size_t len = 0;
    char *text = ir_read_file(path, &len);
    if (!text) {
        file_error(err, label, errno == ENOENT || errno == EACCES ? "cannot open" : "cannot read",
                   errno ? errno : EIO);
        return NULL;
    }
    struct ir_graph *g = ir_parse(text, len, label, err);
    free(text);
    if (g && !allow_empty && ir_refuse_empty(g, label, err)) {
        ir_graph_free(g);
        return NULL;
    }
    return g;
}
