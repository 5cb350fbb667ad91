/*
 * shard/link/beat.h - the coalesced group beat frame of the data shards'
 * links: one frame per link per tick carries the heartbeat / commit and
 * acknowledgement entries of many consensus groups (DESIGN §9).
 *
 * Layout (little endian; the 256-byte header is sealed with
 * vs_frame_seal, the body covered by checksum_body):
 *
 *   off  size  field
 *     0   128  struct vs_frame: cluster, size = 256 + count * 64,
 *              view 0, reserved_frame zero, release = the sender's
 *              wire format,
 *              command VS_CMD_GROUP_BEAT (64), replica = the sender's id;
 *              checksum_body = XXH3(body) (0 iff the body is empty)
 *   128     8  seq          the sender's beat number on this link (grows
 *                           by one per frame; restarts at 1 with the
 *                           sender's process)
 *   136     4  count        entries in the body, 0..BEAT_ENTRIES_MAX
 *   140     2  entry_size   64 with entries; a keepalive (count 0): 32,
 *                           the previous release's size, so both releases
 *                           accept it (another size is refused)
 *   142     1  shard        the sender's mesh (data shard index)
 *   143   113  reserved     zero
 *   body: count entries of 64 bytes, strictly increasing by
 *         (group, kind), so no (group, kind) appears twice:
 *     0     8  group        the consensus group id
 *     8     4  view         the sender's view of the group
 *    12     1  kind         BEAT_KIND_COMMIT or BEAT_KIND_ACK
 *    13     1  member       the sender's replica index in the group
 *    14     2  reserved     zero
 *    16     8  commit       COMMIT: the primary's commit number; ACK: the
 *                           backup's applied op (commit_min)
 *    24     8  op           COMMIT: the checkpoint op; ACK: zero
 *    32     8  timestamp    COMMIT: the heartbeat's number
 *                           (timestamp_monotonic); ACK: the heartbeat
 *                           answered
 *    40     8  reserved     zero
 *    48    16  checksum     COMMIT: the identity checksum of the commit
 *                           op's prepare (zero if unknown); ACK: zero
 *   A COMMIT entry carries every field of the group's Commit heartbeat
 *   (wire.h vs_hdr_commit) and an ACK those of its Pong answer, so the
 *   receiver rebuilds the exact frame the engine built (shard/serve/
 *   pbeat.h).
 *
 * A frame with no entries is the link's keepalive. The decoder checks
 * the exact size (header + count * 64 == size == bytes received), the
 * seal, the body checksum, the count bound, the entry size, known kinds,
 * zero reserved bytes and the strict order, and refuses with a typed
 * reason; nothing of a refused frame is used.
 *
 * Invariants: pure functions, no I/O, no allocation.
 * Callers: any process (the data shards' mesh, tests, fuzzers).
 */
#ifndef VS_SHARD_LINK_BEAT_H
#define VS_SHARD_LINK_BEAT_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

#define BEAT_ENTRY_SIZE 64u
/* The previous release's entry size: a keepalive (no entries) carries it,
 * and only it, so links with nodes of that release keep their beats'
 * sequence during a rolling upgrade; a frame with entries carries
 * BEAT_ENTRY_SIZE. */
#define BEAT_ENTRY_SIZE_V1 32u
#define BEAT_ENTRIES_MAX   16384u /* per frame: 1 MiB of body */
#define BEAT_FRAME_MAX     (VS_HEADER_SIZE + BEAT_ENTRIES_MAX * BEAT_ENTRY_SIZE)

enum beat_kind {
    BEAT_KIND_COMMIT = 1, /* primary -> backup: heartbeat and commit */
    BEAT_KIND_ACK = 2,    /* backup -> primary: the heartbeat's answer */
};

struct beat_hdr { /* command VS_CMD_GROUP_BEAT */
    struct vs_frame f;
    uint64_t seq;          /* 128 */
    uint32_t count;        /* 136 */
    uint16_t entry_size;   /* 140 */
    uint8_t shard;         /* 142 */
    uint8_t reserved[113]; /* 143 */
};
_Static_assert(sizeof(struct beat_hdr) == VS_HEADER_SIZE, "beat header");
_Static_assert(offsetof(struct beat_hdr, seq) == 128, "beat seq");
_Static_assert(offsetof(struct beat_hdr, count) == 136, "beat count");
_Static_assert(offsetof(struct beat_hdr, entry_size) == 140, "beat esize");
_Static_assert(offsetof(struct beat_hdr, shard) == 142, "beat shard");
_Static_assert(offsetof(struct beat_hdr, reserved) == 143, "beat reserved");

/* One entry as the body stores it. */
struct beat_wire_entry {
    uint64_t group;          /* 0 */
    uint32_t view;           /* 8 */
    uint8_t kind;            /* 12 */
    uint8_t member;          /* 13 */
    uint8_t reserved[2];     /* 14 */
    uint64_t commit;         /* 16 */
    uint64_t op;             /* 24 */
    uint64_t timestamp;      /* 32 */
    uint8_t reserved2[8];    /* 40 */
    struct vs_u128 checksum; /* 48 */
};
_Static_assert(sizeof(struct beat_wire_entry) == BEAT_ENTRY_SIZE, "entry");
_Static_assert(offsetof(struct beat_wire_entry, commit) == 16, "commit");
_Static_assert(offsetof(struct beat_wire_entry, op) == 24, "op");
_Static_assert(offsetof(struct beat_wire_entry, timestamp) == 32, "ts");
_Static_assert(offsetof(struct beat_wire_entry, checksum) == 48, "sum");

/* An entry as callers use it. */
struct beat_entry {
    uint64_t group;
    uint32_t view;
    uint8_t kind;   /* enum beat_kind */
    uint8_t member; /* the sender's replica index in the group */
    uint64_t commit, op, timestamp;
    struct vs_u128 checksum;
};

/* Who sends: the header fields the encoder fills. */
struct beat_sender {
    struct vs_u128 cluster;
    uint32_t release;
    uint8_t replica, shard;
};

/* Decode verdicts (returned negated by beat_decode). */
enum beat_error {
    BEAT_OK = 0,
    BEAT_ERR_SHORT,      /* fewer than 256 bytes */
    BEAT_ERR_SIZE,       /* header size != bytes, or != 256 + count * 64 */
    BEAT_ERR_COMMAND,    /* not VS_CMD_GROUP_BEAT */
    BEAT_ERR_SEAL,       /* header checksum */
    BEAT_ERR_BODY,       /* body checksum */
    BEAT_ERR_COUNT,      /* count above BEAT_ENTRIES_MAX */
    BEAT_ERR_ENTRY_SIZE, /* entry_size != 64 */
    BEAT_ERR_RESERVED,   /* a reserved byte is not zero */
    BEAT_ERR_KIND,       /* unknown entry kind */
    BEAT_ERR_ORDER,      /* a (group, kind) repeated or out of order */
    BEAT_ERR_CLUSTER,    /* another cluster */
};

/* Bytes of a frame carrying n entries (n <= BEAT_ENTRIES_MAX). */
size_t beat_frame_size(uint32_t n);

/* Writes the frame of entries e[0..n) (already in frame order, n <=
 * BEAT_ENTRIES_MAX) into buf (cap >= beat_frame_size(n)). Returns the
 * frame's size, or -EINVAL (n too large, cap too small, entries out of
 * order or repeated, an unknown kind). */
long beat_encode(const struct beat_sender *s, uint64_t seq,
                 const struct beat_entry *e, uint32_t n, void *buf, size_t cap);

/* Checks the frame of len bytes (cluster: the receiver's). 0, with *hdr
 * pointing at the header and *body at the entries (read them with
 * beat_entry_at), or -enum beat_error. */
int beat_decode(const void *frame, size_t len, const struct vs_u128 *cluster,
                const struct beat_hdr **hdr, const uint8_t **body);

/* Entry i of a decoded body (no alignment needed). */
void beat_entry_at(const uint8_t *body, uint32_t i, struct beat_entry *out);

/* A verdict's name, for logs ("truncated", ...). */
const char *beat_error_name(int err);

#endif /* VS_SHARD_LINK_BEAT_H */
