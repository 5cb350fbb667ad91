/*
 * ipc/stats.h - the per-partition stats table in the node's shared
 * segment (DESIGN §2, §4): counters a partition's owning data shard
 * publishes for every process to read (GetStats, the stream / topic /
 * partition records), outside the left-right metadata buffer, so a
 * metadata restore or state transfer never touches, orphans or resets
 * them. Not replicated, not in snapshots: each owner recomputes its
 * entries from its partition files when it opens them.
 *
 * Layout (pointer-free, position-independent; sizes checked by
 * _Static_assert and at attach):
 *   [struct vs_stats_hdr_shm]           magic, capacity, entry size, and
 *                                       per-owner claim counters
 *   [capacity x struct vs_stats_entry_shm]   one cache line each
 * Capacity = the config's max_partitions (the segment sizes the region
 * from it, like the other regions); 0 = no table (every lookup misses).
 *
 * Keys: (group id, created_op) of a partition (meta_group_id; created_op
 * >= 1 for a live partition, so a cleared entry, created_op 0, matches
 * nothing). A partition deleted and recreated with the same ids has a new
 * created_op: a new key, and a fresh entry that starts from its own
 * (zero) counters; the old entry is released by its owner.
 *
 * Table: open addressing, linear probing from hash(group id) % capacity.
 * An entry's `state` is EMPTY (never used: ends a probe), FREE (released:
 * probes go on) or OWNED by data shard slot s (2 + s). EMPTY never comes
 * back, so a probe chain is never cut; lookups are bounded by capacity.
 *
 * Writers: an entry is claimed by one compare-and-swap of `state`
 * (EMPTY/FREE -> OWNED(s)), then written ONLY by shard s, the partition's
 * owner, until it releases it (cleared, then FREE). Key and counters are
 * written under a per-entry sequence lock (seq odd while writing; fields
 * are relaxed atomics, fences order them), so a reader in any process
 * never sees a torn entry: it retries a bounded number of times and else
 * reports a miss (only possible while a writer is stalled or died
 * mid-write). A restarted data shard first reclaims (clears) the entries
 * its previous incarnation owned (`claimed[s]` counts them, so a first
 * start scans nothing).
 *
 * Callers: the supervisor creates the region (seg_create via
 * stats_region_init); data shards claim/publish/release their own
 * partitions' entries (shard/serve/parts.c) and read any entry
 * (shard/serve/reads.c through stats_process()); tests.
 */
#ifndef VS_IPC_STATS_H
#define VS_IPC_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define VS_STATS_MAGIC      0x31535441545356ull /* "VSTATS1" */
#define VS_STATS_MAX_OWNERS 272u /* >= VS_SEG_MAX_PROCS, pads the header */
#define VS_STATS_NONE       UINT32_MAX

enum vs_stats_state {
    VS_STATS_EMPTY = 0, /* never used */
    VS_STATS_FREE = 1,  /* released */
    VS_STATS_OWNED = 2, /* + owner slot */
};

struct vs_stats_hdr_shm {
    uint64_t magic;
    uint32_t capacity;
    uint32_t entry_size; /* struct vs_stats_entry_shm */
    uint32_t hdr_size;   /* struct vs_stats_hdr_shm */
    uint8_t pad[44];
    /* entries owned by each data shard slot (incremented before a claim,
     * decremented after a release: never below the truth) */
    _Atomic uint32_t claimed[VS_STATS_MAX_OWNERS];
};

struct vs_stats_entry_shm {
    _Alignas(64) _Atomic uint32_t state; /* enum vs_stats_state + owner */
    _Atomic uint32_t seq;                /* odd while the owner writes */
    _Atomic uint32_t segments_count;
    uint32_t pad;
    _Atomic uint64_t group_id;
    _Atomic uint64_t created_op;
    _Atomic uint64_t messages_count;
    _Atomic uint64_t size_bytes;
    _Atomic uint64_t current_offset;
    uint64_t pad2;
};

_Static_assert(sizeof(struct vs_stats_hdr_shm) == 1152, "stats header");
_Static_assert(offsetof(struct vs_stats_hdr_shm, claimed) == 64,
               "stats header layout");
_Static_assert(sizeof(struct vs_stats_entry_shm) == 64, "stats entry");
_Static_assert(offsetof(struct vs_stats_entry_shm, group_id) == 16,
               "stats entry layout");
_Static_assert(offsetof(struct vs_stats_entry_shm, current_offset) == 48,
               "stats entry layout");

/* One partition's counters. */
struct vs_stats_values {
    uint64_t messages_count;
    uint64_t size_bytes;
    uint64_t current_offset;
    uint32_t segments_count;
};

/* Process-private handle. */
struct vs_stats {
    struct vs_stats_hdr_shm *hdr;
    struct vs_stats_entry_shm *e;
    uint32_t capacity;
};

/* Bytes of a region of `capacity` entries (0 for capacity 0). */
size_t stats_region_size(uint32_t capacity);
/* Formats zeroed memory of stats_region_size(capacity) bytes. 0 or
 * -EINVAL. */
int stats_region_init(void *mem, size_t len, uint32_t capacity);
/* Attaches to a formatted region: 0 or -EPROTO (magic, sizes, length).
 * mem NULL / len 0: an empty handle (capacity 0: every lookup misses,
 * every claim fails). */
int stats_attach(struct vs_stats *t, void *mem, size_t len);

/* ---- the owner (data shard `owner`, 1 .. VS_STATS_MAX_OWNERS-1) ---- */

/* Clears every entry a previous incarnation of `owner` left (call once
 * at start, before the first claim). Returns how many were cleared. */
uint32_t stats_reclaim(struct vs_stats *t, uint32_t owner);
/* Claims an entry for the key and writes v. 0 and *ix, -ENOSPC (table
 * full: retry later) or -EINVAL (no table, bad owner, created_op 0). */
int stats_claim(struct vs_stats *t, uint32_t owner, uint64_t group_id,
                uint64_t created_op, const struct vs_stats_values *v,
                uint32_t *ix);
/* Publishes new counters of an entry this owner claimed. */
void stats_publish(struct vs_stats *t, uint32_t ix,
                   const struct vs_stats_values *v);
/* Clears and releases an entry this owner claimed. */
void stats_release(struct vs_stats *t, uint32_t owner, uint32_t ix);

/* ---- readers (any process) ---- */

/* 1 and *out if the key has a consistent entry, else 0 (*out zeroed). */
int stats_lookup(const struct vs_stats *t, uint64_t group_id,
                 uint64_t created_op, struct vs_stats_values *out);

/* The handle of this process's table for code that receives no context
 * (the reads of shard/serve/reads.c): set once by the data shard at start
 * (NULL until then: reads report zero counters). */
void stats_set_process(const struct vs_stats *t);
const struct vs_stats *stats_process(void);

#endif /* VS_IPC_STATS_H */
