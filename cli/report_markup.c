/* cli/report_markup.c — the page of `fusecheck report` as it grows: markup and escaped text appended, queries
 * read into it, and tables written from queries. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Append len bytes to the page. */
void cli_page_put_n(struct cli_page *p, const char *s, size_t len)
{
    if (p->len + len + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 1 << 16;
        while (cap < p->len + len + 1)
            cap *= 2;
        char *grown = realloc(p->s, cap);
        if (!grown)
            abort();
        p->s = grown;
        p->cap = cap;
    }
    memcpy(p->s + p->len, s, len);
    p->len += len;
    p->s[p->len] = '\0';
}

/* Append text to the page as it is (markup). */
void cli_page_put(struct cli_page *p, const char *s) { cli_page_put_n(p, s, strlen(s)); }

/* Append formatted markup to the page (every value in it a number or a fixed word: nothing to escape). */
void cli_page_putf(struct cli_page *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        abort();
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cli_page_put_n(p, buf, (size_t)n);
    free(buf);
}

/* Append text to the page escaped for HTML (and SVG): NULL appends nothing. */
void cli_page_esc(struct cli_page *p, const char *s)
{
    static const struct {
        char c;
        const char *entity;
    } entities[] = {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
    for (; s && *s; s++) {
        size_t i = 0;
        while (i < sizeof entities / sizeof entities[0] && entities[i].c != *s)
            i++;
        if (i < sizeof entities / sizeof entities[0])
            cli_page_put(p, entities[i].entity);
        else
            cli_page_put_n(p, s, 1);
    }
}

/* Append formatted text to the page escaped for HTML (a sentence whose values come from the file). */
void cli_page_escf(struct cli_page *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cli_page_esc(p, buf);
}

/* Run a read query with the given parameters, each row to fn; the first error is kept. A query of the decision
 * changes (changes_cache) has them computed for its pair (?1, ?2) first, once a page. */
void cli_report_query(struct cli_report *r, const char *sql, const int64_t *params, int n, db_row_fn fn, void *ctx)
{
    char err[DB_ERR_LEN];
    bool changes = n >= 2 && strstr(sql, "changes_cache") != NULL;
    if (!r->failed && ((changes && db_changes_cache(r->db, params[0], params[1], err)) ||
                       db_select(r->db, sql, params, n, fn, ctx, err))) {
        r->failed = 1;
        snprintf(r->err, sizeof r->err, "%s", err);
    }
}

/* A column as an integer (NULL: 0). */
int64_t cli_report_int(const char *v) { return v ? strtoll(v, NULL, 10) : 0; }

/* A column as a real (NULL: 0). */
double cli_report_real(const char *v) { return v ? strtod(v, NULL) : 0; }

/* Keep a one-value query's answer as a number (NULL: 0). */
void cli_report_take_number(const char *const *cols, int n, void *ctx)
{
    *(int64_t *)ctx = n > 0 ? cli_report_int(cols[0]) : 0;
}

/* The integer a one-value query answers for one run and its previous one (0 when none or NULL). */
int64_t cli_report_number(struct cli_report *r, const char *sql, const struct cli_report_run *run)
{
    int64_t params[2] = {run->id, run->prev}, v = 0;
    cli_report_query(r, sql, params, 2, cli_report_take_number, &v);
    return v;
}

bool cli_report_kind_in(const char *kind, const char *list)
{
    if (!list)
        return true;
    size_t n = strlen(kind);
    for (const char *p = list; n && (p = strstr(p, kind)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* ── Tables from queries ─────────────────────────────────────────────────────────────────────────────────── */

/* A table being written: its spec, the run it is of (its id suffixes the table's), rows seen, the page. */
struct table_state {
    const struct cli_report_table *t;
    int64_t run, rows;
    struct cli_page *page;
};

/* The number of headings of a table. */
static int heads_of(const struct cli_report_table *t)
{
    int n = 0;
    while (n < DB_SELECT_COLUMNS && t->heads[n])
        n++;
    return n;
}

/* Write one row of a table (its opening first), or only count it past the cap. */
static void table_row(const char *const *cols, int n, void *ctx)
{
    struct table_state *s = ctx;
    int shown = heads_of(s->t);
    if (s->rows++ == 0) {
        cli_page_putf(s->page, "<table id=\"%s-%lld\"><thead><tr>", s->t->id, (long long)s->run);
        for (int i = 0; i < shown; i++) {
            cli_page_put(s->page, "<th>");
            cli_page_esc(s->page, s->t->heads[i]);
            cli_page_put(s->page, "</th>");
        }
        cli_page_put(s->page, "</tr></thead><tbody>\n");
    }
    if (s->t->cap && s->rows > s->t->cap)
        return;
    cli_page_put(s->page, "<tr");
    if (n > shown && cols[shown]) {
        cli_page_put(s->page, " class=\"");
        cli_page_esc(s->page, cols[shown]);
        cli_page_put(s->page, "\"");
    }
    cli_page_put(s->page, ">");
    for (int i = 0; i < shown && i < n; i++) {
        cli_page_put(s->page, "<td>");
        cli_page_esc(s->page, cols[i]);
        cli_page_put(s->page, "</td>");
    }
    cli_page_put(s->page, "</tr>\n");
}

/* Write a table over this run and its previous one, or the sentence saying it has no rows. Its row count. */
int64_t cli_report_table(struct cli_report *r, const struct cli_report_table *t, const struct cli_report_run *run)
{
    struct table_state s = {t, run->id, 0, &r->page};
    int64_t params[2] = {run->id, run->prev};
    cli_report_query(r, t->sql, params, 2, table_row, &s);
    if (s.rows == 0) {
        cli_page_put(&r->page, "<p class=\"empty\">");
        cli_page_esc(&r->page, t->none);
        cli_page_put(&r->page, "</p>\n");
        return 0;
    }
    cli_page_put(&r->page, "</tbody></table>\n");
    if (t->cap && s.rows > t->cap)
        cli_page_putf(&r->page,
                      "<p class=\"more\">… and %lld more rows (the query in docs/results-db.md lists them all)</p>\n",
                      (long long)(s.rows - t->cap));
    return s.rows;
}
