/*
 * shard/link/plan.h - where the data shards' links listen: data shard s
 * of node i listens on the host of node i's replica_addrs entry, at that
 * entry's port + s * data_link_port_stride (shard 0's mesh keeps the
 * entry's port itself). Every node computes every peer's addresses the
 * same way from the one replica_addrs list, so nothing more is
 * configured per shard.
 *
 * An entry with port 0 ("any free port": a test's listener nobody dials)
 * gives port 0 to its data shards as well; such a node is not reachable
 * by its peers on any mesh.
 *
 * The plan is checked at boot (the supervisor, before it binds anything
 * for the data shards): every entry is HOST:PORT, every computed port
 * stays <= 65535, and no two listeners of nodes on the same host
 * (replica or data-shard ports of any node, port 0 aside) share a
 * port. A failed check names the entries, the shard and the
 * port, and the stride to change.
 *
 * Invariants: pure functions over strings (no I/O, no allocation beyond
 * the check's temporary table).
 * Callers: the supervisor (check, bind), data shards (peer addresses),
 * tests.
 */
#ifndef VS_SHARD_LINK_PLAN_H
#define VS_SHARD_LINK_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* The address of data shard `shard` (0 = the entry itself) for the
 * replica address `replica_addr` ("HOST:PORT" or "[V6]:PORT"). 0, or
 * -EINVAL / -ERANGE with the reason in err. */
int link_plan_addr(const char *replica_addr, uint32_t shard, uint32_t stride,
                   char *out, size_t outlen, char *err, size_t errlen);

/* Checks the whole plan for k data shards per node. 0 or -EINVAL /
 * -ERANGE / -EADDRINUSE / -ENOMEM with the reason in err. */
int link_plan_check(const char *replica_addrs, uint32_t k, uint32_t stride,
                    char *err, size_t errlen);

#endif /* VS_SHARD_LINK_PLAN_H */
