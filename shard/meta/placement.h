/*
 * shard/meta/placement.h - replica sets of partitions: which nodes hold a
 * partition's consensus group, decided in apply from the committed state
 * only, so every replica computes the same set.
 *
 * Rule: a topic's replication factor rf (1..nodes) is its replica count.
 * A new partition's first member (its group's primary in view 0) is the
 * node that, in this order, leads the fewest partitions of the whole
 * cluster (hdr->leaders), then the fewest of the same topic, then comes
 * first in rotation after the previous partition's leader (node 0 first
 * for a topic's partition 0). The set is then the rf nodes leader,
 * leader+1, ... (mod nodes), so sets rotate over the nodes. The primary
 * of view v is replicas[v % rf], so view 1, 2 ... leaders are spread like
 * view 0's. Guarantees: while partitions are only created, every node
 * leads within one partition of every other (the cluster); the
 * partitions of a topic made by one CreateTopic are also within one per
 * node (CreatePartitions keeps the cluster balance first). Deletes leave
 * the remaining sets where they are; later creates fill the gaps.
 *
 * hdr->leaders is derived state (a pure function of the partitions
 * table): apply keeps it current and the snapshot decoder recounts it.
 *
 * Callers: shard 0 (apply, snapshot decode); tests. Pure, no I/O.
 */
#ifndef VS_SHARD_META_PLACEMENT_H
#define VS_SHARD_META_PLACEMENT_H

#include <stdint.h>

#include "shard/meta/state.h"

/* The default replication factor on a cluster of `nodes`: min(3, nodes). */
uint32_t meta_rf_default(uint32_t nodes);

/* Decides the replica sets of partitions first..first+n-1 of topic t
 * (records already in the table, partitions 0..first-1 already placed)
 * and counts them in hdr->leaders. */
void meta_place_partitions(void *st, const struct meta_topic *t, uint32_t first,
                           uint32_t n);

/* Removes a partition about to be deleted from hdr->leaders. */
void meta_place_forget(void *st, const struct meta_partition *p);

/* Recomputes hdr->leaders from the partitions table. */
void meta_place_recount(void *st);

/* Places every partition of the instance by the rule above, streams,
 * topics and partitions in ascending id order (the deterministic default
 * for a snapshot format that did not record replica sets); topics with
 * replication_factor 0 get meta_rf_default(nodes). */
void meta_place_all(void *st);

/* The primary of a partition's group in `view` (replicas[view % count]),
 * or 255 for a partition without a replica set. */
uint8_t meta_partition_primary(const struct meta_partition *p, uint32_t view);

#endif /* VS_SHARD_META_PLACEMENT_H */
