/*
 * tests/integration/check_cluster_dlinks.c - the data shards' links of a
 * real 3-node cluster with 2 data shards per node (shard/link/mesh.h,
 * shard/serve/dlinks.h), observed through each node's /metrics.
 *
 * Covers: every shard's links come up (vstream_data_links_up{shard} = 2
 * on every node, every peer's state 2) and carry beats (the keepalive
 * frames of an empty group list); a node SIGKILLed by pid takes its
 * peers' links to it down (up = 1, its state 0) and they come back when
 * it restarts; a node started with another cluster secret is refused by
 * every shard of its peers (logged, counted) while they stay linked to
 * each other; an address plan whose ports collide or overflow refuses
 * the boot (exit 2, the reason on stderr). Every wait is bounded.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/cluster.h"

#define SHARDS  2
#define WAIT_MS 30000u

static struct vs_cluster cl;
static const char *const extra[] = {"--shards", "2", "--http-addr",
                                    "127.0.0.1:0", NULL};

static uint64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* GET /metrics from node i into buf (NUL-terminated). 0 or -errno. */
static int
metrics(unsigned i, char *buf, size_t cap)
{
    if (vs_node_read_ready(&cl.node[i]) != 0 || cl.node[i].ready.http[0] == 0)
        return -ENOENT;
    int fd = vs_connect(cl.node[i].ready.http);
    if (fd < 0)
        return fd;
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    const char req[] =
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
        close(fd);
        return -EIO;
    }
    size_t n = 0;
    for (;;) {
        if (n + 1 >= cap)
            break;
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return strstr(buf, "\r\n\r\n") != NULL ? 0 : -EIO;
}

/* The value of the sample `series` ("name{labels}"), or -1. */
static long long
sample(const char *text, const char *series)
{
    size_t len = strlen(series);
    for (const char *p = text; (p = strstr(p, series)) != NULL; p += len) {
        if ((p == text || p[-1] == '\n') && p[len] == ' ')
            return strtoll(p + len + 1, NULL, 10);
    }
    return -1;
}

static long long
node_sample(unsigned i, const char *series)
{
    static char buf[1 << 20];
    if (metrics(i, buf, sizeof(buf)) != 0)
        return -1;
    return sample(buf, series);
}

/* Waits until node i's data_links_up is `want` on every shard. */
static int
wait_links_up(unsigned i, long long want)
{
    uint64_t end = now_ms() + WAIT_MS;
    char series[96];
    do {
        int all = 1;
        for (unsigned s = 1; s <= SHARDS && all; s++) {
            snprintf(series, sizeof(series),
                     "vstream_data_links_up{shard=\"%u\"}", s);
            all = node_sample(i, series) == want;
        }
        if (all)
            return 1;
        usleep(50 * 1000);
    } while (now_ms() < end);
    return 0;
}

static long long
peer_state(unsigned i, unsigned shard, unsigned peer)
{
    char series[128];
    snprintf(series, sizeof(series),
             "vstream_data_link_state{shard=\"%u\",peer=\"%u\"}", shard, peer);
    return node_sample(i, series);
}

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_cluster_init(&cl, 3), 0);
    cl.extra = extra;
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

START_TEST(test_links_up_down_and_back)
{
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_msg(wait_links_up(i, 2), "node %u: data links not up", i);
    for (unsigned i = 0; i < 3; i++)
        for (unsigned s = 1; s <= SHARDS; s++)
            for (unsigned p = 0; p < 3; p++)
                if (p != i)
                    ck_assert_int_eq(peer_state(i, s, p), 2);
    /* the links carry beats: the keepalives arrive (every 500 ms) */
    uint64_t end = now_ms() + WAIT_MS;
    long long beats = -1;
    while (now_ms() < end &&
           (beats = node_sample(
                1, "vstream_data_link_beats_received_total{shard=\"2\"}")) < 2)
        usleep(100 * 1000);
    ck_assert_int_ge(beats, 2);
    ck_assert(vs_file_contains(cl.node[0].log_file,
                               "shard 1 data link to replica 2 up"));

    /* node 2 dies (SIGKILL to its supervisor, by pid): its peers' links
     * to it go down on every shard, theirs to each other stay */
    vs_node_kill(&cl.node[2]);
    for (unsigned i = 0; i < 2; i++) {
        ck_assert_msg(wait_links_up(i, 1), "node %u: links to 2 not down", i);
        for (unsigned s = 1; s <= SHARDS; s++) {
            ck_assert_int_eq(peer_state(i, s, 2), 0);
            ck_assert_int_eq(peer_state(i, s, 1 - i), 2);
        }
    }
    /* it comes back: all links up again, on every node */
    rc = vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "restart of node 2: %d", rc);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_msg(wait_links_up(i, 2), "node %u: data links not back", i);
}
END_TEST

START_TEST(test_wrong_secret_refused)
{
    ck_assert_int_eq(vs_cluster_start_node(&cl, 0, VS_CLUSTER_START_MS), 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 1, VS_CLUSTER_START_MS), 0);
    /* node 2 gets a secret of its own */
    char good[sizeof(cl.secret_file)];
    memcpy(good, cl.secret_file, sizeof(good));
    snprintf(cl.secret_file, sizeof(cl.secret_file), "%s/other-secret", cl.dir);
    int fd = open(cl.secret_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    uint8_t key[32];
    memset(key, 0x42, sizeof(key));
    ck_assert_int_eq(write(fd, key, sizeof(key)), (ssize_t)sizeof(key));
    close(fd);
    int rc = vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS);
    memcpy(cl.secret_file, good, sizeof(good));
    ck_assert_msg(rc == 0, "node 2 start: %d", rc);

    for (unsigned i = 0; i < 2; i++)
        ck_assert_msg(wait_links_up(i, 1), "node %u: not linked to %u", i,
                      1 - i);
    /* every shard of node 0 (the dialer) refuses node 2's answer */
    for (unsigned s = 1; s <= SHARDS; s++) {
        char needle[96];
        snprintf(needle, sizeof(needle),
                 "shard %u data link with replica 2 refused: bad MAC", s);
        ck_assert_msg(
            vs_wait_file_contains(cl.node[0].log_file, needle, WAIT_MS) == 0,
            "node 0 log lacks '%s'", needle);
        char series[96];
        snprintf(series, sizeof(series),
                 "vstream_data_link_refused_total{shard=\"%u\"}", s);
        /* published at the shard's next tick */
        uint64_t end = now_ms() + WAIT_MS;
        long long refused;
        while ((refused = node_sample(0, series)) < 1 && now_ms() < end)
            usleep(50 * 1000);
        ck_assert_msg(refused > 0, "%s = %lld", series, refused);
        ck_assert_int_eq(peer_state(0, s, 2), 0);
    }
    /* and node 2 stays unlinked for a while */
    for (int r = 0; r < 10; r++) {
        ck_assert_int_eq(node_sample(2, "vstream_data_links_up{shard=\"1\"}"),
                         0);
        ck_assert_int_eq(node_sample(2, "vstream_data_links_up{shard=\"2\"}"),
                         0);
        usleep(100 * 1000);
    }
}
END_TEST

/* The address plan is checked before anything starts: exit 2, one line. */
START_TEST(test_bad_plan_refused_at_boot)
{
    struct vs_node *n = &cl.node[0];
    char addrs[128];
    int p = atoi(strchr(cl.replica[0], ':') + 1);
    /* stride 1: node 0's shard 1 would take node 1's replica port */
    snprintf(addrs, sizeof(addrs), "127.0.0.1:%d,127.0.0.1:%d", p, p + 1);
    const char *collide[] = {"--replica-id",
                             "0",
                             "--replica-addrs",
                             addrs,
                             "--cluster-secret-file",
                             cl.secret_file,
                             "--shards",
                             "2",
                             "--data-link-port-stride",
                             "1",
                             NULL};
    ck_assert_int_eq(vs_node_start(n, collide, 10000), -ECHILD);
    ck_assert_int_eq(WEXITSTATUS(n->status), 2);
    ck_assert_msg(vs_file_contains(n->stderr_file,
                                   "replica 0's data shard 1 and replica "
                                   "1's replica port would both listen"),
                  "no collision reason on stderr");
    /* a derived port past 65535 */
    snprintf(addrs, sizeof(addrs), "127.0.0.1:%d,127.0.0.1:65500", p);
    const char *range[] = {"--replica-id",
                           "0",
                           "--replica-addrs",
                           addrs,
                           "--cluster-secret-file",
                           cl.secret_file,
                           "--shards",
                           "2",
                           NULL};
    ck_assert_int_eq(vs_node_start(n, range, 10000), -ECHILD);
    ck_assert_int_eq(WEXITSTATUS(n->status), 2);
    ck_assert_msg(vs_file_contains(n->stderr_file, "port 65600"),
                  "no range reason on stderr");
}
END_TEST

static Suite *
dlinks_suite(void)
{
    Suite *s = suite_create("cluster_dlinks");
    TCase *tc = tcase_create("links");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_links_up_down_and_back);
    tcase_add_test(tc, test_wrong_secret_refused);
    tcase_add_test(tc, test_bad_plan_refused_at_boot);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(dlinks_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
