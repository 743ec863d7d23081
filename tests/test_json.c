/* tests/test_json.c — the JSON writer behind every --json (cli/json.c): string escaping (quotes, backslashes, every
 * control character, bytes that are not UTF-8), numbers, nesting and member order, each document read back by
 * python3's json module where python3 is installed. */
#include "cli/cli.h"
#include "tests/check.h"

#include <stdlib.h>
#include <string.h>

/* What cli_json_escape writes for s, in a static buffer. */
static const char *escaped(const char *s)
{
    static char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    CHECK(f != NULL);
    cli_json_escape(f, s);
    fclose(f);
    return buf;
}

/* Escaping: what JSON requires escaped is, the rest of valid UTF-8 is written as it is, and invalid bytes become
 * U+FFFD one a byte. */
static void test_escape(void)
{
    CHECK_STR(escaped(""), "\"\"");
    CHECK_STR(escaped("add_norm"), "\"add_norm\"");
    CHECK_STR(escaped("say \"hi\""), "\"say \\\"hi\\\"\"");
    CHECK_STR(escaped("a\\b"), "\"a\\\\b\"");
    CHECK_STR(escaped("l1\nl2\tx\r\b\f"), "\"l1\\nl2\\tx\\r\\b\\f\"");
    CHECK_STR(escaped("\x01\x1f\x7f"), "\"\\u0001\\u001f\x7f\"");
    CHECK_STR(escaped("/"), "\"/\"");
    CHECK_STR(escaped("\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"), "\"\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80\"");
    CHECK_STR(escaped("a\xff" "b"), "\"a\\ufffdb\"");           /* a byte no UTF-8 has */
    CHECK_STR(escaped("\x80"), "\"\\ufffd\"");                   /* a stray continuation byte */
    CHECK_STR(escaped("\xc3"), "\"\\ufffd\"");                   /* a sequence cut short */
    CHECK_STR(escaped("\xc0\xaf"), "\"\\ufffd\\ufffd\"");        /* overlong */
    CHECK_STR(escaped("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\""); /* a surrogate */
    CHECK_STR(escaped("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* past U+10FFFF */
    for (int c = 1; c < 0x20; c++) { /* every control character escaped */
        char s[2] = {(char)c, 0};
        CHECKF(strchr(escaped(s), c) == NULL, "control character %d written raw", c);
    }
}

/* A whole document: members in the order written, commas between, numbers exact, non-finite ones null. */
static void test_document(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct cli_json j;
    cli_json_start(&j, f);
    cli_json_object(&j, NULL);
    cli_json_int(&j, "run", 42);
    cli_json_string(&j, "rule", "add\"norm");
    cli_json_string(&j, "none", NULL);
    cli_json_number(&j, "x", 0.1);
    cli_json_number(&j, "inf", 1.0 / 0.0);
    cli_json_bool(&j, "ok", false);
    cli_json_null(&j, "n");
    cli_json_array(&j, "covers");
    cli_json_int(&j, NULL, 152);
    cli_json_int(&j, NULL, 1072);
    cli_json_end(&j);
    cli_json_array(&j, "empty");
    cli_json_end(&j);
    cli_json_object(&j, "o");
    cli_json_end(&j);
    cli_json_end(&j);
    fclose(f);
    CHECK_STR(text, "{\"run\":42,\"rule\":\"add\\\"norm\",\"none\":null,\"x\":0.10000000000000001,\"inf\":null,"
                    "\"ok\":false,\"n\":null,\"covers\":[152,1072],\"empty\":[],\"o\":{}}\n");
    /* python3 reads it back (where installed) */
    FILE *py = popen("command -v python3 >/dev/null && python3 -c 'import json, sys; d = json.load(sys.stdin); "
                     "assert d[\"rule\"] == \"add\\\"norm\" and d[\"covers\"] == [152, 1072] and d[\"x\"] == 0.1' "
                     "|| { command -v python3 >/dev/null && exit 1; exit 0; }",
                     "w");
    CHECK(py != NULL);
    fputs(text, py);
    CHECK(pclose(py) == 0);
    free(text);
}

/* Every byte value in a string, read back by python3 as the string written (invalid bytes as U+FFFD). */
static void test_all_bytes(void)
{
    char s[256];
    for (int i = 1; i < 256; i++)
        s[i - 1] = (char)i;
    s[255] = 0;
    FILE *py = popen("command -v python3 >/dev/null || exit 0; python3 -c 'import json, sys; "
                     "v = json.loads(sys.stdin.buffer.read().decode(\"utf-8\")); "
                     "want = bytes(range(1, 128)).decode() + \"\\ufffd\" * 128; "
                     "sys.exit(0 if v == want else 1)'",
                     "w");
    CHECK(py != NULL);
    cli_json_escape(py, s);
    CHECK(pclose(py) == 0);
}

int main(void)
{
    test_escape();
    test_document();
    test_all_bytes();
    return check_done("json");
}
