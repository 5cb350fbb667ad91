/*
 * common/log.c - see log.h. State is per process (static), set after fork.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static char log_role[16] = "vstream";
static enum vs_log_level log_level = VS_LOG_INFO;
static int log_fd = -1; /* -1 = stderr */
static char log_path[4096];

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void
vs_log_set_role(const char *role)
{
    snprintf(log_role, sizeof(log_role), "%s", role);
}

void
vs_log_init(const char *role, enum vs_log_level level)
{
    vs_log_set_role(role);
    log_level = level;
}

void
vs_log_set_level(enum vs_log_level level)
{
    log_level = level;
}

enum vs_log_level
vs_log_get_level(void)
{
    return log_level;
}

int
vs_log_fd(void)
{
    return log_fd >= 0 ? log_fd : STDERR_FILENO;
}

int
vs_log_open_file(const char *path)
{
    if (path == NULL || path[0] == '\0') {
        if (log_fd >= 0)
            close(log_fd);
        log_fd = -1;
        log_path[0] = '\0';
        return 0;
    }
    if (strlen(path) >= sizeof(log_path))
        return -ENAMETOOLONG;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd == -1)
        return -errno;
    if (log_fd >= 0)
        close(log_fd);
    log_fd = fd;
    memmove(log_path, path, strlen(path) + 1);
    return 0;
}

int
vs_log_reopen(void)
{
    if (log_path[0] == '\0')
        return 0;
    char path[sizeof(log_path)];
    memcpy(path, log_path, sizeof(path));
    return vs_log_open_file(path);
}

int
vs_log_level_parse(const char *s, enum vs_log_level *out)
{
    for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]);
         i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum vs_log_level)i;
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = VS_LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

const char *
vs_log_level_name(enum vs_log_level level)
{
    if ((unsigned)level >= sizeof(level_names) / sizeof(level_names[0]))
        return "?";
    return level_names[level];
}

static void
write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            return; /* nowhere left to report a failing log */
        }
        buf += n;
        len -= (size_t)n;
    }
}

void
vs_logv(enum vs_log_level level, const char *fmt, va_list ap)
{
    if (level > log_level)
        return;
    int saved_errno = errno;
    char line[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line),
                     "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %s[%d] %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000, log_role,
                     (int)getpid(), vs_log_level_name(level));
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof(line) - 1) {
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        if (m > 0)
            n += m;
        if ((size_t)n > sizeof(line) - 2)
            n = (int)sizeof(line) - 2; /* truncated: keep the newline */
    }
    line[n++] = '\n';
    write_all(vs_log_fd(), line, (size_t)n);
    errno = saved_errno;
}

void
vs_log(enum vs_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vs_logv(level, fmt, ap);
    va_end(ap);
}

void
vs_log_sig(const char *msg)
{
    int saved_errno = errno;
    char buf[256];
    size_t n = 0;
    for (const char *p = log_role; *p && n < 32; p++)
        buf[n++] = *p;
    buf[n++] = '[';
    char digits[16];
    int d = 0;
    long pid = (long)getpid();
    do {
        digits[d++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid > 0 && d < 15);
    while (d > 0)
        buf[n++] = digits[--d];
    buf[n++] = ']';
    static const char tag[] = " SIGNAL ";
    for (const char *p = tag; *p; p++)
        buf[n++] = *p;
    for (const char *p = msg; *p && n < sizeof(buf) - 1; p++)
        buf[n++] = *p;
    buf[n++] = '\n';
    write_all(vs_log_fd(), buf, n);
    errno = saved_errno;
}
