/*
 * server/notify.c - systemd notifications; see notify.h. Supervisor only.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "common/log.h"
#include "server/notify.h"

static uint64_t watchdog_ns; /* 0 = no watchdog */
static uint64_t last_ping_ns;

#ifdef HAVE_LIBSYSTEMD
static void
notify_send(const char *msg)
{
    int rc = sd_notify(0, msg);
    if (rc < 0)
        vs_log_warn("sd_notify: %s", strerror(-rc));
}
#else
/* The sd_notify datagram protocol (sd_notify(3)): one AF_UNIX datagram
 * of newline-separated assignments to $NOTIFY_SOCKET ('@' = abstract). */
static void
notify_send(const char *msg)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0')
        return;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
        return;
    memcpy(sa.sun_path, path, n);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd == -1)
        return;
    socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               sl) == -1)
        vs_log_warn("notify %s: %s", path, strerror(errno));
    close(fd);
}
#endif

void
sup_notify_init(void)
{
    watchdog_ns = 0;
    last_ping_ns = 0;
#ifdef HAVE_LIBSYSTEMD
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0)
        watchdog_ns = usec * 1000u;
#else
    const char *us = getenv("WATCHDOG_USEC");
    const char *pid = getenv("WATCHDOG_PID");
    if (us != NULL && (pid == NULL || atol(pid) == (long)getpid()))
        watchdog_ns = strtoull(us, NULL, 10) * 1000u;
#endif
    if (watchdog_ns != 0)
        vs_log_info("systemd watchdog: keep-alive every %llu ms",
                    (unsigned long long)(watchdog_ns / 2000000u));
}

static void
notify_with_status(const char *head, const char *status)
{
    char msg[768];
    snprintf(msg, sizeof(msg), "%s%sSTATUS=%s", head, head[0] ? "\n" : "",
             status);
    notify_send(msg);
}

void
sup_notify_ready(const char *status)
{
    notify_with_status("READY=1", status);
}

void
sup_notify_status(const char *status)
{
    notify_with_status("", status);
}

void
sup_notify_stopping(void)
{
    notify_with_status("STOPPING=1", "stopping");
}

void
sup_notify_tick(uint64_t now_ns)
{
    if (watchdog_ns == 0 || now_ns - last_ping_ns < watchdog_ns / 2)
        return;
    last_ping_ns = now_ns;
    notify_send("WATCHDOG=1");
}

int
sup_notify_next_ms(uint64_t now_ns)
{
    if (watchdog_ns == 0)
        return INT32_MAX;
    uint64_t due = last_ping_ns + watchdog_ns / 2;
    if (due <= now_ns)
        return 0;
    uint64_t ms = (due - now_ns + 999999u) / 1000000u;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}
