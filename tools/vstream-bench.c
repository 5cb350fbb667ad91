/*
 * tools/vstream-bench.c - metadata throughput and latency of a running node.
 *
 * Role: N client threads, each with its own connection and session
 * (tools/client/vsc.h), run a fixed number of metadata operations against
 * a running node and report ops/s and p50/p99/max latency. The default
 * workload alternates CreateStream and DeleteStream of a per-thread name
 * (every op goes through the one-replica commit path: client table,
 * prepare, WAL fsync, apply, publish, reply); `--op read` measures
 * GetStreams (NonReplicated, served by the data shard) for contrast.
 * Data plane: `--op send` (N producers, each sending --ops
 * batches of --batch messages of --msg-size bytes to its own partition
 * i % partitions of --stream/--topic, created if missing, with the topic
 * option enforce_fsync = --enforce-fsync) and `--op poll` (N consumers
 * reading their partition from offset 0 by --batch messages, --ops polls
 * at most); `--op raw --dir D` is the baseline: append a batch of the
 * same size to a file in D and fdatasync it, --ops times. Throughput is
 * reported in messages/s and MB/s of payload (10^6 bytes).
 * Not run by make check; the numbers are reported, never asserted.
 * Callers: a user's shell.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "tools/client/vsc.h"

struct bench {
    const char *addr;
    const char *tls_ca, *tls_name; /* TLS when tls_ca is set */
    const char *user;
    const char *password;
    uint32_t clients;
    uint32_t ops;
    int read_only;
    int op; /* BENCH_* */
    const char *stream, *topic, *dir;
    uint32_t partitions, batch, msg_size;
    int enforce_fsync;
    uint8_t *batch_buf; /* the prebuilt batch (send, raw) */
    size_t batch_len;
};

enum { BENCH_META = 0, BENCH_SEND = 1, BENCH_POLL = 2, BENCH_RAW = 3 };

struct worker {
    const struct bench *b;
    uint32_t index;
    uint64_t *lat_ns; /* ops entries */
    uint32_t done;
    uint64_t msgs;
    int err;
    char msg[512];
    pthread_t th;
};

/* Producer or consumer of one partition (i % partitions). */
static void *
bench_data_worker(void *arg)
{
    struct worker *w = arg;
    const struct bench *b = w->b;
    struct vsc_opts o;
    struct vsc *c;
    struct vsc_id sid = vsc_id_name(b->stream), tid = vsc_id_name(b->topic);
    uint32_t part = w->index % b->partitions, i;
    struct vsc_partitioning p = vsc_part_id(part);
    struct vsc_poll_args a;
    uint64_t off = 0;
    int rc;
    memset(&o, 0, sizeof o);
    o.addr = b->addr;
    o.tls = b->tls_ca != NULL;
    o.tls_ca_file = b->tls_ca;
    o.tls_server_name = b->tls_name;
    c = vsc_create(&o);
    if (c == NULL) {
        w->err = -ENOMEM;
        return NULL;
    }
    rc = vsc_login(c, b->user, b->password, NULL);
    if (rc != 0)
        goto fail;
    memset(&a, 0, sizeof a);
    a.consumer = vsc_consumer_single(&sid);
    a.consumer.id = vsc_id_num(w->index);
    a.has_partition = 1;
    a.partition_id = part;
    a.strategy = VSC_POLL_OFFSET;
    a.count = b->batch;
    for (i = 0; i < b->ops; i++) {
        uint64_t t0 = vs_monotonic_ns();
        if (b->op == BENCH_SEND) {
            rc = vsc_send_batch(c, &sid, &tid, &p, b->batch, b->batch_buf,
                                b->batch_len, NULL);
            if (rc == 0)
                w->msgs += b->batch;
        } else {
            struct vsc_polled r;
            a.value = off;
            rc = vsc_poll(c, &sid, &tid, &a, &r);
            if (rc == 0) {
                w->msgs += r.n;
                off += r.n;
                if (r.n == 0) {
                    vsc_polled_fini(&r);
                    break; /* the partition is drained */
                }
                vsc_polled_fini(&r);
            }
        }
        if (rc != 0)
            goto fail;
        w->lat_ns[i] = vs_monotonic_ns() - t0;
        w->done++;
    }
    (void)vsc_logout(c);
    vsc_destroy(c);
    return NULL;
fail:
    w->err = rc;
    snprintf(w->msg, sizeof w->msg, "%s", vsc_last_error(c));
    vsc_destroy(c);
    return NULL;
}

/* Baseline: append the batch's bytes to a file and fdatasync, ops times
 * (one thread per client, one file each). */
static void *
bench_raw_worker(void *arg)
{
    struct worker *w = arg;
    const struct bench *b = w->b;
    char path[512];
    int fd;
    snprintf(path, sizeof path, "%s/vstream-bench-raw-%u", b->dir, w->index);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd == -1) {
        w->err = -errno;
        snprintf(w->msg, sizeof w->msg, "open: %s", strerror(errno));
        return NULL;
    }
    for (uint32_t i = 0; i < b->ops; i++) {
        uint64_t t0 = vs_monotonic_ns();
        size_t left = b->batch_len;
        const uint8_t *q = b->batch_buf;
        while (left > 0) {
            ssize_t n = write(fd, q, left);
            if (n == -1 && errno == EINTR)
                continue;
            if (n == -1) {
                w->err = -errno;
                snprintf(w->msg, sizeof w->msg, "write: %s", strerror(errno));
                goto out;
            }
            q += n;
            left -= (size_t)n;
        }
        if (fdatasync(fd) == -1) {
            w->err = -errno;
            snprintf(w->msg, sizeof w->msg, "fdatasync: %s", strerror(errno));
            goto out;
        }
        w->lat_ns[i] = vs_monotonic_ns() - t0;
        w->done++;
        w->msgs += b->batch;
    }
out:
    (void)close(fd);
    (void)unlink(path);
    return NULL;
}

/* Creates the stream and topic if they do not exist (send and poll). */
static int
bench_prepare(struct bench *b)
{
    struct vsc_opts o;
    struct vsc *c;
    struct vs_wbuf opts;
    struct vsc_id sid = vsc_id_name(b->stream);
    int rc;
    memset(&o, 0, sizeof o);
    o.addr = b->addr;
    o.tls = b->tls_ca != NULL;
    o.tls_ca_file = b->tls_ca;
    o.tls_server_name = b->tls_name;
    c = vsc_create(&o);
    if (c == NULL)
        return -ENOMEM;
    rc = vsc_login(c, b->user, b->password, NULL);
    if (rc == 0) {
        rc = vsc_stream_create(c, b->stream, NULL);
        if (rc == (int)VS_E_STREAM_NAME_ALREADY_EXISTS)
            rc = 0;
    }
    vs_wbuf_init(&opts);
    if (b->enforce_fsync)
        vsc_opt_bool(&opts, "enforce_fsync", 1);
    if (rc == 0) {
        rc = vsc_topic_create(c, &sid, b->partitions, b->topic, opts.data,
                              opts.len, NULL);
        if (rc == (int)VS_E_TOPIC_NAME_ALREADY_EXISTS)
            rc = 0;
    }
    vs_wbuf_fini(&opts);
    if (rc != 0)
        fprintf(stderr, "vstream-bench: prepare: %s\n", vsc_last_error(c));
    vsc_destroy(c);
    return rc;
}

static void *
bench_worker(void *arg)
{
    struct worker *w = arg;
    struct vsc_opts o;
    struct vsc *c;
    char name[64];
    uint32_t i;
    int rc;
    memset(&o, 0, sizeof o);
    o.addr = w->b->addr;
    o.tls = w->b->tls_ca != NULL;
    o.tls_ca_file = w->b->tls_ca;
    o.tls_server_name = w->b->tls_name;
    c = vsc_create(&o);
    if (c == NULL) {
        w->err = -ENOMEM;
        return NULL;
    }
    rc = vsc_login(c, w->b->user, w->b->password, NULL);
    if (rc != 0)
        goto fail;
    snprintf(name, sizeof name, "bench-%u-%" PRIu64, w->index,
             vs_monotonic_ns() % 1000000007u);
    for (i = 0; i < w->b->ops; i++) {
        uint64_t t0 = vs_monotonic_ns();
        if (w->b->read_only) {
            struct vsc_stream *v;
            size_t n;
            rc = vsc_stream_list(c, &v, &n);
            if (rc == 0)
                free(v);
        } else if (i % 2 == 0) {
            rc = vsc_stream_create(c, name, NULL);
        } else {
            struct vsc_id id = vsc_id_name(name);
            rc = vsc_stream_delete(c, &id);
        }
        if (rc != 0)
            goto fail;
        w->lat_ns[i] = vs_monotonic_ns() - t0;
        w->done++;
    }
    if (!w->b->read_only && w->b->ops % 2 == 1) {
        struct vsc_id id = vsc_id_name(name);
        (void)vsc_stream_delete(c, &id);
    }
    (void)vsc_logout(c);
    vsc_destroy(c);
    return NULL;
fail:
    w->err = rc;
    snprintf(w->msg, sizeof w->msg, "%s", vsc_last_error(c));
    vsc_destroy(c);
    return NULL;
}

static int
bench_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int
bench_usage(void)
{
    fputs("usage: vstream-bench [--addr H:P] [--user U] [--password P]\n"
          "                     [--tls-ca FILE [--tls-server-name N]] (TLS)\n"
          "                     [--clients N] [--ops N per client]\n"
          "                     [--op write|read|send|poll|raw]\n"
          "                     [--stream S] [--topic T] [--partitions P]\n"
          "                     [--batch N] [--msg-size B] "
          "[--enforce-fsync 0|1]\n"
          "                     [--dir D (raw)]\n"
          "write: CreateStream/DeleteStream pairs (replicated, fsync'd)\n"
          "read:  GetStreams (NonReplicated)\n"
          "send:  --ops batches of --batch messages (default 1000 x 1000 B)\n"
          "       per client, client i to partition i % P (P default: "
          "clients)\n"
          "poll:  read those partitions back from offset 0, --batch per "
          "poll\n"
          "raw:   append + fdatasync of a batch of the same size in D\n"
          "env: VSTREAM_ADDR, VSTREAM_USER, VSTREAM_PASSWORD\n",
          stderr);
    return 1;
}

int
main(int argc, char **argv)
{
    struct bench b;
    struct worker *w;
    uint64_t *all, t0, wall, total = 0;
    uint32_t i, k;
    int failed = 0;

    memset(&b, 0, sizeof b);
    b.addr = getenv("VSTREAM_ADDR");
    b.user = getenv("VSTREAM_USER");
    b.password = getenv("VSTREAM_PASSWORD");
    b.clients = 1;
    b.ops = 2000;
    b.stream = "bench-data";
    b.topic = "t";
    b.batch = 1000;
    b.msg_size = 1000;
    b.dir = ".";
    for (i = 1; i < (uint32_t)argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < (uint32_t)argc ? argv[i + 1] : NULL;
        if (v == NULL)
            return bench_usage();
        if (strcmp(a, "--addr") == 0)
            b.addr = v;
        else if (strcmp(a, "--tls-ca") == 0)
            b.tls_ca = v;
        else if (strcmp(a, "--tls-server-name") == 0)
            b.tls_name = v;
        else if (strcmp(a, "--user") == 0)
            b.user = v;
        else if (strcmp(a, "--password") == 0)
            b.password = v;
        else if (strcmp(a, "--clients") == 0)
            b.clients = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--ops") == 0)
            b.ops = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--op") == 0) {
            b.read_only = strcmp(v, "read") == 0;
            b.op = strcmp(v, "send") == 0   ? BENCH_SEND
                   : strcmp(v, "poll") == 0 ? BENCH_POLL
                   : strcmp(v, "raw") == 0  ? BENCH_RAW
                                            : BENCH_META;
        } else if (strcmp(a, "--stream") == 0)
            b.stream = v;
        else if (strcmp(a, "--topic") == 0)
            b.topic = v;
        else if (strcmp(a, "--dir") == 0)
            b.dir = v;
        else if (strcmp(a, "--partitions") == 0)
            b.partitions = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--batch") == 0)
            b.batch = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--msg-size") == 0)
            b.msg_size = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--enforce-fsync") == 0)
            b.enforce_fsync = strcmp(v, "1") == 0 || strcmp(v, "true") == 0;
        else
            return bench_usage();
        i++;
    }
    if (b.addr == NULL)
        b.addr = "127.0.0.1:8090";
    if (b.user == NULL)
        b.user = "iggy";
    if (b.password == NULL)
        b.password = "iggy";
    if (b.clients == 0 || b.clients > 1024 || b.ops == 0 || b.ops > 10000000)
        return bench_usage();
    if (b.partitions == 0)
        b.partitions = b.clients;
    if (b.batch == 0 || b.batch > 100000 || b.msg_size > 1000000 ||
        (uint64_t)b.batch * (b.msg_size + 48u) > 60u * 1024 * 1024)
        return bench_usage();
    if (b.op != BENCH_META) {
        struct vs_wbuf wb;
        struct vsc_msg *m = calloc(b.batch, sizeof *m);
        uint8_t *payload = malloc(b.msg_size ? b.msg_size : 1);
        if (m == NULL || payload == NULL)
            return 1;
        for (i = 0; i < b.msg_size; i++)
            payload[i] = (uint8_t)('a' + i % 26);
        for (i = 0; i < b.batch; i++) {
            m[i].id.lo = i + 1;
            m[i].payload = payload;
            m[i].payload_len = b.msg_size;
        }
        vs_wbuf_init(&wb);
        b.batch_len = vsc_batch_build(&wb, m, b.batch, vs_realtime_us());
        b.batch_buf = wb.data;
        free(m);
        free(payload);
        if ((b.op == BENCH_SEND || b.op == BENCH_POLL) && bench_prepare(&b))
            return 2;
    }

    w = calloc(b.clients, sizeof *w);
    if (w == NULL)
        return 1;
    for (i = 0; i < b.clients; i++) {
        w[i].b = &b;
        w[i].index = i;
        w[i].lat_ns = calloc(b.ops, sizeof *w[i].lat_ns);
        if (w[i].lat_ns == NULL)
            return 1;
    }
    t0 = vs_monotonic_ns();
    for (i = 0; i < b.clients; i++)
        if (pthread_create(&w[i].th, NULL,
                           b.op == BENCH_RAW    ? bench_raw_worker
                           : b.op == BENCH_META ? bench_worker
                                                : bench_data_worker,
                           &w[i]) != 0)
            return 1;
    for (i = 0; i < b.clients; i++)
        pthread_join(w[i].th, NULL);
    wall = vs_monotonic_ns() - t0;

    uint64_t msgs = 0;
    for (i = 0; i < b.clients; i++) {
        total += w[i].done;
        msgs += w[i].msgs;
        if (w[i].err != 0) {
            fprintf(stderr, "vstream-bench: client %u: %s\n", i, w[i].msg);
            failed = 1;
        }
    }
    all = calloc(total ? total : 1, sizeof *all);
    if (all == NULL)
        return 1;
    for (i = 0, k = 0; i < b.clients; i++) {
        memcpy(all + k, w[i].lat_ns, w[i].done * sizeof *all);
        k += w[i].done;
    }
    qsort(all, total, sizeof *all, bench_cmp);
    if (total > 0 && b.op != BENCH_META) {
        double secs = (double)wall / 1e9;
        static const char *const names[] = {"", "send", "poll", "raw"};
        printf("op=%s clients=%u partitions=%u batch=%u msg_size=%u "
               "enforce_fsync=%d batches=%" PRIu64 " msgs=%" PRIu64
               " wall=%.3fs msgs/s=%.0f MB/s=%.1f batch_p50=%.1fus "
               "batch_p99=%.1fus\n",
               names[b.op], b.clients, b.partitions, b.batch, b.msg_size,
               b.enforce_fsync, total, msgs, secs, (double)msgs / secs,
               (double)msgs * b.msg_size / 1e6 / secs,
               (double)all[total / 2] / 1e3,
               (double)all[(total * 99) / 100] / 1e3);
    } else if (total > 0)
        printf("op=%s clients=%u ops=%" PRIu64 " wall=%.3fs ops/s=%.0f "
               "p50=%.1fus p99=%.1fus max=%.1fus\n",
               b.read_only ? "read" : "write", b.clients, total,
               (double)wall / 1e9, (double)total * 1e9 / (double)wall,
               (double)all[total / 2] / 1e3,
               (double)all[(total * 99) / 100] / 1e3,
               (double)all[total - 1] / 1e3);
    for (i = 0; i < b.clients; i++)
        free(w[i].lat_ns);
    free(w);
    free(all);
    free(b.batch_buf);
    return failed ? 2 : 0;
}
