/*
 * shard/vsr/repair.c - journal repair: RequestPrepares, RepairPrepare,
 * RepairDone, RangeEvicted.
 *
 * Role: fills the ops a replica knows of but does not hold durably (a
 * hole below a known header -- such as the gap below a Prepare taken
 * above the head, engine.c prepare_over_gap -- the ops of an adopted
 * StartView or a merge, a faulty op, ops below a Commit heartbeat's
 * commit), one window of at
 * most VSR_REPAIR_MAX ops per round from one peer, re-requested from the
 * next peer after `repair` ticks. Serves other replicas' requests from
 * the journal (SEND_PREPARE) or from bodies in memory, highest op first,
 * so each answer reveals the checksum of the op below it. The oldest op
 * served is the drain's (vsr_drain_keep_from: the checkpoint op less the
 * repair margin), never one the journal window no longer holds; below it
 * the answer is RangeEvicted.
 *
 * Invariants: a repaired prepare is taken only if its identity equals
 * the checksum this replica expects for that op: the known header's, the
 * parent named by the known op above it, or the commit checksum of a
 * Commit heartbeat of this view; so repair never imports an op the
 * view's log does not contain, and the head op and its checksum move
 * together. The one exception is a Prepare frame of our view filling a
 * hole below the head (engine.c, `canonical`): only this view's primary
 * sends those, so where no checksum is expected there it is taken, still
 * checked against the ops held on either side. A request never has an
 * empty range (from <= to, from >= 1); one arriving with one is dropped,
 * never asserted on.
 *
 * Callers: engine.c and view.c only (one thread; no I/O).
 */
#include "config.h"

#include <string.h>

#include "common/assert.h"
#include "common/checksum.h"
#include "shard/vsr/engine.h"
#include "shard/vsr/internal.h"

/* The checksum op must have, when this replica knows it. */
static int
expected(const struct vs_vsr *v, uint64_t op, struct vs_u128 *out)
{
    const struct vsr_slot *s = vsr_slot_cget(v, op);
    if (s != NULL) {
        *out = s->h.f.checksum;
        return 1;
    }
    const struct vsr_slot *up = vsr_slot_cget(v, op + 1);
    if (up != NULL) {
        *out = up->h.parent;
        return 1;
    }
    if (v->hb_commit_op == op && v->hb_commit_op != 0) {
        *out = v->hb_commit_checksum;
        return 1;
    }
    return 0;
}

/* The highest op this replica wants: its head, or a committed op above
 * it announced by the primary. */
static uint64_t
want_top(const struct vs_vsr *v)
{
    uint64_t top = v->head;
    if (v->status == VSR_STATUS_NORMAL && v->hb_commit_op > top)
        top = v->hb_commit_op;
    uint64_t limit = vsr_window_top(v);
    return top < limit ? top : limit;
}

static int
missing(const struct vs_vsr *v, uint64_t op)
{
    const struct vsr_slot *s = vsr_slot_cget(v, op);
    return s == NULL || (!s->durable && !s->appending && s->msg == NULL);
}

uint64_t
vsr_missing_count(const struct vs_vsr *v)
{
    uint64_t n = 0;
    uint64_t top = want_top(v);
    for (uint64_t x = v->commit_min + 1; x <= top; x++)
        if (missing(v, x))
            n++;
    return n;
}

/* Repair runs in Normal status, and for a merged candidate. */
static int
repair_allowed(const struct vs_vsr *v)
{
    if (v->status == VSR_STATUS_NORMAL)
        return v->log_view == v->view;
    return v->status == VSR_STATUS_VIEW_CHANGE && v->merged;
}

static int
pick_peer(struct vs_vsr *v, uint64_t op, uint8_t *peer)
{
    const struct vsr_slot *s = vsr_slot_cget(v, op);
    uint32_t holders = s != NULL ? s->holders : 0;
    holders &= ~(UINT32_C(1) << v->replica);
    /* In a started view every peer that adopted it may hold the op (a
     * repaired prepare must match the header we know, whoever sends it):
     * every other round asks beyond the DVC holders, which may be down. */
    if (v->status == VSR_STATUS_NORMAL && v->repair_rr % 2 == 1)
        holders = 0;
    if (v->status == VSR_STATUS_NORMAL && !vsr_primary_here(v) &&
        v->repair_rr % 2 == 0) {
        *peer = (uint8_t)vsr_primary_index(v->view, v->n);
        return 1;
    }
    for (unsigned k = 0; k < v->n; k++) {
        unsigned r = (v->repair_rr + k) % v->n;
        if (r == v->replica)
            continue;
        if (holders == 0 || (holders & (UINT32_C(1) << r))) {
            *peer = (uint8_t)r;
            return 1;
        }
    }
    return 0;
}

/* Starts a round when none is outstanding and something is missing. */
void
vsr_repair_kick(struct vs_vsr *v)
{
    if (v->n == 1 || v->xfer || v->repair_active || !repair_allowed(v) ||
        v->now < v->repair_idle || v->now < v->gap_wait)
        return;
    uint64_t top = want_top(v);
    uint64_t lo = 0;
    for (uint64_t x = v->commit_min + 1; x <= top; x++) {
        if (missing(v, x)) {
            lo = x;
            break;
        }
    }
    if (lo == 0) {
        v->transfer = 0;
        return;
    }
    /* The window ends at the lowest op at or above lo whose checksum is
     * known: answers arrive top first and each reveals the one below. */
    uint64_t hi = lo;
    struct vs_u128 sum;
    while (hi <= top && !expected(v, hi, &sum))
        hi++;
    uint64_t from, to;
    if (hi > top) {
        /* Nothing verifiable in the window. If ops beyond the whole
         * window are known committed, ask for lo alone: a peer that
         * drained it answers RangeEvicted (state transfer); an answer
         * we cannot verify is dropped. Otherwise a Commit or SV will
         * tell. */
        uint64_t known =
            v->commit_max > v->hb_commit_op ? v->commit_max : v->hb_commit_op;
        if (v->status != VSR_STATUS_NORMAL || known <= vsr_window_top(v))
            return;
        hi = from = to = lo;
    } else {
        from = hi >= lo + VSR_REPAIR_MAX ? hi - VSR_REPAIR_MAX + 1 : lo;
        /* Extend upward over ops still missing (one round, <= the max). */
        to = hi;
        while (to < top && to - from + 1 < VSR_REPAIR_MAX && missing(v, to + 1))
            to++;
    }
    uint8_t peer;
    if (!pick_peer(v, hi, &peer))
        return;
    VS_ASSERT(from >= 1 && from <= to);
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_request_prepares *h =
        (struct vs_hdr_request_prepares *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_REQUEST_PREPARES, VS_HEADER_SIZE);
    v->repair_seq++;
    h->nonce.lo = v->repair_seq;
    h->nonce.hi = ((uint64_t)v->replica << 56) ^ v->incarnation.lo;
    h->from_op = from;
    h->to_op = to;
    h->group = v->group;
    vs_frame_seal(&m->hdr);
    vsr_send(v, peer, m);
    vsr_msg_unref(m);
    v->repair_active = 1;
    v->repair_nonce = h->nonce;
    v->repair_peer = peer;
    v->repair_deadline = v->now + v->to.repair;
    v->repair_mark = v->stats.repairs;
    v->stats.repair_requests++;
}

/* Drops the ops held above a hole a backup's Prepare jumped in this
 * view (prepare_over_gap): only memory holds them, never journaled nor
 * acknowledged (the journal stops at the hole). Leaving the view, its
 * log ends below the hole as if they had never arrived: a DoViewChange
 * claiming them (nacked) over the hole would show the merge a log of
 * the newest log_view it cannot complete from a lower log_view's ops in
 * the hole. A hole with a journaled op above it is kept. */
void
vsr_gap_drop(struct vs_vsr *v)
{
    if (v->jump_op == 0 || v->jump_view != v->view ||
        v->status != VSR_STATUS_NORMAL)
        return;
    uint64_t x =
        (v->journal_op > v->commit_min ? v->journal_op : v->commit_min) + 1;
    while (x <= v->head && vsr_slot_cget(v, x) != NULL)
        x++;
    if (x > v->head || x > v->jump_op)
        return; /* no hole below a jumped op */
    for (uint64_t y = x + 1; y <= v->head; y++) {
        const struct vsr_slot *s = vsr_slot_cget(v, y);
        if (s != NULL && (s->durable || s->appending))
            return;
    }
    for (uint64_t y = x + 1; y <= v->head; y++) {
        struct vsr_slot *s = vsr_slot_get(v, y);
        if (s == NULL)
            continue;
        vsr_msg_unref(s->msg);
        memset(s, 0, sizeof(*s));
    }
    vsr_set_head(v, x - 1);
    if (v->journal_op > v->head)
        v->journal_op = v->head;
    v->jump_op = 0;
    v->stats.gap_drops++;
}

void
vsr_repair_tick(struct vs_vsr *v)
{
    if (v->repair_active && v->now >= v->repair_deadline) {
        v->repair_active = 0; /* stalled: ask the next peer */
        v->repair_rr++;
    }
    vsr_repair_kick(v);
}

/* ---------------------------------------------------------------- */
/* Serving a request                                                */
/* ---------------------------------------------------------------- */

static void
send_done(struct vs_vsr *v, uint8_t to, uint8_t command, struct vs_u128 nonce,
          uint64_t op)
{
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_repair_done *h = (struct vs_hdr_repair_done *)&m->hdr;
    vsr_frame_init(v, &m->hdr, command, VS_HEADER_SIZE);
    h->nonce = nonce;
    h->op = op;
    h->group = v->group;
    vs_frame_seal(&m->hdr);
    vsr_send(v, to, m);
    vsr_msg_unref(m);
}

uint64_t
vsr_repair_margin(const struct vs_vsr *v)
{
    if (v->n == 1)
        return 0; /* no peer repairs from this journal */
    uint64_t m = v->slots_n / 2;
    return m > v->pipeline_max ? m : v->pipeline_max;
}

uint64_t
vsr_drain_keep_from(const struct vs_vsr *v, uint64_t checkpoint_op)
{
    uint64_t m = vsr_repair_margin(v);
    return checkpoint_op > m ? checkpoint_op - m : 1;
}

enum vsr_verdict
vsr_on_request_prepares(struct vs_vsr *v,
                        const struct vs_hdr_request_prepares *h)
{
    if (h->from_op == 0 || h->from_op > h->to_op ||
        h->to_op - h->from_op >= VSR_REPAIR_MAX)
        return VSR_DROP_RANGE;
    uint8_t to = h->f.replica;
    /* The journal keeps the checkpoint op's entry and the repair margin
     * below it when it drains. */
    uint64_t ckpt = v->durable.checkpoint_op;
    uint64_t oldest = ckpt > 0 ? vsr_drain_keep_from(v, ckpt) : 1;
    if (v->head >= v->slots_n && v->head - v->slots_n + 1 > oldest)
        oldest = v->head - v->slots_n + 1;
    /* Below the checkpoint only what is still durable here (a boot, an
     * install or an older drain may have left less than the margin). */
    while (oldest < ckpt) {
        const struct vsr_slot *s = vsr_slot_cget(v, oldest);
        if (s != NULL && s->durable)
            break;
        oldest++;
    }
    /* A journal rebuilt above an installed snapshot starts after it. */
    if (v->floor >= oldest && vsr_slot_cget(v, v->floor) == NULL)
        oldest = v->floor + 1;
    if (h->from_op < oldest) {
        send_done(v, to, VS_CMD_RANGE_EVICTED, h->nonce, oldest);
        return VSR_ACCEPTED;
    }
    uint64_t top = h->to_op < v->head ? h->to_op : v->head;
    for (uint64_t x = top; x >= h->from_op && x > 0; x--) {
        struct vsr_slot *s = vsr_slot_get(v, x);
        if (s == NULL || !s->durable)
            continue;
        if (s->msg != NULL && s->msg->size == s->h.f.size) {
            struct vsr_msg *m = vsr_msg_new(&s->msg->hdr, s->msg->size);
            m->hdr.f.command = VS_CMD_REPAIR_PREPARE;
            vsr_queue_msg(v, VSR_ACT_SEND, to, 0, m);
            vsr_msg_unref(m);
        } else {
            struct vsr_act a;
            memset(&a, 0, sizeof(a));
            a.kind = VSR_ACT_SEND_PREPARE;
            a.replica = to;
            a.op = x;
            a.checksum = s->h.f.checksum;
            vsr_queue_push(v, &a);
        }
        v->stats.repair_served++;
    }
    send_done(v, to, VS_CMD_REPAIR_DONE, h->nonce, h->to_op);
    return VSR_ACCEPTED;
}

/* ---------------------------------------------------------------- */
/* Taking an answer                                                 */
/* ---------------------------------------------------------------- */

enum vsr_verdict
vsr_on_repair_prepare(struct vs_vsr *v, const struct vs_hdr_prepare *p,
                      const uint8_t *frame, int canonical)
{
    uint64_t x = p->op;
    if (v->status == VSR_STATUS_RECOVERING)
        return VSR_DROP_STATUS; /* it knows no canonical header yet */
    if (x <= v->commit_min)
        return VSR_DROP_LATE;
    if (x > vsr_window_top(v))
        return VSR_DROP_JOURNAL_FULL;
    if (p->f.size - VS_HEADER_SIZE > v->body_max)
        return VSR_DROP_BODY_MAX;
    struct vs_u128 want;
    if (expected(v, x, &want) ? !vs_u128_eq(want, p->f.checksum) : !canonical)
        return VSR_DROP_UNWANTED;
    struct vsr_slot *s = vsr_slot_get(v, x);
    if (s != NULL && (s->durable || s->appending || s->msg != NULL)) {
        /* The primary resends from its journal what we may not have
         * acknowledged yet. */
        if (s->durable && vsr_may_ack(v))
            vsr_send_prepare_ok(v, s);
        return VSR_DROP_DUPLICATE;
    }
    const struct vsr_slot *below = vsr_slot_cget(v, x - 1);
    if (below != NULL && !vs_u128_eq(below->h.f.checksum, p->parent)) {
        v->stats.divergences++;
        return VSR_DROP_CHAIN;
    }
    if (x - 1 == v->commit_min && !v->anchor_unknown &&
        !vs_u128_eq(v->commit_min_checksum, p->parent))
        return VSR_DROP_CHAIN;
    struct vsr_msg *m = vsr_msg_new(frame, p->f.size);
    m->hdr.f.command = VS_CMD_PREPARE; /* stored as a Prepare */
    if (s == NULL) {
        s = vsr_slot_of(v, x);
        VS_ASSERT(!s->present || s->h.op <= v->commit_min);
        vsr_msg_unref(s->msg);
        memset(s, 0, sizeof(*s));
        s->h = *(const struct vs_hdr_prepare *)&m->hdr;
        s->present = 1;
    }
    s->msg = m;
    if (x > v->head)
        vsr_set_head(v, x); /* head op and checksum together */
    v->stats.repairs++;
    vsr_journal_pump(v);
    vsr_commit_walk(v);
    return VSR_ACCEPTED;
}

enum vsr_verdict
vsr_on_repair_done(struct vs_vsr *v, const struct vs_hdr_repair_done *h)
{
    if (!v->repair_active || h->f.replica != v->repair_peer ||
        !vs_u128_eq(h->nonce, v->repair_nonce))
        return VSR_DROP_NONCE;
    v->repair_active = 0;
    if (h->f.command == VS_CMD_RANGE_EVICTED) {
        v->stats.range_evicted++;
        v->repair_rr++; /* ask another peer next */
        uint8_t r = h->f.replica;
        if (v->evicted_op[r] != h->op) {
            v->evicted_op[r] = h->op;
            v->transfer = 1;
            v->transfer_op = h->op;
            struct vsr_act a;
            memset(&a, 0, sizeof(a));
            a.kind = VSR_ACT_STATE_TRANSFER;
            a.replica = r;
            a.op = h->op;
            vsr_queue_push(v, &a);
        }
        return VSR_ACCEPTED;
    }
    if (v->stats.repairs == v->repair_mark) {
        /* Nothing usable from that peer: try another, a little later. */
        v->repair_rr++;
        v->repair_idle = v->now + 1 + v->to.repair / 8;
    }
    vsr_repair_kick(v);
    return VSR_ACCEPTED;
}
