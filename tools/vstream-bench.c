/*
 * tools/vstream-bench.c - throughput and latency of a running node, in
 * the modes of Iggy's iggy-bench.
 *
 * Role: actors (threads, each with its own connection and session from
 * tools/client/vsc.h) run one workload against a node:
 *   pinned-producer      P producers, producer i to its own stream i
 *   pinned-consumer      the streams are filled (untimed), then C
 *                        consumers read stream i from offset 0
 *   pinned-producer-and-consumer
 *                        both at once; consumer latency is end to end
 *                        (poll reply time - the batch's origin stamp)
 *   balanced-producer    P producers over the partitions of the streams
 *                        (the server picks the partition: balanced)
 *   balanced-consumer-group
 *                        filled (untimed), then C members of one
 *                        consumer group poll NEXT with auto-commit
 *   end-to-end           each actor sends a batch to its own stream and
 *                        polls it back; latency = send start to poll reply
 *   metadata             C clients alternate CreateStream / DeleteStream of
 *                        a stream of their own (through consensus)
 *   raw                  baseline: append + fdatasync the same batch to a
 *                        file in --dir (no server)
 * and the older single-stream layouts --op send|poll|write|read.
 * Logins, group joins and fills happen before the timed phase; every
 * actor then starts at one barrier. Throughput is messages/s and MB/s of
 * payload (10^6 bytes) per actor and in total (total = all payload /
 * wall time of the timed phase). Latency is per request (a batch, a poll
 * or a metadata op), recorded by every actor into its own log-linear
 * histogram (common/hist.h) and merged: the percentiles are those of all
 * samples pooled. With --rate the actors run open loop: request k of an
 * actor is due at start + k / rate_per_actor and its latency counts from
 * that due time, so a stalled server is not hidden by coordinated
 * omission. Server CPU seconds (per GB of payload) and peak RSS come from
 * /proc of the node's processes (--server-pid, or the pids of
 * --ready-file). What the run creates (streams prefixed by --prefix) is
 * deleted at the end unless --keep. Polls are decoded with every message
 * and batch checksum verified (the client library's default) unless
 * --no-verify, which decodes them as iggy-bench's consumers do (the
 * structure only), for like-for-like figures; both are reported as such.
 * Exit: 0 ok, 1 usage, 2 a run error.
 * Not run by make check except as a smoke test; numbers are reported,
 * never asserted. Callers: a user's shell, tools/bench-compare.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/hist.h"
#include "common/readyfile.h"
#include "tools/bench/procstat.h"
#include "tools/client/vsc.h"

#define BENCH_MAX_ADDRS  16
#define BENCH_MAX_ACTORS 1024u

enum bench_mode {
    MODE_PP,   /* pinned-producer */
    MODE_PC,   /* pinned-consumer */
    MODE_PPC,  /* pinned-producer-and-consumer */
    MODE_BP,   /* balanced-producer */
    MODE_BCG,  /* balanced-consumer-group */
    MODE_E2E,  /* end-to-end */
    MODE_META, /* metadata */
    MODE_RAW,  /* append + fdatasync baseline */
    MODE_SEND, /* --op send: one stream, producer i to partition i % P */
    MODE_POLL, /* --op poll: read those partitions until drained */
    MODE_READ, /* --op read: GetStreams */
    MODE_COUNT
};

static const char *const mode_names[MODE_COUNT] = {
    "pinned-producer",
    "pinned-consumer",
    "pinned-producer-and-consumer",
    "balanced-producer",
    "balanced-consumer-group",
    "end-to-end",
    "metadata",
    "raw",
    "send",
    "poll",
    "read",
};

enum actor_role { ROLE_PRODUCER, ROLE_CONSUMER, ROLE_E2E, ROLE_META, ROLE_RAW };

static const char *const role_names[] = {"producer", "consumer", "e2e",
                                         "metadata", "raw"};

struct bench {
    enum bench_mode mode;
    const char *addrs[BENCH_MAX_ADDRS];
    uint32_t n_addrs;
    const char *tls_ca, *tls_name; /* TLS when tls_ca is set */
    const char *user, *password, *prefix, *dir, *ready_file;
    const char *stream, *topic; /* --op send|poll */
    uint32_t producers, consumers, streams, partitions;
    uint32_t batch;            /* messages per batch */
    uint32_t msg_min, msg_max; /* payload size range */
    uint64_t batches;          /* per actor */
    uint64_t total_bytes;      /* 0 = use batches */
    double rate;               /* requests/s over all actors; 0 = closed */
    double warmup_s;           /* unrecorded lead-in of senders */
    double timeout_s;          /* hard bound of the timed phase */
    int fsync;                 /* topic enforce_fsync */
    int no_verify;             /* consumers skip the checksums */
    int json, progress, keep;
    pid_t server_pid;
    /* the prebuilt batch (all sizes drawn once from the range) */
    struct vsc_msg *msgs;
    uint8_t *payload;
    uint8_t *batch_buf;
    size_t batch_len;
    uint64_t batch_payload; /* payload bytes in one batch */
    /* the consumer-group run's shared progress */
    uint64_t group_target;
    uint64_t group_read; /* __atomic */
    int stop;            /* __atomic: the timeout fired */
    pthread_barrier_t barrier;
};

struct actor {
    struct bench *b;
    enum actor_role role;
    uint32_t index;  /* within its role */
    uint32_t stream; /* 0-based stream index */
    int record;      /* 0 = a fill phase: nothing is recorded */
    uint64_t batches_target;
    struct vs_hist *hist;
    uint64_t requests, msgs, bytes; /* __atomic (progress line reads) */
    uint64_t t_start, t_end;        /* monotonic ns of its timed loop */
    int err;
    char msg[1024];
    pthread_t th;
};

static void
stream_name(const struct bench *b, uint32_t i, char *out, size_t cap)
{
    if (b->mode == MODE_SEND || b->mode == MODE_POLL)
        snprintf(out, cap, "%s", b->stream);
    else
        snprintf(out, cap, "%s-%u", b->prefix, i);
}

static const char *
topic_name(const struct bench *b)
{
    return (b->mode == MODE_SEND || b->mode == MODE_POLL) ? b->topic : "t";
}

static struct vsc *
actor_connect(struct actor *a)
{
    const struct bench *b = a->b;
    struct vsc_opts o;
    struct vsc *c;
    int rc;
    memset(&o, 0, sizeof o);
    o.addr = b->addrs[(a->index + (uint32_t)a->role) % b->n_addrs];
    o.tls = b->tls_ca != NULL;
    o.tls_ca_file = b->tls_ca;
    o.tls_server_name = b->tls_name;
    c = vsc_create(&o);
    if (c == NULL) {
        a->err = -ENOMEM;
        snprintf(a->msg, sizeof a->msg, "out of memory");
        return NULL;
    }
    rc = vsc_login(c, b->user, b->password, NULL);
    if (rc != 0) {
        a->err = rc;
        snprintf(a->msg, sizeof a->msg, "login: %s", vsc_last_error(c));
        vsc_destroy(c);
        return NULL;
    }
    return c;
}

static void
actor_fail(struct actor *a, struct vsc *c, int rc, const char *what)
{
    a->err = rc ? rc : -EIO;
    snprintf(a->msg, sizeof a->msg, "%s: %s", what,
             c ? vsc_last_error(c) : strerror(-a->err));
}

static void
actor_count(struct actor *a, uint64_t msgs, uint64_t bytes)
{
    __atomic_store_n(&a->requests, a->requests + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&a->msgs, a->msgs + msgs, __ATOMIC_RELAXED);
    __atomic_store_n(&a->bytes, a->bytes + bytes, __ATOMIC_RELAXED);
}

/* The two barriers of a timed phase: every actor is connected and logged
 * in; then the main thread has sampled the server and releases them. */
static void
actor_barrier(struct bench *b)
{
    pthread_barrier_wait(&b->barrier);
    pthread_barrier_wait(&b->barrier);
}

static int
bench_stopped(struct bench *b)
{
    return __atomic_load_n(&b->stop, __ATOMIC_RELAXED);
}

/* Open-loop pacing: returns the time request k is due (now when closed
 * loop), sleeping until then. */
static uint64_t
pace(const struct actor *a, uint64_t t0, uint64_t k, uint32_t actors)
{
    const struct bench *b = a->b;
    if (b->rate <= 0 || !a->record)
        return vs_monotonic_ns();
    double per_actor = b->rate / (double)actors;
    uint64_t due = t0 + (uint64_t)((double)k * 1e9 / per_actor);
    uint64_t now = vs_monotonic_ns();
    if (due > now) {
        struct timespec ts = {.tv_sec = (time_t)((due - now) / 1000000000u),
                              .tv_nsec = (long)((due - now) % 1000000000u)};
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
            ;
    }
    return due;
}

static uint32_t
role_actors(const struct bench *b, enum actor_role r)
{
    return r == ROLE_CONSUMER ? b->consumers : b->producers;
}

/* A fresh batch stamped now (end-to-end latency needs the send time). */
static int
batch_restamp(const struct bench *b, struct vs_wbuf *w)
{
    for (uint32_t i = 0; i < b->batch; i++)
        b->msgs[i].origin_timestamp = 0;
    w->len = 0;
    return vsc_batch_build(w, b->msgs, b->batch, vs_realtime_us()) ? 0
                                                                   : -EINVAL;
}

static void
actor_warmup(struct actor *a, struct vsc *c, const struct vsc_id *sid,
             const struct vsc_id *tid, const struct vsc_partitioning *p)
{
    const struct bench *b = a->b;
    if (!a->record || b->warmup_s <= 0)
        return;
    uint64_t end = vs_monotonic_ns() + (uint64_t)(b->warmup_s * 1e9);
    while (vs_monotonic_ns() < end && !bench_stopped(a->b))
        if (vsc_send_batch(c, sid, tid, p, b->batch, b->batch_buf, b->batch_len,
                           NULL) != 0)
            return;
}

static void *
producer_main(void *arg)
{
    struct actor *a = arg;
    struct bench *b = a->b;
    char sname[128];
    struct vsc *c;
    struct vsc_id sid, tid;
    struct vsc_partitioning p;
    struct vs_wbuf w;
    int stamp = b->mode == MODE_PPC, rc = 0;

    stream_name(b, a->stream, sname, sizeof sname);
    sid = vsc_id_name(sname);
    tid = vsc_id_name(topic_name(b));
    if (b->mode == MODE_BP || b->mode == MODE_BCG)
        p = vsc_part_balanced();
    else if (b->mode == MODE_SEND)
        p = vsc_part_id(a->index % b->partitions);
    else
        p = vsc_part_id(0);
    vs_wbuf_init(&w);
    c = actor_connect(a);
    if (a->record)
        actor_barrier(b);
    if (c == NULL)
        goto out;
    actor_warmup(a, c, &sid, &tid, &p);
    a->t_start = vs_monotonic_ns();
    for (uint64_t k = 0; k < a->batches_target && !bench_stopped(b); k++) {
        uint64_t t0 = pace(a, a->t_start, k, role_actors(b, a->role));
        const uint8_t *bb = b->batch_buf;
        size_t bl = b->batch_len;
        if (stamp) {
            rc = batch_restamp(b, &w);
            if (rc != 0) {
                actor_fail(a, NULL, rc, "batch");
                break;
            }
            bb = w.data;
            bl = w.len;
        }
        rc = vsc_send_batch(c, &sid, &tid, &p, b->batch, bb, bl, NULL);
        if (rc != 0) {
            actor_fail(a, c, rc, "send");
            break;
        }
        if (a->record)
            vs_hist_record(a->hist, vs_monotonic_ns() - t0);
        actor_count(a, b->batch, b->batch_payload);
    }
    a->t_end = vs_monotonic_ns();
    if (a->err == 0)
        (void)vsc_logout(c);
    vsc_destroy(c);
out:
    vs_wbuf_fini(&w);
    return NULL;
}

static uint64_t
polled_payload(const struct vsc_polled *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->msgs[i].payload_len;
    return n;
}

/* How long a pinned consumer waits for a fill that is acknowledged but
 * not yet visible on the node it polls (replicated partitions). */
#define PC_LAG_MAX_NS (5ull * 1000000000ull)

/* Pinned consumers (PC, PPC) and --op poll: one partition from offset 0
 * up to the expected count (PPC waits for data still being produced). */
static void *
consumer_main(void *arg)
{
    struct actor *a = arg;
    struct bench *b = a->b;
    char sname[128];
    struct vsc *c;
    struct vsc_id sid, tid, cid;
    struct vsc_poll_args pa;
    uint64_t want = a->batches_target * b->batch, got = 0, k = 0;
    uint64_t empty_since = 0; /* PC: since when polls came back empty */
    int rc;

    stream_name(b, a->stream, sname, sizeof sname);
    sid = vsc_id_name(sname);
    tid = vsc_id_name(topic_name(b));
    cid = vsc_id_num(a->index + 1);
    memset(&pa, 0, sizeof pa);
    pa.consumer = vsc_consumer_single(&cid);
    pa.has_partition = 1;
    pa.partition_id = b->mode == MODE_POLL ? a->index % b->partitions : 0;
    pa.strategy = VSC_POLL_OFFSET;
    pa.count = b->batch;
    pa.skip_checksums = b->no_verify;
    c = actor_connect(a);
    actor_barrier(b);
    if (c == NULL)
        return NULL;
    a->t_start = vs_monotonic_ns();
    while (got < want && !bench_stopped(b)) {
        struct vsc_polled r;
        uint64_t t0 = pace(a, a->t_start, k, b->consumers);
        pa.value = got;
        rc = vsc_poll(c, &sid, &tid, &pa, &r);
        if (rc != 0) {
            actor_fail(a, c, rc, "poll");
            break;
        }
        uint64_t now = vs_monotonic_ns();
        if (r.n == 0) {
            vsc_polled_fini(&r);
            if (b->mode == MODE_POLL)
                break; /* drained */
            /* PPC: the producer is behind. PC: the fill is acknowledged,
             * but a node that is not its partition's primary serves a
             * batch once it learned the batch committed (the next commit
             * heartbeat): wait for it, within bounds. */
            if (empty_since == 0)
                empty_since = now;
            if (b->mode == MODE_PPC || now - empty_since < PC_LAG_MAX_NS) {
                struct timespec ts = {0, 100000};
                nanosleep(&ts, NULL);
                continue;
            }
            actor_fail(a, NULL, -ENODATA, "poll");
            snprintf(a->msg, sizeof a->msg,
                     "poll: partition ended at %" PRIu64 " of %" PRIu64
                     " messages",
                     got, want);
            break;
        }
        empty_since = 0;
        if (b->mode == MODE_PPC) {
            uint64_t now_us = vs_realtime_us(), o = r.msgs[0].origin_timestamp;
            vs_hist_record(a->hist, now_us > o ? (now_us - o) * 1000u : 0);
        } else {
            vs_hist_record(a->hist, now - t0);
        }
        actor_count(a, r.n, polled_payload(&r));
        got += r.n;
        k++;
        vsc_polled_fini(&r);
    }
    a->t_end = vs_monotonic_ns();
    if (a->err == 0)
        (void)vsc_logout(c);
    vsc_destroy(c);
    return NULL;
}

/* A member of the one consumer group: polls NEXT with auto-commit on
 * each assigned partition until the group has read the fill. */
static void *
group_main(void *arg)
{
    struct actor *a = arg;
    struct bench *b = a->b;
    char sname[128];
    struct vsc *c;
    struct vsc_id sid, tid, gid = vsc_id_name("bench-group");
    uint64_t k = 0;
    int rc = 0;

    stream_name(b, 0, sname, sizeof sname);
    sid = vsc_id_name(sname);
    tid = vsc_id_name(topic_name(b));
    c = actor_connect(a);
    if (c != NULL) {
        rc = vsc_group_join(c, &sid, &tid, &gid);
        if (rc != 0)
            actor_fail(a, c, rc, "join group");
    }
    actor_barrier(b);
    if (c == NULL)
        return NULL;
    a->t_start = vs_monotonic_ns();
    while (a->err == 0 && !bench_stopped(b) &&
           __atomic_load_n(&b->group_read, __ATOMIC_RELAXED) <
               b->group_target) {
        uint32_t *parts = NULL;
        size_t n = 0;
        uint64_t gen, round = 0;
        int member;
        rc = vsc_group_sync(c, &sid, &tid, &gid, &gen, &parts, &n, &member);
        if (rc != 0) {
            actor_fail(a, c, rc, "sync group");
            break;
        }
        for (size_t i = 0; i < n && a->err == 0; i++) {
            struct vsc_poll_args pa;
            struct vsc_polled r;
            memset(&pa, 0, sizeof pa);
            pa.consumer = vsc_consumer_group(&gid);
            pa.has_partition = 1;
            pa.partition_id = parts[i];
            pa.strategy = VSC_POLL_NEXT;
            pa.count = b->batch;
            pa.auto_commit = 1;
            pa.skip_checksums = b->no_verify;
            uint64_t t0 = pace(a, a->t_start, k, b->consumers);
            rc = vsc_poll(c, &sid, &tid, &pa, &r);
            if (rc != 0) {
                actor_fail(a, c, rc, "poll");
                break;
            }
            if (r.n > 0) {
                vs_hist_record(a->hist, vs_monotonic_ns() - t0);
                actor_count(a, r.n, polled_payload(&r));
                __atomic_add_fetch(&b->group_read, r.n, __ATOMIC_RELAXED);
                round += r.n;
                k++;
            }
            vsc_polled_fini(&r);
        }
        free(parts);
        if (round == 0 && a->err == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL); /* nothing assigned or left here */
        }
    }
    a->t_end = vs_monotonic_ns();
    if (a->err == 0) {
        (void)vsc_group_leave(c, &sid, &tid, &gid);
        (void)vsc_logout(c);
    }
    vsc_destroy(c);
    return NULL;
}

/* Sends a stamped batch to its own stream and polls it back. */
static void *
e2e_main(void *arg)
{
    struct actor *a = arg;
    struct bench *b = a->b;
    char sname[128];
    struct vsc *c;
    struct vsc_id sid, tid, cid;
    struct vsc_partitioning p = vsc_part_id(0);
    struct vs_wbuf w;
    uint64_t off = 0;
    int rc;

    stream_name(b, a->stream, sname, sizeof sname);
    sid = vsc_id_name(sname);
    tid = vsc_id_name(topic_name(b));
    cid = vsc_id_num(a->index + 1);
    vs_wbuf_init(&w);
    c = actor_connect(a);
    actor_barrier(b);
    if (c == NULL)
        goto out;
    a->t_start = vs_monotonic_ns();
    for (uint64_t k = 0; k < a->batches_target && !bench_stopped(b); k++) {
        uint64_t t0 = pace(a, a->t_start, k, b->producers), got = 0;
        rc = batch_restamp(b, &w);
        if (rc == 0)
            rc = vsc_send_batch(c, &sid, &tid, &p, b->batch, w.data, w.len,
                                NULL);
        if (rc != 0) {
            actor_fail(a, c, rc, "send");
            break;
        }
        while (got < b->batch && a->err == 0) {
            struct vsc_poll_args pa;
            struct vsc_polled r;
            memset(&pa, 0, sizeof pa);
            pa.consumer = vsc_consumer_single(&cid);
            pa.has_partition = 1;
            pa.strategy = VSC_POLL_OFFSET;
            pa.value = off + got;
            pa.count = b->batch - (uint32_t)got;
            pa.skip_checksums = b->no_verify;
            rc = vsc_poll(c, &sid, &tid, &pa, &r);
            if (rc != 0) {
                actor_fail(a, c, rc, "poll");
                break;
            }
            if (r.n == 0) {
                vsc_polled_fini(&r);
                actor_fail(a, NULL, -ENODATA, "poll");
                snprintf(a->msg, sizeof a->msg,
                         "poll: a sent batch is not readable");
                break;
            }
            got += r.n;
            vsc_polled_fini(&r);
        }
        if (a->err != 0)
            break;
        off += got;
        vs_hist_record(a->hist, vs_monotonic_ns() - t0);
        actor_count(a, b->batch, b->batch_payload);
    }
    a->t_end = vs_monotonic_ns();
    if (a->err == 0)
        (void)vsc_logout(c);
    vsc_destroy(c);
out:
    vs_wbuf_fini(&w);
    return NULL;
}

/* Metadata: CreateStream / DeleteStream pairs of a stream of the
 * actor's own (through consensus, no partition files); --op read:
 * GetStreams. */
static void *
meta_main(void *arg)
{
    struct actor *a = arg;
    struct bench *b = a->b;
    char sname[128];
    struct vsc *c;
    struct vsc_id sid;
    uint64_t k = 0;
    int rc = 0;

    snprintf(sname, sizeof sname, "%s-m%u-%d", b->prefix, a->index,
             (int)getpid());
    sid = vsc_id_name(sname);
    c = actor_connect(a);
    actor_barrier(b);
    if (c == NULL)
        return NULL;
    a->t_start = vs_monotonic_ns();
    for (; k < a->batches_target && !bench_stopped(b); k++) {
        uint64_t t0 = pace(a, a->t_start, k, b->producers);
        if (b->mode == MODE_READ) {
            struct vsc_stream *v;
            size_t n;
            rc = vsc_stream_list(c, &v, &n);
            if (rc == 0)
                free(v);
        } else if (k % 2 == 0) {
            rc = vsc_stream_create(c, sname, NULL);
        } else {
            rc = vsc_stream_delete(c, &sid);
        }
        if (rc != 0) {
            actor_fail(a, c, rc, "metadata op");
            break;
        }
        vs_hist_record(a->hist, vs_monotonic_ns() - t0);
        actor_count(a, 0, 0);
    }
    a->t_end = vs_monotonic_ns();
    if (b->mode == MODE_META && k % 2 == 1)
        (void)vsc_stream_delete(c, &sid); /* the last create's stream */
    if (a->err == 0)
        (void)vsc_logout(c);
    vsc_destroy(c);
    return NULL;
}

/* Baseline: the batch's bytes appended to a file and fdatasync'd. */
static void *
raw_main(void *arg)
{
    struct actor *a = arg;
    struct bench *b = a->b;
    char path[512];
    int fd;
    snprintf(path, sizeof path, "%s/vstream-bench-raw-%d-%u", b->dir,
             (int)getpid(), a->index);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    actor_barrier(b);
    if (fd == -1) {
        actor_fail(a, NULL, -errno, "open");
        snprintf(a->msg, sizeof a->msg, "open %s: %s", path, strerror(errno));
        return NULL;
    }
    a->t_start = vs_monotonic_ns();
    for (uint64_t k = 0; k < a->batches_target && !bench_stopped(b); k++) {
        uint64_t t0 = pace(a, a->t_start, k, b->producers);
        size_t left = b->batch_len;
        const uint8_t *q = b->batch_buf;
        while (left > 0) {
            ssize_t n = write(fd, q, left);
            if (n == -1 && errno == EINTR)
                continue;
            if (n == -1) {
                actor_fail(a, NULL, -errno, "write");
                goto out;
            }
            q += n;
            left -= (size_t)n;
        }
        if (fdatasync(fd) == -1) {
            actor_fail(a, NULL, -errno, "fdatasync");
            goto out;
        }
        vs_hist_record(a->hist, vs_monotonic_ns() - t0);
        actor_count(a, b->batch, b->batch_payload);
    }
out:
    a->t_end = vs_monotonic_ns();
    (void)close(fd);
    (void)unlink(path);
    return NULL;
}

/* ---- setup and cleanup ---- */

static struct vsc *
admin_connect(const struct bench *b)
{
    struct vsc_opts o;
    struct vsc *c;
    memset(&o, 0, sizeof o);
    o.addr = b->addrs[0];
    o.tls = b->tls_ca != NULL;
    o.tls_ca_file = b->tls_ca;
    o.tls_server_name = b->tls_name;
    c = vsc_create(&o);
    if (c == NULL)
        return NULL;
    if (vsc_login(c, b->user, b->password, NULL) != 0) {
        fprintf(stderr, "vstream-bench: login to %s: %s\n", b->addrs[0],
                vsc_last_error(c));
        vsc_destroy(c);
        return NULL;
    }
    return c;
}

static uint32_t
bench_n_streams(const struct bench *b)
{
    switch (b->mode) {
    case MODE_PP:
    case MODE_E2E:
        return b->producers;
    case MODE_PC:
        return b->consumers;
    case MODE_PPC:
        return b->producers;
    case MODE_BP:
        return b->streams;
    case MODE_BCG:
    case MODE_SEND:
        return 1;
    default:
        return 0;
    }
}

static uint32_t
bench_topic_partitions(const struct bench *b)
{
    switch (b->mode) {
    case MODE_BP:
    case MODE_BCG:
    case MODE_SEND:
        return b->partitions;
    default:
        return 1;
    }
}

/* Creates the run's streams (a leftover of an earlier run with the same
 * name is deleted first) and their topic. */
static int
bench_setup(struct bench *b)
{
    struct vsc *c = admin_connect(b);
    struct vs_wbuf opts;
    uint32_t n = bench_n_streams(b);
    int rc = 0;
    if (c == NULL)
        return -ECONNREFUSED;
    vs_wbuf_init(&opts);
    if (b->fsync)
        vsc_opt_bool(&opts, "enforce_fsync", 1);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        char sname[128];
        stream_name(b, i, sname, sizeof sname);
        struct vsc_id sid = vsc_id_name(sname);
        rc = vsc_stream_create(c, sname, NULL);
        if (rc == (int)VS_E_STREAM_NAME_ALREADY_EXISTS) {
            if (b->mode == MODE_SEND) {
                rc = 0; /* --op send appends to an existing stream */
            } else {
                rc = vsc_stream_delete(c, &sid);
                if (rc == 0)
                    rc = vsc_stream_create(c, sname, NULL);
            }
        }
        if (rc == 0 && b->mode != MODE_META) {
            rc = vsc_topic_create(c, &sid, bench_topic_partitions(b),
                                  topic_name(b), opts.data, opts.len, NULL);
            if (rc == (int)VS_E_TOPIC_NAME_ALREADY_EXISTS &&
                b->mode == MODE_SEND)
                rc = 0;
        }
        if (rc == 0 && b->mode == MODE_BCG) {
            struct vsc_id tid = vsc_id_name(topic_name(b));
            rc = vsc_group_create(c, &sid, &tid, "bench-group", NULL);
        }
    }
    if (rc != 0)
        fprintf(stderr, "vstream-bench: setup: %s\n", vsc_last_error(c));
    vs_wbuf_fini(&opts);
    vsc_destroy(c);
    return rc;
}

static void
bench_cleanup(const struct bench *b)
{
    if (b->keep || b->mode == MODE_SEND || b->mode == MODE_POLL ||
        b->mode == MODE_READ || b->mode == MODE_RAW)
        return;
    struct vsc *c = admin_connect(b);
    if (c == NULL)
        return;
    for (uint32_t i = 0; i < bench_n_streams(b); i++) {
        char sname[128];
        stream_name(b, i, sname, sizeof sname);
        struct vsc_id sid = vsc_id_name(sname);
        int rc = vsc_stream_delete(c, &sid);
        if (rc != 0)
            fprintf(stderr, "vstream-bench: cleanup of %s: %s\n", sname,
                    vsc_last_error(c));
    }
    vsc_destroy(c);
}

/* ---- running ---- */

struct run {
    struct actor *a;
    uint32_t n;
};

static int
run_start(struct bench *b, struct run *r, uint32_t n_prod, uint32_t n_cons,
          int record, uint64_t per_prod, uint64_t per_cons)
{
    enum actor_role prole = b->mode == MODE_E2E    ? ROLE_E2E
                            : b->mode == MODE_META ? ROLE_META
                            : b->mode == MODE_READ ? ROLE_META
                            : b->mode == MODE_RAW  ? ROLE_RAW
                                                   : ROLE_PRODUCER;
    r->n = n_prod + n_cons;
    r->a = calloc(r->n, sizeof *r->a);
    if (r->a == NULL)
        return -ENOMEM;
    /* fills start without the barrier: the main thread does not wait */
    if (pthread_barrier_init(&b->barrier, NULL, record ? r->n + 1 : 1) != 0)
        return -EAGAIN;
    for (uint32_t i = 0; i < r->n; i++) {
        struct actor *a = &r->a[i];
        int prod = i < n_prod;
        a->b = b;
        a->role = prod ? prole : ROLE_CONSUMER;
        a->index = prod ? i : i - n_prod;
        a->record = record;
        a->batches_target = prod ? per_prod : per_cons;
        a->hist = malloc(sizeof *a->hist);
        if (a->hist == NULL)
            return -ENOMEM;
        vs_hist_init(a->hist);
        switch (b->mode) {
        case MODE_PP:
        case MODE_PC:
        case MODE_PPC:
        case MODE_E2E:
            a->stream = a->index;
            break;
        case MODE_BP:
            a->stream = a->index % b->streams;
            break;
        default:
            a->stream = 0;
        }
    }
    for (uint32_t i = 0; i < r->n; i++) {
        struct actor *a = &r->a[i];
        void *(*fn)(void *) = a->role == ROLE_PRODUCER ? producer_main
                              : a->role == ROLE_E2E    ? e2e_main
                              : a->role == ROLE_META   ? meta_main
                              : a->role == ROLE_RAW    ? raw_main
                              : (b->mode == MODE_BCG)  ? group_main
                                                       : consumer_main;
        if (pthread_create(&a->th, NULL, fn, a) != 0)
            return -EAGAIN;
    }
    return 0;
}

static uint64_t
run_total(const struct run *r, int what)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        const uint64_t *p = what == 0   ? &r->a[i].msgs
                            : what == 1 ? &r->a[i].bytes
                                        : &r->a[i].requests;
        s += __atomic_load_n(p, __ATOMIC_RELAXED);
    }
    return s;
}

/* Waits for every actor, printing a progress line every second (on a
 * terminal) or every 10 s (otherwise) once the run is longer than 2 s,
 * and stopping the actors at the timeout. */
static void
run_wait(struct bench *b, struct run *r, uint64_t t0, const char *phase)
{
    int tty = isatty(2);
    uint64_t last = t0, every = tty ? 1000000000u : 10000000000u;
    int printed = 0;
    for (uint32_t done = 0; done < r->n;) {
        struct timespec ts = {0, 50000000};
        done = 0;
        for (uint32_t i = 0; i < r->n; i++)
            if (r->a[i].th == 0 || pthread_tryjoin_np(r->a[i].th, NULL) == 0) {
                r->a[i].th = 0;
                done++;
            }
        if (done == r->n)
            break;
        nanosleep(&ts, NULL);
        uint64_t now = vs_monotonic_ns();
        if (b->timeout_s > 0 && now - t0 > (uint64_t)(b->timeout_s * 1e9) &&
            !bench_stopped(b)) {
            fprintf(stderr,
                    "\nvstream-bench: %s: timeout after %.0f s, "
                    "stopping the actors\n",
                    phase, b->timeout_s);
            __atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
        }
        if (b->progress && now - t0 > 2000000000u && now - last >= every) {
            double s = (double)(now - t0) / 1e9;
            fprintf(stderr,
                    "%s[%s %6.1fs] %" PRIu64 " requests  %" PRIu64
                    " msgs  %.1f MB/s%s",
                    tty ? "\r" : "", phase, s, run_total(r, 2), run_total(r, 0),
                    (double)run_total(r, 1) / 1e6 / s, tty ? "" : "\n");
            last = now;
            printed = 1;
        }
    }
    if (printed && tty)
        fputc('\n', stderr);
}

static int
run_errors(const struct run *r, const char *phase)
{
    int bad = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->a[i].err != 0) {
            fprintf(stderr, "vstream-bench: %s: %s %u: %s\n", phase,
                    role_names[r->a[i].role], r->a[i].index, r->a[i].msg);
            bad = 1;
        }
    return bad;
}

static void
run_free(struct bench *b, struct run *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        free(r->a[i].hist);
    free(r->a);
    r->a = NULL;
    pthread_barrier_destroy(&b->barrier);
}

/* ---- output ---- */

static double
secs(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* User + system CPU seconds of this process so far (every thread). */
static double
self_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void
print_report(const struct bench *b, const struct run *r, uint64_t wall_ns,
             const struct vs_hist *h, int have_srv, double srv_cpu,
             uint64_t srv_hwm_kb, size_t srv_procs, double cli_cpu)
{
    uint64_t msgs = run_total(r, 0), bytes = run_total(r, 1),
             reqs = run_total(r, 2);
    double w = secs(wall_ns);
    double gb = (double)bytes / 1e9;
    static const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    static const char *const qn[] = {"p50", "p90", "p99", "p99.9", "p99.99"};

    if (b->json) {
        printf("{\"mode\":\"%s\",\"producers\":%u,\"consumers\":%u,"
               "\"streams\":%u,\"partitions\":%u,\"batch\":%u,"
               "\"msg_size_min\":%u,\"msg_size_max\":%u,\"fsync\":%s,"
               "\"verify\":%s,"
               "\"rate\":%.3f,\"warmup_s\":%.3f,\"wall_s\":%.6f,"
               "\"requests\":%" PRIu64 ",\"msgs\":%" PRIu64
               ",\"bytes\":%" PRIu64 ",\"msgs_per_s\":%.1f,"
               "\"mb_per_s\":%.3f,\"requests_per_s\":%.1f,\"latency_us\":{",
               mode_names[b->mode], b->producers, b->consumers,
               bench_n_streams(b), bench_topic_partitions(b), b->batch,
               b->msg_min, b->msg_max, b->fsync ? "true" : "false",
               b->no_verify ? "false" : "true", b->rate, b->warmup_s, w, reqs,
               msgs, bytes, (double)msgs / w, (double)bytes / 1e6 / w,
               (double)reqs / w);
        for (size_t i = 0; i < 5; i++)
            printf("\"%s\":%.1f,", qn[i],
                   (double)vs_hist_quantile(h, qs[i]) / 1e3);
        printf("\"max\":%.1f,\"mean\":%.1f,\"samples\":%" PRIu64 "}",
               (double)h->max / 1e3, vs_hist_mean(h) / 1e3, h->count);
        if (have_srv)
            printf(",\"server\":{\"processes\":%zu,\"cpu_s\":%.3f,"
                   "\"cpu_s_per_gb\":%.3f,\"peak_rss_mb\":%.1f}",
                   srv_procs, srv_cpu, gb > 0 ? srv_cpu / gb : 0.0,
                   (double)srv_hwm_kb / 1024.0);
        printf(",\"client\":{\"cpu_s\":%.3f,\"cpu_s_per_gb\":%.3f}", cli_cpu,
               gb > 0 ? cli_cpu / gb : 0.0);
        printf(",\"actors\":[");
        for (uint32_t i = 0; i < r->n; i++) {
            const struct actor *a = &r->a[i];
            double aw = secs(a->t_end > a->t_start ? a->t_end - a->t_start : 1);
            printf("%s{\"role\":\"%s\",\"index\":%u,\"requests\":%" PRIu64
                   ",\"msgs\":%" PRIu64 ",\"msgs_per_s\":%.1f,"
                   "\"mb_per_s\":%.3f,\"p50_us\":%.1f,\"p99_us\":%.1f}",
                   i ? "," : "", role_names[a->role], a->index, a->requests,
                   a->msgs, (double)a->msgs / aw, (double)a->bytes / 1e6 / aw,
                   (double)vs_hist_quantile(a->hist, 0.5) / 1e3,
                   (double)vs_hist_quantile(a->hist, 0.99) / 1e3);
        }
        printf("]}\n");
        return;
    }
    if (b->mode == MODE_META || b->mode == MODE_READ) {
        printf("%s: %u client(s), %s", mode_names[b->mode], b->producers,
               b->mode == MODE_META ? "CreateStream/DeleteStream through "
                                      "consensus"
                                    : "GetStreams");
    } else {
        printf("%s: %u producer(s), %u consumer(s), %u stream(s) x %u "
               "partition(s), batch %u x ",
               mode_names[b->mode], b->producers, b->consumers,
               bench_n_streams(b), bench_topic_partitions(b), b->batch);
        if (b->msg_min == b->msg_max)
            printf("%u B", b->msg_min);
        else
            printf("%u..%u B", b->msg_min, b->msg_max);
        printf(", fsync %s", b->fsync ? "per batch" : "off (page cache)");
        if (b->no_verify)
            printf(", polls not verified");
    }
    if (b->rate > 0)
        printf(", open loop at %.0f requests/s", b->rate);
    printf("\n%-9s %5s %10s %10s %12s %12s %10s %10s %10s\n", "role", "actor",
           "requests", "req/s", "msgs", "msgs/s", "MB/s", "p50 us", "p99 us");
    for (uint32_t i = 0; i < r->n; i++) {
        const struct actor *a = &r->a[i];
        double aw = secs(a->t_end > a->t_start ? a->t_end - a->t_start : 1);
        printf("%-9s %5u %10" PRIu64 " %10.0f %12" PRIu64
               " %12.0f %10.1f %10.1f %10.1f\n",
               role_names[a->role], a->index, a->requests,
               (double)a->requests / aw, a->msgs, (double)a->msgs / aw,
               (double)a->bytes / 1e6 / aw,
               (double)vs_hist_quantile(a->hist, 0.5) / 1e3,
               (double)vs_hist_quantile(a->hist, 0.99) / 1e3);
    }
    printf("%-9s %5s %10" PRIu64 " %10.0f %12" PRIu64 " %12.0f %10.1f   "
           "(%.3f s)\n",
           "total", "", reqs, (double)reqs / w, msgs, (double)msgs / w,
           (double)bytes / 1e6 / w, w);
    printf("latency per %s (%" PRIu64 " samples, merged):",
           b->mode == MODE_PPC                            ? "batch, end to end"
           : b->mode == MODE_E2E                          ? "send+poll"
           : b->mode == MODE_META || b->mode == MODE_READ ? "op"
                                                          : "request",
           h->count);
    for (size_t i = 0; i < 5; i++)
        printf(" %s %.1f", qn[i], (double)vs_hist_quantile(h, qs[i]) / 1e3);
    printf(" max %.1f us\n", (double)h->max / 1e3);
    if (have_srv)
        printf("server: %zu processes, %.2f CPU s (%.3f s/GB), peak RSS "
               "%.1f MB (sum of VmHWM)\n",
               srv_procs, srv_cpu, gb > 0 ? srv_cpu / gb : 0.0,
               (double)srv_hwm_kb / 1024.0);
    printf("client: %.2f CPU s (%.3f s/GB) in this process's timed phase\n",
           cli_cpu, gb > 0 ? cli_cpu / gb : 0.0);
}

/* ---- arguments ---- */

static int
bench_usage(void)
{
    fputs("usage: vstream-bench [--mode M] [options]\n"
          "modes: pinned-producer (pp), pinned-consumer (pc),\n"
          "       pinned-producer-and-consumer (ppc), balanced-producer (bp),\n"
          "       balanced-consumer-group (bcg), end-to-end (e2e), metadata,\n"
          "       raw (append + fdatasync in --dir, no server)\n"
          "  --addr H:P          node address (repeat for a cluster; actors\n"
          "                      spread over them) [$VSTREAM_ADDR or "
          "127.0.0.1:8090]\n"
          "  --user U --password P   [$VSTREAM_USER/$VSTREAM_PASSWORD, iggy]\n"
          "  --tls-ca FILE [--tls-server-name N]   TLS, verified by FILE\n"
          "  --producers N --consumers N   actors [8 and 8; --actors N sets "
          "both]\n"
          "  --streams N         streams of balanced-producer [1]\n"
          "  --partitions N      partitions of the balanced topic [24]\n"
          "  --msg-size B|LO..HI payload size or range [1000]\n"
          "  --batch N           messages per batch [1000]\n"
          "  --batches N         batches (metadata: ops) per actor [1000]\n"
          "  --total-bytes N     payload over all producers (instead of "
          "--batches)\n"
          "  --rate R            open loop: R requests/s over all actors\n"
          "  --warmup S          seconds of unrecorded sends first [0]\n"
          "  --fsync none|batch  enforce_fsync of the created topics [none]\n"
          "  --no-verify         consumers decode polls without verifying the\n"
          "                      message and batch checksums (as iggy-bench's\n"
          "                      do; the structure is still checked)\n"
          "  --timeout S         stop the timed phase after S seconds [600]\n"
          "  --server-pid PID | --ready-file F   node processes for CPU/RSS\n"
          "  --prefix P          name prefix of created streams [bench]\n"
          "  --dir D             raw mode's directory [.]\n"
          "  --json  --progress|--no-progress  --keep (no cleanup)\n"
          "older forms: --op send|poll|write|read|raw --clients N --ops N\n"
          "  [--stream S --topic T --enforce-fsync 0|1]\n",
          stderr);
    return 1;
}

static int
parse_u64(const char *v, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long x;
    if (v == NULL || *v == '\0' || *v == '-')
        return -1;
    errno = 0;
    x = strtoull(v, &end, 10);
    if (errno != 0 || x > max)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        x *= 1000u, end++;
        break;
    case 'M':
        x *= 1000000u, end++;
        break;
    case 'G':
        x *= 1000000000u, end++;
        break;
    }
    if (*end == 'B')
        end++;
    if (*end != '\0' || x > max)
        return -1;
    *out = x;
    return 0;
}

static int
parse_u32(const char *v, uint32_t max, uint32_t *out)
{
    uint64_t x;
    if (parse_u64(v, max, &x) != 0)
        return -1;
    *out = (uint32_t)x;
    return 0;
}

static int
parse_double(const char *v, double *out)
{
    char *end;
    if (v == NULL || *v == '\0')
        return -1;
    *out = strtod(v, &end);
    return (*end != '\0' || *out < 0) ? -1 : 0;
}

static int
parse_mode(const char *v, enum bench_mode *m)
{
    static const struct {
        const char *name;
        enum bench_mode m;
    } alias[] = {{"pp", MODE_PP},     {"pc", MODE_PC},   {"ppc", MODE_PPC},
                 {"bp", MODE_BP},     {"bcg", MODE_BCG}, {"e2e", MODE_E2E},
                 {"write", MODE_META}};
    for (int i = 0; i < MODE_COUNT; i++)
        if (strcmp(v, mode_names[i]) == 0) {
            *m = (enum bench_mode)i;
            return 0;
        }
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(v, alias[i].name) == 0) {
            *m = alias[i].m;
            return 0;
        }
    return -1;
}

static int
parse_args(struct bench *b, int argc, char **argv)
{
    int have_prod = 0, have_cons = 0, have_parts = 0;

    uint32_t clients = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int flag = 1;
        if (strcmp(a, "--json") == 0)
            b->json = 1;
        else if (strcmp(a, "--progress") == 0)
            b->progress = 1;
        else if (strcmp(a, "--no-progress") == 0)
            b->progress = 0;
        else if (strcmp(a, "--keep") == 0)
            b->keep = 1;
        else if (strcmp(a, "--no-verify") == 0)
            b->no_verify = 1;
        else
            flag = 0;
        if (flag)
            continue;
        if (v == NULL) {
            fprintf(stderr, "vstream-bench: %s needs a value\n", a);
            return -1;
        }
        int bad = 0;
        if (strcmp(a, "--mode") == 0 || strcmp(a, "--op") == 0) {
            if (strcmp(a, "--op") == 0 && strcmp(v, "send") == 0)
                b->mode = MODE_SEND;
            else if (strcmp(a, "--op") == 0 && strcmp(v, "poll") == 0)
                b->mode = MODE_POLL;
            else
                bad = parse_mode(v, &b->mode);
        } else if (strcmp(a, "--addr") == 0) {
            if (b->n_addrs == BENCH_MAX_ADDRS)
                bad = 1;
            else
                b->addrs[b->n_addrs++] = v;
        } else if (strcmp(a, "--tls-ca") == 0)
            b->tls_ca = v;
        else if (strcmp(a, "--tls-server-name") == 0)
            b->tls_name = v;
        else if (strcmp(a, "--user") == 0)
            b->user = v;
        else if (strcmp(a, "--password") == 0)
            b->password = v;
        else if (strcmp(a, "--producers") == 0)
            bad = parse_u32(v, BENCH_MAX_ACTORS, &b->producers), have_prod = 1;
        else if (strcmp(a, "--consumers") == 0)
            bad = parse_u32(v, BENCH_MAX_ACTORS, &b->consumers), have_cons = 1;
        else if (strcmp(a, "--actors") == 0 || strcmp(a, "--clients") == 0) {
            bad = parse_u32(v, BENCH_MAX_ACTORS, &clients);
            b->producers = b->consumers = clients;
            have_prod = have_cons = 1;
        } else if (strcmp(a, "--streams") == 0)
            bad = parse_u32(v, 100000, &b->streams);
        else if (strcmp(a, "--partitions") == 0)
            bad = parse_u32(v, 100000, &b->partitions), have_parts = 1;
        else if (strcmp(a, "--msg-size") == 0) {
            const char *dots = strstr(v, "..");
            if (dots != NULL) {
                char lo[32];
                size_t n = (size_t)(dots - v);
                if (n == 0 || n >= sizeof lo)
                    bad = 1;
                else {
                    memcpy(lo, v, n);
                    lo[n] = '\0';
                    bad = parse_u32(lo, 10000000, &b->msg_min) ||
                          parse_u32(dots + 2, 10000000, &b->msg_max);
                }
            } else {
                bad = parse_u32(v, 10000000, &b->msg_min);
                b->msg_max = b->msg_min;
            }
        } else if (strcmp(a, "--batch") == 0)
            bad = parse_u32(v, 1000000, &b->batch);
        else if (strcmp(a, "--batches") == 0 || strcmp(a, "--ops") == 0)
            bad = parse_u64(v, UINT64_C(1) << 40, &b->batches);
        else if (strcmp(a, "--total-bytes") == 0)
            bad = parse_u64(v, UINT64_C(1) << 50, &b->total_bytes);
        else if (strcmp(a, "--rate") == 0)
            bad = parse_double(v, &b->rate);
        else if (strcmp(a, "--warmup") == 0)
            bad = parse_double(v, &b->warmup_s);
        else if (strcmp(a, "--timeout") == 0)
            bad = parse_double(v, &b->timeout_s);
        else if (strcmp(a, "--fsync") == 0) {
            if (strcmp(v, "batch") == 0 || strcmp(v, "always") == 0)
                b->fsync = 1;
            else if (strcmp(v, "none") == 0 || strcmp(v, "interval") == 0)
                b->fsync = 0;
            else
                bad = 1;
        } else if (strcmp(a, "--enforce-fsync") == 0)
            b->fsync = strcmp(v, "1") == 0 || strcmp(v, "true") == 0;
        else if (strcmp(a, "--server-pid") == 0) {
            uint32_t p;
            bad = parse_u32(v, 1u << 30, &p);
            b->server_pid = (pid_t)p;
        } else if (strcmp(a, "--ready-file") == 0)
            b->ready_file = v;
        else if (strcmp(a, "--prefix") == 0)
            b->prefix = v;
        else if (strcmp(a, "--stream") == 0)
            b->stream = v;
        else if (strcmp(a, "--topic") == 0)
            b->topic = v;
        else if (strcmp(a, "--dir") == 0)
            b->dir = v;
        else {
            fprintf(stderr, "vstream-bench: unknown option %s\n", a);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "vstream-bench: bad value for %s: %s\n", a, v);
            return -1;
        }
        i++;
    }
    /* the older --op forms: --clients actors on one stream */
    if (b->mode == MODE_SEND || b->mode == MODE_POLL) {
        if (!have_parts)
            b->partitions = b->producers;
        if (b->mode == MODE_POLL)
            b->consumers = b->producers, b->producers = 0;
        else
            b->consumers = 0;
    } else if (b->mode == MODE_PP || b->mode == MODE_BP ||
               b->mode == MODE_E2E || b->mode == MODE_META ||
               b->mode == MODE_READ || b->mode == MODE_RAW) {
        b->consumers = 0;
    } else if (b->mode == MODE_PC) {
        /* producers only fill: one per consumer's stream */
        b->producers = b->consumers;
    } else if (b->mode == MODE_BCG && have_cons && !have_prod) {
        b->producers = b->consumers; /* fill with as many producers */
    } else if (b->mode == MODE_PPC) {
        b->consumers = b->producers; /* one consumer per pinned stream */
    }
    if (b->msg_max < b->msg_min || b->batch == 0 ||
        (uint64_t)b->batch * (b->msg_max + VSC_FRAME_HEADER) >
            60u * 1024 * 1024) {
        fprintf(stderr, "vstream-bench: a batch must be 1..60 MiB "
                        "(--batch x (--msg-size + 48))\n");
        return -1;
    }
    if (b->producers + b->consumers == 0 ||
        b->producers + b->consumers > BENCH_MAX_ACTORS) {
        fprintf(stderr, "vstream-bench: 1..%u actors\n", BENCH_MAX_ACTORS);
        return -1;
    }
    if (b->streams == 0 || b->partitions == 0 || b->batches == 0) {
        fprintf(stderr, "vstream-bench: streams, partitions and batches "
                        "must be > 0\n");
        return -1;
    }
    return 0;
}

/* Builds the one batch every producer sends; payload sizes are drawn
 * from the range with a fixed seed, so runs are comparable. */
static int
bench_build_batch(struct bench *b)
{
    struct vs_wbuf wb;
    uint64_t seed = 0x9e3779b97f4a7c15u;
    b->msgs = calloc(b->batch, sizeof *b->msgs);
    b->payload = malloc(b->msg_max ? b->msg_max : 1);
    if (b->msgs == NULL || b->payload == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < b->msg_max; i++)
        b->payload[i] = (uint8_t)('a' + i % 26);
    b->batch_payload = 0;
    for (uint32_t i = 0; i < b->batch; i++) {
        uint32_t len = b->msg_min;
        if (b->msg_max > b->msg_min) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            len += (uint32_t)(seed % (b->msg_max - b->msg_min + 1u));
        }
        b->msgs[i].id.lo = i + 1;
        b->msgs[i].id.hi = (uint64_t)getpid();
        b->msgs[i].payload = b->payload;
        b->msgs[i].payload_len = len;
        b->batch_payload += len;
    }
    vs_wbuf_init(&wb);
    b->batch_len = vsc_batch_build(&wb, b->msgs, b->batch, vs_realtime_us());
    b->batch_buf = wb.data;
    return b->batch_len ? 0 : -EINVAL;
}

static int
server_sample(const struct bench *b, struct bench_procs *ps)
{
    if (b->server_pid <= 0)
        return -ENOENT;
    return bench_procs_sample(b->server_pid, ps);
}

int
main(int argc, char **argv)
{
    static struct bench b;
    static struct bench_procs before, after;
    struct run fill = {0}, timed = {0};
    struct vs_hist *merged = NULL;
    uint64_t per_actor, t0, wall;
    int rc = 2, have_srv = 0;
    double cli_cpu = 0;
    const char *env_addr = getenv("VSTREAM_ADDR");

    b.user = getenv("VSTREAM_USER");
    b.password = getenv("VSTREAM_PASSWORD");
    b.mode = MODE_PP;
    b.producers = b.consumers = 8;
    b.streams = 1;
    b.partitions = 24;
    b.batch = 1000;
    b.msg_min = b.msg_max = 1000;
    b.batches = 1000;
    b.timeout_s = 600;
    b.prefix = "bench";
    b.stream = "bench-data";
    b.topic = "t";
    b.dir = ".";
    b.progress = isatty(2);
    if (parse_args(&b, argc, argv) != 0)
        return bench_usage();
    if (b.n_addrs == 0)
        b.addrs[b.n_addrs++] = env_addr ? env_addr : "127.0.0.1:8090";
    if (b.user == NULL)
        b.user = "iggy";
    if (b.password == NULL)
        b.password = "iggy";
    if (b.ready_file != NULL && b.server_pid == 0) {
        struct vs_ready_info ri;
        if (vs_ready_file_read(b.ready_file, &ri) != 0) {
            fprintf(stderr, "vstream-bench: cannot read %s\n", b.ready_file);
            return 2;
        }
        b.server_pid = ri.pid;
    }
    if (b.mode == MODE_META || b.mode == MODE_READ)
        b.batch = 1, b.msg_min = b.msg_max = 0;
    if (b.mode != MODE_META && b.mode != MODE_READ &&
        bench_build_batch(&b) != 0) {
        fprintf(stderr, "vstream-bench: cannot build the batch\n");
        return 2;
    }
    per_actor = b.batches;
    if (b.total_bytes > 0 && b.batch_payload > 0) {
        uint32_t senders = b.producers ? b.producers : b.consumers;
        uint64_t per_batch = b.batch_payload * senders;
        per_actor = (b.total_bytes + per_batch - 1) / per_batch;
    }

    if (b.mode != MODE_RAW && b.mode != MODE_POLL && b.mode != MODE_READ &&
        bench_setup(&b) != 0)
        goto out;
    /* fills of the consumer modes (not timed, not recorded) */
    if (b.mode == MODE_PC || b.mode == MODE_BCG) {
        enum bench_mode m = b.mode;
        uint64_t per_prod = per_actor;
        if (m == MODE_BCG) {
            /* consumers read what producers wrote: per_actor is per
             * consumer, the fill is spread over the producers */
            uint64_t total = per_actor * b.consumers;
            per_prod = (total + b.producers - 1) / b.producers;
            b.group_target = per_prod * b.producers * b.batch;
        }
        uint64_t f0 = vs_monotonic_ns();
        if (run_start(&b, &fill, b.producers, 0, 0, per_prod, 0) != 0) {
            fprintf(stderr, "vstream-bench: cannot start the fill\n");
            goto out;
        }
        run_wait(&b, &fill, f0, "fill");
        if (run_errors(&fill, "fill"))
            goto cleanup;
        if (!b.json)
            printf("fill: %" PRIu64 " msgs in %.3f s\n", run_total(&fill, 0),
                   secs(vs_monotonic_ns() - f0));
        run_free(&b, &fill);
        if (m == MODE_PC)
            per_actor = per_prod;
    }
    uint32_t nprod =
        (b.mode == MODE_PC || b.mode == MODE_BCG || b.mode == MODE_POLL)
            ? 0
            : b.producers;
    uint32_t ncons = b.consumers;
    if (run_start(&b, &timed, nprod, ncons, 1, per_actor, per_actor) != 0) {
        fprintf(stderr, "vstream-bench: cannot start the actors\n");
        goto cleanup;
    }
    /* every actor has logged in (and joined) when the barrier opens */
    pthread_barrier_wait(&b.barrier);
    have_srv = server_sample(&b, &before) == 0;
    cli_cpu = self_cpu_s();
    pthread_barrier_wait(&b.barrier);
    t0 = vs_monotonic_ns();
    run_wait(&b, &timed, t0, "run");
    cli_cpu = self_cpu_s() - cli_cpu;
    /* the timed wall: first actor start (after its warm-up) to last end */
    {
        uint64_t first = UINT64_MAX, last = 0;
        for (uint32_t i = 0; i < timed.n; i++) {
            if (timed.a[i].t_start == 0)
                continue;
            if (timed.a[i].t_start < first)
                first = timed.a[i].t_start;
            if (timed.a[i].t_end > last)
                last = timed.a[i].t_end;
        }
        wall = (first != UINT64_MAX && last > first) ? last - first : 1;
    }
    if (have_srv)
        have_srv = server_sample(&b, &after) == 0;
    merged = malloc(sizeof *merged);
    if (merged == NULL)
        goto cleanup;
    vs_hist_init(merged);
    for (uint32_t i = 0; i < timed.n; i++)
        vs_hist_merge(merged, timed.a[i].hist);
    rc = run_errors(&timed, "run") || bench_stopped(&b) ? 2 : 0;
    if (run_total(&timed, 2) == 0) {
        fprintf(stderr, "vstream-bench: no request completed\n");
        rc = 2;
    }
    print_report(&b, &timed, wall, merged, have_srv,
                 have_srv ? bench_procs_cpu_delta(&before, &after) : 0,
                 have_srv ? bench_procs_hwm_kb(&after) : 0,
                 have_srv ? after.n : 0, cli_cpu);
cleanup:
    if (fill.a != NULL)
        run_free(&b, &fill);
    if (timed.a != NULL)
        run_free(&b, &timed);
    bench_cleanup(&b);
out:
    free(merged);
    free(b.msgs);
    free(b.payload);
    free(b.batch_buf);
    return rc;
}
