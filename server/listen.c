/*
 * server/listen.c - listening sockets and address lists; see listen.h.
 * Supervisor only (before fork).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/listen.h"

/* Splits "host:port" / "[v6]:port". 0 or -EINVAL. */
static int
listen_split(const char *addr, char *host, size_t hl, char *port, size_t pl)
{
    const char *colon;
    const char *h = addr;
    size_t hlen;
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (rb == NULL || rb[1] != ':')
            return -EINVAL;
        h = addr + 1;
        hlen = (size_t)(rb - h);
        colon = rb + 1;
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL)
            return -EINVAL;
        hlen = (size_t)(colon - addr);
    }
    if (hlen == 0 || hlen >= hl || strlen(colon + 1) == 0 ||
        strlen(colon + 1) >= pl)
        return -EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    snprintf(port, pl, "%s", colon + 1);
    return 0;
}

int
sup_listen(const char *addr, char *bound, size_t boundlen, char *err,
           size_t errlen)
{
    char host[256], port[32];
    if (listen_split(addr, host, sizeof(host), port, sizeof(port)) != 0) {
        snprintf(err, errlen, "'%s' is not HOST:PORT", addr);
        return -EINVAL;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", addr, gai_strerror(g));
        return -EINVAL;
    }
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK,
                    res->ai_protocol);
    int rc;
    if (fd == -1) {
        rc = -errno;
        goto fail;
    }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
        bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
        listen(fd, 511) == -1) {
        rc = -errno;
        goto fail;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1) {
        rc = -errno;
        goto fail;
    }
    char h[INET6_ADDRSTRLEN];
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, h, sizeof(h));
        snprintf(bound, boundlen, "[%s]:%u", h, ntohs(s6->sin6_port));
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, h, sizeof(h));
        snprintf(bound, boundlen, "%s:%u", h, ntohs(s4->sin_port));
    }
    freeaddrinfo(res);
    return fd;
fail:
    snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(-rc));
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return rc;
}

uint32_t
sup_addr_list_count(const char *addrs)
{
    if (addrs[0] == '\0')
        return 0;
    uint32_t n = 1;
    for (const char *p = addrs; *p; p++)
        n += *p == ',';
    return n;
}

int
sup_addr_list_get(const char *addrs, uint32_t index, char *out, size_t outlen)
{
    if (index >= sup_addr_list_count(addrs))
        return -ENOENT;
    const char *p = addrs;
    for (uint32_t i = 0; i < index; i++)
        p = strchr(p, ',') + 1;
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    while (len > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        len--;
    }
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    if (len >= outlen)
        return -ENAMETOOLONG;
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}
