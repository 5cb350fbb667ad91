/*
 * shard/vsr/engine.c - the I/O-free VSR engine: normal path, journal
 * window, frame checks, construction; n = 1..32.
 *
 * Role: implements shard/vsr/engine.h together with view.c (view change,
 * StartView, restart probes) and repair.c (journal repair). State is one
 * struct vs_vsr (internal.h): the durable values (view, log_view,
 * checkpoint, faulty op) as last confirmed, the in-memory ones, a ring
 * of prepare headers indexed op % journal_slots (the journal's window,
 * what DoViewChange and StartView suffixes are cut from), the pipeline
 * (ops commit_max+1..head on the primary, with one PrepareOk bitset per
 * op), and the action queue.
 *
 * Normal path, numbered once here:
 *  1. Primary: vsr_on_request builds the prepare (op = head + 1, chained
 *     to head), queues JOURNAL_APPEND for itself and SEND to each backup.
 *  2. Backup: vsr_on_message(Prepare) verifies integrity and the chain,
 *     queues JOURNAL_APPEND (strictly after the previous append: a body
 *     above a hole waits for repair); on vsr_on_journal_durable it sends
 *     PrepareOk (withheld until view and log_view are durable).
 *  3. Primary: its own durable append and each matching PrepareOk set a
 *     bit; the pipeline head with a replication quorum is committed
 *     (commit_max advances strictly in op order).
 *  4. Every replica walks commit_min+1..commit_max, one COMMIT action at a
 *     time, each only over a durable, chain-verified op; the primary
 *     answers the client after vsr_on_commit_applied (REPLY action).
 *  5. Primary ticks: retransmit prepares a backup has not acknowledged
 *     (backoff with seeded jitter; from the journal via SEND_PREPARE when
 *     the body is not in memory); send a Commit heartbeat carrying
 *     commit_max every `commit` ticks (or when the binding asks:
 *     vsr_heartbeat_now). Backups raise commit_max from prepares and
 *     heartbeats.
 *
 * Memory: message buffers (header + body, contiguous) are reference
 * counted; the ring, the action queue, the withheld queue, the cached
 * DVCs and the last popped action each hold references. The primary
 * retains the bodies of the last max(8 * pipeline_max, 64) ops (at most
 * journal_slots); a backup further behind repairs (repair.c). A backup
 * holds at most 4 * VSR_PIPELINE_MAX bodies above its last append.
 *
 * Invariants: see engine.h. Callers: one thread; no globals, no I/O.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "common/checksum.h"
#include "common/mem.h"
#include "shard/vsr/engine.h"
#include "shard/vsr/internal.h"

#define VSR_DEFAULT_PREPARE_TICKS   25u
#define VSR_DEFAULT_COMMIT_TICKS    50u
#define VSR_DEFAULT_HEARTBEAT_TICKS 500u
#define VSR_DEFAULT_VC_MSG_TICKS    50u
#define VSR_DEFAULT_VC_STATUS_TICKS 500u
#define VSR_DEFAULT_RSV_TICKS       100u
#define VSR_DEFAULT_PROBE_ATTEMPTS  5u
#define VSR_DEFAULT_REPAIR_TICKS    100u
#define VSR_BACKOFF_SHIFT_MAX       4u
#define VSR_RETAIN_MIN              64u

_Static_assert(offsetof(struct vsr_msg, hdr) % 16 == 0, "msg header align");
_Static_assert(offsetof(struct vsr_msg, body) ==
                   offsetof(struct vsr_msg, hdr) + VS_HEADER_SIZE,
               "body follows header");

/* ---------------------------------------------------------------- */
/* Quorums                                                          */
/* ---------------------------------------------------------------- */

unsigned
vsr_quorum_replication(unsigned n)
{
    VS_ASSERT(n >= 1 && n <= VS_REPLICAS_MAX);
    if (n == 2)
        return 2;
    unsigned half = (n + 1) / 2;
    return half < 3 ? half : 3;
}

unsigned
vsr_quorum_view_change(unsigned n)
{
    VS_ASSERT(n >= 1 && n <= VS_REPLICAS_MAX);
    if (n == 2)
        return 2;
    return n - vsr_quorum_replication(n) + 1;
}

unsigned
vsr_quorum_nack(unsigned n)
{
    VS_ASSERT(n >= 1 && n <= VS_REPLICAS_MAX);
    return n - vsr_quorum_replication(n) + 1;
}

unsigned
vsr_primary_index(uint32_t view, unsigned n)
{
    VS_ASSERT(n >= 1);
    return view % n;
}

static const char *const verdict_names[VSR_VERDICT_COUNT] = {
    [VSR_ACCEPTED] = "accepted",
    [VSR_DROP_SHORT] = "short frame",
    [VSR_DROP_STRUCTURE] = "bad structure",
    [VSR_DROP_RELEASE] = "unknown release",
    [VSR_DROP_CLUSTER] = "other cluster",
    [VSR_DROP_SEAL] = "bad seal",
    [VSR_DROP_GROUP] = "other group",
    [VSR_DROP_REPLICA] = "bad sender",
    [VSR_DROP_IDENTITY] = "bad identity checksum",
    [VSR_DROP_BODY] = "bad body checksum",
    [VSR_DROP_CHAIN] = "broken parent chain",
    [VSR_DROP_GAP] = "gap before op",
    [VSR_DROP_CONFLICT] = "conflicting prepare",
    [VSR_DROP_JOURNAL_FULL] = "journal full",
    [VSR_DROP_BODY_MAX] = "body too large",
    [VSR_DROP_STATUS] = "not normal",
    [VSR_DROP_VIEW_OLD] = "older view",
    [VSR_DROP_VIEW_NEW] = "newer view",
    [VSR_DROP_NOT_PRIMARY] = "role mismatch",
    [VSR_DROP_DUPLICATE] = "duplicate",
    [VSR_DROP_LATE] = "late",
    [VSR_DROP_MISMATCH] = "checksum mismatch",
    [VSR_DROP_STALE] = "stale heartbeat",
    [VSR_DROP_UNSUPPORTED] = "unsupported command",
    [VSR_DROP_SIZE] = "bad frame size",
    [VSR_DROP_SUFFIX] = "bad suffix headers",
    [VSR_DROP_INCARNATION] = "not our incarnation",
    [VSR_DROP_RANGE] = "bad repair range",
    [VSR_DROP_NONCE] = "unknown nonce",
    [VSR_DROP_UNWANTED] = "unwanted repair",
    [VSR_DROP_DIVERGENT] = "divergent from applied op",
    [VSR_DROP_REBUILDING] = "rebuilding replica",
};

const char *
vsr_verdict_name(enum vsr_verdict v)
{
    if ((unsigned)v >= VSR_VERDICT_COUNT)
        return "unknown";
    return verdict_names[v];
}

/* ---------------------------------------------------------------- */
/* Messages, randomness, queue                                      */
/* ---------------------------------------------------------------- */

struct vsr_msg *
vsr_msg_alloc(uint32_t size)
{
    VS_ASSERT(size >= VS_HEADER_SIZE);
    struct vsr_msg *m = vs_xcalloc(1, sizeof(*m) + (size - VS_HEADER_SIZE));
    m->refs = 1;
    m->size = size;
    return m;
}

struct vsr_msg *
vsr_msg_new(const void *frame, uint32_t size)
{
    struct vsr_msg *m = vsr_msg_alloc(size);
    memcpy(&m->hdr, frame, size);
    return m;
}

struct vsr_msg *
vsr_msg_ref(struct vsr_msg *m)
{
    m->refs++;
    return m;
}

void
vsr_msg_unref(struct vsr_msg *m)
{
    if (m == NULL)
        return;
    VS_ASSERT(m->refs > 0);
    if (--m->refs == 0)
        free(m);
}

static uint64_t
rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** seeded through splitmix64. */
static void
rng_seed(struct vs_vsr *v, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        v->rng[i] = z ^ (z >> 31);
    }
}

uint64_t
vsr_rng_next(struct vs_vsr *v)
{
    uint64_t *s = v->rng;
    uint64_t r = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return r;
}

/* base plus a seeded jitter in [0, base). */
uint64_t
vsr_jitter(struct vs_vsr *v, uint64_t base)
{
    if (base == 0)
        return 0;
    return base + vsr_rng_next(v) % base;
}

/* A backup's primary timeout: normal_heartbeat plus up to a quarter of
 * it, seeded, so backups rarely time out together. */
uint64_t
vsr_silence_limit(struct vs_vsr *v)
{
    uint64_t base = v->to.normal_heartbeat;
    return base + vsr_rng_next(v) % (base / 4 + 1);
}

void
vsr_queue_push(struct vs_vsr *v, const struct vsr_act *a)
{
    if (v->q_len == v->q_cap) {
        size_t cap = v->q_cap ? v->q_cap * 2 : 64;
        struct vsr_act *q = vs_xmalloc(cap * sizeof(*q));
        for (size_t i = 0; i < v->q_len; i++)
            q[i] = v->q[(v->q_head + i) % v->q_cap];
        free(v->q);
        v->q = q;
        v->q_cap = cap;
        v->q_head = 0;
    }
    v->q[(v->q_head + v->q_len) % v->q_cap] = *a;
    v->q_len++;
}

void
vsr_queue_msg(struct vs_vsr *v, enum vsr_action_kind kind, uint8_t replica,
              uint64_t op, struct vsr_msg *m)
{
    struct vsr_act a;
    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.replica = replica;
    a.op = op;
    a.msg = vsr_msg_ref(m);
    vsr_queue_push(v, &a);
}

int
vsr_pop(struct vs_vsr *v, struct vs_vsr_action *out)
{
    vsr_msg_unref(v->popped);
    v->popped = NULL;
    if (v->q_len == 0)
        return 0;
    struct vsr_act a = v->q[v->q_head];
    v->q_head = (v->q_head + 1) % v->q_cap;
    v->q_len--;

    memset(out, 0, sizeof(*out));
    out->kind = a.kind;
    out->replica = a.replica;
    out->op = a.op;
    out->client = a.client;
    out->persist = a.persist;
    out->checksum = a.checksum;
    out->retransmit = a.retransmit;
    out->view = a.view;
    if (a.msg != NULL) {
        v->popped = a.msg; /* our reference, released at the next pop */
        out->frame = &a.msg->hdr;
        out->size = a.msg->size;
        out->body_len = a.msg->hdr.f.size - VS_HEADER_SIZE;
        /* Held (even if empty) when the whole frame is here. */
        out->body = a.msg->size == a.msg->hdr.f.size ? a.msg->body : NULL;
    }
    return 1;
}

/* ---------------------------------------------------------------- */
/* Helpers                                                          */
/* ---------------------------------------------------------------- */

struct vsr_slot *
vsr_slot_of(struct vs_vsr *v, uint64_t op)
{
    return &v->slots[op % v->slots_n];
}

/* The slot holding op, or NULL when op is not in the window. */
struct vsr_slot *
vsr_slot_get(struct vs_vsr *v, uint64_t op)
{
    struct vsr_slot *s = vsr_slot_of(v, op);
    if (!s->present || s->h.op != op)
        return NULL;
    return s;
}

const struct vsr_slot *
vsr_slot_cget(const struct vs_vsr *v, uint64_t op)
{
    const struct vsr_slot *s = &v->slots[op % v->slots_n];
    if (!s->present || s->h.op != op)
        return NULL;
    return s;
}

int
vsr_primary_here(const struct vs_vsr *v)
{
    return v->status == VSR_STATUS_NORMAL &&
           vsr_primary_index(v->view, v->n) == v->replica;
}

/* A Normal backup of its view that may acknowledge prepares. */
int
vsr_may_ack(const struct vs_vsr *v)
{
    return v->status == VSR_STATUS_NORMAL && !vsr_primary_here(v) &&
           v->log_view == v->view && !v->rebuilding && !v->xfer;
}

/* Highest op the journal window admits: the durable checkpoint (or an
 * installed snapshot / the recovered journal's base, when higher) plus
 * the journal's slots. */
uint64_t
vsr_window_top(const struct vs_vsr *v)
{
    uint64_t base = v->durable.checkpoint_op > v->floor
                        ? v->durable.checkpoint_op
                        : v->floor;
    return base + v->slots_n;
}

static unsigned
popcount32(uint32_t x)
{
    return (unsigned)__builtin_popcount(x);
}

int
vsr_blank(const struct vs_hdr_prepare *h)
{
    static const uint8_t zero[VS_HEADER_SIZE];
    return memcmp(h, zero, VS_HEADER_SIZE) == 0;
}

/* A prepare header of this group: identity, cluster, group, release. */
int
vsr_header_valid(const struct vs_vsr *v, const struct vs_hdr_prepare *h)
{
    return h->f.command == VS_CMD_PREPARE && h->f.size >= VS_HEADER_SIZE &&
           h->f.size <= VS_FRAME_MAX && vs_prepare_verify_identity(h) &&
           vs_wire_format_known(h->f.release) &&
           vs_u128_eq(h->f.cluster, v->cluster) && h->group == v->group &&
           h->op > 0;
}

void
vsr_frame_init(const struct vs_vsr *v, struct vs_header *h, uint8_t command,
               uint32_t size)
{
    memset(h, 0, sizeof(*h));
    h->f.cluster = v->cluster;
    h->f.size = size;
    h->f.view = v->view;
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = command;
    h->f.replica = v->replica;
}

/* Persist before send (R1): PrepareOk, Commit, SVC, DVC and SV leave only
 * when the view they carry and the log_view they carry or imply are
 * durable; a DVC also waits for the faulty-op mark. Otherwise they wait
 * in the withheld queue. */
static int
send_allowed(const struct vs_vsr *v, const struct vs_header *h)
{
    switch (h->f.command) {
    case VS_CMD_START_VIEW_CHANGE:
        return h->f.view <= v->durable.view;
    case VS_CMD_DO_VIEW_CHANGE: {
        const struct vs_hdr_do_view_change *d =
            (const struct vs_hdr_do_view_change *)h;
        return h->f.view <= v->durable.view &&
               d->log_view <= v->durable.log_view &&
               v->faulty_op == v->durable.faulty_op &&
               v->nonack_top == v->durable.nonack_op;
    }
    case VS_CMD_PREPARE_OK:
    case VS_CMD_COMMIT:
    case VS_CMD_PONG:
    case VS_CMD_START_VIEW:
        /* They imply log_view == view (Normal status). */
        return h->f.view <= v->durable.view &&
               v->log_view <= v->durable.log_view;
    default:
        return 1;
    }
}

void
vsr_send(struct vs_vsr *v, uint8_t replica, struct vsr_msg *m)
{
    VS_ASSERT(replica < v->n && replica != v->replica);
    if (send_allowed(v, &m->hdr)) {
        vsr_queue_msg(v, VSR_ACT_SEND, replica, 0, m);
        return;
    }
    v->stats.withheld++;
    if (v->withheld_len == VSR_WITHHELD_MAX) {
        /* Oldest first out: every withheld message is retransmitted by
         * its protocol, so losing one costs time, never safety. */
        vsr_msg_unref(v->withheld[0].msg);
        memmove(&v->withheld[0], &v->withheld[1],
                (VSR_WITHHELD_MAX - 1) * sizeof(v->withheld[0]));
        v->withheld_len--;
    }
    v->withheld[v->withheld_len].msg = vsr_msg_ref(m);
    v->withheld[v->withheld_len].replica = replica;
    v->withheld_len++;
}

void
vsr_broadcast(struct vs_vsr *v, struct vsr_msg *m)
{
    for (uint8_t r = 0; r < v->n; r++)
        if (r != v->replica)
            vsr_send(v, r, m);
}

static void
withheld_flush(struct vs_vsr *v)
{
    size_t keep = 0;
    for (size_t i = 0; i < v->withheld_len; i++) {
        struct vsr_withheld w = v->withheld[i];
        if (w.msg->hdr.f.view != v->view ||
            (v->xfer && w.msg->hdr.f.command == VS_CMD_PREPARE_OK)) {
            /* superseded by a view change, or a PrepareOk a state
             * transfer withholds (the primary retransmits) */
            vsr_msg_unref(w.msg);
        } else if (send_allowed(v, &w.msg->hdr)) {
            vsr_queue_msg(v, VSR_ACT_SEND, w.replica, 0, w.msg);
            vsr_msg_unref(w.msg);
        } else {
            v->withheld[keep++] = w;
        }
    }
    v->withheld_len = keep;
}

void
vsr_superblock_maybe_write(struct vs_vsr *v)
{
    if (v->sb_inflight)
        return;
    if (v->view == v->durable.view && v->log_view == v->durable.log_view &&
        v->faulty_op == v->durable.faulty_op &&
        v->nonack_top == v->durable.nonack_op && !v->ckpt_pending)
        return;
    struct vs_vsr_persist p;
    memset(&p, 0, sizeof(p));
    p.view = v->view;
    p.log_view = v->log_view;
    p.commit_max = v->commit_max > v->durable.commit_max
                       ? v->commit_max
                       : v->durable.commit_max;
    p.checkpoint_op = v->ckpt_pending ? v->ckpt_op : v->durable.checkpoint_op;
    p.checkpoint_checksum =
        v->ckpt_pending ? v->ckpt_checksum : v->durable.checkpoint_checksum;
    p.faulty_op = v->faulty_op;
    p.nonack_op = v->nonack_top;
    struct vsr_act a;
    memset(&a, 0, sizeof(a));
    a.kind = VSR_ACT_SUPERBLOCK_WRITE;
    a.persist = p;
    vsr_queue_push(v, &a);
    v->sb_inflight = 1;
    v->sb_writing = p;
}

/* The faulty range is journaled again, or no longer in the log. */
void
vsr_faulty_clear(struct vs_vsr *v)
{
    if (v->faulty_op == 0)
        return;
    v->faulty_op = 0;
    v->nonack_top = 0;
    v->stats.faulty_repaired++;
    vsr_superblock_maybe_write(v);
}

/* Lowers the faulty range's top to `top` (the log ends there: nothing
 * above it was committed) and clears the mark once every op of the
 * range above commit_min is durable in our journal again. A lowered mark
 * is persisted like a raised one. */
void
vsr_faulty_settle(struct vs_vsr *v, uint64_t top)
{
    if (v->faulty_op == 0)
        return;
    if (v->faulty_op > top)
        v->faulty_op = top;
    if (v->nonack_top > top)
        v->nonack_top = top;
    for (uint64_t x = v->commit_min + 1; x <= v->faulty_op; x++) {
        const struct vsr_slot *s = vsr_slot_cget(v, x);
        if (s == NULL || !s->durable) {
            vsr_superblock_maybe_write(v);
            return;
        }
    }
    vsr_faulty_clear(v);
}

/* ---------------------------------------------------------------- */
/* Commit walk and replies                                          */
/* ---------------------------------------------------------------- */

/* Queues COMMIT of commit_min + 1 when it is known committed, durable
 * here and chained to commit_min. One outstanding at a time. */
void
vsr_commit_walk(struct vs_vsr *v)
{
    /* A state transfer in progress defers every walk (the state machine
     * is about to be replaced): Commit, StartView, DoViewChange, repair
     * and durable appends all come through here. */
    if (v->xfer || v->commit_outstanding || v->commit_min >= v->commit_max)
        return;
    uint64_t op = v->commit_min + 1;
    struct vsr_slot *s = vsr_slot_get(v, op);
    if (s == NULL || !s->durable)
        return; /* wait: append pending, or a gap (repair refills) */
    if (v->anchor_unknown) {
        /* An installed snapshot without its op's checksum: the known
         * (canonical) header above it names it. */
        v->commit_min_checksum = s->h.parent;
        v->anchor_unknown = 0;
    }
    if (!vs_u128_eq(s->h.parent, v->commit_min_checksum)) {
        /* Only a log that diverges below an applied op gets here (R10):
         * never apply over a broken chain. */
        v->stats.divergences++;
        return;
    }
    if (v->hb_commit_op == op &&
        !vs_u128_eq(v->hb_commit_checksum, s->h.f.checksum)) {
        v->stats.divergences++;
        return; /* our op differs from the committed one: needs repair */
    }
    struct vsr_msg *m = s->msg;
    int own = 0;
    if (m == NULL || m->size != m->hdr.f.size) {
        m = vsr_msg_new(&s->h, VS_HEADER_SIZE); /* header only: replay */
        own = 1;
    }
    vsr_queue_msg(v, VSR_ACT_COMMIT, 0, op, m);
    if (own)
        vsr_msg_unref(m);
    v->commit_outstanding = 1;
}

static void
release_body(struct vsr_slot *s)
{
    vsr_msg_unref(s->msg);
    s->msg = NULL;
}

int
vsr_on_commit_applied(struct vs_vsr *v, uint64_t op, const void *output,
                      uint32_t output_len)
{
    if (!v->commit_outstanding || op != v->commit_min + 1)
        return -EINVAL;
    if (output_len > VS_FRAME_MAX - VS_HEADER_SIZE ||
        (output_len > 0 && output == NULL))
        return -EINVAL;
    struct vsr_slot *s = vsr_slot_get(v, op);
    VS_ASSERT(s != NULL);
    v->commit_outstanding = 0;
    v->commit_min = op;
    v->commit_min_checksum = s->h.f.checksum;
    v->stats.commits++;

    if (s->reply && vsr_primary_here(v) && !vs_u128_is_zero(s->h.client)) {
        uint32_t size = VS_HEADER_SIZE + output_len;
        struct vsr_msg *m = vsr_msg_alloc(size);
        struct vs_hdr_reply *r = (struct vs_hdr_reply *)&m->hdr;
        r->f.cluster = v->cluster;
        r->f.size = size;
        r->f.view = v->view;
        r->f.release = 0; /* Iggy client framing */
        r->f.command = VS_CMD_REPLY;
        r->f.replica = v->replica;
        r->request_checksum = s->h.request_checksum;
        r->client = s->h.client;
        r->op = op;
        r->commit = op;
        r->timestamp = s->h.timestamp;
        r->request = s->h.request;
        r->operation = s->h.operation;
        if (output_len > 0)
            memcpy(m->body, output, output_len);
        struct vsr_act a;
        memset(&a, 0, sizeof(a));
        a.kind = VSR_ACT_REPLY;
        a.op = op;
        a.client = s->h.client;
        a.msg = m; /* the queue takes our reference */
        vsr_queue_push(v, &a);
    }
    s->reply = 0;
    /* Backups drop the body once applied; the primary keeps it while a
     * lagging backup may still need a retransmit (see slot_insert). */
    if (!vsr_primary_here(v))
        release_body(s);
    vsr_commit_walk(v);
    return 0;
}

/* Primary: commit pipeline heads that reached a replication quorum. */
void
vsr_pipeline_commit(struct vs_vsr *v)
{
    unsigned q = vsr_quorum_replication(v->n);
    while (v->commit_max < v->head) {
        struct vsr_slot *s = vsr_slot_get(v, v->commit_max + 1);
        VS_ASSERT(s != NULL);
        if (popcount32(s->ok) < q)
            break;
        v->commit_max++;
    }
    vsr_commit_walk(v);
}

/* ---------------------------------------------------------------- */
/* Journal window                                                   */
/* ---------------------------------------------------------------- */

/* Moves the head to op (whose header is known, or op 0 / commit_min):
 * head and head_checksum always change together. */
void
vsr_set_head(struct vs_vsr *v, uint64_t op)
{
    const struct vsr_slot *s = vsr_slot_cget(v, op);
    v->head = op;
    if (s != NULL) {
        v->head_checksum = s->h.f.checksum;
        v->head_timestamp = s->h.timestamp;
    } else if (op == v->commit_min) {
        v->head_checksum = v->commit_min_checksum;
    } else {
        VS_ASSERT(op == 0);
        memset(&v->head_checksum, 0, sizeof(v->head_checksum));
    }
}

/* Issues JOURNAL_APPEND for the ops above journal_op whose bodies are
 * held, strictly in op order: a hole (a body still to repair) stops it. */
void
vsr_journal_pump(struct vs_vsr *v)
{
    while (v->journal_op < v->head) {
        struct vsr_slot *s = vsr_slot_get(v, v->journal_op + 1);
        if (s == NULL || s->msg == NULL || s->msg->size != s->h.f.size)
            return;
        if (s->durable || s->appending) {
            v->journal_op++;
            continue;
        }
        s->appending = 1;
        v->journal_op++;
        vsr_queue_msg(v, VSR_ACT_JOURNAL_APPEND, 0, s->h.op, s->msg);
    }
}

/* Cuts every op >= op from the log (an uncommitted divergent suffix):
 * the binding truncates its journal first if it holds any of them. */
void
vsr_journal_truncate(struct vs_vsr *v, uint64_t op)
{
    VS_ASSERT(op > v->commit_min);
    if (op > v->head && op > v->journal_op)
        return;
    for (uint64_t x = op; x <= v->head; x++) {
        struct vsr_slot *s = vsr_slot_get(v, x);
        if (s == NULL)
            continue;
        release_body(s);
        memset(s, 0, sizeof(*s));
    }
    if (v->journal_op >= op) {
        struct vsr_act a;
        memset(&a, 0, sizeof(a));
        a.kind = VSR_ACT_JOURNAL_TRUNCATE;
        a.op = op;
        vsr_queue_push(v, &a);
        v->journal_op = op - 1;
        v->stats.truncations++;
    }
    if (v->stale_lo == 0 || op < v->stale_lo)
        v->stale_lo = op;
    if (v->faulty_op >= op)
        vsr_faulty_settle(v, op - 1);
    if (v->hb_commit_op >= op)
        v->hb_commit_op = 0;
    /* The new head: the highest known op below the cut. */
    uint64_t h = op - 1;
    while (h > v->commit_min && vsr_slot_get(v, h) == NULL)
        h--;
    vsr_set_head(v, h);
    if (v->journal_op > v->head)
        v->journal_op = v->head;
}

/* Puts a verified prepare above the head and advances the head to it:
 * at head + 1 it chains to the head; above it (a backup taking its
 * primary's prepare over a gap) the ops between are missing, and repair
 * fetches them top down, each checked by the parent of the op above. */
static struct vsr_slot *
slot_insert(struct vs_vsr *v, struct vsr_msg *m)
{
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)&m->hdr;
    VS_ASSERT(p->op > v->head);
    VS_ASSERT(p->op > v->head + 1 || vs_u128_eq(p->parent, v->head_checksum));
    struct vsr_slot *s = vsr_slot_of(v, p->op);
    /* The op leaving the window must be applied and checkpointed. */
    VS_ASSERT(!s->present || s->h.op <= v->commit_min);
    VS_ASSERT(p->op <= vsr_window_top(v));
    release_body(s);
    memset(s, 0, sizeof(*s));
    s->h = *p;
    s->msg = vsr_msg_ref(m);
    s->present = 1;
    vsr_set_head(v, p->op);
    /* Retention: the primary drops the body of an applied op once it is
     * retain ops behind the head. */
    if (p->op > v->retain) {
        struct vsr_slot *old = vsr_slot_get(v, p->op - v->retain);
        if (old != NULL && old->h.op <= v->commit_min)
            release_body(old);
    }
    return s;
}

int
vsr_on_request(struct vs_vsr *v, const struct vs_hdr_request *req,
               const void *body, uint32_t body_len, uint64_t wall)
{
    if (req->f.size != VS_HEADER_SIZE + (uint64_t)body_len)
        return -EMSGSIZE;
    if (body_len > v->body_max || (body_len > 0 && body == NULL) ||
        req->operation == VS_OP_RESERVED)
        return -EINVAL;
    if (v->status == VSR_STATUS_NORMAL && !vsr_primary_here(v) &&
        v->log_view == v->view)
        return -EREMOTE;
    if (!vsr_is_settled_primary(v))
        return -EAGAIN;
    if (!vs_u128_is_zero(req->client)) {
        /* In-pipeline dedup: one request per client in flight. */
        for (uint64_t op = v->commit_min + 1; op <= v->head; op++) {
            struct vsr_slot *s = vsr_slot_get(v, op);
            if (s != NULL && vs_u128_eq(s->h.client, req->client))
                return -EALREADY;
        }
    }
    if (v->head - v->commit_min >= v->pipeline_max)
        return -EBUSY;
    if (v->head + 1 > vsr_window_top(v))
        return -ENOSPC;

    uint32_t size = VS_HEADER_SIZE + body_len;
    struct vsr_msg *m = vsr_msg_alloc(size);
    struct vs_hdr_prepare *p = (struct vs_hdr_prepare *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_PREPARE, size);
    p->client = req->client;
    p->parent = v->head_checksum;
    p->request_checksum = req->request_checksum;
    p->op = v->head + 1;
    p->commit = v->commit_max;
    p->timestamp = wall > v->head_timestamp ? wall : v->head_timestamp + 1;
    p->request = req->request;
    p->operation = req->operation;
    p->group = v->group;
    p->user_id = req->user_id;
    if (body_len > 0)
        memcpy(m->body, body, body_len);
    vs_prepare_seal(p, m->body, body_len);

    struct vsr_slot *s = slot_insert(v, m);
    s->reply = 1;
    s->deadline = v->now + v->to.prepare;
    v->stats.prepares++;
    vsr_journal_pump(v);
    for (uint8_t r = 0; r < v->n; r++)
        if (r != v->replica)
            vsr_queue_msg(v, VSR_ACT_SEND, r, 0, m);
    vsr_msg_unref(m);
    return 0;
}

void
vsr_send_prepare_ok(struct vs_vsr *v, const struct vsr_slot *s)
{
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_prepare_ok *ok = (struct vs_hdr_prepare_ok *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_PREPARE_OK, VS_HEADER_SIZE);
    ok->parent = s->h.parent;
    ok->prepare_checksum = s->h.f.checksum;
    ok->op = s->h.op;
    ok->commit = v->commit_max;
    ok->timestamp = s->h.timestamp;
    ok->request = s->h.request;
    ok->operation = s->h.operation;
    ok->group = v->group;
    vs_frame_seal(&m->hdr);
    vsr_send(v, (uint8_t)vsr_primary_index(v->view, v->n), m);
    vsr_msg_unref(m);
}

int
vsr_on_journal_durable(struct vs_vsr *v, uint64_t op, struct vs_u128 checksum)
{
    struct vsr_slot *s = vsr_slot_get(v, op);
    if (s == NULL || !s->appending || !vs_u128_eq(s->h.f.checksum, checksum))
        return v->stale_lo != 0 && op >= v->stale_lo ? -ESTALE : -EINVAL;
    s->appending = 0;
    s->durable = 1;
    if (op <= v->faulty_op)
        vsr_faulty_settle(v, v->faulty_op);
    if (vsr_primary_here(v)) {
        if (op > v->commit_max) {
            s->ok |= UINT32_C(1) << v->replica;
            vsr_pipeline_commit(v);
        }
    } else if (vsr_may_ack(v)) {
        vsr_send_prepare_ok(v, s);
    }
    vsr_view_after_durable(v, op);
    vsr_commit_walk(v);
    vsr_repair_kick(v);
    return 0;
}

/* ---------------------------------------------------------------- */
/* Replica messages                                                 */
/* ---------------------------------------------------------------- */

/* Backup, Normal in the prepare's view: a Prepare of this view above
 * head + 1. Only this view's primary sends Prepare frames stamped with
 * it, and every op it sends is of the view's log, so the header is
 * canonical though nothing below it is held here: the head jumps to it
 * (its body waits in memory) and the ops between are missing, so repair
 * asks any peer for them top down, each one taken only if its checksum
 * is the parent the op above names (repair.c). Until then the journal
 * stops below the gap, so no PrepareOk is sent for an op above a hole,
 * and a view change that begins before it is filled drops the ops held
 * above it (repair.c vsr_gap_drop). Without it a backup that lost
 * prepares the primary no longer sends as Prepares (bodies not in its
 * memory go out as RepairPrepares, which only a known header verifies)
 * learned no header above its head and the primary's commit could wait
 * on it forever. */
static enum vsr_verdict
prepare_over_gap(struct vs_vsr *v, const struct vs_hdr_prepare *p,
                 const uint8_t *frame)
{
    /* Bodies wait in memory for the hole to be repaired: bounded. */
    if (p->op > v->journal_op + 4 * (uint64_t)VSR_PIPELINE_MAX)
        return VSR_DROP_GAP;
    if (p->op > vsr_window_top(v))
        return VSR_DROP_JOURNAL_FULL;
    /* A fresh gap is most often a reordering: the missing prepares are
     * on their way, so repair waits one retransmit interval for them. */
    if (vsr_missing_count(v) == 0)
        v->gap_wait = v->now + v->to.prepare;
    struct vsr_msg *m = vsr_msg_new(frame, p->f.size);
    slot_insert(v, m);
    vsr_msg_unref(m);
    v->stats.prepares++;
    v->stats.gap_jumps++;
    v->jump_op = p->op;
    v->jump_view = v->view;
    if (p->commit > v->commit_max)
        v->commit_max = p->commit;
    vsr_commit_walk(v);
    return VSR_ACCEPTED;
}

static enum vsr_verdict
on_prepare(struct vs_vsr *v, const struct vs_hdr_prepare *p,
           const uint8_t *frame)
{
    uint32_t body_len = p->f.size - VS_HEADER_SIZE;
    if (p->f.view >= v->view)
        vsr_observe_view(v, p->f.view, p->f.replica);
    if (v->status != VSR_STATUS_NORMAL)
        return VSR_DROP_STATUS;
    if (p->f.view < v->view)
        return VSR_DROP_VIEW_OLD;
    if (p->f.view > v->view)
        return VSR_DROP_VIEW_NEW;
    if (vsr_primary_here(v))
        return VSR_DROP_NOT_PRIMARY;
    if (body_len > v->body_max)
        return VSR_DROP_BODY_MAX;
    if (p->op <= v->commit_min) {
        /* Applied here, but its primary still retransmits it: it may be
         * a pipeline op of this view (the new primary had not committed
         * it, being behind this replica when it took the view) whose
         * PrepareOk was lost. Unless this view's primary announced it
         * committed, an applied op our journal still holds (a drain keeps
         * vsr_drain_keep_from on; not below an installed snapshot) is
         * durable: ack it again, or that pipeline never completes. */
        const struct vsr_slot *s = vsr_slot_cget(v, p->op);
        if ((v->primary_commit_view != v->view || p->op > v->primary_commit) &&
            s != NULL && s->durable && p->op > v->floor &&
            p->op >= vsr_drain_keep_from(v, v->durable.checkpoint_op) &&
            vs_u128_eq(s->h.f.checksum, p->f.checksum) && vsr_may_ack(v))
            vsr_send_prepare_ok(v, s);
        return VSR_DROP_LATE;
    }
    if (p->op <= v->head) {
        /* A retransmit, re-stamped with this view by its primary; its
         * replica byte names the primary that built it (the identity
         * covers it), maybe one of an earlier view. */
        struct vsr_slot *s = vsr_slot_get(v, p->op);
        if (s == NULL) /* a hole below the head: fill it as a repair */
            return vsr_on_repair_prepare(v, p, frame, 1);
        if (!vs_u128_eq(s->h.f.checksum, p->f.checksum))
            return VSR_DROP_CONFLICT;
        if (!s->durable && !s->appending && s->msg == NULL)
            return vsr_on_repair_prepare(v, p, frame, 1); /* known header */
        /* Our first PrepareOk may have been lost. */
        if (s->durable && vsr_may_ack(v))
            vsr_send_prepare_ok(v, s);
        return VSR_DROP_DUPLICATE;
    }
    /* No check of the replica byte here: it names the primary that built
     * the prepare (the identity covers it), and this view's primary
     * retransmits the ops of earlier views' primaries re-stamped with
     * its view. A Prepare frame of our view comes from that view's
     * primary only (a replica sends Prepare frames only as the primary
     * of the view it stamps), so an op above our head that the primary
     * built before this view is taken like its own; refusing it left a
     * backup that had skipped the op (its journal window was full when
     * it adopted the StartView) short of it forever. A builder that was
     * the primary of no view up to ours (index above the view) is
     * impossible. */
    if (p->f.replica > v->view)
        return VSR_DROP_NOT_PRIMARY;
    v->primary_silence = 0;
    if (p->op > v->head + 1)
        return prepare_over_gap(v, p, frame);
    if (v->anchor_unknown && v->head == v->commit_min) {
        /* The first prepare above an installed snapshot whose op checksum
         * was not given: the primary of this view names it. */
        v->head_checksum = p->parent;
        v->commit_min_checksum = p->parent;
        v->anchor_unknown = 0;
    }
    if (!vs_u128_eq(p->parent, v->head_checksum))
        return VSR_DROP_CHAIN;
    if (p->op > vsr_window_top(v))
        return VSR_DROP_JOURNAL_FULL;
    /* Bodies wait in memory for a hole below to be repaired: bounded. */
    if (p->op > v->journal_op + 4 * (uint64_t)VSR_PIPELINE_MAX)
        return VSR_DROP_GAP;

    struct vsr_msg *m = vsr_msg_new(frame, p->f.size);
    slot_insert(v, m);
    v->stats.prepares++;
    vsr_msg_unref(m);
    vsr_journal_pump(v);
    if (p->commit > v->commit_max)
        v->commit_max = p->commit;
    vsr_commit_walk(v);
    return VSR_ACCEPTED;
}

static enum vsr_verdict
on_prepare_ok(struct vs_vsr *v, const struct vs_hdr_prepare_ok *ok)
{
    if (v->status != VSR_STATUS_NORMAL)
        return VSR_DROP_STATUS;
    if (ok->f.view < v->view)
        return VSR_DROP_VIEW_OLD;
    if (ok->f.view > v->view)
        return VSR_DROP_VIEW_NEW;
    if (!vsr_primary_here(v))
        return VSR_DROP_NOT_PRIMARY;
    vsr_lease_heard(v, ok->f.replica); /* even a late one: it hears us */
    struct vsr_slot *s = vsr_slot_get(v, ok->op);
    if (s == NULL || ok->op > v->head)
        return VSR_DROP_LATE;
    if (!vs_u128_eq(s->h.f.checksum, ok->prepare_checksum))
        return VSR_DROP_MISMATCH;
    uint32_t bit = UINT32_C(1) << ok->f.replica;
    if (s->ok & bit)
        return VSR_DROP_DUPLICATE;
    s->ok |= bit; /* also after commit: stops retransmits to it */
    s->holders |= bit;
    if (ok->op <= v->commit_max)
        return VSR_DROP_LATE;
    vsr_pipeline_commit(v);
    return VSR_ACCEPTED;
}

/* Backup: answers an accepted Commit heartbeat, so the primary knows a
 * quorum still hears it (its lease, vsr_is_settled_primary). */
static void
send_pong(struct vs_vsr *v, const struct vs_hdr_commit *c)
{
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_pong *p = (struct vs_hdr_pong *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_PONG, VS_HEADER_SIZE);
    p->timestamp_monotonic = c->timestamp_monotonic;
    p->commit_min = v->commit_min;
    p->group = v->group;
    vs_frame_seal(&m->hdr);
    vsr_send(v, c->f.replica, m);
    vsr_msg_unref(m);
}

/* Primary: a backup heard our heartbeat in our view. */
static enum vsr_verdict
on_pong(struct vs_vsr *v, const struct vs_hdr_pong *p)
{
    if (v->status != VSR_STATUS_NORMAL || !vsr_primary_here(v))
        return VSR_DROP_NOT_PRIMARY;
    if (p->f.view != v->view)
        return p->f.view < v->view ? VSR_DROP_VIEW_OLD : VSR_DROP_VIEW_NEW;
    if (p->timestamp_monotonic > v->heartbeat_seq)
        return VSR_DROP_STALE;
    vsr_lease_heard(v, p->f.replica);
    return VSR_ACCEPTED;
}

static enum vsr_verdict
on_commit(struct vs_vsr *v, const struct vs_hdr_commit *c)
{
    if (c->f.view >= v->view)
        vsr_observe_view(v, c->f.view, c->f.replica);
    if (c->f.view < v->view && vsr_is_settled_primary(v) &&
        c->f.replica == vsr_primary_index(c->f.view, v->n)) {
        /* An older view's primary still heartbeats: show it the view. */
        struct vs_u128 zero = {0, 0};
        struct vsr_msg *m = vsr_start_view_build(v, zero);
        vsr_send(v, c->f.replica, m);
        vsr_msg_unref(m);
        return VSR_DROP_VIEW_OLD;
    }
    if (v->status != VSR_STATUS_NORMAL)
        return VSR_DROP_STATUS;
    if (c->f.view < v->view)
        return VSR_DROP_VIEW_OLD;
    if (c->f.view > v->view)
        return VSR_DROP_VIEW_NEW;
    if (vsr_primary_here(v) || c->f.replica != vsr_primary_index(v->view, v->n))
        return VSR_DROP_NOT_PRIMARY;
    if (c->timestamp_monotonic <= v->heartbeat_seen)
        return VSR_DROP_STALE;
    v->heartbeat_seen = c->timestamp_monotonic;
    v->primary_silence = 0;
    if (v->primary_commit_view != v->view || c->commit > v->primary_commit) {
        v->primary_commit = c->commit;
        v->primary_commit_view = v->view;
    }
    send_pong(v, c);
    if (c->commit > v->commit_max)
        v->commit_max = c->commit;
    if (c->commit > v->commit_min) {
        v->hb_commit_op = c->commit;
        v->hb_commit_checksum = c->commit_checksum;
    }
    vsr_commit_walk(v);
    vsr_repair_kick(v);
    return VSR_ACCEPTED;
}

static int
command_is_unsealed(uint8_t command)
{
    return command == VS_CMD_REQUEST || command == VS_CMD_REPLY ||
           command == VS_CMD_EVICTION || command == VS_CMD_PING_CLIENT ||
           command == VS_CMD_PONG_CLIENT || command == VS_CMD_RESERVED;
}

static int
command_header_only(uint8_t command)
{
    return command == VS_CMD_PREPARE_OK || command == VS_CMD_COMMIT ||
           command == VS_CMD_PONG || command == VS_CMD_START_VIEW_CHANGE ||
           command == VS_CMD_REQUEST_START_VIEW ||
           command == VS_CMD_REQUEST_PREPARES ||
           command == VS_CMD_REPAIR_DONE || command == VS_CMD_RANGE_EVICTED;
}

static enum vsr_verdict
classify(struct vs_vsr *v, const void *frame, size_t len)
{
    struct vs_header h;
    if (len < VS_HEADER_SIZE)
        return VSR_DROP_SHORT;
    memcpy(&h, frame, sizeof(h)); /* the frame may be unaligned */
    if (h.f.size != len)
        return VSR_DROP_SHORT;
    if (vs_header_check_structure(&h, VS_FRAME_MAX) != 0)
        return VSR_DROP_STRUCTURE;
    const uint8_t *body = (const uint8_t *)frame + VS_HEADER_SIZE;
    size_t body_len = len - VS_HEADER_SIZE;

    /* Exact sizes before any checksum work. */
    if (command_header_only(h.f.command) && body_len != 0)
        return VSR_DROP_SIZE;
    if ((h.f.command == VS_CMD_DO_VIEW_CHANGE ||
         h.f.command == VS_CMD_START_VIEW) &&
        (body_len % VS_HEADER_SIZE != 0 ||
         body_len / VS_HEADER_SIZE > VSR_DVC_HEADERS_MAX))
        return VSR_DROP_SIZE;

    if (h.f.command == VS_CMD_PREPARE || h.f.command == VS_CMD_REPAIR_PREPARE) {
        /* A RepairPrepare is the stored prepare with its command byte
         * changed: its identity is that of the Prepare. */
        h.f.command = VS_CMD_PREPARE;
        const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)&h;
        if (!vs_prepare_verify_identity(p))
            return VSR_DROP_IDENTITY;
        /* A zero body checksum is "unsealed": our own primaries always
         * seal, and release 1 is the only known format, so refuse it. */
        if (vs_u128_is_zero(h.f.checksum_body) ||
            !vs_body_verify(&h, body, body_len))
            return VSR_DROP_BODY;
    } else if (command_is_unsealed(h.f.command)) {
        return VSR_DROP_UNSUPPORTED;
    } else if (!vs_frame_verify(&h)) {
        return VSR_DROP_SEAL;
    } else if (body_len > 0 && !vs_body_verify(&h, body, body_len)) {
        return VSR_DROP_BODY;
    }
    if (!vs_wire_format_known(h.f.release))
        return VSR_DROP_RELEASE;
    if (!vs_u128_eq(h.f.cluster, v->cluster))
        return VSR_DROP_CLUSTER;
    uint64_t group;
    /* the state transfer frames are the binding's, not the engine's */
    if (vsr_frame_group(&h, &group) != VSR_FRAME_ENGINE)
        return VSR_DROP_UNSUPPORTED;
    if (group != v->group)
        return VSR_DROP_GROUP;
    uint8_t command = ((const struct vs_header *)frame)->f.command;
    /* A (Repair)Prepare keeps the replica byte of the primary that built
     * it (the identity covers it), which may be this replica. */
    if (h.f.replica >= v->n ||
        (h.f.replica == v->replica && command != VS_CMD_REPAIR_PREPARE &&
         command != VS_CMD_PREPARE))
        return VSR_DROP_REPLICA;

    switch (command) {
    case VS_CMD_PREPARE:
        return on_prepare(v, (const struct vs_hdr_prepare *)&h, frame);
    case VS_CMD_REPAIR_PREPARE:
        if (h.f.size - VS_HEADER_SIZE > v->body_max)
            return VSR_DROP_BODY_MAX;
        return vsr_on_repair_prepare(v, (const struct vs_hdr_prepare *)&h,
                                     frame, 0);
    case VS_CMD_PREPARE_OK:
        return on_prepare_ok(v, (const struct vs_hdr_prepare_ok *)&h);
    case VS_CMD_COMMIT:
        return on_commit(v, (const struct vs_hdr_commit *)&h);
    case VS_CMD_PONG:
        return on_pong(v, (const struct vs_hdr_pong *)&h);
    case VS_CMD_START_VIEW_CHANGE:
        return vsr_on_svc(v, (const struct vs_hdr_start_view_change *)&h);
    case VS_CMD_DO_VIEW_CHANGE:
        return vsr_on_dvc(v, &h, frame);
    case VS_CMD_START_VIEW:
        return vsr_on_sv(v, &h, frame);
    case VS_CMD_REQUEST_START_VIEW:
        return vsr_on_rsv(v, (const struct vs_hdr_request_start_view *)&h);
    case VS_CMD_REQUEST_PREPARES:
        return vsr_on_request_prepares(
            v, (const struct vs_hdr_request_prepares *)&h);
    case VS_CMD_REPAIR_DONE:
    case VS_CMD_RANGE_EVICTED:
        return vsr_on_repair_done(v, (const struct vs_hdr_repair_done *)&h);
    default:
        return VSR_DROP_UNSUPPORTED;
    }
}

enum vsr_verdict
vsr_on_message(struct vs_vsr *v, const void *frame, size_t len)
{
    enum vsr_verdict r = classify(v, frame, len);
    v->stats.verdicts[r]++;
    return r;
}

/* ---------------------------------------------------------------- */
/* Ticks                                                            */
/* ---------------------------------------------------------------- */

static uint64_t
retransmit_delay(struct vs_vsr *v, unsigned attempts)
{
    unsigned k =
        attempts < VSR_BACKOFF_SHIFT_MAX ? attempts : VSR_BACKOFF_SHIFT_MAX;
    uint64_t backoff = (uint64_t)v->to.prepare << k;
    return backoff + vsr_rng_next(v) % v->to.prepare;
}

static void
send_heartbeat(struct vs_vsr *v)
{
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_commit *c = (struct vs_hdr_commit *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_COMMIT, VS_HEADER_SIZE);
    struct vsr_slot *s = vsr_slot_get(v, v->commit_max);
    if (s != NULL)
        c->commit_checksum = s->h.f.checksum;
    else if (v->commit_max == v->commit_min)
        c->commit_checksum = v->commit_min_checksum;
    c->timestamp_monotonic = ++v->heartbeat_seq;
    c->commit = v->commit_max;
    v->heartbeat_commit = v->commit_max;
    c->checkpoint_op = v->durable.checkpoint_op;
    c->group = v->group;
    vs_frame_seal(&m->hdr);
    vsr_broadcast(v, m);
    vsr_msg_unref(m);
    v->stats.heartbeats++;
}

/* Primary: resend prepares a backup has not acknowledged. A body that is
 * not in memory (prepared before a restart or a view change) is sent by
 * the binding from its journal, as a Prepare re-stamped with this view
 * like the ones in memory: a backup takes a RepairPrepare only for a
 * header it knows, and one whose log lost the op's header (a StartView
 * adopted beyond its window, then a state transfer) would drop it for
 * good while the pipeline waits for its PrepareOk. */
static void
primary_retransmit(struct vs_vsr *v)
{
    uint32_t all = v->n == 32 ? UINT32_MAX : (UINT32_C(1) << v->n) - 1;
    uint64_t lo = v->head > v->retain ? v->head - v->retain + 1 : 1;
    for (uint64_t op = lo; op <= v->head; op++) {
        struct vsr_slot *s = vsr_slot_get(v, op);
        if (s == NULL || !s->durable || v->now < s->deadline)
            continue;
        if (s->msg == NULL && op <= v->commit_max)
            continue; /* committed and drained: backups repair it */
        uint32_t missing = all & ~s->ok & ~(UINT32_C(1) << v->replica);
        if (missing == 0)
            continue;
        for (uint8_t r = 0; r < v->n; r++) {
            if (!(missing & (UINT32_C(1) << r)))
                continue;
            if (s->msg != NULL && s->msg->hdr.f.view == v->view) {
                vsr_queue_msg(v, VSR_ACT_SEND, r, 0, s->msg);
            } else if (s->msg != NULL) {
                /* Built in an earlier view: re-stamp the view (outside
                 * the identity checksum). */
                struct vsr_msg *m = vsr_msg_new(&s->msg->hdr, s->msg->size);
                m->hdr.f.view = v->view;
                vsr_queue_msg(v, VSR_ACT_SEND, r, 0, m);
                vsr_msg_unref(m);
            } else {
                struct vsr_act a;
                memset(&a, 0, sizeof(a));
                a.kind = VSR_ACT_SEND_PREPARE;
                a.replica = r;
                a.op = op;
                a.checksum = s->h.f.checksum;
                a.retransmit = 1;
                a.view = v->view;
                vsr_queue_push(v, &a);
            }
        }
        v->stats.retransmits++;
        s->deadline = v->now + retransmit_delay(v, s->attempts);
        if (s->attempts < 255)
            s->attempts++;
    }
}

void
vsr_heartbeat_now(struct vs_vsr *v)
{
    if (v->n == 1 || !vsr_is_settled_primary(v) || v->xfer ||
        v->commit_max <= v->heartbeat_commit)
        return;
    send_heartbeat(v);
    v->heartbeat_deadline = v->now + v->to.commit;
}

void
vsr_tick(struct vs_vsr *v)
{
    v->now++;
    if (v->n == 1)
        return;
    vsr_view_tick(v);
    if (vsr_primary_here(v) && v->lease_view != v->view)
        vsr_lease_heard(v, v->replica);
    /* A primary in state transfer falls silent: its backups elect past
     * it (it cannot commit, and no peer would serve it). */
    if (vsr_primary_here(v) && !v->xfer) {
        primary_retransmit(v);
        if (v->now >= v->heartbeat_deadline) {
            send_heartbeat(v);
            v->heartbeat_deadline = v->now + v->to.commit;
        }
    }
    vsr_repair_tick(v);
}

/* ---------------------------------------------------------------- */
/* Superblock and checkpoint                                        */
/* ---------------------------------------------------------------- */

static int
persist_eq(const struct vs_vsr_persist *a, const struct vs_vsr_persist *b)
{
    return a->view == b->view && a->log_view == b->log_view &&
           a->commit_max == b->commit_max &&
           a->checkpoint_op == b->checkpoint_op &&
           vs_u128_eq(a->checkpoint_checksum, b->checkpoint_checksum) &&
           a->faulty_op == b->faulty_op && a->nonack_op == b->nonack_op;
}

int
vsr_on_superblock_durable(struct vs_vsr *v,
                          const struct vs_vsr_persist *written)
{
    if (!v->sb_inflight || !persist_eq(written, &v->sb_writing))
        return -EINVAL;
    v->sb_inflight = 0;
    VS_ASSERT(written->view >= v->durable.view);
    VS_ASSERT(written->log_view >= v->durable.log_view);
    VS_ASSERT(written->checkpoint_op >= v->durable.checkpoint_op);
    v->durable = *written;
    if (v->ckpt_pending && v->ckpt_op == written->checkpoint_op)
        v->ckpt_pending = 0;
    withheld_flush(v);
    vsr_superblock_maybe_write(v);
    return 0;
}

int
vsr_checkpoint(struct vs_vsr *v, uint64_t op, struct vs_u128 checksum)
{
    if (v->ckpt_pending)
        return -EBUSY;
    if (op > v->commit_min || op <= v->durable.checkpoint_op)
        return -EINVAL;
    v->ckpt_pending = 1;
    v->ckpt_op = op;
    v->ckpt_checksum = checksum;
    vsr_superblock_maybe_write(v);
    return 0;
}

/* ---------------------------------------------------------------- */
/* Construction                                                     */
/* ---------------------------------------------------------------- */

#define FAIL(...)                                                              \
    do {                                                                       \
        if (reason != NULL && reason_len > 0)                                  \
            snprintf(reason, reason_len, __VA_ARGS__);                         \
        goto fail;                                                             \
    } while (0)

static int
check_options(const struct vs_vsr_options *o, char *reason, size_t reason_len)
{
    const struct vs_vsr_persist *d = &o->durable;
    if (o->replica_count < 1 || o->replica_count > VS_REPLICAS_MAX)
        FAIL("replica_count %u out of 1..%u", o->replica_count,
             VS_REPLICAS_MAX);
    if (o->replica >= o->replica_count)
        FAIL("replica %u >= replica_count %u", o->replica, o->replica_count);
    if (o->journal_slots < 1 || o->journal_slots > VSR_JOURNAL_SLOTS_MAX)
        FAIL("journal_slots %u out of 1..%u", o->journal_slots,
             VSR_JOURNAL_SLOTS_MAX);
    if (o->pipeline_max < 1 || o->pipeline_max > VSR_PIPELINE_MAX ||
        o->pipeline_max > o->journal_slots)
        FAIL("pipeline_max %u out of 1..min(%u, journal_slots)",
             o->pipeline_max, VSR_PIPELINE_MAX);
    if (o->body_max > VS_FRAME_MAX - VS_HEADER_SIZE)
        FAIL("body_max %u above the frame limit", o->body_max);
    if (d->log_view > d->view)
        FAIL("log_view %u > view %u", d->log_view, d->view);
    if (d->nonack_op > d->faulty_op)
        FAIL("never-nacked op %llu above the faulty range's top %llu",
             (unsigned long long)d->nonack_op,
             (unsigned long long)d->faulty_op);
    if (o->replica_count == 1 && o->recovering)
        FAIL("a one-replica group never starts recovering");
    if (o->recovering && vs_u128_is_zero(o->incarnation))
        FAIL("a recovering replica needs a non-zero incarnation");
    if (o->replica_count == 1 && (o->faulty_op != 0 || d->faulty_op != 0))
        FAIL("a one-replica group has no peer to repair a faulty op from");
    if (o->rebuilt && !o->recovering)
        FAIL("a rebuilt replica starts recovering");
    if (o->rebuilt && o->header_count > 0)
        FAIL("a rebuilt replica starts with an empty journal");
    if (o->replica_count > 1 && !o->recovering &&
        (o->header_count > 0 || o->commit_min > 0 || d->view > 0))
        FAIL("a replica with a prior life must start recovering");
    /* A faulty op is an entry this replica journaled (and may have
     * acknowledged) that its disk lost: it is a prior life even when the
     * journal is now empty. Starting Normal would let the primary of view
     * 0 build a new op over a possibly committed one. */
    if (o->replica_count > 1 && !o->recovering &&
        (o->faulty_op != 0 || d->faulty_op != 0))
        FAIL("a replica with a faulty op must start recovering");
    if (o->commit_min < d->checkpoint_op)
        FAIL("state op %llu behind checkpoint op %llu",
             (unsigned long long)o->commit_min,
             (unsigned long long)d->checkpoint_op);
    if (o->header_count == 0) {
        /* A persisted mark at or below the state op is stale (the ops of
         * its range are applied); one found at this boot is not. */
        if (o->faulty_op != 0 && o->faulty_op <= o->commit_min)
            FAIL("faulty op %llu beside an empty journal at state op %llu",
                 (unsigned long long)o->faulty_op,
                 (unsigned long long)o->commit_min);
        /* A replica of a group restarts with an installed snapshot and
         * nothing above it yet (a state transfer whose suffix was not
         * repaired before the crash); anything else is a lost journal. */
        if ((d->checkpoint_op > 0 || o->commit_min > 0) &&
            !(o->replica_count > 1 && o->recovering))
            FAIL("empty journal beside checkpoint op %llu / state op %llu",
                 (unsigned long long)d->checkpoint_op,
                 (unsigned long long)o->commit_min);
        if (o->replica_count == 1 && d->commit_max > 0)
            FAIL("superblock commit_max %llu beside an empty journal",
                 (unsigned long long)d->commit_max);
        return 0;
    }
    if (o->headers == NULL)
        FAIL("header_count without headers");
    /* The journal keeps the checkpoint op's entry when it drains, so it
     * may hold one entry more than the window: the ones below the state
     * op only anchor the chain. */
    if (o->header_count > (size_t)o->journal_slots + 1)
        FAIL("%zu recovered headers exceed %u journal slots", o->header_count,
             o->journal_slots);
    for (size_t i = 0; i < o->header_count; i++) {
        const struct vs_hdr_prepare *h = &o->headers[i];
        unsigned long long op = (unsigned long long)h->op;
        if (h->f.command != VS_CMD_PREPARE)
            FAIL("recovered entry %zu is not a prepare", i);
        if (!vs_prepare_verify_identity(h))
            FAIL("recovered op %llu: bad identity checksum", op);
        if (!vs_wire_format_known(h->f.release))
            FAIL("recovered op %llu: unknown release %u", op, h->f.release);
        if (!vs_u128_eq(h->f.cluster, o->cluster))
            FAIL("recovered op %llu: another cluster", op);
        if (h->group != o->group)
            FAIL("recovered op %llu: another group", op);
        if (h->f.size < VS_HEADER_SIZE)
            FAIL("recovered op %llu: size %u", op, h->f.size);
        if (i == 0) {
            if (h->op == 0)
                FAIL("recovered op 0: op 0 is the empty log");
            if (h->op > o->commit_min + 1)
                FAIL("gap: journal starts at op %llu, state is at %llu", op,
                     (unsigned long long)o->commit_min);
            if (h->op == 1 && !vs_u128_is_zero(h->parent))
                FAIL("recovered op 1: parent is not the empty log");
        } else {
            const struct vs_hdr_prepare *prev = &o->headers[i - 1];
            if (h->op != prev->op + 1)
                FAIL("recovered op %llu follows op %llu", op,
                     (unsigned long long)prev->op);
            if (!vs_u128_eq(h->parent, prev->f.checksum))
                FAIL("recovered op %llu: broken parent chain", op);
            if (h->timestamp <= prev->timestamp)
                FAIL("recovered op %llu: timestamp not increasing", op);
        }
    }
    uint64_t head = o->headers[o->header_count - 1].op;
    /* The faulty range found at this boot lies above the recovered head
     * (the cut removed it). A persisted one at or below the head is
     * stale: its ops are journaled again (the clearing write was lost). */
    if (o->faulty_op != 0 && o->faulty_op <= head)
        FAIL("faulty op %llu is not above the recovered head %llu",
             (unsigned long long)o->faulty_op, (unsigned long long)head);
    if (head < o->commit_min)
        FAIL("journal head %llu behind state op %llu", (unsigned long long)head,
             (unsigned long long)o->commit_min);
    /* Only the ops above the state op need a ring slot of their own. */
    uint64_t kept =
        o->headers[0].op > o->commit_min ? o->headers[0].op : o->commit_min + 1;
    if (head >= kept && head - kept + 1 > o->journal_slots)
        FAIL("%zu recovered headers exceed %u journal slots", o->header_count,
             o->journal_slots);
    uint64_t base = o->headers[0].op - 1 > d->checkpoint_op
                        ? o->headers[0].op - 1
                        : d->checkpoint_op;
    if (head > base + o->journal_slots)
        FAIL("journal head %llu beyond checkpoint %llu + %u slots",
             (unsigned long long)head, (unsigned long long)d->checkpoint_op,
             o->journal_slots);
    if (o->replica_count == 1 && d->commit_max > head)
        FAIL("superblock commit_max %llu ahead of journal head %llu",
             (unsigned long long)d->commit_max, (unsigned long long)head);
    return 0;
fail:
    return -EINVAL;
}

int
vsr_create(const struct vs_vsr_options *o, struct vs_vsr **out, char *reason,
           size_t reason_len)
{
    *out = NULL;
    if (reason != NULL && reason_len > 0)
        reason[0] = '\0';
    int rc = check_options(o, reason, reason_len);
    if (rc != 0)
        return rc;

    struct vs_vsr *v = vs_xcalloc(1, sizeof(*v));
    v->cluster = o->cluster;
    v->group = o->group;
    v->replica = o->replica;
    v->n = o->replica_count;
    v->slots_n = o->journal_slots;
    v->pipeline_max = o->pipeline_max;
    v->body_max = o->body_max;
    /* Bodies a lagging backup may still need without journal repair. */
    v->retain = 8 * o->pipeline_max < VSR_RETAIN_MIN ? VSR_RETAIN_MIN
                                                     : 8 * o->pipeline_max;
    if (v->retain > v->slots_n)
        v->retain = v->slots_n;
    v->to = o->timeouts;
    if (v->to.prepare == 0)
        v->to.prepare = VSR_DEFAULT_PREPARE_TICKS;
    if (v->to.commit == 0)
        v->to.commit = VSR_DEFAULT_COMMIT_TICKS;
    if (v->to.normal_heartbeat == 0)
        v->to.normal_heartbeat = VSR_DEFAULT_HEARTBEAT_TICKS;
    if (v->to.view_change_message == 0)
        v->to.view_change_message = VSR_DEFAULT_VC_MSG_TICKS;
    if (v->to.view_change_status == 0)
        v->to.view_change_status = VSR_DEFAULT_VC_STATUS_TICKS;
    if (v->to.rsv == 0)
        v->to.rsv = VSR_DEFAULT_RSV_TICKS;
    if (v->to.probe_attempts == 0)
        v->to.probe_attempts = VSR_DEFAULT_PROBE_ATTEMPTS;
    if (v->to.repair == 0)
        v->to.repair = VSR_DEFAULT_REPAIR_TICKS;
    rng_seed(v, o->seed ^ ((uint64_t)o->replica << 56));
    v->incarnation = o->incarnation;
    v->rebuilt = o->rebuilt;
    v->rebuilding = o->rebuilt;

    v->status = o->recovering ? VSR_STATUS_RECOVERING : VSR_STATUS_NORMAL;
    v->view = o->durable.view;
    v->log_view = o->durable.log_view;
    v->durable = o->durable;
    v->slots = vs_xcalloc(v->slots_n, sizeof(*v->slots));

    v->commit_min = o->commit_min;
    v->commit_max = o->durable.commit_max;
    for (size_t i = 0; i < o->header_count; i++) {
        const struct vs_hdr_prepare *h = &o->headers[i];
        struct vsr_slot *s = vsr_slot_of(v, h->op);
        s->h = *h;
        s->present = 1;
        s->durable = 1;
        if (h->commit > v->commit_max)
            v->commit_max = h->commit;
        if (h->op == o->commit_min)
            v->commit_min_checksum = h->f.checksum;
        if (i == 0 && h->op == o->commit_min + 1)
            v->commit_min_checksum = h->parent; /* first kept entry */
    }
    if (o->header_count > 0) {
        const struct vs_hdr_prepare *h = &o->headers[o->header_count - 1];
        v->head = h->op;
        v->head_checksum = h->f.checksum;
        v->head_timestamp = h->timestamp;
        /* One replica: every durable prepare was a quorum, so the whole
         * journal is committed. */
        if (v->n == 1)
            v->commit_max = v->head;
    }
    if (v->commit_max < v->commit_min)
        v->commit_max = v->commit_min;
    /* The journal holds nothing at or below its first entry's op - 1
     * (or the state op when it is empty). */
    v->floor = o->header_count > 0 ? o->headers[0].op - 1 : o->commit_min;
    if (o->header_count == 0 && o->commit_min > 0) {
        v->commit_min_checksum = o->commit_min_checksum;
        v->anchor_unknown = vs_u128_is_zero(o->commit_min_checksum);
    }
    if (o->header_count == 0) {
        v->head = o->commit_min; /* nothing above the snapshot yet */
        v->head_checksum = v->commit_min_checksum;
    }
    v->recovery_barrier = v->commit_max < v->head ? v->commit_max : v->head;
    v->journal_op = v->head;
    if (v->head == 0 && v->commit_min == 0)
        memset(&v->head_checksum, 0, sizeof(v->head_checksum));
    v->heartbeat_deadline = v->to.commit;
    v->silence_limit = vsr_silence_limit(v);
    v->probe_deadline = 1; /* first probe at the first tick */
    /* The faulty range (head, faulty_op]: the union of the one cut at
     * this boot and the persisted one, never above the journal window
     * (nothing above it was ever journaled). Its never-nacked part is
     * the union of this boot's cut and the persisted cuts of earlier
     * boots (durable.nonack_op); the rest of the persisted range is an
     * adopted log's reach this replica never journaled (had it, the
     * journal would hold it or this boot would have cut it): nackable. */
    uint64_t cut =
        o->faulty_op < vsr_window_top(v) ? o->faulty_op : vsr_window_top(v);
    uint64_t f = cut > o->durable.faulty_op ? cut : o->durable.faulty_op;
    uint64_t na = cut > o->durable.nonack_op ? cut : o->durable.nonack_op;
    v->faulty_op = f > v->head ? f : 0;
    v->nonack_top = na > v->head ? na : 0;
    const struct vs_hdr_prepare *fh = o->faulty_header;
    if (fh != NULL && v->faulty_op >= fh->op && fh->op == v->head + 1 &&
        fh->op <= vsr_window_top(v) && fh->f.command == VS_CMD_PREPARE &&
        vs_prepare_verify_identity(fh) && vs_wire_format_known(fh->f.release) &&
        vs_u128_eq(fh->f.cluster, v->cluster) && fh->group == v->group &&
        fh->timestamp > v->head_timestamp &&
        (v->head == 0 ? vs_u128_is_zero(fh->parent)
                      : vs_u128_eq(fh->parent, v->head_checksum))) {
        /* Known, not durable: repaired against it, never nacked. */
        struct vsr_slot *s = vsr_slot_of(v, fh->op);
        memset(s, 0, sizeof(*s));
        s->h = *fh;
        s->present = 1;
        vsr_set_head(v, fh->op);
    }
    if (v->faulty_op == 0 && o->durable.faulty_op != 0)
        v->stats.faulty_repaired++; /* stale mark: written 0 below */
    vsr_superblock_maybe_write(v);  /* a mark found (or cleared) at boot */
    vsr_commit_walk(v);
    *out = v;
    return 0;
}

void
vsr_destroy(struct vs_vsr *v)
{
    if (v == NULL)
        return;
    for (uint32_t i = 0; i < v->slots_n; i++)
        vsr_msg_unref(v->slots[i].msg);
    free(v->slots);
    for (size_t i = 0; i < v->q_len; i++)
        vsr_msg_unref(v->q[(v->q_head + i) % v->q_cap].msg);
    free(v->q);
    vsr_msg_unref(v->popped);
    for (size_t i = 0; i < v->withheld_len; i++)
        vsr_msg_unref(v->withheld[i].msg);
    vsr_msg_unref(v->dvc);
    for (unsigned i = 0; i < VS_REPLICAS_MAX; i++)
        vsr_msg_unref(v->dvcs[i]);
    free(v);
}

/* ---------------------------------------------------------------- */
/* Introspection                                                    */
/* ---------------------------------------------------------------- */

enum vsr_status
vsr_status(const struct vs_vsr *v)
{
    return v->status;
}

int
vsr_is_primary(const struct vs_vsr *v)
{
    return vsr_primary_here(v);
}

uint32_t
vsr_view(const struct vs_vsr *v)
{
    return v->view;
}

uint32_t
vsr_log_view(const struct vs_vsr *v)
{
    return v->log_view;
}

uint64_t
vsr_op(const struct vs_vsr *v)
{
    return v->head;
}

uint64_t
vsr_commit_min(const struct vs_vsr *v)
{
    return v->commit_min;
}

uint64_t
vsr_commit_max(const struct vs_vsr *v)
{
    return v->commit_max;
}

void
vsr_durable(const struct vs_vsr *v, struct vs_vsr_persist *out)
{
    *out = v->durable;
}

int
vsr_header(const struct vs_vsr *v, uint64_t op, struct vs_hdr_prepare *out)
{
    const struct vsr_slot *s = vsr_slot_cget(v, op);
    if (s == NULL)
        return 0;
    *out = s->h;
    return 1;
}

void
vsr_lease_heard(struct vs_vsr *v, uint8_t replica)
{
    if (v->lease_view != v->view) {
        /* first word in this view: every replica starts fresh */
        for (unsigned r = 0; r < v->n; r++)
            v->heard[r] = v->now;
        v->lease_view = v->view;
    }
    v->heard[replica] = v->now;
}

/* 1 while a replication quorum (counting this primary) heard from it in
 * its view within normal_heartbeat ticks. A primary that just took the
 * view counts as heard by everyone: the DVC quorum spoke to it. */
static int
lease_fresh(const struct vs_vsr *v)
{
    if (v->n == 1 || v->lease_view != v->view)
        return 1;
    unsigned heard = 1;
    for (unsigned r = 0; r < v->n; r++)
        if (r != v->replica && v->now - v->heard[r] <= v->to.normal_heartbeat)
            heard++;
    return heard >= vsr_quorum_replication(v->n);
}

int
vsr_is_settled_primary(const struct vs_vsr *v)
{
    return vsr_primary_here(v) && v->log_view == v->view && !v->xfer &&
           v->commit_min >= v->recovery_barrier && lease_fresh(v);
}

int
vsr_primary(const struct vs_vsr *v)
{
    if (v->status != VSR_STATUS_NORMAL)
        return -1;
    return (int)vsr_primary_index(v->view, v->n);
}

void
vsr_info(const struct vs_vsr *v, struct vs_vsr_info *out)
{
    memset(out, 0, sizeof(*out));
    out->status = v->status;
    int mine = vsr_primary_index(v->view, v->n) == v->replica;
    switch (v->status) {
    case VSR_STATUS_NORMAL:
        out->role = mine ? VSR_ROLE_PRIMARY : VSR_ROLE_BACKUP;
        break;
    case VSR_STATUS_VIEW_CHANGE:
        out->role = mine ? VSR_ROLE_CANDIDATE : VSR_ROLE_ELECTOR;
        break;
    default:
        out->role = VSR_ROLE_RECOVERING;
        break;
    }
    out->view = v->view;
    out->log_view = v->log_view;
    out->op = v->head;
    out->journal_op = v->journal_op;
    out->commit_min = v->commit_min;
    out->commit_max = v->commit_max;
    out->checkpoint_op = v->durable.checkpoint_op;
    out->settled = vsr_is_settled_primary(v);
    out->primary = vsr_primary(v);
    out->faulty_op = v->faulty_op;
    out->nonack_top = v->nonack_top;
    out->missing = vsr_missing_count(v);
    out->rebuilding = v->rebuilding;
    out->state_transfer = v->transfer;
    out->transfer_op = v->transfer_op;
    out->transferring = v->xfer;
}

const struct vs_vsr_stats *
vsr_stats(const struct vs_vsr *v)
{
    return &v->stats;
}
