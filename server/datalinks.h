/*
 * server/datalinks.h - the data shards' replica-link listeners: on a
 * cluster node, data shard s listens for its peers' shard s at the port
 * shard/link/plan.h derives from this node's replica_addrs entry.
 *
 * Role: the supervisor checks the whole address plan (every node, every
 * shard: fixed ports, in range, no two listeners of one host on one
 * port) and binds one listener per data shard before forking, like the
 * replica listener (server/listen.h), so a bad plan or a taken port is
 * one line and exit 2 at boot, and a restarted shard gets the same bound
 * socket back. Each child keeps only its own listener.
 * Callers: the supervisor only (and its children right after fork).
 */
#ifndef VS_SERVER_DATALINKS_H
#define VS_SERVER_DATALINKS_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "ipc/segment.h"

struct sup_datalinks {
    uint32_t k;               /* listeners for slots 1..k; 0 = none */
    int fd[VS_SEG_MAX_PROCS]; /* [slot]; -1 = none */
};

/* No listeners. */
void sup_datalinks_init(struct sup_datalinks *d);
/* With two or more replicas: checks the plan for k data shards and binds
 * their listeners. 0 (nothing on a one-replica node) or -errno with the
 * one-line reason in err (the caller exits 2). */
int sup_datalinks_open(struct sup_datalinks *d, const struct vs_config *cfg,
                       uint32_t k, char *err, size_t errlen);
/* Slot's listener, or -1. */
int sup_datalinks_fd(const struct sup_datalinks *d, uint32_t slot);
/* In a child: closes every listener but slot's. */
void sup_datalinks_keep_only(struct sup_datalinks *d, uint32_t slot);
/* Closes every listener. Idempotent. */
void sup_datalinks_close(struct sup_datalinks *d);

#endif /* VS_SERVER_DATALINKS_H */
