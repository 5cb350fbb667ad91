/*
 * tests/integration/check_cluster_basic.c - a real 3-node cluster on
 * loopback (tests/integration/cluster.h): genesis by the first primary,
 * metadata written through any node (a backup forwards to the primary)
 * readable on the node that answered at once and on every node soon
 * after, cluster metadata naming the one Leader with every node's real
 * client address, the CLI pointed at a backup settling on the leader
 * (login, metadata writes, sends and polls work); with partition
 * replication (the default) handles that stay on backups send and poll
 * there (a send to a node that is not the partition group's primary is
 * forwarded) and read the same messages on every node, without it the
 * partition plane on a backup is refused with 58 naming the leader and
 * the library follows there; equal checkpoint checksums and
 * byte-identical snapshots on all three replicas.
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
#include "tests/integration/e2e.h"
#include "tools/client/vsc.h"

static struct vs_cluster cl;

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
start(const char *const *extra)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    cl.extra = extra;
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static const char *const replicated[] = {"--partition-replication", "true",
                                         NULL};
static const char *const unreplicated[] = {"--partition-replication", "false",
                                           NULL};

static void
setup(void)
{
    start(replicated);
}

static void
setup_unreplicated(void)
{
    start(unreplicated);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

static int
stream_found(struct vsc *c, const char *name)
{
    struct vsc_stream s;
    int found = 0;
    struct vsc_id id = vsc_id_name(name);
    if (vsc_stream_get(c, &id, &s, &found) != 0)
        return -1;
    if (found)
        vsc_stream_fini(&s);
    return found;
}

/* Waits (bounded) until every node lists the stream. */
static void
wait_everywhere(struct vsc **c, const char *name)
{
    for (unsigned i = 0; i < cl.n; i++) {
        uint64_t end = now_ms() + 10000;
        int f;
        while ((f = stream_found(c[i], name)) == 0 && now_ms() < end)
            usleep(20 * 1000);
        ck_assert_msg(f == 1, "stream %s not on node %u", name, i);
    }
}

START_TEST(test_commit_through_any_node)
{
    struct vsc *c[3];
    for (unsigned i = 0; i < 3; i++) {
        c[i] = vs_cluster_login(&cl, i, 20000);
        ck_assert_msg(c[i] != NULL, "login on node %u", i);
    }
    char name[32];
    for (unsigned round = 0; round < 2; round++)
        for (unsigned i = 0; i < 3; i++) {
            struct vsc_stream s;
            snprintf(name, sizeof(name), "s-%u-%u", round, i);
            int rc = vsc_stream_create(c[i], name, &s);
            ck_assert_msg(rc == 0, "create %s via node %u: %d %s", name, i, rc,
                          vsc_last_error(c[i]));
            vsc_stream_fini(&s);
            /* read your writes on the node that answered */
            ck_assert_int_eq(stream_found(c[i], name), 1);
            wait_everywhere(c, name);
        }
    /* a duplicate name is refused through a backup as on the primary */
    struct vsc_stream s;
    ck_assert_int_eq(vsc_stream_create(c[2], "s-0-0", &s),
                     VS_E_STREAM_NAME_ALREADY_EXISTS);
    for (unsigned i = 0; i < 3; i++) {
        struct vsc_stream *v = NULL;
        size_t n = 0;
        ck_assert_int_eq(vsc_stream_list(c[i], &v, &n), 0);
        ck_assert_uint_eq(n, 6);
        for (size_t k = 0; k < n; k++)
            vsc_stream_fini(&v[k]);
        free(v);
        vsc_destroy(c[i]);
    }
}
END_TEST

START_TEST(test_cluster_metadata)
{
    struct vsc *c[3];
    for (unsigned i = 0; i < 3; i++) {
        c[i] = vs_cluster_login(&cl, i, 20000);
        ck_assert_msg(c[i] != NULL, "login on node %u", i);
    }
    for (unsigned i = 0; i < 3; i++) {
        /* every link up: every node Healthy (bounded wait) */
        struct vsc_cluster m;
        uint64_t end = now_ms() + 10000;
        int healthy = 0;
        while (!healthy && now_ms() < end) {
            memset(&m, 0, sizeof(m));
            ck_assert_int_eq(vsc_cluster(c[i], &m), 0);
            healthy = m.n_nodes == 3;
            for (size_t k = 0; healthy && k < m.n_nodes; k++)
                healthy = m.nodes[k].status == 0;
            if (!healthy) {
                vsc_cluster_fini(&m);
                usleep(50 * 1000);
            }
        }
        ck_assert_msg(healthy, "node %u: not every node healthy", i);
        unsigned leaders = 0;
        for (size_t k = 0; k < m.n_nodes; k++) {
            char addr[300];
            snprintf(addr, sizeof(addr), "%s:%u", m.nodes[k].ip,
                     m.nodes[k].tcp);
            ck_assert_str_eq(addr, cl.client[k]);
            if (m.nodes[k].role == 0) {
                leaders++;
                ck_assert_uint_eq(k, 0); /* view 0: replica 0 leads */
            }
        }
        ck_assert_uint_eq(leaders, 1);
        vsc_cluster_fini(&m);

        struct vs_replica_status st;
        ck_assert_int_eq(vs_replica_status(c[i], &st), 0);
        ck_assert_uint_eq(st.count, 3);
        ck_assert_uint_eq(st.self, i);
        ck_assert_uint_eq(st.leader, 0);
        ck_assert_uint_eq(st.status, 0);     /* Normal */
        ck_assert_uint_ge(st.commit_min, 1); /* genesis */
    }

    for (unsigned i = 0; i < 3; i++)
        vsc_destroy(c[i]);
}
END_TEST

/* Reads a whole file (NULL if it cannot). */
static uint8_t *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    size_t k;
    while (b != NULL && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    *len = n;
    return b;
}

START_TEST(test_equal_checkpoints)
{
    struct vsc *c[3];
    for (unsigned i = 0; i < 3; i++) {
        c[i] = vs_cluster_login(&cl, i, 20000);
        ck_assert_msg(c[i] != NULL, "login on node %u", i);
    }
    /* The test profile checkpoints a cluster at every multiple of
     * 64 - 8 - 32 = 24 ops: 40 streams pass op 24 on every replica. */
    char name[32];
    for (unsigned k = 0; k < 40; k++) {
        struct vsc_stream s;
        snprintf(name, sizeof(name), "ck-%u", k);
        int rc = vsc_stream_create(c[k % 3], name, &s);
        ck_assert_msg(rc == 0, "create %s: %d %s", name, rc,
                      vsc_last_error(c[k % 3]));
        vsc_stream_fini(&s);
    }
    struct vs_replica_status st[3];
    uint64_t end = now_ms() + 10000;
    int same = 0;
    while (!same && now_ms() < end) {
        for (unsigned i = 0; i < 3; i++)
            ck_assert_int_eq(vs_replica_status(c[i], &st[i]), 0);
        same = st[0].checkpoint_op >= 24 &&
               st[1].checkpoint_op == st[0].checkpoint_op &&
               st[2].checkpoint_op == st[0].checkpoint_op;
        if (!same)
            usleep(50 * 1000);
    }
    ck_assert_msg(same, "checkpoints %llu %llu %llu",
                  (unsigned long long)st[0].checkpoint_op,
                  (unsigned long long)st[1].checkpoint_op,
                  (unsigned long long)st[2].checkpoint_op);
    for (unsigned i = 1; i < 3; i++) {
        ck_assert_uint_eq(st[i].checkpoint_lo, st[0].checkpoint_lo);
        ck_assert_uint_eq(st[i].checkpoint_hi, st[0].checkpoint_hi);
    }
    ck_assert(st[0].checkpoint_lo != 0 || st[0].checkpoint_hi != 0);
    /* and the snapshot files are byte-identical */
    uint8_t *snap[3];
    size_t len[3];
    for (unsigned i = 0; i < 3; i++) {
        char path[400];
        snprintf(path, sizeof(path), "%s/metadata/snapshot.bin",
                 cl.node[i].data_dir);
        snap[i] = slurp(path, &len[i]);
        ck_assert_msg(snap[i] != NULL, "%s", path);
    }
    for (unsigned i = 1; i < 3; i++) {
        ck_assert_uint_eq(len[i], len[0]);
        ck_assert(memcmp(snap[i], snap[0], len[0]) == 0);
    }
    for (unsigned i = 0; i < 3; i++) {
        free(snap[i]);
        vsc_destroy(c[i]);
    }
}
END_TEST

/* The CLI pointed at a backup: every command lands on the leader
 * (stream and topic "demo"/"events" of 2 partitions, "hello-cluster" sent
 * to partition 0 through node 1 and polled through node 2), and the
 * cluster command lists the nodes. */
static void
cli_through_backups(void)
{
    char out[8192], err[4096];
    const char *mk[] = {"stream", "create", "demo", NULL};
    int st = -1;
    uint64_t end = now_ms() + 20000;
    while (st != 0 && now_ms() < end) {
        st = e2e_cli(&cl.node[1], "iggy", NULL, out, sizeof(out), err,
                     sizeof(err), mk);
        if (st != 0)
            usleep(200 * 1000);
    }
    ck_assert_msg(st == 0, "stream create: %s", err);
    const char *tp[] = {"topic",        "create", "demo", "events",
                        "--partitions", "2",      NULL};
    st = e2e_cli(&cl.node[2], "iggy", NULL, out, sizeof(out), err, sizeof(err),
                 tp);
    ck_assert_msg(st == 0, "topic create: %s", err);
    const char *snd[] = {"send", "demo", "events", "--partition", "0", NULL};
    st = e2e_cli(&cl.node[1], "iggy", "hello-cluster\n", out, sizeof(out), err,
                 sizeof(err), snd);
    ck_assert_msg(st == 0, "send: %s", err);
    const char *pl[] = {"poll", "demo",    "events", "--partition",
                        "0",    "--first", NULL};
    st = e2e_cli(&cl.node[2], "iggy", NULL, out, sizeof(out), err, sizeof(err),
                 pl);
    ck_assert_msg(st == 0, "poll: %s", err);
    ck_assert_msg(strstr(out, "hello-cluster") != NULL, "poll: %s", out);
    const char *cj[] = {"--json", "cluster", NULL};
    st = e2e_cli(&cl.node[2], "iggy", NULL, out, sizeof(out), err, sizeof(err),
                 cj);
    ck_assert_msg(st == 0, "cluster: %s", err);
    ck_assert(strstr(out, "\"nodes\":[") != NULL);
    ck_assert(strstr(out, "\"role\":\"leader\"") != NULL);
    ck_assert(strstr(out, "\"log_view\":0") != NULL);
    ck_assert(strstr(out, "\"link\":\"up\"") != NULL);
    ck_assert(strstr(out, cl.client[2]) != NULL);
}

/* A handle that stays on a backup without following: with partition
 * replication the backup serves polls and sends itself (a send reaching
 * a node that is not the partition group's primary is forwarded there),
 * and what one node acknowledged every node serves. */
static struct vsc *
backup_handle(unsigned i)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl.client[i];
    o.io_timeout_ms = 10000;
    o.no_follow = 1;
    struct vsc *c = vsc_create(&o);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(vsc_login(c, "iggy", "iggy", NULL), 0);
    ck_assert_str_eq(vsc_addr(c), cl.client[i]);
    return c;
}

/* Polls partition p of demo/events through c until it holds `want`
 * messages (bounded: a backup hears a commit a tick after the primary);
 * returns the count last seen. */
static uint32_t
poll_until(struct vsc *c, uint32_t p, uint32_t want)
{
    struct vsc_id sid = vsc_id_name("demo"), tid = vsc_id_name("events");
    struct vsc_id cid = vsc_id_num(1);
    struct vsc_poll_args pa;
    memset(&pa, 0, sizeof(pa));
    pa.consumer = vsc_consumer_single(&cid);
    pa.has_partition = 1;
    pa.partition_id = p;
    pa.strategy = VSC_POLL_FIRST;
    pa.count = 10;
    uint32_t n = 0;
    uint64_t end = now_ms() + 10000;
    while (now_ms() < end) {
        struct vsc_polled polled;
        memset(&polled, 0, sizeof(polled));
        int rc = vsc_poll(c, &sid, &tid, &pa, &polled);
        ck_assert_msg(rc == 0, "poll on %s: %d %s", vsc_addr(c), rc,
                      vsc_last_error(c));
        n = polled.n;
        vsc_polled_fini(&polled);
        if (n >= want)
            break;
        usleep(50 * 1000);
    }
    return n;
}

START_TEST(test_backup_data_plane_and_cli)
{
    cli_through_backups();
    struct vsc *b1 = backup_handle(1), *b2 = backup_handle(2);
    ck_assert_uint_eq(poll_until(b1, 0, 1), 1);
    struct vsc_id sid = vsc_id_name("demo"), tid = vsc_id_name("events");
    for (uint32_t p = 0; p < 2; p++) {
        struct vsc_msg m;
        memset(&m, 0, sizeof(m));
        m.payload = (const uint8_t *)"via-backup";
        m.payload_len = 10;
        struct vsc_partitioning pp = vsc_part_id(p);
        struct vsc_sent sent;
        int rc = vsc_send(b1, &sid, &tid, &pp, &m, 1, &sent);
        ck_assert_msg(rc == 0, "send to partition %u through node 1: %d %s", p,
                      rc, vsc_last_error(b1));
    }
    ck_assert_uint_eq(poll_until(b2, 0, 2), 2);
    ck_assert_uint_eq(poll_until(b2, 1, 1), 1);
    ck_assert_uint_eq(poll_until(b1, 1, 1), 1);
    vsc_destroy(b1);
    vsc_destroy(b2);
}
END_TEST

/* Without partition replication only the leader's node serves the
 * partition plane: a handle that stays on a backup is answered 58 naming
 * the leader; the library with leader following moves there by itself. */
START_TEST(test_backup_refuses_data_unreplicated)
{
    cli_through_backups();
    /* a handle that stays on the backup: 58 naming the leader */
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl.client[1];
    o.io_timeout_ms = 3000; /* the 58 is retried until then */
    o.no_follow = 1;
    struct vsc *c = vsc_create(&o);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(vsc_login(c, "iggy", "iggy", NULL), 0);
    struct vsc_id sid = vsc_id_name("demo"), tid = vsc_id_name("events");
    struct vsc_poll_args pa;
    memset(&pa, 0, sizeof(pa));
    struct vsc_id cid = vsc_id_num(1);
    pa.consumer = vsc_consumer_single(&cid);
    pa.has_partition = 1;
    pa.strategy = VSC_POLL_FIRST;
    pa.count = 10;
    struct vsc_polled polled;
    ck_assert_int_eq(vsc_poll(c, &sid, &tid, &pa, &polled), VS_E_NOT_ACCEPTED);
    size_t rl;
    const uint8_t *rep = vsc_last_reply(c, &rl);
    ck_assert_uint_ge(rl, 256 + 4);
    uint32_t n;
    memcpy(&n, rep + 256, 4);
    ck_assert_uint_eq(n, strlen(cl.client[0]));
    ck_assert(memcmp(rep + 260, cl.client[0], n) == 0);
    vsc_destroy(c);

    /* the library with leader following moves there by itself */
    o.no_follow = 0;
    o.io_timeout_ms = 10000;
    c = vsc_create(&o);
    ck_assert_int_eq(vsc_login(c, "iggy", "iggy", NULL), 0);
    ck_assert_str_eq(vsc_addr(c), cl.client[0]);
    memset(&polled, 0, sizeof(polled));
    ck_assert_int_eq(vsc_poll(c, &sid, &tid, &pa, &polled), 0);
    ck_assert_uint_eq(polled.n, 1);
    vsc_polled_fini(&polled);
    vsc_destroy(c);
}
END_TEST

static Suite *
cluster_suite(void)
{
    Suite *s = suite_create("cluster_basic");
    TCase *t = tcase_create("three_nodes");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_commit_through_any_node);
    tcase_add_test(t, test_cluster_metadata);
    tcase_add_test(t, test_equal_checkpoints);
    tcase_add_test(t, test_backup_data_plane_and_cli);
    suite_add_tcase(s, t);
    TCase *u = tcase_create("three_nodes_unreplicated");
    tcase_add_checked_fixture(u, setup_unreplicated, teardown);
    tcase_set_timeout(u, 120);
    tcase_add_test(u, test_backup_refuses_data_unreplicated);
    suite_add_tcase(s, u);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(cluster_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
