/*
 * tests/integration/check_cluster_preplica.c - replicated partitions in
 * a real 3-node cluster (partition_replication on, two data shards per
 * node, so sends also cross the shards of a node before a data link):
 *  - a topic of replication factor 3: batches sent through every node
 *    (each node's own connection, no leader following) are acknowledged,
 *    and every node's polls return the same history, every acknowledged
 *    message exactly once at the offset its acknowledgement named;
 *  - a send to a partition the topic does not have is refused, and the
 *    interim rule no longer refuses the partition plane on backups;
 *  - SIGKILL of the partition group's primary node during a send loop
 *    (the producer on another node): a new primary takes over (the
 *    failover time is printed: kill -> first acknowledged send), every
 *    acknowledged message is present exactly once on both survivors at
 *    its offset, their histories are identical; the killed node restarts,
 *    catches up and serves the identical history.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/errors.h"
#include "tests/integration/cluster.h"
#include "tools/client/vsc.h"

#define BATCH      10u
#define MAX_MSGS   4096u
#define POLL_COUNT 1000u

static struct vs_cluster cl;
/* Journals that hold the whole run (each group's window is wal_slots
 * ops): the restarted node catches up by repair (a gap beyond the peers'
 * windows needs a partition state transfer, not in this version). */
static const char *const extra[] = {"--partition-replication",
                                    "true",
                                    "--shards",
                                    "2",
                                    "--wal-slots",
                                    "1024",
                                    NULL};

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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

/* A logged-in handle on node i that stays there and resends 57/58 for up
 * to io_ms. */
static struct vsc *
login_on(unsigned i, uint32_t io_ms)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl.client[i];
    o.io_timeout_ms = io_ms;
    o.connect_timeout_ms = 2000;
    o.reconnects = 5;
    o.no_follow = 1;
    uint64_t end = now_ms() + 20000;
    while (now_ms() < end) {
        struct vsc *c = vsc_create(&o);
        ck_assert_ptr_nonnull(c);
        if (vsc_login(c, "iggy", "iggy", NULL) == 0)
            return c;
        vsc_destroy(c);
        usleep(100 * 1000);
    }
    ck_abort_msg("no login on node %u", i);
    return NULL;
}

/* Creates stream `s` and topic `t` (1 partition, factor rf) on c; waits
 * until every node lists the topic's replica set; returns the primary of
 * view 0 (the set's first member). */
static unsigned
make_topic(struct vsc *c, const char *s, const char *t, uint8_t rf)
{
    struct vsc_stream so;
    int rc = vsc_stream_create(c, s, &so);
    ck_assert_msg(rc == 0 || rc == VS_E_STREAM_NAME_ALREADY_EXISTS,
                  "stream: %d %s", rc, vsc_last_error(c));
    if (rc == 0)
        vsc_stream_fini(&so);
    struct vs_wbuf o;
    vs_wbuf_init(&o);
    vsc_opt_replication_factor(&o, rf);
    struct vsc_id sid = vsc_id_name(s);
    struct vsc_topic to;
    rc = vsc_topic_create(c, &sid, 1, t, o.data, o.len, &to);
    vs_wbuf_fini(&o);
    ck_assert_msg(rc == 0, "topic: %d %s", rc, vsc_last_error(c));
    vsc_topic_fini(&to);
    unsigned primary = 255;
    for (unsigned i = 0; i < 3; i++) {
        struct vsc *h = login_on(i, 5000);
        struct vsc_id tid = vsc_id_name(t);
        int found = 0;
        uint64_t end = now_ms() + 10000;
        struct vsc_topic_replicas r;
        memset(&r, 0, sizeof(r));
        while (now_ms() < end) {
            rc = vsc_topic_replicas(h, &sid, &tid, &r, &found);
            if (rc == 0 && found)
                break;
            usleep(50 * 1000);
        }
        ck_assert_msg(rc == 0 && found, "node %u: topic %s not listed", i, t);
        ck_assert_uint_eq(r.n_partitions, 1);
        ck_assert_uint_eq(r.partitions[0].count, rf);
        primary = r.partitions[0].replicas[0];
        vsc_topic_replicas_fini(&r);
        vsc_destroy(h);
    }
    return primary;
}

/* Sends one batch of BATCH messages "tag-k-j" to partition 0. 0 and the
 * base offset, or the call's error. */
static int
send_batch(struct vsc *c, const char *s, const char *t, const char *tag,
           unsigned k, uint64_t *base)
{
    static char text[BATCH][48];
    struct vsc_msg m[BATCH];
    memset(m, 0, sizeof(m));
    for (unsigned j = 0; j < BATCH; j++) {
        snprintf(text[j], sizeof(text[j]), "%s-%u-%u", tag, k, j);
        m[j].payload = text[j];
        m[j].payload_len = (uint32_t)strlen(text[j]);
    }
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_partitioning p = vsc_part_id(0);
    struct vsc_sent sent;
    memset(&sent, 0, sizeof(sent));
    int rc = vsc_send(c, &sid, &tid, &p, m, BATCH, &sent);
    if (rc == 0)
        *base = sent.base_offset;
    return rc;
}

/* A partition's history as one node polls it: payloads by offset. */
struct history {
    size_t n;
    char text[MAX_MSGS][48];
};

/* Polls partition 0 from offset 0 until `want` messages (or the end) on
 * c; returns the count read. Asserts offsets are consecutive from 0. */
static size_t
read_history(struct vsc *c, const char *s, const char *t, size_t want,
             struct history *h)
{
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id cid = vsc_id_num(1);
    h->n = 0;
    for (unsigned round = 0; round < MAX_MSGS && h->n < want; round++) {
        struct vsc_poll_args a;
        memset(&a, 0, sizeof(a));
        a.consumer = vsc_consumer_single(&cid);
        a.has_partition = 1;
        a.partition_id = 0;
        a.strategy = VSC_POLL_OFFSET;
        a.value = h->n;
        a.count = POLL_COUNT;
        struct vsc_polled r;
        memset(&r, 0, sizeof(r));
        int rc = vsc_poll(c, &sid, &tid, &a, &r);
        ck_assert_msg(rc == 0, "poll: %d %s", rc, vsc_last_error(c));
        size_t got = r.n;
        for (size_t i = 0; i < r.n && h->n < MAX_MSGS; i++) {
            ck_assert_uint_eq(r.msgs[i].offset, h->n);
            ck_assert_uint_lt(r.msgs[i].payload_len, sizeof(h->text[0]));
            memcpy(h->text[h->n], r.msgs[i].payload, r.msgs[i].payload_len);
            h->text[h->n][r.msgs[i].payload_len] = '\0';
            h->n++;
        }
        vsc_polled_fini(&r);
        if (got == 0)
            break;
    }
    return h->n;
}

/* Waits (bounded) until node i's history has at least `want` messages;
 * leaves it in h. */
static void
wait_history(unsigned i, const char *s, const char *t, size_t want,
             struct history *h, uint32_t ms)
{
    struct vsc *c = login_on(i, 5000);
    uint64_t end = now_ms() + ms;
    while (read_history(c, s, t, want, h) < want && now_ms() < end)
        usleep(100 * 1000);
    vsc_destroy(c);
    ck_assert_msg(h->n >= want, "node %u: %zu of %zu messages", i, h->n, want);
}

static void
same_history(const struct history *a, const struct history *b, unsigned na,
             unsigned nb)
{
    ck_assert_msg(a->n == b->n, "nodes %u and %u: %zu vs %zu messages", na, nb,
                  a->n, b->n);
    for (size_t k = 0; k < a->n; k++)
        ck_assert_msg(strcmp(a->text[k], b->text[k]) == 0,
                      "offset %zu: node %u has %s, node %u has %s", k, na,
                      a->text[k], nb, b->text[k]);
}

/* Every acknowledged batch k (base[k] != UINT64_MAX) of `tag` is in h
 * exactly once, at base[k] + j. */
static void
acked_once(const struct history *h, const char *tag, const uint64_t *base,
           unsigned batches)
{
    char want[48];
    for (unsigned k = 0; k < batches; k++) {
        if (base[k] == UINT64_MAX)
            continue;
        for (unsigned j = 0; j < BATCH; j++) {
            snprintf(want, sizeof(want), "%s-%u-%u", tag, k, j);
            ck_assert_msg(base[k] + j < h->n, "%s: offset %llu past the end",
                          want, (unsigned long long)(base[k] + j));
            ck_assert_msg(strcmp(h->text[base[k] + j], want) == 0,
                          "offset %llu: %s, acknowledged as %s",
                          (unsigned long long)(base[k] + j),
                          h->text[base[k] + j], want);
            unsigned seen = 0;
            for (size_t x = 0; x < h->n; x++)
                seen += strcmp(h->text[x], want) == 0;
            ck_assert_msg(seen == 1, "%s stored %u times", want, seen);
        }
    }
}

static struct history hist[3];

START_TEST(test_sends_through_every_node)
{
    struct vsc *adm = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(adm);
    (void)make_topic(adm, "ps", "t3", 3);
    vsc_destroy(adm);

    enum { PER_NODE = 30 };
    static uint64_t base[3][PER_NODE];
    static const char *const tags[3] = {"n0", "n1", "n2"};
    struct vsc *c[3];
    for (unsigned i = 0; i < 3; i++)
        c[i] = login_on(i, 20000);
    /* interleaved: every node's sends in turn */
    for (unsigned k = 0; k < PER_NODE; k++)
        for (unsigned i = 0; i < 3; i++) {
            int rc = send_batch(c[i], "ps", "t3", tags[i], k, &base[i][k]);
            ck_assert_msg(rc == 0, "node %u batch %u: %d %s", i, k, rc,
                          vsc_last_error(c[i]));
        }
    /* a partition the topic does not have: refused, nothing stored */
    struct vsc_msg m;
    memset(&m, 0, sizeof(m));
    m.payload = "x";
    m.payload_len = 1;
    struct vsc_id sid = vsc_id_name("ps"), tid = vsc_id_name("t3");
    struct vsc_partitioning bad = vsc_part_id(7);
    int rc = vsc_send(c[1], &sid, &tid, &bad, &m, 1, NULL);
    ck_assert_msg(rc > 0 && rc != VS_E_NOT_ACCEPTED &&
                      rc != VS_E_TRANSIENT_NOT_COMMITTED,
                  "send to partition 7: %d %s", rc, vsc_last_error(c[1]));
    for (unsigned i = 0; i < 3; i++)
        vsc_destroy(c[i]);

    size_t total = 3u * PER_NODE * BATCH;
    for (unsigned i = 0; i < 3; i++) {
        wait_history(i, "ps", "t3", total, &hist[i], 20000);
        ck_assert_uint_eq(hist[i].n, total);
        for (unsigned t = 0; t < 3; t++)
            acked_once(&hist[i], tags[t], base[t], PER_NODE);
    }
    same_history(&hist[0], &hist[1], 0, 1);
    same_history(&hist[0], &hist[2], 0, 2);
}
END_TEST

START_TEST(test_kill_group_primary)
{
    struct vsc *adm = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(adm);
    /* a second topic first, so this one's view-0 primary is not node 0
     * (placement spreads leaders): the metadata primary survives */
    (void)make_topic(adm, "pk", "warm", 3);
    unsigned primary = make_topic(adm, "pk", "t", 3);
    vsc_destroy(adm);
    ck_assert_uint_lt(primary, 3);
    unsigned via = primary == 0 ? 1 : 0; /* the producer's node survives */
    fprintf(stderr, "partition primary node %u, producer on node %u\n", primary,
            via);

    enum { BATCHES = 200, KILL_AT = 60 };
    static uint64_t base[BATCHES];
    for (unsigned k = 0; k < BATCHES; k++)
        base[k] = UINT64_MAX;
    struct vsc *p = login_on(via, 30000);
    uint64_t killed_at = 0, first_after = 0;
    for (unsigned k = 0; k < BATCHES; k++) {
        if (k == KILL_AT) {
            ck_assert_int_gt(vs_node_kill(&cl.node[primary]), -1);
            killed_at = now_ms();
        }
        int rc = send_batch(p, "pk", "t", "k", k, &base[k]);
        ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(p));
        if (killed_at != 0 && first_after == 0)
            first_after = now_ms();
    }
    vsc_destroy(p);
    fprintf(stderr,
            "partition failover: kill -> first acknowledged send %llu ms\n",
            (unsigned long long)(first_after - killed_at));

    size_t total = (size_t)BATCHES * BATCH; /* at least: resends may add */
    unsigned alive[2], na = 0;
    for (unsigned i = 0; i < 3; i++)
        if (i != primary)
            alive[na++] = i;
    for (unsigned x = 0; x < 2; x++) {
        wait_history(alive[x], "pk", "t", total, &hist[alive[x]], 20000);
        acked_once(&hist[alive[x]], "k", base, BATCHES);
    }
    /* the survivors agree on everything either has committed */
    size_t n0 = hist[alive[0]].n, n1 = hist[alive[1]].n;
    if (n0 != n1) {
        size_t want = n0 > n1 ? n0 : n1;
        wait_history(alive[0], "pk", "t", want, &hist[alive[0]], 10000);
        wait_history(alive[1], "pk", "t", want, &hist[alive[1]], 10000);
    }
    same_history(&hist[alive[0]], &hist[alive[1]], alive[0], alive[1]);

    /* the killed node restarts, catches up, serves the same history */
    int rc = vs_cluster_start_node(&cl, primary, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node %u: %d", primary, rc);
    uint64_t t0 = now_ms();
    wait_history(primary, "pk", "t", hist[alive[0]].n, &hist[primary], 30000);
    fprintf(stderr, "restarted node %u caught up %zu messages in %llu ms\n",
            primary, hist[primary].n, (unsigned long long)(now_ms() - t0));
    same_history(&hist[alive[0]], &hist[primary], alive[0], primary);
}
END_TEST

static Suite *
preplica_suite(void)
{
    Suite *s = suite_create("cluster_preplica");
    TCase *t = tcase_create("everywhere");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 180);
    tcase_add_test(t, test_sends_through_every_node);
    suite_add_tcase(s, t);
    TCase *k = tcase_create("kill_primary");
    tcase_add_checked_fixture(k, setup, teardown);
    tcase_set_timeout(k, 240);
    tcase_add_test(k, test_kill_group_primary);
    suite_add_tcase(s, k);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(preplica_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
