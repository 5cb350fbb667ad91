/*
 * shard/data/unwritten.c - the never-written shape of damage left by a
 * power loss (unwritten.h).
 *
 * Invariants: reads only its arguments. Any process.
 */
#include "config.h"

#include "common/buf.h"
#include "shard/data/batch.h"
#include "shard/data/unwritten.h"

/* batches followed through a damaged stretch at most (each is a write
 * of its own: cut, lost or with a sector missing) */
#define UNWRITTEN_DEPTH 64u
/* how far back into a lost write's zeros the next write's header may
 * start (its first fields, small integers, have zero bytes) */
#define UNWRITTEN_RESYNC 64u

/* 1 if the batch starting at b[0] is intact outside the zero run
 * [zs, ze) of b[0, len) and the run damaged it: when the run starts past
 * its header, the header is structurally valid and declares no more than
 * len bytes, the run starts inside the batch, every frame walked from the
 * header that lies wholly outside the run verifies its checksum, and one
 * touching the run does not. The walk ends at the batch's end (the batch
 * checksum over the header and the stored frame checksums must then
 * verify too: a cut leaves the frame headers before it as written) or at
 * a frame whose header touches the run (those after it cannot be
 * located). */
static int
intact_outside(const uint8_t *b, size_t len, size_t zs, size_t ze)
{
    if (zs < BATCH_HEADER_SIZE)
        return 1; /* nothing of the batch to check before the run */
    if (batch_header_check(b) != BATCH_OK || batch_length(b) > len)
        return 0;
    size_t blen = (size_t)batch_length(b);
    if (zs >= blen)
        return 0; /* the batch's own damage is not the run's */
    int hit = 0;  /* a frame touching the run fails */
    uint32_t frames = 0;
    for (size_t p = BATCH_HEADER_SIZE; p < blen; frames++) {
        if (blen - p < BATCH_FRAME_SIZE)
            return 0;
        if (p + BATCH_FRAME_SIZE > zs && p < ze)
            return 1; /* the frame header is in the run */
        const uint8_t *f = b + p;
        uint64_t flen = (uint64_t)BATCH_FRAME_SIZE +
                        vs_load_u32(f + BATCH_FOFF_PAYLOAD_LEN) +
                        vs_load_u32(f + BATCH_FOFF_HEADERS_LEN);
        if (flen > blen - p)
            return 0;
        size_t end = p + (size_t)flen;
        int ok = batch_frame_checksum(f, (size_t)flen) ==
                 vs_load_u64(f + BATCH_FOFF_CHECKSUM);
        if (end <= zs || p >= ze) {
            if (!ok)
                return 0; /* damage outside the run: written bytes */
        } else if (!ok) {
            hit = 1;
        }
        p = end;
    }
    return hit && frames == batch_count(b) &&
           batch_compute_checksum(b) == batch_checksum_field(b);
}

/* unwritten_shape, at most `depth` batches deep. */
static int
shape(const uint8_t *b, size_t len, uint64_t at, unsigned depth)
{
    if (len == 0)
        return 1;
    if (depth == 0)
        return 0;
    /* the first batch's declared end, when its header is structurally
     * valid and within the bytes */
    size_t blen = 0;
    if (len >= BATCH_HEADER_SIZE && batch_header_check(b) == BATCH_OK &&
        batch_length(b) <= len)
        blen = (size_t)batch_length(b);
    if (blen == 0 && b[0] == 0) {
        /* the first write lost: the next one starts where its zeros end
         * (or a little before, its header's first bytes being zero) */
        size_t e0 = 1;
        while (e0 < len && b[e0] == 0)
            e0++;
        if (e0 == len)
            return 1;
        for (size_t x = e0 > UNWRITTEN_RESYNC ? e0 - UNWRITTEN_RESYNC : 1;
             x <= e0; x++)
            if (len - x >= BATCH_HEADER_SIZE &&
                batch_header_check(b + x) == BATCH_OK)
                return shape(b + x, len - x, at + x, depth - 1);
        /* no header after them: a sector that did not land ends inside
         * them (its older content, zeros, hid the header, whose fields
         * after it are zero too; the write's bytes after it cannot be
         * located), or a header cut short whose first fields are zero,
         * or a longer lost stretch (below) */
        if ((at + e0) / UNWRITTEN_SECTOR > at / UNWRITTEN_SECTOR)
            return 1;
    }
    int rest = -1; /* the shape of the bytes after the first batch */
    for (size_t s = 0; s < len;) {
        if (b[s] != 0) {
            s++;
            continue;
        }
        size_t e = s;
        while (e < len && b[e] == 0)
            e++;
        /* a never-written run: it ends the bytes (a write cut short, the
         * ones after it lost), it is a sector that did not land, or it
         * covers the end of the first batch (that write cut short, later
         * ones landed; the next header's first bytes may be zero too) */
        int to_end = e == len, sector = e - s >= UNWRITTEN_SECTOR;
        int batch_end = blen != 0 && s < blen && e >= blen;
        if ((to_end || sector || batch_end) && intact_outside(b, len, s, e)) {
            /* what follows the first batch is its own write, unless a
             * sector that did not land reaches into it (its header is
             * then gone: the rest cannot be located) */
            if (to_end || blen == 0 || blen == len || (sector && e > blen))
                return 1;
            if (rest < 0)
                rest = shape(b + blen, len - blen, at + blen, depth - 1);
            if (rest)
                return 1;
        }
        s = e;
    }
    return 0;
}

int
unwritten_shape(const uint8_t *b, size_t len, uint64_t at)
{
    return shape(b, len, at, UNWRITTEN_DEPTH);
}

int
unwritten_zero_from(const uint8_t *b, size_t len, size_t from)
{
    for (size_t i = from; i < len; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}
