/*
 * shard/serve/polled.h - the last offset each consumer-group member
 * polled on each partition this data shard owns, kept only while it is
 * "in flight" (past the group's committed offset), and the rules built on
 * it (iggy-client-protocol-2.md §6.3):
 *  - a pending cooperative revocation is done when the revoking member
 *    never polled the partition (no record) or the committed group offset
 *    has reached its last polled offset;
 *  - a (group, partition) is in flight while some member's last polled
 *    offset is past the committed group offset (or nothing is committed).
 *
 * Keys name partitions and groups with their created_op, so a reused id
 * never meets an old record. Storage: a heap array searched linearly
 * (records exist only between a poll without auto-commit and the commit
 * that catches up; auto-commit polls leave none), capped at POLLED_MAX.
 *
 * Invariants: pure memory, no clock, no I/O. Process: data shards (loop
 * thread: shard/serve/liveness.c and the poll path of data.c), tests.
 */
#ifndef VS_SHARD_SERVE_POLLED_H
#define VS_SHARD_SERVE_POLLED_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/fwd.h"

#define POLLED_MAX (1u << 20)

struct polled_key {
    uint32_t stream_id, topic_id, partition_id, group_id;
    uint64_t part_created_op, group_created_op;
    struct vs_u128 client; /* the member */
};

struct polled_rec {
    struct polled_key k;
    uint64_t last; /* offset of the last message of the member's last poll */
};

struct polled {
    struct polled_rec *v;
    size_t n, cap;
};

void polled_init(struct polled *t);
void polled_fini(struct polled *t);
/* Inserts or updates. 0, or -ENOSPC at POLLED_MAX records. */
int polled_set(struct polled *t, const struct polled_key *k, uint64_t last);
/* 1 and *last if recorded, else 0. */
int polled_get(const struct polled *t, const struct polled_key *k,
               uint64_t *last);
/* Removes the record (no-op if absent). */
void polled_del(struct polled *t, const struct polled_key *k);
/* Removes record i (iteration: do not advance i after it). */
void polled_del_at(struct polled *t, size_t i);

/* The rules. `committed`: 1 if a group offset is stored (value `off`). */
int polled_revoke_done(int polled, uint64_t last, int committed, uint64_t off);
int polled_in_flight(uint64_t last, int committed, uint64_t off);

/* Sorts e[0..n) and removes duplicates; returns the new count. */
size_t polled_parts_normalize(struct fwd_group_part *e, size_t n);

#endif /* VS_SHARD_SERVE_POLLED_H */
