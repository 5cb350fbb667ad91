/*
 * tools/cli_metrics.c - fetching and printing /metrics; see
 * cli_metrics.h. The CLI's process only.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "tools/cli_metrics.h"

#define CLI_METRICS_MAX (64u << 20) /* refuse a larger body */

static int
metrics_connect(const char *addr, uint64_t deadline, char *err, size_t errlen)
{
    char host[256], port[16];
    const char *colon = strrchr(addr, ':');
    size_t hl = colon ? (size_t)(colon - addr) : 0;
    if (colon == NULL || hl == 0 || hl >= sizeof host ||
        strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof port) {
        snprintf(err, errlen, "--http-addr %s: want HOST:PORT", addr);
        return -EINVAL;
    }
    if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
        memcpy(host, addr + 1, hl - 2);
        host[hl - 2] = '\0';
    } else {
        memcpy(host, addr, hl);
        host[hl] = '\0';
    }
    snprintf(port, sizeof port, "%s", colon + 1);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", addr, gai_strerror(g));
        return -EHOSTUNREACH;
    }
    int fd =
        socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
               res->ai_protocol);
    int rc = fd == -1 ? -errno : 0;
    if (rc == 0 && connect(fd, res->ai_addr, res->ai_addrlen) == -1) {
        rc = -errno;
        if (rc == -EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int64_t ms = (int64_t)(deadline - vs_monotonic_ns()) / 1000000;
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            rc = ms > 0 && poll(&p, 1, (int)ms) == 1 ? 0 : -ETIMEDOUT;
            if (rc == 0 &&
                (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1 ||
                 soerr != 0))
                rc = soerr ? -soerr : -errno;
        }
    }
    freeaddrinfo(res);
    if (rc != 0) {
        if (fd != -1)
            close(fd);
        snprintf(err, errlen, "HTTP endpoint %s: %s", addr, strerror(-rc));
        return rc;
    }
    return fd;
}

int
cli_metrics_fetch(const char *addr, uint32_t timeout_ms, char **text, char *err,
                  size_t errlen)
{
    uint64_t deadline = vs_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
    *text = NULL;
    int fd = metrics_connect(addr, deadline, err, errlen);
    if (fd < 0)
        return fd;
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: "
                     "close\r\n\r\n",
                     addr);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int rc = buf == NULL ? -ENOMEM : 0;
    if (rc == 0 && send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
        rc = -EIO;
    while (rc == 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t ms = (int64_t)(deadline - vs_monotonic_ns()) / 1000000;
        if (ms <= 0 || poll(&p, 1, (int)ms) != 1) {
            rc = -ETIMEDOUT;
            break;
        }
        if (len + 4096 > cap) {
            char *nb = cap < CLI_METRICS_MAX ? realloc(buf, cap * 2) : NULL;
            if (nb == NULL) {
                rc = -EFBIG;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            rc = -errno;
            break;
        }
        len += (size_t)r;
    }
    close(fd);
    if (rc != 0) {
        snprintf(err, errlen, "HTTP endpoint %s: %s", addr, strerror(-rc));
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    char *body = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0 || body == NULL) {
        char *eol = strpbrk(buf, "\r\n");
        if (eol)
            *eol = '\0';
        snprintf(err, errlen, "HTTP endpoint %s: %s", addr,
                 buf[0] ? buf : "no HTTP response");
        free(buf);
        return -EPROTO;
    }
    memmove(buf, body + 4, strlen(body + 4) + 1);
    *text = buf;
    return 0;
}

/* Calls fn for each sample line "series value". */
static void
each_sample(const char *text, FILE *out,
            void (*fn)(FILE *, const char *, size_t, const char *, size_t, int))
{
    int first = 1;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > 0 && p[0] != '#') {
            const char *sp = NULL;
            for (size_t i = ll; i > 0; i--)
                if (p[i - 1] == ' ') {
                    sp = p + i - 1;
                    break;
                }
            if (sp != NULL) {
                fn(out, p, (size_t)(sp - p), sp + 1, ll - (size_t)(sp - p) - 1,
                   first);
                first = 0;
            }
        }
        p += ll + (eol != NULL);
    }
}

static void
json_member(FILE *out, const char *k, size_t kl, const char *v, size_t vl,
            int first)
{
    fputs(first ? "\"" : ",\"", out);
    for (size_t i = 0; i < kl; i++) {
        if (k[i] == '"' || k[i] == '\\')
            fputc('\\', out);
        fputc(k[i], out);
    }
    fputs("\":", out);
    /* +Inf/NaN are not JSON numbers */
    if ((vl == 4 && memcmp(v, "+Inf", 4) == 0) ||
        (vl == 3 && memcmp(v, "NaN", 3) == 0))
        fprintf(out, "\"%.*s\"", (int)vl, v);
    else
        fprintf(out, "%.*s", (int)vl, v);
}

static void
table_line(FILE *out, const char *k, size_t kl, const char *v, size_t vl,
           int first)
{
    (void)first;
    fprintf(out, "  %.*s %.*s\n", (int)kl, k, (int)vl, v);
}

void
cli_metrics_print_json(const char *text, FILE *out)
{
    each_sample(text, out, json_member);
}

void
cli_metrics_print_table(const char *text, FILE *out)
{
    each_sample(text, out, table_line);
}
