/*
 * common/layout.h - names of the files in a data dir, and the snapshot
 * payload prefix shared by the storage layer and the metadata codec.
 *
 *   DATA/vstream.lock            flock(LOCK_EX) by the supervisor for the
 *                                node's life; vstream-inspect probes it
 *   DATA/shards                  data shard count K, recorded at first boot
 *   DATA/metadata/superblock.a   superblock.b   ping-pong records
 *   DATA/metadata/journal.wal    prepares, [256-byte header][body]
 *   DATA/metadata/snapshot.bin   payload + 20-byte trailer ("ISNP", XXH3)
 *   DATA/partitions/...          data plane
 *
 * Snapshot payload = [format_version u32 LE][op u64 LE] + msgpack body.
 * The storage layer reads the prefix (op, version) without decoding the
 * body; shard/meta writes and decodes the whole payload.
 * Callers: any process.
 */
#ifndef VS_COMMON_LAYOUT_H
#define VS_COMMON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VS_DATADIR_LOCK_FILE   "vstream.lock"
#define VS_DATADIR_SHARDS_FILE "shards"
#define VS_METADATA_DIR        "metadata"
#define VS_SUPERBLOCK_A        "superblock.a"
#define VS_SUPERBLOCK_B        "superblock.b"
#define VS_JOURNAL_FILE        "journal.wal"
#define VS_SNAPSHOT_FILE       "snapshot.bin"
#define VS_PARTITIONS_DIR      "partitions"

#define VS_SNAPSHOT_PREFIX_SIZE 12u

struct vs_snapshot_prefix {
    uint32_t format_version;
    uint64_t op;
};

/* Reads the prefix of a snapshot payload. 0, or -1 if len < 12. */
static inline int
vs_snapshot_prefix_read(const void *payload, size_t len,
                        struct vs_snapshot_prefix *out)
{
    if (len < VS_SNAPSHOT_PREFIX_SIZE)
        return -1;
    memcpy(&out->format_version, payload, 4);
    memcpy(&out->op, (const uint8_t *)payload + 4, 8);
    return 0;
}

static inline void
vs_snapshot_prefix_write(void *payload, const struct vs_snapshot_prefix *p)
{
    memcpy(payload, &p->format_version, 4);
    memcpy((uint8_t *)payload + 4, &p->op, 8);
}

#endif /* VS_COMMON_LAYOUT_H */
