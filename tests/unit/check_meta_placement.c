/*
 * tests/unit/check_meta_placement.c - replica sets decided in apply: the
 * replication factor (default, bound, refusal with nothing stored), the
 * placement rule (rotation, balance of view-0 leadership within one
 * partition across nodes and within a CreateTopic's partitions, for many
 * node / topic / partition counts), CreatePartitions and
 * DeletePartitions, determinism (two state machines, equal snapshot
 * bytes), the snapshot round trip and the CreateTopic op encoding.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "shard/meta/lookup.h"
#include "shard/meta/placement.h"
#include "shard/meta/snapshot_codec.h"
#include "meta_helpers.h"

static void *
state_with(uint32_t nodes, struct meta_caps *c, struct th_run *r)
{
    th_caps(c);
    c->streams = 8;
    c->topics = 512;
    c->partitions = 8192;
    c->assignments = 8192;
    c->nodes = nodes;
    void *st = th_state(c);
    th_run_init(r);
    ck_assert_uint_eq(th_genesis(st, r), 0);
    ck_assert_uint_eq(th_create_stream(st, r, 0, "s"), 0);
    return st;
}

static uint32_t
create_topic_rf(void *st, struct th_run *r, const char *name, uint32_t parts,
                uint8_t rf)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_CREATE_TOPIC);
    meta_ident_id(&op.stream, 0);
    meta_op_set_name(&op, name, strlen(name));
    op.count = parts;
    th_default_opts(&op.opts);
    op.opts.replication_factor = rf;
    return th_apply(st, r, 0, &op);
}

static uint32_t
partitions_op(void *st, struct th_run *r, unsigned operation, uint32_t topic,
              uint32_t n)
{
    struct meta_op op;
    meta_op_init(&op, operation);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, topic);
    op.count = n;
    return th_apply(st, r, 0, &op);
}

static const struct meta_partition *
part(const void *st, uint32_t topic, uint32_t p)
{
    const struct meta_partition *pp = meta_partition_by_id(st, 0, topic, p);
    ck_assert_ptr_nonnull(pp);
    return pp;
}

/* Every live partition's set: rf distinct nodes, leader, leader+1, ...;
 * hdr->leaders equals a recount; returns max - min of the leaders of
 * view `view` over the nodes. */
static uint32_t
check_sets(void *st, uint32_t view)
{
    uint32_t nodes = meta_nodes(st);
    uint32_t lead[VS_REPLICAS_MAX] = {0}, lv[VS_REPLICAS_MAX] = {0};
    const struct meta_stream *s = meta_stream_by_id(st, 0);
    uint32_t left = s ? s->topics_count : 0;
    for (uint32_t tid = 0; tid < META_MAX_TOPIC_ID && left > 0; tid++) {
        const struct meta_topic *t = meta_topic_by_id(st, s->id, tid);
        if (!t)
            continue;
        left--;
        ck_assert_uint_ge(t->opts.replication_factor, 1);
        ck_assert_uint_le(t->opts.replication_factor, nodes);
        for (uint32_t p = 0; p < t->partitions_count; p++) {
            const struct meta_partition *pp = part(st, tid, p);
            ck_assert_uint_eq(pp->replica_count, t->opts.replication_factor);
            for (uint32_t k = 0; k < pp->replica_count; k++)
                ck_assert_uint_eq(pp->replicas[k],
                                  (pp->replicas[0] + k) % nodes);
            for (uint32_t k = pp->replica_count; k < VS_REPLICAS_MAX; k++)
                ck_assert_uint_eq(pp->replicas[k], 0);
            lead[pp->replicas[0]]++;
            lv[meta_partition_primary(pp, view)]++;
        }
    }
    const struct meta_hdr *h = meta_hdr_c(st);
    for (uint32_t i = 0; i < VS_REPLICAS_MAX; i++)
        ck_assert_uint_eq(h->leaders[i], lead[i]);
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < nodes; i++) {
        lo = lv[i] < lo ? lv[i] : lo;
        hi = lv[i] > hi ? lv[i] : hi;
    }
    return hi - lo;
}

/* max - min over nodes of the primaries in `view` among a topic's
 * partitions. */
static uint32_t
topic_spread(const void *st, uint32_t tid, uint32_t view)
{
    uint32_t nodes = meta_nodes(st);
    uint32_t c[VS_REPLICAS_MAX] = {0};
    const struct meta_topic *t = meta_topic_by_id(st, 0, tid);
    for (uint32_t p = 0; p < t->partitions_count; p++)
        c[meta_partition_primary(part(st, tid, p), view)]++;
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < nodes; i++) {
        lo = c[i] < lo ? c[i] : lo;
        hi = c[i] > hi ? c[i] : hi;
    }
    return hi - lo;
}

START_TEST(test_replication_factor_default_and_bound)
{
    struct meta_caps c;
    struct th_run r;
    void *st = state_with(3, &c, &r);
    ck_assert_uint_eq(create_topic_rf(st, &r, "d", 2, 0), 0);
    ck_assert_uint_eq(meta_topic_by_id(st, 0, 0)->opts.replication_factor, 3);
    ck_assert_uint_eq(create_topic_rf(st, &r, "one", 1, 1), 0);
    ck_assert_uint_eq(part(st, 1, 0)->replica_count, 1);
    ck_assert_uint_eq(create_topic_rf(st, &r, "two", 1, 2), 0);
    ck_assert_uint_eq(part(st, 2, 0)->replica_count, 2);
    /* more than the node count: refused, nothing stored */
    uint32_t topics = meta_hdr_c(st)->count[META_TAB_TOPIC];
    uint32_t parts = meta_hdr_c(st)->count[META_TAB_PARTITION];
    ck_assert_uint_eq(create_topic_rf(st, &r, "four", 3, 4),
                      VS_E_INVALID_REPLICATION_FACTOR);
    ck_assert_uint_eq(create_topic_rf(st, &r, "many", 3, 255),
                      VS_E_INVALID_REPLICATION_FACTOR);
    ck_assert_uint_eq(r.res.payload.len, 0);
    ck_assert_ptr_null(meta_topic_by_name(st, 0, "four", 4));
    ck_assert_uint_eq(meta_hdr_c(st)->count[META_TAB_TOPIC], topics);
    ck_assert_uint_eq(meta_hdr_c(st)->count[META_TAB_PARTITION], parts);
    ck_assert_uint_eq(check_sets(st, 0), 1); /* 4 partitions on 3 nodes */
    meta_result_fini(&r.res);
    free(st);
    /* one node (nodes 0 in the caps reads as 1): default 1, 2 refused */
    st = state_with(0, &c, &r);
    ck_assert_uint_eq(meta_nodes(st), 1);
    ck_assert_uint_eq(create_topic_rf(st, &r, "d", 2, 0), 0);
    ck_assert_uint_eq(meta_topic_by_id(st, 0, 0)->opts.replication_factor, 1);
    ck_assert_uint_eq(part(st, 0, 1)->replicas[0], 0);
    ck_assert_uint_eq(create_topic_rf(st, &r, "x", 1, 2),
                      VS_E_INVALID_REPLICATION_FACTOR);
    ck_assert_uint_eq(meta_rf_default(2), 2);
    ck_assert_uint_eq(meta_rf_default(7), 3);
    meta_result_fini(&r.res);
    free(st);
}
END_TEST

START_TEST(test_three_nodes_three_partitions)
{
    struct meta_caps c;
    struct th_run r;
    void *st = state_with(3, &c, &r);
    ck_assert_uint_eq(create_topic_rf(st, &r, "t", 3, 3), 0);
    static const uint8_t want[3][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}};
    for (uint32_t p = 0; p < 3; p++) {
        ck_assert_int_eq(memcmp(part(st, 0, p)->replicas, want[p], 3), 0);
        for (uint32_t v = 0; v < 6; v++)
            ck_assert_uint_eq(meta_partition_primary(part(st, 0, p), v),
                              want[p][v % 3]);
    }
    /* rf < nodes: the sets rotate over the nodes */
    meta_result_fini(&r.res);
    free(st);
    st = state_with(5, &c, &r);
    ck_assert_uint_eq(create_topic_rf(st, &r, "t", 7, 2), 0);
    for (uint32_t p = 0; p < 7; p++) {
        ck_assert_uint_eq(part(st, 0, p)->replicas[0], p % 5);
        ck_assert_uint_eq(part(st, 0, p)->replicas[1], (p + 1) % 5);
    }
    /* a second topic continues where the cluster is least loaded */
    ck_assert_uint_eq(create_topic_rf(st, &r, "u", 3, 1), 0);
    ck_assert_uint_eq(part(st, 1, 0)->replicas[0], 2);
    ck_assert_uint_eq(part(st, 1, 1)->replicas[0], 3);
    ck_assert_uint_eq(part(st, 1, 2)->replicas[0], 4);
    ck_assert_uint_eq(check_sets(st, 0), 0);
    /* the data shards' lookup */
    uint8_t set[VS_REPLICAS_MAX];
    ck_assert_uint_eq(meta_partition_replicas(st, 0, 0, 6, set), 2);
    ck_assert_uint_eq(set[0], 1);
    ck_assert_uint_eq(set[1], 2);
    ck_assert_uint_eq(meta_partition_replicas(st, 0, 0, 7, set), 0);
    ck_assert_uint_eq(meta_partition_replicas(st, 0, 9, 0, set), 0);
    meta_result_fini(&r.res);
    free(st);
    /* a meta_partition without a set has no primary */
    struct meta_partition none;
    memset(&none, 0, sizeof(none));
    ck_assert_uint_eq(meta_partition_primary(&none, 0), 255);
}
END_TEST

/* Many node, topic and partition counts: after every create the
 * cluster's view-0 leadership is within one partition per node, and so
 * are the primaries of each CreateTopic's partitions in every view. */
START_TEST(test_balance_many_counts)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (uint32_t nodes = 1; nodes <= 9; nodes++) {
        struct meta_caps c;
        struct th_run r;
        void *st = state_with(nodes, &c, &r);
        uint32_t total = 0;
        for (uint32_t t = 0; t < 60; t++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t parts = (uint32_t)(seed >> 33) % 24;
            uint8_t rf = (uint8_t)((seed >> 20) % (nodes + 1)); /* 0..n */
            if (total + parts > c.partitions)
                break;
            char name[16];
            snprintf(name, sizeof(name), "t%u", t);
            ck_assert_uint_eq(create_topic_rf(st, &r, name, parts, rf), 0);
            total += parts;
            ck_assert_uint_le(check_sets(st, 0), 1);
            uint32_t rf_eff =
                meta_topic_by_id(st, 0, t)->opts.replication_factor;
            for (uint32_t v = 0; v < rf_eff + 1; v++)
                ck_assert_uint_le(topic_spread(st, t, v), 1);
            /* CreatePartitions on an older topic keeps the cluster
             * balanced */
            if (t > 0 && (seed >> 40) % 3 == 0) {
                uint32_t add = 1 + (uint32_t)(seed >> 45) % 5;
                if (total + add > c.partitions)
                    break;
                ck_assert_uint_eq(
                    partitions_op(st, &r, VS_OP_CREATE_PARTITIONS, t / 2, add),
                    0);
                total += add;
                ck_assert_uint_le(check_sets(st, 0), 1);
            }
        }
        meta_result_fini(&r.res);
        free(st);
    }
}
END_TEST

START_TEST(test_create_and_delete_partitions)
{
    struct meta_caps c;
    struct th_run r;
    void *st = state_with(3, &c, &r);
    ck_assert_uint_eq(create_topic_rf(st, &r, "t", 2, 2), 0);
    ck_assert_uint_eq(part(st, 0, 0)->replicas[0], 0);
    ck_assert_uint_eq(part(st, 0, 1)->replicas[0], 1);
    ck_assert_uint_eq(partitions_op(st, &r, VS_OP_CREATE_PARTITIONS, 0, 4), 0);
    static const uint8_t lead[6] = {0, 1, 2, 0, 1, 2};
    for (uint32_t p = 0; p < 6; p++) {
        ck_assert_uint_eq(part(st, 0, p)->replica_count, 2);
        ck_assert_uint_eq(part(st, 0, p)->replicas[0], lead[p]);
    }
    ck_assert_uint_eq(check_sets(st, 0), 0);
    /* DeletePartitions removes the highest ids and their sets */
    ck_assert_uint_eq(partitions_op(st, &r, VS_OP_DELETE_PARTITIONS, 0, 2), 0);
    ck_assert_ptr_null(meta_partition_by_id(st, 0, 0, 4));
    ck_assert_uint_eq(meta_hdr_c(st)->leaders[0], 2);
    ck_assert_uint_eq(meta_hdr_c(st)->leaders[1], 1);
    ck_assert_uint_eq(meta_hdr_c(st)->leaders[2], 1);
    check_sets(st, 0);
    /* the next create fills the gap: node 1 and 2 first */
    ck_assert_uint_eq(partitions_op(st, &r, VS_OP_CREATE_PARTITIONS, 0, 2), 0);
    ck_assert_uint_eq(part(st, 0, 4)->replicas[0], 1);
    ck_assert_uint_eq(part(st, 0, 5)->replicas[0], 2);
    ck_assert_uint_eq(check_sets(st, 0), 0);
    /* deleting the topic and the stream forgets every set */
    ck_assert_uint_eq(create_topic_rf(st, &r, "u", 5, 0), 0);
    struct meta_op op;
    meta_op_init(&op, VS_OP_DELETE_TOPIC);
    meta_ident_id(&op.stream, 0);
    meta_ident_id(&op.topic, 0);
    ck_assert_uint_eq(th_apply(st, &r, 0, &op), 0);
    check_sets(st, 0);
    meta_op_init(&op, VS_OP_DELETE_STREAM);
    meta_ident_id(&op.stream, 0);
    ck_assert_uint_eq(th_apply(st, &r, 0, &op), 0);
    for (uint32_t i = 0; i < VS_REPLICAS_MAX; i++)
        ck_assert_uint_eq(meta_hdr_c(st)->leaders[i], 0);
    meta_result_fini(&r.res);
    free(st);
}
END_TEST

/* The same ops on two state machines: byte-identical snapshots; a
 * snapshot round trip keeps every set and recounts the leaders; apply
 * continues identically on the restored state. */
START_TEST(test_determinism_and_snapshot)
{
    struct meta_caps c;
    struct th_run r1, r2;
    void *a = state_with(4, &c, &r1);
    void *b = state_with(4, &c, &r2);
    for (int i = 0; i < 2; i++) {
        void *st = i ? b : a;
        struct th_run *r = i ? &r2 : &r1;
        ck_assert_uint_eq(create_topic_rf(st, r, "x", 5, 3), 0);
        ck_assert_uint_eq(create_topic_rf(st, r, "y", 3, 1), 0);
        ck_assert_uint_eq(partitions_op(st, r, VS_OP_CREATE_PARTITIONS, 0, 3),
                          0);
        ck_assert_uint_eq(partitions_op(st, r, VS_OP_DELETE_PARTITIONS, 1, 1),
                          0);
        ck_assert_uint_eq(create_topic_rf(st, r, "z", 6, 0), 0);
    }
    struct vs_wbuf ea, eb, ec;
    vs_wbuf_init(&ea);
    vs_wbuf_init(&eb);
    vs_wbuf_init(&ec);
    ck_assert_int_eq(meta_snapshot_encode(a, NULL, &ea), 0);
    ck_assert_int_eq(meta_snapshot_encode(b, NULL, &eb), 0);
    ck_assert_uint_eq(ea.len, eb.len);
    ck_assert_int_eq(memcmp(ea.data, eb.data, ea.len), 0);
    /* restore into a third instance */
    void *d = th_state(&c);
    ck_assert_int_eq(meta_snapshot_decode(ea.data, ea.len, d, NULL),
                     META_SNAP_OK);
    ck_assert_int_eq(memcmp(meta_hdr_c(d)->leaders, meta_hdr_c(a)->leaders,
                            sizeof(meta_hdr_c(a)->leaders)),
                     0);
    for (uint32_t t = 0; t < 3; t++) {
        const struct meta_topic *ta = meta_topic_by_id(a, 0, t);
        const struct meta_topic *td = meta_topic_by_id(d, 0, t);
        ck_assert_uint_eq(td->opts.replication_factor,
                          ta->opts.replication_factor);
        for (uint32_t p = 0; p < ta->partitions_count; p++) {
            const struct meta_partition *pa = part(a, t, p);
            const struct meta_partition *pd = part(d, t, p);
            ck_assert_uint_eq(pd->replica_count, pa->replica_count);
            ck_assert_int_eq(
                memcmp(pd->replicas, pa->replicas, sizeof(pa->replicas)), 0);
        }
    }
    ck_assert_int_eq(meta_snapshot_encode(d, NULL, &ec), 0);
    ck_assert_uint_eq(ec.len, ea.len);
    ck_assert_int_eq(memcmp(ec.data, ea.data, ea.len), 0);
    struct th_run r3 = r1;
    meta_result_init(&r3.res);
    ck_assert_uint_eq(create_topic_rf(a, &r1, "w", 7, 2), 0);
    ck_assert_uint_eq(create_topic_rf(d, &r3, "w", 7, 2), 0);
    vs_wbuf_reset(&ea);
    vs_wbuf_reset(&ec);
    meta_snapshot_encode(a, NULL, &ea);
    meta_snapshot_encode(d, NULL, &ec);
    ck_assert_uint_eq(ec.len, ea.len);
    ck_assert_int_eq(memcmp(ec.data, ea.data, ea.len), 0);
    vs_wbuf_fini(&ea);
    vs_wbuf_fini(&eb);
    vs_wbuf_fini(&ec);
    meta_result_fini(&r1.res);
    meta_result_fini(&r2.res);
    meta_result_fini(&r3.res);
    free(a);
    free(b);
    free(d);
}
END_TEST

/* A format-2 snapshot with a damaged replica set is refused. */
START_TEST(test_snapshot_refuses_bad_sets)
{
    struct meta_caps c;
    struct th_run r;
    void *a = state_with(3, &c, &r);
    ck_assert_uint_eq(create_topic_rf(a, &r, "x", 1, 2), 0);
    struct vs_wbuf e;
    vs_wbuf_init(&e);
    ck_assert_int_eq(meta_snapshot_encode(a, NULL, &e), 0);
    /* the partition's set is the only bin of 2 bytes: c4 02 <r0> <r1> */
    size_t at = 0;
    for (size_t i = 0; i + 3 < e.len; i++)
        if (e.data[i] == 0xc4 && e.data[i + 1] == 2 && e.data[i + 2] == 0 &&
            e.data[i + 3] == 1)
            at = i;
    ck_assert_uint_ne(at, 0);
    void *d = th_state(&c);
    uint8_t *m = malloc(e.len);
    memcpy(m, e.data, e.len);
    m[at + 3] = 0; /* duplicate member */
    ck_assert_int_eq(meta_snapshot_decode(m, e.len, d, NULL),
                     META_SNAP_BAD_VALUE);
    memcpy(m, e.data, e.len);
    m[at + 3] = 32; /* node id out of range */
    ck_assert_int_eq(meta_snapshot_decode(m, e.len, d, NULL),
                     META_SNAP_BAD_VALUE);
    memcpy(m, e.data, e.len);
    m[at + 1] = 1; /* fewer members than rf (and a trailing byte) */
    ck_assert_int_ne(meta_snapshot_decode(m, e.len, d, NULL), META_SNAP_OK);
    memcpy(m, e.data, e.len);
    ck_assert_int_eq(meta_snapshot_decode(m, e.len, d, NULL), META_SNAP_OK);
    free(m);
    vs_wbuf_fini(&e);
    meta_result_fini(&r.res);
    free(a);
    free(d);
}
END_TEST

/* CreateTopic's op body: the default factor keeps the format-1 bytes; a
 * factor is format 3 with one byte more; a format-3 factor of 0 and a
 * truncated one are refused. */
START_TEST(test_op_encoding)
{
    struct meta_op op, back;
    meta_op_init(&op, VS_OP_CREATE_TOPIC);
    meta_ident_id(&op.stream, 0);
    meta_op_set_name(&op, "t", 1);
    op.count = 2;
    th_default_opts(&op.opts);
    struct vs_wbuf w1, w3;
    vs_wbuf_init(&w1);
    vs_wbuf_init(&w3);
    ck_assert_int_eq(meta_op_encode(&op, &w1), 0);
    ck_assert_uint_eq(w1.data[0], 1);
    op.opts.replication_factor = 2;
    ck_assert_int_eq(meta_op_encode(&op, &w3), 0);
    ck_assert_uint_eq(w3.data[0], 3);
    ck_assert_uint_eq(w3.len, w1.len + 1);
    ck_assert_int_eq(memcmp(w3.data + 1, w1.data + 1, w1.len - 1), 0);
    ck_assert_uint_eq(w3.data[w3.len - 1], 2);
    ck_assert_int_eq(meta_op_decode(w3.data, w3.len, &back), 0);
    ck_assert_uint_eq(back.opts.replication_factor, 2);
    ck_assert_int_eq(meta_op_decode(w1.data, w1.len, &back), 0);
    ck_assert_uint_eq(back.opts.replication_factor, 0);
    ck_assert_int_eq(meta_op_decode(w3.data, w3.len - 1, &back), -EPROTO);
    w3.data[w3.len - 1] = 0;
    ck_assert_int_eq(meta_op_decode(w3.data, w3.len, &back), -EINVAL);
    /* the internal CreateTopicWithAssignments carries it the same way */
    vs_wbuf_reset(&w3);
    op.operation = VS_OP_CREATE_TOPIC_WITH_ASSIGNMENTS;
    ck_assert_int_eq(meta_op_encode(&op, &w3), 0);
    ck_assert_uint_eq(w3.data[0], 3);
    ck_assert_int_eq(meta_op_decode(w3.data, w3.len, &back), 0);
    ck_assert_uint_eq(back.opts.replication_factor, 2);
    vs_wbuf_fini(&w1);
    vs_wbuf_fini(&w3);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("meta_placement");
    TCase *tc = tcase_create("placement");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_replication_factor_default_and_bound);
    tcase_add_test(tc, test_three_nodes_three_partitions);
    tcase_add_test(tc, test_balance_many_counts);
    tcase_add_test(tc, test_create_and_delete_partitions);
    tcase_add_test(tc, test_determinism_and_snapshot);
    tcase_add_test(tc, test_snapshot_refuses_bad_sets);
    tcase_add_test(tc, test_op_encoding);
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
