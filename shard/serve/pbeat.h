/*
 * shard/serve/pbeat.h - the partition groups' Commit heartbeats and
 * their Pong answers as coalesced beat entries (shard/link/beat.h), and
 * back: the translation that lets one beat frame per link per tick carry
 * every group's heartbeat instead of one 256-byte frame per group.
 *
 * Rules:
 *   - pbeat_from_frame takes only a frame the entry rebuilds byte for
 *     byte (it rebuilds and compares): a Commit (command 9) or a Pong
 *     (command 2) of 256 bytes, sealed, of the given cluster and release,
 *     whose reserved bytes are zero. Anything else is -ENOTSUP and goes
 *     on the link as a frame of its own, unchanged; so the receiver's
 *     engine sees exactly the frame its peer's engine built, whichever
 *     way it travelled (the engine's rules, R1 included, are untouched:
 *     a Commit reaches the binding only once the engine let it go).
 *   - pbeat_to_frame rebuilds and seals that frame from an entry the
 *     beat decoder accepted; the header fields the entry does not carry
 *     are those every engine frame has (vsr_frame_init): the cluster and
 *     release of the beat frame, size 256, everything else zero. The
 *     engine then checks it as any other frame (seal, cluster, group,
 *     member, view, staleness).
 *
 * Invariants: pure functions, no I/O, no allocation.
 * Callers: any process (the data shards' partition runtime, pgroups.c;
 * tests; benches).
 */
#ifndef VS_SHARD_SERVE_PBEAT_H
#define VS_SHARD_SERVE_PBEAT_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/link/beat.h"

/* The entry of a Commit or Pong frame (len bytes): 0, or -ENOTSUP (not
 * one the entry rebuilds exactly: another command or size, a field the
 * entry does not carry, another cluster or release, a broken seal). */
int pbeat_from_frame(const void *frame, size_t len,
                     const struct vs_u128 *cluster, uint32_t release,
                     struct beat_entry *out);

/* Writes the sealed 256-byte frame of entry e into *out: 0, or -EINVAL
 * (an unknown kind, or an ACK carrying an op or checksum). */
int pbeat_to_frame(const struct beat_entry *e, const struct vs_u128 *cluster,
                   uint32_t release, struct vs_header *out);

#endif /* VS_SHARD_SERVE_PBEAT_H */
