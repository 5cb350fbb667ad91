/*
 * tests/fuzz/fuzz_beat.c - libFuzzer target: the coalesced group beat
 * frame of the data shards' links (shard/link/beat.h), and the pending
 * tables fed from what it accepts (shard/link/coalesce.h).
 *
 * Input: [flags u8][frame bytes]. Bit 0 of flags first makes the frame's
 * size field its length and recomputes checksum_body and the seal, so
 * the fuzzer reaches the checks behind the checksums. Invariants:
 *  - every verdict is 0 or a known -enum beat_error (it has a name);
 *  - an accepted frame re-encodes from its entries to exactly its bytes
 *    (one encoding per content: nothing unchecked rides along);
 *  - its entries posted to a table and flushed come back as frames the
 *    decoder accepts, carrying the same number of entries.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "shard/link/beat.h"
#include "shard/link/coalesce.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct vs_u128 cluster = {0xbea7, 0x11c5};

static uint64_t flushed;

static int
check_emit(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    (void)ctx;
    (void)peer;
    const struct beat_hdr *h;
    const uint8_t *body;
    fuzz_check(beat_decode(frame, len, &cluster, &h, &body) == 0,
               "a flushed frame decodes");
    flushed += h->count;
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 + BEAT_FRAME_MAX + 64)
        return 0;
    uint8_t flags = data[0];
    size_t len = size - 1;
    uint8_t *f = malloc(len ? len : 1);
    if (f == NULL)
        return 0;
    memcpy(f, data + 1, len);
    if ((flags & 1) && len >= VS_HEADER_SIZE) {
        struct beat_hdr *h = (struct beat_hdr *)f;
        h->f.size = (uint32_t)len;
        size_t blen = len - VS_HEADER_SIZE;
        h->f.checksum_body = blen ? vs_body_checksum(f + VS_HEADER_SIZE, blen)
                                  : (struct vs_u128){0, 0};
        vs_frame_seal((struct vs_header *)h);
    }
    const struct beat_hdr *h;
    const uint8_t *body;
    int rc = beat_decode(f, len, &cluster, &h, &body);
    fuzz_check(rc <= 0 && strcmp(beat_error_name(rc), "unknown") != 0,
               "a known verdict");
    if (rc == 0) {
        uint32_t n = h->count;
        struct beat_entry *e = calloc(n ? n : 1, sizeof(*e));
        uint8_t *again = malloc(len);
        fuzz_check(e != NULL && again != NULL, "memory");
        for (uint32_t i = 0; i < n; i++)
            beat_entry_at(body, i, &e[i]);
        struct beat_sender s = {.cluster = h->f.cluster,
                                .release = h->f.release,
                                .replica = h->f.replica,
                                .shard = h->shard};
        long w = beat_encode(&s, h->seq, e, n, again, len);
        fuzz_check(w == (long)len && memcmp(again, f, len) == 0,
                   "an accepted frame re-encodes to its bytes");
        struct coal *c;
        fuzz_check(coal_create(1, n ? n : 1, &c) == 0, "table");
        for (uint32_t i = 0; i < n; i++)
            fuzz_check(coal_post(c, 0, &e[i]) == 0, "post fits");
        uint64_t seq = 0;
        flushed = 0;
        s.cluster = cluster;
        int fr = coal_flush(c, 0, &s, &seq, 0, check_emit, NULL);
        fuzz_check(fr >= 0 && flushed == n, "flush carries every entry");
        coal_destroy(c);
        free(again);
        free(e);
    }
    free(f);
    return 0;
}
