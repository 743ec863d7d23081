/* cli/json.c — the one JSON writer behind every --json: values written as they come, members in the order the
 * caller writes them (so a command's output is deterministic), strings escaped by RFC 8259 and kept valid UTF-8. */
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The short escapes JSON has for control characters, by character (0: written as \u00XX). */
static const char short_escape[0x20] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};

/* The length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there are not one (a stray continuation
 * byte, a truncated or overlong sequence, a surrogate, a code point past U+10FFFF). */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
                           : s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

void cli_json_escape(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = utf8_length(p);
        if (n == 0) { /* not UTF-8: the replacement character, so the document stays valid */
            fputs("\\ufffd", out);
            p++;
        } else if (*p == '"' || *p == '\\') {
            fputc('\\', out);
            fputc(*p++, out);
        } else if (*p < 0x20) {
            if (short_escape[*p])
                fprintf(out, "\\%c", short_escape[*p]);
            else
                fprintf(out, "\\u%04x", *p);
            p++;
        } else {
            fwrite(p, 1, (size_t)n, out);
            p += n;
        }
    }
    fputc('"', out);
}

void cli_json_start(struct cli_json *j, FILE *out)
{
    memset(j, 0, sizeof *j);
    j->out = out;
}

/* Before a value: the comma after the previous member, and the member's key where the container is an object. */
static void member(struct cli_json *j, const char *key)
{
    if (j->depth > 0 && j->members[j->depth - 1]++)
        fputc(',', j->out);
    if (key) {
        cli_json_escape(j->out, key);
        fputc(':', j->out);
    }
}

/* Open a container ('{' or '['). */
static void open_container(struct cli_json *j, const char *key, char c)
{
    if (j->depth == CLI_JSON_DEPTH)
        abort(); /* a writer's bug: no document of fusecheck's nests this deep */
    member(j, key);
    fputc(c, j->out);
    j->close[j->depth] = c == '{' ? '}' : ']';
    j->members[j->depth++] = 0;
}

void cli_json_object(struct cli_json *j, const char *key) { open_container(j, key, '{'); }

void cli_json_array(struct cli_json *j, const char *key) { open_container(j, key, '['); }

void cli_json_end(struct cli_json *j)
{
    if (j->depth == 0)
        abort(); /* a writer's bug: more ends than opens */
    fputc(j->close[--j->depth], j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void cli_json_string(struct cli_json *j, const char *key, const char *v)
{
    member(j, key);
    if (v)
        cli_json_escape(j->out, v);
    else
        fputs("null", j->out);
}

void cli_json_int(struct cli_json *j, const char *key, long long v)
{
    member(j, key);
    fprintf(j->out, "%lld", v);
}

void cli_json_number(struct cli_json *j, const char *key, double v)
{
    member(j, key);
    if (isfinite(v))
        fprintf(j->out, "%.17g", v); /* read back as the same double */
    else
        fputs("null", j->out); /* JSON has no infinity or NaN */
}

void cli_json_bool(struct cli_json *j, const char *key, bool v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->out);
}

void cli_json_null(struct cli_json *j, const char *key)
{
    member(j, key);
    fputs("null", j->out);
}
