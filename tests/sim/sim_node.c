/*
 * tests/sim/sim_node.c - one simulated replica: engine + real storage +
 * real state machine, bound like shard 0 (sim_node.h).
 * Callers: the simulator only (one thread).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "common/layout.h"
#include "common/assert.h"
#include "common/mem.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/storage/checkpoint_header.h"
#include "shard/storage/recovery.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/vsr_state.h"
#include "shard/zero/commit_frames.h"
#include "tests/sim/sim_node.h"
#include "tests/sim/sim_xfer.h"

#define SIM_BODY_MAX (64u * 1024u)

static void node_drain(struct sim_node *n);
static void checkpoint(struct sim_node *n, int force);

void
sim_node_fail(struct sim_node *n, const char *what, int rc)
{
    if (!n->up)
        return;
    char io[400] = "";
    if (sio_is_fatal(&n->disk->io))
        sio_fatal_msg(&n->disk->io, io, sizeof(io));
    snprintf(n->fatal, sizeof(n->fatal), "%s: %s%s%s", what, sio_strerror(rc),
             io[0] ? "; " : "", io);
    sim_node_stop(n);
}

void
sim_node_init(struct sim_node *n, const struct sim_node_config *cfg,
              struct sim_disk *disk, const char *data_dir)
{
    memset(n, 0, sizeof(*n));
    n->cfg = *cfg;
    n->disk = disk;
    snprintf(n->data_dir, sizeof(n->data_dir), "%s", data_dir);
    snprintf(n->meta_dir, sizeof(n->meta_dir), "%s/%s", data_dir,
             VS_METADATA_DIR);
    meta_ct_init(&n->ct);
    meta_result_init(&n->res);
    vs_wbuf_init(&n->body);
    vs_wbuf_init(&n->frame);
    vs_wbuf_init(&n->snap);
}

/* t += s for the counters the simulator reports. */
static void
stats_sum(struct vs_vsr_stats *t, const struct vs_vsr_stats *s)
{
    t->view_changes += s->view_changes;
    t->views_started += s->views_started;
    t->sv_adopted += s->sv_adopted;
    t->merge_waits += s->merge_waits;
    t->merge_deadlocks += s->merge_deadlocks;
    t->nack_truncations += s->nack_truncations;
    t->older_adopted += s->older_adopted;
    t->faulty_not_nacked += s->faulty_not_nacked;
    t->truncations += s->truncations;
    t->repair_requests += s->repair_requests;
    t->repairs += s->repairs;
    t->repair_served += s->repair_served;
    t->range_evicted += s->range_evicted;
    t->probes += s->probes;
    t->probe_answers += s->probe_answers;
    t->probe_elections += s->probe_elections;
    t->faulty_repaired += s->faulty_repaired;
    t->divergences += s->divergences;
}

void
sim_node_stats(const struct sim_node *n, struct vs_vsr_stats *out)
{
    memset(out, 0, sizeof(*out));
    stats_sum(out, &n->acc);
    if (n->eng != NULL)
        stats_sum(out, vsr_stats(n->eng));
}

void
sim_node_stop(struct sim_node *n)
{
    n->up = 0;
    sim_xfer_close(n);
    if (n->eng != NULL)
        stats_sum(&n->acc, vsr_stats(n->eng));
    vsr_destroy(n->eng);
    n->eng = NULL;
    if (n->journal_open)
        wal_close(&n->journal);
    n->journal_open = 0;
    n->unsynced = 0;
    free(n->state);
    n->state = NULL;
    meta_ct_fini(&n->ct);
    meta_ct_init(&n->ct);
    n->nio = 0;
    n->ckpt_pending = 0;
    n->sb_durable_set = 0;
}

void
sim_node_fini(struct sim_node *n)
{
    sim_node_stop(n);
    sim_xfer_free(n);
    meta_ct_fini(&n->ct);
    meta_result_fini(&n->res);
    vs_wbuf_fini(&n->body);
    vs_wbuf_fini(&n->frame);
    vs_wbuf_fini(&n->snap);
    free(n->rbody);
    free(n->io);
    free(n->om);
    n->om = NULL;
    n->om_cap = 0;
}

/* The op's mark, grown on demand. */
static struct sim_opmark *
om_get(struct sim_node *n, uint64_t op)
{
    if (op >= n->om_cap) {
        uint64_t cap = n->om_cap ? n->om_cap : 256;
        while (cap <= op)
            cap *= 2;
        n->om = vs_xrealloc(n->om, cap * sizeof(*n->om));
        memset(n->om + n->om_cap, 0, (cap - n->om_cap) * sizeof(*n->om));
        n->om_cap = cap;
    }
    return &n->om[op];
}

/* (op, sum) reported durable (or held by the journal at boot). */
static void
om_durable(struct sim_node *n, uint64_t op, struct vs_u128 sum)
{
    struct sim_opmark *m = om_get(n, op);
    for (unsigned k = 0; k < m->ndurable && k < SIM_OPMARK_SUMS; k++)
        if (vs_u128_eq(m->durable[k], sum))
            return;
    if (m->ndurable < SIM_OPMARK_SUMS)
        m->durable[m->ndurable] = sum;
    if (m->ndurable <= SIM_OPMARK_SUMS)
        m->ndurable++;
}

int
sim_node_ever_durable(const struct sim_node *n, uint64_t op,
                      const struct vs_u128 *sum)
{
    if (op >= n->om_cap || n->om[op].ndurable == 0)
        return 0;
    const struct sim_opmark *m = &n->om[op];
    if (sum == NULL || m->ndurable > SIM_OPMARK_SUMS)
        return 1;
    for (unsigned k = 0; k < m->ndurable; k++)
        if (vs_u128_eq(m->durable[k], *sum))
            return 1;
    return 0;
}

int
sim_node_torn_copy(const struct sim_node *n, uint64_t op, struct vs_u128 *sum)
{
    if (op >= n->om_cap || !n->om[op].torn)
        return 0;
    *sum = n->om[op].torn_sum;
    return 1;
}

/* After a boot's cut of a damaged tail (ops first..last at bytes
 * [off, end) of the journal): each op's copy is a torn never-fsynced
 * write, or not, as the disk's crash record says. */
static void
om_cut(struct sim_node *n, uint64_t first, uint64_t last, uint64_t off,
       uint64_t end, const struct vs_hdr_prepare *h)
{
    int torn = sim_disk_torn_unsynced(n->disk, VS_JOURNAL_FILE, off, end);
    for (uint64_t op = first; op <= last && op > 0; op++) {
        struct sim_opmark *m = om_get(n, op);
        m->torn = (uint8_t)torn;
        memset(&m->torn_sum, 0, sizeof(m->torn_sum));
        if (h != NULL && h->op == op)
            m->torn_sum = h->f.checksum;
    }
}

static void
initial_state(const struct sim_node *n, struct vs_vsr_state *s)
{
    memset(s, 0, sizeof(*s));
    s->cluster = n->cfg.cluster;
    s->replica_id = (uint8_t)n->cfg.replica;
    s->replica_count = (uint8_t)n->cfg.replica_count;
}

int
sim_node_format(struct sim_node *n)
{
    struct vs_vsr_state s;
    initial_state(n, &s);
    return recovery_format_fresh(&n->disk->io, n->data_dir, &s);
}

static uint64_t
splitmix_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t
sim_node_rand(struct sim_node *n)
{
    return splitmix_next(&n->rng);
}

static int
engine_build(struct sim_node *n, const struct vs_vsr_persist *d,
             uint64_t commit_min, uint64_t faulty_op,
             const struct vs_hdr_prepare *faulty_header, char *err,
             size_t errlen)
{
    struct vs_vsr_options o;
    memset(&o, 0, sizeof(o));
    o.cluster = n->cfg.cluster;
    o.group = VS_METADATA_GROUP;
    o.replica = (uint8_t)n->cfg.replica;
    o.replica_count = (uint8_t)n->cfg.replica_count;
    o.durable = *d;
    o.commit_min = commit_min;
    o.journal_slots = n->cfg.wal_slots;
    o.pipeline_max = n->cfg.pipeline;
    o.body_max = SIM_BODY_MAX;
    o.seed = n->cfg.seed ^ (n->boots * 0x9e3779b97f4a7c15ull);
    struct vs_hdr_prepare *hs = NULL;
    /* As shard 0: the checkpoint op's entry may be gone from the WAL (a
     * transfer installed it, or it was cut as a damaged tail): the
     * superblock's record of its header continues the hash chain. */
    int lead = d->checkpoint_op > 0 && d->checkpoint_op == commit_min &&
               n->ckpt_prepare.op == d->checkpoint_op &&
               !vs_u128_is_zero(n->ckpt_prepare.f.checksum) &&
               (wal_empty(&n->journal) ||
                wal_first_op(&n->journal) == d->checkpoint_op + 1);
    if (lead && wal_empty(&n->journal)) {
        hs = vs_xmalloc(sizeof(*hs));
        hs[o.header_count++] = n->ckpt_prepare;
    }
    if (!wal_empty(&n->journal)) {
        uint64_t first = wal_first_op(&n->journal);
        uint64_t last = wal_last_op(&n->journal);
        if (last - first + 1 > n->cfg.wal_slots)
            first = last - n->cfg.wal_slots + 1;
        else
            lead = lead && last - first + 2 <= n->cfg.wal_slots;
        hs = vs_xmalloc((size_t)(last - first + 2) * sizeof(*hs));
        if (lead && first == d->checkpoint_op + 1)
            hs[o.header_count++] = n->ckpt_prepare;
        for (uint64_t op = first; op <= last; op++)
            hs[o.header_count++] = *wal_header(&n->journal, op);
    }
    o.headers = hs;
    o.recovering = n->cfg.replica_count > 1 &&
                   (o.header_count > 0 || commit_min > 0 || d->view > 0 ||
                    d->commit_max > 0 || d->checkpoint_op > 0 ||
                    faulty_op != 0 || d->faulty_op != 0 || n->rebuilt);
    o.rebuilt = n->rebuilt;
    if (o.recovering) {
        /* a fresh per-boot nonce, drawn by the binding */
        uint64_t x = n->cfg.seed ^ (n->boots * 0xd1b54a32d192ed03ull);
        o.incarnation.lo = splitmix_next(&x) | 1;
        o.incarnation.hi = splitmix_next(&x);
    }
    o.faulty_op = faulty_op;
    o.faulty_header = faulty_header;
    int rc = vsr_create(&o, &n->eng, err, errlen);
    free(hs);
    return rc;
}

int
sim_node_recover(struct sim_node *n)
{
    VS_ASSERT(!n->up && n->cfg.replica_count > 1);
    int rc = sim_disk_wipe(n->disk);
    if (rc == 0)
        rc = sim_node_format(n);
    if (rc != 0)
        return rc;
    for (uint64_t op = 0; op < n->om_cap; op++)
        n->om[op].torn = 0; /* the copies are gone */
    n->rebuilt = 1;
    return sim_node_boot(n, 0);
}

int
sim_node_boot(struct sim_node *n, int cut_damaged_tail)
{
    VS_ASSERT(!n->up);
    n->refused = 0;
    n->refuse[0] = n->fatal[0] = '\0';
    n->boots++;
    memset(&n->disk->io.fatal, 0, sizeof(n->disk->io.fatal));
    struct recovery_expect ex;
    memset(&ex, 0, sizeof(ex));
    ex.check_identity = 1;
    ex.cluster = n->cfg.cluster;
    ex.replica_id = (uint8_t)n->cfg.replica;
    ex.replica_count = (uint8_t)n->cfg.replica_count;
    ex.is_cluster = n->cfg.replica_count > 1;
    ex.cut_damaged_tail = cut_damaged_tail;
    ex.wal_unsynced_max = n->cfg.group_commit ? WAL_GROUP_UNSYNCED_MAX : 0;
    struct recovery_result r;
    int rc = recovery_open(&n->disk->io, n->data_dir, &ex, &r);
    if (rc == 0 && r.verdict == RECOVERY_FRESH) {
        recovery_result_fini(&r);
        rc = sim_node_format(n);
        if (rc == 0)
            rc = recovery_open(&n->disk->io, n->data_dir, &ex, &r);
        else
            return rc;
    }
    if (rc != 0)
        return rc;
    if (r.verdict != RECOVERY_BOOT) {
        snprintf(n->refuse, sizeof(n->refuse), "%s: %s",
                 recovery_verdict_name(r.verdict), r.reason);
        n->refused = 1;
        recovery_result_fini(&r);
        return 1;
    }
    if (r.wal_scan.dropped) {
        /* damage among entries the snapshot covers (kept only to repair
         * peers): recovery dropped them with the prefix before them */
        n->m_wal_dropped++;
        n->wal_dropped_last = r.wal_scan.dropped_last_op;
    }
    uint64_t faulty_op = 0;
    struct vs_hdr_prepare fhdr;
    memset(&fhdr, 0, sizeof(fhdr));
    int fhdr_ok = 0;
    if (r.wal_tail_cut) {
        if (r.wal_scan.verdict == WAL_DAMAGED_TAIL) {
            n->m_damaged_cut++;
            om_cut(n, r.damaged_cut_op, r.damaged_cut_last,
                   r.damaged_cut_offset,
                   r.wal_scan.file_size > r.damaged_cut_offset
                       ? r.wal_scan.file_size
                       : r.damaged_cut_offset + VS_HEADER_SIZE,
                   r.wal_scan.bad_header_valid ? &r.wal_scan.bad_header : NULL);
            /* a cluster replica cut a damaged tail: every op it may have
             * held is present-but-faulty (repaired, never nacked) */
            if (n->cfg.replica_count > 1) {
                faulty_op = r.damaged_cut_last;
                fhdr = r.wal_scan.bad_header; /* if it verified */
                fhdr_ok = r.wal_scan.bad_header_valid;
            }
        } else {
            n->m_torn_cut++;
        }
        if (r.wal_scan.group_last_op != 0)
            n->m_group_tails++;
        if (r.wal_scan.mark_cut)
            n->m_mark_cuts++;
    }
    if (!fhdr_ok && n->cfg.replica_count > 1 &&
        vsr_state_has_faulty_prepare(&r.state)) {
        /* a cut of an earlier boot: the superblock kept its header (the
         * engine takes it only chained to the recovered head) */
        fhdr = r.state.faulty_prepare;
        fhdr_ok = 1;
    }
    /* the state: the snapshot (if any); the engine replays the rest */
    size_t size = meta_state_size(&n->cfg.caps);
    n->state = vs_xcalloc(1, size);
    VS_ASSERT(meta_state_init(n->state, &n->cfg.caps) == 0);
    uint64_t op = 0;
    if (r.have_snapshot) {
        size_t len;
        uint8_t *p = snapfile_take_payload(&r.snap, &len);
        enum meta_snap_status st =
            meta_snapshot_decode(p, len, n->state, &n->ct);
        free(p);
        if (st != META_SNAP_OK) {
            snprintf(n->refuse, sizeof(n->refuse),
                     "snapshot of op %llu does not decode: %s",
                     (unsigned long long)r.snapshot_op,
                     meta_snap_status_str(st));
            n->refused = 1;
            recovery_result_fini(&r);
            free(n->state);
            n->state = NULL;
            return 1;
        }
        op = r.snapshot_op;
    }
    n->rng = n->cfg.seed ^ (n->boots * 0xa0761d6478bd642full);
    n->snap_op = r.have_snapshot ? r.snapshot_op : 0;
    n->snap_sum =
        r.have_snapshot ? r.snapshot_checksum : (struct vs_u128){0, 0};
    memset(&n->ckpt_prepare, 0, sizeof(n->ckpt_prepare));
    if (vsr_state_has_checkpoint_prepare(&r.state))
        n->ckpt_prepare = r.state.checkpoint_prepare;
    n->journal = r.journal;
    r.journal_open = 0;
    n->journal_open = 1;
    n->journal.io = &n->disk->io;
    if (!wal_empty(&n->journal)) /* held: the engine may acknowledge them */
        for (uint64_t x = wal_first_op(&n->journal);
             x <= wal_last_op(&n->journal); x++)
            om_durable(n, x, wal_header(&n->journal, x)->f.checksum);
    struct vs_vsr_persist d = {
        .view = r.state.view,
        .log_view = r.state.log_view,
        .commit_max = r.state.commit_max,
        .checkpoint_op = r.state.checkpoint_op,
        .checkpoint_checksum = r.state.checkpoint_checksum,
        .faulty_op = n->cfg.replica_count > 1 ? r.state.faulty_op : 0,
        .nonack_op = n->cfg.replica_count > 1 ? r.state.nonack_op : 0,
    };
    recovery_result_fini(&r);
    rc = sb_open(&n->sb, &n->disk->io, n->meta_dir, NULL);
    if (rc != 0)
        goto fail;
    n->sb_durable = d;
    n->sb_durable_set = 1;
    n->last_ckpt_op = d.checkpoint_op;
    char why[256];
    rc = engine_build(n, &d, op, faulty_op, fhdr_ok ? &fhdr : NULL, why,
                      sizeof(why));
    if (rc != 0) {
        snprintf(n->refuse, sizeof(n->refuse), "engine refused: %s", why);
        n->refused = 1;
        rc = 1;
        goto fail;
    }
    rc = sim_xfer_open(n);
    if (rc != 0)
        goto fail;
    n->up = 1;
    sim_disk_torn_forget(n->disk); /* om_cut read what this boot needed */
    node_drain(n);
    return 0;
fail:
    vsr_destroy(n->eng);
    n->eng = NULL;
    if (n->journal_open)
        wal_close(&n->journal);
    n->journal_open = 0;
    free(n->state);
    n->state = NULL;
    meta_ct_fini(&n->ct);
    meta_ct_init(&n->ct);
    return rc;
}

/* ---------------------------------------------------------- actions */

static void
io_push(struct sim_node *n, const struct sim_io_done *e)
{
    if (n->nio == n->io_cap) {
        n->io_cap = n->io_cap ? 2 * n->io_cap : 16;
        n->io = vs_xrealloc(n->io, n->io_cap * sizeof(*n->io));
    }
    n->io[n->nio++] = *e;
}

static void
do_append(struct sim_node *n, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a->frame;
    /* group commit: held unsynced like shard 0's pass, the one that would
     * exceed the window fsyncs them all */
    int hold = n->cfg.group_commit && n->unsynced + 1 < WAL_GROUP_UNSYNCED_MAX;
    struct sim_opmark *m = om_get(n, a->op);
    m->torn = 0; /* a new copy */
    m->off = n->journal.size;
    m->end = m->off + VS_HEADER_SIZE + a->body_len;
    if (a->op >= n->cfg.lose_lo && a->op <= n->cfg.lose_hi &&
        n->cfg.lose_lo > 0 &&
        sim_disk_lose_whole(n->disk, VS_JOURNAL_FILE, m->off, m->end) != 0) {
        sim_node_fail(n, "counterfactual: too many ranges to lose", -ENOSPC);
        return;
    }
    int rc = hold ? wal_append_nosync(&n->journal, p, a->body, a->body_len)
                  : wal_append(&n->journal, p, a->body, a->body_len);
    if (rc != 0) {
        sim_node_fail(n, "journal append", rc);
        return;
    }
    n->unsynced = hold ? n->unsynced + 1 : 0;
    struct sim_io_done e = {.kind = 1,
                            .due = n->now + n->cfg.disk_delay,
                            .op = a->op,
                            .checksum = p->f.checksum};
    io_push(n, &e);
}

/* As shard 0 (commit.c): the header the engine's log holds at the
 * first op of the faulty range (the op above the WAL's last entry),
 * which the WAL does not hold: the superblock keeps it for the next
 * boot. */
static void
faulty_prepare_fill(struct sim_node *n, const struct vs_vsr_persist *p,
                    struct vs_vsr_state *s)
{
    if (p->faulty_op == 0 || n->eng == NULL)
        return;
    uint64_t x = wal_empty(&n->journal) ? vsr_commit_min(n->eng) + 1
                                        : wal_last_op(&n->journal) + 1;
    struct vs_hdr_prepare h;
    if (x <= p->faulty_op && vsr_header(n->eng, x, &h) && h.op == x)
        s->faulty_prepare = h;
}

static void
do_superblock(struct sim_node *n, const struct vs_vsr_persist *p)
{
    struct vs_vsr_state s;
    initial_state(n, &s);
    s.view = p->view;
    s.log_view = p->log_view;
    s.commit_max = p->commit_max;
    s.checkpoint_op = p->checkpoint_op;
    s.checkpoint_checksum = p->checkpoint_checksum;
    s.faulty_op = p->faulty_op;    /* the mark outlives a second crash */
    s.nonack_op = p->nonack_op;    /* and which part of it is a cut */
    faulty_prepare_fill(n, p, &s); /* and the header at its first op */
    struct vs_hdr_prepare cp;
    if (ckpt_header_find(&n->journal, &n->ckpt_prepare, p->checkpoint_op,
                         &cp)) {
        n->ckpt_prepare = cp;
        s.checkpoint_prepare = cp;
    }
    uint8_t buf[VSR_STATE_SIZE];
    vsr_state_encode(&s, buf);
    int rc = sb_write(&n->sb, buf, sizeof(buf));
    if (rc != 0) {
        sim_node_fail(n, "superblock write", rc);
        return;
    }
    n->m_sb_writes++;
    n->sb_durable = *p;
    struct sim_io_done e = {
        .kind = 2, .due = n->now + n->cfg.disk_delay, .persist = *p};
    io_push(n, &e);
}

static void
do_commit(struct sim_node *n, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a->frame;
    const uint8_t *body = a->body;
    uint32_t len = a->body_len;
    if (body == NULL && len > 0) {
        if (len > n->rbody_cap) {
            n->rbody = vs_xrealloc(n->rbody, len);
            n->rbody_cap = len;
        }
        long got = wal_read_body(&n->journal, a->op, n->rbody, n->rbody_cap);
        if (got < 0 || (uint32_t)got != len) {
            sim_node_fail(n, "journal body read for replay",
                          got < 0 ? (int)got : -EIO);
            return;
        }
        body = n->rbody;
        n->m_replayed++;
    }
    struct meta_op_ctx ctx = {
        .op = p->op,
        .timestamp = p->timestamp,
        .user_id = p->user_id,
        .operation = p->operation,
        .client = p->client,
        .request = p->request,
        .request_checksum = p->request_checksum,
    };
    meta_apply(n->state, &ctx, body, len, &n->res);
    vs_wbuf_reset(&n->body);
    if (commit_op_replies(p)) {
        commit_reply_body(p->operation, n->res.code, n->res.payload.data,
                          n->res.payload.len, &n->body);
        vs_wbuf_reset(&n->frame);
        /* DESIGN §4: a cached reply holds no replica id or view, so equal
         * state encodes to equal snapshots on every replica.
         * cfg.own_reply_bytes reproduces the old shard 0 that stamped its
         * own (the frame resealed with this replica's view and id). */
        commit_reply_frame(p, n->body.data, n->body.len, &n->frame);
        if (n->cfg.own_reply_bytes) {
            struct vs_header *rh = (struct vs_header *)n->frame.data;
            rh->f.view = vsr_view(n->eng);
            rh->f.replica = (uint8_t)n->cfg.replica;
            vs_frame_seal(rh);
        }
        meta_ct_record_reply(&n->ct, n->state, p->client, p->operation,
                             n->frame.data, n->frame.len);
    }
    if (n->cfg.hooks->committed)
        n->cfg.hooks->committed(n->cfg.hooks->ctx, n, p, body, len,
                                n->body.data, (uint32_t)n->body.len);
    int rc = vsr_on_commit_applied(n->eng, a->op, n->body.data,
                                   (uint32_t)n->body.len);
    VS_ASSERT(rc == 0);
    sim_xfer_table_at(n, a->op);
}

/* Phase 1 and 2 of a checkpoint when enough ops were applied (or now,
 * when `force`: the journal is full). */
static void
checkpoint(struct sim_node *n, int force)
{
    if (!n->up || n->ckpt_pending || n->cfg.ckpt_every == 0)
        return;
    uint64_t op = vsr_commit_min(n->eng);
    struct vs_vsr_persist d;
    vsr_durable(n->eng, &d);
    if (op <= d.checkpoint_op ||
        (!force && op < d.checkpoint_op + n->cfg.ckpt_every))
        return;
    VS_ASSERT(meta_hdr_c(n->state)->last_op == op);
    /* as shard 0: never a pairing without op's header (an installed
     * snapshot whose pairing a crash lost: the next op's checkpoint) */
    struct vs_hdr_prepare cp;
    if (!ckpt_header_find(&n->journal, &n->ckpt_prepare, op, &cp))
        return;
    vs_wbuf_reset(&n->snap);
    meta_snapshot_encode(n->state, &n->ct, &n->snap);
    struct vs_u128 sum;
    int rc = snapfile_write(&n->disk->io, n->meta_dir, n->snap.data,
                            n->snap.len, &sum);
    if (rc != 0) {
        sim_node_fail(n, "snapshot write", rc);
        return;
    }
    n->snap_op = op;
    n->snap_sum = sum;
    rc = vsr_checkpoint(n->eng, op, sum);
    if (rc != 0)
        return; /* a superblock write is in flight: later */
    n->ckpt_pending = 1;
    n->ckpt_op = op;
}

static void
do_truncate(struct sim_node *n, uint64_t op)
{
    if (wal_empty(&n->journal) || op > wal_last_op(&n->journal))
        return; /* nothing at or above op is held */
    int rc = wal_truncate_from(&n->journal, op);
    if (rc != 0)
        sim_node_fail(n, "journal truncate", rc);
    n->m_truncations++;
}

/* Repair: the stored prepare of a.op, if it is the one asked for (a
 * Prepare of a.view when it is the primary's retransmit). */
static void
do_send_prepare(struct sim_node *n, const struct vs_vsr_action *a)
{
    const struct vs_hdr_prepare *h = wal_header(&n->journal, a->op);
    if (h == NULL || !vs_u128_eq(h->f.checksum, a->checksum))
        return;
    uint32_t blen = h->f.size - VS_HEADER_SIZE;
    uint8_t *f = vs_xmalloc(h->f.size);
    memcpy(f, h, VS_HEADER_SIZE);
    long got = wal_read_body(&n->journal, a->op, f + VS_HEADER_SIZE, blen);
    if (got == (long)blen) {
        if (a->retransmit) /* as shard 0: a Prepare of the primary's view */
            ((struct vs_header *)f)->f.view = a->view;
        else
            ((struct vs_header *)f)->f.command = VS_CMD_REPAIR_PREPARE;
        n->cfg.hooks->send(n->cfg.hooks->ctx, n, a->replica, f, h->f.size);
    }
    free(f);
}

static void
node_drain(struct sim_node *n)
{
    struct vs_vsr_action a;
    while (n->up && vsr_pop(n->eng, &a)) {
        switch (a.kind) {
        case VSR_ACT_SEND:
            n->cfg.hooks->send(n->cfg.hooks->ctx, n, a.replica, a.frame,
                               a.size);
            break;
        case VSR_ACT_JOURNAL_APPEND:
            do_append(n, &a);
            break;
        case VSR_ACT_SUPERBLOCK_WRITE:
            do_superblock(n, &a.persist);
            break;
        case VSR_ACT_COMMIT:
            do_commit(n, &a);
            break;
        case VSR_ACT_REPLY:
            n->cfg.hooks->to_client(n->cfg.hooks->ctx, n, a.client, a.frame,
                                    a.size);
            break;
        case VSR_ACT_JOURNAL_TRUNCATE:
            do_truncate(n, a.op);
            break;
        case VSR_ACT_SEND_PREPARE:
            do_send_prepare(n, &a);
            break;
        case VSR_ACT_STATE_TRANSFER:
            sim_xfer_start(n, &a);
            break;
        default:
            snprintf(n->fatal, sizeof(n->fatal),
                     "the binding does not know engine action %d", a.kind);
            VS_ASSERT(!"unknown engine action");
        }
    }
    checkpoint(n, 0);
}

/* ----------------------------------------------------------- inputs */

void
sim_node_message(struct sim_node *n, const void *frame, uint32_t len)
{
    if (!n->up)
        return;
    if (!sim_xfer_frame(n, frame, len))
        (void)vsr_on_message(n->eng, frame, len);
    node_drain(n);
}

static void
answer_status(struct sim_node *n, const struct vs_hdr_request *req,
              uint32_t status)
{
    struct vs_hdr_reply r;
    commit_status_reply(&r, n->cfg.cluster, vsr_view(n->eng),
                        (uint8_t)n->cfg.replica, req, status);
    n->cfg.hooks->to_client(n->cfg.hooks->ctx, n, req->client, &r, sizeof(r));
}

void
sim_node_request(struct sim_node *n, const struct vs_hdr_request *req,
                 const void *body, uint32_t len)
{
    if (!n->up)
        return;
    int internal = vs_u128_is_zero(req->client);
    if (!vsr_is_settled_primary(n->eng)) {
        /* a backup's client table may lag the primary's: only the
         * primary answers (DESIGN §3: backups forward to it) */
        if (!internal)
            answer_status(n, req, VS_E_TRANSIENT_NOT_COMMITTED);
        return;
    }
    if (!internal && req->operation != VS_OP_REGISTER) {
        const uint8_t *cached;
        size_t cached_len;
        enum meta_ct_outcome o = meta_ct_check_request(
            &n->ct, n->state, req->client, req->session, req->request,
            req->request_checksum, &cached, &cached_len);
        uint8_t reason;
        enum meta_ct_action act = meta_ct_answer(o, req->client, &reason);
        if (act == META_CT_REPLY) {
            n->cfg.hooks->to_client(n->cfg.hooks->ctx, n, req->client, cached,
                                    (uint32_t)cached_len);
            return;
        }
        if (act == META_CT_EVICT) {
            struct vs_hdr_eviction e;
            commit_eviction(&e, n->cfg.cluster, vsr_view(n->eng),
                            (uint8_t)n->cfg.replica, req->client, reason);
            n->cfg.hooks->to_client(n->cfg.hooks->ctx, n, req->client, &e,
                                    sizeof(e));
            return;
        }
    }
    int rc = vsr_on_request(n->eng, req, body, len, 1000000ull + n->now);
    if (rc == -ENOSPC) {
        checkpoint(n, 1); /* as shard 0 does: the journal is full */
        node_drain(n);
    }
    switch (rc) {
    case 0:
        break;
    case -EAGAIN:
    case -EREMOTE:
    case -EALREADY:
    case -EBUSY:
    case -ENOSPC: /* the journal is full until a checkpoint */
        if (!internal)
            answer_status(n, req, VS_E_TRANSIENT_NOT_COMMITTED);
        return;
    default:
        if (!internal)
            answer_status(n, req, VS_E_INVALID_COMMAND);
        return;
    }
    node_drain(n);
}

int
sim_node_append_pending(const struct sim_node *n, uint64_t op,
                        struct vs_u128 checksum)
{
    for (size_t i = 0; i < n->nio; i++)
        if (n->io[i].kind == 1 && !n->io[i].covered && n->io[i].op == op &&
            vs_u128_eq(n->io[i].checksum, checksum))
            return 1;
    return 0;
}

void
sim_node_tick(struct sim_node *n)
{
    if (!n->up)
        return;
    /* completions that are due, in issue order */
    size_t k = 0;
    if (n->unsynced > 0 && n->nio > 0 && n->io[0].due <= n->now) {
        /* the pass's fsync: every append written so far is durable
         * before any completion is reported */
        int rc = wal_sync(&n->journal);
        if (rc != 0) {
            sim_node_fail(n, "journal fsync", rc);
            return;
        }
        n->unsynced = 0;
    }
    while (k < n->nio && n->io[k].due <= n->now && n->up) {
        struct sim_io_done e = n->io[k++];
        if (e.kind == 1) {
            n->io[k - 1].covered = 1; /* reported now */
            int rc = vsr_on_journal_durable(n->eng, e.op, e.checksum);
            VS_ASSERT(rc == 0 || rc == -ESTALE); /* -ESTALE: truncated */
            if (rc == 0)
                om_durable(n, e.op, e.checksum);
            for (size_t j = k; rc == 0 && j < n->nio; j++)
                if (n->io[j].kind == 1 && n->io[j].op == e.op &&
                    vs_u128_eq(n->io[j].checksum, e.checksum))
                    n->io[j].covered = 1;
        } else {
            int rc = vsr_on_superblock_durable(n->eng, &e.persist);
            VS_ASSERT(rc == 0);
            if (n->ckpt_pending && e.persist.checkpoint_op == n->ckpt_op) {
                rc = wal_drain_margin(&n->journal, n->ckpt_op,
                                      vsr_repair_margin(n->eng));
                if (rc != 0) {
                    sim_node_fail(n, "journal drain", rc);
                    return;
                }
                n->ckpt_pending = 0;
                n->last_ckpt_op = n->ckpt_op;
                n->m_checkpoints++;
                if (n->cfg.hooks->checkpointed)
                    n->cfg.hooks->checkpointed(n->cfg.hooks->ctx, n,
                                               e.persist.checkpoint_op,
                                               e.persist.checkpoint_checksum);
            }
        }
        node_drain(n);
    }
    if (!n->up)
        return;
    if (k > 0) {
        memmove(n->io, n->io + k, (n->nio - k) * sizeof(*n->io));
        n->nio -= k;
    }
    vsr_tick(n->eng);
    node_drain(n);
    sim_xfer_tick(n);
    node_drain(n);
    if (n->up && n->rebuilt) {
        struct vs_vsr_info info;
        vsr_info(n->eng, &info);
        if (!info.rebuilding)
            n->rebuilt = 0; /* caught up: later boots are plain restarts */
    }
}
