/* ir/text.c — a growing text buffer that the modules print reports, golden files and schedules into. */
#include "ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Room for need more bytes and the terminator, doubling from 256; aborts when memory is exhausted. */
static void text_reserve(struct ir_text *t, size_t need)
{
    if (t->n + need + 1 <= t->cap)
        return;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->n + need + 1)
        cap *= 2;
    char *s = realloc(t->s, cap);
    if (!s)
        abort();
    t->s = s;
    t->cap = cap;
}

void ir_text_add(struct ir_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0)
        abort();
    text_reserve(t, (size_t)need);
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    t->n += (size_t)need;
}

void ir_text_put(struct ir_text *t, const void *bytes, size_t n)
{
    text_reserve(t, n);
    memcpy(t->s + t->n, bytes, n);
    t->n += n;
}

char *ir_text_take(struct ir_text *t)
{
    text_reserve(t, 0);
    t->s[t->n] = '\0';
    char *s = t->s;
    *t = (struct ir_text){0};
    return s;
}
