/*
 * shard/storage/superblock.h - the ping-pong superblock (superblock.a/.b).
 *
 * Role: durable, versioned storage of one small record (the VsrState)
 * in two slot files under DIR (DATA/metadata for the metadata replica).
 * Record framing (reference/iggy-server-ng.md §3, DESIGN §4), LE:
 *
 *    0 magic            4 bytes, ASCII "SBLK" in this order
 *    4 version          u16  (1 to 4; also versions the VsrState payload;
 *                            this release writes 4)
 *    6 pad              u16  0
 *    8 sequence         u64  >= 1, +1 per write
 *   16 parent_checksum  u64  0 (reserved until used)
 *   24 payload_len      u32  <= SB_PAYLOAD_MAX
 *   28 payload
 *   28+len XXH3-64 of bytes [0, 28+len)
 *
 * A slot file must have exactly 36 + payload_len bytes. The framing
 * (magic, payload_len, checksum) is the same in every version, and the
 * checksum is verified before the version is read: a flipped bit reads
 * as corruption, never as "format version N unknown".
 *
 * Reading (sb_read_latest), exactly one of:
 *  - SB_EMPTY: both slots absent (no file). Fresh node only if nothing
 *    else exists in the data dir (the recovery verdict decides).
 *  - SB_PRESENT: the newest valid record (a valid superblock.a at
 *    sequence 1 beside an absent superblock.b is fine).
 *  - SB_UNREADABLE: any corrupt slot or unknown version -- ALSO beside a
 *    valid one, since the corrupt one may hold the newer sequence (seed
 *    review blocker); two valid slots with the same sequence (a fork)
 *    or non-adjacent sequences (a lost write); one valid slot beside an
 *    absent one unless it is superblock.a at sequence 1 (the state after
 *    the very first write: any other is a lost slot file).
 * A zero-length slot file counts as corrupt, not absent: slots are only
 * ever created by rename of an fsynced .tmp, so an empty one is damage.
 *
 * Writing (sb_write): into the slot NOT holding the newest record, with
 * sequence = newest + 1, through atomic_file (tmp, fsync, rename, dir
 * fsync). Choosing the slot and finishing the write is one synchronous
 * call; one writer per store. A store opened with a corrupt or unknown
 * slot is degraded and refuses every write (-EROFS), so a new write can
 * never stamp over the evidence. After a fatal error the store is
 * poisoned (-VS_EFATAL on every later write).
 *
 * Callers: shard 0 (one store per replica; later one per partition in
 * its data shard); vstream-inspect and tests read with sb_read_latest.
 */
#ifndef VS_SHARD_STORAGE_SUPERBLOCK_H
#define VS_SHARD_STORAGE_SUPERBLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "shard/storage/atomic_file.h"
#include "shard/storage/io.h"

#define SB_MAGIC        "SBLK"
#define SB_VERSION      4u /* written; 1 to 4 are read */
#define SB_VERSION_MIN  1u
#define SB_HEADER_SIZE  28u
#define SB_TRAILER_SIZE 8u
#define SB_PAYLOAD_MAX  4096u
#define SB_RECORD_MAX   (SB_HEADER_SIZE + SB_PAYLOAD_MAX + SB_TRAILER_SIZE)

enum sb_slot_state {
    SB_SLOT_ABSENT = 0,
    SB_SLOT_VALID,
    SB_SLOT_CORRUPT,
    SB_SLOT_UNKNOWN_VERSION,
};

enum sb_verdict {
    SB_EMPTY = 0,
    SB_PRESENT,
    SB_UNREADABLE,
};

/* One slot as read from disk. */
struct sb_slot {
    enum sb_slot_state state;
    uint16_t version;  /* VALID, UNKNOWN_VERSION */
    uint64_t sequence; /* VALID */
    uint32_t payload_len;
    uint8_t payload[SB_PAYLOAD_MAX];
    char reason[96]; /* CORRUPT / UNKNOWN_VERSION: why */
};

struct sb_read {
    enum sb_verdict verdict;
    struct sb_slot slot[2]; /* [0] = superblock.a, [1] = superblock.b */
    int newest;             /* PRESENT: index of the newest slot */
    /* PRESENT: copy of the newest record */
    uint16_t version;
    uint64_t sequence;
    uint32_t payload_len;
    const uint8_t *payload; /* points into slot[newest].payload */
    char reason[320];       /* UNREADABLE: one line naming slot and why */
};

struct sb_store {
    struct vs_sio *io;
    char dir[AFILE_PATH_MAX];
    int degraded; /* a corrupt/unknown slot was seen at open */
    int poisoned; /* a fatal error happened in a write */
    int newest;   /* slot holding the newest record, -1 if none */
    uint64_t sequence;
};

/* Encodes a record into out (capacity >= SB_RECORD_MAX); returns its
 * length, or 0 if payload_len > SB_PAYLOAD_MAX. */
size_t sb_record_encode(uint16_t version, uint64_t sequence,
                        const void *payload, size_t payload_len, uint8_t *out);
/* Classifies the bytes of one slot file (present = 0 means no file). */
void sb_slot_classify(const uint8_t *buf, size_t len, int present,
                      struct sb_slot *out);

/* Reads both slots of DIR without modifying anything. Returns 0 with
 * out->verdict set, or -errno if a slot could not be read (EACCES...). */
int sb_read_latest(struct vs_sio *io, const char *dir, struct sb_read *out);

/* Opens the store for writing: removes leftover .tmp files of crashed
 * writes, reads both slots (out, if not NULL, gets what was read).
 * 0 (the store may be degraded: check sb_store_writable), or -errno. */
int sb_open(struct sb_store *s, struct vs_sio *io, const char *dir,
            struct sb_read *out);
int sb_store_writable(const struct sb_store *s);
/* Writes a record of version SB_VERSION. 0, -EROFS (degraded),
 * -VS_EFATAL (poisoned by an earlier fatal error), -EINVAL (too long), -ENOSPC
 * (nothing changed), -errno (the .tmp could not be created; nothing changed) or
 * -VS_EFATAL. */
int sb_write(struct sb_store *s, const void *payload, size_t len);

const char *sb_verdict_name(enum sb_verdict v);
const char *sb_slot_state_name(enum sb_slot_state st);
/* "superblock.a" / "superblock.b" */
const char *sb_slot_name(int slot);

#endif /* VS_SHARD_STORAGE_SUPERBLOCK_H */
