/*
 * shard/link/coalesce.h - per-peer tables of pending group beat entries:
 * what the groups of one data shard want to tell each peer at the next
 * tick, coalesced so one frame per link per tick carries them all.
 *
 * Role: a group posts an entry (its commit as primary, its ack as a
 * backup) for a peer; a later post with the same (group, kind) replaces
 * the earlier one (only the newest commit/ack matters), so a busy group
 * costs one entry per tick however often it posts. coal_flush() hands the
 * peer's entries, in frame order, to an emit callback as whole beat
 * frames (shard/link/beat.h) of at most BEAT_ENTRIES_MAX entries each:
 * one frame for up to 16,384 entries.
 *
 * Bounds and back-pressure: each peer's table holds at most entries_max
 * entries. A post that would add a new (group, kind) to a full table is
 * refused with -EAGAIN: the producer keeps its state and posts again
 * after the next flush (coal_room tells how many new keys fit). When the
 * emit callback refuses a frame (-EAGAIN: the link's queue is full), the
 * frame's entries and the rest stay pending for the next flush; nothing
 * is lost and nothing is sent twice in one flush.
 *
 * Invariants: no I/O, no clock; memory is allocated at create only
 * (tables and one frame buffer). A table never holds a (group, kind)
 * twice.
 * Callers: one thread (the data shard's loop: shard/link/mesh.c; tests).
 */
#ifndef VS_SHARD_LINK_COALESCE_H
#define VS_SHARD_LINK_COALESCE_H

#include <stddef.h>
#include <stdint.h>

#include "shard/link/beat.h"

struct coal;

/* A whole frame for `peer`: 0 (taken), -EAGAIN (keep it pending) or any
 * other -errno (the flush stops; entries stay pending). */
typedef int (*coal_emit_fn)(void *ctx, uint8_t peer, const void *frame,
                            size_t len);

/* Tables for peers 0..peers-1 of entries_max entries each (1..1<<20).
 * 0 or -EINVAL / -ENOMEM. */
int coal_create(uint8_t peers, uint32_t entries_max, struct coal **out);
void coal_destroy(struct coal *c);

/* Posts e for peer. 0, -EAGAIN (a new key and the table is full),
 * -EINVAL (peer out of range or unknown kind). */
int coal_post(struct coal *c, uint8_t peer, const struct beat_entry *e);

/* Entries pending for peer; new keys that still fit. */
uint32_t coal_pending(const struct coal *c, uint8_t peer);
uint32_t coal_room(const struct coal *c, uint8_t peer);

/* Forgets peer's pending entries (its link went down). */
void coal_clear(struct coal *c, uint8_t peer);

/* Emits peer's pending entries as frames (an empty keepalive frame if
 * none and `keepalive`), sequence numbers from *seq + 1 on (*seq is
 * advanced per frame emitted). Sent entries leave the table. Returns the
 * number of frames emitted (>= 0), or the emit callback's error after
 * the frames before it were taken. */
int coal_flush(struct coal *c, uint8_t peer, const struct beat_sender *s,
               uint64_t *seq, int keepalive, coal_emit_fn emit, void *ctx);

#endif /* VS_SHARD_LINK_COALESCE_H */
