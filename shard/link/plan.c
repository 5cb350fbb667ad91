/*
 * shard/link/plan.c - the data shards' link addresses; see plan.h.
 * Process: any (pure code).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/listen.h"
#include "shard/link/plan.h"

#define PLAN_ADDR_MAX 256u

/* Splits "HOST:PORT" / "[V6]:PORT" into host (brackets kept) and port. */
static int
split(const char *addr, char *host, size_t hostlen, unsigned long *port)
{
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || colon == addr || colon[1] == '\0')
        return -EINVAL;
    if (addr[0] == '[' && colon[-1] != ']')
        return -EINVAL;
    size_t hl = (size_t)(colon - addr);
    if (hl >= hostlen)
        return -EINVAL;
    memcpy(host, addr, hl);
    host[hl] = '\0';
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || colon[1] < '0' || colon[1] > '9' ||
        p > 65535)
        return -EINVAL;
    *port = p;
    return 0;
}

int
link_plan_addr(const char *replica_addr, uint32_t shard, uint32_t stride,
               char *out, size_t outlen, char *err, size_t errlen)
{
    char host[PLAN_ADDR_MAX];
    unsigned long port;
    if (split(replica_addr, host, sizeof(host), &port) != 0) {
        snprintf(err, errlen, "'%s' is not HOST:PORT", replica_addr);
        return -EINVAL;
    }
    if (port == 0) {
        /* "any port" (a test's own listener): so are its shards' */
        if ((size_t)snprintf(out, outlen, "%s:0", host) >= outlen) {
            snprintf(err, errlen, "'%s': address too long", replica_addr);
            return -EINVAL;
        }
        return 0;
    }
    if (shard > 0 && stride == 0) {
        snprintf(err, errlen, "data_link_port_stride must be at least 1");
        return -EINVAL;
    }
    unsigned long p = port + (unsigned long)shard * stride;
    if (p > 65535) {
        snprintf(err, errlen,
                 "'%s': data shard %u would listen on port %lu (port + %u x "
                 "data_link_port_stride %u > 65535): lower the stride or the "
                 "port",
                 replica_addr, shard, p, shard, stride);
        return -ERANGE;
    }
    if ((size_t)snprintf(out, outlen, "%s:%lu", host, p) >= outlen) {
        snprintf(err, errlen, "'%s': address too long", replica_addr);
        return -EINVAL;
    }
    return 0;
}

struct plan_port {
    char host[PLAN_ADDR_MAX];
    unsigned long port;
    uint32_t node, shard;
};

static int
port_cmp(const void *a, const void *b)
{
    const struct plan_port *x = a, *y = b;
    int c = strcasecmp(x->host, y->host);
    if (c != 0)
        return c;
    if (x->port != y->port)
        return x->port < y->port ? -1 : 1;
    return 0;
}

static void
name(const struct plan_port *p, char *out, size_t len)
{
    if (p->shard == 0)
        snprintf(out, len, "replica %u's replica port", p->node);
    else
        snprintf(out, len, "replica %u's data shard %u", p->node, p->shard);
}

int
link_plan_check(const char *replica_addrs, uint32_t k, uint32_t stride,
                char *err, size_t errlen)
{
    uint32_t n = sup_addr_list_count(replica_addrs);
    if (n == 0 || k == 0)
        return 0;
    if (stride == 0) {
        snprintf(err, errlen, "data_link_port_stride must be at least 1");
        return -EINVAL;
    }
    size_t total = (size_t)n * (k + 1u);
    struct plan_port *t = calloc(total, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    size_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        char addr[PLAN_ADDR_MAX], out[PLAN_ADDR_MAX], why[400];
        if (sup_addr_list_get(replica_addrs, i, addr, sizeof(addr)) != 0) {
            snprintf(err, errlen, "replica_addrs: entry %u is too long", i);
            rc = -EINVAL;
            goto out;
        }
        for (uint32_t s = 0; s <= k; s++) {
            rc = link_plan_addr(addr, s, stride, out, sizeof(out), why,
                                sizeof(why));
            if (rc != 0) {
                snprintf(err, errlen, "replica_addrs entry %u: %s", i, why);
                goto out;
            }
            struct plan_port *p = &t[m];
            (void)split(out, p->host, sizeof(p->host), &p->port);
            if (p->port == 0)
                continue; /* "any port" never collides */
            p->node = i;
            p->shard = s;
            m++;
        }
    }
    qsort(t, m, sizeof(*t), port_cmp);
    for (size_t i = 1; i < m; i++) {
        if (port_cmp(&t[i - 1], &t[i]) != 0)
            continue;
        char a[64], b[64];
        name(&t[i - 1], a, sizeof(a));
        name(&t[i], b, sizeof(b));
        snprintf(err, errlen,
                 "replica_addrs: %s and %s would both listen on %s:%lu "
                 "(data shard s listens on its node's port + s x "
                 "data_link_port_stride %u): choose another stride or "
                 "other ports",
                 a, b, t[i].host, t[i].port, stride);
        rc = -EADDRINUSE;
        goto out;
    }
out:
    free(t);
    return rc;
}
