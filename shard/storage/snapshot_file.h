/*
 * shard/storage/snapshot_file.h - snapshot.bin: payload + integrity trailer.
 *
 * Role: stores the checkpoint's snapshot payload durably and verifies it
 * before anyone decodes it. File layout:
 *
 *   payload                  = [format_version u32 LE][op u64 LE] + body
 *                              (prefix: common/layout.h; body: msgpack,
 *                              written and decoded by shard/meta only)
 *   trailer (20 bytes)       = "ISNP" (ASCII bytes in order)
 *                              + XXH3-64(payload) widened to u128 (LE)
 *
 * The payload checksum is what the superblock's checkpoint_checksum holds
 * and what state transfer ships (the verified payload, never the raw file
 * with its trailer). A missing trailer (file too short, no magic) or a
 * wrong checksum refuses; there is no legacy trailer-less format.
 * Payload format versions known to this release: SNAPFILE_FORMAT_MIN ..
 * SNAPFILE_FORMAT_KNOWN (the storage layer reports an unknown one;
 * shard/meta refuses it).
 *
 * Callers: shard 0 (write at checkpoint phase 1, read at recovery),
 * vstream-inspect and tests (read). Writes go through atomic_file.
 */
#ifndef VS_SHARD_STORAGE_SNAPSHOT_FILE_H
#define VS_SHARD_STORAGE_SNAPSHOT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/layout.h"
#include "common/wire.h"
#include "shard/storage/io.h"

#define SNAPFILE_MAGIC        "ISNP"
#define SNAPFILE_TRAILER_SIZE 20u
#define SNAPFILE_FORMAT_MIN   1u /* payload format versions: {1, 2} */
#define SNAPFILE_FORMAT_KNOWN 2u /* (2 records replica sets) */
#define SNAPFILE_MAX          (1024ull * 1024 * 1024) /* read bound */

enum snapfile_status {
    SNAPFILE_OK = 0,
    SNAPFILE_ABSENT,
    SNAPFILE_NO_TRAILER,     /* shorter than a trailer, or no "ISNP" */
    SNAPFILE_BAD_CHECKSUM,   /* trailer checksum != XXH3(payload) */
    SNAPFILE_SHORT_PREFIX,   /* payload shorter than the 12-byte prefix */
    SNAPFILE_UNKNOWN_FORMAT, /* prefix format_version not known here */
    SNAPFILE_TOO_BIG,
    SNAPFILE_IO,
};

struct snapfile {
    enum snapfile_status status;
    uint8_t *file; /* owned: the whole file (NULL if absent) */
    size_t file_len;
    const uint8_t *payload; /* into file; valid when status is OK or
                               UNKNOWN_FORMAT */
    size_t payload_len;
    struct vs_u128 checksum; /* of the payload */
    struct vs_snapshot_prefix prefix;
    int err; /* SNAPFILE_IO: the -errno */
    char reason[200];
};

/* 1 if payload format version v is known to this release. */
int snapfile_format_known(uint32_t v);

/* Verifies the trailer of a whole file image. 0 with the payload (a
 * pointer into `file`) and its checksum; -ENODATA if there is no trailer
 * (too short, no "ISNP"), -EBADMSG if the checksum does not match. */
int snapfile_split_trailer(const void *file, size_t len,
                           const uint8_t **payload, size_t *payload_len,
                           struct vs_u128 *checksum);

/* Writes DIR/snapshot.bin = payload + trailer atomically. The payload
 * must start with a valid prefix. *checksum (if not NULL) gets the
 * payload checksum for the superblock. 0, -EINVAL, -ENOSPC (old file
 * intact), -errno, -VS_EFATAL. */
int snapfile_write(struct vs_sio *io, const char *dir, const void *payload,
                   size_t len, struct vs_u128 *checksum);

/* Reads and verifies DIR/snapshot.bin. Always fills `out` (status says
 * the outcome; reason is one line); returns 0 unless out->status is
 * SNAPFILE_IO (then -errno). Free with snapfile_fini. */
int snapfile_read(struct vs_sio *io, const char *dir, struct snapfile *out);
void snapfile_fini(struct snapfile *s);
/* Moves the owned file buffer out: returns the malloc'd payload copy's
 * base (payload at offset 0) and its length; out is emptied. */
uint8_t *snapfile_take_payload(struct snapfile *s, size_t *len);

const char *snapfile_status_name(enum snapfile_status st);

#endif /* VS_SHARD_STORAGE_SNAPSHOT_FILE_H */
