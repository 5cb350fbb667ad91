/*
 * common/mem.h - allocation that never returns NULL.
 *
 * vs_xmalloc/vs_xcalloc/vs_xrealloc/vs_xstrdup log and abort on out of
 * memory, so call sites never check for NULL. Any process.
 */
#ifndef VS_COMMON_MEM_H
#define VS_COMMON_MEM_H

#include <stddef.h>

void *vs_xmalloc(size_t n);
void *vs_xcalloc(size_t count, size_t size);
void *vs_xrealloc(void *p, size_t n);
char *vs_xstrdup(const char *s);

#endif /* VS_COMMON_MEM_H */
