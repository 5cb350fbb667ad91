/*
 * tests/unit/check_vsr_merge.c - one VSR engine fed hand-built replica
 * frames: the DoViewChange merge rules, the bytes of the frames the
 * engine builds, the Recovering replica's StartView rules, repair
 * serving and exact frame sizes for every command.
 *
 * Covers: canonical log by highest log_view (a longer log of an older
 * log_view loses and is truncated), then by op; an uncommitted op kept
 * when no nack quorum proves it unprepared; nack-quorum truncation; a
 * faulty op is never nacked, the candidate waits, then repairs it from
 * the DVC sender whose present bit is set; n = 4: a DVC of an older
 * log_view counts as a nack above the lowest op a canonical DVC claims
 * (and proves nothing within the canonical log by its log_view alone);
 * an older log_view's header at an op the newest log_view's DVCs hold
 * only faulty: kept when the nacks and the other headers prove no other
 * op there committed (the DVC sets of simulator seeds 3000495, 3100795
 * and 7500764, at the top and at a committed head), waiting below the nack
 * quorum, with two candidate headers or a committed head that no header
 * chains to, cut when the header does not chain; DVC/SV golden byte offsets
 * (iggy-server-ng.md §2); a DVC withheld until the faulty mark is
 * durable; stale StartViews refused while Recovering (incarnation,
 * durable view); RequestPrepares answered high to low (RepairPrepares),
 * RangeEvicted below the checkpoint, empty and oversized ranges dropped;
 * a new primary retransmitting journal-only bodies as Prepares of its
 * view; header-only
 * commands carrying a body, DVC/SV bodies of a wrong size and oversized
 * RepairPrepares dropped with their verdict.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/mem.h"
#include "shard/vsr/engine.h"

#define CLUSTER_LO 0x76737472u
#define CLUSTER_HI 0x1u
#define CHAIN_MAX  32

/* A hand-built log: prepare frames ops 1..n, each 256 + 8 bytes. */
struct chain {
    uint8_t frame[CHAIN_MAX + 1][VS_HEADER_SIZE + 8];
    unsigned n;
};

static const struct vs_hdr_prepare *
hdr(const struct chain *c, unsigned op)
{
    return (const struct vs_hdr_prepare *)c->frame[op];
}

/* Ops 1..n; ops below `fork` copy `base` (the same log), the rest differ
 * by `tag`. */
static void
chain_build(struct chain *c, unsigned n, const struct chain *base,
            unsigned fork, uint64_t tag)
{
    memset(c, 0, sizeof(*c));
    c->n = n;
    struct vs_u128 parent = {0, 0};
    for (unsigned op = 1; op <= n; op++) {
        if (base != NULL && op < fork) {
            memcpy(c->frame[op], base->frame[op], sizeof(c->frame[op]));
        } else {
            struct vs_hdr_prepare *p = (struct vs_hdr_prepare *)c->frame[op];
            p->f.cluster.lo = CLUSTER_LO;
            p->f.cluster.hi = CLUSTER_HI;
            p->f.size = VS_HEADER_SIZE + 8;
            p->f.release = VS_WIRE_FORMAT_VERSION;
            p->f.command = VS_CMD_PREPARE;
            p->f.replica = 0;
            p->client.lo = 100 + op;
            p->parent = parent;
            p->op = op;
            p->timestamp = 1000 + op;
            p->request = 1;
            p->operation = VS_OP_CREATE_STREAM;
            p->group = VS_METADATA_GROUP;
            uint64_t body = tag * 1000 + op;
            memcpy(c->frame[op] + VS_HEADER_SIZE, &body, 8);
            vs_prepare_seal(p, c->frame[op] + VS_HEADER_SIZE, 8);
        }
        parent = hdr(c, op)->f.checksum;
    }
}

/* ---- a test binding: completes storage at once, records sends ---- */

#define SENT_MAX 256
struct bind {
    struct vs_vsr *v;
    uint8_t *sent[SENT_MAX];
    uint8_t to[SENT_MAX];
    unsigned nsent;
    uint64_t truncated;    /* last JOURNAL_TRUNCATE op */
    uint64_t appended[64]; /* JOURNAL_APPEND ops, in order */
    unsigned nappend;
    unsigned transfers;
    int hold_sb; /* leave superblock writes pending */
    struct vs_vsr_persist pending;
    int sb_pending;
    unsigned nsendprep;            /* SEND_PREPARE actions */
    struct vs_vsr_action sendprep; /* the last one (frame not kept) */
};

static void
bind_drain(struct bind *b)
{
    struct vs_vsr_action a;
    while (vsr_pop(b->v, &a)) {
        switch (a.kind) {
        case VSR_ACT_SEND:
            ck_assert_uint_lt(b->nsent, SENT_MAX);
            b->sent[b->nsent] = vs_xmalloc(a.size);
            memcpy(b->sent[b->nsent], a.frame, a.size);
            b->to[b->nsent++] = a.replica;
            break;
        case VSR_ACT_JOURNAL_APPEND:
            ck_assert_uint_lt(b->nappend, 64);
            b->appended[b->nappend++] = a.op;
            ck_assert_int_eq(
                vsr_on_journal_durable(b->v, a.op, a.frame->f.checksum), 0);
            break;
        case VSR_ACT_SUPERBLOCK_WRITE:
            if (b->hold_sb) {
                b->pending = a.persist;
                b->sb_pending = 1;
            } else {
                ck_assert_int_eq(vsr_on_superblock_durable(b->v, &a.persist),
                                 0);
            }
            break;
        case VSR_ACT_JOURNAL_TRUNCATE:
            b->truncated = a.op;
            break;
        case VSR_ACT_STATE_TRANSFER:
            b->transfers++;
            break;
        case VSR_ACT_COMMIT:
            ck_assert_int_eq(vsr_on_commit_applied(b->v, a.op, NULL, 0), 0);
            break;
        case VSR_ACT_SEND_PREPARE:
            b->nsendprep++;
            b->sendprep = a;
            b->sendprep.frame = NULL;
            break;
        default:
            break;
        }
    }
}

static void
bind_clear(struct bind *b)
{
    for (unsigned i = 0; i < b->nsent; i++)
        free(b->sent[i]);
    b->nsent = 0;
}

static void
bind_fini(struct bind *b)
{
    bind_clear(b);
    vsr_destroy(b->v);
}

/* The last frame sent with `command` (and to `to` unless 255). */
static const struct vs_header *
last_sent(const struct bind *b, uint8_t command, uint8_t to)
{
    for (unsigned i = b->nsent; i-- > 0;) {
        const struct vs_header *h = (const struct vs_header *)b->sent[i];
        if (h->f.command == command && (to == 255 || b->to[i] == to))
            return h;
    }
    return NULL;
}

static unsigned
count_sent(const struct bind *b, uint8_t command)
{
    unsigned k = 0;
    for (unsigned i = 0; i < b->nsent; i++)
        k += ((const struct vs_header *)b->sent[i])->f.command == command;
    return k;
}

static void
options(struct vs_vsr_options *o, uint8_t replica)
{
    memset(o, 0, sizeof(*o));
    o->cluster.lo = CLUSTER_LO;
    o->cluster.hi = CLUSTER_HI;
    o->group = VS_METADATA_GROUP;
    o->replica = replica;
    o->replica_count = 3;
    o->journal_slots = 64;
    o->pipeline_max = 4;
    o->body_max = 4096;
    o->seed = 7;
    o->timeouts.normal_heartbeat = 100;
}

/* A restarted replica with log c[1..ops] (durable view/log_view), that
 * probes unanswered and then elects view + 1. */
static void
start_recovered_n(struct bind *b, uint8_t replica, uint8_t n,
                  const struct chain *c, unsigned ops, uint32_t view,
                  uint32_t log_view, uint64_t faulty)
{
    memset(b, 0, sizeof(*b));
    struct vs_vsr_options o;
    options(&o, replica);
    o.replica_count = n;
    struct vs_hdr_prepare hs[CHAIN_MAX];
    for (unsigned op = 1; op <= ops; op++)
        hs[op - 1] = *hdr(c, op);
    o.headers = hs;
    o.header_count = ops;
    o.durable.view = view;
    o.durable.log_view = log_view;
    o.recovering = 1;
    o.incarnation.lo = 0xabc0 + replica;
    o.faulty_op = faulty;
    char why[160];
    ck_assert_msg(vsr_create(&o, &b->v, why, sizeof(why)) == 0, "%s", why);
    bind_drain(b);
}

static void
start_recovered(struct bind *b, uint8_t replica, const struct chain *c,
                unsigned ops, uint32_t view, uint32_t log_view, uint64_t faulty)
{
    start_recovered_n(b, replica, 3, c, ops, view, log_view, faulty);
}

/* Ticks until the replica left Recovering (bounded). */
static void
elect(struct bind *b)
{
    for (int t = 0; t < 1000 && vsr_status(b->v) == VSR_STATUS_RECOVERING;
         t++) {
        vsr_tick(b->v);
        bind_drain(b);
    }
    ck_assert_int_eq(vsr_status(b->v), VSR_STATUS_VIEW_CHANGE);
    ck_assert_uint_eq(vsr_stats(b->v)->probes, 5);
    ck_assert_uint_eq(vsr_stats(b->v)->probe_elections, 1);
}

static void
seal(uint8_t *frame, size_t body_len)
{
    struct vs_header *h = (struct vs_header *)frame;
    h->f.checksum_body = vs_body_checksum(frame + VS_HEADER_SIZE, body_len);
    vs_frame_seal(h);
}

static void
frame_base(uint8_t *frame, uint8_t command, uint8_t sender, uint32_t view,
           uint32_t size)
{
    struct vs_header *h = (struct vs_header *)frame;
    memset(h, 0, VS_HEADER_SIZE);
    h->f.cluster.lo = CLUSTER_LO;
    h->f.cluster.hi = CLUSTER_HI;
    h->f.size = size;
    h->f.view = view;
    h->f.release = VS_WIRE_FORMAT_VERSION;
    h->f.command = command;
    h->f.replica = sender;
}

/* A DVC from `sender` for `view` with c's headers top..top-count+1 and
 * the given bitsets (bit i = op top - i); header i is blank where bit i
 * of `blank` is set. */
static enum vsr_verdict
feed_dvc_blanks(struct bind *b, uint8_t sender, uint32_t view,
                uint32_t log_view, const struct chain *c, uint64_t top,
                unsigned count, uint64_t commit, uint64_t present,
                uint64_t nack, uint64_t blank)
{
    size_t size = VS_HEADER_SIZE + (size_t)count * VS_HEADER_SIZE;
    uint8_t *f = vs_xcalloc(1, size);
    frame_base(f, VS_CMD_DO_VIEW_CHANGE, sender, view, (uint32_t)size);
    struct vs_hdr_do_view_change *d = (struct vs_hdr_do_view_change *)f;
    d->op = top;
    d->commit = commit;
    d->group = VS_METADATA_GROUP;
    d->log_view = log_view;
    d->present_bitset.lo = present;
    d->nack_bitset.lo = nack;
    for (unsigned i = 0; i < count; i++) {
        if (i < 64 && (blank >> i) & 1)
            continue;
        memcpy(f + VS_HEADER_SIZE + (size_t)i * VS_HEADER_SIZE,
               c->frame[top - i], VS_HEADER_SIZE);
    }
    seal(f, size - VS_HEADER_SIZE);
    enum vsr_verdict r = vsr_on_message(b->v, f, size);
    free(f);
    bind_drain(b);
    return r;
}

/* feed_dvc_blanks with header top blank (faulty at the sender) when
 * blank_top is set, every other header present in the body. */
static enum vsr_verdict
feed_dvc(struct bind *b, uint8_t sender, uint32_t view, uint32_t log_view,
         const struct chain *c, uint64_t top, unsigned count, uint64_t commit,
         uint64_t present, uint64_t nack, int blank_top)
{
    return feed_dvc_blanks(b, sender, view, log_view, c, top, count, commit,
                           present, nack, blank_top ? 1 : 0);
}

static enum vsr_verdict
feed_repair(struct bind *b, const struct chain *c, unsigned op)
{
    uint8_t f[VS_HEADER_SIZE + 8];
    memcpy(f, c->frame[op], sizeof(f));
    ((struct vs_header *)f)->f.command = VS_CMD_REPAIR_PREPARE;
    enum vsr_verdict r = vsr_on_message(b->v, f, sizeof(f));
    bind_drain(b);
    return r;
}

/* ---------------------------------------------------------------- */

/* Canonical = highest log_view: the candidate's longer log (log_view 0)
 * loses to a DVC of log_view 1 ending at op 3; its divergent ops 3..5
 * are cut, op 3 is repaired from the sender, the view starts at op 3. */
START_TEST(test_merge_canonical_by_log_view)
{
    struct chain a, bch;
    chain_build(&a, 3, NULL, 0, 1);
    chain_build(&bch, 5, &a, 3, 2); /* shares ops 1, 2 with a */
    struct bind b;
    start_recovered(&b, 2, &bch, 5, 1, 0, 0);
    elect(&b);
    ck_assert_uint_eq(vsr_view(b.v), 2); /* candidate of view 2 */
    ck_assert_int_eq(feed_dvc(&b, 0, 2, 1, &a, 3, 3, 0, 0x7, 0, 0),
                     VSR_ACCEPTED);
    ck_assert_uint_eq(b.truncated, 3);
    ck_assert_uint_eq(vsr_op(b.v), 3);
    const struct vs_hdr_request_prepares *rp =
        (const void *)last_sent(&b, VS_CMD_REQUEST_PREPARES, 0);
    ck_assert_ptr_nonnull(rp);
    ck_assert_uint_eq(rp->from_op, 3);
    ck_assert_uint_eq(rp->to_op, 3);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_VIEW_CHANGE);
    /* a prepare that is not the canonical op 3 is refused */
    ck_assert_int_eq(feed_repair(&b, &bch, 3), VSR_DROP_UNWANTED);
    ck_assert_int_eq(feed_repair(&b, &a, 3), VSR_ACCEPTED);
    ck_assert_uint_eq(b.appended[b.nappend - 1], 3);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(vsr_log_view(b.v), 2);
    const struct vs_hdr_start_view *sv =
        (const void *)last_sent(&b, VS_CMD_START_VIEW, 1);
    ck_assert_ptr_nonnull(sv);
    ck_assert_uint_eq(sv->op, 3);
    ck_assert_uint_eq(sv->f.size, VS_HEADER_SIZE + 3 * VS_HEADER_SIZE);
    const struct vs_hdr_prepare *s0 =
        (const void *)((const uint8_t *)sv + VS_HEADER_SIZE);
    ck_assert(vs_u128_eq(s0->f.checksum, hdr(&a, 3)->f.checksum));
    ck_assert(vsr_is_settled_primary(b.v));
    bind_fini(&b);
}
END_TEST

/* Same log_view: the highest op wins and its uncommitted ops are kept
 * (one nack only: the candidate's, below the nack quorum of 2). */
START_TEST(test_merge_keeps_unnacked_ops)
{
    struct chain c;
    chain_build(&c, 5, NULL, 0, 3);
    struct bind b;
    start_recovered(&b, 2, &c, 3, 1, 0, 0);
    elect(&b);
    ck_assert_int_eq(feed_dvc(&b, 0, 2, 0, &c, 5, 5, 0, 0x1f, 0, 0),
                     VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->nack_truncations, 0);
    ck_assert_uint_eq(vsr_op(b.v), 5);
    const struct vs_hdr_request_prepares *rp =
        (const void *)last_sent(&b, VS_CMD_REQUEST_PREPARES, 0);
    ck_assert_ptr_nonnull(rp);
    ck_assert_uint_eq(rp->from_op, 4);
    ck_assert_uint_eq(rp->to_op, 5);
    ck_assert_int_eq(feed_repair(&b, &c, 5), VSR_ACCEPTED);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_VIEW_CHANGE);
    ck_assert_int_eq(feed_repair(&b, &c, 4), VSR_ACCEPTED);
    ck_assert_uint_eq(b.appended[b.nappend - 2], 4); /* in op order */
    ck_assert_uint_eq(b.appended[b.nappend - 1], 5);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(
        ((const struct vs_hdr_start_view *)last_sent(&b, VS_CMD_START_VIEW, 0))
            ->op,
        5);
    bind_fini(&b);
}
END_TEST

/* The new primary's uncommitted ops 4, 5 are in its journal only (it
 * restarted): their retransmits leave as SEND_PREPARE marked retransmit
 * with this view, so the binding sends Prepares of view 2 that a backup
 * which never learnt their headers takes (a RepairPrepare it would drop
 * as unwanted). */
START_TEST(test_primary_retransmits_journal_bodies_as_prepares)
{
    struct chain c;
    chain_build(&c, 5, NULL, 0, 3);
    struct bind b;
    start_recovered(&b, 2, &c, 5, 1, 0, 0);
    elect(&b);
    ck_assert_int_eq(feed_dvc(&b, 0, 2, 0, &c, 3, 3, 0, 0x7, 0, 0),
                     VSR_ACCEPTED);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
    ck_assert(vsr_is_settled_primary(b.v));
    ck_assert_uint_eq(vsr_op(b.v), 5);
    for (int t = 0; t < 1000 && b.nsendprep == 0; t++) {
        vsr_tick(b.v);
        bind_drain(&b);
    }
    ck_assert_uint_gt(b.nsendprep, 0);
    ck_assert_uint_eq(b.sendprep.retransmit, 1);
    ck_assert_uint_eq(b.sendprep.view, 2);
    ck_assert(b.sendprep.op == 4 || b.sendprep.op == 5);
    ck_assert(
        vs_u128_eq(b.sendprep.checksum, hdr(&c, b.sendprep.op)->f.checksum));
    ck_assert(b.sendprep.replica == 0 || b.sendprep.replica == 1);
    bind_fini(&b);
}
END_TEST

/* Ops 4, 5 known to the sender but never durable there (nack bits) and
 * beyond the candidate's log: a nack quorum (2) truncates them. */
START_TEST(test_merge_nack_quorum_truncates)
{
    struct chain c;
    chain_build(&c, 5, NULL, 0, 4);
    struct bind b;
    start_recovered(&b, 2, &c, 3, 1, 0, 0);
    elect(&b);
    ck_assert_int_eq(feed_dvc(&b, 0, 2, 0, &c, 5, 5, 0, 0x1c, 0x3, 0),
                     VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->nack_truncations, 2);
    ck_assert_uint_eq(vsr_op(b.v), 3);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(
        ((const struct vs_hdr_start_view *)last_sent(&b, VS_CMD_START_VIEW, 0))
            ->op,
        3);
    bind_fini(&b);
}
END_TEST

/* The candidate's op 4 is faulty (cut at boot): its own DVC neither
 * holds nor nacks it, the other DVC stops at op 3 (one nack): no
 * quorum, no header -> wait. A third DVC holding op 4 decides it; op 4
 * is repaired from that sender and the view starts with it. */
START_TEST(test_merge_faulty_waits_then_repairs)
{
    struct chain c;
    chain_build(&c, 4, NULL, 0, 5);
    struct bind b;
    start_recovered(&b, 2, &c, 3, 1, 0, 4);
    struct vs_vsr_info info;
    vsr_info(b.v, &info);
    ck_assert_uint_eq(info.faulty_op, 4);
    elect(&b);
    ck_assert_int_eq(feed_dvc(&b, 0, 2, 0, &c, 3, 3, 0, 0x7, 0, 0),
                     VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->merge_waits, 1);
    ck_assert_uint_eq(vsr_stats(b.v)->faulty_not_nacked, 1);
    ck_assert_uint_eq(vsr_stats(b.v)->nack_truncations, 0);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_VIEW_CHANGE);
    ck_assert_uint_eq(count_sent(&b, VS_CMD_START_VIEW), 0);
    ck_assert_int_eq(feed_dvc(&b, 1, 2, 0, &c, 4, 4, 0, 0xf, 0, 0),
                     VSR_ACCEPTED);
    const struct vs_hdr_request_prepares *rp =
        (const void *)last_sent(&b, VS_CMD_REQUEST_PREPARES, 1);
    ck_assert_ptr_nonnull(rp); /* from the holder, replica 1 */
    ck_assert_uint_eq(rp->from_op, 4);
    ck_assert_int_eq(feed_repair(&b, &c, 4), VSR_ACCEPTED);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
    vsr_info(b.v, &info);
    ck_assert_uint_eq(info.faulty_op, 0);
    ck_assert_uint_eq(info.op, 4);
    struct vs_vsr_persist d;
    vsr_durable(b.v, &d);
    ck_assert_uint_eq(d.faulty_op, 0);
    bind_fini(&b);
}
END_TEST

/* The same faulty op nacked by both others is truncated (2 nacks) and
 * the mark is cleared with it. */
START_TEST(test_merge_faulty_nacked_by_quorum)
{
    struct chain c;
    chain_build(&c, 4, NULL, 0, 6);
    struct bind b;
    start_recovered(&b, 2, &c, 3, 1, 0, 4);
    elect(&b);
    ck_assert_int_eq(feed_dvc(&b, 0, 2, 0, &c, 3, 3, 0, 0x7, 0, 0),
                     VSR_ACCEPTED);
    ck_assert_int_eq(feed_dvc(&b, 1, 2, 0, &c, 3, 3, 0, 0x7, 0, 0),
                     VSR_ACCEPTED);
    /* merged at the first quorum? no: undecided until the third */
    ck_assert_uint_eq(vsr_stats(b.v)->nack_truncations, 1);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(vsr_op(b.v), 3);
    struct vs_vsr_info info;
    vsr_info(b.v, &info);
    ck_assert_uint_eq(info.faulty_op, 0);
    bind_fini(&b);
}
END_TEST

/* n = 4 (nack quorum 3). The newest log_view (1) ends at op 4 on
 * replicas 3 and 0; replica 1 claims op 5 of log_view 1 but is faulty
 * there (no header, no nack). The candidate, replica 2 of log_view 0,
 * holds another op 5 of view 0. Op 5 of log 1 lies above the log view 1
 * started with (a DVC of log_view 1 ends below it), so it could only
 * commit by PrepareOks of view 1, which the candidate never sent: its
 * DVC counts as a nack there. With three DVCs that is 2 nacks (wait);
 * the fourth makes 3: op 5 is cut and the view starts at op 4. */
START_TEST(test_merge_older_log_view_nacks_above_canonical_floor)
{
    struct chain c;
    chain_build(&c, 5, NULL, 0, 7);
    struct bind b;
    start_recovered_n(&b, 2, 4, &c, 5, 1, 0, 0);
    elect(&b);
    ck_assert_uint_eq(vsr_view(b.v), 2); /* candidate: 2 mod 4 */
    ck_assert_int_eq(feed_dvc(&b, 1, 2, 1, &c, 5, 5, 3, 0x1e, 0, 1),
                     VSR_ACCEPTED);
    ck_assert_int_eq(feed_dvc(&b, 3, 2, 1, &c, 4, 4, 3, 0xf, 0, 0),
                     VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->merge_waits, 1);
    ck_assert_uint_eq(vsr_stats(b.v)->nack_truncations, 0);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_VIEW_CHANGE);
    ck_assert_int_eq(feed_dvc(&b, 0, 2, 1, &c, 4, 4, 3, 0xf, 0, 0),
                     VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->merge_deadlocks, 0);
    ck_assert_uint_eq(vsr_stats(b.v)->nack_truncations, 1);
    ck_assert_uint_eq(b.truncated, 5);
    ck_assert_uint_eq(vsr_op(b.v), 4);
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(vsr_log_view(b.v), 2);
    const struct vs_hdr_start_view *sv =
        (const void *)last_sent(&b, VS_CMD_START_VIEW, 1);
    ck_assert_ptr_nonnull(sv);
    ck_assert_uint_eq(sv->op, 4);
    bind_fini(&b);
}
END_TEST

/* The merge waited and changed nothing: no header adopted, no op cut,
 * no StartView. */
static void
assert_waits(const struct bind *b)
{
    ck_assert_uint_ge(vsr_stats(b->v)->merge_waits, 1);
    ck_assert_uint_eq(vsr_stats(b->v)->older_adopted, 0);
    ck_assert_uint_eq(vsr_stats(b->v)->nack_truncations, 0);
    ck_assert_int_eq(vsr_status(b->v), VSR_STATUS_VIEW_CHANGE);
    ck_assert_uint_eq(b->truncated, 0);
    ck_assert_uint_eq(count_sent(b, VS_CMD_START_VIEW), 0);
}

/* The view started at `op` with c's op there on top of its StartView to
 * replica `to`; `adopted` older headers kept, `cut` ops truncated. */
static void
assert_started(const struct bind *b, uint8_t to, const struct chain *c,
               uint64_t op, uint64_t adopted, uint64_t cut)
{
    ck_assert_uint_eq(vsr_stats(b->v)->older_adopted, adopted);
    ck_assert_uint_eq(vsr_stats(b->v)->nack_truncations, cut);
    ck_assert_int_eq(vsr_status(b->v), VSR_STATUS_NORMAL);
    ck_assert_uint_eq(vsr_op(b->v), op);
    const struct vs_hdr_start_view *sv =
        (const void *)last_sent(b, VS_CMD_START_VIEW, to);
    ck_assert_ptr_nonnull(sv);
    ck_assert_uint_eq(sv->op, op);
    const struct vs_hdr_prepare *s0 =
        (const void *)((const uint8_t *)sv + VS_HEADER_SIZE);
    ck_assert(vs_u128_eq(s0->f.checksum, hdr(c, (unsigned)op)->f.checksum));
}

/* n = 4, candidate replica 2 of log_view 0 holding c[1..5]; replica 1 of
 * log_view 1 claims op 5 and is faulty there, replica 3 nacks it, and
 * replica 0 nacks it too (nack0 = 1) or is faulty there as well. */
static void
feed_n4_faulty_top(struct bind *b, const struct chain *c, int nack0)
{
    start_recovered_n(b, 2, 4, c, 5, 1, 0, 0);
    elect(b);
    ck_assert_int_eq(feed_dvc(b, 1, 2, 1, c, 5, 5, 3, 0x1e, 0, 1),
                     VSR_ACCEPTED);
    ck_assert_int_eq(feed_dvc(b, 3, 2, 1, c, 5, 5, 3, 0x1e, 0x1, 1),
                     VSR_ACCEPTED);
    ck_assert_int_eq(vsr_status(b->v), VSR_STATUS_VIEW_CHANGE);
    ck_assert_uint_eq(vsr_stats(b->v)->older_adopted, 0);
    ck_assert_int_eq(feed_dvc(b, 0, 2, 1, c, 5, 5, 3, 0x1e, nack0 ? 0x1 : 0, 1),
                     VSR_ACCEPTED);
}

/* The same DVCs except that every DVC of log_view 1 claims op 5: two
 * nack it, replica 1 is faulty there. Log 1 may have started with an op
 * 5, perhaps the candidate's own, committed in view 0 with the
 * candidate's PrepareOk, so op 5 is never cut. The candidate's header
 * decides it: if log 1's op 5 is another one, the two nacks and the
 * candidate's different header make the nack quorum (3) and it never
 * committed; if it is the candidate's, it is kept. Either way the
 * candidate's op 5, chained to log 1's op 4, is the view's op 5. */
START_TEST(test_merge_older_header_decides_within_canonical_log)
{
    struct chain c;
    chain_build(&c, 5, NULL, 0, 8);
    struct bind b;
    feed_n4_faulty_top(&b, &c, 1);
    assert_started(&b, 1, &c, 5, 1, 0);
    ck_assert_uint_eq(b.truncated, 0);
    bind_fini(&b);
}
END_TEST

/* The near case: one DVC of log_view 1 nacks op 5, the other two are
 * faulty there. One nack and the candidate's header are 2, below the
 * nack quorum (3): an op 5 no DVC shows may have committed with the
 * PrepareOks of the two faulty replicas. With every DVC in, the merge
 * still waits. */
START_TEST(test_merge_older_header_waits_below_nack_quorum)
{
    struct chain c;
    chain_build(&c, 5, NULL, 0, 9);
    struct bind b;
    feed_n4_faulty_top(&b, &c, 0);
    ck_assert_uint_ge(vsr_stats(b.v)->merge_deadlocks, 1);
    assert_waits(&b);
    bind_fini(&b);
}
END_TEST

/* n = 3, candidate replica 0 of log_view 0 (view 3) holding log[1..26];
 * replica 1 of log_view 1 claims op 26 of c but is faulty there (ops
 * 14..25 present, the rest blank), as in simulator seed 3000495. */
static void
start_faulty_top(struct bind *b, const struct chain *log, const struct chain *c)
{
    start_recovered(b, 0, log, 26, 2, 0, 0);
    elect(b);
    ck_assert_uint_eq(vsr_view(b->v), 3); /* candidate: 3 mod 3 */
    uint64_t blank = 1 | (((UINT64_C(1) << 13) - 1) << 13);
    ck_assert_int_eq(
        feed_dvc_blanks(b, 1, 3, 1, c, 26, 26, 22, 0x1ffe, 0, blank),
        VSR_ACCEPTED);
    ck_assert_int_eq(vsr_status(b->v), VSR_STATUS_VIEW_CHANGE);
}

/* Replica 2's DVC: it journaled only ops 1..4 and nacks 5..top (it
 * never journaled the log it adopted), headers blank there. */
static void
feed_r2_nacks(struct bind *b, const struct chain *c, uint32_t log_view,
              uint64_t top)
{
    unsigned count = (unsigned)top;
    uint64_t nack = (UINT64_C(1) << (count - 4)) - 1;
    ck_assert_int_eq(feed_dvc_blanks(b, 2, 3, log_view, c, top, count, 22,
                                     UINT64_C(0xf) << (count - 4), nack, nack),
                     VSR_ACCEPTED);
}

/* The DVCs of seed 3000495's stalled view change: replica 2 is of
 * log_view 1 and ends at op 25. Log 1 may end at 25 (replica 2's
 * claim): its op 26 lies above that, so the candidate's DVC of log_view
 * 0 and replica 2's end below it make the nack quorum (2) and op 26 is
 * cut; op 25 is kept (one nack). */
START_TEST(test_merge_seed_3000495)
{
    struct chain c;
    chain_build(&c, 26, NULL, 0, 10);
    struct bind b;
    start_faulty_top(&b, &c, &c);
    feed_r2_nacks(&b, &c, 1, 25);
    assert_started(&b, 1, &c, 25, 0, 1);
    ck_assert_uint_eq(b.truncated, 26);
    bind_fini(&b);
}
END_TEST

/* The class of seed 3000495 where no canonical DVC ends lower: replica
 * 2 is of log_view 0 too, ends at op 26 and nacks it. Log 1's op 26 is
 * either the candidate's (kept: it may have committed in view 0 with
 * replica 1's PrepareOk) or another op, which replica 2's nack and the
 * candidate's different header prove never committed: the candidate's
 * op 26, chained to log 1's op 25, is the view's. With the two first
 * DVCs alone (no nack) the merge waits. */
START_TEST(test_merge_older_header_kept_at_top)
{
    struct chain c;
    chain_build(&c, 26, NULL, 0, 11);
    struct bind b;
    start_faulty_top(&b, &c, &c);
    assert_waits(&b);
    feed_r2_nacks(&b, &c, 0, 26);
    assert_started(&b, 1, &c, 26, 1, 0);
    ck_assert_uint_eq(b.truncated, 0);
    bind_fini(&b);
}
END_TEST

/* Near case: replica 2 (log_view 0) holds another op 26 chained to the
 * same op 25. Each older header may be log 1's op 26 (the other holder
 * alone is below the nack quorum): undecidable, the merge waits with
 * every DVC in and cuts nothing. */
START_TEST(test_merge_older_headers_disagree_wait)
{
    struct chain c, d;
    chain_build(&c, 26, NULL, 0, 12);
    chain_build(&d, 26, &c, 26, 13); /* shares ops 1..25 */
    struct bind b;
    start_faulty_top(&b, &c, &c);
    ck_assert_int_eq(
        feed_dvc(&b, 2, 3, 0, &d, 26, 26, 22, (UINT64_C(1) << 26) - 1, 0, 0),
        VSR_ACCEPTED);
    ck_assert_uint_ge(vsr_stats(b.v)->merge_deadlocks, 1);
    assert_waits(&b);
    bind_fini(&b);
}
END_TEST

/* Near case: the candidate's op 26 does not chain to log 1's op 25 (its
 * log forked at 25), so it is not log 1's op 26, which replica 2's nack
 * and that different header prove never committed: op 26 is cut; so is
 * op 25 (replica 2 nacks it, the candidate holds another), op 24 is
 * kept. */
START_TEST(test_merge_older_header_unchained_cut)
{
    struct chain c, e;
    chain_build(&c, 26, NULL, 0, 14);
    chain_build(&e, 26, &c, 25, 15); /* shares ops 1..24 */
    struct bind b;
    start_faulty_top(&b, &e, &c);
    feed_r2_nacks(&b, &c, 0, 26);
    assert_started(&b, 1, &c, 24, 0, 2);
    ck_assert_uint_eq(b.truncated, 25);
    bind_fini(&b);
}
END_TEST

/* n = 3, candidate replica 0 of log_view 0 holding log[1..5]; replica 2
 * of log_view 1 ends at op 5 of c, knows op 5 committed, and nacks it
 * (never journaled), as in simulator seed 3100795 (a partition group). */
static void
feed_committed_head(struct bind *b, const struct chain *log,
                    const struct chain *c)
{
    start_recovered(b, 0, log, 5, 2, 0, 0);
    elect(b);
    ck_assert_int_eq(feed_dvc(b, 2, 3, 1, c, 5, 5, 5, 0x1e, 0x1, 1),
                     VSR_ACCEPTED);
}

/* The DVCs of seed 3100795's stalled view change. Op 5 committed, so it
 * is log 1's op 5: had it been another op, replica 2's nack and the
 * candidate's different header (the nack quorum, 2) would prove it
 * uncommitted. The candidate's op 5 chains to log 1's op 4: the view
 * starts with it. */
START_TEST(test_merge_seed_3100795)
{
    struct chain c;
    chain_build(&c, 5, NULL, 0, 16);
    struct bind b;
    feed_committed_head(&b, &c, &c);
    assert_started(&b, 2, &c, 5, 1, 0);
    ck_assert_uint_eq(vsr_commit_max(b.v), 5);
    ck_assert_uint_eq(b.truncated, 0);
    bind_fini(&b);
}
END_TEST

/* Near case: the candidate's log forked at op 4, so its op 5 does not
 * chain to log 1's op 4 and is not the committed op 5. Nothing left
 * could be it, which contradicts the commit: the merge waits and cuts
 * nothing (never a committed op). */
START_TEST(test_merge_committed_head_unchained_waits)
{
    struct chain c, e;
    chain_build(&c, 5, NULL, 0, 17);
    chain_build(&e, 5, &c, 4, 18); /* shares ops 1..3 */
    struct bind b;
    feed_committed_head(&b, &e, &c);
    assert_waits(&b);
    bind_fini(&b);
}
END_TEST

/* n = 3, the DVCs of simulator seed 7500764's stalled view change (a
 * partition group): the candidate, replica 2 of log_view 2, holds ops
 * 1..19 and is faulty at op 20 (a damaged cut); replica 0 of log_view 2
 * knows op 20 committed and nacks 18..20 (never journaled); replica 1
 * of log_view 1 holds op 20 (it applied it). With replica 0 alone: one
 * nack, no header, wait. Replica 1's header decides: had log 2's op 20
 * been another op, replica 0's nack and that header (the nack quorum,
 * 2) would prove it uncommitted; it chains to log 2's op 19, so it is
 * the committed op 20, repaired from replica 1. */
START_TEST(test_merge_seed_7500764)
{
    struct chain c;
    chain_build(&c, 20, NULL, 0, 19);
    struct bind b;
    start_recovered(&b, 2, &c, 19, 4, 2, 20);
    elect(&b);
    ck_assert_uint_eq(vsr_view(b.v), 5); /* candidate: 5 mod 3 */
    ck_assert_int_eq(feed_dvc_blanks(&b, 0, 5, 2, &c, 20, 20, 20,
                                     ((UINT64_C(1) << 20) - 1) & ~UINT64_C(7),
                                     0x7, 0x7),
                     VSR_ACCEPTED);
    assert_waits(&b);
    ck_assert_int_eq(
        feed_dvc(&b, 1, 5, 1, &c, 20, 20, 19, (UINT64_C(1) << 20) - 1, 0, 0),
        VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->older_adopted, 1);
    const struct vs_hdr_request_prepares *rp =
        (const void *)last_sent(&b, VS_CMD_REQUEST_PREPARES, 1);
    ck_assert_ptr_nonnull(rp); /* from the holder, replica 1 */
    ck_assert_uint_eq(rp->from_op, 20);
    ck_assert_int_eq(feed_repair(&b, &c, 20), VSR_ACCEPTED);
    assert_started(&b, 0, &c, 20, 1, 0);
    ck_assert_uint_eq(b.truncated, 0);
    bind_fini(&b);
}
END_TEST

/* A non-candidate's DVC: golden byte offsets; a faulty top op carried
 * with neither bit; withheld until the faulty mark is durable; R2: the
 * resend is byte-identical. */
START_TEST(test_dvc_golden_and_withheld)
{
    struct chain c;
    chain_build(&c, 4, NULL, 0, 7);
    /* replica 0, durable view 1 / log_view 1, faulty op 4 found now */
    struct bind b;
    memset(&b, 0, sizeof(b));
    struct vs_vsr_options o;
    options(&o, 0);
    struct vs_hdr_prepare hs[3] = {*hdr(&c, 1), *hdr(&c, 2), *hdr(&c, 3)};
    o.headers = hs;
    o.header_count = 3;
    o.durable.view = 1;
    o.durable.log_view = 1;
    o.durable.commit_max = 2;
    o.commit_min = 0;
    o.recovering = 1;
    o.incarnation.lo = 5;
    o.faulty_op = 4;
    b.hold_sb = 1;
    ck_assert_int_eq(vsr_create(&o, &b.v, NULL, 0), 0);
    bind_drain(&b);
    ck_assert(b.sb_pending); /* the mark is written first */
    ck_assert_uint_eq(b.pending.faulty_op, 4);
    for (int t = 0; t < 600 && vsr_status(b.v) == VSR_STATUS_RECOVERING; t++) {
        vsr_tick(b.v);
        bind_drain(&b);
    }
    ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_VIEW_CHANGE);
    /* view 2 (primary 2); an SVC from replica 1 completes the quorum */
    uint8_t svc[VS_HEADER_SIZE];
    frame_base(svc, VS_CMD_START_VIEW_CHANGE, 1, 2, VS_HEADER_SIZE);
    ((struct vs_hdr_start_view_change *)svc)->group = VS_METADATA_GROUP;
    seal(svc, 0);
    ck_assert_int_eq(vsr_on_message(b.v, svc, sizeof(svc)), VSR_ACCEPTED);
    bind_drain(&b);
    ck_assert_uint_eq(count_sent(&b, VS_CMD_DO_VIEW_CHANGE), 0); /* held */
    ck_assert_uint_eq(count_sent(&b, VS_CMD_START_VIEW_CHANGE), 0);
    /* Complete writes: the mark, then view 2. */
    while (b.sb_pending) {
        b.sb_pending = 0;
        ck_assert_int_eq(vsr_on_superblock_durable(b.v, &b.pending), 0);
        bind_drain(&b);
    }
    const uint8_t *d = (const uint8_t *)last_sent(&b, VS_CMD_DO_VIEW_CHANGE, 2);
    ck_assert_ptr_nonnull(d);
    ck_assert(vs_frame_verify((const struct vs_header *)d));
    ck_assert_uint_eq(vs_load_u32(d + 48), VS_HEADER_SIZE + 4 * 256);
    ck_assert_uint_eq(vs_load_u32(d + 52), 2);       /* view */
    ck_assert_uint_eq(d[60], VS_CMD_DO_VIEW_CHANGE); /* command */
    ck_assert_uint_eq(d[61], 0);                     /* replica */
    ck_assert_uint_eq(vs_load_u64(d + 128), 4);      /* op */
    ck_assert_uint_eq(vs_load_u64(d + 136), 2);      /* commit */
    ck_assert_uint_eq(vs_load_u64(d + 144), VS_METADATA_GROUP);
    ck_assert_uint_eq(vs_load_u32(d + 152), 1);   /* log_view */
    ck_assert_uint_eq(vs_load_u64(d + 224), 0);   /* nack lo */
    ck_assert_uint_eq(vs_load_u64(d + 240), 0xe); /* present */
    /* body: op 4 blank (faulty), then ops 3, 2, 1 high to low */
    static const uint8_t zero[VS_HEADER_SIZE];
    ck_assert_mem_eq(d + 256, zero, VS_HEADER_SIZE);
    ck_assert_uint_eq(vs_load_u64(d + 512 + 176), 3);
    ck_assert_uint_eq(vs_load_u64(d + 768 + 176), 2);
    ck_assert_uint_eq(vs_load_u64(d + 1024 + 176), 1);
    ck_assert_uint_eq(vsr_stats(b.v)->faulty_not_nacked, 1);
    /* R2: a retransmit sends the same bytes */
    uint8_t copy[VS_HEADER_SIZE + 4 * 256];
    memcpy(copy, d, sizeof(copy));
    bind_clear(&b);
    for (int t = 0; t < 60; t++) {
        vsr_tick(b.v);
        bind_drain(&b);
    }
    d = (const uint8_t *)last_sent(&b, VS_CMD_DO_VIEW_CHANGE, 2);
    ck_assert_ptr_nonnull(d);
    ck_assert_mem_eq(d, copy, sizeof(copy));
    bind_fini(&b);
}
END_TEST

/* A Recovering replica takes only a StartView that echoes its
 * incarnation and is not below its durable view. */
START_TEST(test_recovering_refuses_stale_sv)
{
    struct chain c;
    chain_build(&c, 3, NULL, 0, 8);
    struct bind b;
    start_recovered(&b, 1, &c, 3, 3, 3, 0); /* durable view 3 */
    for (int pass = 0; pass < 4; pass++) {
        /* 0: incarnation 0; 1: foreign; 2: echo, view 0 < 3; 3: good */
        uint32_t view = pass == 2 ? 0 : 3;
        size_t size = VS_HEADER_SIZE + 3 * VS_HEADER_SIZE;
        uint8_t f[VS_HEADER_SIZE + 3 * VS_HEADER_SIZE];
        frame_base(f, VS_CMD_START_VIEW, 0, view, (uint32_t)size);
        struct vs_hdr_start_view *sv = (struct vs_hdr_start_view *)f;
        sv->op = 3;
        sv->commit = 3;
        sv->group = VS_METADATA_GROUP;
        if (pass == 1)
            sv->incarnation.lo = 0x999;
        else if (pass >= 2)
            sv->incarnation.lo = 0xabc0 + 1;
        for (unsigned i = 0; i < 3; i++)
            memcpy(f + VS_HEADER_SIZE + i * VS_HEADER_SIZE, c.frame[3 - i],
                   VS_HEADER_SIZE);
        seal(f, size - VS_HEADER_SIZE);
        enum vsr_verdict r = vsr_on_message(b.v, f, size);
        bind_drain(&b);
        if (pass < 3) {
            ck_assert_int_eq(r, VSR_DROP_INCARNATION);
            ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_RECOVERING);
        } else {
            ck_assert_int_eq(r, VSR_ACCEPTED);
            ck_assert_int_eq(vsr_status(b.v), VSR_STATUS_NORMAL);
            ck_assert_uint_eq(vsr_view(b.v), 3);
        }
    }
    ck_assert_uint_eq(vsr_stats(b.v)->verdicts[VSR_DROP_INCARNATION], 3);
    bind_fini(&b);
}
END_TEST

static enum vsr_verdict
feed_request_prepares(struct bind *b, uint8_t sender, uint64_t from,
                      uint64_t to, uint64_t nonce)
{
    uint8_t f[VS_HEADER_SIZE];
    frame_base(f, VS_CMD_REQUEST_PREPARES, sender, vsr_view(b->v),
               VS_HEADER_SIZE);
    struct vs_hdr_request_prepares *h = (struct vs_hdr_request_prepares *)f;
    h->nonce.lo = nonce;
    h->from_op = from;
    h->to_op = to;
    h->group = VS_METADATA_GROUP;
    seal(f, 0);
    enum vsr_verdict r = vsr_on_message(b->v, f, sizeof(f));
    bind_drain(b);
    return r;
}

/* A replica serves RequestPrepares high to low, then RepairDone; below
 * its checkpoint it answers RangeEvicted; bad ranges are dropped. */
START_TEST(test_serve_repair)
{
    struct chain c;
    chain_build(&c, 6, NULL, 0, 9);
    struct bind b;
    memset(&b, 0, sizeof(b));
    struct vs_vsr_options o;
    options(&o, 1);
    struct vs_hdr_prepare hs[4];
    for (unsigned op = 3; op <= 6; op++)
        hs[op - 3] = *hdr(&c, op);
    o.headers = hs;
    o.header_count = 4;
    o.durable.view = 1;
    o.durable.log_view = 1;
    o.durable.checkpoint_op = 3;
    o.durable.commit_max = 3;
    o.commit_min = 3;
    o.recovering = 1;
    o.incarnation.lo = 1;
    ck_assert_int_eq(vsr_create(&o, &b.v, NULL, 0), 0);
    bind_drain(&b);
    unsigned served = 0;
    ck_assert_int_eq(feed_request_prepares(&b, 2, 4, 6, 77), VSR_ACCEPTED);
    /* bodies are in the journal only: SEND_PREPARE actions were popped;
     * count them through the stats, then the RepairDone frame */
    served = (unsigned)vsr_stats(b.v)->repair_served;
    ck_assert_uint_eq(served, 3);
    ck_assert_uint_eq(b.nsendprep, 3); /* as RepairPrepares */
    ck_assert_uint_eq(b.sendprep.retransmit, 0);
    ck_assert_uint_eq(b.sendprep.op, 4); /* high to low */
    const struct vs_hdr_repair_done *rd =
        (const void *)last_sent(&b, VS_CMD_REPAIR_DONE, 2);
    ck_assert_ptr_nonnull(rd);
    ck_assert_uint_eq(rd->nonce.lo, 77);
    ck_assert_uint_eq(rd->op, 6);
    ck_assert_int_eq(feed_request_prepares(&b, 2, 1, 4, 78), VSR_ACCEPTED);
    const struct vs_hdr_repair_done *re =
        (const void *)last_sent(&b, VS_CMD_RANGE_EVICTED, 2);
    ck_assert_ptr_nonnull(re);
    ck_assert_uint_eq(re->op, 3);
    ck_assert_uint_eq(re->nonce.lo, 78);
    /* never an empty or oversized range (9..8 must not crash) */
    ck_assert_int_eq(feed_request_prepares(&b, 2, 9, 8, 79), VSR_DROP_RANGE);
    ck_assert_int_eq(feed_request_prepares(&b, 2, 0, 3, 80), VSR_DROP_RANGE);
    ck_assert_int_eq(feed_request_prepares(&b, 2, 4, 4 + 128, 81),
                     VSR_DROP_RANGE);
    ck_assert_uint_eq(vsr_stats(b.v)->verdicts[VSR_DROP_RANGE], 3);
    /* a RepairDone for a request we never sent */
    uint8_t f[VS_HEADER_SIZE];
    frame_base(f, VS_CMD_REPAIR_DONE, 2, 1, VS_HEADER_SIZE);
    ((struct vs_hdr_repair_done *)f)->group = VS_METADATA_GROUP;
    seal(f, 0);
    ck_assert_int_eq(vsr_on_message(b.v, f, sizeof(f)), VSR_DROP_NONCE);
    bind_fini(&b);
}
END_TEST

/* The repair margin: a replica serves the ops of its journal from its
 * checkpoint op less the margin (vsr_drain_keep_from, the op a drain
 * keeps) on, RangeEvicted below; a journal holding less than the margin
 * (a boot, an install) answers from its first held op. */
static void
start_serving(struct bind *b, const struct chain *c, unsigned first,
              unsigned last, uint64_t ckpt)
{
    memset(b, 0, sizeof(*b));
    struct vs_vsr_options o;
    options(&o, 1);
    o.journal_slots = 10; /* margin max(4, 10 / 2) = 5 */
    struct vs_hdr_prepare hs[CHAIN_MAX];
    for (unsigned op = first; op <= last; op++)
        hs[op - first] = *hdr(c, op);
    o.headers = hs;
    o.header_count = last - first + 1;
    o.durable.view = 1;
    o.durable.log_view = 1;
    o.durable.checkpoint_op = ckpt;
    o.durable.commit_max = ckpt;
    o.commit_min = ckpt;
    o.recovering = 1;
    o.incarnation.lo = 1;
    ck_assert_int_eq(vsr_create(&o, &b->v, NULL, 0), 0);
    bind_drain(b);
}

START_TEST(test_serve_repair_margin)
{
    struct chain c;
    chain_build(&c, 12, NULL, 0, 11);
    struct bind b;
    start_serving(&b, &c, 3, 12, 10);
    ck_assert_uint_eq(vsr_repair_margin(b.v), 5);
    ck_assert_uint_eq(vsr_drain_keep_from(b.v, 10), 5);
    ck_assert_uint_eq(vsr_drain_keep_from(b.v, 3), 1);
    /* below the checkpoint, within the margin: served */
    ck_assert_int_eq(feed_request_prepares(&b, 2, 5, 9, 90), VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->repair_served, 5);
    const struct vs_hdr_repair_done *rd =
        (const void *)last_sent(&b, VS_CMD_REPAIR_DONE, 2);
    ck_assert_ptr_nonnull(rd);
    ck_assert_uint_eq(rd->nonce.lo, 90);
    /* op 4 is held but below the margin (a drain dropped it) */
    ck_assert_int_eq(feed_request_prepares(&b, 2, 4, 9, 91), VSR_ACCEPTED);
    const struct vs_hdr_repair_done *re =
        (const void *)last_sent(&b, VS_CMD_RANGE_EVICTED, 2);
    ck_assert_ptr_nonnull(re);
    ck_assert_uint_eq(re->nonce.lo, 91);
    ck_assert_uint_eq(re->op, 5);
    ck_assert_uint_eq(vsr_stats(b.v)->repair_served, 5);
    bind_fini(&b);
    /* a journal holding less than the margin below the checkpoint */
    start_serving(&b, &c, 8, 12, 10);
    ck_assert_int_eq(feed_request_prepares(&b, 2, 6, 9, 92), VSR_ACCEPTED);
    re = (const void *)last_sent(&b, VS_CMD_RANGE_EVICTED, 2);
    ck_assert_ptr_nonnull(re);
    ck_assert_uint_eq(re->op, 8);
    ck_assert_uint_eq(vsr_stats(b.v)->repair_served, 0);
    ck_assert_int_eq(feed_request_prepares(&b, 2, 8, 9, 93), VSR_ACCEPTED);
    ck_assert_uint_eq(vsr_stats(b.v)->repair_served, 2);
    bind_fini(&b);
}
END_TEST

/* Exact frame sizes, for every replica command the engine reads. */
START_TEST(test_frame_sizes)
{
    struct chain c;
    chain_build(&c, 2, NULL, 0, 10);
    struct bind b;
    memset(&b, 0, sizeof(b));
    struct vs_vsr_options o;
    options(&o, 1);
    ck_assert_int_eq(vsr_create(&o, &b.v, NULL, 0), 0);
    bind_drain(&b);
    static const uint8_t header_only[] = {
        VS_CMD_PREPARE_OK,        VS_CMD_COMMIT,
        VS_CMD_START_VIEW_CHANGE, VS_CMD_REQUEST_START_VIEW,
        VS_CMD_REQUEST_PREPARES,  VS_CMD_REPAIR_DONE,
        VS_CMD_RANGE_EVICTED,
    };
    uint8_t *f = vs_xcalloc(1, VS_HEADER_SIZE + 130 * VS_HEADER_SIZE);
    for (size_t k = 0; k < sizeof(header_only); k++) {
        for (unsigned extra = 1; extra <= 256; extra += 255) {
            uint32_t size = VS_HEADER_SIZE + extra;
            memset(f, 0, size);
            frame_base(f, header_only[k], 0, 0, size);
            seal(f, extra);
            ck_assert_msg(vsr_on_message(b.v, f, size) == VSR_DROP_SIZE,
                          "command %u with %u body bytes", header_only[k],
                          extra);
        }
    }
    static const uint8_t suffixed[] = {VS_CMD_DO_VIEW_CHANGE,
                                       VS_CMD_START_VIEW};
    static const uint32_t bad[] = {100, 256 + 1, 129 * 256};
    for (size_t k = 0; k < sizeof(suffixed); k++) {
        for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
            uint32_t size = VS_HEADER_SIZE + bad[j];
            memset(f, 0, size);
            frame_base(f, suffixed[k], 0, 1, size);
            seal(f, bad[j]);
            ck_assert_int_eq(vsr_on_message(b.v, f, size), VSR_DROP_SIZE);
        }
    }
    ck_assert_uint_eq(vsr_stats(b.v)->verdicts[VSR_DROP_SIZE],
                      2 * sizeof(header_only) + 6);
    /* A suffix whose headers do not chain is refused as such. */
    uint32_t size = VS_HEADER_SIZE + 2 * VS_HEADER_SIZE;
    memset(f, 0, size);
    frame_base(f, VS_CMD_START_VIEW, 0, 3, size);
    struct vs_hdr_start_view *sv = (struct vs_hdr_start_view *)f;
    sv->op = 2;
    sv->commit = 2;
    sv->group = VS_METADATA_GROUP;
    memcpy(f + VS_HEADER_SIZE, c.frame[1], VS_HEADER_SIZE); /* wrong order */
    memcpy(f + 2 * VS_HEADER_SIZE, c.frame[2], VS_HEADER_SIZE);
    seal(f, size - VS_HEADER_SIZE);
    ck_assert_int_eq(vsr_on_message(b.v, f, size), VSR_DROP_SUFFIX);
    /* A RepairPrepare above body_max. */
    uint32_t big = VS_HEADER_SIZE + 5000;
    uint8_t *p = vs_xcalloc(1, big);
    memcpy(p, c.frame[1], VS_HEADER_SIZE);
    struct vs_hdr_prepare *ph = (struct vs_hdr_prepare *)p;
    ph->f.size = big;
    vs_prepare_seal(ph, p + VS_HEADER_SIZE, big - VS_HEADER_SIZE);
    ph->f.command = VS_CMD_REPAIR_PREPARE;
    ck_assert_int_eq(vsr_on_message(b.v, p, big), VSR_DROP_BODY_MAX);
    ph->f.command = VS_CMD_PREPARE;
    ck_assert_int_eq(vsr_on_message(b.v, p, big), VSR_DROP_BODY_MAX);
    free(p);
    free(f);
    bind_fini(&b);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("vsr_merge");
    TCase *tc = tcase_create("merge");
    tcase_add_test(tc, test_merge_canonical_by_log_view);
    tcase_add_test(tc, test_merge_keeps_unnacked_ops);
    tcase_add_test(tc, test_merge_nack_quorum_truncates);
    tcase_add_test(tc, test_merge_faulty_waits_then_repairs);
    tcase_add_test(tc, test_merge_faulty_nacked_by_quorum);
    tcase_add_test(tc, test_merge_older_log_view_nacks_above_canonical_floor);
    tcase_add_test(tc, test_merge_older_header_decides_within_canonical_log);
    tcase_add_test(tc, test_merge_older_header_waits_below_nack_quorum);
    tcase_add_test(tc, test_merge_seed_3000495);
    tcase_add_test(tc, test_merge_older_header_kept_at_top);
    tcase_add_test(tc, test_merge_older_headers_disagree_wait);
    tcase_add_test(tc, test_merge_older_header_unchained_cut);
    tcase_add_test(tc, test_merge_seed_3100795);
    tcase_add_test(tc, test_merge_committed_head_unchained_waits);
    tcase_add_test(tc, test_merge_seed_7500764);
    tcase_add_test(tc, test_dvc_golden_and_withheld);
    tcase_add_test(tc, test_recovering_refuses_stale_sv);
    tcase_add_test(tc, test_serve_repair);
    tcase_add_test(tc, test_primary_retransmits_journal_bodies_as_prepares);
    tcase_add_test(tc, test_serve_repair_margin);
    tcase_add_test(tc, test_frame_sizes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
