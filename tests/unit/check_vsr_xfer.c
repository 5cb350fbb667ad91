/*
 * tests/unit/check_vsr_xfer.c - the I/O-free state-transfer core:
 * the ISM1 manifest codec (shard/vsr/xfer_manifest.h), the four frames
 * (xfer_frames.h), the receiver's stages (xfer_fetch.h) and the server's
 * offers (xfer_serve.h), driven against each other in memory.
 *
 * Each rule of the upstream review record has a case: first-wins offers,
 * a delayed duplicate Target after the client table shrank, chunk requests
 * at or past an artifact's end refused, zero-byte chunks never accepted
 * and never resetting a counter, stalls re-requesting then giving up on
 * the peer, every artifact verified before Installing, corruption at rest
 * refused, decode failures charged per snapshot generation, stale
 * messages in the wrong stage dropped (never an assertion).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "shard/vsr/xfer_fetch.h"
#include "shard/vsr/xfer_frames.h"
#include "shard/vsr/xfer_manifest.h"
#include "shard/vsr/xfer_serve.h"

#define GROUP   (UINT64_C(1) << 63)
#define CHUNK   1000u
#define PRIMARY 0
#define LAGGER  2

static const struct vs_u128 cluster = {0xc1, 0xc2};

/* ---- helpers ---- */

static uint8_t *
random_bytes(size_t n, uint32_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    return p;
}

static struct xfer_manifest
manifest_of(const uint8_t *snap, size_t snap_len, uint64_t snap_op,
            const uint8_t *table, size_t table_len, uint64_t table_op)
{
    struct xfer_manifest m;
    memset(&m, 0, sizeof(m));
    m.count = 2;
    m.a[0] = (struct xfer_artifact){XFER_KIND_METADATA_SNAPSHOT, snap_op,
                                    snap_len, vs_xxh3_64(snap, snap_len)};
    m.a[1] = (struct xfer_artifact){XFER_KIND_CLIENT_TABLE, table_op, table_len,
                                    vs_xxh3_64(table, table_len)};
    return m;
}

/* ---- manifest ---- */

START_TEST(test_manifest_round_trip_and_canonical)
{
    uint8_t *a = random_bytes(5000, 1), *b = random_bytes(77, 2);
    struct xfer_manifest m = manifest_of(a, 5000, 40, b, 77, 45), d;
    uint8_t buf[XFER_MANIFEST_MAX_SIZE], again[XFER_MANIFEST_MAX_SIZE];
    int n = xfer_manifest_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(n, (int)XFER_MANIFEST_SIZE(2));
    ck_assert_int_eq(memcmp(buf, "ISM1", 4), 0);
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_OK);
    ck_assert_int_eq(memcmp(&d, &m, sizeof(m)), 0);
    ck_assert_int_eq(xfer_manifest_encode(&d, again, sizeof(again)), n);
    ck_assert_int_eq(memcmp(buf, again, (size_t)n), 0);
    ck_assert_ptr_eq(xfer_manifest_find(&d, XFER_KIND_CLIENT_TABLE), &d.a[1]);
    ck_assert_ptr_null(xfer_manifest_find(&d, XFER_KIND_SEGMENT_LOG));
    /* too small a buffer */
    ck_assert_int_eq(xfer_manifest_encode(&m, buf, (size_t)n - 1), -ENOSPC);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_manifest_every_truncation_and_flip)
{
    uint8_t *a = random_bytes(10, 3), *b = random_bytes(10, 4);
    struct xfer_manifest m = manifest_of(a, 10, 1, b, 10, 1), d;
    uint8_t buf[XFER_MANIFEST_MAX_SIZE + 1];
    int n = xfer_manifest_encode(&m, buf, sizeof(buf));
    for (int len = 0; len < n; len++)
        ck_assert_int_ne(xfer_manifest_decode(buf, (size_t)len, &d),
                         XFER_MANIFEST_OK);
    buf[n] = 0;
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n + 1, &d),
                     XFER_MANIFEST_LONG);
    for (int i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(xfer_manifest_decode(buf, (size_t)n, &d) !=
                              XFER_MANIFEST_OK,
                          "flip of byte %d bit %d accepted", i, bit);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_OK);
    free(a);
    free(b);
}
END_TEST

/* Re-seals a hand-edited manifest so only the edited rule can fail. */
static void
reseal(uint8_t *buf, size_t n)
{
    uint64_t c = vs_xxh3_64(buf, n - 8);
    for (int i = 0; i < 8; i++)
        buf[n - 8 + (size_t)i] = (uint8_t)(c >> (8 * i));
}

START_TEST(test_manifest_rules)
{
    uint8_t buf[XFER_MANIFEST_MAX_SIZE];
    struct xfer_manifest m, d;
    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(xfer_manifest_encode(&m, buf, sizeof(buf)), -EINVAL);
    m.count = 2;
    m.a[0].kind = XFER_KIND_CLIENT_TABLE;
    m.a[1].kind = XFER_KIND_CLIENT_TABLE; /* repeated */
    ck_assert_int_eq(xfer_manifest_encode(&m, buf, sizeof(buf)), -EINVAL);
    m.a[1].kind = XFER_KIND_COUNT; /* unknown */
    ck_assert_int_eq(xfer_manifest_encode(&m, buf, sizeof(buf)), -EINVAL);
    m.a[1].kind = XFER_KIND_METADATA_SNAPSHOT;
    m.a[1].len = XFER_ARTIFACT_CAP + 1;
    ck_assert_int_eq(xfer_manifest_encode(&m, buf, sizeof(buf)), -EINVAL);
    m.a[1].len = XFER_ARTIFACT_CAP;
    int n = xfer_manifest_encode(&m, buf, sizeof(buf));
    ck_assert_int_gt(n, 0);

    /* each rule on the decode side, with a valid checksum */
    buf[8] = 24;
    reseal(buf, (size_t)n);
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_ENTRY_LEN);
    buf[8] = 25;
    buf[9] = XFER_KIND_COUNT + 3;
    reseal(buf, (size_t)n);
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_KIND);
    buf[9] = XFER_KIND_METADATA_SNAPSHOT; /* now twice */
    reseal(buf, (size_t)n);
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_KIND);
    buf[9] = XFER_KIND_CLIENT_TABLE;
    buf[9 + 9 + 7] = 0x40; /* first artifact's len high byte: huge */
    reseal(buf, (size_t)n);
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_CAP_BAD);
    memcpy(buf, "ISM2", 4);
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_MAGIC_BAD);
    memcpy(buf, "ISM1", 4);
    buf[4] = 0;
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_COUNT);
    buf[4] = XFER_ARTIFACTS_MAX + 1;
    ck_assert_int_eq(xfer_manifest_decode(buf, (size_t)n, &d),
                     XFER_MANIFEST_COUNT);
    ck_assert_str_eq(xfer_manifest_error_name(XFER_MANIFEST_CHECKSUM),
                     "checksum mismatch");
}
END_TEST

/* ---- frames ---- */

static const struct xfer_sender me = {{0xc1, 0xc2}, GROUP, 1, 7};

START_TEST(test_frames_exact_sizes_and_fields)
{
    uint8_t buf[VS_HEADER_SIZE + CHUNK + 16];
    struct vs_hdr_request_state_transfer rt;
    xfer_frame_request_transfer(&rt, &me, (struct vs_u128){9, 9});
    ck_assert_int_eq(xfer_frame_check(&rt, sizeof(rt), cluster, GROUP, CHUNK),
                     XFER_FRAME_OK);
    /* a header-only frame carrying a body is dropped */
    memcpy(buf, &rt, sizeof(rt));
    ((struct vs_header *)buf)->f.size = VS_HEADER_SIZE + 8;
    ck_assert_int_eq(
        xfer_frame_check(buf, VS_HEADER_SIZE + 8, cluster, GROUP, CHUNK),
        XFER_FRAME_SIZE);
    ck_assert_int_eq(
        xfer_frame_check(&rt, sizeof(rt) - 1, cluster, GROUP, CHUNK),
        XFER_FRAME_SIZE);
    ck_assert_int_eq(
        xfer_frame_check(&rt, sizeof(rt), (struct vs_u128){1, 1}, GROUP, CHUNK),
        XFER_FRAME_CLUSTER);
    ck_assert_int_eq(
        xfer_frame_check(&rt, sizeof(rt), cluster, GROUP + 1, CHUNK),
        XFER_FRAME_GROUP);
    rt.nonce.lo ^= 1; /* any flip breaks the seal */
    ck_assert_int_eq(xfer_frame_check(&rt, sizeof(rt), cluster, GROUP, CHUNK),
                     XFER_FRAME_SEAL);

    struct vs_hdr_request_state_chunk rc;
    xfer_frame_request_chunk(&rc, &me, (struct vs_u128){9, 9}, 1, 100, CHUNK);
    ck_assert_int_eq(xfer_frame_check(&rc, sizeof(rc), cluster, GROUP, CHUNK),
                     XFER_FRAME_OK);
    xfer_frame_request_chunk(&rc, &me, (struct vs_u128){9, 9}, 1, 100, 0);
    ck_assert_int_eq(xfer_frame_check(&rc, sizeof(rc), cluster, GROUP, CHUNK),
                     XFER_FRAME_FIELD);
    xfer_frame_request_chunk(&rc, &me, (struct vs_u128){9, 9}, 1, 100,
                             CHUNK + 1);
    ck_assert_int_eq(xfer_frame_check(&rc, sizeof(rc), cluster, GROUP, CHUNK),
                     XFER_FRAME_FIELD);

    /* chunks: 1..CHUNK bytes; a body flip fails the body checksum */
    uint8_t body[CHUNK + 1];
    memset(body, 0xab, sizeof(body));
    struct vs_hdr_state_chunk *ch = (struct vs_hdr_state_chunk *)buf;
    xfer_frame_chunk(ch, &me, (struct vs_u128){9, 9}, 0, 0, body, CHUNK);
    memcpy(buf + VS_HEADER_SIZE, body, CHUNK);
    ck_assert_int_eq(
        xfer_frame_check(buf, VS_HEADER_SIZE + CHUNK, cluster, GROUP, CHUNK),
        XFER_FRAME_OK);
    buf[VS_HEADER_SIZE + 5] ^= 0x10;
    ck_assert_int_eq(
        xfer_frame_check(buf, VS_HEADER_SIZE + CHUNK, cluster, GROUP, CHUNK),
        XFER_FRAME_BODY);
    xfer_frame_chunk(ch, &me, (struct vs_u128){9, 9}, 0, 0, body, CHUNK + 1);
    memcpy(buf + VS_HEADER_SIZE, body, CHUNK + 1);
    ck_assert_int_eq(xfer_frame_check(buf, VS_HEADER_SIZE + CHUNK + 1, cluster,
                                      GROUP, CHUNK),
                     XFER_FRAME_SIZE);
    xfer_frame_chunk(ch, &me, (struct vs_u128){9, 9}, 0, 0, body, 0);
    ck_assert_int_eq(
        xfer_frame_check(buf, VS_HEADER_SIZE, cluster, GROUP, CHUNK),
        XFER_FRAME_SIZE); /* never a zero-byte chunk */

    /* targets */
    uint8_t t[XFER_TARGET_FRAME_MAX];
    size_t tn = xfer_frame_target(t, &me, (struct vs_u128){9, 9}, 10, 12, NULL,
                                  0, XFER_NO_SNAPSHOT, 0);
    ck_assert_uint_eq(tn, VS_HEADER_SIZE);
    ck_assert_int_eq(xfer_frame_check(t, tn, cluster, GROUP, CHUNK),
                     XFER_FRAME_OK);
    tn = xfer_frame_target(t, &me, (struct vs_u128){9, 9}, 10, 12, NULL, 0,
                           XFER_AVAILABLE, 0); /* unavailable, no reason */
    ck_assert_int_eq(xfer_frame_check(t, tn, cluster, GROUP, CHUNK),
                     XFER_FRAME_FIELD);
    tn = xfer_frame_target(t, &me, (struct vs_u128){9, 9}, 12, 10, NULL, 0,
                           XFER_NO_SNAPSHOT, 0); /* commit_max < commit_op */
    ck_assert_int_eq(xfer_frame_check(t, tn, cluster, GROUP, CHUNK),
                     XFER_FRAME_FIELD);
    uint8_t junk[XFER_MANIFEST_SIZE(2)];
    memset(junk, 1, sizeof(junk));
    tn = xfer_frame_target(t, &me, (struct vs_u128){9, 9}, 10, 12, junk,
                           sizeof(junk), 0, 0); /* not a manifest */
    ck_assert_int_eq(xfer_frame_check(t, tn, cluster, GROUP, CHUNK),
                     XFER_FRAME_FIELD);
    struct vs_header other;
    memset(&other, 0, sizeof(other));
    other.f.size = VS_HEADER_SIZE;
    other.f.command = VS_CMD_COMMIT;
    ck_assert_int_eq(
        xfer_frame_check(&other, sizeof(other), cluster, GROUP, CHUNK),
        XFER_FRAME_COMMAND);
}
END_TEST

/* ---- the two sides against each other ---- */

struct world {
    struct xfer_fetch f;
    struct xfer_serve s;
    uint8_t *art[2]; /* what the server reads for each kind */
    size_t art_len[2];
    uint64_t snap_op, commit;
    /* faults */
    int drop_every;       /* drop every Nth frame to the fetcher */
    int corrupt_chunk_at; /* flip a body byte of the Nth chunk */
    int misplace_chunks;  /* serve every chunk at offset + 1 */
    int empty_chunks;     /* serve every chunk with zero bytes, handed to
                             the fetcher past the frame check (which
                             refuses it): the fetcher's own rule */
    unsigned frames;
    unsigned chunk_seen;
    uint64_t delivered[XFER_DROP_COUNT];
    unsigned check_drops;
};

static void
world_init(struct world *w, size_t snap_len, size_t table_len)
{
    memset(w, 0, sizeof(*w));
    struct xfer_fetch_opts fo = {
        .me = {{0xc1, 0xc2}, GROUP, LAGGER, 3},
        .chunk_max = CHUNK,
        .stall_ticks = 10,
        .stalls_max = 3,
    };
    struct xfer_serve_opts so = {
        .me = {{0xc1, 0xc2}, GROUP, PRIMARY, 3},
        .chunk_max = CHUNK,
        .idle_ticks = 200,
        .served_ticks = 50,
    };
    xfer_fetch_init(&w->f, &fo);
    xfer_serve_init(&w->s, &so);
    w->art[0] = random_bytes(snap_len, 11);
    w->art_len[0] = snap_len;
    w->art[1] = random_bytes(table_len, 12);
    w->art_len[1] = table_len;
    w->snap_op = 64;
    w->commit = 80;
}

static void
world_free(struct world *w)
{
    xfer_fetch_destroy(&w->f);
    free(w->art[0]);
    free(w->art[1]);
}

/* The server's answer to one request frame from the fetcher. */
static void
serve_one(struct world *w, const void *req, struct xfer_manifest *m)
{
    const struct vs_header *h = req;
    uint8_t out[VS_HEADER_SIZE + CHUNK];
    size_t out_len = 0;
    ck_assert_int_eq(
        xfer_frame_check(req, VS_HEADER_SIZE, cluster, GROUP, CHUNK),
        XFER_FRAME_OK);
    if (h->f.command == VS_CMD_REQUEST_STATE_TRANSFER) {
        const struct vs_hdr_request_state_transfer *r = req;
        const struct xfer_offer *o = xfer_serve_find(&w->s, LAGGER, r->nonce);
        uint64_t replaced;
        if (o == NULL)
            o = xfer_serve_offer(&w->s, LAGGER, r->nonce, m, w->commit,
                                 w->commit, &replaced);
        ck_assert_ptr_nonnull(o);
        memcpy(out, o->target, o->target_len);
        out_len = o->target_len;
    } else {
        const struct xfer_offer *o;
        uint8_t kind;
        uint64_t off;
        uint32_t n;
        enum xfer_serve_result r =
            xfer_serve_chunk(&w->s, LAGGER, req, &o, &kind, &off, &n);
        if (r != XFER_SERVE_CHUNK)
            return;
        ck_assert_uint_le(n, CHUNK);
        ck_assert_uint_gt(n, 0);
        const uint8_t *src = w->art[kind] + off;
        uint64_t at = w->misplace_chunks ? off + 1 : off;
        const struct vs_hdr_request_state_chunk *rq = req;
        xfer_frame_chunk((struct vs_hdr_state_chunk *)out, &w->s.o.me,
                         rq->nonce, rq->artifact, at, src, n);
        memcpy(out + VS_HEADER_SIZE, src, n);
        out_len = VS_HEADER_SIZE + n;
        if (++w->chunk_seen == (unsigned)w->corrupt_chunk_at)
            out[VS_HEADER_SIZE + n / 2] ^= 0x01; /* in transit */
        if (w->empty_chunks) {
            struct vs_hdr_state_chunk *c = (struct vs_hdr_state_chunk *)out;
            c->f.size = VS_HEADER_SIZE;
            memset(&c->f.checksum_body, 0, sizeof(c->f.checksum_body));
            vs_frame_seal((struct vs_header *)out);
            ck_assert_int_ne(
                xfer_frame_check(out, VS_HEADER_SIZE, cluster, GROUP, CHUNK),
                XFER_FRAME_OK);
            w->delivered[xfer_fetch_on_chunk(&w->f, PRIMARY, out,
                                             VS_HEADER_SIZE)]++;
            return;
        }
    }
    w->frames++;
    if (w->drop_every && w->frames % (unsigned)w->drop_every == 0)
        return;
    if (xfer_frame_check(out, out_len, cluster, GROUP, CHUNK) !=
        XFER_FRAME_OK) {
        w->check_drops++;
        return;
    }
    const struct vs_header *oh = (const struct vs_header *)out;
    enum xfer_fetch_drop d =
        oh->f.command == VS_CMD_STATE_TRANSFER_TARGET
            ? xfer_fetch_on_target(&w->f, PRIMARY, out, out_len)
            : xfer_fetch_on_chunk(&w->f, PRIMARY, out, out_len);
    w->delivered[d]++;
}

/* Runs request/answer rounds and ticks until Installing or Idle. */
static int
run(struct world *w, struct xfer_manifest *m, int rounds)
{
    uint8_t req[VS_HEADER_SIZE];
    for (int r = 0; r < rounds; r++) {
        uint8_t peer;
        /* frames per round bounded: a fetcher that re-requests at once
         * after every answer (a livelock) ends the round */
        for (int k = 0; k < 64 && xfer_fetch_pop(&w->f, req, &peer); k++) {
            ck_assert_uint_eq(peer, PRIMARY);
            serve_one(w, req, m);
        }
        if (w->f.stage == XFER_INSTALLING || w->f.stage == XFER_IDLE ||
            w->f.want_peer)
            return r;
        xfer_fetch_tick(&w->f);
    }
    return rounds;
}

static void
assert_installed_bytes(struct world *w)
{
    uint64_t len, frontier;
    const uint8_t *p = xfer_fetch_artifact(&w->f, XFER_KIND_METADATA_SNAPSHOT,
                                           &len, &frontier);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(len, w->art_len[0]);
    ck_assert_uint_eq(frontier, w->snap_op);
    ck_assert_int_eq(memcmp(p, w->art[0], len), 0);
    p = xfer_fetch_artifact(&w->f, XFER_KIND_CLIENT_TABLE, &len, &frontier);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(len, w->art_len[1]);
    ck_assert_int_eq(memcmp(p, w->art[1], len), 0);
}

START_TEST(test_transfer_converges)
{
    struct world w;
    world_init(&w, 12345, 2001);
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    ck_assert_int_eq(xfer_fetch_arm(&w.f, (struct vs_u128){77, 1}, PRIMARY), 0);
    ck_assert_int_eq(w.f.stage, XFER_AWAITING_TARGET);
    /* arming again keeps the session (nonce and budget) */
    ck_assert_int_eq(xfer_fetch_arm(&w.f, (struct vs_u128){88, 1}, PRIMARY),
                     -EALREADY);
    ck_assert_uint_eq(w.f.nonce.lo, 77);
    run(&w, &m, 1000);
    ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
    assert_installed_bytes(&w);
    ck_assert_uint_eq(w.f.stats.bytes, 12345 + 2001);
    ck_assert_uint_eq(w.f.stats.chunks, 13 + 3);
    ck_assert_uint_eq(w.f.stats.stalls, 0);
    xfer_fetch_installed(&w.f);
    ck_assert_int_eq(w.f.stage, XFER_IDLE);
    ck_assert_uint_eq(w.f.nonce.lo, 0); /* dropped with the stage */
    ck_assert_uint_eq(w.f.stats.completed, 1);
    ck_assert_uint_eq(w.s.stats.offers, 1);
    world_free(&w);
}
END_TEST

START_TEST(test_loss_and_corrupt_chunk_recover_by_stall)
{
    struct world w;
    world_init(&w, 9000, 500);
    w.drop_every = 4;
    w.corrupt_chunk_at = 2; /* frame 3: not one of the dropped */
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    xfer_fetch_arm(&w.f, (struct vs_u128){5, 5}, PRIMARY);
    run(&w, &m, 5000);
    ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
    assert_installed_bytes(&w);
    ck_assert_uint_gt(w.f.stats.stalls, 0);
    ck_assert_uint_ge(w.check_drops, 1); /* the corrupt chunk */
    /* the retried RequestStateTransfer got the same offer: one built */
    ck_assert_uint_eq(w.s.stats.offers, 1);
    world_free(&w);
}
END_TEST

START_TEST(test_corruption_at_rest_refused)
{
    struct world w;
    world_init(&w, 3000, 300);
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    w.art[0][1500] ^= 0x20; /* the file rotted after the checkpoint */
    xfer_fetch_arm(&w.f, (struct vs_u128){6, 6}, PRIMARY);
    run(&w, &m, 1000);
    ck_assert_int_eq(w.f.stage, XFER_IDLE);
    ck_assert_uint_eq(w.f.stats.mismatches, 1);
    ck_assert_ptr_nonnull(strstr(w.f.reason, "fails its checksum"));
    uint64_t len, fr;
    ck_assert_ptr_null(
        xfer_fetch_artifact(&w.f, XFER_KIND_METADATA_SNAPSHOT, &len, &fr));
    world_free(&w);
}
END_TEST

START_TEST(test_misplaced_chunks_stall_then_give_up_on_peer)
{
    struct world w;
    world_init(&w, 3000, 300);
    w.misplace_chunks = 1; /* a peer that never answers what was asked */
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    xfer_fetch_arm(&w.f, (struct vs_u128){7, 7}, PRIMARY);
    run(&w, &m, 1000);
    /* nothing accepted, counters never reset: the budget ran out */
    ck_assert_uint_eq(w.f.stats.chunks, 0);
    ck_assert_uint_ge(w.delivered[XFER_DROP_POSITION], 4);
    ck_assert_uint_eq(w.f.stats.stalls, 4); /* 3 re-requests + give up */
    ck_assert_int_eq(w.f.stage, XFER_AWAITING_TARGET);
    ck_assert(w.f.want_peer);
    uint8_t req[VS_HEADER_SIZE], peer;
    ck_assert_int_eq(xfer_fetch_pop(&w.f, req, &peer), 0);
    /* the caller retargets: a fresh budget, same nonce */
    ck_assert_int_eq(xfer_fetch_retarget(&w.f, 1), 0);
    ck_assert_uint_eq(w.f.nonce.lo, 7);
    ck_assert_int_eq(xfer_fetch_pop(&w.f, req, &peer), 1);
    ck_assert_uint_eq(peer, 1);
    ck_assert_int_eq(((struct vs_header *)req)->f.command,
                     VS_CMD_REQUEST_STATE_TRANSFER);
    world_free(&w);
}
END_TEST

/* A peer answering every chunk with zero bytes (the upstream empty-chunk
 * livelock): even past the frame check, a zero-byte chunk is never
 * progress and never resets the idle or stall counters, so the budget
 * runs out exactly as with silence. */
START_TEST(test_zero_byte_chunks_never_reset_counters)
{
    struct world w;
    world_init(&w, 3000, 300);
    w.empty_chunks = 1;
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    xfer_fetch_arm(&w.f, (struct vs_u128){9, 9}, PRIMARY);
    int rounds = run(&w, &m, 1000);
    ck_assert_uint_eq(w.f.stats.chunks, 0);
    ck_assert_uint_eq(w.f.stats.bytes, 0);
    ck_assert_uint_ge(w.delivered[XFER_DROP_POSITION], 4);
    ck_assert_uint_eq(w.f.stats.stalls, 4); /* 3 re-requests + give up */
    ck_assert_int_eq(w.f.stage, XFER_AWAITING_TARGET);
    ck_assert(w.f.want_peer);
    /* within the budget of silence: (stalls_max + 1) * stall_ticks */
    ck_assert_int_le(rounds, 4 * 10 + 1);
    world_free(&w);
}
END_TEST

START_TEST(test_first_wins_and_delayed_duplicate_target)
{
    struct world w;
    world_init(&w, 4000, 400);
    struct xfer_manifest a = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    struct vs_u128 nonce = {42, 0};
    uint64_t replaced;
    const struct xfer_offer *o1 = xfer_serve_offer(
        &w.s, LAGGER, nonce, &a, w.commit, w.commit, &replaced);
    ck_assert_ptr_nonnull(o1);
    uint8_t first[XFER_TARGET_FRAME_MAX];
    size_t first_len = o1->target_len;
    memcpy(first, o1->target, first_len);
    /* a client logged out: the table shrank; a rebuild for the same nonce
     * must not replace the manifest the requester may hold */
    struct xfer_manifest b =
        manifest_of(w.art[0], w.art_len[0], w.snap_op, w.art[1],
                    w.art_len[1] - 100, w.commit + 1);
    const struct xfer_offer *o2 = xfer_serve_offer(
        &w.s, LAGGER, nonce, &b, w.commit + 1, w.commit + 1, &replaced);
    ck_assert_ptr_eq(o2, o1);
    ck_assert_uint_eq(o2->target_len, first_len);
    ck_assert_int_eq(memcmp(o2->target, first, first_len), 0);
    ck_assert_uint_eq(replaced, 0);

    /* the fetcher takes the first Target, then a delayed duplicate built
     * for the same nonce by a (hypothetical) rebuild is dropped */
    xfer_fetch_arm(&w.f, nonce, PRIMARY);
    ck_assert_int_eq(xfer_fetch_on_target(&w.f, PRIMARY, first, first_len),
                     XFER_TAKEN);
    ck_assert_int_eq(w.f.stage, XFER_FETCHING);
    uint8_t dup[XFER_TARGET_FRAME_MAX], mb[XFER_MANIFEST_MAX_SIZE];
    int mlen = xfer_manifest_encode(&b, mb, sizeof(mb));
    size_t dn = xfer_frame_target(dup, &w.s.o.me, nonce, w.commit + 1,
                                  w.commit + 1, mb, (size_t)mlen, 0, 0);
    ck_assert_int_eq(xfer_fetch_on_target(&w.f, PRIMARY, dup, dn),
                     XFER_DROP_STAGE);
    run(&w, &a, 1000);
    ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
    assert_installed_bytes(&w);

    /* a new nonce from the requester replaces its old offer */
    const struct xfer_offer *o3 =
        xfer_serve_offer(&w.s, LAGGER, (struct vs_u128){43, 0}, &b, w.commit,
                         w.commit, &replaced);
    ck_assert_ptr_nonnull(o3);
    ck_assert_uint_eq(replaced, 1);
    world_free(&w);
}
END_TEST

START_TEST(test_serve_refuses_end_and_unknown)
{
    struct world w;
    world_init(&w, 2000, 10);
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    struct vs_u128 nonce = {50, 0};
    uint64_t replaced;
    ck_assert_ptr_nonnull(xfer_serve_offer(&w.s, LAGGER, nonce, &m, w.commit,
                                           w.commit, &replaced));
    const struct xfer_offer *o;
    uint8_t kind;
    uint64_t off;
    uint32_t n;
    struct vs_hdr_request_state_chunk rq;
    const struct xfer_sender lag = {{0xc1, 0xc2}, GROUP, LAGGER, 3};
    xfer_frame_request_chunk(&rq, &lag, nonce, 0, 1500, CHUNK);
    ck_assert_int_eq(xfer_serve_chunk(&w.s, LAGGER, &rq, &o, &kind, &off, &n),
                     XFER_SERVE_CHUNK);
    ck_assert_uint_eq(n, 500); /* never past the end */
    ck_assert_uint_eq(kind, XFER_KIND_METADATA_SNAPSHOT);
    xfer_frame_request_chunk(&rq, &lag, nonce, 0, 2000, CHUNK); /* at end */
    ck_assert_int_eq(xfer_serve_chunk(&w.s, LAGGER, &rq, &o, &kind, &off, &n),
                     XFER_SERVE_REFUSED_END);
    xfer_frame_request_chunk(&rq, &lag, nonce, 0, 9999, CHUNK); /* past */
    ck_assert_int_eq(xfer_serve_chunk(&w.s, LAGGER, &rq, &o, &kind, &off, &n),
                     XFER_SERVE_REFUSED_END);
    xfer_frame_request_chunk(&rq, &lag, nonce, 2, 0, CHUNK); /* artifact */
    ck_assert_int_eq(xfer_serve_chunk(&w.s, LAGGER, &rq, &o, &kind, &off, &n),
                     XFER_SERVE_REFUSED_ARTIFACT);
    xfer_frame_request_chunk(&rq, &lag, (struct vs_u128){51, 0}, 0, 0, CHUNK);
    ck_assert_int_eq(xfer_serve_chunk(&w.s, LAGGER, &rq, &o, &kind, &off, &n),
                     XFER_SERVE_UNKNOWN);
    ck_assert_int_eq(xfer_serve_chunk(&w.s, 1, &rq, &o, &kind, &off, &n),
                     XFER_SERVE_UNKNOWN);
    ck_assert_uint_eq(w.s.stats.refused, 3);
    /* refused requests do not keep the offer alive: it expires */
    uint64_t ids[4];
    size_t expired = 0;
    for (int t = 0; t < 300 && expired == 0; t++) {
        xfer_frame_request_chunk(&rq, &lag, nonce, 0, 2000, CHUNK);
        xfer_serve_chunk(&w.s, LAGGER, &rq, &o, &kind, &off, &n);
        expired = xfer_serve_tick(&w.s, ids, 4);
    }
    ck_assert_uint_eq(expired, 1);
    ck_assert_ptr_null(xfer_serve_find(&w.s, LAGGER, nonce));
    /* an unavailable answer carries its reason */
    uint8_t t[VS_HEADER_SIZE];
    size_t tn = xfer_serve_unavailable(&w.s, t, nonce,
                                       XFER_NOT_CAUGHT_UP_PRIMARY, 0, 1, 2);
    ck_assert_int_eq(xfer_frame_check(t, tn, cluster, GROUP, CHUNK),
                     XFER_FRAME_OK);
    ck_assert_uint_eq(((struct vs_hdr_state_transfer_target *)t)->reason,
                      XFER_NOT_CAUGHT_UP_PRIMARY);
    world_free(&w);
}
END_TEST

START_TEST(test_fully_served_offer_expires_sooner)
{
    struct world w;
    world_init(&w, 500, 10);
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    xfer_fetch_arm(&w.f, (struct vs_u128){60, 0}, PRIMARY);
    run(&w, &m, 100);
    ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
    uint64_t ids[2];
    int ticks = 0;
    while (xfer_serve_tick(&w.s, ids, 2) == 0 && ticks < 1000)
        ticks++;
    ck_assert_int_eq(ticks, 49); /* served_ticks 50, not idle_ticks 200 */
    world_free(&w);
}
END_TEST

START_TEST(test_wrong_stage_peer_nonce_dropped)
{
    struct world w;
    world_init(&w, 2000, 10);
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    struct vs_u128 nonce = {70, 0};
    uint64_t replaced;
    const struct xfer_offer *o = xfer_serve_offer(
        &w.s, LAGGER, nonce, &m, w.commit, w.commit, &replaced);
    uint8_t chunk[VS_HEADER_SIZE + 10];
    xfer_frame_chunk((struct vs_hdr_state_chunk *)chunk, &w.s.o.me, nonce, 0, 0,
                     w.art[0], 10);
    memcpy(chunk + VS_HEADER_SIZE, w.art[0], 10);
    /* Idle: everything dropped */
    ck_assert_int_eq(
        xfer_fetch_on_target(&w.f, PRIMARY, o->target, o->target_len),
        XFER_DROP_STAGE);
    ck_assert_int_eq(xfer_fetch_on_chunk(&w.f, PRIMARY, chunk, sizeof(chunk)),
                     XFER_DROP_STAGE);
    xfer_fetch_arm(&w.f, nonce, PRIMARY);
    /* AwaitingTarget: a chunk, a Target from another peer or session */
    ck_assert_int_eq(xfer_fetch_on_chunk(&w.f, PRIMARY, chunk, sizeof(chunk)),
                     XFER_DROP_STAGE);
    ck_assert_int_eq(xfer_fetch_on_target(&w.f, 1, o->target, o->target_len),
                     XFER_DROP_PEER);
    struct vs_u128 other = {71, 0};
    const struct xfer_offer *o2 =
        xfer_serve_offer(&w.s, 1, other, &m, w.commit, w.commit, &replaced);
    ck_assert_int_eq(
        xfer_fetch_on_target(&w.f, PRIMARY, o2->target, o2->target_len),
        XFER_DROP_NONCE);
    ck_assert_int_eq(
        xfer_fetch_on_target(&w.f, PRIMARY, o->target, o->target_len),
        XFER_TAKEN);
    /* Fetching: a chunk at another offset, of another artifact */
    uint8_t off[VS_HEADER_SIZE + 10];
    xfer_frame_chunk((struct vs_hdr_state_chunk *)off, &w.s.o.me, nonce, 0, 5,
                     w.art[0] + 5, 10);
    memcpy(off + VS_HEADER_SIZE, w.art[0] + 5, 10);
    ck_assert_int_eq(xfer_fetch_on_chunk(&w.f, PRIMARY, off, sizeof(off)),
                     XFER_DROP_POSITION);
    ck_assert_int_eq(xfer_fetch_on_chunk(&w.f, 1, chunk, sizeof(chunk)),
                     XFER_DROP_PEER);
    ck_assert_int_eq(xfer_fetch_on_chunk(&w.f, PRIMARY, chunk, sizeof(chunk)),
                     XFER_TAKEN);
    ck_assert_uint_eq(w.f.offset, 10);
    /* a replayed chunk (same offset again) is not taken twice */
    ck_assert_int_eq(xfer_fetch_on_chunk(&w.f, PRIMARY, chunk, sizeof(chunk)),
                     XFER_DROP_POSITION);
    /* a chunk past the end of the small table artifact: overrun */
    xfer_fetch_abandon(&w.f, "test");
    ck_assert_int_eq(w.f.stage, XFER_IDLE);
    ck_assert_str_eq(w.f.reason, "test");
    ck_assert_uint_eq(w.f.stats.drops[XFER_DROP_STAGE], 3);
    ck_assert_str_eq(xfer_stage_name(XFER_FETCHING), "fetching");
    world_free(&w);
}
END_TEST

START_TEST(test_overrun_and_manifest_rules_on_fetch)
{
    struct world w;
    world_init(&w, 15, 5);
    struct vs_u128 nonce = {80, 0};
    /* commit_op below the snapshot's frontier: refused */
    struct xfer_manifest bad = manifest_of(w.art[0], 15, 90, w.art[1], 5, 80);
    uint64_t replaced;
    const struct xfer_offer *o =
        xfer_serve_offer(&w.s, LAGGER, nonce, &bad, 80, 80, &replaced);
    xfer_fetch_arm(&w.f, nonce, PRIMARY);
    ck_assert_int_eq(
        xfer_fetch_on_target(&w.f, PRIMARY, o->target, o->target_len),
        XFER_DROP_MANIFEST);
    ck_assert_int_eq(w.f.stage, XFER_AWAITING_TARGET);
    /* a good one, then a chunk longer than what is left */
    struct xfer_manifest m = manifest_of(w.art[0], 15, 64, w.art[1], 5, 80);
    struct vs_u128 n2 = {81, 0};
    xfer_fetch_abandon(&w.f, "again");
    o = xfer_serve_offer(&w.s, LAGGER, n2, &m, 80, 80, &replaced);
    xfer_fetch_arm(&w.f, n2, PRIMARY);
    ck_assert_int_eq(
        xfer_fetch_on_target(&w.f, PRIMARY, o->target, o->target_len),
        XFER_TAKEN);
    uint8_t big[VS_HEADER_SIZE + 16];
    uint8_t body[16] = {0};
    xfer_frame_chunk((struct vs_hdr_state_chunk *)big, &w.s.o.me, n2, 0, 0,
                     body, 16);
    memcpy(big + VS_HEADER_SIZE, body, 16);
    ck_assert_int_eq(xfer_fetch_on_chunk(&w.f, PRIMARY, big, sizeof(big)),
                     XFER_DROP_OVERRUN);
    world_free(&w);
}
END_TEST

/* The optional third artifact, the snapshot op's prepare header: exactly
 * 256 bytes at the snapshot's frontier, else the manifest is refused. */
START_TEST(test_checkpoint_prepare_artifact_rules)
{
    struct world w;
    world_init(&w, 15, 5);
    uint8_t hdr[VS_HEADER_SIZE];
    memset(hdr, 0x3c, sizeof(hdr));
    struct xfer_manifest m = manifest_of(w.art[0], 15, 64, w.art[1], 5, 80);
    m.count = 3;
    m.a[2] = (struct xfer_artifact){XFER_KIND_CHECKPOINT_PREPARE, 63,
                                    VS_HEADER_SIZE, vs_xxh3_64(hdr, 256)};
    uint64_t replaced;
    uint64_t id = 90;
    struct {
        uint64_t frontier, len;
        enum xfer_fetch_drop want;
    } cases[] = {
        {63, VS_HEADER_SIZE, XFER_DROP_MANIFEST}, /* another op's header */
        {64, 255, XFER_DROP_MANIFEST},            /* not a header's size */
        {64, VS_HEADER_SIZE, XFER_TAKEN},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vs_u128 nonce = {id++, 0};
        m.a[2].frontier = cases[i].frontier;
        m.a[2].len = cases[i].len;
        const struct xfer_offer *o =
            xfer_serve_offer(&w.s, LAGGER, nonce, &m, 80, 80, &replaced);
        ck_assert_ptr_nonnull(o);
        xfer_fetch_abandon(&w.f, "next case");
        ck_assert_int_eq(xfer_fetch_arm(&w.f, nonce, PRIMARY), 0);
        ck_assert_int_eq(
            xfer_fetch_on_target(&w.f, PRIMARY, o->target, o->target_len),
            cases[i].want);
    }
    ck_assert_int_eq(w.f.stage, XFER_FETCHING);
    ck_assert_uint_eq(w.f.m.count, 3);
    /* two of a kind are never a manifest */
    m.a[2].kind = XFER_KIND_CLIENT_TABLE;
    uint8_t buf[XFER_MANIFEST_MAX_SIZE];
    ck_assert_int_eq(xfer_manifest_encode(&m, buf, sizeof(buf)), -EINVAL);
    world_free(&w);
}
END_TEST

START_TEST(test_unavailable_and_transient)
{
    struct world w;
    world_init(&w, 100, 10);
    struct vs_u128 nonce = {90, 0};
    uint8_t t[VS_HEADER_SIZE];
    xfer_fetch_arm(&w.f, nonce, PRIMARY);
    size_t tn =
        xfer_serve_unavailable(&w.s, t, nonce, XFER_NO_SNAPSHOT, 1, 1, 1);
    ck_assert_int_eq(xfer_fetch_on_target(&w.f, PRIMARY, t, tn), XFER_TAKEN);
    ck_assert_int_eq(w.f.stage, XFER_AWAITING_TARGET); /* transient: retry */
    uint8_t req[VS_HEADER_SIZE], peer;
    ck_assert_int_eq(xfer_fetch_pop(&w.f, req, &peer), 0);
    for (int i = 0; i < 10; i++)
        xfer_fetch_tick(&w.f);
    ck_assert_int_eq(xfer_fetch_pop(&w.f, req, &peer), 1);
    tn = xfer_serve_unavailable(&w.s, t, nonce, XFER_SNAPSHOT_UNREADABLE, 0, 1,
                                1);
    ck_assert_int_eq(xfer_fetch_on_target(&w.f, PRIMARY, t, tn), XFER_TAKEN);
    ck_assert_int_eq(w.f.stage, XFER_IDLE);
    ck_assert_ptr_nonnull(strstr(w.f.reason, "snapshot unreadable"));
    /* nobody answers at all: the budget ends the session */
    xfer_fetch_arm(&w.f, (struct vs_u128){91, 0}, PRIMARY);
    for (int i = 0; i < 100 && w.f.stage != XFER_IDLE; i++) {
        while (xfer_fetch_pop(&w.f, req, &peer))
            ;
        xfer_fetch_tick(&w.f);
    }
    ck_assert_int_eq(w.f.stage, XFER_IDLE);
    ck_assert_ptr_nonnull(strstr(w.f.reason, "no answer"));
    world_free(&w);
}
END_TEST

START_TEST(test_decode_failures_per_generation)
{
    struct world w;
    world_init(&w, 300, 30);
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    uint32_t max = w.f.o.decode_failures_max;
    for (uint32_t i = 0; i < max; i++) {
        xfer_fetch_arm(&w.f, (struct vs_u128){100 + i, 0}, PRIMARY);
        run(&w, &m, 100);
        ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
        xfer_fetch_install_failed(&w.f, 1, "decode failed");
    }
    ck_assert_uint_eq(w.f.stats.decode_failures, max);
    /* the same generation is now refused at once */
    xfer_fetch_arm(&w.f, (struct vs_u128){200, 0}, PRIMARY);
    run(&w, &m, 100);
    ck_assert_int_eq(w.f.stage, XFER_IDLE);
    ck_assert_uint_ge(w.f.stats.drops[XFER_DROP_GENERATION], 1);
    ck_assert_ptr_nonnull(strstr(w.f.reason, "refused after"));
    /* a newer generation (the peer checkpointed again) is accepted */
    w.snap_op = 70;
    m = manifest_of(w.art[0], w.art_len[0], w.snap_op, w.art[1], w.art_len[1],
                    w.commit);
    xfer_fetch_arm(&w.f, (struct vs_u128){201, 0}, PRIMARY);
    run(&w, &m, 100);
    ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
    xfer_fetch_installed(&w.f);
    ck_assert_uint_eq(w.f.stats.completed, 1);
    world_free(&w);
}
END_TEST

START_TEST(test_empty_table_artifact)
{
    struct world w;
    world_init(&w, 700, 0);
    struct xfer_manifest m =
        manifest_of(w.art[0], w.art_len[0], w.snap_op, w.art[1], 0, w.commit);
    xfer_fetch_arm(&w.f, (struct vs_u128){300, 0}, PRIMARY);
    run(&w, &m, 100);
    ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
    uint64_t len, fr;
    ck_assert_ptr_nonnull(
        xfer_fetch_artifact(&w.f, XFER_KIND_CLIENT_TABLE, &len, &fr));
    ck_assert_uint_eq(len, 0);
    world_free(&w);
}
END_TEST

START_TEST(test_offer_lost_while_fetching)
{
    struct world w;
    world_init(&w, 5000, 10);
    struct xfer_manifest m = manifest_of(w.art[0], w.art_len[0], w.snap_op,
                                         w.art[1], w.art_len[1], w.commit);
    struct vs_u128 nonce = {400, 0};
    uint64_t replaced;
    const struct xfer_offer *o = xfer_serve_offer(
        &w.s, LAGGER, nonce, &m, w.commit, w.commit, &replaced);
    xfer_fetch_arm(&w.f, nonce, PRIMARY);
    ck_assert_int_eq(
        xfer_fetch_on_target(&w.f, PRIMARY, o->target, o->target_len),
        XFER_TAKEN);
    ck_assert_int_eq(w.f.stage, XFER_FETCHING);
    /* the server expired our offer: "unknown session" starts over */
    uint8_t t[VS_HEADER_SIZE];
    size_t tn =
        xfer_serve_unavailable(&w.s, t, nonce, XFER_UNKNOWN_SESSION, 0, 1, 1);
    ck_assert_int_eq(xfer_fetch_on_target(&w.f, PRIMARY, t, tn), XFER_TAKEN);
    ck_assert_int_eq(w.f.stage, XFER_AWAITING_TARGET);
    ck_assert_uint_eq(w.f.nonce.lo, 400);
    ck_assert_ptr_null(w.f.bytes[0]);
    /* the retried request gets a (new) offer and the fetch completes */
    run(&w, &m, 1000);
    ck_assert_int_eq(w.f.stage, XFER_INSTALLING);
    assert_installed_bytes(&w);
    /* any other reason while Fetching ends the session */
    xfer_fetch_installed(&w.f);
    struct vs_u128 n2 = {401, 0};
    o = xfer_serve_offer(&w.s, LAGGER, n2, &m, w.commit, w.commit, &replaced);
    xfer_fetch_arm(&w.f, n2, PRIMARY);
    xfer_fetch_on_target(&w.f, PRIMARY, o->target, o->target_len);
    tn = xfer_serve_unavailable(&w.s, t, n2, XFER_SNAPSHOT_UNREADABLE, 0, 1, 1);
    ck_assert_int_eq(xfer_fetch_on_target(&w.f, PRIMARY, t, tn), XFER_TAKEN);
    ck_assert_int_eq(w.f.stage, XFER_IDLE);
    ck_assert_ptr_nonnull(strstr(w.f.reason, "stopped serving"));
    world_free(&w);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("vsr_xfer");
    TCase *tc = tcase_create("manifest");
    tcase_add_test(tc, test_manifest_round_trip_and_canonical);
    tcase_add_test(tc, test_manifest_every_truncation_and_flip);
    tcase_add_test(tc, test_manifest_rules);
    tcase_add_test(tc, test_frames_exact_sizes_and_fields);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("transfer");
    tcase_add_test(tt, test_transfer_converges);
    tcase_add_test(tt, test_loss_and_corrupt_chunk_recover_by_stall);
    tcase_add_test(tt, test_corruption_at_rest_refused);
    tcase_add_test(tt, test_misplaced_chunks_stall_then_give_up_on_peer);
    tcase_add_test(tt, test_zero_byte_chunks_never_reset_counters);
    tcase_add_test(tt, test_first_wins_and_delayed_duplicate_target);
    tcase_add_test(tt, test_serve_refuses_end_and_unknown);
    tcase_add_test(tt, test_fully_served_offer_expires_sooner);
    tcase_add_test(tt, test_wrong_stage_peer_nonce_dropped);
    tcase_add_test(tt, test_overrun_and_manifest_rules_on_fetch);
    tcase_add_test(tt, test_checkpoint_prepare_artifact_rules);
    tcase_add_test(tt, test_unavailable_and_transient);
    tcase_add_test(tt, test_decode_failures_per_generation);
    tcase_add_test(tt, test_empty_table_artifact);
    tcase_add_test(tt, test_offer_lost_while_fetching);
    suite_add_tcase(s, tt);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
