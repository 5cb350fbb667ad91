/*
 * tests/sim/sim_xfer.c - state transfer for a simulated replica: shard
 * 0's zt module bound to the simulated disk, network and engine; see
 * sim_xfer.h.
 * Callers: tests/sim/sim_node.c only (one thread).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "common/checksum.h"
#include "common/layout.h"
#include "common/mem.h"
#include "shard/meta/client_table.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/storage/xfer_store.h"
#include "shard/zero/transfer.h"
#include "tests/sim/sim_node.h"
#include "tests/sim/sim_xfer.h"

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
    s->checkpoint_op = n->snap_op;
    s->checkpoint_checksum = n->snap_sum;
}

static int
hook_encode_table(void *ctx, struct vs_wbuf *w, uint64_t *frontier)
{
    struct sim_node *n = ctx;
    *frontier = vsr_commit_min(n->eng);
    VS_ASSERT(meta_hdr_c(n->state)->last_op == *frontier);
    return meta_ct_transfer_encode(&n->ct, n->state, w);
}

static int
hook_checkpoint_prepare(void *ctx, uint64_t op, struct vs_hdr_prepare *out)
{
    struct sim_node *n = ctx;
    if (op != 0 && n->ckpt_prepare.op == op &&
        !vs_u128_is_zero(n->ckpt_prepare.f.checksum)) {
        *out = n->ckpt_prepare;
        return 0;
    }
    const struct vs_hdr_prepare *h = wal_header(&n->journal, op);
    if (h == NULL)
        return -ENOENT;
    *out = *h;
    return 0;
}

static void
hook_send(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct sim_node *n = ctx;
    n->cfg.hooks->send(n->cfg.hooks->ctx, n, peer, frame, (uint32_t)len);
}

/* Installs the table image into state + private table only when it
 * describes the same op as the state (sim_xfer.h, step 3). */
static int
table_install(void *state, struct meta_client_table *ct,
              const struct meta_ct_image *img, uint64_t frontier,
              uint64_t state_op, int *installed)
{
    *installed = 0;
    if (frontier != state_op)
        return 0;
    int rc = meta_ct_install_sessions(state, img);
    if (rc != 0)
        return rc;
    meta_ct_install_replies(ct, state, img);
    *installed = 1;
    return 0;
}

static int
hook_install(void *ctx, const uint8_t *snap, size_t slen, uint64_t sop,
             const uint8_t *table, size_t tlen, uint64_t top,
             uint64_t commit_op, uint64_t commit_max, char *err, size_t errlen)
{
    struct sim_node *n = ctx;
    struct meta_ct_image img;
    void *st = NULL;
    struct meta_client_table ct;
    int ct_live = 0; /* ct holds a scratch table to free */
    memset(&img, 0, sizeof(img));
    int rc, installed = 0;
    if (n->xfer_crash_at != 0) { /* scenarios: a crash inside the install */
        sim_disk_arm_crash(n->disk, n->xfer_crash_at);
        n->xfer_crash_at = 0;
    }
    if (snap == NULL || table == NULL || sop == 0 || commit_op < sop ||
        top > commit_op || commit_max < commit_op) {
        snprintf(err, errlen,
                 "the offer is inconsistent (snapshot op %llu, "
                 "table %llu, commit %llu/%llu)",
                 (unsigned long long)sop, (unsigned long long)top,
                 (unsigned long long)commit_op, (unsigned long long)commit_max);
        rc = -EPROTO;
        goto fail;
    }
    /* 1. everything decodes into scratch before anything changes */
    rc = meta_ct_transfer_decode(table, tlen, &img);
    if (rc != 0) {
        snprintf(err, errlen, "the client table does not decode (%d)", rc);
        rc = -EPROTO;
        goto fail;
    }
    uint64_t cm = vsr_commit_min(n->eng);
    if (sop <= cm) {
        /* 4. not ahead: the local state machine stays */
        rc = table_install(n->state, &n->ct, &img, top, cm, &installed);
        if (rc != 0) {
            snprintf(err, errlen, "the client table does not fit (%d)", rc);
            rc = -EPROTO;
            goto fail;
        }
        rc = vsr_on_state_installed(n->eng, sop, (struct vs_u128){0, 0},
                                    n->snap_sum, commit_max);
        if (rc != 1) {
            snprintf(err, errlen, "the engine refused a table install (%d)",
                     rc);
            rc = rc < 0 ? rc : -EINVAL;
            goto fail;
        }
        n->m_xfer_table_only++;
        n->m_xfer_table_installed += (uint64_t)installed;
        meta_ct_image_fini(&img);
        return 0;
    }
    const struct vs_hdr_prepare *prep = zt_install_prepare(n->zt);
    if (prep == NULL) {
        /* without it the pairing cannot restart the hash chain */
        snprintf(err, errlen,
                 "the offer carries no verified header for "
                 "snapshot op %llu",
                 (unsigned long long)sop);
        rc = -EPROTO;
        goto fail;
    }
    st = vs_xcalloc(1, meta_state_size(&n->cfg.caps));
    VS_ASSERT(meta_state_init(st, &n->cfg.caps) == 0);
    meta_ct_init(&ct);
    ct_live = 1;
    enum meta_snap_status ss = meta_snapshot_decode(snap, slen, st, &ct);
    if (ss != META_SNAP_OK || meta_hdr_c(st)->last_op != sop) {
        snprintf(err, errlen, "the snapshot of op %llu does not decode: %s",
                 (unsigned long long)sop,
                 ss != META_SNAP_OK ? meta_snap_status_str(ss)
                                    : "its op differs");
        rc = -EPROTO;
        goto fail;
    }
    rc = table_install(st, &ct, &img, top, sop, &installed);
    if (rc != 0) {
        snprintf(err, errlen, "the client table does not fit (%d)", rc);
        rc = -EPROTO;
        goto fail;
    }
    /* 2. storage, in the crash-safe order. No COMMIT is outstanding here
     * (the binding applies each one before the next input), so the
     * engine takes the install below. */
    struct vs_hdr_prepare keep = *prep;
    struct vs_u128 sum;
    rc =
        xstore_install_snapshot(&n->disk->io, n->meta_dir, &n->journal, cm, sop,
                                snap, slen, vs_checksum(snap, slen).lo, &sum);
    if (rc != 0) {
        snprintf(err, errlen, "storing the snapshot failed (%d)", rc);
        n->xfer_fatal = rc;
        goto fail;
    }
    free(n->state);
    n->state = st;
    st = NULL;
    meta_ct_fini(&n->ct);
    n->ct = ct; /* moved */
    n->snap_op = sop;
    n->snap_sum = sum;
    n->ckpt_prepare = keep;
    rc = vsr_on_state_installed(n->eng, sop, keep.f.checksum, sum, commit_max);
    VS_ASSERT(rc == 0); /* armed, op > commit_min, nothing outstanding */
    /* the pairing's durability completes the checkpoint at sop */
    n->ckpt_pending = 1;
    n->ckpt_op = sop;
    n->m_xfer_installs++;
    n->m_xfer_table_installed += (uint64_t)installed;
    meta_ct_image_fini(&img);
    return 0;
fail:
    free(st);
    if (ct_live)
        meta_ct_fini(&ct);
    meta_ct_image_fini(&img);
    return rc;
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
        .checkpoint_prepare = hook_checkpoint_prepare,
        .send = hook_send,
        .install = hook_install,
    };
    char err[200];
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
}

int
sim_xfer_active(const struct sim_node *n)
{
    return n->zt != NULL && zt_fetching(n->zt);
}

/* The engine is armed but no session runs: give the transfer up. */
static void
settle(struct sim_node *n)
{
    struct vs_vsr_info info;
    vsr_info(n->eng, &info);
    if (info.transferring && !zt_fetching(n->zt)) {
        VS_ASSERT(vsr_transfer_end(n->eng) == 0);
        n->m_xfer_abandoned++;
    }
}

static void
after_zt(struct sim_node *n)
{
    if (n->xfer_fatal != 0) {
        int rc = n->xfer_fatal;
        n->xfer_fatal = 0;
        sim_node_fail(n, "state transfer install", rc);
        return;
    }
    settle(n);
}

int
sim_xfer_frame(struct sim_node *n, const void *frame, uint32_t len)
{
    const struct vs_header *h = frame;
    if (len < VS_HEADER_SIZE || !zt_is_transfer_command(h->f.command))
        return 0;
    if (n->zt == NULL || h->f.replica >= n->cfg.replica_count ||
        h->f.replica == n->cfg.replica)
        return 1;
    zt_on_frame(n->zt, h->f.replica, frame, len);
    after_zt(n);
    return 1;
}

static unsigned
target(const struct sim_node *n, unsigned named)
{
    int p = vsr_primary(n->eng);
    if (p >= 0 && (unsigned)p != n->cfg.replica)
        return (unsigned)p;
    return named;
}

void
sim_xfer_start(struct sim_node *n, const struct vs_vsr_action *a)
{
    n->m_state_transfer++;
    if (n->zt == NULL)
        return;
    unsigned peer = target(n, a->replica);
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
    rc = zt_start_nonce(n->zt, (uint8_t)peer, d.view, nonce);
    if (rc == 0)
        n->m_xfer_begun++;
    after_zt(n);
}

void
sim_xfer_tick(struct sim_node *n)
{
    if (n->zt == NULL)
        return;
    zt_tick(n->zt);
    after_zt(n);
    if (!n->up || !zt_fetching(n->zt))
        return;
    struct zt_info info;
    zt_info(n->zt, &info);
    int p = vsr_primary(n->eng);
    if (p >= 0 && (unsigned)p != n->cfg.replica &&
        (p != info.peer || zt_wants_peer(n->zt))) {
        zt_retarget(n->zt, (uint8_t)p);
        n->m_xfer_retargets++;
        after_zt(n);
    }
}
