/*
 * tests/integration/preplica.c - what the replicated-partition tests
 * share; see preplica.h.
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
#include "tests/integration/preplica.h"

uint64_t
prep_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A logged-in handle on node i that stays there and resends 57/58 for up
 * to io_ms. */
struct vsc *
prep_login_on(struct vs_cluster *cl, unsigned i, uint32_t io_ms)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl->client[i];
    o.io_timeout_ms = io_ms;
    o.connect_timeout_ms = 2000;
    o.reconnects = 5;
    o.no_follow = 1;
    uint64_t end = prep_now_ms() + 20000;
    while (prep_now_ms() < end) {
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
unsigned
prep_make_topic(struct vs_cluster *cl, struct vsc *c, const char *s,
                const char *t, uint8_t rf)
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
        struct vsc *h = prep_login_on(cl, i, 5000);
        struct vsc_id tid = vsc_id_name(t);
        int found = 0;
        uint64_t end = prep_now_ms() + 10000;
        struct vsc_topic_replicas r;
        memset(&r, 0, sizeof(r));
        while (prep_now_ms() < end) {
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

/* Sends one batch of PREP_BATCH messages "tag-k-j" to partition 0. 0 and the
 * base offset, or the call's error. */
int
prep_send_batch(struct vsc *c, const char *s, const char *t, const char *tag,
                unsigned k, uint64_t *base)
{
    static char text[PREP_BATCH][48];
    struct vsc_msg m[PREP_BATCH];
    memset(m, 0, sizeof(m));
    for (unsigned j = 0; j < PREP_BATCH; j++) {
        snprintf(text[j], sizeof(text[j]), "%s-%u-%u", tag, k, j);
        m[j].payload = text[j];
        m[j].payload_len = (uint32_t)strlen(text[j]);
    }
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_partitioning p = vsc_part_id(0);
    struct vsc_sent sent;
    memset(&sent, 0, sizeof(sent));
    int rc = vsc_send(c, &sid, &tid, &p, m, PREP_BATCH, &sent);
    if (rc == 0)
        *base = sent.base_offset;
    return rc;
}

void
prep_poll_args(struct vsc_poll_args *a, const struct vsc_id *cid,
               uint64_t offset, uint32_t count)
{
    memset(a, 0, sizeof(*a));
    a->consumer = vsc_consumer_single(cid);
    a->has_partition = 1;
    a->partition_id = 0;
    a->strategy = VSC_POLL_OFFSET;
    a->value = offset;
    a->count = count;
}

size_t
prep_poll_at(struct vsc *c, const char *s, const char *t, uint64_t offset,
             char first[48])
{
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id cid = vsc_id_num(1);
    struct vsc_poll_args a;
    prep_poll_args(&a, &cid, offset, PREP_BATCH);
    struct vsc_polled r;
    memset(&r, 0, sizeof(r));
    int rc = vsc_poll(c, &sid, &tid, &a, &r);
    ck_assert_msg(rc == 0, "poll at %llu: %d %s", (unsigned long long)offset,
                  rc, vsc_last_error(c));
    size_t n = r.n;
    first[0] = '\0';
    if (n > 0) {
        ck_assert_uint_eq(r.msgs[0].offset, offset);
        ck_assert_uint_lt(r.msgs[0].payload_len, 48);
        memcpy(first, r.msgs[0].payload, r.msgs[0].payload_len);
        first[r.msgs[0].payload_len] = '\0';
    }
    vsc_polled_fini(&r);
    return n;
}

/* Polls partition 0 from offset 0 until `want` messages (or the end) on
 * c; returns the count read. Asserts offsets are consecutive from 0. */
size_t
prep_read_history(struct vsc *c, const char *s, const char *t, size_t want,
                  struct prep_history *h)
{
    struct vsc_id sid = vsc_id_name(s), tid = vsc_id_name(t);
    struct vsc_id cid = vsc_id_num(1);
    h->n = 0;
    for (unsigned round = 0; round < PREP_MAX_MSGS && h->n < want; round++) {
        struct vsc_poll_args a;
        prep_poll_args(&a, &cid, h->n, PREP_POLL_COUNT);
        struct vsc_polled r;
        memset(&r, 0, sizeof(r));
        int rc = vsc_poll(c, &sid, &tid, &a, &r);
        ck_assert_msg(rc == 0, "poll: %d %s", rc, vsc_last_error(c));
        size_t got = r.n;
        for (size_t i = 0; i < r.n && h->n < PREP_MAX_MSGS; i++) {
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
void
prep_wait_history(struct vs_cluster *cl, unsigned i, const char *s,
                  const char *t, size_t want, struct prep_history *h,
                  uint32_t ms)
{
    struct vsc *c = prep_login_on(cl, i, 5000);
    uint64_t end = prep_now_ms() + ms;
    while (prep_read_history(c, s, t, want, h) < want && prep_now_ms() < end)
        usleep(100 * 1000);
    vsc_destroy(c);
    ck_assert_msg(h->n >= want, "node %u: %zu of %zu messages", i, h->n, want);
}

void
prep_same_history(const struct prep_history *a, const struct prep_history *b,
                  unsigned na, unsigned nb)
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
void
prep_acked_once(const struct prep_history *h, const char *tag,
                const uint64_t *base, unsigned batches)
{
    char want[48];
    for (unsigned k = 0; k < batches; k++) {
        if (base[k] == UINT64_MAX)
            continue;
        for (unsigned j = 0; j < PREP_BATCH; j++) {
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
