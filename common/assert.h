/*
 * common/assert.h - always-on assertions.
 *
 * VS_ASSERT(expr): in every build, prints the expression, file, line and
 * pid to the log (and stderr) and aborts. For invariants whose violation
 * means memory or state is already wrong: never for bad input, which gets
 * an error. VS_DASSERT: only in debug builds (-DVS_DEBUG), for hot paths.
 * Callers: any process.
 */
#ifndef VS_COMMON_ASSERT_H
#define VS_COMMON_ASSERT_H

_Noreturn void vs_assert_fail(const char *expr, const char *file, int line,
                              const char *func);

#define VS_ASSERT(expr)                                                        \
    (__builtin_expect(!!(expr), 1)                                             \
         ? (void)0                                                             \
         : vs_assert_fail(#expr, __FILE__, __LINE__, __func__))

#ifdef VS_DEBUG
#define VS_DASSERT(expr) VS_ASSERT(expr)
#else
#define VS_DASSERT(expr) ((void)0)
#endif

#endif /* VS_COMMON_ASSERT_H */
