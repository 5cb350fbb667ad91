/*
 * tests/integration/check_data_stats.c - per-partition stats and
 * DeleteSegments on a real vstreamd with 2 data shards, through raw
 * frames:
 *  - after sends to partitions owned by both data shards, GetStats,
 *    GetStreams, GetStream and GetTopic report exact message counts,
 *    sizes (the sum of the stored batch lengths), segment counts and
 *    current offsets, from a connection on EACH data shard;
 *  - purge zeroes a topic's counters, deleting a partition drops it from
 *    the sums, and the partition recreated with the same id starts at
 *    zero (stats are keyed by (id, created_op));
 *  - after a clean restart every counter is the same (recomputed when the
 *    owners open their partitions);
 *  - DeleteSegments (op 138) trims the oldest sealed segments of a
 *    partition on another shard and of one on this shard: reply op 68
 *    with `00000000`, later polls start at the new first offset, the
 *    counters follow; more segments than sealed keeps the active one;
 *    unknown partition / stream -> R 3007 / 1009; a malformed body ->
 *    status 0, empty body, op 138;
 *  - retention (message_expiry) deleting segments adjusts the counters.
 * Every wait is bounded; nodes are stopped by pid (harness).
 * Callers: make check (INTEG_TESTS, INTEG_FAST_TESTS).
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/data_raw.h"
#include "tests/integration/harness.h"

#define START_MS 20000u
#define NPARTS   8u

static struct vs_node node;

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

static void
start(void)
{
    const char *args[] = {"--shards", "2",
                          "--with-default-root-credentials=true", NULL};
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d, status %d", rc, node.status);
}

static void
nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint32_t
ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t
ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* One request/reply on a session (NR reads: the request number is not
 * advanced; replicated ops: it is). */
static void
rt(struct dr_sess *s, uint8_t op, uint32_t code, const void *body, size_t len,
   struct rc_frame *f)
{
    uint64_t request = s->request + 1;
    if (op != 2)
        s->request++;
    ck_assert_int_eq(rc_send(s->fd, op, code, body, (uint32_t)len, s->client,
                             request, s->session),
                     0);
    int rc = rc_read(s->fd, f, DR_READ_MS);
    ck_assert_msg(rc == 1, "read: %d", rc);
    ck_assert_uint_eq(f->command, 8);
}

/* Logged-in sessions on data shard 1 and on data shard 2. Which shard
 * accepts a connection is the kernel's choice (both watch one listener),
 * so the shard of the first session is stopped while the second one
 * connects: only the other shard can accept it. */
static void
login_both(struct dr_sess sess[3], uint64_t client0)
{
    struct dr_sess s;
    dr_login(&s, &node, client0);
    uint32_t first = dr_my_shard(&s);
    ck_assert(first == 1 || first == 2);
    sess[first] = s;
    pid_t pid = node.ready.shard_pids[first];
    ck_assert_int_gt(pid, 0);
    ck_assert_int_eq(kill(pid, SIGSTOP), 0);
    dr_login(&s, &node, client0 + 1);
    uint32_t second = dr_my_shard(&s);
    ck_assert_int_eq(kill(pid, SIGCONT), 0);
    ck_assert_uint_eq(second, 3 - first);
    sess[second] = s;
}

static uint8_t *
ident2(uint8_t *p, uint32_t stream, uint32_t topic)
{
    p[0] = 1;
    p[1] = 4;
    memcpy(p + 2, &stream, 4);
    p[6] = 1;
    p[7] = 4;
    memcpy(p + 8, &topic, 4);
    return p + 12;
}

struct gstats {
    uint64_t size;
    uint32_t streams, topics, partitions, segments;
    uint64_t messages;
};

static void
get_stats(struct dr_sess *s, struct gstats *g)
{
    struct rc_frame f;
    rt(s, 2, 10, NULL, 0, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_ge(f.body_len, 108);
    g->size = ld64(f.body + 68);
    g->streams = ld32(f.body + 76);
    g->topics = ld32(f.body + 80);
    g->partitions = ld32(f.body + 84);
    g->segments = ld32(f.body + 88);
    g->messages = ld64(f.body + 92);
    rc_frame_fini(&f);
}

struct pstat {
    uint32_t id;
    uint32_t segments;
    uint64_t current, size, messages;
};

struct tstat {
    uint32_t partitions;
    uint64_t size, messages;
    struct pstat p[NPARTS + 2];
};

/* GetTopic: header sums and the partition records. 0, or 1 if empty. */
static int
get_topic(struct dr_sess *s, uint32_t stream, uint32_t topic, struct tstat *t)
{
    uint8_t b[12];
    ident2(b, stream, topic);
    struct rc_frame f;
    rt(s, 2, 300, b, sizeof(b), &f);
    ck_assert_uint_eq(f.status, 0);
    if (f.body_len == 0) {
        rc_frame_fini(&f);
        return 1;
    }
    memset(t, 0, sizeof(*t));
    const uint8_t *p = f.body;
    ck_assert_uint_ge(f.body_len, 50);
    t->partitions = ld32(p + 12);
    t->size = ld64(p + 33);
    t->messages = ld64(p + 41);
    size_t at = 50 + p[49];
    at += 4 + ld32(p + at); /* explicit options */
    at += 4 + ld32(p + at); /* derived options */
    ck_assert_uint_le(t->partitions, NPARTS + 2);
    ck_assert_uint_eq(f.body_len, at + 40u * t->partitions);
    for (uint32_t i = 0; i < t->partitions; i++) {
        const uint8_t *r = p + at + 40u * i;
        t->p[i].id = ld32(r);
        t->p[i].segments = ld32(r + 12);
        t->p[i].current = ld64(r + 16);
        t->p[i].size = ld64(r + 24);
        t->p[i].messages = ld64(r + 32);
    }
    rc_frame_fini(&f);
    return 0;
}

/* GetStream: the stream record's size and message count, and the sums of
 * its topic headers. */
static void
get_stream(struct dr_sess *s, uint32_t stream, uint64_t *size,
           uint64_t *messages, uint64_t *tsize, uint64_t *tmessages)
{
    uint8_t b[6] = {1, 4};
    memcpy(b + 2, &stream, 4);
    struct rc_frame f;
    rt(s, 2, 200, b, sizeof(b), &f);
    ck_assert_uint_eq(f.status, 0);
    const uint8_t *p = f.body;
    ck_assert_uint_ge(f.body_len, 37);
    uint32_t topics = ld32(p + 12);
    *size = ld64(p + 16);
    *messages = ld64(p + 24);
    size_t at = 33 + p[32];
    at += 4 + ld32(p + at);
    *tsize = *tmessages = 0;
    for (uint32_t i = 0; i < topics; i++) {
        ck_assert_uint_le(at + 50, f.body_len);
        *tsize += ld64(p + at + 33);
        *tmessages += ld64(p + at + 41);
        at += 50 + p[at + 49];
        at += 4 + ld32(p + at);
        at += 4 + ld32(p + at);
    }
    ck_assert_uint_eq(at, f.body_len);
    rc_frame_fini(&f);
}

/* Expected counters of one partition. */
struct want {
    uint64_t messages, size, current;
};

/* Sends `batches` batches of `count` messages of `size` bytes to (stream,
 * topic, p); adds to *w. */
static void
send_n(struct dr_sess *s, uint32_t stream, uint32_t topic, uint32_t p,
       uint32_t batches, uint32_t count, uint32_t size, struct want *w)
{
    for (uint32_t b = 0; b < batches; b++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "s%ut%up%ub%u", stream, topic, p, b);
        size_t bl, len;
        uint8_t *batch = dr_batch_sized(tag, count, size, &bl);
        uint8_t *body =
            dr_send_body(stream, topic, 2, &p, 4, batch, bl, count, &len);
        uint64_t base = UINT64_MAX;
        uint32_t got = UINT32_MAX;
        ck_assert_uint_eq(dr_send(s, body, len, &got, &base), 0);
        ck_assert_uint_eq(got, p);
        ck_assert_uint_eq(base, w->messages);
        w->messages += count;
        w->size += bl;
        w->current = w->messages - 1;
        free(batch);
        free(body);
    }
}

/* Everything both sessions read matches the expectations. */
static void
check_all(struct dr_sess sess[3], const struct want tp[NPARTS],
          const struct want t2[2], const struct want *s1, const char *phase)
{
    uint64_t tp_size = 0, tp_msgs = 0, t2_size = 0, t2_msgs = 0;
    for (uint32_t p = 0; p < NPARTS; p++) {
        tp_size += tp[p].size;
        tp_msgs += tp[p].messages;
    }
    for (uint32_t p = 0; p < 2; p++) {
        t2_size += t2[p].size;
        t2_msgs += t2[p].messages;
    }
    for (uint32_t sh = 1; sh <= 2; sh++) {
        struct dr_sess *s = &sess[sh];
        struct gstats g;
        get_stats(s, &g);
        ck_assert_uint_eq(g.streams, 2);
        ck_assert_uint_eq(g.topics, 3);
        ck_assert_uint_eq(g.partitions, NPARTS + 3);
        ck_assert_uint_eq(g.segments, NPARTS + 3); /* one each */
        ck_assert_msg(g.messages == tp_msgs + t2_msgs + s1->messages &&
                          g.size == tp_size + t2_size + s1->size,
                      "%s, shard %u: GetStats %llu messages %llu bytes, "
                      "expected %llu, %llu",
                      phase, sh, (unsigned long long)g.messages,
                      (unsigned long long)g.size,
                      (unsigned long long)(tp_msgs + t2_msgs + s1->messages),
                      (unsigned long long)(tp_size + t2_size + s1->size));

        static struct tstat t;
        ck_assert_int_eq(get_topic(s, 0, 0, &t), 0);
        ck_assert_uint_eq(t.partitions, NPARTS);
        ck_assert_uint_eq(t.messages, tp_msgs);
        ck_assert_uint_eq(t.size, tp_size);
        for (uint32_t p = 0; p < NPARTS; p++) {
            ck_assert_uint_eq(t.p[p].id, p);
            ck_assert_uint_eq(t.p[p].segments, 1);
            ck_assert_uint_eq(t.p[p].messages, tp[p].messages);
            ck_assert_uint_eq(t.p[p].size, tp[p].size);
            ck_assert_uint_eq(t.p[p].current, tp[p].current);
        }
        ck_assert_int_eq(get_topic(s, 0, 1, &t), 0);
        ck_assert_uint_eq(t.messages, t2_msgs);
        ck_assert_uint_eq(t.size, t2_size);
        for (uint32_t p = 0; p < 2; p++) {
            ck_assert_uint_eq(t.p[p].messages, t2[p].messages);
            ck_assert_uint_eq(t.p[p].size, t2[p].size);
            ck_assert_uint_eq(t.p[p].current, t2[p].current);
        }
        uint64_t size, msgs, tsize, tmsgs;
        get_stream(s, 0, &size, &msgs, &tsize, &tmsgs);
        ck_assert_uint_eq(size, tp_size + t2_size);
        ck_assert_uint_eq(msgs, tp_msgs + t2_msgs);
        ck_assert_uint_eq(tsize, size);
        ck_assert_uint_eq(tmsgs, msgs);
        get_stream(s, 1, &size, &msgs, &tsize, &tmsgs);
        ck_assert_uint_eq(size, s1->size);
        ck_assert_uint_eq(msgs, s1->messages);
        /* GetStreams: both records, in id order */
        struct rc_frame f;
        rt(s, 2, 201, NULL, 0, &f);
        ck_assert_uint_eq(f.status, 0);
        size_t at = 0;
        for (uint32_t i = 0; i < 2; i++) {
            ck_assert_uint_le(at + 37, f.body_len);
            ck_assert_uint_eq(ld32(f.body + at), i);
            ck_assert_uint_eq(ld64(f.body + at + 16),
                              i == 0 ? tp_size + t2_size : s1->size);
            ck_assert_uint_eq(ld64(f.body + at + 24),
                              i == 0 ? tp_msgs + t2_msgs : s1->messages);
            at += 33 + f.body[at + 32];
            at += 4 + ld32(f.body + at);
        }
        ck_assert_uint_eq(at, f.body_len);
        rc_frame_fini(&f);
    }
}

/* A poll of every partition of (stream, topic): the owner syncs with the
 * published state before it serves (so a purge / delete it has just
 * seen is applied, and its stats republished). */
static void
touch(struct dr_sess *s, uint32_t stream, uint32_t topic, uint32_t parts)
{
    static struct dr_poll r;
    for (uint32_t p = 0; p < parts; p++) {
        dr_poll(s, 1, 1, stream, topic, 1, p, 3, 0, 1, 0, &r);
        ck_assert_uint_eq(r.status, 0);
    }
}

START_TEST(test_stats_counts)
{
    start();
    struct dr_sess sess[3];
    login_both(sess, 0x7100);
    struct dr_sess *a = &sess[1];
    dr_create_stream(a, "st");
    dr_create_stream(a, "st1");
    dr_create_topic(a, 0, "tp", NPARTS, NULL, 0);
    dr_create_topic(a, 0, "t2", 2, NULL, 0);
    dr_create_topic(a, 1, "u", 1, NULL, 0);
    uint32_t owned[3] = {0, 0, 0};
    for (uint32_t p = 0; p < NPARTS; p++)
        owned[dr_owner(0, 0, p, 2)]++;
    ck_assert_uint_gt(owned[1], 0);
    ck_assert_uint_gt(owned[2], 0);

    struct want tp[NPARTS], t2[2], s1;
    memset(tp, 0, sizeof(tp));
    memset(t2, 0, sizeof(t2));
    memset(&s1, 0, sizeof(s1));
    /* nothing sent yet: zeros everywhere */
    check_all(sess, tp, t2, &s1, "empty");
    /* sends from both connections (local and forwarded appends) */
    for (uint32_t p = 0; p < NPARTS; p++)
        send_n(&sess[1 + p % 2], 0, 0, p, 1 + p % 3, 2 + p, 10 + 37 * p,
               &tp[p]);
    send_n(&sess[2], 0, 1, 0, 2, 5, 100, &t2[0]);
    send_n(&sess[1], 0, 1, 1, 1, 3, 7, &t2[1]);
    send_n(&sess[2], 1, 0, 0, 3, 4, 0, &s1);
    check_all(sess, tp, t2, &s1, "sent");

    /* purge t2: its counters restart at zero */
    uint8_t b[16];
    ident2(b, 0, 1);
    ck_assert_uint_eq(dr_meta(a, 135, b, 12), 0);
    touch(a, 0, 1, 2);
    memset(t2, 0, sizeof(t2));
    check_all(sess, tp, t2, &s1, "purged");
    send_n(&sess[2], 0, 1, 1, 1, 6, 50, &t2[1]);
    ck_assert_uint_eq(t2[1].current, 5);
    check_all(sess, tp, t2, &s1, "purged+sent");

    /* delete the highest partition of tp, then recreate it: same id, new
     * created_op, counters from zero */
    ident2(b, 0, 0);
    uint32_t one = 1;
    memcpy(b + 12, &one, 4);
    ck_assert_uint_eq(dr_meta(a, 137, b, 16), 0);
    static struct tstat t;
    ck_assert_int_eq(get_topic(&sess[2], 0, 0, &t), 0);
    ck_assert_uint_eq(t.partitions, NPARTS - 1);
    uint64_t left = 0;
    for (uint32_t p = 0; p + 1 < NPARTS; p++)
        left += tp[p].messages;
    ck_assert_uint_eq(t.messages, left);
    ck_assert_uint_eq(dr_meta(a, 136, b, 16), 0);
    touch(a, 0, 0, NPARTS);
    memset(&tp[NPARTS - 1], 0, sizeof(tp[0]));
    check_all(sess, tp, t2, &s1, "recreated");
    send_n(&sess[1], 0, 0, NPARTS - 1, 1, 3, 20, &tp[NPARTS - 1]);
    check_all(sess, tp, t2, &s1, "recreated+sent");

    /* a clean restart: recomputed by the owners when they open */
    dr_close(&sess[1]);
    dr_close(&sess[2]);
    ck_assert_int_eq(vs_node_stop(&node, 20000), 0);
    start();
    login_both(sess, 0x7200);
    /* each owner opens its partitions (and publishes their counters) at
     * its first sync after shard 0 published the recovered state: its
     * 20 ms timer or, as here, its first data request */
    touch(&sess[1], 0, 0, NPARTS);
    touch(&sess[1], 0, 1, 2);
    touch(&sess[1], 1, 0, 1);
    check_all(sess, tp, t2, &s1, "restarted");
    /* and they keep counting */
    send_n(&sess[1], 0, 0, 0, 1, 2, 5, &tp[0]);
    check_all(sess, tp, t2, &s1, "restarted+sent");
    dr_close(&sess[1]);
    dr_close(&sess[2]);
}
END_TEST

/* DeleteSegments [stream][topic][partition u32][count u32] (op 138). */
static void
delete_segments(struct dr_sess *s, uint32_t stream, uint32_t topic, uint32_t p,
                uint32_t n, struct rc_frame *f)
{
    uint8_t b[20];
    uint8_t *q = ident2(b, stream, topic);
    memcpy(q, &p, 4);
    memcpy(q + 4, &n, 4);
    rt(s, 138, 0, b, sizeof(b), f);
}

static uint64_t
first_offset(struct dr_sess *s, uint32_t topic, uint32_t p)
{
    static struct dr_poll r;
    dr_poll(s, 1, 1, 0, topic, 1, p, 3, 0, 1, 0, &r);
    ck_assert_uint_eq(r.status, 0);
    ck_assert_uint_eq(r.n, 1);
    return r.m[0].offset;
}

START_TEST(test_delete_segments)
{
    start();
    struct dr_sess s;
    dr_login(&s, &node, 0x7300);
    uint32_t mine = dr_my_shard(&s);
    dr_create_stream(&s, "st");
    uint8_t opts[64];
    size_t ol = 0;
    dr_opt_u64(opts, &ol, "segment_size", 1u << 20);
    dr_create_topic(&s, 0, "seg", NPARTS, opts, ol);
    /* one partition this connection's shard owns, one it forwards to */
    uint32_t local = UINT32_MAX, remote = UINT32_MAX;
    for (uint32_t p = 0; p < NPARTS; p++) {
        if (dr_owner(0, 0, p, 2) == mine && local == UINT32_MAX)
            local = p;
        if (dr_owner(0, 0, p, 2) != mine && remote == UINT32_MAX)
            remote = p;
    }
    ck_assert(local != UINT32_MAX && remote != UINT32_MAX);
    uint32_t ps[2] = {remote, local};
    struct want w[2];
    memset(w, 0, sizeof(w));
    /* 35 batches of 100 x 1000 B: four 1 MiB segments (3 sealed) */
    for (uint32_t i = 0; i < 2; i++)
        send_n(&s, 0, 0, ps[i], 35, 100, 1000, &w[i]);
    uint64_t blen = w[0].size / 35;
    ck_assert_uint_eq(w[0].size, blen * 35);
    static struct tstat t;
    ck_assert_int_eq(get_topic(&s, 0, 0, &t), 0);
    for (uint32_t i = 0; i < 2; i++) {
        ck_assert_uint_eq(t.p[ps[i]].segments, 4);
        ck_assert_uint_eq(t.p[ps[i]].messages, 3500);
        ck_assert_uint_eq(t.p[ps[i]].size, w[i].size);
    }
    uint32_t segs_before = t.p[remote].segments;

    for (uint32_t i = 0; i < 2; i++) {
        uint32_t p = ps[i];
        struct rc_frame f;
        delete_segments(&s, 0, 0, p, 2, &f);
        ck_assert_uint_eq(f.status, 0);
        ck_assert_uint_eq(f.operation, 68);
        ck_assert_uint_eq(f.body_len, 4);
        ck_assert_uint_eq(ld32(f.body), 0);
        rc_frame_fini(&f);
        /* later polls start at the new first offset: a batch boundary
         * above two full segments */
        uint64_t first = first_offset(&s, 0, p);
        ck_assert_uint_gt(first, 0);
        ck_assert_uint_eq(first % 100, 0);
        static struct dr_poll r;
        dr_poll(&s, 1, 1, 0, 0, 1, p, 1, 0, 10, 0, &r);
        ck_assert_uint_eq(r.n, 10);
        ck_assert_uint_eq(r.m[0].offset, first);
        ck_assert_int_eq(get_topic(&s, 0, 0, &t), 0);
        ck_assert_uint_eq(t.p[p].segments, segs_before - 2);
        ck_assert_uint_eq(t.p[p].messages, 3500 - first);
        ck_assert_uint_eq(t.p[p].size, (3500 - first) / 100 * blen);
        ck_assert_uint_eq(t.p[p].current, 3499);
        /* more than are sealed: every sealed one goes, the active stays */
        delete_segments(&s, 0, 0, p, 100, &f);
        ck_assert_uint_eq(f.status, 0);
        ck_assert_uint_eq(f.operation, 68);
        ck_assert_uint_eq(f.body_len, 4);
        rc_frame_fini(&f);
        uint64_t first2 = first_offset(&s, 0, p);
        ck_assert_uint_gt(first2, first);
        ck_assert_int_eq(get_topic(&s, 0, 0, &t), 0);
        ck_assert_uint_eq(t.p[p].segments, 1);
        ck_assert_uint_eq(t.p[p].messages, 3500 - first2);
        /* nothing sealed: a no-op success */
        delete_segments(&s, 0, 0, p, 1, &f);
        ck_assert_uint_eq(f.status, 0);
        ck_assert_uint_eq(f.body_len, 4);
        ck_assert_uint_eq(ld32(f.body), 0);
        rc_frame_fini(&f);
        ck_assert_uint_eq(first_offset(&s, 0, p), first2);
    }
    /* the other partitions are untouched */
    ck_assert_int_eq(get_topic(&s, 0, 0, &t), 0);
    for (uint32_t p = 0; p < NPARTS; p++)
        if (p != local && p != remote)
            ck_assert_uint_eq(t.p[p].messages, 0);
    struct gstats g;
    get_stats(&s, &g);
    ck_assert_uint_eq(g.messages, t.messages);
    ck_assert_uint_eq(g.size, t.size);
    ck_assert_uint_eq(g.segments, NPARTS);

    /* refusals: unknown partition R 3007, unknown stream R 1009 (op 68,
     * status 0, result section), a malformed body status 0 + empty body
     * with op 138 */
    struct rc_frame f;
    delete_segments(&s, 0, 0, 99, 1, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.operation, 68);
    ck_assert_uint_eq(f.body_len, 12);
    ck_assert_uint_eq(ld32(f.body), 1);
    ck_assert_uint_eq(ld32(f.body + 8), 3007);
    rc_frame_fini(&f);
    delete_segments(&s, 9, 0, 0, 1, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, 12);
    ck_assert_uint_eq(ld32(f.body + 8), 1009);
    rc_frame_fini(&f);
    uint8_t junk[3] = {1, 4, 0};
    rt(&s, 138, 0, junk, sizeof(junk), &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.operation, 138);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);
    /* the session is still good */
    ck_assert_uint_eq(first_offset(&s, 0, remote), first_offset(&s, 0, remote));
    dr_close(&s);
}
END_TEST

START_TEST(test_retention_adjusts)
{
    start();
    struct dr_sess s;
    dr_login(&s, &node, 0x7400);
    dr_create_stream(&s, "st");
    uint8_t opts[64];
    size_t ol = 0;
    dr_opt_u64(opts, &ol, "message_expiry", 1000000); /* 1 s */
    dr_opt_u64(opts, &ol, "segment_size", 1u << 20);
    dr_create_topic(&s, 0, "exp", 2, opts, ol);
    struct want w[2];
    memset(w, 0, sizeof(w));
    for (uint32_t p = 0; p < 2; p++)
        send_n(&s, 0, 0, p, 25, 100, 1000, &w[p]);
    uint64_t blen = w[0].size / 25;
    /* the expired sealed segments go (retention runs every second): wait
     * until both partitions are down to their active segment */
    static struct tstat t;
    int done = 0;
    for (int i = 0; i < 300 && !done; i++) {
        if (i > 0)
            nap_ms(50);
        ck_assert_int_eq(get_topic(&s, 0, 0, &t), 0);
        done = t.p[0].segments == 1 && t.p[1].segments == 1;
    }
    ck_assert_msg(done, "retention did not run");
    for (uint32_t p = 0; p < 2; p++) {
        uint64_t first = first_offset(&s, 0, p);
        ck_assert_uint_gt(first, 0);
        ck_assert_uint_eq(t.p[p].messages, 2500 - first);
        ck_assert_uint_eq(t.p[p].size, (2500 - first) / 100 * blen);
        ck_assert_uint_eq(t.p[p].current, 2499);
    }
    struct gstats g;
    get_stats(&s, &g);
    ck_assert_uint_eq(g.messages, t.p[0].messages + t.p[1].messages);
    ck_assert_uint_eq(g.size, t.p[0].size + t.p[1].size);
    ck_assert_uint_eq(g.segments, 2);
    dr_close(&s);
}
END_TEST

static Suite *
data_stats_suite(void)
{
    Suite *s = suite_create("data_stats");
    TCase *t = tcase_create("stats");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_stats_counts);
    tcase_add_test(t, test_delete_segments);
    tcase_add_test(t, test_retention_adjusts);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(data_stats_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
