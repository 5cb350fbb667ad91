/*
 * tests/integration/check_cluster_pxfer.c - partition state transfer in
 * a real 3-node cluster (partition_replication on, a small journal
 * window: --wal-slots 64, so each partition group keeps 64 ops and
 * checkpoints every 32): a topic of replication factor 3; a consumer
 * offset is stored; one backup node is stopped (SIGKILL) while 400
 * batches are sent and acknowledged, so its peers' journals no longer
 * cover its gap; another offset is stored; restarted, it cannot catch up
 * by repair, fetches the partition by state transfer (its log shows the
 * install), then polls through it return exactly the others' history
 * (every acknowledged message once, at the offset its acknowledgement
 * named) and its stored consumer offset is the others'. The catch-up
 * time and rate are printed.
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
#define MAX_MSGS   8192u
#define POLL_COUNT 1000u

static struct vs_cluster cl;
static const char *const extra[] = {
    "--partition-replication", "true", "--wal-slots", "64",
    "--checkpoint-margin",     "8",    NULL};

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

static uint64_t
stored_offset(unsigned node, const char *s, const char *t, uint32_t consumer)
{
    struct vsc *c = login_on(node, 5000);
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id cid = vsc_id_num(consumer);
    struct vsc_consumer cons = vsc_consumer_single(&cid);
    struct vsc_offset o;
    int found = 0;
    memset(&o, 0, sizeof(o));
    int rc = vsc_offset_get(c, &cons, &sid, &tid, 1, 0, &o, &found);
    ck_assert_msg(rc == 0 && found, "node %u: offset of consumer %u: %d %s",
                  node, consumer, rc, vsc_last_error(c));
    vsc_destroy(c);
    return o.stored_offset;
}

static void
store_offset(struct vsc *c, const char *s, const char *t, uint32_t consumer,
             uint64_t off)
{
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id cid = vsc_id_num(consumer);
    struct vsc_consumer cons = vsc_consumer_single(&cid);
    int rc = vsc_offset_store(c, &cons, &sid, &tid, 1, 0, off);
    ck_assert_msg(rc == 0, "store offset: %d %s", rc, vsc_last_error(c));
}

/* 1 if node i's log records an installed partition state transfer. */
static int
log_shows_install(unsigned i)
{
    char cmd[1400];
    snprintf(cmd, sizeof(cmd),
             "cat '%s' '%s' 2>/dev/null | grep -q 'transferred partition "
             "installed'",
             cl.node[i].log_file, cl.node[i].stderr_file);
    return system(cmd) == 0;
}

START_TEST(test_lagging_node_transfers)
{
    struct vsc *adm = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(adm);
    unsigned primary = make_topic(adm, "px", "t", 3);
    vsc_destroy(adm);
    ck_assert_uint_lt(primary, 3);
    /* the stopped node: a backup of the partition, not node 0 (the
     * metadata primary of a fresh cluster) */
    unsigned victim = 3;
    for (unsigned i = 1; i < 3 && victim == 3; i++)
        if (i != primary)
            victim = i;
    unsigned via = primary; /* the producer talks to the group's primary */
    fprintf(stderr, "partition primary node %u, stopped node %u\n", primary,
            victim);

    enum { BEFORE = 20, DOWN = 400 };
    static uint64_t base[BEFORE + DOWN];
    for (unsigned k = 0; k < BEFORE + DOWN; k++)
        base[k] = UINT64_MAX;
    struct vsc *p = login_on(via, 30000);
    for (unsigned k = 0; k < BEFORE; k++) {
        int rc = send_batch(p, "px", "t", "x", k, &base[k]);
        ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(p));
    }
    store_offset(p, "px", "t", 7, 55);
    ck_assert_int_gt(vs_node_kill(&cl.node[victim]), -1);
    for (unsigned k = BEFORE; k < BEFORE + DOWN; k++) {
        int rc = send_batch(p, "px", "t", "x", k, &base[k]);
        ck_assert_msg(rc == 0, "batch %u: %d %s", k, rc, vsc_last_error(p));
    }
    store_offset(p, "px", "t", 7, 3333);
    store_offset(p, "px", "t", 8, 12);
    vsc_destroy(p);

    size_t total = (size_t)(BEFORE + DOWN) * BATCH;
    unsigned alive[2], na = 0;
    for (unsigned i = 0; i < 3; i++)
        if (i != victim)
            alive[na++] = i;
    for (unsigned x = 0; x < 2; x++) {
        wait_history(alive[x], "px", "t", total, &hist[alive[x]], 30000);
        acked_once(&hist[alive[x]], "x", base, BEFORE + DOWN);
    }
    same_history(&hist[alive[0]], &hist[alive[1]], alive[0], alive[1]);

    uint64_t t0 = now_ms();
    int rc = vs_cluster_start_node(&cl, victim, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart node %u: %d", victim, rc);
    wait_history(victim, "px", "t", hist[alive[0]].n, &hist[victim], 60000);
    uint64_t ms = now_ms() - t0;
    fprintf(stderr,
            "restarted node %u caught up %zu messages in %llu ms "
            "(%.0f messages/s, restart included)\n",
            victim, hist[victim].n, (unsigned long long)ms,
            ms ? (double)hist[victim].n * 1000.0 / (double)ms : 0.0);
    same_history(&hist[alive[0]], &hist[victim], alive[0], victim);
    acked_once(&hist[victim], "x", base, BEFORE + DOWN);
    ck_assert_msg(log_shows_install(victim),
                  "node %u caught up without a partition state transfer",
                  victim);
    /* the consumer offsets came with it (and the ops above it) */
    uint64_t end = now_ms() + 20000;
    while (now_ms() < end && stored_offset(victim, "px", "t", 8) != 12)
        usleep(100 * 1000);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(stored_offset(i, "px", "t", 7), 3333);
        ck_assert_uint_eq(stored_offset(i, "px", "t", 8), 12);
    }
    /* it keeps serving: sends go on with all three */
    p = login_on(via, 30000);
    uint64_t b2;
    for (unsigned k = 0; k < 5; k++) {
        rc = send_batch(p, "px", "t", "y", k, &b2);
        ck_assert_msg(rc == 0, "after: %d %s", rc, vsc_last_error(p));
    }
    vsc_destroy(p);
    total += 5 * BATCH;
    for (unsigned i = 0; i < 3; i++)
        wait_history(i, "px", "t", total, &hist[i], 30000);
    same_history(&hist[0], &hist[1], 0, 1);
    same_history(&hist[0], &hist[2], 0, 2);
}
END_TEST

static Suite *
pxfer_suite(void)
{
    Suite *s = suite_create("cluster_pxfer");
    TCase *t = tcase_create("lagging");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_lagging_node_transfers);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(pxfer_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
