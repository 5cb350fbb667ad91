/*
 * tests/unit/check_meta_apply.c - the metadata state machine: ids and
 * their reuse, names, limits, error codes, grants that die with their
 * stream/topic, users, PATs, consumer groups and the permission model
 * (each permission allows exactly what it names).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "shard/meta/authz.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/secrets.h"
#include "meta_helpers.h"

static void *st;
static struct th_run run;
static struct meta_caps caps;

static void
setup(void)
{
    th_caps(&caps);
    st = th_state(&caps);
    th_run_init(&run);
    ck_assert_uint_eq(th_genesis(st, &run), 0);
}

static void
teardown(void)
{
    meta_result_fini(&run.res);
    free(st);
}

START_TEST(test_empty_and_genesis)
{
    const struct meta_user *root = meta_user_by_id(st, 0);
    ck_assert_ptr_nonnull(root);
    ck_assert_uint_eq(root->global, META_G_ALL);
    ck_assert_ptr_nonnull(meta_user_by_name(st, "iggy", 4));
    ck_assert_uint_eq(th_genesis(st, &run), VS_E_USER_ALREADY_EXISTS);
    /* an all-zero table area with a header is empty */
    void *z = th_state(&caps);
    ck_assert_ptr_null(meta_user_by_id(z, 0));
    ck_assert_ptr_null(meta_stream_by_id(z, 0));
    ck_assert_ptr_null(meta_stream_by_name(z, "a", 1));
    free(z);
}
END_TEST

START_TEST(test_stream_ids_reused_smallest_free)
{
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s0"), 0);
    ck_assert_uint_eq(vs_load_u32(run.res.payload.data), 0);
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s1"), 0);
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s2"), 0);
    uint64_t old_op = meta_stream_by_id(st, 1)->created_op;
    struct meta_op op;
    meta_op_init(&op, VS_OP_DELETE_STREAM);
    meta_ident_name(&op.stream, "s1", 2);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_ptr_null(meta_stream_by_id(st, 1));
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "again"), 0);
    const struct meta_stream *s = meta_stream_by_id(st, 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_ne(s->created_op, old_op);
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "again"),
                      VS_E_STREAM_NAME_ALREADY_EXISTS);
    ck_assert_uint_eq(th_create_stream(st, &run, 0, ""), VS_E_INVALID_COMMAND);
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "\xff\xfe"),
                      VS_E_INVALID_COMMAND);
    for (int i = 3; i < 8; i++) {
        char n[8];
        n[0] = 'x';
        n[1] = (char)('0' + i);
        n[2] = 0;
        ck_assert_uint_eq(th_create_stream(st, &run, 0, n), 0);
    }
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "full"),
                      VS_E_TOO_MANY_STREAMS);
}
END_TEST

START_TEST(test_topics_partitions_group_ids)
{
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s"), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t0", 3), 0);
    /* reply: TopicHeader then 3 PartitionRecords of 40 bytes */
    const uint8_t *p = run.res.payload.data;
    ck_assert_uint_eq(vs_load_u32(p), 0);
    ck_assert_uint_eq(vs_load_u32(p + 12), 3);
    ck_assert_uint_eq(p[49], 2); /* name_len */
    ck_assert_int_eq(memcmp(p + 50, "t0", 2), 0);
    uint32_t el = vs_load_u32(p + 52);
    ck_assert_uint_eq(el, 0); /* no explicit options */
    uint32_t dl = vs_load_u32(p + 56);
    ck_assert_uint_eq(run.res.payload.len, 60 + dl + 3 * 40);
    ck_assert_uint_eq(vs_load_u32(p + 60 + dl + 40), 1);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t0", 1),
                      VS_E_TOPIC_NAME_ALREADY_EXISTS);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 5, "t9", 1),
                      VS_E_STREAM_ID_NOT_FOUND);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t1", 1001),
                      VS_E_TOO_MANY_PARTITIONS);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t1", 0), 0);
    const struct meta_partition *pp = meta_partition_by_id(st, 0, 0, 2);
    ck_assert_ptr_nonnull(pp);
    ck_assert_uint_eq(meta_group_id(0, 0, 2), 2);
    ck_assert_uint_eq(meta_group_id(3, 5, 7),
                      (UINT64_C(3) << 32) | (5u << 20) | 7u);
    uint32_t sh = meta_partition_owner(pp, 4);
    ck_assert(sh >= 1 && sh <= 4);
    ck_assert_uint_eq(sh, meta_partition_owner(pp, 4));
    /* create/delete partitions */
    struct meta_op op;
    meta_op_init(&op, VS_OP_DELETE_PARTITIONS);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    op.count = 4;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op),
                      VS_E_INVALID_PARTITIONS_COUNT);
    op.count = 0;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_TOO_MANY_PARTITIONS);
    op.count = 2;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_ptr_null(meta_partition_by_id(st, 0, 0, 1));
    ck_assert_ptr_nonnull(meta_partition_by_id(st, 0, 0, 0));
    op.operation = VS_OP_CREATE_PARTITIONS;
    op.count = 2;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_ptr_nonnull(meta_partition_by_id(st, 0, 0, 2));
    ck_assert_uint_eq(meta_topic_by_id(st, 0, 0)->partitions_count, 3);
    /* topic deletion frees its id for reuse */
    meta_op_init(&op, VS_OP_DELETE_TOPIC);
    meta_ident_id(&op.stream, 0);
    meta_ident_name(&op.topic, "t0", 2);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t2", 1), 0);
    ck_assert_ptr_nonnull(meta_topic_by_name(st, 0, "t2", 2));
    ck_assert_uint_eq(meta_topic_by_name(st, 0, "t2", 2)->id, 0);
    /* DeleteSegments: the watermark only rises */
    meta_op_init(&op, VS_OP_DELETE_SEGMENTS);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    op.partition_id = 0;
    op.offset = 50;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    op.offset = 20;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(meta_partition_by_id(st, 0, 0, 0)->deleted_up_to_offset,
                      50);
    op.partition_id = 9;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_PARTITION_NOT_FOUND);
}
END_TEST

/* Permissions blob: global bits, one stream grant with one topic grant. */
static size_t
perms_blob(uint8_t *b, uint16_t global, int with_stream, uint32_t sid,
           uint8_t sbits, int with_topic, uint32_t tid, uint8_t tbits)
{
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        b[n++] = (global >> i) & 1;
    b[n++] = with_stream ? 1 : 0;
    if (with_stream) {
        vs_store_u32(b + n, sid);
        n += 4;
        for (int i = 0; i < 6; i++)
            b[n++] = (sbits >> i) & 1;
        b[n++] = with_topic ? 1 : 0;
        if (with_topic) {
            vs_store_u32(b + n, tid);
            n += 4;
            for (int i = 0; i < 4; i++)
                b[n++] = (tbits >> i) & 1;
            b[n++] = 0;
        }
        b[n++] = 0;
    }
    return n;
}

START_TEST(test_grants_die_with_stream_and_topic)
{
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s"), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t", 1), 0);
    uint8_t b[64];
    size_t n =
        perms_blob(b, 0, 1, 0, META_S_MANAGE_STREAM, 1, 0, META_T_MANAGE_TOPIC);
    ck_assert_uint_eq(th_create_user(st, &run, 0, "alice", b, (uint32_t)n), 0);
    ck_assert(meta_authz_check(st, 1, META_ACT_MANAGE_STREAM, 0, META_NONE));
    struct meta_op op;
    meta_op_init(&op, VS_OP_DELETE_STREAM);
    meta_ident_id(&op.stream, 0);
    ck_assert_uint_eq(th_apply(st, &run, 1, &op), 0); /* alice may */
    ck_assert_ptr_null(meta_sgrant_get(st, 1, 0));
    ck_assert_ptr_null(meta_tgrant_get(st, 1, 0, 0));
    /* a new stream reusing id 0 does not inherit alice's grant */
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "other"), 0);
    ck_assert_uint_eq(meta_stream_by_name(st, "other", 5)->id, 0);
    ck_assert(!meta_authz_check(st, 1, META_ACT_MANAGE_STREAM, 0, META_NONE));
    ck_assert_uint_eq(th_apply(st, &run, 1, &op), VS_E_UNAUTHORIZED);
    /* a grant for a stream that does not exist yet never applies to the
     * stream created later with that id */
    n = perms_blob(b, 0, 1, 1, META_S_MANAGE_STREAM, 0, 0, 0);
    meta_op_init(&op, VS_OP_UPDATE_PERMISSIONS);
    meta_ident_id(&op.user, 1);
    op.has_perms = 1;
    op.perms = b;
    op.perms_len = (uint32_t)n;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_ptr_nonnull(meta_sgrant_get(st, 1, 1));
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "later"), 0);
    ck_assert_ptr_null(meta_sgrant_get(st, 1, 1));
    ck_assert(!meta_authz_check(st, 1, META_ACT_MANAGE_STREAM, 1, META_NONE));
    /* topic grant dies with its topic, the stream grant stays */
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t", 1), 0);
    n = perms_blob(b, 0, 1, 0, META_S_READ_STREAM, 1, 0, META_T_SEND_MESSAGES);
    op.perms_len = (uint32_t)n;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert(meta_authz_check(st, 1, META_ACT_SEND, 0, 0));
    meta_op_init(&op, VS_OP_DELETE_TOPIC);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_ptr_null(meta_tgrant_get(st, 1, 0, 0));
    ck_assert_ptr_nonnull(meta_sgrant_get(st, 1, 0));
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t", 1), 0);
    ck_assert(!meta_authz_check(st, 1, META_ACT_SEND, 0, 0));
}
END_TEST

START_TEST(test_users)
{
    ck_assert_uint_eq(th_create_user(st, &run, 0, "ab", NULL, 0),
                      VS_E_INVALID_USERNAME);
    ck_assert_uint_eq(th_create_user(st, &run, 0, "bob", NULL, 0), 0);
    /* UserDetails without permissions: record + 4 zero bytes */
    ck_assert_uint_eq(run.res.payload.len, 14 + 3 + 4 + 4);
    ck_assert_uint_eq(vs_load_u32(run.res.payload.data), 1);
    ck_assert_uint_eq(th_create_user(st, &run, 0, "bob", NULL, 0),
                      VS_E_USER_ALREADY_EXISTS);
    /* bob has no rights */
    ck_assert_uint_eq(th_create_user(st, &run, 1, "carol", NULL, 0),
                      VS_E_UNAUTHORIZED);
    ck_assert_uint_eq(th_create_stream(st, &run, 1, "x"), VS_E_UNAUTHORIZED);
    struct meta_op op;
    meta_op_init(&op, VS_OP_DELETE_USER);
    meta_ident_id(&op.user, 0);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_CANNOT_DELETE_USER);
    meta_op_init(&op, VS_OP_UPDATE_PERMISSIONS);
    meta_ident_id(&op.user, 0);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op),
                      VS_E_CANNOT_CHANGE_PERMISSIONS);
    meta_ident_id(&op.user, 7);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_RESOURCE_NOT_FOUND);
    /* change own password: needs the verified current hash */
    meta_op_init(&op, VS_OP_CHANGE_PASSWORD);
    meta_ident_name(&op.user, "bob", 3);
    meta_op_set_secret(&op, "$argon2id$new", 13);
    memcpy(op.secret2, "$argon2id$bad", 13);
    op.secret2_len = 13;
    ck_assert_uint_eq(th_apply(st, &run, 1, &op), VS_E_INVALID_CREDENTIALS);
    memcpy(op.secret2, "$argon2id$v=19$m=8,t=1,p=1$x$y", 30);
    op.secret2_len = 30;
    ck_assert_uint_eq(th_apply(st, &run, 1, &op), 0);
    ck_assert_str_eq(meta_user_by_id(st, 1)->pw_hash, "$argon2id$new");
    /* rename and deactivate */
    meta_op_init(&op, VS_OP_UPDATE_USER);
    meta_ident_id(&op.user, 1);
    op.has_name = 1;
    meta_op_set_name(&op, "robert", 6);
    op.has_status = 1;
    op.status = 2;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_ptr_null(meta_user_by_name(st, "bob", 3));
    ck_assert_uint_eq(meta_user_by_name(st, "robert", 6)->status, 2);
    meta_op_init(&op, VS_OP_DELETE_USER);
    meta_ident_id(&op.user, 1);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(th_create_user(st, &run, 0, "dave", NULL, 0), 0);
    ck_assert_uint_eq(meta_user_by_name(st, "dave", 4)->id, 1);
}
END_TEST

START_TEST(test_pats)
{
    struct meta_op op;
    uint8_t dg[32];
    meta_op_init(&op, VS_OP_CREATE_PAT);
    for (int i = 0; i < 16; i++) {
        char name[8] = "pat";
        name[3] = (char)('a' + i);
        meta_op_set_name(&op, name, 4);
        memset(dg, i + 1, 32);
        meta_op_set_secret(&op, dg, 32);
        op.expiry = 0;
        ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
        ck_assert_uint_eq(run.res.payload.len, 0); /* no token in apply */
    }
    meta_op_set_name(&op, "more", 4);
    memset(dg, 0x77, 32);
    meta_op_set_secret(&op, dg, 32);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_PAT_LIMIT_REACHED);
    meta_op_init(&op, VS_OP_DELETE_PAT);
    meta_op_set_name(&op, "nope", 4);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_RESOURCE_NOT_FOUND);
    meta_op_set_name(&op, "pata", 4);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    meta_op_init(&op, VS_OP_CREATE_PAT);
    meta_op_set_name(&op, "patb", 4);
    memset(dg, 0x99, 32);
    meta_op_set_secret(&op, dg, 32);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_PAT_ALREADY_EXISTS);
    meta_op_set_name(&op, "exp", 3);
    op.expiry = 500;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    const struct meta_pat *p = meta_pat_by_digest(st, dg);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(p->expiry_at, run.ts + 500);
}
END_TEST

START_TEST(test_pat_limit_per_user)
{
    struct meta_caps c;
    th_caps(&c);
    c.pats = 128;
    void *s2 = th_state(&c);
    struct th_run r2;
    th_run_init(&r2);
    ck_assert_uint_eq(th_genesis(s2, &r2), 0);
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_PAT);
    for (uint32_t i = 0; i <= META_PATS_PER_USER; i++) {
        char name[16];
        int n = 0;
        name[n++] = 'p';
        name[n++] = (char)('0' + i / 100);
        name[n++] = (char)('0' + (i / 10) % 10);
        name[n++] = (char)('0' + i % 10);
        meta_op_set_name(&op, name, (size_t)n);
        uint8_t dg[32] = {0};
        vs_store_u32(dg, i + 1);
        meta_op_set_secret(&op, dg, 32);
        uint32_t e = th_apply(s2, &r2, 0, &op);
        ck_assert_uint_eq(e,
                          i < META_PATS_PER_USER ? 0 : VS_E_PAT_LIMIT_REACHED);
    }
    meta_result_fini(&r2.res);
    free(s2);
}
END_TEST

static uint32_t
group_op(unsigned operation, uint64_t client, uint32_t inflight_p)
{
    struct meta_op op;
    meta_op_init(&op, operation);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    meta_ident_id(&op.group, 0);
    if (inflight_p != META_NONE) {
        op.inflight_count = 1;
        op.inflight[0] = inflight_p;
    }
    return th_apply_full(st, &run, 0, th_client(client), 0, &op);
}

static uint32_t
owner_of(uint32_t p)
{
    const struct meta_assign *a = meta_assign_get(st, 0, 0, 0, p);
    return a ? a->owner : META_NONE;
}

START_TEST(test_groups_cooperative)
{
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s"), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t", 3), 0);
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_CONSUMER_GROUP);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    meta_op_set_name(&op, "g", 1);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(vs_load_u32(run.res.payload.data), 0);
    ck_assert_uint_eq(vs_load_u32(run.res.payload.data + 4), 3);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op),
                      VS_E_CONSUMER_GROUP_NAME_ALREADY_EXISTS);
    ck_assert_uint_eq(group_op(VS_OP_JOIN_CONSUMER_GROUP, 0xA, META_NONE), 0);
    for (uint32_t p = 0; p < 3; p++)
        ck_assert_uint_eq(owner_of(p), 0);
    const struct meta_group *g = meta_group_by_id(st, 0, 0, 0);
    uint64_t gen = g->generation;
    ck_assert_uint_eq(group_op(VS_OP_JOIN_CONSUMER_GROUP, 0xA, META_NONE), 0);
    ck_assert_uint_eq(g->generation, gen); /* idempotent */
    /* B joins: A [0,1], B [2] */
    ck_assert_uint_eq(group_op(VS_OP_JOIN_CONSUMER_GROUP, 0xB, META_NONE), 0);
    ck_assert_uint_eq(owner_of(0), 0);
    ck_assert_uint_eq(owner_of(1), 0);
    ck_assert_uint_eq(owner_of(2), 1);
    ck_assert_uint_eq(g->generation, gen + 1);
    /* C joins with partition 1 in flight: pending revocation */
    ck_assert_uint_eq(group_op(VS_OP_LEAVE_CONSUMER_GROUP, 0xB, META_NONE), 0);
    ck_assert_uint_eq(owner_of(2), 0);
    ck_assert_uint_eq(group_op(VS_OP_JOIN_CONSUMER_GROUP, 0xC, 2), 0);
    const struct meta_assign *a = meta_assign_get(st, 0, 0, 0, 2);
    ck_assert_uint_eq(a->owner, 0);
    ck_assert_uint_eq(a->revoke_to, 1); /* C took member slot 1 */
    meta_op_init(&op, VS_OP_COMPLETE_CONSUMER_GROUP_REVOCATION);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    meta_ident_id(&op.group, 0);
    op.partition_id = 2;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(owner_of(2), 1);
    ck_assert_uint_eq(meta_assign_get(st, 0, 0, 0, 2)->revoke_to, META_NONE);
    ck_assert_uint_eq(group_op(VS_OP_LEAVE_CONSUMER_GROUP, 0xD, META_NONE),
                      VS_E_CONSUMER_GROUP_MEMBER_NOT_FOUND);
    /* RemoveMember (disconnect) takes the client out of every group */
    meta_op_init(&op, VS_OP_REMOVE_CONSUMER_GROUP_MEMBER);
    op.client = th_client(0xA);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(g->members_count, 1);
    for (uint32_t p = 0; p < 3; p++)
        ck_assert_uint_eq(owner_of(p), 1);
    /* eager rebalance on CreatePartitions */
    ck_assert_uint_eq(group_op(VS_OP_JOIN_CONSUMER_GROUP, 0xA, META_NONE), 0);
    meta_op_init(&op, VS_OP_CREATE_PARTITIONS);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    op.count = 1;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(owner_of(0), 0);
    ck_assert_uint_eq(owner_of(1), 1);
    ck_assert_uint_eq(owner_of(2), 0);
    ck_assert_uint_eq(owner_of(3), 1);
    meta_op_init(&op, VS_OP_DELETE_CONSUMER_GROUP);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    meta_ident_name(&op.group, "g", 1);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op),
                      VS_E_CONSUMER_GROUP_ID_NOT_FOUND);
    ck_assert_uint_eq(meta_hdr_c(st)->count[META_TAB_ASSIGN], 0);
    ck_assert_uint_eq(meta_hdr_c(st)->count[META_TAB_MEMBER], 0);
    /* group ids are never reused */
    meta_op_init(&op, VS_OP_CREATE_CONSUMER_GROUP);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    meta_op_set_name(&op, "g", 1);
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(vs_load_u32(run.res.payload.data), 1);
}
END_TEST

/* DeleteSegments/TruncatePartition carry the partition's created_op
 * (op format 2): a topic deleted and recreated with the same ids never
 * takes the old partition's watermark; format-1 bodies still decode. */
START_TEST(test_truncate_created_op)
{
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s"), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t", 1), 0);
    uint64_t old_op = meta_partition_by_id(st, 0, 0, 0)->created_op;
    ck_assert_uint_ne(old_op, 0);
    struct meta_op op;
    meta_op_init(&op, VS_OP_TRUNCATE_PARTITION);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    op.partition_id = 0;
    op.offset = 50;
    op.created_op = old_op;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(meta_partition_by_id(st, 0, 0, 0)->deleted_up_to_offset,
                      50);
    /* the topic deleted and recreated: same ids, another partition */
    struct meta_op del;
    meta_op_init(&del, VS_OP_DELETE_TOPIC);
    meta_ident_id(&del.stream, 0);
    meta_ident_id(&del.topic, 0);
    ck_assert_uint_eq(th_apply(st, &run, 0, &del), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t", 1), 0);
    const struct meta_partition *p = meta_partition_by_id(st, 0, 0, 0);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_ne(p->created_op, old_op);
    op.offset = 80;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), VS_E_PARTITION_NOT_FOUND);
    ck_assert_uint_eq(meta_partition_by_id(st, 0, 0, 0)->deleted_up_to_offset,
                      0);
    op.created_op = meta_partition_by_id(st, 0, 0, 0)->created_op;
    ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
    ck_assert_uint_eq(meta_partition_by_id(st, 0, 0, 0)->deleted_up_to_offset,
                      80);

    /* encodings: op 68 is written in format 2 (created_op last), other
     * operations keep format 1 */
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    ck_assert_int_eq(meta_op_encode(&op, &w), 0);
    ck_assert_uint_eq(w.data[0], 2);
    ck_assert_uint_eq(w.len, 2 + 5 + 5 + 4 + 8 + 8);
    ck_assert_uint_eq(vs_load_u64(w.data + w.len - 8), op.created_op);
    struct meta_op back;
    ck_assert_int_eq(meta_op_decode(w.data, w.len, &back), 0);
    ck_assert_uint_eq(back.created_op, op.created_op);
    ck_assert_uint_eq(back.offset, 80);
    ck_assert_int_eq(meta_op_decode(w.data, w.len - 1, &back), -EPROTO);
    /* the format-1 body of the same op: no created_op, unchecked */
    uint8_t v1[2 + 5 + 5 + 4 + 8];
    memcpy(v1, w.data, sizeof(v1));
    v1[0] = 1;
    ck_assert_int_eq(meta_op_decode(v1, sizeof(v1), &back), 0);
    ck_assert_uint_eq(back.created_op, 0);
    ck_assert_uint_eq(back.offset, 80);
    ck_assert_int_eq(meta_op_decode(w.data + 0, w.len, &back), 0);
    w.data[0] = META_OP_FORMAT + 1;
    ck_assert_int_eq(meta_op_decode(w.data, w.len, &back), -ENOTSUP);
    vs_wbuf_reset(&w);
    struct meta_op cs;
    meta_op_init(&cs, VS_OP_CREATE_STREAM);
    meta_op_set_name(&cs, "x", 1);
    ck_assert_int_eq(meta_op_encode(&cs, &w), 0);
    ck_assert_uint_eq(w.data[0], 1);
    vs_wbuf_fini(&w);
    /* a format-1 op 68 applies as before (no created_op check) */
    struct meta_op_ctx c = {0};
    c.op = ++run.op;
    c.operation = VS_OP_TRUNCATE_PARTITION;
    vs_store_u64(v1 + sizeof(v1) - 8, 90);
    ck_assert_uint_eq(meta_apply(st, &c, v1, sizeof(v1), &run.res), 0);
    ck_assert_uint_eq(meta_partition_by_id(st, 0, 0, 0)->deleted_up_to_offset,
                      90);
}
END_TEST

START_TEST(test_bad_body_is_invalid_command)
{
    struct meta_op_ctx c = {0};
    c.op = ++run.op;
    c.operation = VS_OP_CREATE_STREAM;
    uint8_t junk[3] = {1, VS_OP_CREATE_STREAM, 9};
    ck_assert_uint_eq(meta_apply(st, &c, junk, sizeof(junk), &run.res),
                      VS_E_INVALID_COMMAND);
    c.op = ++run.op;
    ck_assert_uint_eq(meta_apply(st, &c, junk, 0, &run.res),
                      VS_E_INVALID_COMMAND);
    c.op = ++run.op;
    uint8_t other[2] = {7, VS_OP_LOGOUT};
    ck_assert_uint_eq(meta_apply(st, &c, other, 2, &run.res),
                      VS_E_INVALID_COMMAND);
}
END_TEST

/* The reference table (iggy-client-protocol-2 §3), written here
 * independently: which single global/stream/topic bit allows an action. */
struct expect {
    enum meta_perm_action act;
    uint16_t g;
    uint8_t s, t;
};

static const struct expect expects[] = {
    {META_ACT_READ_SERVERS, META_G_MANAGE_SERVERS | META_G_READ_SERVERS, 0, 0},
    {META_ACT_READ_USERS, META_G_MANAGE_USERS | META_G_READ_USERS, 0, 0},
    {META_ACT_MANAGE_USERS, META_G_MANAGE_USERS, 0, 0},
    {META_ACT_READ_STREAMS, META_G_MANAGE_STREAMS | META_G_READ_STREAMS, 0, 0},
    {META_ACT_READ_STREAM, META_G_MANAGE_STREAMS | META_G_READ_STREAMS,
     META_S_MANAGE_STREAM | META_S_READ_STREAM, 0},
    {META_ACT_CREATE_STREAM, META_G_MANAGE_STREAMS, 0, 0},
    {META_ACT_MANAGE_STREAM, META_G_MANAGE_STREAMS, META_S_MANAGE_STREAM, 0},
    {META_ACT_READ_TOPICS,
     META_G_MANAGE_STREAMS | META_G_READ_STREAMS | META_G_MANAGE_TOPICS |
         META_G_READ_TOPICS,
     META_S_MANAGE_STREAM | META_S_READ_STREAM | META_S_MANAGE_TOPICS |
         META_S_READ_TOPICS,
     0},
    {META_ACT_READ_TOPIC,
     META_G_MANAGE_STREAMS | META_G_READ_STREAMS | META_G_MANAGE_TOPICS |
         META_G_READ_TOPICS,
     META_S_MANAGE_STREAM | META_S_READ_STREAM | META_S_MANAGE_TOPICS |
         META_S_READ_TOPICS,
     META_T_MANAGE_TOPIC | META_T_READ_TOPIC},
    {META_ACT_CREATE_TOPIC, META_G_MANAGE_STREAMS | META_G_MANAGE_TOPICS,
     META_S_MANAGE_STREAM | META_S_MANAGE_TOPICS, 0},
    {META_ACT_MANAGE_TOPIC, META_G_MANAGE_STREAMS | META_G_MANAGE_TOPICS,
     META_S_MANAGE_STREAM | META_S_MANAGE_TOPICS, META_T_MANAGE_TOPIC},
    {META_ACT_POLL,
     META_G_POLL_MESSAGES | META_G_READ_STREAMS | META_G_MANAGE_STREAMS |
         META_G_READ_TOPICS | META_G_MANAGE_TOPICS,
     META_S_MANAGE_STREAM | META_S_READ_STREAM | META_S_MANAGE_TOPICS |
         META_S_READ_TOPICS | META_S_POLL_MESSAGES,
     META_T_MANAGE_TOPIC | META_T_READ_TOPIC | META_T_POLL_MESSAGES},
    {META_ACT_SEND,
     META_G_SEND_MESSAGES | META_G_MANAGE_STREAMS | META_G_MANAGE_TOPICS,
     META_S_MANAGE_STREAM | META_S_MANAGE_TOPICS | META_S_SEND_MESSAGES,
     META_T_MANAGE_TOPIC | META_T_SEND_MESSAGES},
};

START_TEST(test_authz_each_permission_exactly)
{
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s0"), 0);
    ck_assert_uint_eq(th_create_stream(st, &run, 0, "s1"), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t0", 1), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 0, "t1", 1), 0);
    ck_assert_uint_eq(th_create_topic(st, &run, 0, 1, "t0", 1), 0);
    ck_assert_uint_eq(th_create_user(st, &run, 0, "probe", NULL, 0), 0);
    uint8_t b[64];
    struct meta_op op;
    /* 10 global + 6 stream + 4 topic single-bit users, plus none */
    for (int kind = 0; kind < 3; kind++) {
        int nbits = kind == 0 ? 10 : kind == 1 ? 6 : 4;
        for (int bit = 0; bit < nbits; bit++) {
            uint16_t g = kind == 0 ? (uint16_t)(1u << bit) : 0;
            uint8_t sb = kind == 1 ? (uint8_t)(1u << bit) : 0;
            uint8_t tb = kind == 2 ? (uint8_t)(1u << bit) : 0;
            size_t n = perms_blob(b, g, 1, 0, sb, 1, 0, tb);
            meta_op_init(&op, VS_OP_UPDATE_PERMISSIONS);
            meta_ident_id(&op.user, 1);
            op.has_perms = 1;
            op.perms = b;
            op.perms_len = (uint32_t)n;
            ck_assert_uint_eq(th_apply(st, &run, 0, &op), 0);
            for (size_t e = 0; e < sizeof(expects) / sizeof(expects[0]); e++) {
                const struct expect *x = &expects[e];
                int want = (x->g & g) || (x->s & sb) || (x->t & tb);
                int got = meta_authz_check(st, 1, x->act, 0, 0);
                ck_assert_msg(got == want, "kind %d bit %d action %d: %d", kind,
                              bit, (int)x->act, got);
                /* stream/topic grants name stream 0 / topic 0 only */
                if (kind > 0 && x->s | x->t) {
                    ck_assert_int_eq(meta_authz_check(st, 1, x->act, 1, 0), 0);
                    if (kind == 2)
                        ck_assert_int_eq(meta_authz_check(st, 1, x->act, 0, 1),
                                         0);
                }
            }
        }
    }
    /* root can do everything; an unknown user nothing */
    for (int a = 0; a < META_ACT_COUNT; a++) {
        ck_assert(meta_authz_check(st, 0, a, 0, 0));
        ck_assert(!meta_authz_check(st, 6, a, 0, 0));
    }
    /* a scope that does not resolve passes (then not found) */
    ck_assert(meta_authz_check(st, 1, META_ACT_MANAGE_STREAM, 5, META_NONE));
}
END_TEST

START_TEST(test_secrets)
{
    char phc[META_PWHASH_MAX];
    ck_assert_int_eq(meta_secrets_init(), 0);
    ck_assert_int_eq(meta_password_hash("s3cret", 6, 1, 8192, phc), 0);
    ck_assert_int_eq(strncmp(phc, "$argon2id$", 10), 0);
    ck_assert_int_eq(meta_password_verify(phc, "s3cret", 6), 0);
    ck_assert_int_eq(meta_password_verify(phc, "s3creT", 6), -EACCES);
    ck_assert_int_eq(meta_password_verify("garbage", "s3cret", 6), -EACCES);
    char other[META_PWHASH_MAX];
    ck_assert_int_eq(meta_password_hash("s3cret", 6, 1, 8192, other), 0);
    ck_assert_str_ne(phc, other); /* random salt */
    char tok[META_PAT_TOKEN_LEN + 1], tok2[META_PAT_TOKEN_LEN + 1];
    uint8_t dg[META_DIGEST_LEN], dg2[META_DIGEST_LEN];
    meta_pat_make(tok, dg);
    meta_pat_make(tok2, dg2);
    ck_assert_uint_eq(strlen(tok), 68);
    ck_assert_int_eq(tok[67], '=');
    ck_assert_str_ne(tok, tok2);
    uint8_t again[META_DIGEST_LEN];
    meta_pat_digest(tok, strlen(tok), again);
    ck_assert(meta_secret_eq(dg, again, META_DIGEST_LEN));
    ck_assert(!meta_secret_eq(dg, dg2, META_DIGEST_LEN));
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("meta_apply");
    TCase *tc = tcase_create("apply");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_empty_and_genesis);
    tcase_add_test(tc, test_stream_ids_reused_smallest_free);
    tcase_add_test(tc, test_topics_partitions_group_ids);
    tcase_add_test(tc, test_grants_die_with_stream_and_topic);
    tcase_add_test(tc, test_users);
    tcase_add_test(tc, test_pats);
    tcase_add_test(tc, test_pat_limit_per_user);
    tcase_add_test(tc, test_groups_cooperative);
    tcase_add_test(tc, test_bad_body_is_invalid_command);
    tcase_add_test(tc, test_truncate_created_op);
    tcase_add_test(tc, test_authz_each_permission_exactly);
    tcase_add_test(tc, test_secrets);
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
