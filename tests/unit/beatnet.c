/*
 * tests/unit/beatnet.c - many three-replica groups on three in-process
 * nodes with per-link coalesced heartbeats; see beatnet.h.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/mem.h"
#include "common/wire.h"
#include "shard/link/beat.h"
#include "shard/link/coalesce.h"
#include "shard/serve/pbeat.h"
#include "shard/vsr/engine.h"
#include "tests/unit/beatnet.h"

#define BN_RELEASE VS_WIRE_FORMAT_VERSION

static const struct vs_u128 bn_cluster = {0xbea7, 0x5eed};

struct bn_msg {
    uint8_t from, to;
    uint32_t len;
    uint8_t *data;
    struct bn_msg *next;
};

struct bn {
    uint32_t groups;
    int coalesce;
    struct vs_vsr **eng; /* [groups * 3]: group g's replica i at g * 3 + i */
    uint8_t *drop;       /* [groups] */
    uint64_t *client;    /* [groups]: the next request number */
    struct coal *coal[BN_NODES];
    uint64_t seq[BN_NODES][BN_NODES];
    struct bn_msg *head, *tail; /* this tick's frames, in send order */
    uint8_t *flushbuf;
    uint64_t now;
    struct bn_stats st;
};

/* the node group g's replica i lives on, and back */
static uint8_t
node_of(uint32_t g, unsigned i)
{
    return (uint8_t)((g + i) % BN_NODES);
}

static unsigned
replica_on(uint32_t g, uint8_t node)
{
    return (node + BN_NODES - g % BN_NODES) % BN_NODES;
}

static uint64_t
gid_of(uint32_t g)
{
    return UINT64_C(0x100000000) + g; /* apart from the metadata group */
}

static void
enqueue(struct bn *b, uint8_t from, uint8_t to, const void *frame, size_t len)
{
    struct bn_msg *m = vs_xcalloc(1, sizeof(*m));
    m->from = from;
    m->to = to;
    m->len = (uint32_t)len;
    m->data = vs_xmalloc(len);
    memcpy(m->data, frame, len);
    if (b->tail)
        b->tail->next = m;
    else
        b->head = m;
    b->tail = m;
    b->st.frames[from][to]++;
    b->st.bytes[from][to] += len;
}

static void
send_frame(struct bn *b, uint32_t g, unsigned i, const struct vs_vsr_action *a)
{
    uint8_t from = node_of(g, i), to = node_of(g, a->replica);
    const struct vs_header *h = a->frame;
    if (b->drop[g] && h->f.command == VS_CMD_COMMIT) {
        b->st.entries_dropped++;
        return;
    }
    struct beat_entry e;
    if (b->coalesce &&
        pbeat_from_frame(a->frame, a->size, &bn_cluster, BN_RELEASE, &e) == 0) {
        if (coal_post(b->coal[from], to, &e) == 0) {
            b->st.entries_out++;
            return;
        }
        b->st.fallback++; /* table full: the frame goes on its own */
    }
    enqueue(b, from, to, a->frame, a->size);
}

static void
drain(struct bn *b, uint32_t g, unsigned i)
{
    struct vs_vsr *v = b->eng[g * BN_NODES + i];
    struct vs_vsr_action a;
    while (vsr_pop(v, &a)) {
        switch (a.kind) {
        case VSR_ACT_SEND:
            send_frame(b, g, i, &a);
            break;
        case VSR_ACT_JOURNAL_APPEND:
            (void)vsr_on_journal_durable(v, a.op, a.frame->f.checksum);
            break;
        case VSR_ACT_SUPERBLOCK_WRITE: {
            struct vs_vsr_persist p = a.persist;
            (void)vsr_on_superblock_durable(v, &p);
            break;
        }
        case VSR_ACT_COMMIT:
            (void)vsr_on_commit_applied(v, a.op, NULL, 0);
            if (i == 0)
                b->st.committed++;
            break;
        default: /* replies, truncations, repair reads: not modelled */
            break;
        }
    }
}

int
bn_create(uint32_t groups, int coalesce, uint64_t seed, struct bn **out)
{
    *out = NULL;
    if (groups == 0 || groups > (1u << 20))
        return -EINVAL;
    struct bn *b = vs_xcalloc(1, sizeof(*b));
    b->groups = groups;
    b->coalesce = coalesce;
    b->eng = vs_xcalloc((size_t)groups * BN_NODES, sizeof(*b->eng));
    b->drop = vs_xcalloc(groups, 1);
    b->client = vs_xcalloc(groups, sizeof(*b->client));
    b->flushbuf = vs_xmalloc(BEAT_FRAME_MAX);
    int rc = 0;
    for (uint8_t n = 0; n < BN_NODES && rc == 0; n++)
        rc = coal_create(BN_NODES, 2 * groups, &b->coal[n]);
    for (uint32_t g = 0; g < groups && rc == 0; g++)
        for (unsigned i = 0; i < BN_NODES && rc == 0; i++) {
            struct vs_vsr_options o;
            memset(&o, 0, sizeof(o));
            o.cluster = bn_cluster;
            o.group = gid_of(g);
            o.replica = (uint8_t)i;
            o.replica_count = BN_NODES;
            o.journal_slots = 64;
            o.pipeline_max = 8;
            o.body_max = 4096;
            o.seed = seed * 1000003u + g * BN_NODES + i;
            rc = vsr_create(&o, &b->eng[g * BN_NODES + i], NULL, 0);
        }
    if (rc != 0) {
        bn_destroy(b);
        return rc;
    }
    *out = b;
    return 0;
}

void
bn_destroy(struct bn *b)
{
    if (b == NULL)
        return;
    for (size_t k = 0; k < (size_t)b->groups * BN_NODES; k++)
        vsr_destroy(b->eng[k]);
    for (uint8_t n = 0; n < BN_NODES; n++)
        coal_destroy(b->coal[n]);
    while (b->head) {
        struct bn_msg *m = b->head;
        b->head = m->next;
        free(m->data);
        free(m);
    }
    free(b->eng);
    free(b->drop);
    free(b->client);
    free(b->flushbuf);
    free(b);
}

/* A group's frame for node `to` (from node `from`): to its replica. */
static void
deliver_frame(struct bn *b, uint8_t from, uint8_t to, const void *frame,
              size_t len)
{
    uint64_t gid;
    if (len < VS_HEADER_SIZE ||
        vsr_frame_group(frame, &gid) != VSR_FRAME_ENGINE || gid < gid_of(0) ||
        gid - gid_of(0) >= b->groups)
        return;
    uint32_t g = (uint32_t)(gid - gid_of(0));
    (void)from;
    unsigned i = replica_on(g, to);
    (void)vsr_on_message(b->eng[g * BN_NODES + i], frame, len);
    drain(b, g, i);
}

/* A beat frame from node `from`: its entries rebuilt, as pgroups.c does. */
static void
deliver_beat(struct bn *b, uint8_t from, uint8_t to, const void *frame,
             size_t len)
{
    const struct beat_hdr *h;
    const uint8_t *body;
    if (beat_decode(frame, len, &bn_cluster, &h, &body) != 0)
        abort(); /* the harness built it: a bug */
    for (uint32_t k = 0; k < h->count; k++) {
        struct beat_entry e;
        beat_entry_at(body, k, &e);
        uint64_t g = e.group - gid_of(0);
        if (e.group < gid_of(0) || g >= b->groups || e.member >= BN_NODES ||
            node_of((uint32_t)g, e.member) != from)
            continue;
        struct vs_header f;
        if (pbeat_to_frame(&e, &bn_cluster, h->f.release, &f) != 0)
            continue;
        b->st.entries_in++;
        deliver_frame(b, from, to, &f, sizeof(f));
    }
}

static int
flush_emit(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct bn *b = ctx;
    const struct beat_hdr *h = frame;
    enqueue(b, h->f.replica, peer, frame, len);
    b->st.beat_frames++;
    return 0;
}

void
bn_tick(struct bn *b)
{
    /* the frames of the previous tick arrive (answers go out next tick) */
    struct bn_msg *m = b->head;
    b->head = b->tail = NULL;
    while (m != NULL) {
        struct bn_msg *next = m->next;
        if (((const struct vs_header *)m->data)->f.command == VS_CMD_GROUP_BEAT)
            deliver_beat(b, m->from, m->to, m->data, m->len);
        else
            deliver_frame(b, m->from, m->to, m->data, m->len);
        free(m->data);
        free(m);
        m = next;
    }
    b->now++;
    for (uint32_t g = 0; g < b->groups; g++)
        for (unsigned i = 0; i < BN_NODES; i++) {
            vsr_tick(b->eng[g * BN_NODES + i]);
            drain(b, g, i);
        }
    if (!b->coalesce)
        return;
    for (uint8_t n = 0; n < BN_NODES; n++)
        for (uint8_t p = 0; p < BN_NODES; p++) {
            if (p == n || coal_pending(b->coal[n], p) == 0)
                continue;
            struct beat_sender s = {.cluster = bn_cluster,
                                    .release = BN_RELEASE,
                                    .replica = n,
                                    .shard = 1};
            (void)coal_flush(b->coal[n], p, &s, &b->seq[n][p], 0, flush_emit,
                             b);
        }
}

int
bn_request(struct bn *b, uint32_t g, uint64_t wall)
{
    if (g >= b->groups)
        return -EINVAL;
    for (unsigned i = 0; i < BN_NODES; i++) {
        struct vs_vsr *v = b->eng[g * BN_NODES + i];
        if (!vsr_is_primary(v))
            continue;
        uint8_t body[64];
        memset(body, (int)g, sizeof(body));
        struct vs_hdr_request req;
        memset(&req, 0, sizeof(req));
        req.f.command = VS_CMD_REQUEST;
        req.f.size = VS_HEADER_SIZE + sizeof(body);
        req.client.lo = g + 1;
        req.request = ++b->client[g];
        req.operation = VS_OP_CREATE_TOPIC;
        req.user_id = 1;
        req.request_checksum = vs_checksum(body, sizeof(body));
        int rc = vsr_on_request(v, &req, body, sizeof(body), wall);
        if (rc != 0)
            b->client[g]--;
        else
            b->st.requests++;
        drain(b, g, i);
        return rc;
    }
    return -EAGAIN;
}

void
bn_drop_commits(struct bn *b, uint32_t g)
{
    if (g < b->groups)
        b->drop[g] = 1;
}

void
bn_group(const struct bn *b, uint32_t g, unsigned i, uint32_t *view,
         int *status, uint64_t *commit)
{
    const struct vs_vsr *v = b->eng[g * BN_NODES + i];
    *view = vsr_view(v);
    *status = (int)vsr_status(v);
    *commit = vsr_commit_max(v);
}

int
bn_settled(const struct bn *b, uint32_t g)
{
    const struct vs_vsr *v = b->eng[g * BN_NODES];
    return vsr_view(v) == 0 && vsr_is_settled_primary(v);
}

void
bn_stats(const struct bn *b, struct bn_stats *out)
{
    *out = b->st;
    out->view_changes = 0;
    for (size_t k = 0; k < (size_t)b->groups * BN_NODES; k++)
        out->view_changes += vsr_stats(b->eng[k])->view_changes;
}
