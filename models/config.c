/* models/config.c — reading a Hugging Face config.json into the models_config a zoo row would be.
 *
 * Who does what. SQLite's JSON1 (the library results.db already links) is the parser: json_valid decides whether the
 * text is JSON, and json_tree walks it and hands over every value's type and decoded atom (strings unescaped,
 * numbers converted), so no value fusecheck uses is decoded here. What SQLite 3.40 cannot say is where: it reports
 * no error position, and json_tree's rows carry no byte offsets. So this file keeps one small scanner of its own
 * that walks the same text once, in the same pre-order as json_tree, recording where each value starts (the
 * line:col of a field in a message) and, when the text is not JSON, finding the first byte RFC 8259's grammar cannot
 * take (the line:col of the syntax error). The scanner is strict where SQLite is lenient (a NUL byte, a nesting
 * deeper than MAX_DEPTH): its error wins; where SQLite refuses what the scanner took, the message says so at 1:1.
 * After the parse, each family's reader is a table of fields (JSON key -> struct field, type, the default its
 * Transformers configuration class takes, required or not) and at most one small function deriving what the family
 * computes from several fields. Required are the sizes a weight has (a config without them names no particular
 * model, and the class's defaults are some other model's); everything else takes the class's default. */
#include "models/models.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The deepest nesting the scanner takes, and the largest file read (a config.json is a few kilobytes). */
#define MAX_DEPTH 256
#define MAX_BYTES ((size_t)1 << 24)
/* The widest dimension a lift takes (models_lift's bound; MODELS_MAX_LAYERS bounds the layers). */
#define BIG ((int64_t)1 << 24)
/* The context a config lift allots when the model allows it (the zoo's), and what makes a configuration tiny. */
#define CONFIG_CTX 4096
#define TINY_PARAMS ((int64_t)1 << 24)

/* ── The document: SQLite's values at the scanner's positions ─────────────────────────────────────────────── */

enum jtype { J_NULL, J_TRUE, J_FALSE, J_INTEGER, J_BIG, J_REAL, J_TEXT, J_ARRAY, J_OBJECT };

/* A value of the document, in json_tree's order. */
struct node {
    char *key;        /* its key in its object; NULL in an array or at the top */
    enum jtype type;  /* J_BIG: an integer past int64 */
    int64_t i;        /* J_INTEGER's value */
    double d;         /* J_INTEGER's and J_REAL's value */
    char *text;       /* J_TEXT's value */
    int parent;       /* its container's index; -1 at the top */
    size_t at;        /* the byte where it starts */
};

struct doc {
    const char *label; /* the file's name in messages */
    const char *text;
    size_t len;
    struct node *nodes;
    int n;
};

/* The 1-based line and column (in bytes) of byte `at`. */
static void line_col(const struct doc *d, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at && i < d->len; i++) {
        if (d->text[i] == '\n')
            ++*line, *col = 1;
        else
            ++*col;
    }
}

/* Write "label:line:col: " and the message to err; returns 1 (the failing return of the readers). */
static int fail_at(const struct doc *d, size_t at, char *err, const char *fmt, ...)
{
    int line, col;
    line_col(d, at, &line, &col);
    int n = snprintf(err, IR_ERR_LEN, "%s:%d:%d: ", d->label, line, col);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && n < IR_ERR_LEN)
        vsnprintf(err + n, IR_ERR_LEN - (size_t)n, fmt, ap);
    va_end(ap);
    return 1;
}

/* ── The scanner: where each value starts, and where the text stops being JSON ──────────────────────────── */

struct scan {
    const char *s;
    size_t n, at;
    size_t *starts; /* each value's first byte, in pre-order */
    int nstarts, cap;
    size_t err_at;  /* the first byte the grammar cannot take */
    const char *want;
    bool oom;
};

/* Stop at byte `at`, which should have been `want`. */
static bool scan_fail(struct scan *s, size_t at, const char *want)
{
    s->err_at = at;
    s->want = want;
    return false;
}

/* Skip blanks (space, tab, line feed, carriage return). */
static void skip_blank(struct scan *s)
{
    while (s->at < s->n && (s->s[s->at] == ' ' || s->s[s->at] == '\t' || s->s[s->at] == '\n' || s->s[s->at] == '\r'))
        s->at++;
}

/* Whether the byte at `at` is c. */
static bool at_byte(const struct scan *s, char c) { return s->at < s->n && s->s[s->at] == c; }

/* Note that a value starts here. */
static bool note_start(struct scan *s)
{
    if (s->nstarts == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        size_t *p = realloc(s->starts, sizeof *p * (size_t)cap);
        if (!p) {
            s->oom = true;
            return scan_fail(s, s->at, "memory to read it");
        }
        s->starts = p;
        s->cap = cap;
    }
    s->starts[s->nstarts++] = s->at;
    return true;
}

/* Whether c is a hexadecimal digit. */
static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* A string from its opening quote to past its closing one. */
static bool scan_string(struct scan *s)
{
    for (s->at++;; s->at++) {
        if (s->at >= s->n)
            return scan_fail(s, s->at, "a closing '\"'");
        unsigned char c = (unsigned char)s->s[s->at];
        if (c == '"') {
            s->at++;
            return true;
        }
        if (c < 0x20)
            return scan_fail(s, s->at, "a control character written as an escape (\\n, \\t, \\u00XX)");
        if (c != '\\')
            continue;
        s->at++;
        if (s->at < s->n && strchr("\"\\/bfnrt", s->s[s->at]) && s->s[s->at])
            continue;
        if (!at_byte(s, 'u'))
            return scan_fail(s, s->at, "an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX");
        for (int k = 1; k <= 4; k++)
            if (s->at + (size_t)k >= s->n || !is_hex(s->s[s->at + (size_t)k]))
                return scan_fail(s, s->at + (size_t)k, "four hexadecimal digits after \\u");
        s->at += 4;
    }
}

/* One or more decimal digits. */
static bool scan_digits(struct scan *s)
{
    if (s->at >= s->n || s->s[s->at] < '0' || s->s[s->at] > '9')
        return scan_fail(s, s->at, "a digit");
    while (s->at < s->n && s->s[s->at] >= '0' && s->s[s->at] <= '9')
        s->at++;
    return true;
}

/* A number: -? (0 | [1-9][0-9]*) (. digits)? ([eE] [+-]? digits)?. */
static bool scan_number(struct scan *s)
{
    if (at_byte(s, '-'))
        s->at++;
    if (at_byte(s, '0'))
        s->at++;
    else if (!scan_digits(s))
        return false;
    if (at_byte(s, '.')) {
        s->at++;
        if (!scan_digits(s))
            return false;
    }
    if (at_byte(s, 'e') || at_byte(s, 'E')) {
        s->at++;
        if (at_byte(s, '+') || at_byte(s, '-'))
            s->at++;
        if (!scan_digits(s))
            return false;
    }
    return true;
}

/* One of the words true, false and null. */
static bool scan_word(struct scan *s)
{
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t len = strlen(words[i]);
        if (s->n - s->at >= len && memcmp(s->s + s->at, words[i], len) == 0) {
            s->at += len;
            return true;
        }
    }
    return scan_fail(s, s->at, "a value (an object, an array, a string, a number, true, false or null)");
}

static bool scan_value(struct scan *s, int depth);

/* An object member's key and its ':' (blanks after both skipped). */
static bool scan_key(struct scan *s)
{
    if (!at_byte(s, '"'))
        return scan_fail(s, s->at, "a key in double quotes");
    if (!scan_string(s))
        return false;
    skip_blank(s);
    if (!at_byte(s, ':'))
        return scan_fail(s, s->at, "':' after the key");
    s->at++;
    skip_blank(s);
    return true;
}

/* An array's elements (close ']') or an object's members (close '}') after its opening bracket. */
static bool scan_items(struct scan *s, int depth, char close)
{
    bool object = close == '}';
    s->at++;
    skip_blank(s);
    if (at_byte(s, close)) {
        s->at++;
        return true;
    }
    for (;;) {
        if ((object && !scan_key(s)) || !scan_value(s, depth + 1))
            return false;
        skip_blank(s);
        if (at_byte(s, close)) {
            s->at++;
            return true;
        }
        if (!at_byte(s, ','))
            return scan_fail(s, s->at, object ? "',' or '}'" : "',' or ']'");
        s->at++;
        skip_blank(s);
    }
}

/* One value at the current byte (blanks before it skipped). */
static bool scan_value(struct scan *s, int depth)
{
    if (depth > MAX_DEPTH)
        return scan_fail(s, s->at, "a value nested at most 256 deep");
    if (s->at >= s->n)
        return scan_fail(s, s->at, "a value (an object, an array, a string, a number, true, false or null)");
    if (!note_start(s))
        return false;
    char c = s->s[s->at];
    if (c == '{' || c == '[')
        return scan_items(s, depth, c == '{' ? '}' : ']');
    if (c == '"')
        return scan_string(s);
    if (c == '-' || (c >= '0' && c <= '9'))
        return scan_number(s);
    return scan_word(s);
}

/* What stands at byte `at`, for "found ...": the end of the file, a printable character, or a byte. */
static void found_at(const struct doc *d, size_t at, char out[32])
{
    unsigned char c = at < d->len ? (unsigned char)d->text[at] : 0;
    if (at >= d->len)
        snprintf(out, 32, "the end of the file");
    else if (c > 0x20 && c < 0x7f)
        snprintf(out, 32, "'%c'", c);
    else
        snprintf(out, 32, "byte 0x%02x", c);
}

/* Scan the whole text: 0 with the values' starts in *starts (*n of them), else 1 with err at the first bad byte. */
static int scan_text(const struct doc *d, size_t **starts, int *n, char *err)
{
    struct scan s = {.s = d->text, .n = d->len};
    skip_blank(&s);
    bool ok = scan_value(&s, 0);
    if (ok) {
        skip_blank(&s);
        ok = s.at == s.n || scan_fail(&s, s.at, "the end of the file after the top object");
    }
    if (!ok) {
        free(s.starts);
        if (s.oom)
            return fail_at(d, 0, err, "out of memory");
        char found[32];
        found_at(d, s.err_at, found);
        return fail_at(d, s.err_at, err, "not JSON: expected %s, found %s", s.want, found);
    }
    *starts = s.starts;
    *n = s.nstarts;
    return 0;
}

/* ── SQLite's parse ──────────────────────────────────────────────────────────────────────────────────────── */

/* json_tree's type names, as jtype. */
static const struct {
    const char *name;
    enum jtype type;
} jtypes[] = {{"null", J_NULL},  {"true", J_TRUE},  {"false", J_FALSE},   {"integer", J_INTEGER},
              {"real", J_REAL}, {"text", J_TEXT}, {"array", J_ARRAY}, {"object", J_OBJECT}};

/* A malloc'd copy of a column's text (NULL for SQL NULL); *oom set when the copy fails. */
static char *column_dup(sqlite3_stmt *st, int col, bool *oom)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    if (!t)
        return NULL;
    char *c = strdup((const char *)t);
    *oom = *oom || !c;
    return c;
}

/* One json_tree row into node i (its parent still SQLite's id, in `parent`). */
static void read_row(sqlite3_stmt *st, struct node *v, bool *oom)
{
    const char *type = (const char *)sqlite3_column_text(st, 1);
    v->type = J_NULL;
    for (size_t k = 0; type && k < sizeof jtypes / sizeof jtypes[0]; k++)
        if (strcmp(type, jtypes[k].name) == 0)
            v->type = jtypes[k].type;
    if (v->type == J_INTEGER && sqlite3_column_type(st, 2) != SQLITE_INTEGER)
        v->type = J_BIG; /* SQLite turns an integer past int64 into a real */
    v->i = sqlite3_column_int64(st, 2);
    v->d = sqlite3_column_double(st, 2);
    v->text = v->type == J_TEXT ? column_dup(st, 2, oom) : NULL;
    v->key = sqlite3_column_type(st, 0) == SQLITE_TEXT ? column_dup(st, 0, oom) : NULL;
}

/* The row whose json_tree id is `id` (ids ascend in json_tree's order), or -1. */
static int row_of_id(const int64_t *ids, int n, int64_t id)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (ids[mid] == id)
            return mid;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Whether SQLite's JSON1 takes the text. */
static bool sqlite_valid(sqlite3 *db, const struct doc *d)
{
    sqlite3_stmt *st = NULL;
    bool valid = sqlite3_prepare_v2(db, "SELECT json_valid(?1)", -1, &st, NULL) == SQLITE_OK &&
                 sqlite3_bind_text(st, 1, d->text, (int)d->len, SQLITE_STATIC) == SQLITE_OK &&
                 sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    return valid;
}

/* json_tree's rows into d->nodes (nstarts of them expected, at the scanner's starts). 0, or 1 with err. */
static int sqlite_tree(sqlite3 *db, struct doc *d, const size_t *starts, int nstarts, char *err)
{
    sqlite3_stmt *st = NULL;
    int64_t *ids = malloc(sizeof *ids * (size_t)nstarts);
    d->nodes = calloc((size_t)nstarts, sizeof *d->nodes);
    if (!ids || !d->nodes || sqlite3_prepare_v2(db, "SELECT key, type, atom, id, parent FROM json_tree(?1)", -1,
                                                &st, NULL) != SQLITE_OK) {
        free(ids);
        return fail_at(d, 0, err, "SQLite: %s", ids && d->nodes ? sqlite3_errmsg(db) : "out of memory");
    }
    sqlite3_bind_text(st, 1, d->text, (int)d->len, SQLITE_STATIC);
    int rc;
    bool oom = false, extra = false;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (d->n == nstarts) {
            extra = true;
            break;
        }
        struct node *v = &d->nodes[d->n];
        read_row(st, v, &oom);
        ids[d->n] = sqlite3_column_int64(st, 3);
        v->parent = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : (int)sqlite3_column_int64(st, 4);
        v->at = starts[d->n++];
    }
    int bad = rc != SQLITE_DONE && !extra;
    sqlite3_finalize(st);
    for (int i = 0; i < d->n && !bad; i++) {
        if (d->nodes[i].parent >= 0)
            d->nodes[i].parent = row_of_id(ids, d->n, d->nodes[i].parent);
        bad = d->nodes[i].parent >= i; /* a parent comes first; -1 past the top is one SQLite did not list */
    }
    free(ids);
    if (oom)
        return fail_at(d, 0, err, "out of memory");
    if (bad || extra || d->n != nstarts)
        return fail_at(d, 0, err, "not JSON as SQLite's JSON1 reads it (it walks %d values where the text has %d)",
                       d->n, nstarts);
    return 0;
}

/* Free what a document holds. */
static void doc_free(struct doc *d)
{
    for (int i = 0; i < d->n; i++) {
        free(d->nodes[i].key);
        free(d->nodes[i].text);
    }
    free(d->nodes);
    d->nodes = NULL;
    d->n = 0;
}

/* A member's key given twice in one object: SQLite would take the first, Transformers the last. 0, or 1 with err. */
static int check_keys(const struct doc *d, char *err)
{
    for (int i = 0; i < d->n; i++)
        for (int j = d->nodes[i].parent + 1; d->nodes[i].key && j < i; j++)
            if (d->nodes[j].parent == d->nodes[i].parent && d->nodes[j].key &&
                strcmp(d->nodes[j].key, d->nodes[i].key) == 0) {
                int line, col;
                line_col(d, d->nodes[j].at, &line, &col);
                return fail_at(d, d->nodes[i].at, err, "%s: given twice (first at %d:%d); expected each key once",
                               d->nodes[i].key, line, col);
            }
    return 0;
}

/* Parse the text into d: the scanner first (its error wins), then SQLite. 0, or 1 with err. */
static int doc_parse(struct doc *d, char *err)
{
    if (d->len > MAX_BYTES)
        return fail_at(d, 0, err, "larger than 16 MiB: not a config.json");
    size_t *starts = NULL;
    int nstarts = 0;
    if (scan_text(d, &starts, &nstarts, err))
        return 1;
    sqlite3 *db = NULL;
    int rc;
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        rc = fail_at(d, 0, err, "SQLite: cannot open an in-memory database");
    else if (!sqlite_valid(db, d))
        rc = fail_at(d, 0, err, "not JSON as SQLite's JSON1 reads it (json_valid refuses it)");
    else
        rc = sqlite_tree(db, d, starts, nstarts, err) || check_keys(d, err);
    sqlite3_close(db);
    free(starts);
    return rc;
}

/* The member `key` of the object at node obj, or -1. */
static int member(const struct doc *d, int obj, const char *key)
{
    for (int i = obj + 1; obj >= 0 && i < d->n; i++)
        if (d->nodes[i].parent == obj && d->nodes[i].key && strcmp(d->nodes[i].key, key) == 0)
            return i;
    return -1;
}

/* The k-th element of the array at node arr, or -1. */
static int element(const struct doc *d, int arr, int k)
{
    for (int i = arr + 1; arr >= 0 && i < d->n; i++)
        if (d->nodes[i].parent == arr && k-- == 0)
            return i;
    return -1;
}

/* Number of elements of the array (or members of the object) at node i. */
static int children(const struct doc *d, int i)
{
    int n = 0;
    for (int j = i + 1; j < d->n; j++)
        n += d->nodes[j].parent == i;
    return n;
}

/* The name of a value's type, for "got ...". */
static const char *type_name(enum jtype t)
{
    static const char *const names[] = {"null", "true", "false", "an integer", "an integer past 64 bits",
                                        "a number", "a string", "an array", "an object"};
    return names[t];
}

/* ── The fields a family reads ───────────────────────────────────────────────────────────────────────────── */

/* What a reading fills: the configuration, and the fields a family derives its values from. */
struct reading {
    struct models_config c;
    int64_t max_pos;       /* max_position_embeddings */
    double rotary_factor;  /* partial_rotary_factor */
    double pre_attn;       /* gemma2: query_pre_attn_scalar */
    double scale_depth;    /* minicpm: each branch × scale_depth / √layers */
    double dim_base;       /* minicpm: the final norm's output ÷ (hidden / dim_model_base) */
    int64_t shared;        /* deepseek: n_shared_experts */
    int64_t interval;      /* qwen3-next: full_attention_interval */
    int64_t one;           /* a field that must be 1 (decoder_sparse_step, moe_layer_freq) */
    bool biased;           /* gpt-oss: attention_bias, which the family lifts true */
    bool norm;             /* norm_topk_prob: the chosen experts' weights renormalised */
    const struct doc *d;   /* the document, for a derived value's message */
};

/* A field's JSON type and what it fills: a count (int32 or int64, from lo to hi), a positive finite number, a
 * boolean; or a check with nothing to fill: a word it must be, false, an empty array. */
enum fkind { F_I32, F_I64, F_REAL, F_BOOL, F_IS, F_FALSE, F_EMPTY };
/* Its default: none (required), a value, the number of attention heads, hidden_size / num_attention_heads. */
enum fdefault { D_NEED, D_VAL, D_HEADS, D_HEAD_DIM };

struct field {
    const char *key;
    enum fkind kind;
    size_t at;            /* offsetof(struct reading, ...) of what it fills */
    enum fdefault dflt;
    double value;         /* D_VAL's default */
    bool null_ok;         /* null means the default (D_HEADS, D_HEAD_DIM) or 0 (D_VAL): "none" */
    int64_t lo, hi;       /* a count's range */
    const char *word;     /* F_IS: the one value fusecheck lifts */
};

#define AT(m) offsetof(struct reading, m)
/* A required count, a count with a default, a positive number with a default, a boolean with a default. */
#define NEED(key, kind, m, lo, hi) {key, kind, AT(m), D_NEED, 0, false, lo, hi, NULL}
#define COUNT(key, m, v, lo, hi) {key, F_I64, AT(m), D_VAL, v, false, lo, hi, NULL}
#define REAL(key, m, v) {key, F_REAL, AT(m), D_VAL, v, false, 0, 0, NULL}
#define FLAG(key, m, v) {key, F_BOOL, AT(m), D_VAL, v, false, 0, 0, NULL}
/* Checks: the key, when given, is this word, is false, is an empty array. */
#define IS(key, w) {key, F_IS, 0, D_VAL, 0, false, 0, 0, w}
#define NOT(key) {key, F_FALSE, 0, D_VAL, 0, false, 0, 0, NULL}
#define NONE(key) {key, F_EMPTY, 0, D_VAL, 0, false, 0, 0, NULL}
/* The sizes every family reads alike (hidden_size and num_attention_heads before what defaults from them). */
#define SIZES                                                                                                      \
    NEED("num_hidden_layers", F_I32, c.layers, 1, MODELS_MAX_LAYERS), NEED("hidden_size", F_I64, c.hidden, 1, BIG),       \
        NEED("num_attention_heads", F_I64, c.heads, 1, BIG), NEED("vocab_size", F_I64, c.vocab, 1, BIG)
/* num_key_value_heads and head_dim defaulting as most classes take None. */
#define KV_NONE {"num_key_value_heads", F_I64, AT(c.kv_heads), D_HEADS, 0, true, 1, BIG, NULL}
#define HEAD_NONE {"head_dim", F_I64, AT(c.head_dim), D_HEAD_DIM, 0, true, 1, BIG, NULL}
/* The norm's epsilon, the rotary base, a tied LM head, the longest context (each with the class's default). */
#define CONSTANTS(eps_key, eps_v, tied_v, ctx_v)                                                                   \
    REAL(eps_key, c.eps, eps_v), REAL("rope_theta", c.rope_base, 10000),                                          \
        FLAG("tie_word_embeddings", c.tied, tied_v), COUNT("max_position_embeddings", max_pos, ctx_v, 1, INT64_MAX)
#define FFN NEED("intermediate_size", F_I64, c.ffn, 1, BIG)
#define EXPERTS(experts_key)                                                                                       \
    NEED(experts_key, F_I64, c.experts, 1, BIG), NEED("num_experts_per_tok", F_I64, c.top_k, 1, BIG),             \
        NEED("moe_intermediate_size", F_I64, c.expert_ffn, 1, BIG)

/* LlamaConfig. */
static const struct field llama_fields[] = {
    SIZES, FFN, KV_NONE, HEAD_NONE, CONSTANTS("rms_norm_eps", 1e-6, false, 2048), IS("hidden_act", "silu"),
    NOT("attention_bias"), NOT("mlp_bias"),
};
/* Qwen3Config. */
static const struct field qwen3_fields[] = {
    SIZES, FFN, COUNT("num_key_value_heads", c.kv_heads, 32, 1, BIG), COUNT("head_dim", c.head_dim, 128, 1, BIG),
    CONSTANTS("rms_norm_eps", 1e-6, false, 32768), IS("hidden_act", "silu"), NOT("attention_bias"),
    NOT("use_sliding_window"),
};
/* Qwen3MoeConfig: every layer sparse; its routing renormalised or not (norm_topk_prob, false by default). */
static const struct field qwen3_moe_fields[] = {
    SIZES, EXPERTS("num_experts"), FLAG("norm_topk_prob", norm, false),
    COUNT("num_key_value_heads", c.kv_heads, 4, 1, BIG), HEAD_NONE,
    CONSTANTS("rms_norm_eps", 1e-6, false, 32768), COUNT("decoder_sparse_step", one, 1, 1, 1),
    NONE("mlp_only_layers"), IS("hidden_act", "silu"), NOT("attention_bias"), NOT("use_sliding_window"),
};
/* Gemma2Config. */
static const struct field gemma2_fields[] = {
    SIZES, FFN, COUNT("num_key_value_heads", c.kv_heads, 4, 1, BIG), COUNT("head_dim", c.head_dim, 256, 1, BIG),
    CONSTANTS("rms_norm_eps", 1e-6, true, 8192), REAL("query_pre_attn_scalar", pre_attn, 256),
    {"sliding_window", F_I64, AT(c.window), D_VAL, 4096, true, 1, BIG, NULL},
    {"attn_logit_softcapping", F_REAL, AT(c.attn_softcap), D_VAL, 50, true, 0, 0, NULL},
    {"final_logit_softcapping", F_REAL, AT(c.final_softcap), D_VAL, 30, true, 0, 0, NULL},
    IS("hidden_activation", "gelu_pytorch_tanh"), NOT("attention_bias"),
};
/* Qwen3NextConfig. */
static const struct field qwen3_next_fields[] = {
    SIZES, EXPERTS("num_experts"), FLAG("norm_topk_prob", norm, true), COUNT("num_key_value_heads", c.kv_heads, 2, 1, BIG),
    COUNT("head_dim", c.head_dim, 256, 1, BIG), CONSTANTS("rms_norm_eps", 1e-6, false, 32768),
    REAL("partial_rotary_factor", rotary_factor, 0.25), NEED("linear_conv_kernel_dim", F_I64, c.conv_taps, 2, BIG),
    NEED("linear_key_head_dim", F_I64, c.lin_dk, 1, BIG), NEED("linear_value_head_dim", F_I64, c.lin_dv, 1, BIG),
    NEED("linear_num_key_heads", F_I64, c.lin_k_heads, 1, BIG),
    NEED("linear_num_value_heads", F_I64, c.lin_v_heads, 1, BIG),
    NEED("shared_expert_intermediate_size", F_I64, c.shared_ffn, 1, BIG),
    COUNT("full_attention_interval", interval, 4, 1, MODELS_MAX_LAYERS), COUNT("decoder_sparse_step", one, 1, 1, 1),
    NONE("mlp_only_layers"), IS("hidden_act", "silu"), NOT("attention_bias"), NOT("use_sliding_window"),
};
/* NemotronConfig. */
static const struct field nemotron_fields[] = {
    SIZES, FFN, KV_NONE, HEAD_NONE, CONSTANTS("norm_eps", 1e-5, false, 4096),
    REAL("partial_rotary_factor", rotary_factor, 0.5), IS("hidden_act", "relu2"), NOT("attention_bias"),
    NOT("mlp_bias"),
};
/* Qwen2Config. */
static const struct field qwen2_fields[] = {
    SIZES, FFN, COUNT("num_key_value_heads", c.kv_heads, 32, 1, BIG), HEAD_NONE,
    CONSTANTS("rms_norm_eps", 1e-6, false, 32768), IS("hidden_act", "silu"), NOT("use_sliding_window"),
};
/* GraniteConfig. */
static const struct field granite_fields[] = {
    SIZES, FFN, KV_NONE, HEAD_NONE, CONSTANTS("rms_norm_eps", 1e-6, false, 2048),
    REAL("embedding_multiplier", c.embed_mult, 1), REAL("residual_multiplier", c.residual_mult, 1),
    REAL("attention_multiplier", c.query_scale, 1), REAL("logits_scaling", c.logit_scale, 1),
    IS("hidden_act", "silu"), NOT("attention_bias"), NOT("mlp_bias"),
};
/* MiniCPMConfig (openbmb's configuration_minicpm.py). */
static const struct field minicpm_fields[] = {
    SIZES, FFN, KV_NONE, HEAD_NONE, CONSTANTS("rms_norm_eps", 1e-6, true, 2048), REAL("scale_emb", c.embed_mult, 1),
    REAL("scale_depth", scale_depth, 1), REAL("dim_model_base", dim_base, 1), IS("hidden_act", "silu"),
};
/* GptOssConfig: the experts as wide as intermediate_size, a window on the sliding layers, the clamp's limit. */
static const struct field gpt_oss_fields[] = {
    SIZES, NEED("num_local_experts", F_I64, c.experts, 1, BIG), NEED("num_experts_per_tok", F_I64, c.top_k, 1, BIG),
    NEED("intermediate_size", F_I64, c.expert_ffn, 1, BIG), COUNT("num_key_value_heads", c.kv_heads, 8, 1, BIG),
    COUNT("head_dim", c.head_dim, 64, 1, BIG), REAL("rms_norm_eps", c.eps, 1e-5), REAL("rope_theta", c.rope_base, 150000),
    FLAG("tie_word_embeddings", c.tied, false), COUNT("max_position_embeddings", max_pos, 131072, 1, INT64_MAX),
    COUNT("sliding_window", c.window, 128, 1, BIG),
    REAL("swiglu_limit", c.swiglu_limit, 7), FLAG("attention_bias", biased, true), IS("hidden_act", "silu"),
};
/* Olmo2Config: no head_dim of its own (the modelling code takes hidden / heads unless the file names one). */
static const struct field olmo2_fields[] = {
    SIZES, FFN, KV_NONE, HEAD_NONE, CONSTANTS("rms_norm_eps", 1e-5, false, 2048), IS("hidden_act", "silu"),
    NOT("attention_bias"),
};
/* DeepseekV2Config and DeepseekV3Config, which differ in their defaults. */
#define DEEPSEEK(kv_v, q_v, shared_v, dense_v, ctx_v)                                                               \
    SIZES, FFN, EXPERTS("n_routed_experts"), COUNT("num_key_value_heads", c.kv_heads, kv_v, 1, BIG),              \
        NEED("qk_nope_head_dim", F_I64, c.head_dim, 1, BIG), NEED("qk_rope_head_dim", F_I64, c.deepseek.rope_dim, 2, BIG), \
        NEED("kv_lora_rank", F_I64, c.deepseek.kv_lora, 1, BIG), NEED("v_head_dim", F_I64, c.deepseek.v_head_dim, 1, BIG), \
        {"q_lora_rank", F_I64, AT(c.deepseek.q_lora), D_VAL, q_v, true, 1, BIG, NULL},                             \
        {"n_shared_experts", F_I64, AT(shared), D_VAL, shared_v, true, 1, BIG, NULL},                              \
        {"first_k_dense_replace", F_I32, AT(c.deepseek.dense_layers), D_VAL, dense_v, false, 0, MODELS_MAX_LAYERS, NULL}, \
        CONSTANTS("rms_norm_eps", 1e-6, false, ctx_v), COUNT("moe_layer_freq", one, 1, 1, 1),                    \
        IS("hidden_act", "silu"), NOT("attention_bias")
/* DeepseekV2's routing: a softmax, the greedy top k, never renormalised (derive_deepseek refuses norm_topk_prob
 * true), times routed_scaling_factor. DeepseekV3's: sigmoid scores, the correction row choosing among the topk_group
 * best of n_group groups (noaux_tc), renormalised by norm_topk_prob, times routed_scaling_factor. */
#define DEEPSEEK_V2_ROUTING                                                                                         \
    FLAG("norm_topk_prob", norm, false), IS("topk_method", "greedy"), IS("scoring_func", "softmax"),               \
        REAL("routed_scaling_factor", c.routing.scale, 1.0)
#define DEEPSEEK_V3_ROUTING                                                                                         \
    FLAG("norm_topk_prob", norm, true), IS("topk_method", "noaux_tc"), IS("scoring_func", "sigmoid"),              \
        COUNT("n_group", c.routing.groups, 8, 1, BIG), COUNT("topk_group", c.routing.topk_groups, 4, 1, BIG),     \
        REAL("routed_scaling_factor", c.routing.scale, 2.5)
static const struct field deepseek_v2_fields[] = {DEEPSEEK(32, 1536, 0, 0, 2048), DEEPSEEK_V2_ROUTING};
static const struct field deepseek_v3_fields[] = {DEEPSEEK(128, 1536, 1, 3, 4096), DEEPSEEK_V3_ROUTING};

/* ── Reading a field ─────────────────────────────────────────────────────────────────────────────────────── */

/* Store v into the reading's member at `at` as the field's kind takes it. */
static void store(struct reading *r, const struct field *f, double v)
{
    char *p = (char *)r + f->at;
    if (f->kind == F_I32) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, sizeof x);
    } else if (f->kind == F_I64) {
        int64_t x = (int64_t)v;
        memcpy(p, &x, sizeof x);
    } else if (f->kind == F_REAL) {
        memcpy(p, &v, sizeof v);
    } else if (f->kind == F_BOOL) {
        bool x = v != 0;
        memcpy(p, &x, sizeof x);
    }
}

/* Store an int64 count exactly (past 2^53 a double would round it). */
static void store_count(struct reading *r, const struct field *f, int64_t v)
{
    char *p = (char *)r + f->at;
    if (f->kind == F_I32) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, sizeof x);
    } else {
        memcpy(p, &v, sizeof v);
    }
}

/* The default of an absent (or null) field: 0, or a message when it is required. */
static int read_default(struct reading *r, const struct field *f, int top, const char *family, bool null,
                        char *err)
{
    const struct doc *d = r->d;
    if (f->dflt == D_NEED)
        return fail_at(d, d->nodes[top].at, err, "%s: missing; a %s configuration needs it", f->key, family);
    if (f->dflt == D_HEADS) {
        store_count(r, f, r->c.heads);
    } else if (f->dflt == D_HEAD_DIM) {
        if (r->c.hidden % r->c.heads)
            return fail_at(d, d->nodes[member(d, top, "num_attention_heads")].at, err,
                           "num_attention_heads: expected a divisor of hidden_size (%lld) when head_dim is not given",
                           (long long)r->c.hidden);
        store_count(r, f, r->c.hidden / r->c.heads);
    } else {
        store(r, f, null ? 0 : f->value);
    }
    return 0;
}

/* A count field's value at node i. */
static int read_count(struct reading *r, const struct field *f, int i, char *err)
{
    const struct node *v = &r->d->nodes[i];
    if (v->type != J_INTEGER || v->i < f->lo || v->i > f->hi) {
        char got[64];
        if (v->type == J_INTEGER)
            snprintf(got, sizeof got, "%lld", (long long)v->i);
        else
            snprintf(got, sizeof got, "%s", type_name(v->type));
        if (f->lo == f->hi)
            return fail_at(r->d, v->at, err, "%s: expected %lld (the one value fusecheck lifts), got %s", f->key,
                           (long long)f->lo, got);
        return fail_at(r->d, v->at, err, "%s: expected a whole number from %lld to %lld, got %s", f->key,
                       (long long)f->lo, (long long)f->hi, got);
    }
    store_count(r, f, v->i);
    return 0;
}

/* A positive number's value at node i. */
static int read_real(struct reading *r, const struct field *f, int i, char *err)
{
    const struct node *v = &r->d->nodes[i];
    bool number = v->type == J_INTEGER || v->type == J_REAL;
    if (!number || !(v->d > 0) || !isfinite(v->d)) {
        if (number)
            return fail_at(r->d, v->at, err, "%s: expected a positive number, got %.17g", f->key, v->d);
        return fail_at(r->d, v->at, err, "%s: expected a positive number, got %s", f->key, type_name(v->type));
    }
    store(r, f, v->d);
    return 0;
}

/* A check's value at node i: the word, false, an empty array. */
static int read_check(struct reading *r, const struct field *f, int i, char *err)
{
    const struct node *v = &r->d->nodes[i];
    if (f->kind == F_IS && v->type != J_TEXT)
        return fail_at(r->d, v->at, err, "%s: expected \"%s\", got %s", f->key, f->word, type_name(v->type));
    if (f->kind == F_IS && strcmp(v->text, f->word) != 0)
        return fail_at(r->d, v->at, err, "%s: expected \"%s\" (the one fusecheck lifts), got \"%.64s\"", f->key,
                       f->word, v->text);
    if (f->kind == F_FALSE && v->type != J_FALSE)
        return fail_at(r->d, v->at, err, "%s: expected false (fusecheck lifts no other), got %s", f->key,
                       type_name(v->type));
    if (f->kind == F_EMPTY && !(v->type == J_ARRAY && children(r->d, i) == 0))
        return fail_at(r->d, v->at, err, "%s: expected [] (every layer alike), got %s%s", f->key,
                       type_name(v->type), v->type == J_ARRAY ? " with elements" : "");
    return 0;
}

/* One field of the object at node top. 0, or 1 with err. */
static int read_field(struct reading *r, const struct field *f, int top, const char *family, char *err)
{
    int i = member(r->d, top, f->key);
    if (i < 0)
        return f->kind >= F_IS ? 0 : read_default(r, f, top, family, false, err);
    enum jtype t = r->d->nodes[i].type;
    if (t == J_NULL && f->null_ok)
        return read_default(r, f, top, family, true, err);
    if (f->kind == F_I32 || f->kind == F_I64)
        return read_count(r, f, i, err);
    if (f->kind == F_REAL)
        return read_real(r, f, i, err);
    if (f->kind == F_BOOL) {
        if (t != J_TRUE && t != J_FALSE)
            return fail_at(r->d, r->d->nodes[i].at, err, "%s: expected true or false, got %s", f->key, type_name(t));
        store(r, f, t == J_TRUE);
        return 0;
    }
    return read_check(r, f, i, err);
}

/* ── What families derive ────────────────────────────────────────────────────────────────────────────────── */

/* Where a field of the top object is, or the top object's start when it is absent. */
static size_t field_at(const struct doc *d, const char *key)
{
    int i = member(d, 0, key);
    return d->nodes[i >= 0 ? i : 0].at;
}

/* ── The rotary scaling: rope_scaling (rope_parameters in Transformers 5), as Transformers' rope utilities read it ── */

/* The rotary scaling types fusecheck computes, by the name rope_type (or the older "type") gives them. */
static const struct {
    const char *name;
    enum ir_ropescale kind;
} rope_types[] = {
    {"default", IR_ROPESCALE_NONE},
    {"linear", IR_ROPESCALE_LINEAR},
    {"llama3", IR_ROPESCALE_LLAMA3},
    {"yarn", IR_ROPESCALE_YARN},
};

/* The keys a scaling object may hold; any other may change the rotation, so it is refused rather than dropped. */
static const char *const rope_keys[] = {
    "rope_type", "type",      "factor",    "original_max_position_embeddings", "low_freq_factor", "high_freq_factor",
    "beta_fast", "beta_slow", "truncate",  "attention_factor", "mscale", "mscale_all_dim", "rope_theta",
};

/* Member `key` of object obj as a number, when given: 1 (in *v, its node in *at), 0 when absent or null, -1 with err
 * when not a finite number above zero (or at least zero with zero_ok). */
static int scaling_number(const struct doc *d, int obj, const char *where, const char *key, bool zero_ok,
                          double *v, int *at, char *err)
{
    int i = member(d, obj, key);
    *at = i;
    if (i < 0 || d->nodes[i].type == J_NULL)
        return 0;
    const struct node *n = &d->nodes[i];
    if (!(n->type == J_INTEGER || n->type == J_REAL) || !isfinite(n->d) || !(zero_ok ? n->d >= 0 : n->d > 0))
        return fail_at(d, n->at, err, "%s.%s: expected a number %s, got %s", where, key,
                       zero_ok ? "not negative" : "above zero", n->type == J_INTEGER || n->type == J_REAL
                                                                    ? "one out of range" : type_name(n->type)) * -1; /* -1: the caller tells a refusal from absence */
    *v = n->d;
    return 1;
}

/* YaRN's magnitude m(scale, mscale) = 0.1 · mscale · ln scale + 1, or 1 for a scale of at most 1. */
static double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0; }

/* Every key of the scaling object obj is one fusecheck reads. 0, or 1 with err. */
static int scaling_keys_known(const struct doc *d, int obj, const char *where, char *err)
{
    for (int i = obj + 1; i < d->n; i++) {
        if (d->nodes[i].parent != obj || !d->nodes[i].key)
            continue;
        bool known = false;
        for (size_t k = 0; k < sizeof rope_keys / sizeof rope_keys[0]; k++)
            known = known || strcmp(rope_keys[k], d->nodes[i].key) == 0;
        if (!known)
            return fail_at(d, d->nodes[i].at, err, "%s.%s: a field fusecheck does not read (it may change the "
                           "rotation); expected only %s's known fields", where, d->nodes[i].key, where);
    }
    return 0;
}

/* The scaling's kind from rope_type (or type). 0 with *kind, or 1 with err (a type fusecheck does not compute). */
static int scaling_kind(const struct doc *d, int obj, const char *where, enum ir_ropescale *kind, char *err)
{
    int t = member(d, obj, "rope_type");
    t = t >= 0 ? t : member(d, obj, "type");
    if (t < 0)
        return fail_at(d, d->nodes[obj].at, err, "%s: expected a rope_type (default, linear, llama3 or yarn)", where);
    const struct node *n = &d->nodes[t];
    for (size_t k = 0; n->type == J_TEXT && k < sizeof rope_types / sizeof rope_types[0]; k++)
        if (strcmp(rope_types[k].name, n->text) == 0) {
            *kind = rope_types[k].kind;
            return 0;
        }
    if (n->type != J_TEXT)
        return fail_at(d, n->at, err, "%s.%s: expected a string, got %s", where, n->key, type_name(n->type));
    return fail_at(d, n->at, err, "%s.%s: expected default, linear, llama3 or yarn (fusecheck computes no other "
                   "rotary scaling), got '%.32s'", where, n->key, n->text);
}

/* llama3's band: low_freq_factor and high_freq_factor (high above low) and the original context, all required. */
static int read_llama3(struct reading *r, int obj, const char *where, char *err)
{
    const struct doc *d = r->d;
    struct ir_rope_scaling *s = &r->c.rope_scaling;
    double lo = 0, hi = 0, orig = 0;
    int at_lo, at_hi, at_orig;
    int got_lo = scaling_number(d, obj, where, "low_freq_factor", false, &lo, &at_lo, err);
    int got_hi = got_lo < 0 ? -1 : scaling_number(d, obj, where, "high_freq_factor", false, &hi, &at_hi, err);
    int got_orig = got_hi < 0 ? -1
                              : scaling_number(d, obj, where, "original_max_position_embeddings", false, &orig,
                                               &at_orig, err);
    if (got_orig < 0)
        return 1;
    if (!got_lo || !got_hi || !got_orig)
        return fail_at(d, d->nodes[obj].at, err, "%s: expected %s for llama3's scaling", where,
                       !got_lo ? "low_freq_factor" : !got_hi ? "high_freq_factor" : "original_max_position_embeddings");
    if (!(hi > lo))
        return fail_at(d, d->nodes[at_hi].at, err, "%s.high_freq_factor: expected above low_freq_factor (%g), got %g",
                       where, lo, hi);
    if (orig != floor(orig) || orig > (double)INT64_MAX / 2)
        return fail_at(d, d->nodes[at_orig].at, err, "%s.original_max_position_embeddings: expected a whole count",
                       where);
    s->low_freq = (struct ir_optf){true, lo};
    s->high_freq = (struct ir_optf){true, hi};
    s->orig = (int64_t)orig;
    return 0;
}

/* YaRN's fields: the original context (else max_position_embeddings; where both are given, their ratio must be the
 * factor, since Transformers' versions take one or the other), beta_fast and beta_slow, truncate (default true),
 * and the magnitude: attention_factor, else m(factor, mscale)/m(factor, mscale_all_dim) with both, else
 * m(factor, 1). */
static int read_yarn(struct reading *r, int obj, const char *where, char *err)
{
    const struct doc *d = r->d;
    struct ir_rope_scaling *s = &r->c.rope_scaling;
    double orig = 0, fast = 0, slow = 0, att = 0, ms = 0, msall = 0, f = s->factor.v;
    int a_orig, a_fast, a_slow, a_att, a_ms, a_msall;
    int g_orig = scaling_number(d, obj, where, "original_max_position_embeddings", false, &orig, &a_orig, err);
    int g_fast = g_orig < 0 ? -1 : scaling_number(d, obj, where, "beta_fast", false, &fast, &a_fast, err);
    int g_slow = g_fast < 0 ? -1 : scaling_number(d, obj, where, "beta_slow", false, &slow, &a_slow, err);
    int g_att = g_slow < 0 ? -1 : scaling_number(d, obj, where, "attention_factor", false, &att, &a_att, err);
    int g_ms = g_att < 0 ? -1 : scaling_number(d, obj, where, "mscale", true, &ms, &a_ms, err);
    int g_msall = g_ms < 0 ? -1 : scaling_number(d, obj, where, "mscale_all_dim", true, &msall, &a_msall, err);
    if (g_msall < 0)
        return 1;
    if (g_orig && (orig != floor(orig) || orig > (double)INT64_MAX / 2))
        return fail_at(d, d->nodes[a_orig].at, err, "%s.original_max_position_embeddings: expected a whole count",
                       where);
    if (g_orig && member(d, 0, "max_position_embeddings") >= 0 && (double)r->max_pos / orig != f)
        return fail_at(d, d->nodes[a_orig].at, err, "%s.factor: %g, but max_position_embeddings / "
                       "original_max_position_embeddings is %g (Transformers' versions take one or the other); "
                       "expected them equal", where, f, (double)r->max_pos / orig);
    int t = member(d, obj, "truncate");
    if (t >= 0 && d->nodes[t].type != J_TRUE && d->nodes[t].type != J_FALSE)
        return fail_at(d, d->nodes[t].at, err, "%s.truncate: expected true or false, got %s", where,
                       type_name(d->nodes[t].type));
    s->orig = g_orig ? (int64_t)orig : r->max_pos;
    s->beta_fast = (struct ir_optf){true, g_fast ? fast : IR_YARN_BETA_FAST_DEFAULT};
    s->beta_slow = (struct ir_optf){true, g_slow ? slow : IR_YARN_BETA_SLOW_DEFAULT};
    s->truncate = t < 0 || d->nodes[t].type == J_TRUE;
    double m = g_att ? att : (ms > 0 && msall > 0) ? yarn_mscale(f, ms) / yarn_mscale(f, msall) : yarn_mscale(f, 1);
    s->magnitude = (struct ir_optf){m != 1.0, m != 1.0 ? m : 0.0};
    return 0;
}

/* The model's rotary scaling: rope_scaling or rope_parameters (not both), null or absent for none; its rope_theta
 * (rope_parameters') the base where the top level gives none or the same. 0, or 1 with err. */
static int read_rope_scaling(struct reading *r, char *err)
{
    const struct doc *d = r->d;
    int a = member(d, 0, "rope_scaling"), b = member(d, 0, "rope_parameters");
    bool a_set = a >= 0 && d->nodes[a].type != J_NULL, b_set = b >= 0 && d->nodes[b].type != J_NULL;
    if (a_set && b_set)
        return fail_at(d, d->nodes[b].at, err, "rope_parameters: given beside rope_scaling; expected one of them");
    if (!a_set && !b_set)
        return 0;
    int obj = a_set ? a : b;
    const char *where = a_set ? "rope_scaling" : "rope_parameters";
    if (d->nodes[obj].type != J_OBJECT)
        return fail_at(d, d->nodes[obj].at, err, "%s: expected an object or null, got %s", where,
                       type_name(d->nodes[obj].type));
    struct ir_rope_scaling *s = &r->c.rope_scaling;
    memset(s, 0, sizeof *s);
    double theta = 0, factor = 0;
    int at_theta, at_factor;
    if (scaling_keys_known(d, obj, where, err) || scaling_kind(d, obj, where, &s->kind, err) ||
        scaling_number(d, obj, where, "rope_theta", false, &theta, &at_theta, err) < 0)
        return 1;
    if (theta > 0 && member(d, 0, "rope_theta") >= 0 && theta != r->c.rope_base)
        return fail_at(d, d->nodes[at_theta].at, err, "%s.rope_theta: %g, but rope_theta is %g; expected one base",
                       where, theta, r->c.rope_base);
    if (theta > 0)
        r->c.rope_base = theta;
    if (s->kind == IR_ROPESCALE_NONE)
        return 0;
    int got = scaling_number(d, obj, where, "factor", false, &factor, &at_factor, err);
    if (got <= 0)
        return got < 0 ? 1 : fail_at(d, d->nodes[obj].at, err, "%s: expected a factor for %s scaling", where,
                                     ir_ropescale_name(s->kind));
    s->factor = (struct ir_optf){true, factor};
    if (s->kind == IR_ROPESCALE_LLAMA3)
        return read_llama3(r, obj, where, err);
    if (s->kind == IR_ROPESCALE_YARN)
        return read_yarn(r, obj, where, err);
    return 0;
}

/* rotary_dim = head_dim × partial_rotary_factor: an even whole number of at most head_dim. 0, or 1 with err. */
static int derive_rotary(struct reading *r, char *err)
{
    double w = (double)r->c.head_dim * r->rotary_factor;
    if (w != floor(w) || w < 2 || w > (double)r->c.head_dim || fmod(w, 2) != 0)
        return fail_at(r->d, field_at(r->d, "partial_rotary_factor"), err,
                       "partial_rotary_factor: expected a fraction of head_dim (%lld) that is an even width, got %g",
                       (long long)r->c.head_dim, r->rotary_factor);
    r->c.rotary_dim = (int64_t)w;
    return 0;
}

/* gemma2: the logit scale 1/√query_pre_attn_scalar. */
static int derive_gemma2(struct reading *r, char *err)
{
    (void)err;
    r->c.query_scale = 1.0 / sqrt(r->pre_attn);
    return 0;
}

/* qwen3-next: its rotary width, and every full_attention_interval-th layer attending (layer_types, when given,
 * must say the same). */
static int derive_qwen3_next(struct reading *r, char *err)
{
    const struct doc *d = r->d;
    r->c.full_every = (int32_t)r->interval;
    r->c.routing.no_renorm = !r->norm;
    int types = member(d, 0, "layer_types");
    if (types >= 0 && d->nodes[types].type != J_NULL) {
        if (d->nodes[types].type != J_ARRAY || children(d, types) != r->c.layers)
            return fail_at(d, d->nodes[types].at, err, "layer_types: expected an array of %d layer types",
                           (int)r->c.layers);
        for (int l = 0; l < r->c.layers; l++) {
            const struct node *v = &d->nodes[element(d, types, l)];
            const char *want = (l + 1) % r->interval == 0 ? "full_attention" : "linear_attention";
            if (v->type != J_TEXT || strcmp(v->text, want) != 0)
                return fail_at(d, v->at, err, "layer_types: expected \"%s\" for layer %d (every %lld-th attends)",
                               want, l, (long long)r->interval);
        }
    }
    return derive_rotary(r, err);
}

/* gpt-oss: the clamped SwiGLU's alpha (the modelling code's constant, no config field), biases on the attention's
 * products, and layer_types, when given, sliding on even layers and full on odd ones, as the lift places windows. */
static int derive_gpt_oss(struct reading *r, char *err)
{
    const struct doc *d = r->d;
    r->c.swiglu_alpha = 1.702;
    int bias = member(d, 0, "attention_bias");
    if (!r->biased) /* false only when given */
        return fail_at(d, bias >= 0 ? d->nodes[bias].at : 0, err, "attention_bias: expected true (gpt-oss lifts its biases)");
    int types = member(d, 0, "layer_types");
    if (types < 0 || d->nodes[types].type == J_NULL)
        return 0;
    if (d->nodes[types].type != J_ARRAY || children(d, types) != r->c.layers)
        return fail_at(d, d->nodes[types].at, err, "layer_types: expected an array of %d layer types",
                       (int)r->c.layers);
    for (int l = 0; l < r->c.layers; l++) {
        const struct node *v = &d->nodes[element(d, types, l)];
        const char *want = l % 2 == 0 ? "sliding_attention" : "full_attention";
        if (v->type != J_TEXT || strcmp(v->text, want) != 0)
            return fail_at(d, v->at, err, "layer_types: expected \"%s\" for layer %d (even layers slide)", want, l);
    }
    return 0;
}

/* minicpm: each branch × scale_depth/√layers, the final norm's output ÷ hidden/dim_model_base. */
static int derive_minicpm(struct reading *r, char *err)
{
    (void)err;
    r->c.residual_mult = r->scale_depth / sqrt((double)r->c.layers);
    r->c.head_divisor = (double)r->c.hidden / r->dim_base;
    return 0;
}

/* deepseek: kv heads as many as the heads; the shared experts' width; where rope_scaling gives a factor above 1 and
 * an mscale_all_dim, the logit scale YaRN's mscale² (m = 0.1 · mscale_all_dim · ln factor + 1) over √(nope + rope). */
static int derive_deepseek(struct reading *r, char *err)
{
    const struct doc *d = r->d;
    if (r->c.kv_heads != r->c.heads)
        return fail_at(d, field_at(d, "num_key_value_heads"), err,
                       "num_key_value_heads: expected num_attention_heads (%lld): latent attention's heads share one "
                       "latent", (long long)r->c.heads);
    if (r->c.deepseek.dense_layers > r->c.layers)
        return fail_at(d, field_at(d, "first_k_dense_replace"), err,
                       "first_k_dense_replace: expected at most num_hidden_layers (%d)", (int)r->c.layers);
    r->c.deepseek.shared_ffn = r->shared * r->c.expert_ffn;
    double mscale = 0, factor = 1;
    int rs = member(d, 0, "rope_scaling");
    if (rs >= 0 && d->nodes[rs].type == J_OBJECT) {
        int f = member(d, rs, "factor"), m = member(d, rs, "mscale_all_dim");
        const struct node *fv = f >= 0 ? &d->nodes[f] : NULL, *mv = m >= 0 ? &d->nodes[m] : NULL;
        if (!fv || !(fv->type == J_INTEGER || fv->type == J_REAL) || !(fv->d > 0) || !isfinite(fv->d))
            return fail_at(d, fv ? fv->at : d->nodes[rs].at, err, "rope_scaling.factor: expected a positive number");
        if (mv && (!(mv->type == J_INTEGER || mv->type == J_REAL) || !(mv->d >= 0) || !isfinite(mv->d)))
            return fail_at(d, mv->at, err, "rope_scaling.mscale_all_dim: expected a number not negative");
        factor = fv->d;
        mscale = mv ? mv->d : 0;
    } else if (rs >= 0 && d->nodes[rs].type != J_NULL) {
        return fail_at(d, d->nodes[rs].at, err, "rope_scaling: expected an object or null, got %s",
                       type_name(d->nodes[rs].type));
    }
    if (mscale > 0 && factor > 1) { /* else 0: the lift's own 1/√(nope + rope) */
        double m = 0.1 * mscale * log(factor) + 1.0;
        r->c.query_scale = m * m / sqrt((double)(r->c.head_dim + r->c.deepseek.rope_dim));
    }
    return 0;
}

/* qwen3-moe: its routing renormalised as norm_topk_prob says. */
static int derive_qwen3_moe(struct reading *r, char *err)
{
    (void)err;
    r->c.routing.no_renorm = !r->norm;
    return 0;
}

/* deepseek-v2: greedy routing never renormalises (Transformers' DeepseekV2 ignores norm_topk_prob; DeepSeek's own
 * code renormalises instead of scaling, a routing fusecheck does not lift): norm_topk_prob must be false. */
static int derive_deepseek_v2(struct reading *r, char *err)
{
    if (r->norm)
        return fail_at(r->d, field_at(r->d, "norm_topk_prob"), err,
                       "norm_topk_prob: expected false (DeepseekV2's greedy routing weighs the chosen softmax "
                       "scores as they are)");
    r->c.routing.no_renorm = true;
    return derive_deepseek(r, err);
}

/* deepseek-v3: sigmoid scores and the correction row; its groups split the experts evenly, two or more a group, and the kept ones hold
 * num_experts_per_tok experts; renormalised as norm_topk_prob says. */
static int derive_deepseek_v3(struct reading *r, char *err)
{
    struct models_routing *rt = &r->c.routing;
    int64_t e = r->c.experts;
    if (e % rt->groups || e / rt->groups < 2)
        return fail_at(r->d, field_at(r->d, "n_group"), err,
                       "n_group: expected a divisor of n_routed_experts (%lld) leaving two or more experts a group, "
                       "got %lld", (long long)e, (long long)rt->groups);
    if (rt->topk_groups > rt->groups || rt->topk_groups * (e / rt->groups) < r->c.top_k)
        return fail_at(r->d, field_at(r->d, "topk_group"), err,
                       "topk_group: expected at most n_group (%lld) groups holding num_experts_per_tok (%lld) "
                       "experts, got %lld", (long long)rt->groups, (long long)r->c.top_k,
                       (long long)rt->topk_groups);
    rt->sigmoid = true;
    rt->correction = true;
    rt->no_renorm = !r->norm;
    return derive_deepseek(r, err);
}

/* ── The readers ─────────────────────────────────────────────────────────────────────────────────────────── */

/* A config.json a family reads: its architectures[0], its model_type, the zoo family it lifts to, its fields, and
 * what it derives from several of them (NULL: nothing). Adding a family's reader is one row here (its fields
 * above, and a function when it derives a value). */
struct reader {
    const char *architecture;
    const char *model_type;
    const char *family;
    const struct field *fields;
    int nfields;
    int (*derive)(struct reading *r, char *err);
};

#define READER(arch, type, family, fields, derive) \
    {arch, type, family, fields, (int)(sizeof fields / sizeof fields[0]), derive}

static const struct reader readers[] = {
    READER("LlamaForCausalLM", "llama", "llama", llama_fields, NULL),
    READER("Qwen3ForCausalLM", "qwen3", "qwen3", qwen3_fields, NULL),
    READER("Qwen3MoeForCausalLM", "qwen3_moe", "qwen3-moe", qwen3_moe_fields, derive_qwen3_moe),
    READER("Gemma2ForCausalLM", "gemma2", "gemma2", gemma2_fields, derive_gemma2),
    READER("Qwen3NextForCausalLM", "qwen3_next", "qwen3-next", qwen3_next_fields, derive_qwen3_next),
    READER("NemotronForCausalLM", "nemotron", "nemotron", nemotron_fields, derive_rotary),
    READER("Qwen2ForCausalLM", "qwen2", "qwen2.5", qwen2_fields, NULL),
    READER("GraniteForCausalLM", "granite", "granite", granite_fields, NULL),
    READER("MiniCPMForCausalLM", "minicpm", "minicpm", minicpm_fields, derive_minicpm),
    READER("DeepseekV2ForCausalLM", "deepseek_v2", "deepseek", deepseek_v2_fields, derive_deepseek_v2),
    READER("DeepseekV3ForCausalLM", "deepseek_v3", "deepseek", deepseek_v3_fields, derive_deepseek_v3),
    READER("GptOssForCausalLM", "gpt_oss", "gpt-oss", gpt_oss_fields, derive_gpt_oss),
    READER("Olmo2ForCausalLM", "olmo2", "olmo2", olmo2_fields, NULL),
};

#define READER_COUNT ((int)(sizeof readers / sizeof readers[0]))

/* The architectures fusecheck reads, space-separated, for a message. */
static void known_architectures(char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < READER_COUNT && n < cap; i++) {
        int w = snprintf(out + n, cap - n, "%s%s", i ? " " : "", readers[i].architecture);
        n += w > 0 ? (size_t)w : 0;
    }
}

/* The reader a string field names (architectures[0] or model_type), or a message at it. */
static const struct reader *reader_named(const struct doc *d, int i, const char *what, bool by_arch, char *err)
{
    const struct node *v = &d->nodes[i];
    for (int k = 0; v->type == J_TEXT && k < READER_COUNT; k++)
        if (strcmp(by_arch ? readers[k].architecture : readers[k].model_type, v->text) == 0)
            return &readers[k];
    char known[512];
    known_architectures(known, sizeof known);
    if (v->type != J_TEXT)
        fail_at(d, v->at, err, "%s: expected a string, got %s", what, type_name(v->type));
    else if (by_arch)
        fail_at(d, v->at, err, "%s: unknown architecture '%.64s'; fusecheck reads %s", what, v->text, known);
    else
        fail_at(d, v->at, err, "%s: unknown model_type '%.64s'", what, v->text);
    return NULL;
}

/* The family's reader: architectures[0] when given (model_type, when also given, must agree), else model_type. */
static const struct reader *pick_reader(const struct doc *d, char *err)
{
    int arch = member(d, 0, "architectures"), type = member(d, 0, "model_type");
    if (arch < 0 && type < 0) {
        fail_at(d, d->nodes[0].at, err, "architectures: missing (and no model_type); expected [\"...ForCausalLM\"]");
        return NULL;
    }
    if (arch < 0)
        return reader_named(d, type, "model_type", false, err);
    if (d->nodes[arch].type != J_ARRAY || children(d, arch) < 1) {
        fail_at(d, d->nodes[arch].at, err, "architectures: expected an array of one or more names");
        return NULL;
    }
    const struct reader *r = reader_named(d, element(d, arch, 0), "architectures", true, err);
    if (r && type >= 0 && !(d->nodes[type].type == J_TEXT && strcmp(d->nodes[type].text, r->model_type) == 0)) {
        fail_at(d, d->nodes[type].at, err, "model_type: expected \"%s\" for %s", r->model_type, r->architecture);
        return NULL;
    }
    return r;
}

/* What every family checks and derives alike: heads grouped evenly, an even head, top_k within the experts, the
 * context, tiny or not. 0, or 1 with err. */
static int settle(struct reading *r, const struct reader *rd, char *err)
{
    struct models_config *c = &r->c;
    const struct doc *d = r->d;
    if (c->heads % c->kv_heads)
        return fail_at(d, field_at(d, "num_key_value_heads"), err,
                       "num_key_value_heads: expected a divisor of num_attention_heads (%lld), got %lld",
                       (long long)c->heads, (long long)c->kv_heads);
    if (c->head_dim % 2)
        return fail_at(d, field_at(d, member(d, 0, "head_dim") >= 0 ? "head_dim" : "qk_nope_head_dim"), err,
                       "head_dim: expected an even width, got %lld", (long long)c->head_dim);
    if (c->experts && c->top_k > c->experts)
        return fail_at(d, field_at(d, "num_experts_per_tok"), err,
                       "num_experts_per_tok: expected at most the %lld experts, got %lld", (long long)c->experts,
                       (long long)c->top_k);
    if (read_rope_scaling(r, err) || (rd->derive && rd->derive(r, err)))
        return 1;
    /* The zoo's context, or two windows where a window is wider than half of it; never past the model's. */
    int64_t want = c->window > CONFIG_CTX / 2 ? 2 * c->window : CONFIG_CTX;
    c->ctx = r->max_pos < want ? r->max_pos : want;
    int64_t params = models_param_count(c);
    c->tiny = params >= 0 && params < TINY_PARAMS;
    return 0;
}

/* Read the document's configuration into r (its family named by the reader). 0, or 1 with err. */
static int read_config(struct reading *r, char *err)
{
    const struct doc *d = r->d;
    if (d->nodes[0].type != J_OBJECT)
        return fail_at(d, d->nodes[0].at, err, "expected a JSON object (a config.json), got %s",
                       type_name(d->nodes[0].type));
    const struct reader *rd = pick_reader(d, err);
    if (!rd)
        return 1;
    r->c.family = rd->family;
    for (int i = 0; i < rd->nfields; i++)
        if (read_field(r, &rd->fields[i], 0, rd->family, err))
            return 1;
    return settle(r, rd, err);
}

struct models_config *models_parse_config(const char *text, size_t len, const char *label, const char *name,
                                          char err[IR_ERR_LEN])
{
    struct doc d = {.label = label ? label : "config.json", .text = text ? text : "", .len = text ? len : 0};
    struct reading r;
    memset(&r, 0, sizeof r);
    r.d = &d;
    int rc = doc_parse(&d, err) || read_config(&r, err);
    doc_free(&d);
    if (rc)
        return NULL;
    size_t nlen = strlen(name ? name : "config");
    struct models_config *c = malloc(sizeof *c + nlen + 1);
    if (!c) {
        snprintf(err, IR_ERR_LEN, "%s: out of memory", d.label);
        return NULL;
    }
    *c = r.c;
    char *own = (char *)(c + 1);
    memcpy(own, name ? name : "config", nlen + 1);
    c->name = own;
    return c;
}

/* The model's name for the file at path: its name less ".json"; for a file called config.json, its folder's. */
static void name_of(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    if (len == 6 && strncmp(base, "config", 6) == 0 && base > path + 1) {
        const char *end = base - 1, *start = end;
        while (start > path && start[-1] != '/')
            start--;
        if (end > start) {
            base = start;
            len = (size_t)(end - start);
        }
    }
    snprintf(out, cap, "%.*s", (int)(len < cap ? len : cap - 1), base);
}

struct models_config *models_read_config(const char *path, char err[IR_ERR_LEN])
{
    size_t len = 0;
    errno = 0;
    char *text = ir_read_file(path, &len);
    if (!text) {
        snprintf(err, IR_ERR_LEN, "%s:1:1: cannot read: %s", path, strerror(errno ? errno : EIO));
        return NULL;
    }
    char name[IR_MAX_NAME + 1];
    name_of(path, name, sizeof name);
    struct models_config *c = models_parse_config(text, len, path, name, err);
    free(text);
    return c;
}

void models_config_free(struct models_config *c) { free(c); }
