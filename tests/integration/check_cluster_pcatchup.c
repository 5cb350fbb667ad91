/*
 * tests/integration/check_cluster_pcatchup.c - a replica node of a
 * replicated partition stopped while a million messages are sent, on a
 * real 3-node cluster (partition_replication on, two data shards each):
 * a topic of replication factor 3; one backup node of the partition is
 * stopped (SIGKILL); 1,000 batches of 1,000 small messages (each payload
 * names its batch and index) are sent to the group's primary and
 * acknowledged; the stopped node restarts and catches up (by repair, or
 * by partition state transfer where its peers' journals no longer cover
 * the gap); then every node's polls from offset 0 return the same
 * 1,000,000 messages: every acknowledged message exactly once, at the
 * offset its acknowledgement named, with one digest of (offset,
 * payload) over the whole history equal on the three nodes. The
 * catch-up time and rate are printed (reported, never asserted).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tests/integration/preplica.h"
#include "tools/client/vsc.h"

enum { BATCHES = 1000, PER_BATCH = 1000 };
#define TOTAL ((uint64_t)BATCHES * PER_BATCH)

static struct vs_cluster cl;
static const char *const extra[] = {"--partition-replication", "true", NULL};
static uint64_t base[BATCHES];

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    cl.extra = extra;
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

/* Batch k: PER_BATCH messages whose 8-byte payload is (k, j). */
static int
send_batch(struct vsc *c, unsigned k)
{
    static struct vsc_msg m[PER_BATCH];
    static uint8_t pay[PER_BATCH][8];
    memset(m, 0, sizeof(m));
    for (unsigned j = 0; j < PER_BATCH; j++) {
        vs_store_u32(pay[j], k);
        vs_store_u32(pay[j] + 4, j);
        m[j].payload = pay[j];
        m[j].payload_len = 8;
    }
    struct vsc_id sid = vsc_id_name("pc"), tid = vsc_id_name("t");
    struct vsc_partitioning p = vsc_part_id(0);
    struct vsc_sent sent;
    memset(&sent, 0, sizeof(sent));
    int rc = vsc_send(c, &sid, &tid, &p, m, PER_BATCH, &sent);
    if (rc == 0)
        base[k] = sent.base_offset;
    return rc;
}

/* What node i serves from offset 0: the count of consecutive messages
 * read (up to TOTAL), their digest, and each checked against the batch
 * and index its acknowledgement named (owner[o] = k * PER_BATCH + j). */
static uint64_t
read_all(unsigned i, const uint32_t *owner, uint64_t *digest)
{
    struct vsc *c = prep_login_on(&cl, i, 10000);
    ck_assert_ptr_nonnull(c);
    struct vsc_id sid = vsc_id_name("pc"), tid = vsc_id_name("t");
    struct vsc_id cid = vsc_id_num(1);
    uint64_t n = 0, d = 0;
    for (unsigned round = 0; round < 4 * BATCHES && n < TOTAL; round++) {
        struct vsc_poll_args a;
        prep_poll_args(&a, &cid, n, PER_BATCH);
        struct vsc_polled r;
        memset(&r, 0, sizeof(r));
        int rc = vsc_poll(c, &sid, &tid, &a, &r);
        ck_assert_msg(rc == 0, "node %u poll at %llu: %d %s", i,
                      (unsigned long long)n, rc, vsc_last_error(c));
        size_t got = r.n;
        for (size_t m = 0; m < r.n && n < TOTAL; m++, n++) {
            const struct vsc_message *msg = &r.msgs[m];
            ck_assert_uint_eq(msg->offset, n);
            ck_assert_uint_eq(msg->payload_len, 8);
            const uint8_t *p = msg->payload;
            uint32_t k = vs_load_u32(p), j = vs_load_u32(p + 4);
            ck_assert_msg(owner[n] == k * PER_BATCH + j,
                          "node %u offset %llu holds batch %u message %u", i,
                          (unsigned long long)n, k, j);
            uint8_t rec[24]; /* chained: the digest so far, offset, payload */
            vs_store_u64(rec, d);
            vs_store_u64(rec + 8, n);
            memcpy(rec + 16, p, 8);
            d = vs_checksum(rec, sizeof(rec)).lo;
        }
        vsc_polled_fini(&r);
        if (got == 0)
            break;
    }
    *digest = d;
    vsc_destroy(c);
    return n;
}

/* 1 if node i serves the last acknowledged message (offset TOTAL - 1). */
static int
serves_last(unsigned i)
{
    struct vsc *c = prep_login_on(&cl, i, 5000);
    if (c == NULL)
        return 0;
    struct vsc_id sid = vsc_id_name("pc"), tid = vsc_id_name("t");
    struct vsc_id cid = vsc_id_num(1);
    struct vsc_poll_args a;
    prep_poll_args(&a, &cid, TOTAL - 1, 1);
    struct vsc_polled r;
    memset(&r, 0, sizeof(r));
    int got = vsc_poll(c, &sid, &tid, &a, &r) == 0 && r.n == 1 &&
              r.msgs[0].offset == TOTAL - 1;
    vsc_polled_fini(&r);
    vsc_destroy(c);
    return got;
}

START_TEST(test_million_while_stopped)
{
    struct vsc *adm = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(adm);
    unsigned primary = prep_make_topic(&cl, adm, "pc", "t", 3);
    vsc_destroy(adm);
    ck_assert_uint_lt(primary, 3);
    unsigned victim = 3;
    for (unsigned i = 1; i < 3 && victim == 3; i++)
        if (i != primary)
            victim = i;
    ck_assert_int_gt(vs_node_kill(&cl.node[victim]), -1);

    struct vsc *p = prep_login_on(&cl, primary, 30000);
    ck_assert_ptr_nonnull(p);
    uint64_t t_send = prep_now_ms();
    for (unsigned k = 0; k < BATCHES; k++) {
        int rc = send_batch(p, k);
        ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(p));
    }
    uint64_t send_ms = prep_now_ms() - t_send;
    vsc_destroy(p);
    fprintf(stderr,
            "partition primary node %u, stopped node %u; %llu messages "
            "sent in %llu ms\n",
            primary, victim, (unsigned long long)TOTAL,
            (unsigned long long)send_ms);

    /* every acknowledged message's offset: exactly one owner each */
    uint32_t *owner = malloc(TOTAL * sizeof(*owner));
    ck_assert_ptr_nonnull(owner);
    memset(owner, 0xff, TOTAL * sizeof(*owner));
    for (unsigned k = 0; k < BATCHES; k++)
        for (unsigned j = 0; j < PER_BATCH; j++) {
            uint64_t o = base[k] + j;
            ck_assert_msg(o < TOTAL, "batch %u acknowledged at %llu", k,
                          (unsigned long long)base[k]);
            ck_assert_msg(owner[o] == UINT32_MAX,
                          "offset %llu acknowledged twice",
                          (unsigned long long)o);
            owner[o] = k * PER_BATCH + j;
        }

    uint64_t t0 = prep_now_ms();
    int rc = vs_cluster_start_node(&cl, victim, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node %u: %d", victim, rc);
    uint64_t end = t0 + 120000;
    while (!serves_last(victim) && prep_now_ms() < end)
        usleep(50 * 1000);
    uint64_t ms = prep_now_ms() - t0;
    fprintf(stderr,
            "restarted node %u serves the last of %llu messages %llu ms "
            "after its restart (%.0f messages/s, restart included)\n",
            victim, (unsigned long long)TOTAL, (unsigned long long)ms,
            ms ? (double)TOTAL * 1000.0 / (double)ms : 0.0);
    uint64_t dv = 0;
    uint64_t n = read_all(victim, owner, &dv);
    ck_assert_msg(n == TOTAL, "node %u: %llu of %llu messages after %llu ms",
                  victim, (unsigned long long)n, (unsigned long long)TOTAL,
                  (unsigned long long)ms);
    for (unsigned i = 0; i < 3; i++) {
        uint64_t d = 0;
        ck_assert_uint_eq(read_all(i, owner, &d), TOTAL);
        ck_assert_msg(d == dv, "node %u's history differs from node %u's", i,
                      victim);
    }
    free(owner);
}
END_TEST

static Suite *
pcatchup_suite(void)
{
    Suite *s = suite_create("cluster_pcatchup");
    TCase *t = tcase_create("million");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 600);
    tcase_add_test(t, test_million_while_stopped);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(pcatchup_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
