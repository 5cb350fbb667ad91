/*
 * tests/fuzz/fuzz_batch.c - libFuzzer target: send batches and their
 * message frames (shard/data/batch.c: batch_validate, batch_stamp).
 *
 * Input: [ctl u8][batch bytes]. ctl bit 0: validate as a client batch
 * (server fields must be zero), else as a stamped batch read from disk;
 * bit 1: reseal (recompute every frame checksum that lies in the input and,
 * when the frames tile the batch, the batch checksum) so mutations reach
 * past the checksums. Invariants checked, for an accepted batch, by an
 * independent walk: the frames tile [256, batch_length) exactly, there are
 * message_count of them, frame i has offset_delta i, a zero reserved field
 * and a matching checksum, the limits hold, and the batch checksum
 * matches; batch_info agrees with the header; a stamped copy validates as
 * a stored batch and carries the stamped fields. A refusal is an error
 * with a name and an Iggy code.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walks the frames like a reader would; returns how many fit and sets
 * *end to where the walk stopped. */
static uint32_t
walk(const uint8_t *b, size_t len, uint32_t max, size_t *end, int seal)
{
    size_t pos = BATCH_HEADER_SIZE;
    uint32_t i = 0;
    while (i < max && len - pos >= BATCH_FRAME_SIZE) {
        uint8_t *f = (uint8_t *)b + pos;
        uint64_t flen = (uint64_t)BATCH_FRAME_SIZE +
                        vs_load_u32(f + BATCH_FOFF_PAYLOAD_LEN) +
                        vs_load_u32(f + BATCH_FOFF_HEADERS_LEN);
        if (flen > len - pos)
            break;
        if (seal)
            vs_store_u64(f + BATCH_FOFF_CHECKSUM,
                         batch_frame_checksum(f, (size_t)flen));
        pos += (size_t)flen;
        i++;
    }
    *end = pos;
    return i;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    size_t len = size - 1;
    uint8_t *b = malloc(len + 1);
    fuzz_check(b != NULL, "malloc");
    memcpy(b, data + 1, len);
    int client = ctl & 1;
    if ((ctl & 2) && len >= BATCH_HEADER_SIZE) {
        size_t end;
        uint32_t n = walk(b, len, batch_count(b), &end, 1);
        if (n == batch_count(b) && n > 0 && end == len &&
            batch_length(b) == len)
            vs_store_u64(b + BATCH_OFF_CHECKSUM, batch_compute_checksum(b));
    }

    struct batch_limits lim;
    batch_limits_default(&lim);
    if (ctl & 4) { /* small limits, to reach every limit check */
        lim.max_batch_bytes = 4096;
        lim.max_messages = 8;
        lim.max_payload = 512;
        lim.max_user_headers = 64;
    }
    struct batch_info info;
    enum batch_err e = batch_validate(b, len, &lim, client, &info);
    if (e != BATCH_OK) {
        fuzz_check(batch_err_str(e) != NULL && batch_err_str(e)[0] != '\0',
                   "a refusal has a name");
        fuzz_check(batch_err_code(e) != 0, "a refusal has an Iggy code");
        free(b);
        return 0;
    }
    fuzz_check(len >= BATCH_HEADER_SIZE, "an accepted batch has a header");
    uint32_t n = batch_count(b);
    fuzz_check(info.batch_length == len && batch_length(b) == len,
               "batch_length is the byte count");
    fuzz_check(info.message_count == n && n > 0 && n <= lim.max_messages,
               "message_count in range");
    fuzz_check(len <= lim.max_batch_bytes, "batch size within the limit");
    for (size_t i = BATCH_OFF_RESERVED; i < BATCH_HEADER_SIZE; i++)
        fuzz_check(b[i] == 0, "reserved header bytes are zero");
    if (client)
        fuzz_check(vs_load_u64(b + BATCH_OFF_PARTITION_ID) == 0 &&
                       batch_base_offset(b) == 0 &&
                       batch_base_timestamp(b) == 0,
                   "a client batch has zero server fields");
    size_t pos = BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < n; i++) {
        fuzz_check(len - pos >= BATCH_FRAME_SIZE, "frame header in bounds");
        const uint8_t *f = b + pos;
        uint32_t plen = vs_load_u32(f + BATCH_FOFF_PAYLOAD_LEN);
        uint32_t hlen = vs_load_u32(f + BATCH_FOFF_HEADERS_LEN);
        uint64_t flen = (uint64_t)BATCH_FRAME_SIZE + plen + hlen;
        fuzz_check(flen <= len - pos, "frame in bounds");
        fuzz_check(plen <= lim.max_payload && hlen <= lim.max_user_headers,
                   "frame within the limits");
        fuzz_check(vs_load_u32(f + BATCH_FOFF_OFFSET_D) == i,
                   "offset_delta is the frame index");
        fuzz_check(vs_load_u64(f + BATCH_FOFF_RESERVED) == 0,
                   "frame reserved field is zero");
        fuzz_check(batch_frame_checksum(f, (size_t)flen) ==
                       vs_load_u64(f + BATCH_FOFF_CHECKSUM),
                   "frame checksum matches");
        pos += (size_t)flen;
    }
    fuzz_check(pos == len, "the frames tile the batch exactly");
    fuzz_check(batch_compute_checksum(b) == batch_checksum_field(b),
               "the batch checksum matches");

    /* stamping keeps it valid as a stored batch */
    batch_stamp(b, 7, UINT64_C(1000), UINT64_C(123456789));
    fuzz_check(batch_validate(b, len, &lim, 0, NULL) == BATCH_OK,
               "a stamped batch validates as stored");
    fuzz_check(vs_load_u64(b + BATCH_OFF_PARTITION_ID) == 7 &&
                   batch_base_offset(b) == 1000 &&
                   batch_base_timestamp(b) == 123456789 &&
                   batch_last_offset(b) == 1000 + (uint64_t)n - 1,
               "the stamped fields read back");
    if (client)
        fuzz_check(batch_validate(b, len, &lim, 1, NULL) == BATCH_E_NOT_ZEROED,
                   "a stamped batch is no longer a client batch");
    free(b);
    return 0;
}
