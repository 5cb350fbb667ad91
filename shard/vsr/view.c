/*
 * shard/vsr/view.c - the view change, StartView and restart probes.
 *
 * Role: the part of the engine (engine.h "View change" and "Restart")
 * that moves a replica between views: backup timeouts, StartViewChange,
 * DoViewChange (built once per view: R2), the candidate's merge of a
 * quorum of DVCs (canonical by log_view then op, nack-quorum truncation,
 * faulty ops never nacked, a DVC of an older log_view a nack above the
 * lowest op a canonical DVC claims, an older log_view's header deciding
 * an op the newest log_view's DVCs hold only faulty, wait when
 * undecidable), StartView
 * (broadcast by a new primary, targeted as a probe answer), and
 * RequestStartView.
 *
 * Invariants: view and log_view only rise; log_view changes only when a
 * candidate starts its view or a replica installs a StartView (R7); a
 * truncation never reaches an applied op (a StartView or merge that
 * would is refused as divergent, R10); every message claiming a view is
 * sent through vsr_send (withheld until durable, R1).
 *
 * Callers: engine.c only (one thread; no I/O).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/assert.h"
#include "common/checksum.h"
#include "shard/vsr/engine.h"
#include "shard/vsr/internal.h"

static unsigned
bits(uint32_t x)
{
    return (unsigned)__builtin_popcount(x);
}

static uint32_t
bit(unsigned r)
{
    return UINT32_C(1) << r;
}

static int
u128_bit(struct vs_u128 b, unsigned i)
{
    return i < 64 ? (int)((b.lo >> i) & 1) : (int)((b.hi >> (i - 64)) & 1);
}

static void
u128_set(struct vs_u128 *b, unsigned i)
{
    if (i < 64)
        b->lo |= UINT64_C(1) << i;
    else
        b->hi |= UINT64_C(1) << (i - 64);
}

static int
candidate_here(const struct vs_vsr *v)
{
    return vsr_primary_index(v->view, v->n) == v->replica;
}

/* ---------------------------------------------------------------- */
/* Suffixes (DVC and SV bodies)                                     */
/* ---------------------------------------------------------------- */

/* Headers of a suffix whose top is `top`: at most VSR_DVC_HEADERS_MAX,
 * never below op 1. */
int
vsr_suffix_count(const struct vs_vsr *v, uint64_t top)
{
    (void)v;
    return (int)(top < VSR_DVC_HEADERS_MAX ? top : VSR_DVC_HEADERS_MAX);
}

/* Checks a DVC/SV body: header i is op top - i, each non-blank header a
 * valid prepare of this group, adjacent non-blank headers chained. With
 * `blanks` 0 no blank is allowed. */
static int
suffix_valid(const struct vs_vsr *v, uint64_t top, const uint8_t *body,
             size_t count, int blanks)
{
    if (count > top)
        return 0;
    if (top > 0 && count == 0)
        return 0;
    const struct vs_hdr_prepare *above = NULL;
    for (size_t i = 0; i < count; i++) {
        struct vs_hdr_prepare h;
        memcpy(&h, body + i * VS_HEADER_SIZE, sizeof(h));
        if (vsr_blank(&h)) {
            if (!blanks)
                return 0;
            above = NULL;
            continue;
        }
        if (!vsr_header_valid(v, &h) || h.op != top - i)
            return 0;
        if (above != NULL && !vs_u128_eq(above->parent, h.f.checksum))
            return 0;
        above = (const struct vs_hdr_prepare *)(body + i * VS_HEADER_SIZE);
    }
    return 1;
}

static const struct vs_hdr_prepare *
suffix_at(const struct vsr_msg *m, uint64_t top, uint64_t op)
{
    if (op > top)
        return NULL;
    uint64_t i = top - op;
    if (i >= (m->hdr.f.size - VS_HEADER_SIZE) / VS_HEADER_SIZE)
        return NULL;
    const struct vs_hdr_prepare *h =
        (const struct vs_hdr_prepare *)(m->body + i * VS_HEADER_SIZE);
    return vsr_blank(h) ? NULL : h;
}

/* ---------------------------------------------------------------- */
/* Entering a view change                                           */
/* ---------------------------------------------------------------- */

static void
vc_reset(struct vs_vsr *v)
{
    v->svc_from = 0;
    v->dvc_from = 0;
    for (unsigned i = 0; i < VS_REPLICAS_MAX; i++) {
        vsr_msg_unref(v->dvcs[i]);
        v->dvcs[i] = NULL;
    }
    v->merged = 0;
    v->merge_commit = 0;
}

static void
send_svc(struct vs_vsr *v)
{
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_start_view_change *h =
        (struct vs_hdr_start_view_change *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_START_VIEW_CHANGE, VS_HEADER_SIZE);
    h->group = v->group;
    vs_frame_seal(&m->hdr);
    vsr_broadcast(v, m);
    vsr_msg_unref(m);
    v->stats.svc_sent++;
}

/* Our DVC for the current view, built once (R2). */
static struct vsr_msg *
dvc_build(struct vs_vsr *v)
{
    if (v->dvc != NULL && v->dvc_view == v->view)
        return v->dvc;
    vsr_msg_unref(v->dvc);
    uint64_t top = v->head;
    if (v->faulty_op > top)
        top = v->faulty_op;
    int count = vsr_suffix_count(v, top);
    uint32_t size = VS_HEADER_SIZE + (uint32_t)count * VS_HEADER_SIZE;
    struct vsr_msg *m = vsr_msg_alloc(size);
    struct vs_hdr_do_view_change *d = (struct vs_hdr_do_view_change *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_DO_VIEW_CHANGE, size);
    d->op = top;
    d->commit = v->commit_max < top ? v->commit_max : top;
    d->group = v->group;
    d->log_view = v->log_view;
    int faulty_in = 0;
    for (int i = 0; i < count; i++) {
        uint64_t x = top - (uint64_t)i;
        const struct vsr_slot *s = vsr_slot_cget(v, x);
        if (s != NULL)
            memcpy(m->body + (size_t)i * VS_HEADER_SIZE, &s->h, VS_HEADER_SIZE);
        if (s != NULL && s->durable)
            u128_set(&d->present_bitset, (unsigned)i);
        else if (x <= v->nonack_top)
            faulty_in = 1; /* present but faulty: never nacked */
        else if (x > v->commit_min && x > v->nack_floor && !v->xfer)
            /* A transferring replica claims no nack (the install cuts
             * its journal, so what it lacks says nothing), nor one for an
             * op an install cut (it may have acknowledged it). */
            u128_set(&d->nack_bitset, (unsigned)i);
    }
    if (faulty_in)
        v->stats.faulty_not_nacked++;
    d->f.checksum_body = vs_body_checksum(m->body, size - VS_HEADER_SIZE);
    vs_frame_seal(&m->hdr);
    v->dvc = m;
    v->dvc_view = v->view;
    return m;
}

static void merge_try(struct vs_vsr *v);

static void
dvc_maybe_send(struct vs_vsr *v, int resend)
{
    if (v->status != VSR_STATUS_VIEW_CHANGE || v->rebuilding)
        return;
    unsigned need = vsr_quorum_view_change(v->n) - 1;
    if (bits(v->svc_from & ~bit(v->replica)) < need)
        return;
    int fresh = v->dvc == NULL || v->dvc_view != v->view;
    if (!fresh && !resend)
        return;
    struct vsr_msg *m = dvc_build(v);
    if (candidate_here(v)) {
        /* A replica in state transfer never leads: the others' status
         * timeout moves the election past it. */
        if (v->xfer)
            return;
        if (!(v->dvc_from & bit(v->replica))) {
            v->dvcs[v->replica] = vsr_msg_ref(m);
            v->dvc_from |= bit(v->replica);
            merge_try(v);
        }
        return;
    }
    vsr_send(v, (uint8_t)vsr_primary_index(v->view, v->n), m);
    v->stats.dvc_sent++;
}

void
vsr_view_change_start(struct vs_vsr *v, uint32_t view)
{
    VS_ASSERT(view > v->view ||
              (view == v->view && v->status != VSR_STATUS_VIEW_CHANGE));
    if (v->rebuilding || view < v->vote_floor)
        return;
    /* ops a backup took above a gap and never journaled leave the log
     * before our DVC is built (repair.c vsr_gap_drop) */
    vsr_gap_drop(v);
    v->status = VSR_STATUS_VIEW_CHANGE;
    v->view = view;
    vc_reset(v);
    v->svc_from = bit(v->replica);
    unsigned k = v->vc_attempts < 4 ? v->vc_attempts : 4;
    v->vc_deadline =
        v->now + vsr_jitter(v, (uint64_t)v->to.view_change_status << k);
    v->vc_msg_deadline = v->now + v->to.view_change_message;
    v->primary_silence = 0;
    v->stats.view_changes++;
    vsr_superblock_maybe_write(v);
    send_svc(v);
    dvc_maybe_send(v, 0);
}

/* A verified frame of a newer view: a Normal replica that missed the
 * StartView asks that view's primary for it (rate limited). */
void
vsr_observe_view(struct vs_vsr *v, uint32_t view, uint8_t from)
{
    if (view > v->observed_view)
        v->observed_view = view;
    /* from may be this replica: a (repaired) prepare keeps the replica
     * byte of the primary that built it, and that may have been us */
    if (v->status == VSR_STATUS_RECOVERING || from >= v->n ||
        from == v->replica || from != vsr_primary_index(view, v->n) ||
        v->now < v->rsv_deadline || view < v->view ||
        (view == v->view && v->status != VSR_STATUS_VIEW_CHANGE))
        return;
    v->rsv_deadline = v->now + v->to.rsv;
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_request_start_view *h =
        (struct vs_hdr_request_start_view *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_REQUEST_START_VIEW, VS_HEADER_SIZE);
    h->group = v->group;
    vs_frame_seal(&m->hdr);
    vsr_send(v, from, m);
    vsr_msg_unref(m);
}

static void
send_probe(struct vs_vsr *v)
{
    struct vsr_msg *m = vsr_msg_alloc(VS_HEADER_SIZE);
    struct vs_hdr_request_start_view *h =
        (struct vs_hdr_request_start_view *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_REQUEST_START_VIEW, VS_HEADER_SIZE);
    h->f.view = v->durable.view;
    h->group = v->group;
    h->incarnation = v->incarnation;
    vs_frame_seal(&m->hdr);
    vsr_broadcast(v, m);
    vsr_msg_unref(m);
    v->stats.probes++;
}

void
vsr_view_tick(struct vs_vsr *v)
{
    switch (v->status) {
    case VSR_STATUS_NORMAL:
        if (vsr_primary_here(v))
            return;
        if (++v->primary_silence < v->silence_limit)
            return;
        v->primary_silence = 0;
        v->silence_limit = vsr_silence_limit(v);
        if (v->rebuilding) {
            send_probe(v); /* it never elects: ask for the view */
            return;
        }
        v->vc_attempts = 0;
        vsr_view_change_start(v, v->view + 1);
        return;
    case VSR_STATUS_VIEW_CHANGE:
        if (v->now >= v->vc_deadline) {
            if (v->vc_attempts < 255)
                v->vc_attempts++;
            vsr_view_change_start(v, v->view + 1);
            return;
        }
        if (v->now >= v->vc_msg_deadline) {
            v->vc_msg_deadline = v->now + v->to.view_change_message;
            send_svc(v);
            if (!candidate_here(v))
                dvc_maybe_send(v, 1);
        }
        return;
    case VSR_STATUS_RECOVERING:
        if (v->now < v->probe_deadline)
            return;
        v->probe_deadline = v->now + v->to.rsv;
        if (v->probes >= v->to.probe_attempts && !v->rebuilt) {
            /* The whole cluster restarted: elect on the recovered logs,
             * from the durable view (a restarted primary-by-index of it
             * never acts as that view's primary again). */
            v->stats.probe_elections++;
            v->vc_attempts = 0;
            vsr_view_change_start(v, v->view + 1);
            return;
        }
        send_probe(v);
        v->probes++;
        return;
    }
}

/* ---------------------------------------------------------------- */
/* StartViewChange                                                  */
/* ---------------------------------------------------------------- */

enum vsr_verdict
vsr_on_svc(struct vs_vsr *v, const struct vs_hdr_start_view_change *h)
{
    if (h->f.view > v->observed_view)
        v->observed_view = h->f.view;
    if (v->status == VSR_STATUS_RECOVERING)
        return VSR_DROP_STATUS;
    if (v->rebuilding || h->f.view < v->vote_floor)
        return VSR_DROP_REBUILDING;
    if (h->f.view < v->view)
        return VSR_DROP_VIEW_OLD;
    if (h->f.view > v->view) {
        v->vc_attempts = 0;
        vsr_view_change_start(v, h->f.view);
    } else if (v->status != VSR_STATUS_VIEW_CHANGE) {
        if (vsr_primary_here(v) && v->log_view == v->view) {
            /* The sender missed our StartView. */
            struct vs_u128 zero = {0, 0};
            struct vsr_msg *m = vsr_start_view_build(v, zero);
            vsr_send(v, h->f.replica, m);
            vsr_msg_unref(m);
        }
        return VSR_DROP_STATUS; /* already Normal in that view */
    }
    uint32_t b = bit(h->f.replica);
    if (v->svc_from & b)
        return VSR_DROP_DUPLICATE;
    v->svc_from |= b;
    dvc_maybe_send(v, 0);
    return VSR_ACCEPTED;
}

/* ---------------------------------------------------------------- */
/* DoViewChange and the merge                                       */
/* ---------------------------------------------------------------- */

static const struct vs_hdr_do_view_change *
dvc_hdr(const struct vsr_msg *m)
{
    return (const struct vs_hdr_do_view_change *)&m->hdr;
}

/* 1 when DVC d proves its sender never prepared `canon` (or anything,
 * if canon is NULL) at op x; 0 when it holds it, is faulty there, or
 * does not say. */
static int
dvc_nacks(const struct vsr_msg *d, uint64_t x,
          const struct vs_hdr_prepare *canon)
{
    const struct vs_hdr_do_view_change *h = dvc_hdr(d);
    if (x > h->op)
        return 1;
    uint64_t i = h->op - x;
    if (i >= (d->hdr.f.size - VS_HEADER_SIZE) / VS_HEADER_SIZE)
        return 0;
    if (u128_bit(h->nack_bitset, (unsigned)i))
        return 1;
    if (!u128_bit(h->present_bitset, (unsigned)i))
        return 0; /* faulty: never a nack */
    const struct vs_hdr_prepare *mine = suffix_at(d, h->op, x);
    return canon != NULL && mine != NULL &&
           !vs_u128_eq(mine->f.checksum, canon->f.checksum);
}

static int
dvc_holds(const struct vsr_msg *d, uint64_t x,
          const struct vs_hdr_prepare *canon)
{
    const struct vs_hdr_do_view_change *h = dvc_hdr(d);
    if (x > h->op || h->op - x >= VSR_DVC_HEADERS_MAX)
        return 0;
    const struct vs_hdr_prepare *mine = suffix_at(d, h->op, x);
    return mine != NULL && u128_bit(h->present_bitset, (unsigned)(h->op - x)) &&
           vs_u128_eq(mine->f.checksum, canon->f.checksum);
}

/* Installs header h as known at its op (no body). */
static void
header_install(struct vs_vsr *v, const struct vs_hdr_prepare *h)
{
    struct vsr_slot *s = vsr_slot_of(v, h->op);
    if (s->present && s->h.op == h->op)
        return;
    VS_ASSERT(!s->present || s->h.op <= v->commit_min);
    vsr_msg_unref(s->msg);
    memset(s, 0, sizeof(*s));
    s->h = *h;
    s->present = 1;
}

/* Makes our log the canonical headers[lo..top] (headers[x - lo]; NULL =
 * unknown, keep ours): cuts our divergent uncommitted suffix first.
 * Returns 0, or -1 if it would cut an applied op (divergence). */
static int
log_adopt(struct vs_vsr *v, const struct vs_hdr_prepare *const *headers,
          uint64_t lo, uint64_t top, uint64_t commit)
{
    uint64_t cut = 0;
    uint64_t upto = v->head < top ? v->head : top;
    /* Every canonical header checks our op there, and, where the
     * canonical op below it is unknown (a blank, or below the suffix),
     * our op below against its parent: a mismatch there means our ops of
     * that unknown gap cannot be trusted (each chains to the one above),
     * so the cut starts at the gap's bottom (never below the applied op:
     * an applied op off the chain is a divergence). */
    uint64_t known_below = 0; /* highest op < x with a canonical header */
    for (uint64_t x = lo; x <= top && cut == 0; x++) {
        const struct vs_hdr_prepare *c = headers[x - lo];
        if (c == NULL)
            continue;
        if (x > 1 && (x == lo || headers[x - 1 - lo] == NULL)) {
            const struct vsr_slot *b = vsr_slot_cget(v, x - 1);
            /* the gap's bottom: above the highest known canonical op
             * below it, else above the applied op */
            uint64_t gap =
                known_below != 0 ? known_below + 1 : v->commit_min + 1;
            if (gap <= v->commit_min)
                gap = v->commit_min + 1;
            if (b != NULL && !vs_u128_eq(b->h.f.checksum, c->parent)) {
                cut = x - 1 > v->commit_min ? gap : x - 1;
                break;
            }
            if (b == NULL && v->head >= gap && v->head < x - 1) {
                /* Our log ends inside the gap: nothing above our ops
                 * verifies them against the canonical chain. */
                cut = gap;
                break;
            }
        }
        const struct vsr_slot *s = x <= upto ? vsr_slot_cget(v, x) : NULL;
        if (s != NULL && !vs_u128_eq(s->h.f.checksum, c->f.checksum)) {
            cut = x;
            break;
        }
        known_below = x;
        if (x > upto)
            break; /* the first known canonical op above our log */
    }
    if (cut == 0 && v->head > top)
        cut = top + 1;
    if (cut == 0 && v->head < lo - 1 && v->head > v->commit_max &&
        v->head > v->commit_min) {
        /* No overlap to verify our uncommitted tail against. */
        uint64_t c =
            v->commit_max > v->commit_min ? v->commit_max : v->commit_min;
        cut = c + 1;
    }
    if (cut != 0 && cut <= v->commit_min) {
        v->stats.divergences++;
        return -1;
    }
    if (cut != 0)
        vsr_journal_truncate(v, cut);
    /* Only inside the journal window (a lagging checkpoint leaves the
     * rest for repair once the window moves). */
    uint64_t window = vsr_window_top(v);
    for (uint64_t x = lo; x <= top && x <= window; x++)
        if (headers[x - lo] != NULL && x > v->commit_min)
            header_install(v, headers[x - lo]);
    if (vsr_slot_cget(v, top) != NULL || top == v->commit_min || top == 0) {
        vsr_set_head(v, top);
    } else {
        /* The top lies beyond the window: the head is the highest header
         * installed (a prepare at head + 1 must never find its slot taken
         * by a known header). */
        uint64_t h = top < window ? top : window;
        while (h > v->head && vsr_slot_cget(v, h) == NULL)
            h--;
        if (h > v->head)
            vsr_set_head(v, h);
    }
    if (commit > v->commit_max)
        v->commit_max = commit;
    /* A faulty op the view's log does not reach was never committed:
     * nothing to repair (the mark goes with the log_view write). The log
     * reaches `top`, which a lagging journal window may leave above our
     * head: lowering the mark to the head would let a later DVC claim a
     * shorter log of this log_view (and nack a cut op that may have
     * been acknowledged). */
    vsr_faulty_settle(v, top);
    return 0;
}

/* The canonical op at x where no DVC of the newest log_view L holds a
 * header (their copies faulty or beyond their suffix), decided from the
 * DVCs of older log_views. `nacker` marks the DVCs already counted as
 * nacks of x; `below` is the canonical header at x - 1 (NULL: unknown).
 * Returns 1 with *pick the one header that may be the committed op at x,
 * 0 when no op at x can have committed (x is cut like a nack quorum's),
 * -1 when it cannot decide (the merge waits).
 *
 * Why it is safe. Let H be log L's op at x (unknown) and suppose H
 * committed: in some view w, q_repl replicas sent PrepareOk of view w for
 * it. Every log an acker holds from then on (its journal as each later
 * prepare, StartView or merge leaves it) holds the op committed in w at
 * x: the view change's invariant, which this merge keeps. So an acker's
 * DVC holds H at x, or is faulty there (a damaged slot, which is never
 * nacked); it never nacks x (nor ends below x: its reach mark) and never
 * holds another header there. The DVCs that nack x and those of an
 * older log_view holding a durable header other than H are therefore
 * non-ackers; if they number nq = n - q_repl + 1, at most q_repl - 1
 * replicas acknowledged H: H did not commit. The older DVCs' headers at
 * x split the cases:
 *  - H is none of them: every holder is a non-acker. If nackers and
 *    holders together are fewer than nq, H may be an op no DVC shows:
 *    wait.
 *  - H is header h: the holders of other headers are non-ackers. If
 *    they and the nackers reach nq, h did not commit either. h is also
 *    ruled out when it does not chain to `below` (log L is one hash
 *    chain, so H's parent is log L's op at x - 1).
 * No candidate left: nothing at x committed (nor above, commits are in
 * order), so x is cut. One left, h, chaining to `below`: either H = h, so
 * keeping h keeps what may have committed, or H (never committed) is
 * replaced by h; then log L up to x - 1 followed by h is, by the hash
 * chain, exactly the log h's own primary prepared h on, so keeping h
 * adds no request twice (that primary's pipeline deduplicated it). More
 * than one candidate, or an unknown `below`: wait; a possibly committed
 * op is never cut. */
static int
older_pick(const struct vs_vsr *v, uint32_t L, uint64_t x, uint32_t nacker,
           const struct vs_hdr_prepare *below,
           const struct vs_hdr_prepare **pick)
{
    const struct vs_hdr_prepare *held[VS_REPLICAS_MAX];
    unsigned nacks = 0, holders = 0;
    for (unsigned r = 0; r < v->n; r++) {
        const struct vsr_msg *d = v->dvcs[r];
        held[r] = NULL;
        if (d == NULL)
            continue;
        if (nacker & bit(r)) {
            nacks++;
            continue;
        }
        const struct vs_hdr_do_view_change *h = dvc_hdr(d);
        if (h->log_view >= L || x > h->op || h->op - x >= VSR_DVC_HEADERS_MAX ||
            !u128_bit(h->present_bitset, (unsigned)(h->op - x)))
            continue;
        held[r] = suffix_at(d, h->op, x);
        if (held[r] != NULL)
            holders++;
    }
    unsigned nq = vsr_quorum_nack(v->n);
    if (nacks + holders < nq)
        return -1; /* an op no DVC shows may have committed */
    const struct vs_hdr_prepare *cand = NULL;
    for (unsigned r = 0; r < v->n; r++) {
        if (held[r] == NULL)
            continue;
        unsigned same = 0;
        for (unsigned o = 0; o < v->n; o++)
            if (held[o] != NULL &&
                vs_u128_eq(held[o]->f.checksum, held[r]->f.checksum))
                same++;
        if (nacks + holders - same >= nq)
            continue; /* this header did not commit */
        if (below == NULL)
            return -1; /* it may have: its chain cannot be checked */
        if (!vs_u128_eq(held[r]->parent, below->f.checksum))
            continue; /* not log L's op */
        if (cand != NULL && !vs_u128_eq(cand->f.checksum, held[r]->f.checksum))
            return -1;
        cand = held[r];
    }
    *pick = cand;
    return cand != NULL ? 1 : 0;
}

/* The DVCs that prove they never acknowledged log L's op x (header c;
 * NULL: unknown): their own nack bit, a different header, a log ending
 * below x, or, above canon_floor, any DVC of an older log_view (see
 * merge_try). */
static uint32_t
merge_nackers(const struct vs_vsr *v, uint32_t L, uint64_t canon_floor,
              uint64_t x, const struct vs_hdr_prepare *c)
{
    uint32_t m = 0;
    for (unsigned r = 0; r < v->n; r++) {
        const struct vsr_msg *d = v->dvcs[r];
        if (d != NULL && ((x > canon_floor && dvc_hdr(d)->log_view < L) ||
                          dvc_nacks(d, x, c)))
            m |= bit(r);
    }
    return m;
}

/* older_pick at op x; a picked header becomes canon[x - lo]. */
static int
older_fill(struct vs_vsr *v, uint32_t L, uint32_t nacker,
           const struct vs_hdr_prepare **canon, uint64_t lo, uint64_t x)
{
    const struct vs_hdr_prepare *pick = NULL;
    int k =
        older_pick(v, L, x, nacker, x > lo ? canon[x - lo - 1] : NULL, &pick);
    if (k == 1) {
        canon[x - lo] = pick;
        v->stats.older_adopted++;
    }
    return k;
}

/* The candidate's merge (engine.h "View change" step 3): canonical
 * headers from the DVCs of the highest log_view L, ops truncated from
 * the top while a nack quorum proves them never committed; an op where
 * every DVC of log_view L is faulty or silent is decided by the older
 * log_views' headers when they prove which op may have committed there
 * (older_pick, with the safety argument); anything else undecided
 * waits for more DVCs or the next view. */
static void
merge_try(struct vs_vsr *v)
{
    if (v->merged || v->xfer || !candidate_here(v) ||
        v->status != VSR_STATUS_VIEW_CHANGE ||
        bits(v->dvc_from) < vsr_quorum_view_change(v->n))
        return;
    uint32_t L = 0;
    for (unsigned r = 0; r < v->n; r++)
        if (v->dvcs[r] != NULL && dvc_hdr(v->dvcs[r])->log_view > L)
            L = dvc_hdr(v->dvcs[r])->log_view;
    uint64_t top = 0, commit = 0;
    for (unsigned r = 0; r < v->n; r++) {
        if (v->dvcs[r] == NULL)
            continue;
        const struct vs_hdr_do_view_change *d = dvc_hdr(v->dvcs[r]);
        if (d->commit > commit)
            commit = d->commit;
        if (d->log_view == L && d->op > top)
            top = d->op;
    }
    uint64_t lo = top > VSR_DVC_HEADERS_MAX ? top - VSR_DVC_HEADERS_MAX + 1 : 1;
    size_t span = top >= lo ? (size_t)(top - lo + 1) : 0;
    const struct vs_hdr_prepare *canon[VSR_DVC_HEADERS_MAX];
    for (size_t i = 0; i < span; i++) {
        uint64_t x = lo + i;
        canon[i] = NULL;
        for (unsigned r = 0; r < v->n && canon[i] == NULL; r++) {
            const struct vsr_msg *d = v->dvcs[r];
            if (d != NULL && dvc_hdr(d)->log_view == L)
                canon[i] = suffix_at(d, dvc_hdr(d)->op, x);
        }
    }
    if (span > 0 && canon[span - 1] != NULL && canon[span - 1]->commit > commit)
        commit = canon[span - 1]->commit;
    /* The lowest op a DVC of log_view L claims. A replica of log_view L
     * claims at least the top of the log it adopted (or started) in view
     * L: its head, or the reach mark persisted with the log_view; only a
     * nack quorum of an earlier merge cuts below that. So an op x above
     * it either lies above the log view L started with -- every op there
     * was prepared in view L, and could only commit by PrepareOks of
     * view L, which a replica whose log_view is below L never sent -- or
     * an earlier nack quorum already proved log L's op x uncommitted. */
    uint64_t canon_floor = UINT64_MAX;
    for (unsigned r = 0; r < v->n; r++)
        if (v->dvcs[r] != NULL && dvc_hdr(v->dvcs[r])->log_view == L &&
            dvc_hdr(v->dvcs[r])->op < canon_floor)
            canon_floor = dvc_hdr(v->dvcs[r])->op;
    /* Truncate from the top while a nack quorum proves an op was never
     * prepared (so never committed). Above canon_floor every DVC of a
     * lower log_view counts as a nack, whatever it holds there (an op of
     * an older view, or a faulty slot: it acknowledged nothing of view
     * L); at or below it such a DVC nacks only by its own bits or by a
     * header that differs from the known canonical one. */
    unsigned nq = vsr_quorum_nack(v->n);
    uint64_t new_top = top;
    while (new_top > commit && new_top >= lo) {
        const struct vs_hdr_prepare *c = canon[new_top - lo];
        uint32_t nacker = merge_nackers(v, L, canon_floor, new_top, c);
        if (bits(nacker) < nq && c == NULL) {
            /* No DVC of log_view L holds a header here: the older ones
             * may decide (older_pick). */
            int k = older_fill(v, L, nacker, canon, lo, new_top);
            if (k == 1)
                break;
            if (k == 0)
                nacker = v->dvc_from; /* nothing at new_top committed */
        }
        if (bits(nacker) < nq)
            break;
        v->stats.nack_truncations++;
        new_top--;
    }
    /* A new head at or below the merged commit is a committed op, so log
     * L's op there: where no DVC of log_view L holds it, the older ones
     * may name it (older_pick; its other answer, that nothing there
     * committed, contradicts the commit: the merge waits). */
    if (new_top <= commit && new_top >= lo && new_top > v->commit_min &&
        canon[new_top - lo] == NULL)
        older_fill(v, L, merge_nackers(v, L, canon_floor, new_top, NULL), canon,
                   lo, new_top);
    /* Every kept uncommitted op needs a known header, chained. */
    int undecided = commit > new_top;
    /* The new head's header must be known (the chain continues from
     * it): a canonical one, or the applied op. */
    if (new_top > 0 && new_top != v->commit_min &&
        (new_top < lo || canon[new_top - lo] == NULL))
        undecided = 1;
    for (uint64_t x = commit + 1; x <= new_top && !undecided; x++) {
        if (x < lo || canon[x - lo] == NULL)
            undecided = 1;
        else if (x > lo && canon[x - lo - 1] != NULL &&
                 !vs_u128_eq(canon[x - lo]->parent,
                             canon[x - lo - 1]->f.checksum))
            undecided = 1;
    }
    if (undecided) {
        v->stats.merge_waits++;
        if (bits(v->dvc_from) == v->n)
            v->stats.merge_deadlocks++;
        return;
    }
    /* A candidate whose journal window cannot hold the view's log (it
     * lags a checkpoint, and the ops it lacks may be drained on every
     * peer) steps aside: starting the view with its head below the
     * merged top would drop committed ops. The others' status timeout
     * elects the next view; this replica follows its StartView. */
    if (new_top > vsr_window_top(v)) {
        v->stats.merge_step_asides++;
        return;
    }
    size_t keep = new_top >= lo ? (size_t)(new_top - lo + 1) : 0;
    uint64_t base = keep > 0 ? lo : new_top + 1;
    if (keep == 0 && new_top > 0) {
        /* Nothing of the suffix survives: the log ends at new_top, which
         * must be a known op of ours (it is <= commit). */
        base = new_top;
    }
    if (keep > 0) {
        if (log_adopt(v, canon, base, new_top, commit) != 0)
            return;
    } else {
        if (v->head > new_top && new_top + 1 > v->commit_min)
            vsr_journal_truncate(v, new_top + 1);
        if (commit > v->commit_max)
            v->commit_max = commit;
        vsr_faulty_settle(v, new_top);
    }
    /* Where to repair each op from: the DVCs that hold it. */
    for (uint64_t x = lo; x <= new_top && keep > 0; x++) {
        struct vsr_slot *s = vsr_slot_get(v, x);
        if (s == NULL || canon[x - lo] == NULL)
            continue;
        for (unsigned r = 0; r < v->n; r++)
            if (v->dvcs[r] != NULL && dvc_holds(v->dvcs[r], x, canon[x - lo]))
                s->holders |= bit(r);
    }
    v->merged = 1;
    v->merge_commit = commit;
    vsr_journal_pump(v);
    vsr_view_after_durable(v, 0);
    vsr_repair_kick(v);
}

enum vsr_verdict
vsr_on_dvc(struct vs_vsr *v, const struct vs_header *hh, const uint8_t *frame)
{
    const struct vs_hdr_do_view_change *h =
        (const struct vs_hdr_do_view_change *)hh;
    size_t count = (h->f.size - VS_HEADER_SIZE) / VS_HEADER_SIZE;
    if (h->log_view > h->f.view || h->commit > h->op ||
        !suffix_valid(v, h->op, frame + VS_HEADER_SIZE, count, 1))
        return VSR_DROP_SUFFIX;
    if (h->f.view > v->observed_view)
        v->observed_view = h->f.view;
    if (v->status == VSR_STATUS_RECOVERING)
        return VSR_DROP_STATUS;
    if (v->rebuilding || h->f.view < v->vote_floor)
        return VSR_DROP_REBUILDING;
    if (h->f.view < v->view)
        return VSR_DROP_VIEW_OLD;
    if (h->f.view > v->view) {
        v->vc_attempts = 0;
        vsr_view_change_start(v, h->f.view);
        if (v->status != VSR_STATUS_VIEW_CHANGE)
            return VSR_DROP_REBUILDING;
    } else if (v->status != VSR_STATUS_VIEW_CHANGE) {
        if (vsr_primary_here(v)) {
            /* The sender missed our StartView. */
            struct vs_u128 zero = {0, 0};
            struct vsr_msg *m = vsr_start_view_build(v, zero);
            vsr_send(v, h->f.replica, m);
            vsr_msg_unref(m);
        }
        return VSR_DROP_STATUS;
    }
    uint32_t b = bit(h->f.replica);
    if (!(v->svc_from & b)) {
        v->svc_from |= b; /* a DVC implies its sender's SVC */
        dvc_maybe_send(v, 0);
    }
    if (!candidate_here(v))
        return VSR_DROP_NOT_PRIMARY;
    if (v->dvc_from & b)
        return VSR_DROP_DUPLICATE;
    v->dvcs[h->f.replica] = vsr_msg_new(frame, h->f.size);
    v->dvc_from |= b;
    merge_try(v);
    return VSR_ACCEPTED;
}

/* ---------------------------------------------------------------- */
/* Starting the view                                                */
/* ---------------------------------------------------------------- */

struct vsr_msg *
vsr_start_view_build(struct vs_vsr *v, struct vs_u128 inc)
{
    int count = 0;
    int max = vsr_suffix_count(v, v->head);
    while (count < max && vsr_slot_cget(v, v->head - (uint64_t)count) != NULL)
        count++;
    uint32_t size = VS_HEADER_SIZE + (uint32_t)count * VS_HEADER_SIZE;
    struct vsr_msg *m = vsr_msg_alloc(size);
    struct vs_hdr_start_view *h = (struct vs_hdr_start_view *)&m->hdr;
    vsr_frame_init(v, &m->hdr, VS_CMD_START_VIEW, size);
    h->op = v->head;
    h->commit = v->commit_max < v->head ? v->commit_max : v->head;
    h->group = v->group;
    h->incarnation = inc;
    for (int i = 0; i < count; i++)
        memcpy(m->body + (size_t)i * VS_HEADER_SIZE,
               &vsr_slot_cget(v, v->head - (uint64_t)i)->h, VS_HEADER_SIZE);
    h->f.checksum_body = vs_body_checksum(m->body, size - VS_HEADER_SIZE);
    vs_frame_seal(&m->hdr);
    return m;
}

/* The merged candidate starts its view once every op above commit is
 * durable in its journal (called after each durable append). */
void
vsr_view_after_durable(struct vs_vsr *v, uint64_t op)
{
    (void)op;
    if (v->rebuilding && v->status == VSR_STATUS_NORMAL &&
        v->journal_op >= v->rebuild_target) {
        int done = 1;
        for (uint64_t x = v->commit_min + 1; x <= v->rebuild_target && done;
             x++) {
            const struct vsr_slot *s = vsr_slot_cget(v, x);
            if (s == NULL || !s->durable)
                done = 0;
        }
        if (done) {
            v->rebuilding = 0;
            for (uint64_t x = v->commit_max + 1; x <= v->head; x++) {
                const struct vsr_slot *s = vsr_slot_cget(v, x);
                if (s != NULL && s->durable && vsr_may_ack(v))
                    vsr_send_prepare_ok(v, s);
            }
        }
    }
    if (!v->merged || v->status != VSR_STATUS_VIEW_CHANGE || v->xfer)
        return; /* a transferring candidate never starts its view */
    /* Every op above the applied one, committed ones included: once its
     * log_view is durable a restart finds the view's whole log in the
     * journal (a DVC of that log_view never lacks a header of it). */
    uint64_t from = v->commit_min + 1;
    for (uint64_t x = from; x <= v->head; x++) {
        const struct vsr_slot *s = vsr_slot_cget(v, x);
        if (s == NULL || !s->durable)
            return;
    }
    vsr_primary_start_view(v);
}

void
vsr_primary_start_view(struct vs_vsr *v)
{
    v->status = VSR_STATUS_NORMAL;
    v->log_view = v->view;
    vc_reset(v);
    v->vc_attempts = 0;
    v->probes = 0;
    /* The pipeline: every op above commit_max, our own ack counted. */
    for (uint64_t x = v->commit_max + 1; x <= v->head; x++) {
        struct vsr_slot *s = vsr_slot_get(v, x);
        VS_ASSERT(s != NULL && s->durable);
        s->ok = bit(v->replica);
        s->deadline = v->now + v->to.prepare;
        s->attempts = 0;
    }
    v->recovery_barrier = v->commit_max;
    v->heartbeat_deadline = v->now;
    v->stats.views_started++;
    vsr_superblock_maybe_write(v);
    struct vs_u128 zero = {0, 0};
    struct vsr_msg *m = vsr_start_view_build(v, zero);
    vsr_broadcast(v, m);
    vsr_msg_unref(m);
    vsr_pipeline_commit(v);
}

/* ---------------------------------------------------------------- */
/* StartView                                                        */
/* ---------------------------------------------------------------- */

enum vsr_verdict
vsr_on_sv(struct vs_vsr *v, const struct vs_header *hh, const uint8_t *frame)
{
    const struct vs_hdr_start_view *h = (const struct vs_hdr_start_view *)hh;
    size_t count = (h->f.size - VS_HEADER_SIZE) / VS_HEADER_SIZE;
    const uint8_t *body = frame + VS_HEADER_SIZE;
    if (h->commit > h->op || !suffix_valid(v, h->op, body, count, 0) ||
        count < h->op - h->commit)
        return VSR_DROP_SUFFIX;
    if (h->f.replica != vsr_primary_index(h->f.view, v->n))
        return VSR_DROP_NOT_PRIMARY;
    if (v->status == VSR_STATUS_RECOVERING) {
        if (vs_u128_is_zero(h->incarnation) ||
            !vs_u128_eq(h->incarnation, v->incarnation) ||
            h->f.view < v->durable.view)
            return VSR_DROP_INCARNATION;
    }
    if (h->f.view < v->view)
        return VSR_DROP_VIEW_OLD;
    if (h->f.view == v->view && v->status == VSR_STATUS_NORMAL &&
        v->log_view == v->view)
        return vsr_primary_here(v) ? VSR_DROP_NOT_PRIMARY : VSR_DROP_DUPLICATE;
    if (h->f.view == v->view && candidate_here(v) &&
        v->status == VSR_STATUS_VIEW_CHANGE)
        return VSR_DROP_NOT_PRIMARY; /* our own view: only we start it */

    /* Divergence: an applied op the view's log does not contain. */
    for (size_t i = 0; i < count; i++) {
        const struct vs_hdr_prepare *c =
            (const struct vs_hdr_prepare *)(body + i * VS_HEADER_SIZE);
        if (c->op > v->commit_min)
            continue;
        const struct vsr_slot *s = vsr_slot_cget(v, c->op);
        if (s != NULL && !vs_u128_eq(s->h.f.checksum, c->f.checksum))
            return VSR_DROP_DIVERGENT;
    }
    const struct vs_hdr_prepare *canon[VSR_DVC_HEADERS_MAX];
    uint64_t lo = h->op - count + 1;
    for (size_t i = 0; i < count; i++)
        canon[i] = (const struct vs_hdr_prepare *)(body + (count - 1 - i) *
                                                              VS_HEADER_SIZE);
    if (count > 0) {
        if (log_adopt(v, canon, lo, h->op, h->commit) != 0)
            return VSR_DROP_DIVERGENT;
    } else {
        if (v->head > h->op && h->op + 1 > v->commit_min)
            vsr_journal_truncate(v, h->op + 1);
        if (h->commit > v->commit_max)
            v->commit_max = h->commit;
        vsr_faulty_settle(v, h->op);
    }
    for (size_t i = 0; i < count; i++) {
        struct vsr_slot *s = vsr_slot_get(v, canon[i]->op);
        if (s != NULL)
            s->holders |= bit(h->f.replica);
    }
    /* The view's log reaches h->op. Until our journal holds every op of
     * it, a restart would only find the journal's shorter head: the mark,
     * persisted with the new log_view, keeps our next DVC claiming the
     * whole log of this log_view (the ops we lack unknown, never nacked)
     * rather than a shorter one that would hide committed ops. */
    if (h->op > v->faulty_op)
        v->faulty_op = h->op;
    vsr_faulty_settle(v, h->op); /* the log's top, not our head: see
                                    log_adopt */
    int was_recovering = v->status == VSR_STATUS_RECOVERING;
    v->status = VSR_STATUS_NORMAL;
    v->view = h->f.view;
    v->log_view = h->f.view;
    vc_reset(v);
    v->vc_attempts = 0;
    v->probes = 0;
    v->primary_silence = 0;
    v->heartbeat_seen = 0;
    v->silence_limit = vsr_silence_limit(v);
    v->stats.sv_adopted++;
    if (v->rebuilding && was_recovering) {
        v->rebuild_target = h->op;
        v->vote_floor = h->f.view + 2;
    }
    vsr_superblock_maybe_write(v);
    if (was_recovering && h->op > v->commit_min + v->slots_n + 1) {
        /* Adopted, and the gap reaches below anything a peer's journal
         * can still hold (a peer retains at most its checkpoint op and
         * the slots above it): state transfer from this view's primary. */
        struct vsr_act a;
        memset(&a, 0, sizeof(a));
        a.kind = VSR_ACT_STATE_TRANSFER;
        a.replica = h->f.replica;
        a.op = h->op - v->slots_n;
        vsr_queue_push(v, &a);
        v->transfer = 1;
        v->transfer_op = a.op;
        v->stats.transfer_triggers++;
    }
    if (vsr_may_ack(v)) {
        for (uint64_t x = h->commit + 1; x <= v->head; x++) {
            const struct vsr_slot *s = vsr_slot_cget(v, x);
            if (s != NULL && s->durable)
                vsr_send_prepare_ok(v, s);
        }
    }
    vsr_journal_pump(v);
    vsr_view_after_durable(v, 0);
    vsr_commit_walk(v);
    vsr_repair_kick(v);
    return VSR_ACCEPTED;
}

/* ---------------------------------------------------------------- */
/* RequestStartView                                                 */
/* ---------------------------------------------------------------- */

enum vsr_verdict
vsr_on_rsv(struct vs_vsr *v, const struct vs_hdr_request_start_view *h)
{
    if (vsr_is_settled_primary(v) && h->f.view <= v->view) {
        struct vsr_msg *m = vsr_start_view_build(v, h->incarnation);
        vsr_send(v, h->f.replica, m);
        vsr_msg_unref(m);
        v->stats.probe_answers++;
        return VSR_ACCEPTED;
    }
    if (vsr_may_ack(v) && !vs_u128_is_zero(h->incarnation) &&
        h->f.replica == vsr_primary_index(v->view, v->n)) {
        /* Our primary restarted (it may have lost its pipeline and will
         * not act as this view's primary): elect past it. */
        v->vc_attempts = 0;
        vsr_view_change_start(v, v->view + 1);
        return VSR_ACCEPTED;
    }
    return vsr_primary_here(v) ? VSR_DROP_STATUS : VSR_DROP_NOT_PRIMARY;
}
