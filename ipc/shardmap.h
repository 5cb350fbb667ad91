/*
 * ipc/shardmap.h - which data shard owns a partition group.
 *
 * Role: DESIGN §1: shard = 1 + XXH3-64(group_id as 8 little-endian
 * bytes, seed 0) % K. Every node of a cluster runs the same K, so shard s
 * of one node talks to shard s of another; the result never depends on
 * the host's byte order. Pure function; any process.
 */
#ifndef VS_IPC_SHARDMAP_H
#define VS_IPC_SHARDMAP_H

#include <stdint.h>

/* Data shard (1..k) owning `group_id`. k must be >= 1 (k == 0 returns
 * 0, which is never a data shard). */
uint32_t vs_shard_for_group(uint64_t group_id, uint32_t k);

#endif /* VS_IPC_SHARDMAP_H */
