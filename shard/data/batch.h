/*
 * shard/data/batch.h - the message batch: validation of a client batch,
 * server stamping, and the send-side partitioners.
 *
 * Role: one batch layout is shared by the send body, the segment record and
 * the poll reply (iggy-server-ng §8, iggy-client-protocol §5.6):
 *
 *   header, 256 bytes, little endian:
 *     @0  partition_id u64     @8  base_offset u64    @16 base_timestamp u64
 *     @24 origin_timestamp u64 @32 batch_length u64 (header included)
 *     @40 batch_checksum u64   @48 message_count u32  @52..256 zero
 *   frames, back to back: [48-byte frame header][payload][user headers]
 *     @0 checksum u64 = XXH3-64(frame[8..end))   @8 id u128
 *     @24 offset_delta u32  @28 timestamp_delta u32  @32 headers_len u32
 *     @36 payload_len u32   @40 reserved u64 = 0
 *   batch_checksum = XXH3-64 streamed over partition_id, base_offset,
 *     base_timestamp, origin_timestamp, batch_length (u64 LE each),
 *     message_count (u32 LE), then every frame's 8-byte checksum in order.
 *
 * batch_validate() walks the frames by 48 + payload_len + headers_len and
 * verifies EVERY frame checksum and the batch checksum (the batch checksum
 * binds bodies only through the frame checksums), the batch_length, the
 * message_count, offset_delta == index, reserved fields zero, and the
 * limits. It never reads outside [buf, buf + len) and never crashes on
 * any input. A refused batch maps to an Iggy code with batch_err_code().
 *
 * Stamping (server side) overwrites partition_id, base_offset and
 * base_timestamp, then recomputes the batch checksum; the frame checksums
 * do not cover those fields, so they stay valid.
 *
 * Invariants: pure functions over caller memory; no I/O, no clock (the
 * caller passes the wall time). Callers: data shards (serve layer, the
 * partition engine), tests, the client library if it wishes.
 */
#ifndef VS_SHARD_DATA_BATCH_H
#define VS_SHARD_DATA_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/errors.h"

#define BATCH_HEADER_SIZE 256u
#define BATCH_FRAME_SIZE  48u

/* Header field offsets. */
#define BATCH_OFF_PARTITION_ID     0u
#define BATCH_OFF_BASE_OFFSET      8u
#define BATCH_OFF_BASE_TIMESTAMP   16u
#define BATCH_OFF_ORIGIN_TIMESTAMP 24u
#define BATCH_OFF_LENGTH           32u
#define BATCH_OFF_CHECKSUM         40u
#define BATCH_OFF_COUNT            48u
#define BATCH_OFF_RESERVED         52u

/* Frame field offsets (relative to the frame). */
#define BATCH_FOFF_CHECKSUM    0u
#define BATCH_FOFF_ID          8u
#define BATCH_FOFF_OFFSET_D    24u
#define BATCH_FOFF_TS_D        28u
#define BATCH_FOFF_HEADERS_LEN 32u
#define BATCH_FOFF_PAYLOAD_LEN 36u
#define BATCH_FOFF_RESERVED    40u

/* Why a batch was refused. */
enum batch_err {
    BATCH_OK = 0,
    BATCH_E_SHORT,             /* fewer than 256 bytes */
    BATCH_E_LENGTH,            /* batch_length != bytes given, or < 256 */
    BATCH_E_TOO_LARGE,         /* batch_length over limits.max_batch_bytes */
    BATCH_E_EMPTY,             /* message_count 0 */
    BATCH_E_TOO_MANY,          /* message_count over limits.max_messages */
    BATCH_E_COUNT,             /* frames walked != message_count */
    BATCH_E_FRAME_BOUNDS,      /* a frame runs past batch_length */
    BATCH_E_RESERVED,          /* header bytes 52..256 not zero */
    BATCH_E_FRAME_RESERVED,    /* a frame's reserved u64 not zero */
    BATCH_E_OFFSET_DELTA,      /* frame i's offset_delta != i */
    BATCH_E_PAYLOAD_TOO_LARGE, /* payload_len over limits */
    BATCH_E_HEADERS_TOO_LARGE, /* headers_len over limits */
    BATCH_E_MSG_CHECKSUM,      /* a frame checksum does not match */
    BATCH_E_BATCH_CHECKSUM,    /* the batch checksum does not match */
    BATCH_E_NOT_ZEROED,        /* client batch with a non-zero server field */
};

struct batch_limits {
    uint64_t max_batch_bytes;  /* whole batch, header included */
    uint32_t max_messages;     /* per batch */
    uint32_t max_payload;      /* per message */
    uint32_t max_user_headers; /* per message */
};

/* Defaults: 64 MiB batch, 1,000,000 messages, 64 MiB payload, 100 KiB of
 * user headers. */
void batch_limits_default(struct batch_limits *l);

/* What validation learned. */
struct batch_info {
    uint64_t batch_length;
    uint32_t message_count;
    uint64_t origin_timestamp;
    uint32_t bad_index; /* frame index of a frame error, else 0 */
};

/* Validates a client batch in buf[0..len): len must equal batch_length.
 * client = 1 additionally requires partition_id, base_offset and
 * base_timestamp to be zero (as producers send them); client = 0 is for
 * stamped batches read back from disk. lim NULL = defaults. */
enum batch_err batch_validate(const uint8_t *buf, size_t len,
                              const struct batch_limits *lim, int client,
                              struct batch_info *out);

/* Structural check of a stamped header alone (no frames, no checksums):
 * length >= 256 + 48 * count, count > 0, reserved zero. For scans. */
enum batch_err batch_header_check(const uint8_t hdr[BATCH_HEADER_SIZE]);

/* The Iggy error code of a refusal (VS_E_INVALID_FORMAT-like codes above). */
uint32_t batch_err_code(enum batch_err e);
/* "message checksum mismatch", ... */
const char *batch_err_str(enum batch_err e);

/* Header accessors (buf holds at least 256 bytes). */
uint64_t batch_base_offset(const uint8_t *buf);
uint64_t batch_base_timestamp(const uint8_t *buf);
uint64_t batch_length(const uint8_t *buf);
uint32_t batch_count(const uint8_t *buf);
uint64_t batch_checksum_field(const uint8_t *buf);
/* Offset of the last message: base_offset + message_count - 1. */
uint64_t batch_last_offset(const uint8_t *buf);

/* Frame checksum: XXH3-64 of frame[8 .. 48 + payload + headers). The
 * caller guarantees the frame lies in memory. */
uint64_t batch_frame_checksum(const uint8_t *frame, size_t frame_len);

/* Recomputes the batch checksum of a structurally valid batch (its frames
 * walked within batch_length) from the header fields and the stored frame
 * checksums. */
uint64_t batch_compute_checksum(const uint8_t *buf);

/* Stamps a validated batch: partition_id, base_offset, base_timestamp,
 * then recomputes and stores the batch checksum. */
void batch_stamp(uint8_t *buf, uint32_t partition_id, uint64_t base_offset,
                 uint64_t base_timestamp);

/* Monotonic base timestamp: max(prev, wall_us). A wall clock stepping
 * back never moves a partition's timestamps backwards. */
uint64_t batch_next_timestamp(uint64_t prev, uint64_t wall_us);

/* Message-key partitioning (iggy-client-protocol-2 §10):
 * XXH32(key, seed 0) % partitions_count, an INDEX into the topic's
 * partitions in ascending id order. partitions_count 0 -> UINT32_MAX. */
uint32_t batch_partition_by_key(const void *key, size_t len,
                                uint32_t partitions_count);

/* Balanced partitioning: a per-topic round-robin counter that starts with
 * the first partition. Returns the index and advances the counter. */
struct batch_rr {
    uint64_t next;
};
uint32_t batch_rr_next(struct batch_rr *rr, uint32_t partitions_count);

/* Builds a valid client batch from messages (tests, benches, the CLI if it
 * wishes). payloads[i]/plen[i], headers[i]/hlen[i] (NULL/0 allowed), ids
 * NULL = id i+1. Writes to out (cap bytes); returns the batch length, or 0
 * if cap is too small. Timestamp deltas are 0. */
size_t batch_build(uint8_t *out, size_t cap, uint64_t origin_timestamp,
                   uint32_t count, const uint8_t *const *payloads,
                   const uint32_t *plen, const uint8_t *const *headers,
                   const uint32_t *hlen, const uint64_t *ids);

#endif /* VS_SHARD_DATA_BATCH_H */
