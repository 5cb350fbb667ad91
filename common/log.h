/*
 * common/log.h - process logging.
 *
 * Role: one log line per event, prefixed with a UTC timestamp, the
 * process role (`sup`, `shard0`, `shard3`, a tool name), its pid and the
 * level: `2026-11-29T15:04:11.123456Z shard0[1234] INFO message`.
 * Lines go to stderr, or to the configured log file (append mode),
 * which vs_log_reopen() reopens (SIGHUP, logrotate).
 *
 * Invariants: each line is written with one write(2) so lines from the
 * processes of a node sharing one file never interleave mid-line.
 * vs_log_sig() is the only function here that is async-signal-safe.
 * Callers: any process; each process calls vs_log_init() once after fork.
 */
#ifndef VS_COMMON_LOG_H
#define VS_COMMON_LOG_H

#include <stdarg.h>

enum vs_log_level {
    VS_LOG_ERROR = 0,
    VS_LOG_WARN = 1,
    VS_LOG_INFO = 2,
    VS_LOG_DEBUG = 3,
};

/* Sets the role shown on each line (copied; at most 15 characters) and
 * the minimum level. Logging before init uses role "vstream", level INFO. */
void vs_log_init(const char *role, enum vs_log_level level);
/* Changes the role after fork (the child keeps the parent's file). */
void vs_log_set_role(const char *role);
void vs_log_set_level(enum vs_log_level level);
enum vs_log_level vs_log_get_level(void);

/* Directs output to `path` (append, created 0640), or to stderr when NULL.
 * Returns 0 or -errno; on failure the previous destination stays. */
int vs_log_open_file(const char *path);
/* Reopens the current log file (after rotation). 0 or -errno. */
int vs_log_reopen(void);
/* Current output fd (stderr or the file). */
int vs_log_fd(void);

/* "error", "warn", "info", "debug" -> level; returns 0 or -EINVAL. */
int vs_log_level_parse(const char *s, enum vs_log_level *out);
const char *vs_log_level_name(enum vs_log_level level);

void vs_log(enum vs_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void vs_logv(enum vs_log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#define vs_log_error(...) vs_log(VS_LOG_ERROR, __VA_ARGS__)
#define vs_log_warn(...)  vs_log(VS_LOG_WARN, __VA_ARGS__)
#define vs_log_info(...)  vs_log(VS_LOG_INFO, __VA_ARGS__)
#define vs_log_debug(...) vs_log(VS_LOG_DEBUG, __VA_ARGS__)

/* Async-signal-safe: writes "<role>[<pid>] SIGNAL <msg>\n" with write(2)
 * only (no timestamp, no formatting beyond the pid). */
void vs_log_sig(const char *msg);

#endif /* VS_COMMON_LOG_H */
