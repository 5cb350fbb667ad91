/*
 * tests/unit/check_client_messages.c - the client library's data-plane
 * codecs against the reference (iggy-client-protocol.md §5.6-5.7, -2.md
 * §5-§6) and against the server's own batch validator (shard/data/batch.h).
 *
 * Golden: the example SendMessages metadata (metadata_len 51) and Poll
 * request encode byte for byte; 10 x 42-byte messages give batch_length
 * 0x484 and the frame-0 header bytes of the example; frame and batch
 * checksums are recomputed here from the recipe and verified by decoding
 * our own batch (and by batch_validate, the server's check). The
 * example's frame-0 checksum is not pinned: the reference does not give
 * the payload it covers.
 * Decoders: poll replies (offset = base_offset + offset_delta, timestamps,
 * ids, payloads, user headers), send confirmations, group records; every
 * malformed input gives a typed error and no out-of-bounds read (ASan leg).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "shard/data/batch.h"
#include "tools/client/vsc.h"
#include "tools/client/vsc_int.h"

static const char STREAM26[] = "smoke-stream-0123456789abc"; /* 26 bytes */

static size_t
hex_to_bytes(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*hex) {
        unsigned v;
        if (*hex == ' ' || *hex == '|') {
            hex++;
            continue;
        }
        ck_assert(sscanf(hex, "%2x", &v) == 1);
        ck_assert_uint_lt(n, cap);
        out[n++] = (uint8_t)v;
        hex += 2;
    }
    return n;
}

START_TEST(test_send_metadata_golden)
{
    struct vs_wbuf w, want;
    struct vsc_id s = vsc_id_name(STREAM26), t = vsc_id_name("smoke-topic");
    struct vsc_partitioning p = vsc_part_id(0);
    uint8_t tail[64];
    size_t n;
    vs_wbuf_init(&w);
    vs_wbuf_init(&want);
    vsc_body_send(&w, &s, &t, &p, 10, NULL, 0);
    /* 33000000 | 02 1a <stream> | 02 0b smoke-topic | 02 04 00000000 |
     * 0a000000 */
    vs_wr_bytes(&want, "\x33\0\0\0\x02\x1a", 6);
    vs_wr_bytes(&want, STREAM26, 26);
    n = hex_to_bytes("02 0b 736d6f6b652d746f706963 02 04 00000000 0a000000",
                     tail, sizeof tail);
    vs_wr_bytes(&want, tail, n);
    ck_assert_uint_eq(vs_load_u32(w.data), 51);
    ck_assert_uint_eq(w.len, 4 + 51);
    ck_assert_uint_eq(want.len, w.len);
    ck_assert_mem_eq(w.data, want.data, w.len);

    /* Balanced: len 0; MessagesKey: raw bytes. */
    vs_wbuf_reset(&w);
    p = vsc_part_balanced();
    vsc_body_send(&w, &s, &t, &p, 1, (const uint8_t *)"B", 1);
    ck_assert_uint_eq(vs_load_u32(w.data), 28 + 13 + 2 + 4);
    ck_assert_mem_eq(w.data + 4 + 41, "\x01\x00\x01\0\0\0B", 7);
    vs_wbuf_reset(&w);
    p = vsc_part_key("abc", 3);
    vsc_body_send(&w, &s, &t, &p, 2, NULL, 0);
    ck_assert_uint_eq(vs_load_u32(w.data), 28 + 13 + 5 + 4);
    ck_assert_mem_eq(w.data + 4 + 41,
                     "\x03\x03"
                     "abc\x02\0\0\0",
                     9);
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&want);
}
END_TEST

START_TEST(test_poll_request_golden)
{
    struct vs_wbuf w, want;
    struct vsc_id s = vsc_id_name(STREAM26), t = vsc_id_name("smoke-topic");
    struct vsc_id zero = vsc_id_num(0);
    struct vsc_poll_args a;
    uint8_t b[64];
    size_t n;
    memset(&a, 0, sizeof a);
    a.consumer = vsc_consumer_single(&zero);
    a.has_partition = 1;
    a.partition_id = 0;
    a.strategy = VSC_POLL_OFFSET;
    a.value = 0;
    a.count = 10;
    vs_wbuf_init(&w);
    vs_wbuf_init(&want);
    vsc_body_poll(&w, &s, &t, &a);
    n = hex_to_bytes("01 01 04 00000000 02 1a", b, sizeof b);
    vs_wr_bytes(&want, b, n);
    vs_wr_bytes(&want, STREAM26, 26);
    n = hex_to_bytes("02 0b 736d6f6b652d746f706963 | 01 00000000 | 01 "
                     "0000000000000000 | 0a000000 | 00",
                     b, sizeof b);
    vs_wr_bytes(&want, b, n);
    ck_assert_uint_eq(w.len, want.len);
    ck_assert_mem_eq(w.data, want.data, w.len);

    /* Group, no partition, next, auto-commit. */
    vs_wbuf_reset(&w);
    a.consumer = vsc_consumer_group(&t);
    a.has_partition = 0;
    a.partition_id = 7; /* ignored without has_partition */
    a.strategy = VSC_POLL_NEXT;
    a.auto_commit = 1;
    vsc_body_poll(&w, &s, &t, &a);
    ck_assert_uint_eq(w.data[0], 2);
    ck_assert_uint_eq(w.len, 1 + 13 + 28 + 13 + 5 + 9 + 4 + 1);
    ck_assert_mem_eq(w.data + 1 + 13 + 28 + 13, "\0\0\0\0\0\x05", 6);
    ck_assert_uint_eq(w.data[w.len - 1], 1);
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&want);
}
END_TEST

static void
mk_msgs(struct vsc_msg *m, uint8_t (*pl)[42], int n)
{
    for (int i = 0; i < n; i++) {
        memset(&m[i], 0, sizeof m[i]);
        memset(pl[i], 'a' + i, 42);
        m[i].id.lo = (uint64_t)i + 1;
        m[i].origin_timestamp = 1700000000000000ull;
        m[i].payload = pl[i];
        m[i].payload_len = 42;
    }
}

START_TEST(test_batch_reference_example)
{
    struct vsc_msg m[10];
    uint8_t pl[10][42];
    struct vs_wbuf w;
    uint8_t want0[40], rec[44 + 80];
    size_t len;
    mk_msgs(m, pl, 10);
    vs_wbuf_init(&w);
    len = vsc_batch_build(&w, m, 10, 5);
    ck_assert_uint_eq(len, 0x484);
    ck_assert_uint_eq(w.len, 1156);
    ck_assert_uint_eq(vs_load_u64(w.data + 32), 0x484);
    ck_assert_uint_eq(vs_load_u32(w.data + 48), 10);
    /* client fields zero, origin = min origin timestamp */
    ck_assert_uint_eq(vs_load_u64(w.data + 0), 0);
    ck_assert_uint_eq(vs_load_u64(w.data + 8), 0);
    ck_assert_uint_eq(vs_load_u64(w.data + 16), 0);
    ck_assert_uint_eq(vs_load_u64(w.data + 24), 1700000000000000ull);
    for (size_t i = 52; i < 256; i++)
        ck_assert_uint_eq(w.data[i], 0);
    /* frame 0 after its checksum: 01000000..00 00000000 00000000 00000000
     * 2a000000 0000000000000000 */
    hex_to_bytes("01000000000000000000000000000000 00000000 00000000 "
                 "00000000 2a000000 0000000000000000",
                 want0, sizeof want0);
    ck_assert_mem_eq(w.data + 256 + 8, want0, 40);
    /* frame checksums: XXH3-64 over frame[8..end) */
    for (int i = 0; i < 10; i++) {
        const uint8_t *f = w.data + 256 + (size_t)i * 90;
        ck_assert_uint_eq(vs_load_u64(f), vs_xxh3_64(f + 8, 90 - 8));
        ck_assert_uint_eq(vs_load_u32(f + 24), (uint32_t)i);
    }
    /* batch checksum recipe: 44 header bytes then frame checksums */
    memcpy(rec, w.data, 40);
    memcpy(rec + 40, w.data + 48, 4);
    for (int i = 0; i < 10; i++)
        memcpy(rec + 44 + 8 * i, w.data + 256 + (size_t)i * 90, 8);
    ck_assert_uint_eq(vs_load_u64(w.data + 40), vs_xxh3_64(rec, sizeof rec));
    ck_assert_uint_eq(vsc_batch_checksum(w.data), vs_load_u64(w.data + 40));
    ck_assert_int_eq(vsc_batch_verify(w.data, w.len), 0);
    /* the server's validator accepts it as a client batch */
    ck_assert_int_eq(batch_validate(w.data, w.len, NULL, 1, NULL), BATCH_OK);
    vs_wbuf_fini(&w);
}
END_TEST

START_TEST(test_batch_bit_flips_detected)
{
    struct vsc_msg m[3];
    uint8_t pl[3][42];
    struct vs_wbuf w;
    mk_msgs(m, pl, 3);
    m[1].payload_len = 0;
    m[2].headers = "\x02\x01\0\0\0k\x02\x01\0\0\0v";
    m[2].headers_len = 12;
    vs_wbuf_init(&w);
    ck_assert_uint_gt(vsc_batch_build(&w, m, 3, 1), 0);
    ck_assert_int_eq(vsc_batch_verify(w.data, w.len), 0);
    for (size_t i = 0; i < w.len; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            w.data[i] ^= (uint8_t)(1u << bit);
            int rc = vsc_batch_verify(w.data, w.len);
            ck_assert_msg(rc == -EPROTO || rc == -EBADMSG,
                          "flip at byte %zu bit %d: %d", i, bit, rc);
            w.data[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* truncated */
    for (size_t l = 0; l < w.len; l += 7)
        ck_assert_int_ne(vsc_batch_verify(w.data, l), 0);
    vs_wbuf_fini(&w);
}
END_TEST

START_TEST(test_random_ids_and_timestamps)
{
    struct vsc_msg m[4];
    struct vs_wbuf w;
    memset(m, 0, sizeof m);
    m[0].payload = "x";
    m[0].payload_len = 1;
    m[2].origin_timestamp = 900; /* earlier than "now" */
    m[3].id.lo = 77;
    vs_wbuf_init(&w);
    ck_assert_uint_eq(vsc_batch_build(&w, m, 4, 1000), 256 + 4 * 48 + 1);
    for (int i = 0; i < 3; i++) {
        struct vs_u128 id = m[i].id;
        ck_assert(!vs_u128_is_zero(id));
        ck_assert_uint_eq((id.hi >> 12) & 0xf, 4); /* version 4 */
        ck_assert_uint_eq(id.lo >> 62, 2);         /* variant 10 */
        for (int j = 0; j < i; j++)
            ck_assert(!vs_u128_eq(m[j].id, id));
    }
    ck_assert_uint_eq(m[3].id.lo, 77);
    ck_assert_uint_eq(m[3].id.hi, 0);
    /* origin = min(900, now = 1000); deltas relative to it */
    ck_assert_uint_eq(vs_load_u64(w.data + 24), 900);
    ck_assert_uint_eq(vs_load_u32(w.data + 256 + 28), 100);
    ck_assert_uint_eq(vs_load_u32(w.data + 256 + 49 + 48 + 28), 0);
    ck_assert_int_eq(vsc_batch_verify(w.data, w.len), 0);
    ck_assert_uint_eq(vsc_batch_build(&w, m, 0, 1), 0);
    vs_wbuf_fini(&w);
}
END_TEST

START_TEST(test_key_partition_vectors)
{
    ck_assert_uint_eq(vs_xxh32("", 0), 0x02CC5D05u);
    ck_assert_uint_eq(vs_xxh32("abc", 3), 0x32D153FFu);
    ck_assert_uint_eq(vs_xxh32("\0\0\0\0", 4), 0x08D6D969u);
    ck_assert_uint_eq(vsc_key_partition("abc", 3, 7), 0x32D153FFu % 7);
    ck_assert_uint_eq(vsc_key_partition("abc", 3, 0), UINT32_MAX);
    for (uint32_t pc = 1; pc < 40; pc++)
        ck_assert_uint_eq(vsc_key_partition("user-17", 7, pc),
                          batch_partition_by_key("user-17", 7, pc));
}
END_TEST

/* A stamped poll reply: [partition u32][current u64][count u32] + the
 * records given. */
static void
mk_reply(struct vs_wbuf *out, uint32_t part, uint64_t current, uint32_t count,
         const uint8_t *recs, size_t len)
{
    vs_wr_u32(out, part);
    vs_wr_u64(out, current);
    vs_wr_u32(out, count);
    vs_wr_bytes(out, recs, len);
}

/* A poll reply of 5 messages m (payloads pl, headers hb on m[3]) in two
 * batches, stamped as the server does (partition 4, base offsets 100 and
 * 103), into rep; the first batch's length. w holds the batches. */
static size_t
mk_two_batch_reply(struct vsc_msg m[5], uint8_t pl[5][42], struct vs_wbuf *hb,
                   struct vs_wbuf *w, struct vs_wbuf *rep)
{
    size_t l1, l2;
    mk_msgs(m, pl, 5);
    vs_wbuf_init(hb);
    vsc_uhdr_str(hb, "trace", "abc");
    vsc_uhdr_add(hb, "n", 12, "\x01\0\0\0\0\0\0\0", 8);
    m[3].headers = hb->data;
    m[3].headers_len = (uint32_t)hb->len;
    m[4].payload_len = 0;
    m[1].origin_timestamp += 25;
    vs_wbuf_init(w);
    l1 = vsc_batch_build(w, m, 3, 1);
    l2 = vsc_batch_build(w, m + 3, 2, 1);
    batch_stamp(w->data, 4, 100, 5000);
    batch_stamp(w->data + l1, 4, 103, 6000);
    vs_wbuf_init(rep);
    mk_reply(rep, 4, 104, 5, w->data, l1 + l2);
    return l1;
}

START_TEST(test_poll_decode_roundtrip)
{
    struct vsc_msg m[5];
    uint8_t pl[5][42];
    struct vs_wbuf hb, w, rep;
    struct vsc_polled p;
    size_t l1 = mk_two_batch_reply(m, pl, &hb, &w, &rep);
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &p), 0);
    ck_assert_uint_eq(p.partition_id, 4);
    ck_assert_uint_eq(p.current_offset, 104);
    ck_assert_uint_eq(p.count, 5);
    ck_assert_uint_eq(p.n, 5);
    ck_assert_uint_eq(p.records, 2);
    ck_assert_int_eq(p.batch_checksums_ok, 1);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_uint_eq(p.msgs[i].offset, 100 + i);
        ck_assert_uint_eq(p.msgs[i].timestamp, i < 3 ? 5000 : 6000);
        ck_assert(vs_u128_eq(p.msgs[i].id, m[i].id));
        ck_assert_uint_eq(p.msgs[i].payload_len, m[i].payload_len);
        ck_assert_mem_eq(p.msgs[i].payload, m[i].payload, m[i].payload_len);
        ck_assert_uint_eq(p.msgs[i].origin_timestamp, m[i].origin_timestamp);
    }
    ck_assert_uint_eq(p.msgs[3].headers_len, hb.len);
    {
        size_t off = 0;
        struct vsc_tlv kv;
        ck_assert_int_eq(
            vsc_uhdr_next(p.msgs[3].headers, p.msgs[3].headers_len, &off, &kv),
            1);
        ck_assert_uint_eq(kv.key_len, 5);
        ck_assert_mem_eq(kv.key, "trace", 5);
        ck_assert_uint_eq(kv.kind, 2);
        ck_assert_mem_eq(kv.val, "abc", 3);
        ck_assert_int_eq(
            vsc_uhdr_next(p.msgs[3].headers, p.msgs[3].headers_len, &off, &kv),
            1);
        ck_assert_uint_eq(kv.kind, 12);
        ck_assert_uint_eq(vs_load_u64(kv.val), 1);
        ck_assert_int_eq(
            vsc_uhdr_next(p.msgs[3].headers, p.msgs[3].headers_len, &off, &kv),
            0);
    }
    vsc_polled_fini(&p);

    /* a frame checksum broken -> -EBADMSG; batch checksum -> flag only */
    rep.data[16 + 256 + 60] ^= 1;
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &p), -EBADMSG);
    ck_assert_ptr_null(p.msgs);
    rep.data[16 + 256 + 60] ^= 1;
    rep.data[16 + 40] ^= 1;
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &p), 0);
    ck_assert_int_eq(p.batch_checksums_ok, 0);
    vsc_polled_fini(&p);
    rep.data[16 + 40] ^= 1;

    /* structural damage -> -EPROTO, never a read past the end */
    for (size_t l = 0; l < rep.len; l++) {
        int rc = vsc_poll_decode(rep.data, l, &p);
        if (l == 16 || l == 16 + l1)
            ck_assert_int_eq(rc, 0);
        else
            ck_assert_int_eq(rc, -EPROTO);
        vsc_polled_fini(&p);
    }
    vs_store_u64(rep.data + 16 + 32, 255); /* batch_length < 256 */
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &p), -EPROTO);
    vs_store_u64(rep.data + 16 + 32, l1);
    rep.data[16 + 256 + 40] = 1; /* frame reserved */
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &p), -EPROTO);

    /* an empty poll: 16 bytes */
    vs_wbuf_reset(&rep);
    mk_reply(&rep, 0xFFFFFFFFu, 0, 0, NULL, 0);
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &p), 0);
    ck_assert_uint_eq(p.partition_id, 0xFFFFFFFFu);
    ck_assert_uint_eq(p.n, 0);
    vsc_polled_fini(&p);
    vs_wbuf_fini(&rep);
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&hb);
}
END_TEST

/* The in-place decode vsc_poll uses: the frame's heap buffer becomes
 * the result's (messages point into it, nothing copied), and a refused
 * reply frees it (ASan's leak check covers the refusals). */
static uint8_t *
frame_of(const struct vs_wbuf *rep, size_t off)
{
    uint8_t *f = malloc(off + rep->len);
    ck_assert_ptr_nonnull(f);
    memset(f, 0xAB, off);
    memcpy(f + off, rep->data, rep->len);
    return f;
}

START_TEST(test_poll_decode_owned)
{
    struct vsc_msg m[5];
    uint8_t pl[5][42];
    struct vs_wbuf hb, w, rep;
    struct vsc_polled p, q;
    size_t l1 = mk_two_batch_reply(m, pl, &hb, &w, &rep);
    uint8_t *f = frame_of(&rep, 256);
    ck_assert_int_eq(vsc_poll_decode_owned(f, 256, rep.len, 1, &p), 0);
    ck_assert_ptr_eq(p.buf, f);
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &q), 0);
    ck_assert_uint_eq(p.n, 5);
    ck_assert_uint_eq(p.n, q.n);
    ck_assert_uint_eq(p.records, 2);
    ck_assert_uint_eq(p.current_offset, q.current_offset);
    for (size_t i = 0; i < 5; i++) {
        /* in the frame, where the reply was received */
        ck_assert(p.msgs[i].payload >= f + 256 &&
                  p.msgs[i].payload + p.msgs[i].payload_len <=
                      f + 256 + rep.len);
        ck_assert_uint_eq(p.msgs[i].offset, q.msgs[i].offset);
        ck_assert_uint_eq(p.msgs[i].payload_len, m[i].payload_len);
        ck_assert_mem_eq(p.msgs[i].payload, m[i].payload, m[i].payload_len);
    }
    vsc_polled_fini(&p);
    vsc_polled_fini(&q);

    /* a frame checksum broken: -EBADMSG, the buffer freed */
    rep.data[16 + 256 + 60] ^= 1;
    f = frame_of(&rep, 256);
    ck_assert_int_eq(vsc_poll_decode_owned(f, 256, rep.len, 1, &p), -EBADMSG);
    ck_assert_ptr_null(p.buf);
    ck_assert_ptr_null(p.msgs);
    /* ... but a structural fault later in the same record wins */
    size_t f1 = 16 + 256 + 48 + m[0].payload_len + m[0].headers_len;
    rep.data[f1 + 40] = 1; /* frame 1's reserved */
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &p), -EPROTO);
    rep.data[f1 + 40] = 0;
    rep.data[16 + 256 + 60] ^= 1;
    /* cut inside the second batch, and shorter than the 16-byte head */
    f = frame_of(&rep, 256);
    ck_assert_int_eq(vsc_poll_decode_owned(f, 256, 16 + l1 + 100, 1, &p),
                     -EPROTO);
    ck_assert_ptr_null(p.buf);
    f = frame_of(&rep, 256);
    ck_assert_int_eq(vsc_poll_decode_owned(f, 256, 15, 1, &p), -EPROTO);
    ck_assert_ptr_null(p.buf);
    vs_wbuf_fini(&rep);
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&hb);
}
END_TEST

/* skip_checksums' decode: the same messages, no checksum computed (a
 * broken frame or batch checksum goes unnoticed and is reported as not
 * verified), but every structural fault is still refused. */
START_TEST(test_poll_decode_unverified)
{
    struct vsc_msg m[5];
    uint8_t pl[5][42];
    struct vs_wbuf hb, w, rep;
    struct vsc_polled p, q;
    size_t l1 = mk_two_batch_reply(m, pl, &hb, &w, &rep);
    ck_assert_int_eq(vsc_poll_decode(rep.data, rep.len, &q), 0);
    ck_assert_int_eq(q.checksums_verified, 1);
    ck_assert_int_eq(
        vsc_poll_decode_owned(frame_of(&rep, 64), 64, rep.len, 0, &p), 0);
    ck_assert_int_eq(p.checksums_verified, 0);
    ck_assert_int_eq(p.batch_checksums_ok, 0);
    ck_assert_uint_eq(p.n, q.n);
    ck_assert_uint_eq(p.records, 2);
    for (size_t i = 0; i < p.n; i++) {
        ck_assert_uint_eq(p.msgs[i].offset, q.msgs[i].offset);
        ck_assert_uint_eq(p.msgs[i].checksum, q.msgs[i].checksum);
        ck_assert_uint_eq(p.msgs[i].origin_timestamp,
                          q.msgs[i].origin_timestamp);
        ck_assert_uint_eq(p.msgs[i].headers_len, q.msgs[i].headers_len);
        ck_assert_mem_eq(p.msgs[i].payload, m[i].payload, m[i].payload_len);
    }
    vsc_polled_fini(&p);
    vsc_polled_fini(&q);

    /* a broken frame checksum and batch checksum: not looked at */
    rep.data[16 + 256 + 60] ^= 1;
    rep.data[16 + 40] ^= 1;
    ck_assert_int_eq(
        vsc_poll_decode_owned(frame_of(&rep, 0), 0, rep.len, 0, &p), 0);
    ck_assert_uint_eq(p.n, 5);
    vsc_polled_fini(&p);
    ck_assert_int_eq(
        vsc_poll_decode_owned(frame_of(&rep, 0), 0, rep.len, 1, &p), -EBADMSG);
    rep.data[16 + 40] ^= 1;
    rep.data[16 + 256 + 60] ^= 1;

    /* structure: every cut but at a record's end, a short batch_length
     * and a frame's reserved field are refused, the buffer freed */
    for (size_t l = 0; l < rep.len; l++) {
        int rc = vsc_poll_decode_owned(frame_of(&rep, 0), 0, l, 0, &p);
        ck_assert_int_eq(rc, l == 16 || l == 16 + l1 ? 0 : -EPROTO);
        if (rc != 0)
            ck_assert_ptr_null(p.buf);
        vsc_polled_fini(&p);
    }
    vs_store_u64(rep.data + 16 + 32, 255);
    ck_assert_int_eq(
        vsc_poll_decode_owned(frame_of(&rep, 0), 0, rep.len, 0, &p), -EPROTO);
    vs_store_u64(rep.data + 16 + 32, l1);
    rep.data[16 + 256 + 40] = 1;
    ck_assert_int_eq(
        vsc_poll_decode_owned(frame_of(&rep, 0), 0, rep.len, 0, &p), -EPROTO);
    ck_assert_ptr_null(p.msgs);
    vs_wbuf_fini(&rep);
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&hb);
}
END_TEST

START_TEST(test_poll_decode_random_bytes)
{
    uint8_t buf[1024];
    uint64_t x = 88172645463325252ull;
    for (int round = 0; round < 2000; round++) {
        struct vsc_polled p;
        size_t len = (size_t)(round % 700);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        /* make some record lengths plausible */
        if (len >= 16 + 40 && (round & 1))
            vs_store_u64(buf + 16 + 32, 256 + (x % 512));
        int rc = vsc_poll_decode(buf, len, &p);
        ck_assert(rc == 0 || rc == -EPROTO || rc == -EBADMSG);
        vsc_polled_fini(&p);
    }
}
END_TEST

START_TEST(test_sent_decode)
{
    struct vsc_sent s;
    uint8_t b[32];
    ck_assert_int_eq(vsc_decode_sent(NULL, 0, &s), 0);
    ck_assert_int_eq(s.confirmed, 0);
    size_t n = hex_to_bytes("01000000 03000000 01000000 02000000 "
                            "0600000000000000",
                            b, sizeof b);
    ck_assert_int_eq(vsc_decode_sent(b, n, &s), 0);
    ck_assert_int_eq(s.confirmed, 1);
    ck_assert_uint_eq(s.stream_id, 3);
    ck_assert_uint_eq(s.topic_id, 1);
    ck_assert_uint_eq(s.partition_id, 2);
    ck_assert_uint_eq(s.base_offset, 6);
    b[n] = 0;
    ck_assert_int_eq(vsc_decode_sent(b, n + 1, &s), -EPROTO); /* trailing */
    ck_assert_int_eq(vsc_decode_sent(b, n - 1, &s), -EPROTO);
    ck_assert_int_eq(vsc_decode_sent(b, 3, &s), -EPROTO);
}
END_TEST

START_TEST(test_group_decode)
{
    uint8_t b[128];
    struct vsc_group g;
    /* id 3, 6 partitions, 2 members, "g1"; member 0: [0,2,4], member 1: [] */
    size_t n = hex_to_bytes("03000000 06000000 02000000 02 6731 "
                            "00000000 03000000 00000000 02000000 04000000 "
                            "01000000 00000000",
                            b, sizeof b);
    ck_assert_int_eq(vsc_decode_group(b, n, &g, 1), 0);
    ck_assert_uint_eq(g.id, 3);
    ck_assert_uint_eq(g.partitions_count, 6);
    ck_assert_str_eq(g.name, "g1");
    ck_assert_uint_eq(g.n_members, 2);
    ck_assert_uint_eq(g.members[0].n_partitions, 3);
    ck_assert_uint_eq(g.members[0].partitions[2], 4);
    ck_assert_uint_eq(g.members[1].id, 1);
    ck_assert_uint_eq(g.members[1].n_partitions, 0);
    vsc_group_fini(&g);
    /* record only */
    ck_assert_int_eq(vsc_decode_group(b, 15, &g, 0), 0);
    ck_assert_uint_eq(g.members_count, 2);
    ck_assert_ptr_null(g.members);
    for (size_t l = 0; l < n; l++) {
        ck_assert_int_eq(vsc_decode_group(b, l, &g, 1), -EPROTO);
        ck_assert_ptr_null(g.members);
    }
    /* absurd member / partition counts are refused before allocating */
    vs_store_u32(b + 8, 0x7fffffff);
    ck_assert_int_eq(vsc_decode_group(b, n, &g, 1), -EPROTO);
    vs_store_u32(b + 8, 2);
    vs_store_u32(b + 19, 0x7fffffff);
    ck_assert_int_eq(vsc_decode_group(b, n, &g, 1), -EPROTO);
}
END_TEST

static Suite *
client_messages_suite(void)
{
    Suite *s = suite_create("client_messages");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, test_send_metadata_golden);
    tcase_add_test(tc, test_poll_request_golden);
    tcase_add_test(tc, test_batch_reference_example);
    tcase_add_test(tc, test_batch_bit_flips_detected);
    tcase_add_test(tc, test_random_ids_and_timestamps);
    tcase_add_test(tc, test_key_partition_vectors);
    tcase_add_test(tc, test_poll_decode_roundtrip);
    tcase_add_test(tc, test_poll_decode_owned);
    tcase_add_test(tc, test_poll_decode_unverified);
    tcase_add_test(tc, test_poll_decode_random_bytes);
    tcase_add_test(tc, test_sent_decode);
    tcase_add_test(tc, test_group_decode);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(client_messages_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
