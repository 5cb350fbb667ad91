/*
 * server/datalinks.c - the data shards' link listeners; see datalinks.h.
 * Process: the supervisor (before fork; keep_only in a child).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "server/datalinks.h"
#include "server/listen.h"
#include "shard/link/plan.h"

void
sup_datalinks_init(struct sup_datalinks *d)
{
    d->k = 0;
    for (uint32_t i = 0; i < VS_SEG_MAX_PROCS; i++)
        d->fd[i] = -1;
}

int
sup_datalinks_open(struct sup_datalinks *d, const struct vs_config *cfg,
                   uint32_t k, char *err, size_t errlen)
{
    char why[600], self[256], addr[256] = "", bound[256];
    if (sup_addr_list_count(cfg->replica_addrs) < 2)
        return 0;
    if (k + 1 > VS_SEG_MAX_PROCS) {
        snprintf(err, errlen, "data links: %u data shards is too many", k);
        return -EINVAL;
    }
    int rc = link_plan_check(cfg->replica_addrs, k, cfg->data_link_port_stride,
                             why, sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "data links: %s", why);
        return rc;
    }
    if (sup_addr_list_get(cfg->replica_addrs, cfg->replica_id, self,
                          sizeof(self)) != 0) {
        snprintf(err, errlen,
                 "data links: replica_id %u has no entry in "
                 "replica_addrs",
                 cfg->replica_id);
        return -EINVAL;
    }
    for (uint32_t s = 1; s <= k; s++) {
        rc = link_plan_addr(self, s, cfg->data_link_port_stride, addr,
                            sizeof(addr), why, sizeof(why));
        if (rc == 0) {
            rc = sup_listen(addr, bound, sizeof(bound), why, sizeof(why));
            if (rc >= 0) {
                d->fd[s] = rc;
                rc = 0;
            }
        }
        if (rc != 0) {
            snprintf(err, errlen, "data links: shard %u (%s): %s", s, addr,
                     why);
            sup_datalinks_close(d);
            return rc;
        }
    }
    d->k = k;
    return 0;
}

int
sup_datalinks_fd(const struct sup_datalinks *d, uint32_t slot)
{
    return slot >= 1 && slot <= d->k ? d->fd[slot] : -1;
}

void
sup_datalinks_keep_only(struct sup_datalinks *d, uint32_t slot)
{
    for (uint32_t i = 0; i < VS_SEG_MAX_PROCS; i++) {
        if (i != slot && d->fd[i] >= 0) {
            close(d->fd[i]);
            d->fd[i] = -1;
        }
    }
}

void
sup_datalinks_close(struct sup_datalinks *d)
{
    for (uint32_t i = 0; i < VS_SEG_MAX_PROCS; i++) {
        if (d->fd[i] >= 0) {
            close(d->fd[i]);
            d->fd[i] = -1;
        }
    }
    d->k = 0;
}
