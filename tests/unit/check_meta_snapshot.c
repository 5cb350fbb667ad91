/*
 * tests/unit/check_meta_snapshot.c - snapshot codec: round trip, equal
 * states encode to equal bytes, the golden file of format 1 decodes and
 * re-encodes byte-identically, unknown versions are refused, capacity
 * checks, and decoder robustness (every truncation and thousands of byte
 * flips of a snapshot and of an ICT2 blob give a typed error or a valid
 * state, never a crash).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/layout.h"
#include "shard/meta/lookup.h"
#include "shard/meta/snapshot_codec.h"
#include "meta_fixture.h"

#define GOLDEN    "fixtures/meta_snapshot_v2.bin"
#define GOLDEN_V1 "fixtures/meta_snapshot_v1.bin" /* the older format */

static void *st;
static struct th_run run;
static struct meta_caps caps;
static struct meta_client_table ct;
static struct vs_wbuf enc;

static void
setup(void)
{
    th_caps(&caps);
    caps.nodes = 3;
    st = th_state(&caps);
    th_run_init(&run);
    meta_ct_init(&ct);
    fx_build(st, &run, &ct);
    vs_wbuf_init(&enc);
    ck_assert_int_eq(meta_snapshot_encode(st, &ct, &enc), 0);
}

static void
teardown(void)
{
    vs_wbuf_fini(&enc);
    meta_ct_fini(&ct);
    meta_result_fini(&run.res);
    free(st);
}

START_TEST(test_roundtrip)
{
    struct vs_snapshot_prefix pre;
    ck_assert_int_eq(vs_snapshot_prefix_read(enc.data, enc.len, &pre), 0);
    ck_assert_uint_eq(pre.format_version, 2);
    ck_assert_uint_eq(pre.op, run.op);
    void *s2 = th_state(&caps);
    struct meta_client_table ct2;
    meta_ct_init(&ct2);
    ck_assert_int_eq(meta_snapshot_decode(enc.data, enc.len, s2, &ct2),
                     META_SNAP_OK);
    struct vs_wbuf e2;
    vs_wbuf_init(&e2);
    ck_assert_int_eq(meta_snapshot_encode(s2, &ct2, &e2), 0);
    ck_assert_uint_eq(e2.len, enc.len);
    ck_assert_int_eq(memcmp(e2.data, enc.data, enc.len), 0);
    /* semantic spot checks */
    ck_assert_ptr_nonnull(meta_stream_by_name(s2, "gamma \xc3\xa9", 8));
    ck_assert_ptr_null(meta_stream_by_name(s2, "beta", 4));
    ck_assert_uint_eq(meta_topic_by_name(s2, 0, "events2", 7)->opts.compression,
                      2);
    ck_assert_uint_eq(meta_assign_get(s2, 0, 0, 0, 2)->revoke_to, 1);
    ck_assert_ptr_nonnull(meta_session_by_client(s2, th_client(0xC2)));
    ck_assert_uint_eq(meta_hdr_c(s2)->dangling_grants, 1);
    /* the decoded state keeps working: apply continues identically on
     * both, stream id 1 is reused */
    struct th_run r2 = run;
    meta_result_init(&r2.res);
    ck_assert_uint_eq(th_create_stream(s2, &r2, 0, "new"), 0);
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "new"), 0);
    ck_assert_uint_eq(meta_stream_by_name(s2, "new", 3)->id, 1);
    vs_wbuf_reset(&e2);
    vs_wbuf_reset(&enc);
    meta_snapshot_encode(s2, &ct2, &e2);
    meta_snapshot_encode(st, &ct, &enc);
    ck_assert_uint_eq(e2.len, enc.len);
    ck_assert_int_eq(memcmp(e2.data, enc.data, enc.len), 0);
    meta_result_fini(&r2.res);
    vs_wbuf_fini(&e2);
    meta_ct_fini(&ct2);
    free(s2);
}
END_TEST

static uint8_t *
read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

START_TEST(test_golden)
{
    const char *dir = getenv("VS_TEST_SRCDIR");
    ck_assert_ptr_nonnull(dir);
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, GOLDEN);
    const char *w = getenv("VS_META_WRITE_GOLDEN");
    if (w && w[0] == '1') {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(enc.data, 1, enc.len, f), enc.len);
        fclose(f);
    }
    size_t len = 0;
    uint8_t *g = read_file(path, &len);
    ck_assert_msg(g != NULL, "missing %s", path);
    void *s2 = th_state(&caps);
    struct meta_client_table ct2;
    meta_ct_init(&ct2);
    ck_assert_int_eq(meta_snapshot_decode(g, len, s2, &ct2), META_SNAP_OK);
    struct vs_wbuf e2;
    vs_wbuf_init(&e2);
    meta_snapshot_encode(s2, &ct2, &e2);
    ck_assert_uint_eq(e2.len, len);
    ck_assert_int_eq(memcmp(e2.data, g, len), 0);
    ck_assert_ptr_nonnull(meta_user_by_name(s2, "alice", 5));
    ck_assert_ptr_nonnull(meta_group_by_name(s2, 0, 0, "workers", 7));
    vs_wbuf_fini(&e2);
    meta_ct_fini(&ct2);
    free(s2);
    free(g);
}
END_TEST

/* The older format (no replication factors, no replica sets) still
 * decodes: every topic gets min(3, nodes) and every partition the set
 * the placement rule decides over the decoded state in id order, the
 * same on every decode; the state re-encodes as format 2 and round-trips. */
START_TEST(test_old_format_v1)
{
    const char *dir = getenv("VS_TEST_SRCDIR");
    ck_assert_ptr_nonnull(dir);
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, GOLDEN_V1);
    size_t len = 0;
    uint8_t *g = read_file(path, &len);
    ck_assert_msg(g != NULL, "missing %s", path);
    struct vs_snapshot_prefix pre;
    ck_assert_int_eq(vs_snapshot_prefix_read(g, len, &pre), 0);
    ck_assert_uint_eq(pre.format_version, 1);
    uint32_t nodes_list[3] = {3, 1, 5};
    for (int k = 0; k < 3; k++) {
        struct meta_caps c = caps;
        c.nodes = nodes_list[k];
        void *s2 = th_state(&c);
        void *s3 = th_state(&c);
        ck_assert_int_eq(meta_snapshot_decode(g, len, s2, NULL), META_SNAP_OK);
        ck_assert_int_eq(meta_snapshot_decode(g, len, s3, NULL), META_SNAP_OK);
        uint32_t rf = c.nodes < 3 ? c.nodes : 3;
        uint32_t lead[VS_REPLICAS_MAX] = {0}, seen = 0;
        const struct meta_hdr *h = meta_hdr_c(s2);
        for (uint32_t sid = 0; sid < h->caps.streams; sid++) {
            if (!meta_stream_by_id(s2, sid))
                continue;
            for (uint32_t tid = 0; tid < 16; tid++) {
                const struct meta_topic *t = meta_topic_by_id(s2, sid, tid);
                if (!t)
                    continue;
                ck_assert_uint_eq(t->opts.replication_factor, rf);
                for (uint32_t p = 0; p < t->partitions_count; p++) {
                    const struct meta_partition *pp =
                        meta_partition_by_id(s2, sid, tid, p);
                    ck_assert_uint_eq(pp->replica_count, rf);
                    for (uint32_t i = 0; i < rf; i++)
                        ck_assert_uint_eq(pp->replicas[i],
                                          (pp->replicas[0] + i) % c.nodes);
                    lead[pp->replicas[0]]++;
                    seen++;
                }
            }
        }
        ck_assert_uint_eq(seen, 6); /* the fixture's partitions */
        uint32_t lo = UINT32_MAX, hi = 0;
        for (uint32_t i = 0; i < c.nodes; i++) {
            ck_assert_uint_eq(h->leaders[i], lead[i]);
            lo = lead[i] < lo ? lead[i] : lo;
            hi = lead[i] > hi ? lead[i] : hi;
        }
        ck_assert_uint_le(hi - lo, 1);
        struct vs_wbuf e2, e3;
        vs_wbuf_init(&e2);
        vs_wbuf_init(&e3);
        meta_snapshot_encode(s2, NULL, &e2);
        meta_snapshot_encode(s3, NULL, &e3);
        ck_assert_uint_eq(e2.len, e3.len);
        ck_assert_int_eq(memcmp(e2.data, e3.data, e2.len), 0);
        ck_assert_uint_eq(vs_load_u32(e2.data), 2);
        ck_assert_int_eq(meta_snapshot_decode(e2.data, e2.len, s3, NULL),
                         META_SNAP_OK);
        vs_wbuf_reset(&e3);
        meta_snapshot_encode(s3, NULL, &e3);
        ck_assert_uint_eq(e2.len, e3.len);
        ck_assert_int_eq(memcmp(e2.data, e3.data, e2.len), 0);
        /* with 3 nodes the fixture's topics, created in id order by
         * CreateTopic only, get the sets the live state holds */
        if (c.nodes == 3) {
            vs_wbuf_reset(&e3);
            meta_snapshot_encode(st, NULL, &e3);
            ck_assert_uint_eq(e2.len, e3.len);
            ck_assert_int_eq(memcmp(e2.data + 12, e3.data + 12, e2.len - 12),
                             0);
        }
        vs_wbuf_fini(&e2);
        vs_wbuf_fini(&e3);
        free(s2);
        free(s3);
    }
    free(g);
}
END_TEST

START_TEST(test_version_and_prefix)
{
    void *s2 = th_state(&caps);
    uint8_t *c = malloc(enc.len);
    memcpy(c, enc.data, enc.len);
    vs_store_u32(c, 3);
    ck_assert_int_eq(meta_snapshot_decode(c, enc.len, s2, NULL),
                     META_SNAP_BAD_VERSION);
    vs_store_u32(c, 0);
    ck_assert_int_eq(meta_snapshot_decode(c, enc.len, s2, NULL),
                     META_SNAP_BAD_VERSION);
    /* a format-2 body under a format-1 prefix does not decode */
    vs_store_u32(c, 1);
    ck_assert_int_ne(meta_snapshot_decode(c, enc.len, s2, NULL), META_SNAP_OK);
    vs_store_u32(c, 2);
    vs_store_u64(c + 4, 999);
    ck_assert_int_eq(meta_snapshot_decode(c, enc.len, s2, NULL),
                     META_SNAP_OP_MISMATCH);
    ck_assert_int_eq(meta_snapshot_decode(c, 11, s2, NULL),
                     META_SNAP_TRUNCATED);
    free(c);
    uint8_t *t = malloc(enc.len + 1);
    memcpy(t, enc.data, enc.len);
    t[enc.len] = 0xc0;
    ck_assert_int_eq(meta_snapshot_decode(t, enc.len + 1, s2, NULL),
                     META_SNAP_TRAILING);
    free(t);
    free(s2);
}
END_TEST

START_TEST(test_capacity_checked)
{
    struct meta_caps small = caps;
    small.partitions = 4; /* the fixture holds 6 */
    void *s2 = th_state(&small);
    ck_assert_int_eq(meta_snapshot_decode(enc.data, enc.len, s2, NULL),
                     META_SNAP_OVER_CAPACITY);
    /* a failed decode leaves an empty, valid instance */
    ck_assert_ptr_null(meta_stream_by_id(s2, 0));
    ck_assert_uint_eq(meta_hdr_c(s2)->count[META_TAB_PARTITION], 0);
    free(s2);
}
END_TEST

static uint64_t rng_state;

static uint64_t
rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Decodes; if OK the result must re-encode and decode again. */
static int
try_decode(void *s2, struct meta_client_table *c2, const uint8_t *p, size_t n)
{
    enum meta_snap_status s = meta_snapshot_decode(p, n, s2, c2);
    ck_assert(s <= META_SNAP_BAD_STATE);
    ck_assert_str_ne(meta_snap_status_str(s), "unknown snapshot status");
    if (s == META_SNAP_OK) {
        struct vs_wbuf e;
        vs_wbuf_init(&e);
        meta_snapshot_encode(s2, c2, &e);
        void *s3 = th_state(&caps);
        ck_assert_int_eq(meta_snapshot_decode(e.data, e.len, s3, NULL),
                         META_SNAP_OK);
        free(s3);
        vs_wbuf_fini(&e);
    }
    return s == META_SNAP_OK;
}

START_TEST(test_truncations_and_flips)
{
    void *s2 = th_state(&caps);
    struct meta_client_table c2;
    meta_ct_init(&c2);
    for (size_t n = 0; n < enc.len; n++) {
        uint8_t *p = malloc(n ? n : 1); /* exact size: ASan sees overreads */
        memcpy(p, enc.data, n);
        ck_assert_int_eq(try_decode(s2, &c2, p, n), 0);
        free(p);
    }
    rng_state = 0x9e3779b97f4a7c15ull;
    int ok = 0;
    uint8_t *p = malloc(enc.len);
    for (int i = 0; i < 4000; i++) {
        memcpy(p, enc.data, enc.len);
        int flips = 1 + (int)(rng() % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = VS_SNAPSHOT_PREFIX_SIZE +
                        rng() % (enc.len - VS_SNAPSHOT_PREFIX_SIZE);
            p[at] ^= (uint8_t)(1u + rng() % 255);
        }
        ok += try_decode(s2, &c2, p, enc.len);
    }
    free(p);
    /* most flips must be caught; some land in free-form values */
    ck_assert_int_lt(ok, 4000);
    meta_ct_fini(&c2);
    free(s2);
}
END_TEST

static int
ict2_try(const uint8_t *p, size_t n)
{
    struct meta_ct_image img;
    int rc = meta_ct_transfer_decode(p, n, &img);
    ck_assert(rc == 0 || rc == -EPROTO || rc == -EINVAL || rc == -EBADMSG);
    if (rc == 0) {
        struct meta_caps c = caps;
        void *s2 = th_state(&c);
        ck_assert_int_eq(meta_ct_install_sessions(s2, &img), 0);
        meta_ct_image_fini(&img);
        free(s2);
    }
    return rc;
}

static void
reseal(uint8_t *p, size_t n)
{
    vs_store_u64(p + n - 8, vs_xxh3_64(p, n - 8));
}

START_TEST(test_ict2_roundtrip_and_robustness)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    ck_assert_int_eq(meta_ct_transfer_encode_version(&ct, st, &w, 2), 0);
    ck_assert_int_eq(memcmp(w.data, "ICT2", 4), 0);
    ck_assert_uint_eq(vs_load_u32(w.data + 4), 2);
    struct meta_ct_image img;
    ck_assert_int_eq(meta_ct_transfer_decode(w.data, w.len, &img), 0);
    ck_assert_uint_eq(img.count, 2);
    ck_assert_uint_eq(img.e[0].client.lo, 0xC1);
    ck_assert_uint_eq(img.e[0].ring_len, 5);
    ck_assert_uint_eq(img.e[1].ring_len, 1); /* Register is never cached */
    ck_assert_uint_eq(img.e[0].watermark, 5);
    meta_ct_image_fini(&img);
    for (size_t n = 0; n < w.len; n++) {
        uint8_t *p = malloc(n ? n : 1);
        memcpy(p, w.data, n);
        ck_assert_int_ne(ict2_try(p, n), 0);
        if (n >= 16) {
            reseal(p, n);
            ck_assert_int_ne(ict2_try(p, n), 0);
        }
        free(p);
    }
    rng_state = 0x1234567ull;
    uint8_t *p = malloc(w.len);
    for (int i = 0; i < 3000; i++) {
        memcpy(p, w.data, w.len);
        size_t at = rng() % (w.len - 8);
        p[at] ^= (uint8_t)(1u + rng() % 255);
        int rc = ict2_try(p, w.len);
        /* a flipped magic byte may spell "ICT3": then the checksum */
        if (at < 4)
            ck_assert(rc == -EPROTO || rc == -EBADMSG);
        else
            ck_assert_int_eq(rc, -EBADMSG);
        reseal(p, w.len);
        ict2_try(p, w.len);
    }
    /* duplicate client ids are refused */
    memcpy(p, w.data, w.len);
    size_t e1 = 8; /* first entry's client */
    size_t ring0 = e1 + 16 + 8 + 4 + 8 + 16;
    size_t off = ring0 + 1;
    for (unsigned k = 0; k < p[ring0]; k++)
        off += 4 + vs_load_u32(p + off);
    memcpy(p + off, p + e1, 16);
    reseal(p, w.len);
    ck_assert_int_eq(ict2_try(p, w.len), -EINVAL);
    /* an empty ring is refused */
    memcpy(p, w.data, w.len);
    p[ring0] = 0;
    reseal(p, w.len);
    ck_assert_int_ne(ict2_try(p, w.len), 0);
    memcpy(p, w.data, w.len);
    p[ring0] = 6;
    reseal(p, w.len);
    ck_assert_int_ne(ict2_try(p, w.len), 0);
    free(p);
    vs_wbuf_fini(&w);
}
END_TEST

/* Sessions in slots 0, 1 and 3 (slot 2 freed by a logout). */
static void
sparse_sessions(void)
{
    fx_register(st, &run, &ct, 0xC3, 0);
    fx_register(st, &run, &ct, 0xC4, 0);
    struct meta_op op;
    meta_op_init(&op, VS_OP_LOGOUT);
    ck_assert_uint_eq(th_apply_full(st, &run, 0, th_client(0xC3), 1, &op), 0);
    ck_assert_ptr_null(meta_session_at(st, 2));
    ck_assert_ptr_nonnull(meta_session_at(st, 3));
}

/* encode(primary) -> decode -> install -> snapshot: the same bytes as the
 * primary's snapshot; the packed ICT2 path would not give them. */
START_TEST(test_ict3_checkpoints_same_bytes)
{
    sparse_sessions();
    struct vs_wbuf prim, w3, w2, got;
    vs_wbuf_init(&prim);
    vs_wbuf_init(&w3);
    vs_wbuf_init(&w2);
    vs_wbuf_init(&got);
    ck_assert_int_eq(meta_snapshot_encode(st, &ct, &prim), 0);
    ck_assert_int_eq(meta_ct_transfer_encode(&ct, st, &w3), 0);
    ck_assert_int_eq(memcmp(w3.data, "ICT3", 4), 0);
    ck_assert_int_eq(meta_ct_transfer_encode_version(&ct, st, &w2, 2), 0);
    ck_assert_int_eq(meta_ct_transfer_encode_version(&ct, st, &w2, 4), -EINVAL);

    struct meta_caps c = caps;
    void *s2 = th_state(&c);
    struct meta_client_table ct2;
    meta_ct_init(&ct2);
    ck_assert_int_eq(meta_snapshot_decode(prim.data, prim.len, s2, &ct2),
                     META_SNAP_OK);
    /* the old form packs the slots and resets created_op */
    struct meta_ct_image img;
    ck_assert_int_eq(meta_ct_transfer_decode(w2.data, w2.len, &img), 0);
    ck_assert_uint_eq(img.version, 2);
    ck_assert_int_eq(meta_ct_install_sessions(s2, &img), 0);
    meta_ct_install_replies(&ct2, s2, &img);
    meta_ct_image_fini(&img);
    ck_assert_int_eq(meta_snapshot_encode(s2, &ct2, &got), 0);
    ck_assert(got.len != prim.len || memcmp(got.data, prim.data, got.len));
    ck_assert_ptr_nonnull(meta_session_at(s2, 2));

    /* ICT3 restores slot positions and every field */
    ck_assert_int_eq(meta_ct_transfer_decode(w3.data, w3.len, &img), 0);
    ck_assert_uint_eq(img.version, 3);
    ck_assert_uint_eq(img.count, 3);
    ck_assert_uint_eq(img.e[2].slot, 3);
    ck_assert_int_eq(meta_ct_install_sessions(s2, &img), 0);
    meta_ct_install_replies(&ct2, s2, &img);
    meta_ct_image_fini(&img);
    ck_assert_ptr_null(meta_session_at(s2, 2));
    got.len = 0;
    ck_assert_int_eq(meta_snapshot_encode(s2, &ct2, &got), 0);
    ck_assert_uint_eq(got.len, prim.len);
    ck_assert_int_eq(memcmp(got.data, prim.data, got.len), 0);
    for (uint32_t i = 0; i < 4; i++) {
        const struct meta_session *a = meta_session_at(st, i);
        const struct meta_session *b = meta_session_at(s2, i);
        ck_assert((a == NULL) == (b == NULL));
        if (a) {
            ck_assert_uint_eq(a->created_op, b->created_op);
            ck_assert_uint_eq(a->latest_commit, b->latest_commit);
        }
    }
    meta_ct_fini(&ct2);
    free(s2);
    vs_wbuf_fini(&prim);
    vs_wbuf_fini(&w3);
    vs_wbuf_fini(&w2);
    vs_wbuf_fini(&got);
}
END_TEST

/* ICT3's decoder is strict: every prefix, every flip, and each field
 * rule (ascending slots, created_op <= epoch <= latest_commit). */
START_TEST(test_ict3_robustness)
{
    sparse_sessions();
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    ck_assert_int_eq(meta_ct_transfer_encode(&ct, st, &w), 0);
    for (size_t n = 0; n < w.len; n++) {
        uint8_t *p = malloc(n ? n : 1);
        memcpy(p, w.data, n);
        ck_assert_int_ne(ict2_try(p, n), 0);
        if (n >= 16) {
            reseal(p, n);
            ck_assert_int_ne(ict2_try(p, n), 0);
        }
        free(p);
    }
    uint8_t *p = malloc(w.len);
    rng_state = 0x7654321ull;
    for (int i = 0; i < 2000; i++) {
        memcpy(p, w.data, w.len);
        size_t at = rng() % (w.len - 8);
        p[at] ^= (uint8_t)(1u + rng() % 255);
        int rc = ict2_try(p, w.len);
        ck_assert(rc == -EPROTO || rc == -EBADMSG);
    }
    /* entry 0: slot at 8, client 12, epoch 28, user 36, watermark 40,
     * wm checksum 48, created_op 64, latest_commit 72 */
    memcpy(p, w.data, w.len);
    vs_store_u32(p + 8, 5); /* above the next entry's slot */
    reseal(p, w.len);
    ck_assert_int_eq(ict2_try(p, w.len), -EINVAL);
    memcpy(p, w.data, w.len);
    vs_store_u64(p + 64, vs_load_u64(p + 28) + 1); /* created after epoch */
    reseal(p, w.len);
    ck_assert_int_eq(ict2_try(p, w.len), -EINVAL);
    memcpy(p, w.data, w.len);
    vs_store_u64(p + 64, 0);
    reseal(p, w.len);
    ck_assert_int_eq(ict2_try(p, w.len), -EINVAL);
    memcpy(p, w.data, w.len);
    vs_store_u64(p + 72, vs_load_u64(p + 28) - 1); /* commit before epoch */
    reseal(p, w.len);
    ck_assert_int_eq(ict2_try(p, w.len), -EINVAL);
    memcpy(p, w.data, w.len);
    ck_assert_int_eq(ict2_try(p, w.len), 0);
    free(p);
    vs_wbuf_fini(&w);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("meta_snapshot");
    TCase *tc = tcase_create("snapshot");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_golden);
    tcase_add_test(tc, test_old_format_v1);
    tcase_add_test(tc, test_version_and_prefix);
    tcase_add_test(tc, test_capacity_checked);
    tcase_add_test(tc, test_truncations_and_flips);
    tcase_add_test(tc, test_ict2_roundtrip_and_robustness);
    tcase_add_test(tc, test_ict3_checkpoints_same_bytes);
    tcase_add_test(tc, test_ict3_robustness);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
