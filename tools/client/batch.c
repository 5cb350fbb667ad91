/*
 * tools/client/batch.c - pure encoders and decoders of the data plane:
 * message batches, user headers, partitioning, SendMessages and
 * PollMessages bodies, send confirmations, poll replies and group
 * records (iggy-client-protocol.md §5.6-5.7, -2.md §5-§7).
 *
 * Invariants: every decoder reads untrusted bytes through struct vs_rbuf
 * (or explicit bounds checks) and never past `len`; a malformed input
 * gives -EPROTO (or -EBADMSG for a checksum) and leaves no heap memory
 * in the caller's struct. No I/O here except getrandom() for ids.
 * Callers: any process (the library, the CLI, the bench, tests).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/mem.h"
#include "tools/client/vsc.h"
#include "tools/client/vsc_int.h"

/* ---- ids and user headers ---- */

struct vs_u128
vsc_uuid4(void)
{
    struct vs_u128 id = {0, 0};
    ssize_t n = getrandom(&id, sizeof id, 0);
    if (n != (ssize_t)sizeof id) {
        /* getrandom of 16 bytes does not fail once the pool is up; do
         * not abort a send for it. */
        id.lo = vs_monotonic_ns() * UINT64_C(0x9e3779b97f4a7c15);
        id.hi = vs_realtime_us() ^ ((uint64_t)getpid() << 40);
    }
    /* version 4: bits 76..79 = 0100; variant: bits 62..63 = 10 */
    id.hi = (id.hi & ~(UINT64_C(0xf) << 12)) | (UINT64_C(4) << 12);
    id.lo = (id.lo & ~(UINT64_C(3) << 62)) | (UINT64_C(2) << 62);
    return id;
}

void
vsc_uhdr_add(struct vs_wbuf *w, const char *key, uint8_t kind, const void *val,
             uint32_t len)
{
    size_t kl = strlen(key);
    vs_wr_u8(w, 2);
    vs_wr_u32(w, (uint32_t)kl);
    vs_wr_bytes(w, key, kl);
    vs_wr_u8(w, kind);
    vs_wr_u32(w, len);
    if (len > 0)
        vs_wr_bytes(w, val, len);
}

void
vsc_uhdr_str(struct vs_wbuf *w, const char *key, const char *val)
{
    vsc_uhdr_add(w, key, 2, val, (uint32_t)strlen(val));
}

int
vsc_uhdr_next(const uint8_t *blk, size_t len, size_t *off, struct vsc_tlv *kv)
{
    return vsc_tlv_next(blk, len, off, kv);
}

/* ---- batches ---- */

uint64_t
vsc_frame_checksum(const uint8_t *frame, size_t frame_len)
{
    return vs_xxh3_64(frame + 8, frame_len - 8);
}

/* Walks the frames of a record of `len` bytes: the number of frames, or
 * -1 if one runs past the end or a reserved field is not zero. If
 * `sums` is set, every frame checksum is fed to it; `bad` counts frames
 * whose stored checksum does not match. */
static long
vsc_walk_frames(const uint8_t *b, size_t len, struct vs_xxh3_stream *sums,
                size_t *bad)
{
    size_t off = VSC_BATCH_HEADER;
    long n = 0;
    while (off < len) {
        uint64_t fl, sum;
        if (len - off < VSC_FRAME_HEADER)
            return -1;
        fl = (uint64_t)VSC_FRAME_HEADER + vs_load_u32(b + off + 36) +
             vs_load_u32(b + off + 32);
        if (fl > len - off || vs_load_u64(b + off + 40) != 0)
            return -1;
        sum = vs_load_u64(b + off);
        if (sums != NULL) {
            uint8_t le[8];
            vs_store_u64(le, sum);
            vs_xxh3_stream_update(sums, le, 8);
        }
        if (bad != NULL && vsc_frame_checksum(b + off, (size_t)fl) != sum)
            (*bad)++;
        off += (size_t)fl;
        n++;
    }
    return n;
}

uint64_t
vsc_batch_checksum(const uint8_t *batch)
{
    struct vs_xxh3_stream s;
    uint64_t len = vs_load_u64(batch + 32);
    vs_xxh3_stream_init(&s);
    vs_xxh3_stream_update(&s, batch, 40);     /* 5 u64 fields */
    vs_xxh3_stream_update(&s, batch + 48, 4); /* message_count */
    (void)vsc_walk_frames(batch, (size_t)len, &s, NULL);
    return vs_xxh3_stream_digest(&s);
}

int
vsc_batch_verify(const uint8_t *batch, size_t len)
{
    size_t bad = 0, i;
    long n;
    if (len < VSC_BATCH_HEADER || vs_load_u64(batch + 32) != len)
        return -EPROTO;
    for (i = 52; i < VSC_BATCH_HEADER; i++)
        if (batch[i] != 0)
            return -EPROTO;
    n = vsc_walk_frames(batch, len, NULL, &bad);
    if (n < 0 || (uint64_t)n != vs_load_u32(batch + 48))
        return -EPROTO;
    if (bad != 0 || vsc_batch_checksum(batch) != vs_load_u64(batch + 40))
        return -EBADMSG;
    return 0;
}

size_t
vsc_batch_build(struct vs_wbuf *w, struct vsc_msg *msgs, uint32_t n,
                uint64_t now_us)
{
    uint64_t origin = UINT64_MAX, total = VSC_BATCH_HEADER;
    size_t off;
    uint8_t *b;
    uint32_t i;
    if (n == 0)
        return 0;
    for (i = 0; i < n; i++) {
        uint64_t ts =
            msgs[i].origin_timestamp ? msgs[i].origin_timestamp : now_us;
        if (ts < origin)
            origin = ts;
        total += (uint64_t)VSC_FRAME_HEADER + msgs[i].payload_len +
                 msgs[i].headers_len;
    }
    if (total > UINT32_MAX)
        return 0;
    b = vs_wbuf_reserve(w, (size_t)total);
    w->len += (size_t)total;
    memset(b, 0, VSC_BATCH_HEADER);
    vs_store_u64(b + 24, origin);
    vs_store_u64(b + 32, total);
    vs_store_u32(b + 48, n);
    off = VSC_BATCH_HEADER;
    for (i = 0; i < n; i++) {
        struct vsc_msg *m = &msgs[i];
        uint8_t *f = b + off;
        uint64_t ts = m->origin_timestamp ? m->origin_timestamp : now_us;
        size_t fl = VSC_FRAME_HEADER + m->payload_len + m->headers_len;
        if (vs_u128_is_zero(m->id))
            m->id = vsc_uuid4();
        vs_store_u64(f + 8, m->id.lo);
        vs_store_u64(f + 16, m->id.hi);
        vs_store_u32(f + 24, i);
        vs_store_u32(f + 28, (uint32_t)(ts - origin));
        vs_store_u32(f + 32, m->headers_len);
        vs_store_u32(f + 36, m->payload_len);
        vs_store_u64(f + 40, 0);
        if (m->payload_len > 0)
            memcpy(f + VSC_FRAME_HEADER, m->payload, m->payload_len);
        if (m->headers_len > 0)
            memcpy(f + VSC_FRAME_HEADER + m->payload_len, m->headers,
                   m->headers_len);
        vs_store_u64(f, vsc_frame_checksum(f, fl));
        off += fl;
    }
    vs_store_u64(b + 40, vsc_batch_checksum(b));
    return (size_t)total;
}

/* ---- partitioning and send ---- */

struct vsc_partitioning
vsc_part_balanced(void)
{
    struct vsc_partitioning p;
    memset(&p, 0, sizeof p);
    p.kind = VSC_PART_BALANCED;
    return p;
}

struct vsc_partitioning
vsc_part_id(uint32_t id)
{
    struct vsc_partitioning p;
    memset(&p, 0, sizeof p);
    p.kind = VSC_PART_ID;
    p.partition_id = id;
    return p;
}

struct vsc_partitioning
vsc_part_key(const void *key, size_t len)
{
    struct vsc_partitioning p;
    memset(&p, 0, sizeof p);
    p.kind = VSC_PART_KEY;
    if (len > sizeof p.key)
        len = sizeof p.key;
    p.key_len = (uint8_t)len;
    memcpy(p.key, key, len);
    return p;
}

uint32_t
vsc_key_partition(const void *key, size_t len, uint32_t partitions_count)
{
    if (partitions_count == 0)
        return UINT32_MAX;
    return vs_xxh32(key, len) % partitions_count;
}

void
vsc_body_send(struct vs_wbuf *w, const struct vsc_id *stream,
              const struct vsc_id *topic, const struct vsc_partitioning *p,
              uint32_t count, const uint8_t *batch, size_t batch_len)
{
    size_t at = w->len, meta;
    vs_wr_u32(w, 0); /* metadata_len, patched below */
    vsc_wr_id(w, stream);
    vsc_wr_id(w, topic);
    vs_wr_u8(w, p->kind);
    switch (p->kind) {
    case VSC_PART_ID:
        vs_wr_u8(w, 4);
        vs_wr_u32(w, p->partition_id);
        break;
    case VSC_PART_KEY:
        vs_wr_u8(w, p->key_len);
        vs_wr_bytes(w, p->key, p->key_len);
        break;
    default:
        vs_wr_u8(w, 0);
        break;
    }
    vs_wr_u32(w, count);
    meta = w->len - at - 4;
    vs_store_u32(w->data + at, (uint32_t)meta);
    if (batch_len > 0)
        vs_wr_bytes(w, batch, batch_len);
}

int
vsc_decode_sent(const uint8_t *p, size_t len, struct vsc_sent *out)
{
    struct vs_rbuf r;
    uint32_t count;
    memset(out, 0, sizeof *out);
    if (len == 0)
        return 0;
    vs_rbuf_init(&r, p, len);
    count = vs_rd_u32(&r);
    if (r.err || vs_rbuf_left(&r) != (size_t)count * 20u)
        return -EPROTO;
    if (count > 0) {
        out->confirmed = 1;
        out->stream_id = vs_rd_u32(&r);
        out->topic_id = vs_rd_u32(&r);
        out->partition_id = vs_rd_u32(&r);
        out->base_offset = vs_rd_u64(&r);
    }
    return r.err ? -EPROTO : 0;
}

/* ---- poll ---- */

struct vsc_consumer
vsc_consumer_single(const struct vsc_id *id)
{
    struct vsc_consumer c;
    c.kind = VSC_CONSUMER;
    c.id = *id;
    return c;
}

struct vsc_consumer
vsc_consumer_group(const struct vsc_id *id)
{
    struct vsc_consumer c;
    c.kind = VSC_CONSUMER_GROUP;
    c.id = *id;
    return c;
}

void
vsc_body_poll(struct vs_wbuf *w, const struct vsc_id *stream,
              const struct vsc_id *topic, const struct vsc_poll_args *a)
{
    vs_wr_u8(w, a->consumer.kind);
    vsc_wr_id(w, &a->consumer.id);
    vsc_wr_id(w, stream);
    vsc_wr_id(w, topic);
    vs_wr_u8(w, a->has_partition ? 1 : 0);
    vs_wr_u32(w, a->has_partition ? a->partition_id : 0);
    vs_wr_u8(w, a->strategy);
    vs_wr_u64(w, a->value);
    vs_wr_u32(w, a->count);
    vs_wr_u8(w, a->auto_commit ? 1 : 0);
}

void
vsc_polled_fini(struct vsc_polled *p)
{
    if (p == NULL)
        return;
    free(p->msgs);
    free(p->buf);
    p->msgs = NULL;
    p->buf = NULL;
    p->n = 0;
}

/* One record of a poll reply (blen bytes at rec, blen checked against
 * the body) in a single walk of its frames: each frame's structure
 * checked, its message recorded in out (room *cap) and, if verify, its
 * checksum verified and its stored checksum fed to the batch checksum
 * (64 at a time). 0, -EPROTO (structure; it wins over a checksum in the
 * same record) or -EBADMSG (a frame checksum). */
static int
vsc_poll_record(const uint8_t *rec, size_t blen, int verify,
                struct vsc_polled *out, size_t *cap)
{
    uint64_t base_off = vs_load_u64(rec + 8), base_ts = vs_load_u64(rec + 16),
             origin = vs_load_u64(rec + 24);
    struct vs_xxh3_stream s;
    uint8_t sums[64 * 8];
    size_t ns = 0, fo = VSC_BATCH_HEADER;
    int bad = 0;
    if (verify) {
        vs_xxh3_stream_init(&s);
        vs_xxh3_stream_update(&s, rec, 40);     /* 5 u64 fields */
        vs_xxh3_stream_update(&s, rec + 48, 4); /* message_count */
    }
    while (fo < blen) {
        const uint8_t *f = rec + fo;
        struct vsc_message *m;
        uint32_t hl, pl;
        uint64_t fl;
        if (blen - fo < VSC_FRAME_HEADER)
            return -EPROTO;
        hl = vs_load_u32(f + 32);
        pl = vs_load_u32(f + 36);
        fl = (uint64_t)VSC_FRAME_HEADER + pl + hl;
        if (fl > blen - fo || vs_load_u64(f + 40) != 0)
            return -EPROTO;
        if (out->n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            out->msgs = vs_xrealloc(out->msgs, *cap * sizeof *out->msgs);
        }
        m = &out->msgs[out->n++];
        m->checksum = vs_load_u64(f);
        if (verify) {
            /* after a mismatch only the structure is still checked */
            if (!bad && vsc_frame_checksum(f, (size_t)fl) != m->checksum)
                bad = 1;
            vs_store_u64(sums + 8 * ns++, m->checksum);
            if (ns == 64) {
                vs_xxh3_stream_update(&s, sums, sizeof sums);
                ns = 0;
            }
        }
        m->id.lo = vs_load_u64(f + 8);
        m->id.hi = vs_load_u64(f + 16);
        m->offset = base_off + vs_load_u32(f + 24);
        m->timestamp = base_ts;
        m->origin_timestamp = origin + vs_load_u32(f + 28);
        m->payload_len = pl;
        m->payload = f + VSC_FRAME_HEADER;
        m->headers_len = hl;
        m->headers = f + VSC_FRAME_HEADER + pl;
        fo += (size_t)fl;
    }
    if (bad)
        return -EBADMSG;
    if (!verify)
        return 0;
    vs_xxh3_stream_update(&s, sums, 8 * ns);
    if (vs_xxh3_stream_digest(&s) != vs_load_u64(rec + 40))
        out->batch_checksums_ok = 0;
    return 0;
}

/* Decodes the poll reply body at p (len bytes, inside out->buf, which
 * the caller has set): the walk of vsc_poll_decode, the checksums
 * verified only if verify. */
static int
vsc_poll_walk(const uint8_t *p, size_t len, int verify, struct vsc_polled *out)
{
    size_t off = 16, cap;
    int rc = -EPROTO;
    if (len < 16)
        goto fail;
    out->partition_id = vs_load_u32(p);
    out->current_offset = vs_load_u64(p + 4);
    out->count = vs_load_u32(p + 12);
    out->checksums_verified = verify ? 1 : 0;
    out->batch_checksums_ok = verify ? 1 : 0;
    /* room for the count the reply announces (a hint: never more than
     * the body can hold, grown if it lies low) */
    cap = out->count < (len - 16) / VSC_FRAME_HEADER
              ? out->count
              : (len - 16) / VSC_FRAME_HEADER;
    if (cap > 0)
        out->msgs = vs_xmalloc(cap * sizeof *out->msgs);
    while (off < len) {
        const uint8_t *rec = p + off;
        uint64_t blen;
        if (len - off < VSC_BATCH_HEADER)
            goto fail;
        blen = vs_load_u64(rec + 32);
        if (blen < VSC_BATCH_HEADER || blen > len - off)
            goto fail;
        rc = vsc_poll_record(rec, (size_t)blen, verify, out, &cap);
        if (rc != 0)
            goto fail;
        rc = -EPROTO;
        out->records++;
        off += (size_t)blen;
    }
    return 0;
fail:
    vsc_polled_fini(out);
    return rc;
}

int
vsc_poll_decode(const uint8_t *p, size_t len, struct vsc_polled *out)
{
    memset(out, 0, sizeof *out);
    if (len < 16)
        return -EPROTO;
    out->buf = vs_xmalloc(len);
    memcpy(out->buf, p, len);
    return vsc_poll_walk(out->buf, len, 1, out);
}

int
vsc_poll_decode_owned(uint8_t *buf, size_t off, size_t len, int verify,
                      struct vsc_polled *out)
{
    memset(out, 0, sizeof *out);
    out->buf = buf;
    return vsc_poll_walk(buf + off, len, verify, out);
}

/* ---- groups ---- */

void
vsc_group_fini(struct vsc_group *g)
{
    size_t i;
    if (g == NULL)
        return;
    for (i = 0; i < g->n_members; i++)
        free(g->members[i].partitions);
    free(g->members);
    g->members = NULL;
    g->n_members = 0;
}

int
vsc_decode_group_at(struct vs_rbuf *r, struct vsc_group *g, int details)
{
    uint8_t nl;
    const uint8_t *np;
    uint32_t i, j;
    memset(g, 0, sizeof *g);
    g->id = vs_rd_u32(r);
    g->partitions_count = vs_rd_u32(r);
    g->members_count = vs_rd_u32(r);
    nl = vs_rd_u8(r);
    np = vs_rd_bytes(r, nl);
    if (r->err || np == NULL)
        return -EPROTO;
    memcpy(g->name, np, nl);
    g->name[nl] = '\0';
    if (!details)
        return 0;
    /* A member entry is at least 8 bytes: bound the allocation. */
    if (g->members_count > vs_rbuf_left(r) / 8)
        return -EPROTO;
    g->members =
        vs_xcalloc(g->members_count ? g->members_count : 1, sizeof *g->members);
    for (i = 0; i < g->members_count; i++) {
        struct vsc_group_member *m = &g->members[i];
        g->n_members = i + 1;
        m->id = vs_rd_u32(r);
        m->n_partitions = vs_rd_u32(r);
        if (r->err || m->n_partitions > vs_rbuf_left(r) / 4)
            goto fail;
        m->partitions = vs_xcalloc(m->n_partitions ? m->n_partitions : 1,
                                   sizeof *m->partitions);
        for (j = 0; j < m->n_partitions; j++)
            m->partitions[j] = vs_rd_u32(r);
    }
    if (r->err)
        goto fail;
    return 0;
fail:
    vsc_group_fini(g);
    return -EPROTO;
}

int
vsc_decode_group(const uint8_t *p, size_t len, struct vsc_group *g, int details)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, p, len);
    return vsc_decode_group_at(&r, g, details);
}
