/*
 * shard/zero/install_state.c - installing a fetched metadata state; the
 * order and its crash cases are in install_state.h.
 *
 * Invariants: nothing is written before every artifact decoded into
 * scratch (the snapshot is decoded once: the instances get copies of the
 * scratch's pages); the published op only moves forward (lr_restore refuses
 * below it); the private reply table is changed only together with the
 * instances it describes. Process: shard 0 only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/storage/snapshot_install.h"
#include "shard/zero/install_state.h"

int
zinst_check(const struct meta_caps *caps, const struct zt_artifacts *a,
            struct zinst_scratch *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    meta_ct_init(&s->ct);
    int rc = -EPROTO;
    if (a->prepare == NULL) {
        snprintf(err, errlen,
                 "the server sent no header for the snapshot's "
                 "op: a restart could not continue the chain");
        goto fail;
    }
    memcpy(&s->prepare, a->prepare, sizeof(s->prepare));
    if (s->prepare.f.command != VS_CMD_PREPARE ||
        s->prepare.op != a->snapshot_op ||
        !vs_prepare_verify_identity(&s->prepare)) {
        snprintf(err, errlen,
                 "the header sent for op %llu is not a valid prepare of it",
                 (unsigned long long)a->snapshot_op);
        goto fail;
    }
    size_t size = meta_state_size(caps);
    /* zero pages: only what decodes is touched (and copied later) */
    void *st = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED) {
        snprintf(err, errlen, "out of memory for the scratch state");
        rc = -ENOMEM;
        goto fail;
    }
    s->state = st;
    s->state_len = size;
    if (meta_state_init(st, caps) != 0) {
        snprintf(err, errlen, "metadata capacities are invalid");
        goto fail;
    }
    enum meta_snap_status ss =
        meta_snapshot_decode(a->snapshot, a->snapshot_len, st, &s->ct);
    if (ss != META_SNAP_OK) {
        snprintf(err, errlen, "the snapshot of op %llu does not decode: %s",
                 (unsigned long long)a->snapshot_op, meta_snap_status_str(ss));
        goto fail;
    }
    if (meta_hdr_c(st)->last_op != a->snapshot_op) {
        snprintf(err, errlen,
                 "the snapshot holds op %llu, the manifest op %llu",
                 (unsigned long long)meta_hdr_c(st)->last_op,
                 (unsigned long long)a->snapshot_op);
        goto fail;
    }
    int trc = meta_ct_transfer_decode(a->table, a->table_len, &s->img);
    if (trc != 0) {
        snprintf(err, errlen, "the client table does not decode (%s)",
                 strerror(-trc));
        goto fail;
    }
    /* it must fit the configured session slots, as installing it would
     * require */
    uint32_t need = s->img.count;
    if (s->img.version == 3 && s->img.count > 0)
        need = s->img.e[s->img.count - 1].slot + 1;
    if (need > meta_tab_cap(st, META_TAB_SESSION)) {
        snprintf(err, errlen,
                 "the client table needs %u session slots, this node has %u",
                 need, meta_tab_cap(st, META_TAB_SESSION));
        goto fail;
    }
    s->table_op = a->table_frontier;
    return 0;
fail:
    zinst_scratch_fini(s);
    return rc;
}

void
zinst_scratch_fini(struct zinst_scratch *s)
{
    meta_ct_image_fini(&s->img);
    meta_ct_fini(&s->ct);
    if (s->state != NULL)
        munmap(s->state, s->state_len);
    memset(s, 0, sizeof(*s));
}

struct zinst_fill {
    const struct zinst_scratch *sc;
    int rc;
};

/* lr_apply_fn for lr_restore: the decoded scratch into one instance. The
 * state is pointer-free, so its bytes are position independent; the
 * scratch's untouched pages are zero like the zeroed instance's, so only
 * pages holding a non-zero byte are copied (a large, mostly empty state
 * costs what it holds, as a decode would). */
static void
zinst_fill_fn(void *instance, size_t size, void *arg)
{
    static const uint8_t zero[4096];
    struct zinst_fill *f = arg;
    if (size != f->sc->state_len) {
        f->rc = -EINVAL;
        return;
    }
    lr_instance_zero(instance, size);
    const uint8_t *from = f->sc->state;
    uint8_t *to = instance;
    for (size_t off = 0; off < size; off += sizeof(zero)) {
        size_t n = size - off < sizeof(zero) ? size - off : sizeof(zero);
        if (memcmp(from + off, zero, n) != 0)
            memcpy(to + off, from + off, n);
    }
}

int
zinst_write(struct vs_sio *io, const char *meta_dir, struct wal *journal,
            uint64_t commit_min, struct vs_lr *lr, struct zinst_scratch *sc,
            struct meta_client_table *ct, const struct zt_artifacts *a,
            struct vs_u128 *sum, char *err, size_t errlen)
{
    /* 1-3 of snapshot_install.h: journal cut, snapshot.bin, journal
     * emptied */
    int rc = snapinst_store(io, meta_dir, journal, commit_min, a->snapshot,
                            a->snapshot_len, a->snapshot_op, sum, err, errlen);
    if (rc != 0)
        return rc;
    /* 4. both left-right instances */
    struct zinst_fill f = {.sc = sc};
    rc = lr_restore(lr, a->snapshot_op, zinst_fill_fn, &f);
    if (rc != 0 || f.rc != 0) {
        snprintf(err, errlen,
                 "state transfer: restoring the state at op %llu failed (%s)",
                 (unsigned long long)a->snapshot_op,
                 strerror(rc != 0 ? -rc : -f.rc));
        return -VS_EFATAL;
    }
    /* the snapshot's cached replies move to the private table */
    meta_ct_fini(ct);
    *ct = sc->ct;
    meta_ct_init(&sc->ct);
    return 0;
}

static int
session_agrees(const struct meta_session *s, const struct meta_ct_image *img,
               const struct meta_ct_image_entry *e)
{
    if (s == NULL || !vs_u128_eq(s->client_id, e->client) ||
        s->epoch != e->epoch || s->user_id != e->user_id ||
        s->watermark != e->watermark ||
        !vs_u128_eq(s->watermark_checksum, e->watermark_checksum))
        return 0;
    return img->version != 3 || (s->created_op == e->created_op &&
                                 s->latest_commit == e->latest_commit);
}

int
zinst_table(struct meta_client_table *ct, const void *state,
            const struct meta_ct_image *img, char *err, size_t errlen)
{
    uint32_t live = meta_hdr_c(state)->count[META_TAB_SESSION];
    if (live != img->count) {
        snprintf(err, errlen,
                 "the client table holds %u sessions, the state at its op %u",
                 img->count, live);
        return -EPROTO;
    }
    for (uint32_t i = 0; i < img->count; i++) {
        const struct meta_ct_image_entry *e = &img->e[i];
        uint32_t slot = img->version == 3 ? e->slot : i;
        if (!session_agrees(meta_session_at(state, slot), img, e)) {
            snprintf(err, errlen,
                     "session slot %u of the client table disagrees with the "
                     "state at its op",
                     slot);
            return -EPROTO;
        }
    }
    meta_ct_install_replies(ct, state, img);
    return 0;
}
