/*
 * tests/sim/sim_xfer.c - state transfer for a simulated replica: shard
 * 0's zt module bound to the simulated disk, network and engine the way
 * shard/zero/commit.c binds it (commit_xfer_*); see sim_xfer.h.
 * Callers: tests/sim/sim_node.c only (one thread).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "common/layout.h"
#include "common/mem.h"
#include "shard/meta/client_table.h"
#include "shard/storage/snapshot_install.h"
#include "shard/zero/install_state.h"
#include "shard/zero/transfer.h"
#include "tests/sim/sim_node.h"
#include "tests/sim/sim_xfer.h"

/* Ticks after a fetch ended without an install before the next one is
 * armed (shard 0: COMMIT_XFER_BACKOFF_TICKS). */
#define SIM_XFER_BACKOFF_TICKS 100u

/* ------------------------------------------------------ zt's hooks */

static void
hook_serve_state(void *ctx, struct zt_serve_state *s)
{
    struct sim_node *n = ctx;
    struct vs_vsr_persist d;
    vsr_durable(n->eng, &d);
    s->caught_up_primary = vsr_is_settled_primary(n->eng) &&
                           vsr_commit_min(n->eng) == vsr_commit_max(n->eng);
    s->view = d.view;
    s->commit_min = vsr_commit_min(n->eng);
    s->commit_max = vsr_commit_max(n->eng);
    /* a checkpoint in progress may have replaced snapshot.bin already:
     * offer nothing until its pairing is durable */
    if (!n->ckpt_pending) {
        s->checkpoint_op = d.checkpoint_op;
        s->checkpoint_checksum = d.checkpoint_checksum;
        if (n->ckpt_prepare.op == d.checkpoint_op)
            s->checkpoint_prepare = n->ckpt_prepare;
    }
}

static int
hook_encode_table(void *ctx, struct vs_wbuf *w, uint64_t *frontier)
{
    struct sim_node *n = ctx;
    *frontier = vsr_commit_min(n->eng);
    VS_ASSERT(meta_hdr_c(n->state)->last_op == *frontier);
    return meta_ct_transfer_encode(&n->ct, n->state, w);
}

/* A faulty server (scenarios, n->xfer_serve_empty): every StateChunk
 * zt built leaves as the same chunk with zero bytes, sealed, so only the
 * receiver's own rules (the frame check: a chunk carries 1..chunk_max
 * bytes) can refuse it. */
static void
send_empty_chunk(struct sim_node *n, uint8_t peer, const void *frame)
{
    struct vs_hdr_state_chunk h;
    memcpy(&h, frame, sizeof(h));
    h.f.size = VS_HEADER_SIZE;
    h.f.checksum_body = vs_body_checksum(NULL, 0);
    vs_frame_seal((struct vs_header *)&h);
    n->m_xfer_emptied++;
    n->cfg.hooks->send(n->cfg.hooks->ctx, n, peer, &h, VS_HEADER_SIZE);
}

static void
hook_send(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct sim_node *n = ctx;
    const struct vs_header *h = frame;
    if (n->xfer_serve_empty && len >= VS_HEADER_SIZE &&
        h->f.command == VS_CMD_STATE_CHUNK) {
        send_empty_chunk(n, peer, frame);
        return;
    }
    n->cfg.hooks->send(n->cfg.hooks->ctx, n, peer, frame, (uint32_t)len);
}

static void
table_drop(struct sim_node *n)
{
    if (n->xt_pending)
        zinst_scratch_fini(n->xt);
    n->xt_pending = 0;
}

void
sim_xfer_table_at(struct sim_node *n, uint64_t op)
{
    if (!n->xt_pending || op != n->xt->table_op)
        return;
    char err[160];
    if (zinst_table(&n->ct, n->state, &n->xt->img, err, sizeof(err)) == 0)
        n->m_xfer_table_installed++;
    else
        n->m_xfer_table_refused++;
    table_drop(n);
}

/* The state zinst_check decoded becomes the live one, the snapshot's
 * replies the private table (the simulator's "both left-right
 * instances", zinst_write's restore: one private state here). */
static void
restore(struct sim_node *n, struct zinst_scratch *sc)
{
    size_t size = meta_state_size(&n->cfg.caps);
    VS_ASSERT(size == sc->state_len);
    void *st = vs_xmalloc(size);
    memcpy(st, sc->state, size);
    free(n->state);
    n->state = st;
    meta_ct_fini(&n->ct);
    n->ct = sc->ct; /* moved, as zinst_write does */
    meta_ct_init(&sc->ct);
}

/* zt_hooks.install: the order of install_state.h (shard 0's
 * commit_xfer_install). */
static int
hook_install(void *ctx, const struct zt_artifacts *a, char *err, size_t errlen)
{
    struct sim_node *n = ctx;
    if (n->xfer_crash_at != 0) { /* scenarios: a crash inside the install */
        sim_disk_arm_crash(n->disk, n->xfer_crash_at);
        n->xfer_crash_at = 0;
    }
    /* the binding applies each COMMIT before its next input */
    if (vsr_commit_outstanding(n->eng)) {
        snprintf(err, errlen, "a commit is being applied; fetch again");
        return -EAGAIN;
    }
    struct zinst_scratch sc;
    int rc = zinst_check(&n->cfg.caps, a, &sc, err, errlen);
    if (rc != 0)
        return rc;
    uint64_t local = vsr_commit_min(n->eng);
    struct vs_u128 sum = {0, 0};
    int ahead = a->snapshot_op > local;
    if (ahead) {
        rc = snapinst_store(&n->disk->io, n->meta_dir, &n->journal, local,
                            a->snapshot, a->snapshot_len, a->snapshot_op, &sum,
                            err, errlen);
        if (rc != 0) {
            zinst_scratch_fini(&sc);
            if (rc != -ENOSPC)
                n->xfer_fatal = rc;
            return rc;
        }
        restore(n, &sc);
        /* the pairing the engine queues records op S's header; its
         * durability completes a checkpoint at S */
        n->ckpt_prepare = sc.prepare;
        n->ckpt_pending = 1;
        n->ckpt_op = a->snapshot_op;
        n->snap_op = a->snapshot_op;
        n->snap_sum = sum;
    }
    rc = vsr_on_state_installed(n->eng, a->snapshot_op, sc.prepare.f.checksum,
                                sum, a->commit_max);
    if (rc < 0) {
        zinst_scratch_fini(&sc);
        snprintf(err, errlen, "the engine refused the install (%d)", rc);
        if (ahead)
            n->xfer_fatal = -VS_EFATAL;
        return rc;
    }
    if (ahead)
        n->m_xfer_installs++;
    else
        n->m_xfer_table_only++;
    /* the client table at its op T: now, or when the walk applies T */
    table_drop(n);
    uint64_t at = vsr_commit_min(n->eng);
    if (sc.table_op < at) {
        zinst_scratch_fini(&sc); /* behind the local state: kept */
        return 0;
    }
    *n->xt = sc;
    n->xt_pending = 1;
    sim_xfer_table_at(n, at);
    return 0;
}

/* ---------------------------------------------------------- binding */

int
sim_xfer_open(struct sim_node *n)
{
    if (n->cfg.replica_count < 2)
        return 0;
    struct zt_opts o = {
        .cluster = n->cfg.cluster,
        .group = VS_METADATA_GROUP,
        .self = (uint8_t)n->cfg.replica,
        .metadata_dir = n->meta_dir,
        .io = &n->disk->io,
        .chunk_max = 4096, /* many chunks per snapshot: rare paths common */
        .stall_ticks = 50,
    };
    struct zt_hooks h = {
        .ctx = n,
        .serve_state = hook_serve_state,
        .encode_table = hook_encode_table,
        .send = hook_send,
        .install = hook_install,
    };
    char err[200];
    if (n->xt == NULL)
        n->xt = vs_xcalloc(1, sizeof(*n->xt));
    n->xt_pending = 0;
    n->xt_backoff = 0;
    n->xt_want = 0;
    return zt_create(&o, &h, &n->zt, err, sizeof(err));
}

void
sim_xfer_close(struct sim_node *n)
{
    if (n->zt != NULL) {
        struct zt_info info;
        zt_info(n->zt, &info);
        n->m_xfer_served += info.served_offers;
        n->m_xfer_served_bytes += info.served_bytes;
    }
    zt_destroy(n->zt);
    n->zt = NULL;
    table_drop(n);
}

void
sim_xfer_free(struct sim_node *n)
{
    sim_xfer_close(n);
    free(n->xt);
    n->xt = NULL;
}

int
sim_xfer_active(const struct sim_node *n)
{
    return n->zt != NULL && zt_fetching(n->zt);
}

/* After each transfer input (shard 0's commit_xfer_reconcile): a fatal
 * install stops the node; the engine is disarmed when the fetch ended
 * without an install, a fetch the engine no longer wants is abandoned,
 * a new primary is retargeted, a fetch that gave up on its peer ends. */
static void
reconcile(struct sim_node *n)
{
    if (n->xfer_fatal != 0) {
        int rc = n->xfer_fatal;
        n->xfer_fatal = 0;
        sim_node_fail(n, "state transfer install", rc);
        return;
    }
    struct vs_vsr_info in;
    vsr_info(n->eng, &in);
    int fetching = zt_fetching(n->zt);
    if (in.transferring && !fetching) {
        n->xt_backoff = SIM_XFER_BACKOFF_TICKS;
        VS_ASSERT(vsr_transfer_end(n->eng) == 0);
        n->m_xfer_abandoned++;
        return;
    }
    if (!in.transferring && fetching) {
        zt_abandon(n->zt, "the engine is not transferring");
        return;
    }
    if (!fetching)
        return;
    struct zt_info zi;
    zt_info(n->zt, &zi);
    int p = vsr_primary(n->eng);
    if (p >= 0 && (unsigned)p != n->cfg.replica && p != zi.peer) {
        zt_retarget(n->zt, (uint8_t)p);
        n->m_xfer_retargets++;
    } else if (zt_wants_peer(n->zt)) {
        zt_abandon(n->zt, "the primary stopped answering");
    }
}

int
sim_xfer_frame(struct sim_node *n, const void *frame, uint32_t len)
{
    const struct vs_header *h = frame;
    if (len < VS_HEADER_SIZE || !zt_is_transfer_command(h->f.command))
        return 0;
    /* the sender as an authenticated link names it */
    if (n->zt == NULL || h->f.replica >= n->cfg.replica_count ||
        h->f.replica == n->cfg.replica)
        return 1;
    zt_on_frame(n->zt, h->f.replica, frame, len);
    reconcile(n);
    return 1;
}

void
sim_xfer_start(struct sim_node *n, const struct vs_vsr_action *a)
{
    n->m_state_transfer++;
    if (n->zt == NULL)
        return;
    if (n->xt_backoff > 0) {
        /* the last fetch failed a moment ago: armed when the back-off
         * ends (the engine does not report the same need twice) */
        n->xt_want = 1;
        n->xt_want_replica = a->replica;
        return;
    }
    n->xt_want = 0;
    int p = vsr_primary(n->eng);
    unsigned peer =
        p >= 0 && (unsigned)p != n->cfg.replica ? (unsigned)p : a->replica;
    if (peer == n->cfg.replica || peer >= n->cfg.replica_count)
        return;
    int rc = vsr_transfer_begin(n->eng);
    if (rc != 0 && rc != -EALREADY)
        return;
    struct vs_vsr_persist d;
    vsr_durable(n->eng, &d);
    struct vs_u128 nonce = {0, 0};
    while (vs_u128_is_zero(nonce)) {
        nonce.lo = sim_node_rand(n);
        nonce.hi = sim_node_rand(n);
    }
    if (zt_start_nonce(n->zt, (uint8_t)peer, d.view, nonce) == 0)
        n->m_xfer_begun++;
}

void
sim_xfer_tick(struct sim_node *n)
{
    if (n->zt == NULL)
        return;
    if (n->xt_backoff > 0 && --n->xt_backoff == 0 && n->xt_want) {
        struct vs_vsr_action t;
        memset(&t, 0, sizeof(t));
        t.kind = VSR_ACT_STATE_TRANSFER;
        t.replica = (uint8_t)n->xt_want_replica;
        sim_xfer_start(n, &t);
        n->m_state_transfer--; /* the same need, counted once */
    }
    zt_tick(n->zt);
    reconcile(n);
}
