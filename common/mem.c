/*
 * common/mem.c - see mem.h. Any process.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/mem.h"

static _Noreturn void
out_of_memory(size_t n)
{
    vs_log(VS_LOG_ERROR, "out of memory allocating %zu bytes", n);
    abort();
}

void *
vs_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        out_of_memory(n);
    return p;
}

void *
vs_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL)
        out_of_memory(count * size);
    return p;
}

void *
vs_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        out_of_memory(n);
    return q;
}

char *
vs_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = vs_xmalloc(n);
    memcpy(p, s, n);
    return p;
}
