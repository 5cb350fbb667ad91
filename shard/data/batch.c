/*
 * shard/data/batch.c - validation, stamping and partitioning of message
 * batches (layout in batch.h).
 *
 * Invariants: every read of a frame field is preceded by a bounds check
 * against batch_length and the buffer length; pure, no I/O, no clock.
 * Callers: see batch.h.
 */
#include "config.h"

#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "shard/data/batch.h"

void
batch_limits_default(struct batch_limits *l)
{
    l->max_batch_bytes = 64ull << 20;
    l->max_messages = 1000000u;
    l->max_payload = 64u << 20;
    l->max_user_headers = 100u << 10;
}

uint64_t
batch_base_offset(const uint8_t *buf)
{
    return vs_load_u64(buf + BATCH_OFF_BASE_OFFSET);
}

uint64_t
batch_base_timestamp(const uint8_t *buf)
{
    return vs_load_u64(buf + BATCH_OFF_BASE_TIMESTAMP);
}

uint64_t
batch_length(const uint8_t *buf)
{
    return vs_load_u64(buf + BATCH_OFF_LENGTH);
}

uint32_t
batch_count(const uint8_t *buf)
{
    return vs_load_u32(buf + BATCH_OFF_COUNT);
}

uint64_t
batch_checksum_field(const uint8_t *buf)
{
    return vs_load_u64(buf + BATCH_OFF_CHECKSUM);
}

uint64_t
batch_last_offset(const uint8_t *buf)
{
    uint32_t n = batch_count(buf);
    return batch_base_offset(buf) + (n ? n - 1 : 0);
}

uint64_t
batch_frame_checksum(const uint8_t *frame, size_t frame_len)
{
    return vs_xxh3_64(frame + 8, frame_len - 8);
}

static int
all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

enum batch_err
batch_header_check(const uint8_t hdr[BATCH_HEADER_SIZE])
{
    uint64_t blen = batch_length(hdr);
    uint32_t n = batch_count(hdr);
    if (blen < BATCH_HEADER_SIZE)
        return BATCH_E_LENGTH;
    if (n == 0)
        return BATCH_E_EMPTY;
    if ((blen - BATCH_HEADER_SIZE) / BATCH_FRAME_SIZE < n)
        return BATCH_E_COUNT;
    if (!all_zero(hdr + BATCH_OFF_RESERVED,
                  BATCH_HEADER_SIZE - BATCH_OFF_RESERVED))
        return BATCH_E_RESERVED;
    return BATCH_OK;
}

/* The batch checksum as a stream: the header fields, then each frame
 * checksum in turn. The frame checksums are gathered and fed 64 at a
 * time (the stream's value does not depend on how its input is split,
 * and one 8-byte update per frame costs more than the gathering). */
struct batch_sum {
    struct vs_xxh3_stream s;
    uint8_t sums[64 * 8];
    size_t ns;
};

static void
batch_sum_init(struct batch_sum *b, const uint8_t *buf)
{
    vs_xxh3_stream_init(&b->s);
    /* partition_id, base_offset, base_timestamp, origin_timestamp,
     * batch_length: the first 40 bytes, already LE u64s. */
    vs_xxh3_stream_update(&b->s, buf, 40);
    vs_xxh3_stream_update(&b->s, buf + BATCH_OFF_COUNT, 4);
    b->ns = 0;
}

static void
batch_sum_add(struct batch_sum *b, const uint8_t *frame)
{
    memcpy(b->sums + 8 * b->ns++, frame + BATCH_FOFF_CHECKSUM, 8);
    if (b->ns == 64) {
        vs_xxh3_stream_update(&b->s, b->sums, sizeof(b->sums));
        b->ns = 0;
    }
}

static uint64_t
batch_sum_end(struct batch_sum *b)
{
    vs_xxh3_stream_update(&b->s, b->sums, 8 * b->ns);
    return vs_xxh3_stream_digest(&b->s);
}

/* The frames must have been walked within batch_length already. */
uint64_t
batch_compute_checksum(const uint8_t *buf)
{
    struct batch_sum b;
    batch_sum_init(&b, buf);
    uint64_t blen = batch_length(buf);
    uint32_t n = batch_count(buf);
    uint64_t pos = BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < n && pos + BATCH_FRAME_SIZE <= blen; i++) {
        const uint8_t *f = buf + pos;
        batch_sum_add(&b, f);
        pos += BATCH_FRAME_SIZE +
               (uint64_t)vs_load_u32(f + BATCH_FOFF_PAYLOAD_LEN) +
               vs_load_u32(f + BATCH_FOFF_HEADERS_LEN);
    }
    return batch_sum_end(&b);
}

enum batch_err
batch_validate(const uint8_t *buf, size_t len, const struct batch_limits *lim,
               int client, struct batch_info *out)
{
    struct batch_limits def;
    if (!lim) {
        batch_limits_default(&def);
        lim = &def;
    }
    struct batch_info info;
    memset(&info, 0, sizeof(info));
    if (out)
        *out = info;
    if (len < BATCH_HEADER_SIZE)
        return BATCH_E_SHORT;
    uint64_t blen = batch_length(buf);
    uint32_t n = batch_count(buf);
    info.batch_length = blen;
    info.message_count = n;
    info.origin_timestamp = vs_load_u64(buf + BATCH_OFF_ORIGIN_TIMESTAMP);
    if (out)
        *out = info;
    if (blen > lim->max_batch_bytes)
        return BATCH_E_TOO_LARGE;
    if (blen != len || blen < BATCH_HEADER_SIZE)
        return BATCH_E_LENGTH;
    if (n == 0)
        return BATCH_E_EMPTY;
    if (n > lim->max_messages)
        return BATCH_E_TOO_MANY;
    if (!all_zero(buf + BATCH_OFF_RESERVED,
                  BATCH_HEADER_SIZE - BATCH_OFF_RESERVED))
        return BATCH_E_RESERVED;
    if (client && (vs_load_u64(buf + BATCH_OFF_PARTITION_ID) ||
                   batch_base_offset(buf) || batch_base_timestamp(buf)))
        return BATCH_E_NOT_ZEROED;

    /* the batch checksum is gathered in the same walk */
    struct batch_sum sum;
    batch_sum_init(&sum, buf);
    uint64_t pos = BATCH_HEADER_SIZE;
    uint32_t i = 0;
    enum batch_err rc = BATCH_OK;
    while (pos < blen) {
        if (blen - pos < BATCH_FRAME_SIZE) {
            rc = BATCH_E_FRAME_BOUNDS;
            break;
        }
        const uint8_t *f = buf + pos;
        uint32_t plen = vs_load_u32(f + BATCH_FOFF_PAYLOAD_LEN);
        uint32_t hlen = vs_load_u32(f + BATCH_FOFF_HEADERS_LEN);
        uint64_t flen = (uint64_t)BATCH_FRAME_SIZE + plen + hlen;
        if (flen > blen - pos) {
            rc = BATCH_E_FRAME_BOUNDS;
            break;
        }
        if (i >= n) {
            rc = BATCH_E_COUNT;
            break;
        }
        if (plen > lim->max_payload) {
            rc = BATCH_E_PAYLOAD_TOO_LARGE;
            break;
        }
        if (hlen > lim->max_user_headers) {
            rc = BATCH_E_HEADERS_TOO_LARGE;
            break;
        }
        if (vs_load_u64(f + BATCH_FOFF_RESERVED) != 0) {
            rc = BATCH_E_FRAME_RESERVED;
            break;
        }
        if (vs_load_u32(f + BATCH_FOFF_OFFSET_D) != i) {
            rc = BATCH_E_OFFSET_DELTA;
            break;
        }
        if (batch_frame_checksum(f, (size_t)flen) !=
            vs_load_u64(f + BATCH_FOFF_CHECKSUM)) {
            rc = BATCH_E_MSG_CHECKSUM;
            break;
        }
        batch_sum_add(&sum, f);
        pos += flen;
        i++;
    }
    if (rc == BATCH_OK && i != n)
        rc = BATCH_E_COUNT;
    if (rc == BATCH_OK && batch_sum_end(&sum) != batch_checksum_field(buf))
        rc = BATCH_E_BATCH_CHECKSUM;
    if (rc != BATCH_OK)
        info.bad_index = i;
    if (out)
        *out = info;
    return rc;
}

uint32_t
batch_err_code(enum batch_err e)
{
    switch (e) {
    case BATCH_OK:
        return VS_E_OK;
    case BATCH_E_SHORT:
        return VS_E_TOO_SMALL_MESSAGE;
    case BATCH_E_LENGTH:
    case BATCH_E_FRAME_BOUNDS:
        return VS_E_INVALID_MESSAGES_SIZE;
    case BATCH_E_TOO_LARGE:
        return VS_E_TOO_BIG_MESSAGE_PAYLOAD;
    case BATCH_E_EMPTY:
    case BATCH_E_COUNT:
        return VS_E_INVALID_MESSAGES_COUNT;
    case BATCH_E_TOO_MANY:
        return VS_E_TOO_MANY_MESSAGES;
    case BATCH_E_RESERVED:
    case BATCH_E_FRAME_RESERVED:
        return VS_E_INVALID_RESERVED_FIELD;
    case BATCH_E_OFFSET_DELTA:
        return VS_E_NON_ZERO_OFFSET;
    case BATCH_E_PAYLOAD_TOO_LARGE:
        return VS_E_TOO_BIG_MESSAGE_PAYLOAD;
    case BATCH_E_HEADERS_TOO_LARGE:
        return VS_E_TOO_BIG_USER_HEADERS;
    case BATCH_E_MSG_CHECKSUM:
        return VS_E_INVALID_MESSAGE_CHECKSUM;
    case BATCH_E_BATCH_CHECKSUM:
        return VS_E_INVALID_BATCH_CHECKSUM;
    case BATCH_E_NOT_ZEROED:
        return VS_E_NON_ZERO_TIMESTAMP;
    }
    return VS_E_INVALID_FORMAT;
}

const char *
batch_err_str(enum batch_err e)
{
    switch (e) {
    case BATCH_OK:
        return "ok";
    case BATCH_E_SHORT:
        return "batch shorter than its 256-byte header";
    case BATCH_E_LENGTH:
        return "batch_length does not match the bytes sent";
    case BATCH_E_TOO_LARGE:
        return "batch larger than the limit";
    case BATCH_E_EMPTY:
        return "batch with no message";
    case BATCH_E_TOO_MANY:
        return "too many messages in one batch";
    case BATCH_E_COUNT:
        return "message_count does not match the frames";
    case BATCH_E_FRAME_BOUNDS:
        return "a message frame runs past batch_length";
    case BATCH_E_RESERVED:
        return "batch header reserved bytes not zero";
    case BATCH_E_FRAME_RESERVED:
        return "message reserved field not zero";
    case BATCH_E_OFFSET_DELTA:
        return "message offset_delta is not its index";
    case BATCH_E_PAYLOAD_TOO_LARGE:
        return "message payload larger than the limit";
    case BATCH_E_HEADERS_TOO_LARGE:
        return "message user headers larger than the limit";
    case BATCH_E_MSG_CHECKSUM:
        return "message checksum mismatch";
    case BATCH_E_BATCH_CHECKSUM:
        return "batch checksum mismatch";
    case BATCH_E_NOT_ZEROED:
        return "client batch with a non-zero server-stamped field";
    }
    return "unknown batch error";
}

void
batch_stamp(uint8_t *buf, uint32_t partition_id, uint64_t base_offset,
            uint64_t base_timestamp)
{
    vs_store_u64(buf + BATCH_OFF_PARTITION_ID, partition_id);
    vs_store_u64(buf + BATCH_OFF_BASE_OFFSET, base_offset);
    vs_store_u64(buf + BATCH_OFF_BASE_TIMESTAMP, base_timestamp);
    vs_store_u64(buf + BATCH_OFF_CHECKSUM, batch_compute_checksum(buf));
}

uint64_t
batch_next_timestamp(uint64_t prev, uint64_t wall_us)
{
    return wall_us > prev ? wall_us : prev;
}

uint32_t
batch_partition_by_key(const void *key, size_t len, uint32_t partitions_count)
{
    if (partitions_count == 0)
        return UINT32_MAX;
    return vs_xxh32(key, len) % partitions_count;
}

uint32_t
batch_rr_next(struct batch_rr *rr, uint32_t partitions_count)
{
    if (partitions_count == 0)
        return UINT32_MAX;
    uint32_t i = (uint32_t)(rr->next % partitions_count);
    rr->next++;
    return i;
}

size_t
batch_build(uint8_t *out, size_t cap, uint64_t origin_timestamp, uint32_t count,
            const uint8_t *const *payloads, const uint32_t *plen,
            const uint8_t *const *headers, const uint32_t *hlen,
            const uint64_t *ids)
{
    uint64_t total = BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < count; i++)
        total += BATCH_FRAME_SIZE + (uint64_t)plen[i] + (hlen ? hlen[i] : 0);
    if (total > cap)
        return 0;
    memset(out, 0, BATCH_HEADER_SIZE);
    vs_store_u64(out + BATCH_OFF_ORIGIN_TIMESTAMP, origin_timestamp);
    vs_store_u64(out + BATCH_OFF_LENGTH, total);
    vs_store_u32(out + BATCH_OFF_COUNT, count);
    size_t pos = BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *f = out + pos;
        uint32_t hl = hlen ? hlen[i] : 0;
        memset(f, 0, BATCH_FRAME_SIZE);
        vs_store_u64(f + BATCH_FOFF_ID, ids ? ids[i] : (uint64_t)i + 1);
        vs_store_u32(f + BATCH_FOFF_OFFSET_D, i);
        vs_store_u32(f + BATCH_FOFF_HEADERS_LEN, hl);
        vs_store_u32(f + BATCH_FOFF_PAYLOAD_LEN, plen[i]);
        if (plen[i])
            memcpy(f + BATCH_FRAME_SIZE, payloads[i], plen[i]);
        if (hl)
            memcpy(f + BATCH_FRAME_SIZE + plen[i], headers[i], hl);
        size_t flen = BATCH_FRAME_SIZE + (size_t)plen[i] + hl;
        vs_store_u64(f + BATCH_FOFF_CHECKSUM, batch_frame_checksum(f, flen));
        pos += flen;
    }
    vs_store_u64(out + BATCH_OFF_CHECKSUM, batch_compute_checksum(out));
    return (size_t)total;
}
