/*
 * shard/meta/index.h - internal: table records and the open-addressing
 * indexes of a state instance (state.h).
 *
 * Role: generic slot allocation (smallest free slot, deterministic) and
 * hash indexes keyed by ids, names, client ids or digests. An index entry
 * is slot + 1 (0 = empty); the key is always recomputed from the record,
 * so an index holds nothing a decoder must trust. Linear probing with
 * backward-shift deletion keeps probe chains short without tombstones.
 * Invariants: each index has at least twice as many entries as its table
 * has records, so it never fills.
 * Callers: shard/meta only (apply, snapshot decode, lookup).
 */
#ifndef VS_SHARD_META_INDEX_H
#define VS_SHARD_META_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "shard/meta/state.h"

struct meta_key {
    uint32_t a, b, c, d;
    struct vs_u128 client;
    const uint8_t *name;
    size_t name_len;
};

/* Record size of a table, and the table an index points into. */
size_t meta_rec_size(enum meta_tab t);
enum meta_tab meta_ix_tab(enum meta_ix ix);
uint32_t meta_tab_cap(const void *st, enum meta_tab t);

static inline void *
meta_rec(void *st, enum meta_tab t, uint32_t slot)
{
    return (uint8_t *)meta_tab(st, t) + (size_t)slot * meta_rec_size(t);
}
static inline const void *
meta_rec_c(const void *st, enum meta_tab t, uint32_t slot)
{
    return (const uint8_t *)meta_tab_c(st, t) + (size_t)slot * meta_rec_size(t);
}
static inline int
meta_rec_live(const void *st, enum meta_tab t, uint32_t slot)
{
    return *(const uint8_t *)meta_rec_c(st, t, slot) != 0;
}

/* Smallest free slot >= the table's hint, below `limit` (the table cap,
 * or the client capacity for sessions); META_NONE if full. The record is
 * marked in_use and counted. */
uint32_t meta_slot_alloc(void *st, enum meta_tab t, uint32_t limit);
/* Claims a specific free slot (streams, users: slot == id). */
void meta_slot_claim(void *st, enum meta_tab t, uint32_t slot);
/* Zeroes a record, uncounts it and lowers the hint. Remove it from its
 * indexes first. */
void meta_slot_free(void *st, enum meta_tab t, uint32_t slot);

void meta_key_of(const void *st, enum meta_ix ix, uint32_t slot,
                 struct meta_key *k);
uint32_t meta_ix_find(const void *st, enum meta_ix ix,
                      const struct meta_key *k);
void meta_ix_insert(void *st, enum meta_ix ix, uint32_t slot);
void meta_ix_remove(void *st, enum meta_ix ix, uint32_t slot);

/* Adds / removes a live record to / from every index of its table. */
void meta_ix_add_all(void *st, enum meta_tab t, uint32_t slot);
void meta_ix_del_all(void *st, enum meta_tab t, uint32_t slot);

#endif /* VS_SHARD_META_INDEX_H */
