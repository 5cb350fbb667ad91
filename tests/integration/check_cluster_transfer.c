/*
 * tests/integration/check_cluster_transfer.c - metadata state transfer
 * between real vstreamd processes: 3 nodes with a small WAL (a
 * checkpoint every 88 ops, the journal drained behind it).
 *
 * Covers: a backup stopped while the others commit well past their
 * drained journals restarts, fetches the primary's checkpoint (both logs
 * say so; its snapshot spans two 256 KiB chunks), installs it, converges
 * and lists every stream; SIGKILLed right after the install (before any
 * checkpoint of its own) it boots again and converges; its checkpoint
 * checksum then equals the primary's at the same op. A wiped backup
 * rebuilt with `vstreamd recover` catches up through a transfer (the
 * metrics of both ends count it; `vstream cluster` on it shows the
 * transfer's stage and last result). A snapshot corrupted at rest
 * on the primary (one byte flipped inside a stream name) is refused with
 * a logged reason on both ends and never installed; once the primary
 * checkpoints again the backup installs the fresh one. Partition stats
 * (message counts, sizes, offsets of a topic's partitions, as GetStream
 * and GetTopic report them) read through every node are the same before
 * a transfer of the node that holds the messages, after its install and
 * after its next restart.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/cluster.h"
#include "tests/integration/e2e.h"
#include "tools/client/vsc.h"

/* wal_slots 128, margin 8: a cluster checkpoint every 128 - 8 - 32 = 88
 * ops; the commits below span many of them. */
#define N_OPS 1200u

/* Stream names this long make the first test's snapshot span two
 * chunks (256 KiB each) over the replica links. */
static char long_prefix[232];

static struct vs_cluster cl;
static const char *const extra[] = {
    "--max-streams",           "4096", "--wal-slots", "128",
    "--checkpoint-margin",     "8",    "--http-addr", "127.0.0.1:0",
    "--partition-replication", "true", NULL};

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
    memset(long_prefix, 'a', sizeof(long_prefix) - 1);
    long_prefix[sizeof(long_prefix) - 1] = '\0';
    int rc = vs_cluster_start(&cl, VS_CLUSTER_START_MS);
    ck_assert_msg(rc == 0, "cluster start: %d", rc);
}

static void
teardown(void)
{
    vs_cluster_cleanup(&cl);
}

/* GET /metrics of node i (its --http-addr): the body, malloc'd. */
static char *
metrics_of(unsigned i)
{
    int fd = vs_connect(cl.node[i].ready.http);
    ck_assert_int_ge(fd, 0);
    const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: "
                       "close\r\n\r\n";
    ck_assert_int_eq(e2e_send(fd, req, sizeof req - 1), 0);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    uint64_t deadline = vs_monotonic_ns() + 10000000000ull;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = (int)((deadline - vs_monotonic_ns()) / 1000000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            break;
        if (n + 4096 > cap) {
            buf = realloc(buf, cap *= 2);
            ck_assert_ptr_nonnull(buf);
        }
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return buf;
}

/* The value of the sample line starting with `series ` in node i's
 * metrics, waiting (bounded) until it is at least `min`. */
static double
wait_metric(unsigned i, const char *series, double min, uint32_t ms)
{
    uint64_t end = now_ms() + ms;
    double v = -1;
    char key[160];
    snprintf(key, sizeof(key), "\n%s ", series);
    while (now_ms() < end) {
        char *m = metrics_of(i);
        char *at = strstr(m, key);
        v = at != NULL ? strtod(at + strlen(key), NULL) : -1;
        free(m);
        if (v >= min)
            break;
        usleep(100 * 1000);
    }
    return v;
}

static int
has_stream(struct vsc *c, const char *name)
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

static void
create_range(struct vsc *c, const char *prefix, unsigned from, unsigned to)
{
    char name[300];
    for (unsigned k = from; k < to; k++) {
        snprintf(name, sizeof(name), "%s-%u", prefix, k);
        struct vsc_stream s;
        int rc = vsc_stream_create(c, name, &s);
        ck_assert_msg(rc == 0, "create %s: %d %s", name, rc, vsc_last_error(c));
        vsc_stream_fini(&s);
    }
}

/* Logs in on node i and waits until it is Normal and lists `prefix-k`
 * for every k < n (bounded). Returns the handle. */
static struct vsc *
wait_caught_up(unsigned i, const char *prefix, unsigned n, uint32_t ms)
{
    uint64_t end = now_ms() + ms;
    struct vsc *c = NULL;
    char name[300];
    snprintf(name, sizeof(name), "%s-%u", prefix, n - 1);
    while (now_ms() < end) {
        if (c == NULL)
            c = vs_cluster_login(&cl, i, 3000);
        struct vs_replica_status st;
        if (c != NULL && vs_replica_status(c, &st) == 0 && st.status == 0 &&
            has_stream(c, name) == 1)
            break;
        usleep(100 * 1000);
    }
    ck_assert_msg(c != NULL, "node %u: no login", i);
    for (unsigned k = 0; k < n; k++) {
        snprintf(name, sizeof(name), "%s-%u", prefix, k);
        ck_assert_msg(has_stream(c, name) == 1, "node %u lacks %s", i, name);
    }
    return c;
}

/* Waits until nodes a and b report the same checkpoint op (> 0), then
 * asserts equal checkpoint checksums. */
static void
assert_same_checkpoint(struct vsc *ca, struct vsc *cb, uint32_t ms)
{
    uint64_t end = now_ms() + ms;
    struct vs_replica_status sa, sb;
    memset(&sa, 0, sizeof(sa));
    memset(&sb, 0, sizeof(sb));
    while (now_ms() < end) {
        if (vs_replica_status(ca, &sa) == 0 &&
            vs_replica_status(cb, &sb) == 0 && sa.checkpoint_op > 0 &&
            sa.checkpoint_op == sb.checkpoint_op)
            break;
        usleep(100 * 1000);
    }
    ck_assert_msg(sa.checkpoint_op > 0 && sa.checkpoint_op == sb.checkpoint_op,
                  "checkpoints at ops %llu and %llu",
                  (unsigned long long)sa.checkpoint_op,
                  (unsigned long long)sb.checkpoint_op);
    ck_assert_msg(sa.checkpoint_lo == sb.checkpoint_lo &&
                      sa.checkpoint_hi == sb.checkpoint_hi,
                  "checkpoint checksums differ at op %llu",
                  (unsigned long long)sa.checkpoint_op);
}

/* The k-th node object of `vstream --json cluster` run against node i,
 * copied to obj (NUL-terminated; "" when absent). */
static void
cli_node_json(unsigned i, unsigned k, char *obj, size_t cap)
{
    static char out[64 * 1024];
    char err[4096];
    const char *args[] = {"--json", "cluster", NULL};
    int st = e2e_cli(&cl.node[i], "iggy", NULL, out, sizeof(out), err,
                     sizeof(err), args);
    ck_assert_msg(st == 0, "vstream cluster: %d %s", st, err);
    obj[0] = '\0';
    const char *p = strstr(out, "\"nodes\":[");
    for (unsigned n = 0; p != NULL && n <= k; n++)
        p = strchr(p + 1, '{');
    const char *end = p != NULL ? strchr(p, '}') : NULL;
    if (end == NULL)
        return;
    size_t n = (size_t)(end - p);
    if (n >= cap)
        n = cap - 1;
    memcpy(obj, p, n);
    obj[n] = '\0';
}

/* The unsigned value of `"key":` in obj; -1 when absent or null. */
static int64_t
json_u64(const char *obj, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *v = strstr(obj, pat);
    if (v == NULL || v[strlen(pat)] < '0' || v[strlen(pat)] > '9')
        return -1;
    return (int64_t)strtoull(v + strlen(pat), NULL, 10);
}

START_TEST(test_backup_transfers_after_drain)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    create_range(c0, long_prefix, 0, 20);
    struct vsc *c2 = wait_caught_up(2, long_prefix, 20, 20000);
    vsc_destroy(c2);
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    create_range(c0, long_prefix, 20, N_OPS); /* peers checkpoint and drain */
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    ck_assert_int_eq(vs_wait_file_contains(cl.node[2].log_file,
                                           "state transfer: installed the "
                                           "snapshot",
                                           30000),
                     0);
    ck_assert(vs_file_contains(cl.node[0].log_file,
                               "state transfer: offering replica 2"));
    ck_assert(wait_metric(0, "vstream_state_transfer_served_bytes_total",
                          256 * 1024 + 1, 5000) > 256 * 1024);
    /* killed right after the install, before a checkpoint of its own: it
     * boots on what the install left and converges */
    ck_assert_int_gt(vs_node_kill(&cl.node[2]), -1);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    c2 = wait_caught_up(2, long_prefix, N_OPS, 30000);
    /* the installed checkpoint and later ones are byte-identical */
    assert_same_checkpoint(c0, c2, 20000);
    create_range(c0, "b", 0, 100); /* one more checkpoint on every node */
    vsc_destroy(c2);
    c2 = wait_caught_up(2, "b", 100, 20000);
    assert_same_checkpoint(c0, c2, 20000);
    vsc_destroy(c2);
    vsc_destroy(c0);
}
END_TEST

START_TEST(test_recover_wiped_backup)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    ck_assert_int_gt(vs_node_kill(&cl.node[2]), -1);
    create_range(c0, "r", 0, N_OPS / 2);
    char cmd[800];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cl.node[2].data_dir);
    ck_assert_int_eq(system(cmd), 0);
    const char *argv[64];
    char addrs[VS_CLUSTER_MAX * 34];
    argv[0] = "recover";
    vs_cluster_args(&cl, 2, argv + 1, 63, addrs, sizeof(addrs));
    ck_assert_int_eq(vs_node_spawn(&cl.node[2], argv), 0);
    ck_assert_int_eq(vs_node_wait_exit(&cl.node[2], 20000), 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    ck_assert_int_eq(vs_wait_file_contains(cl.node[2].log_file,
                                           "state transfer: installed the "
                                           "snapshot",
                                           30000),
                     0);
    struct vsc *c2 = wait_caught_up(2, "r", N_OPS / 2, 30000);
    ck_assert_int_eq(vs_wait_file_contains(cl.node[2].log_file,
                                           "rebuilt replica caught up", 20000),
                     0);
    /* the metrics say so on both ends, and the fetch is over */
    ck_assert(wait_metric(2,
                          "vstream_state_transfers_total{result=\"installed\"}",
                          1, 5000) >= 1);
    ck_assert(wait_metric(0, "vstream_state_transfer_served_bytes_total", 1000,
                          5000) >= 1000);
    ck_assert(wait_metric(2, "vstream_state_transfer_stage", 0, 5000) == 0);
    /* `vstream cluster` on the receiving node shows it: the fetch is over
     * (idle, no serving peer) and the last session installed its bytes */
    char obj[4096];
    uint64_t end = now_ms() + 5000;
    do {
        cli_node_json(2, 2, obj, sizeof(obj));
        if (json_u64(obj, "transfer_completed") >= 1)
            break;
        usleep(200 * 1000);
    } while (now_ms() < end);
    ck_assert_msg(strstr(obj, "\"transfer_stage\":\"idle\"") != NULL, "%s",
                  obj);
    ck_assert_msg(strstr(obj, "\"transfer_peer\":null") != NULL, "%s", obj);
    ck_assert_msg(strstr(obj, "\"transfer_last\":\"installed\"") != NULL, "%s",
                  obj);
    ck_assert_int_ge(json_u64(obj, "transfer_completed"), 1);
    ck_assert_int_ge(json_u64(obj, "transfer_sessions"),
                     json_u64(obj, "transfer_completed"));
    ck_assert_int_gt(json_u64(obj, "transfer_last_bytes"), 1000);
    ck_assert_int_ge(json_u64(obj, "transfer_last_ms"), 0);
    /* the serving primary fetched nothing itself */
    cli_node_json(2, 0, obj, sizeof(obj));
    ck_assert_msg(strstr(obj, "\"transfer_stage\":\"idle\"") != NULL &&
                      json_u64(obj, "transfer_completed") == 0,
                  "%s", obj);
    /* the table's TRANSFER column says the same */
    static char tab[64 * 1024];
    char err[4096];
    const char *targs[] = {"cluster", NULL};
    ck_assert_int_eq(e2e_cli(&cl.node[2], "iggy", NULL, tab, sizeof(tab), err,
                             sizeof(err), targs),
                     0);
    ck_assert_msg(strstr(tab, "TRANSFER") != NULL, "%s", tab);
    ck_assert_msg(strstr(tab, "idle; last: installed ") != NULL, "%s", tab);
    vsc_destroy(c2);
    create_range(c0, "r-after", 0, 5);
    vsc_destroy(c0);
}
END_TEST

/* ---- partition stats across an install */

#define PS_PARTS 3u

/* What GetStream and GetTopic report for the stats stream "ps"/"t". */
struct ps_stats {
    uint64_t stream_size, stream_msgs, topic_size, topic_msgs;
    uint64_t offset[PS_PARTS], size[PS_PARTS], msgs[PS_PARTS];
};

/* Reads them through c. 0, or -1 when a call failed or something is
 * missing (a node that is not ready yet). */
static int
ps_read(struct vsc *c, struct ps_stats *out)
{
    memset(out, 0, sizeof(*out));
    struct vsc_id sid = vsc_id_name("ps"), tid = vsc_id_name("t");
    struct vsc_stream st;
    struct vsc_topic tp;
    int found = 0;
    if (vsc_stream_get(c, &sid, &st, &found) != 0 || !found)
        return -1;
    out->stream_size = st.size_bytes;
    out->stream_msgs = st.messages_count;
    vsc_stream_fini(&st);
    found = 0;
    if (vsc_topic_get(c, &sid, &tid, &tp, &found) != 0 || !found)
        return -1;
    int rc = tp.n_partitions == PS_PARTS ? 0 : -1;
    out->topic_size = tp.size_bytes;
    out->topic_msgs = tp.messages_count;
    for (size_t k = 0; rc == 0 && k < tp.n_partitions; k++) {
        uint32_t id = tp.partitions[k].id;
        if (id >= PS_PARTS) {
            rc = -1;
            break;
        }
        out->offset[id] = tp.partitions[k].current_offset;
        out->size[id] = tp.partitions[k].size_bytes;
        out->msgs[id] = tp.partitions[k].messages_count;
    }
    vsc_topic_fini(&tp);
    return rc;
}

static void
ps_format(const struct ps_stats *s, char *out, size_t cap)
{
    int n = snprintf(
        out, cap,
        "stream %llu B %llu msgs, topic %llu B %llu "
        "msgs;",
        (unsigned long long)s->stream_size, (unsigned long long)s->stream_msgs,
        (unsigned long long)s->topic_size, (unsigned long long)s->topic_msgs);
    for (unsigned k = 0; k < PS_PARTS && n > 0 && (size_t)n < cap; k++)
        n += snprintf(out + n, cap - (size_t)n, " p%u: off %llu %llu B %llu", k,
                      (unsigned long long)s->offset[k],
                      (unsigned long long)s->size[k],
                      (unsigned long long)s->msgs[k]);
}

/* ps_read until it succeeds with `msgs` messages in the topic (bounded:
 * a partition group's backup refreshes its counters about a second after
 * its commit moved). 0 or the last failure. */
static int
ps_read_settled(struct vsc *c, struct ps_stats *out, uint64_t msgs)
{
    int rc = -1;
    for (int k = 0; k < 100; k++) {
        rc = ps_read(c, out);
        if (rc == 0 && out->topic_msgs == msgs)
            return 0;
        usleep(100 * 1000);
    }
    return rc != 0 ? rc : -1;
}

/* Reads them through node i (bounded wait: a restarted node's owner
 * opens its partitions at its first sync, until then it reports zeros)
 * until they equal `want`; asserts they do. */
static void
ps_assert_node(unsigned i, const struct ps_stats *want, const char *when)
{
    struct vsc *c = NULL;
    struct ps_stats got;
    memset(&got, 0, sizeof(got));
    int rc = -1;
    uint64_t end = now_ms() + 20000;
    while (now_ms() < end) {
        if (c == NULL)
            c = vs_cluster_login(&cl, i, 3000);
        rc = c != NULL ? ps_read(c, &got) : -1;
        if (rc == 0 && memcmp(&got, want, sizeof(got)) == 0)
            break;
        usleep(100 * 1000);
    }
    char a[512], b[512];
    ps_format(&got, a, sizeof(a));
    ps_format(want, b, sizeof(b));
    ck_assert_msg(rc == 0 && memcmp(&got, want, sizeof(got)) == 0,
                  "%s: node %u reports %s; expected %s", when, i, a, b);
    if (c != NULL)
        vsc_destroy(c);
}

/* Partition stats live outside the op log. Node 0 (the metadata
 * primary) takes the messages (with partition replication every node
 * holds each partition and its counters settle to the same values; without
 * it the others list the partitions, empty), then falls behind and
 * installs a transferred snapshot. What every node reports for the
 * partitions (GetStream, GetTopic) is the same before the transfer, after
 * the install and after a further restart of the transferred node; the
 * transferred node keeps reporting exactly what its sends produced. */
START_TEST(test_partition_stats_survive_install)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    struct vsc_stream st;
    ck_assert_int_eq(vsc_stream_create(c0, "ps", &st), 0);
    vsc_stream_fini(&st);
    struct vsc_id sid = vsc_id_name("ps"), tid = vsc_id_name("t");
    ck_assert_int_eq(vsc_topic_create(c0, &sid, PS_PARTS, "t", NULL, 0, NULL),
                     0);
    /* a different count and payload size per partition */
    char payload[300];
    memset(payload, 'p', sizeof(payload));
    for (uint32_t p = 0; p < PS_PARTS; p++) {
        for (uint32_t k = 0; k < 4 + 3 * p; k++) {
            struct vsc_msg m[5];
            memset(m, 0, sizeof(m));
            for (unsigned j = 0; j < 5; j++) {
                m[j].payload = payload;
                m[j].payload_len = 10 + 90 * p + j;
            }
            struct vsc_partitioning pp = vsc_part_id(p);
            struct vsc_sent sent;
            int rc = vsc_send(c0, &sid, &tid, &pp, m, 5, &sent);
            ck_assert_msg(rc == 0, "send to partition %u: %d %s", p, rc,
                          vsc_last_error(c0));
        }
    }
    struct ps_stats before[VS_CLUSTER_MAX];
    ck_assert_int_eq(ps_read_settled(c0, &before[0], 5u * (4 + 7 + 10)), 0);
    ck_assert_uint_eq(before[0].topic_msgs, 5u * (4 + 7 + 10));
    ck_assert_uint_eq(before[0].stream_msgs, before[0].topic_msgs);
    for (unsigned p = 0; p < PS_PARTS; p++) {
        ck_assert_uint_eq(before[0].msgs[p], 5u * (4 + 3 * p));
        ck_assert_uint_eq(before[0].offset[p], before[0].msgs[p] - 1);
        ck_assert_uint_gt(before[0].size[p], 5u * (10 + 90 * p));
    }
    vsc_destroy(c0);
    /* every node's reading, once its partitions are open */
    for (unsigned i = 1; i < cl.n; i++) {
        struct vsc *c = vs_cluster_login(&cl, i, 20000);
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(ps_read_settled(c, &before[i], before[0].topic_msgs),
                         0);
        vsc_destroy(c);
    }
    /* node 0 (the primary, holding the messages) falls behind the drained
     * journals of the others, which elect a new primary; back, it
     * installs a transferred snapshot */
    ck_assert_int_eq(vs_node_stop(&cl.node[0], 10000), 0);
    struct vsc *c1 = vs_cluster_login(&cl, 1, 30000);
    ck_assert_ptr_nonnull(c1);
    create_range(c1, "s", 0, N_OPS);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 0, VS_CLUSTER_START_MS), 0);
    ck_assert_int_eq(vs_wait_file_contains(cl.node[0].log_file,
                                           "state transfer: installed the "
                                           "snapshot",
                                           30000),
                     0);
    struct vsc *c = wait_caught_up(0, "s", N_OPS, 30000);
    vsc_destroy(c);
    for (unsigned i = 0; i < cl.n; i++)
        ps_assert_node(i, &before[i], "after node 0's install");
    /* and after a further restart of the transferred node */
    ck_assert_int_eq(vs_node_stop(&cl.node[0], 10000), 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 0, VS_CLUSTER_START_MS), 0);
    c = wait_caught_up(0, "s", N_OPS, 30000);
    vsc_destroy(c);
    for (unsigned i = 0; i < cl.n; i++)
        ps_assert_node(i, &before[i], "after a restart of node 0");
    vsc_destroy(c1);
}
END_TEST

/* Flips one byte of a stream name inside node i's snapshot.bin payload.
 * Returns 0, or -1 if no name was found. */
static int
corrupt_snapshot_name(unsigned i, const char *needle)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/metadata/snapshot.bin",
             cl.node[i].data_dir);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(pread(fd, buf, len, 0), (ssize_t)len);
    size_t nl = strlen(needle);
    int rc = -1;
    for (size_t off = len / 2; off + nl < len; off++) {
        if (memcmp(buf + off, needle, nl) == 0) {
            uint8_t b = buf[off] ^ 0x01;
            ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
            rc = 0;
            break;
        }
    }
    ck_assert_int_eq(fsync(fd), 0);
    close(fd);
    free(buf);
    return rc;
}

START_TEST(test_corrupt_snapshot_never_served)
{
    struct vsc *c0 = vs_cluster_login(&cl, 0, 20000);
    ck_assert_ptr_nonnull(c0);
    ck_assert_int_eq(vs_node_stop(&cl.node[2], 10000), 0);
    create_range(c0, "c", 0, N_OPS / 2);
    ck_assert_int_eq(corrupt_snapshot_name(0, "c-"), 0);
    ck_assert_int_eq(vs_cluster_start_node(&cl, 2, VS_CLUSTER_START_MS), 0);
    /* refused on the primary with its reason, and the fetch ends on the
     * backup without an install */
    ck_assert_int_eq(vs_wait_file_contains(cl.node[0].log_file,
                                           "state transfer: stopped serving "
                                           "the snapshot",
                                           30000),
                     0);
    ck_assert_int_eq(vs_wait_file_contains(cl.node[2].log_file,
                                           "state transfer: ended without an "
                                           "install",
                                           30000),
                     0);
    ck_assert(!vs_file_contains(cl.node[2].log_file,
                                "state transfer: installed the snapshot"));
    /* a fresh checkpoint on the primary replaces the rotten file: the
     * backup installs that one and converges */
    create_range(c0, "d", 0, 100);
    ck_assert_int_eq(vs_wait_file_contains(cl.node[2].log_file,
                                           "state transfer: installed the "
                                           "snapshot",
                                           60000),
                     0);
    struct vsc *c2 = wait_caught_up(2, "d", 100, 30000);
    vsc_destroy(c2);
    c2 = wait_caught_up(2, "c", N_OPS / 2, 5000);
    vsc_destroy(c2);
    vsc_destroy(c0);
}
END_TEST

static Suite *
transfer_suite(void)
{
    Suite *s = suite_create("cluster_transfer");
    TCase *t = tcase_create("transfer");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 240);
    tcase_add_test(t, test_backup_transfers_after_drain);
    tcase_add_test(t, test_recover_wiped_backup);
    tcase_add_test(t, test_corrupt_snapshot_never_served);
    tcase_add_test(t, test_partition_stats_survive_install);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(transfer_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
