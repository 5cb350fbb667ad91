/*
 * shard/meta/snapshot_codec.h - the snapshot payload of the metadata
 * state: [format_version u32 LE][op u64 LE] (common/layout.h) + a msgpack
 * body (msgpack-c packer; strict hand-written walker to decode).
 *
 * Body (format 2), one msgpack array, fields in this fixed order:
 *  [ "vsmeta", last_op, last_timestamp, genesis_done,
 *    users:   [[id, username str, pw_hash str, status, created_at,
 *               created_op, has_perms, global,
 *               grants [[stream_id, bits, dangling, has_topics,
 *                        topics [[topic_id, bits, dangling]...]]...]]...],
 *    pats:    [[user_id, name str, digest bin32, expiry_at, created_op]...],
 *    streams: [[id, name, created_at, created_op,
 *               topics [[id, name, created_at, created_op, next_group_id,
 *                        [expiry, max_size, segment_size, size_to_save,
 *                         msgs_to_save, compression, fsync, prealloc,
 *                         explicit_mask],
 *                        replication_factor (1..32),
 *                        partitions [[id, created_at, created_op,
 *                                     deleted_up_to_offset,
 *                                     purge_generation,
 *                                     replicas bin (rf distinct node
 *                                     ids < 32, view-0 primary first)]...],
 *                        groups [[id, name, generation, created_op,
 *                                 members [[member_id, client bin16,
 *                                           joined_op]...],
 *                                 assigns [[partition_id, owner,
 *                                           revoke_to]...]]...]]...]]...],
 *    client_table: [[slot, client bin16, epoch, user_id, watermark,
 *                    watermark_checksum bin16, latest_commit, created_op,
 *                    latest reply bin (empty = none)]...] ]
 * Format 1 (still decoded) is the same without replication_factor and
 * replicas: its topics get min(3, nodes) and its partitions the sets
 * meta_place_all() decides (placement.h), deterministic from the decoded
 * state and the node count. A format-2 decode recounts hdr->leaders.
 * Every collection is in ascending id order (users by id; pats by
 * (user_id, name bytes); grants by stream then topic id; client table by
 * slot), so equal states encode to equal bytes. Stats are not included.
 *
 * Decode validates every type, length, range, uniqueness and capacity and
 * returns a typed status; it never reads out of bounds. The target
 * instance is reset first and is an unspecified (but valid, empty after
 * reset) state on failure.
 *
 * Callers: shard 0 (checkpoint, recovery, state transfer); tools.
 */
#ifndef VS_SHARD_META_SNAPSHOT_CODEC_H
#define VS_SHARD_META_SNAPSHOT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "shard/meta/client_table.h"
#include "shard/meta/state.h"

#define META_SNAPSHOT_FORMAT     2u /* written */
#define META_SNAPSHOT_FORMAT_MIN 1u /* oldest still read */

enum meta_snap_status {
    META_SNAP_OK = 0,
    META_SNAP_TRUNCATED,     /* shorter than the prefix or a value */
    META_SNAP_BAD_VERSION,   /* format_version unknown to this build */
    META_SNAP_BAD_TYPE,      /* a msgpack value of the wrong type */
    META_SNAP_BAD_LENGTH,    /* array/string length out of range */
    META_SNAP_BAD_VALUE,     /* a value out of range, bad UTF-8, order */
    META_SNAP_OVER_CAPACITY, /* more records than the caps allow */
    META_SNAP_DUPLICATE,     /* duplicate id / name / client */
    META_SNAP_OP_MISMATCH,   /* prefix op != body last_op */
    META_SNAP_TRAILING,      /* bytes after the body */
    META_SNAP_BAD_STATE,     /* target instance header invalid */
};

const char *meta_snap_status_str(enum meta_snap_status s);

/* Appends the payload (prefix + body) of `state` to out. ct may be NULL
 * (no cached replies are written). Returns 0. */
int meta_snapshot_encode(const void *state, const struct meta_client_table *ct,
                         struct vs_wbuf *out);

/* Decodes a payload into `state` (an instance initialised with the
 * caps of this node: its hdr caps.clients is the configured capacity).
 * ct may be NULL (replies are validated and dropped). */
enum meta_snap_status meta_snapshot_decode(const uint8_t *p, size_t len,
                                           void *state,
                                           struct meta_client_table *ct);

#endif /* VS_SHARD_META_SNAPSHOT_CODEC_H */
