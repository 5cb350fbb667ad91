/*
 * common/assert.c - the failure path of VS_ASSERT. Any process.
 */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/log.h"

void
vs_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    vs_log(VS_LOG_ERROR, "assertion failed: %s at %s:%d in %s() pid %d", expr,
           file, line, func, (int)getpid());
    abort();
}
