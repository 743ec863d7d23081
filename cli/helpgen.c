/* cli/helpgen.c — what is made of the help texts (cli/helpdocs.c) and nothing else: the manual page (roff) and the
 * bash and zsh completion scripts, each written by `fusecheck help --man` / `--completion SHELL` and installed by
 * `cmake --install`. No second copy of a text is kept. */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The most options or subcommands a command's completion lists. */
#define MAX_WORDS 96

/* ── roff ────────────────────────────────────────────────────────────────────────────────────────────────── */

/* The code point of the UTF-8 sequence at s (its length into *len), or the byte itself (length 1) when none. */
static unsigned utf8_point(const unsigned char *s, size_t n, size_t *len)
{
    int k = s[0] >= 0xf0 ? 3 : s[0] >= 0xe0 ? 2 : s[0] >= 0xc0 ? 1 : 0;
    unsigned cp = k ? s[0] & (0x3fu >> k) : s[0];
    for (int i = 1; i <= k; i++) {
        if ((size_t)i >= n || (s[i] & 0xc0) != 0x80) {
            *len = 1;
            return s[0];
        }
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    *len = (size_t)k + 1;
    return cp;
}

/* Write n bytes of text as roff text: backslashes and hyphens escaped, characters past ASCII as \[uXXXX], a line
 * that would start with a control character ('.' or '\'') guarded with \&. */
static void roff_text(FILE *out, const char *s, size_t n)
{
    bool line_start = true;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = 1;
        if (line_start && (c == '.' || c == '\''))
            fputs("\\&", out);
        if (c == '\\')
            fputs("\\e", out);
        else if (c == '-')
            fputs("\\-", out);
        else if (c >= 0x80)
            fprintf(out, "\\[u%04X]", utf8_point((const unsigned char *)s + i, n - i, &len));
        else
            fputc(c, out);
        line_start = c == '\n';
        i += len;
    }
}

/* roff_text of a whole string. */
static void roff(FILE *out, const char *s) { roff_text(out, s, strlen(s)); }

/* The overview's text (what `fusecheck help` prints), malloc'd. */
static char *overview_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    cli_overview(f);
    if (fclose(f) != 0 || !text)
        abort();
    return text;
}

/* One command's section of the manual page: its summary, its usage lines, its options. */
static void man_command(FILE *out, const struct cli_command *c)
{
    fputs(".SS ", out);
    roff(out, c->name);
    fputs("\n", out);
    roff(out, c->summary);
    fputs(".\n.PP\n.nf\n", out);
    roff(out, c->usage);
    fputs("\n.fi\n", out);
    struct cli_option_text opts[64];
    int n = cli_command_options(c, opts, 64);
    for (int i = 0; i < n; i++) {
        fputs(".TP\n.B ", out);
        roff(out, opts[i].option);
        fputs("\n", out);
        roff(out, opts[i].meaning);
        fputs("\n", out);
    }
}

void cli_help_man(FILE *out)
{
    fputs(".\\\" fusecheck(1), made by `fusecheck help --man` from the help texts (cli/helpdocs.c)\n", out);
    fprintf(out, ".TH FUSECHECK 1 \"\" \"fusecheck %s\" \"User Commands\"\n", FUSECHECK_VERSION);
    fputs(".SH NAME\nfusecheck \\- checks a fusion optimizer for LLM inference\n", out);
    fputs(".SH SYNOPSIS\n.B fusecheck\n.I COMMAND\n[\\fIARGS\\fR]\n.br\n.B fusecheck help\n[\\fICOMMAND\\fR]\n", out);
    fputs(".SH DESCRIPTION\n.nf\n", out);
    char *text = overview_text();
    roff(out, text);
    free(text);
    fputs(".fi\n.SH COMMANDS\n", out);
    for (size_t i = 0; i < cli_command_count(); i++)
        man_command(out, cli_command_at(i));
    fputs(".SH FILES\n.TP\n.I results.db\nthe results file every writer logs to by default (docs/results-db.md)\n", out);
    fputs(".SH SEE ALSO\nThe README and docs/ of the source tree.\n", out);
}

/* ── Completion ──────────────────────────────────────────────────────────────────────────────────────────── */

/* Add the word s (n bytes) to words unless it is there already. */
static void add_word(char words[][64], int *n, const char *s, size_t len)
{
    if (len == 0 || len >= 64 || *n == MAX_WORDS)
        return;
    for (int i = 0; i < *n; i++)
        if (strlen(words[i]) == len && memcmp(words[i], s, len) == 0)
            return;
    memcpy(words[*n], s, len);
    words[(*n)++][len] = '\0';
}

/* The options a command takes: every `--name` and `-o` its usage and its options' help name, in order. */
static int command_options(const struct cli_command *c, char words[][64])
{
    int n = 0;
    struct cli_option_text opts[64];
    int k = cli_command_options(c, opts, 64);
    for (int i = -1; i < k; i++) {
        const char *s = i < 0 ? c->usage : opts[i].option;
        for (const char *p = s; *p; p++) {
            bool starts = (p == s || !isalnum((unsigned char)p[-1])) && p[0] == '-';
            if (!starts)
                continue;
            size_t len = 1 + strspn(p + 1, "-abcdefghijklmnopqrstuvwxyz0123456789");
            bool long_opt = len > 2 && p[1] == '-';
            bool short_opt = len == 2 && isalpha((unsigned char)p[1]);
            if (long_opt || short_opt)
                add_word(words, &n, p, len);
            p += len - 1;
        }
    }
    return n;
}

/* The subcommands a command's usage lines name: the lowercase word after `fusecheck NAME` (db runs, fuzz seeds);
 * for help, every command. */
static int command_subcommands(const struct cli_command *c, char words[][64])
{
    int n = 0;
    if (strcmp(c->name, "help") == 0) {
        for (size_t i = 0; i < cli_command_count(); i++)
            add_word(words, &n, cli_command_at(i)->name, strlen(cli_command_at(i)->name));
        return n;
    }
    char prefix[80];
    snprintf(prefix, sizeof prefix, "fusecheck %s ", c->name);
    for (const char *p = strstr(c->usage, prefix); p; p = strstr(p + 1, prefix)) {
        const char *w = p + strlen(prefix);
        size_t len = strspn(w, "abcdefghijklmnopqrstuvwxyz-");
        if (len && w[0] != '-' && (w[len] == ' ' || w[len] == '\n' || w[len] == '\0'))
            add_word(words, &n, w, len);
    }
    return n;
}

/* Write words as one space-separated list. */
static void word_list(FILE *out, char words[][64], int n)
{
    for (int i = 0; i < n; i++)
        fprintf(out, "%s%s", i ? " " : "", words[i]);
}

/* The arms of a shell `case` over the command word, one a command, setting its options and subcommands as lists
 * between `open` and `close` (bash: quotes; zsh: an array's parentheses). */
static void case_arms(FILE *out, const char *open, const char *close)
{
    char words[MAX_WORDS][64];
    for (size_t i = 0; i < cli_command_count(); i++) {
        const struct cli_command *c = cli_command_at(i);
        fprintf(out, "        %s) opts=%s", c->name, open);
        word_list(out, words, command_options(c, words));
        fprintf(out, "%s subs=%s", close, open);
        word_list(out, words, command_subcommands(c, words));
        fprintf(out, "%s ;;\n", close);
    }
}

/* The bash script: complete -F over the commands, then each command's subcommands and options. */
static void completion_bash(FILE *out)
{
    fputs("# bash completion for fusecheck, made by `fusecheck help --completion bash` from its help texts\n"
          "_fusecheck() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} opts=\"\" subs=\"\"\n"
          "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "        COMPREPLY=($(compgen -W \"",
          out);
    for (size_t i = 0; i < cli_command_count(); i++)
        fprintf(out, "%s%s", i ? " " : "", cli_command_at(i)->name);
    fputs("\" -- \"$cur\"))\n        return\n    fi\n    case ${COMP_WORDS[1]} in\n", out);
    case_arms(out, "\"", "\"");
    fputs("    esac\n"
          "    if [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "    elif [ \"$COMP_CWORD\" -eq 2 ] && [ -n \"$subs\" ]; then\n"
          "        COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "}\n"
          "complete -o filenames -F _fusecheck fusecheck\n",
          out);
}

/* Write s inside a zsh single-quoted _describe item: quotes closed and reopened around a quote, colons escaped. */
static void zsh_described(FILE *out, const char *s)
{
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", out);
        else if (*s == ':')
            fputs("\\:", out);
        else
            fputc(*s, out);
}

/* The zsh script (#compdef): the commands with their summaries, then each command's subcommands and options. */
static void completion_zsh(FILE *out)
{
    fputs("#compdef fusecheck\n"
          "# zsh completion for fusecheck, made by `fusecheck help --completion zsh` from its help texts\n"
          "_fusecheck() {\n"
          "    local -a commands opts subs\n"
          "    commands=(\n",
          out);
    for (size_t i = 0; i < cli_command_count(); i++) {
        const struct cli_command *c = cli_command_at(i);
        fputs("        '", out);
        zsh_described(out, c->name);
        fputs(":", out);
        zsh_described(out, c->summary);
        fputs("'\n", out);
    }
    fputs("    )\n"
          "    if (( CURRENT == 2 )); then\n"
          "        _describe -t commands 'fusecheck command' commands\n"
          "        return\n"
          "    fi\n"
          "    case $words[2] in\n",
          out);
    case_arms(out, "(", ")");
    fputs("    esac\n"
          "    if [[ $PREFIX == -* ]]; then\n"
          "        compadd -a opts\n"
          "    elif (( CURRENT == 3 && ${#subs} )); then\n"
          "        compadd -a subs\n"
          "    else\n"
          "        _files\n"
          "    fi\n"
          "}\n"
          "_fusecheck \"$@\"\n",
          out);
}

void cli_help_completion(FILE *out, const char *shell)
{
    if (strcmp(shell, "zsh") == 0)
        completion_zsh(out);
    else
        completion_bash(out);
}
