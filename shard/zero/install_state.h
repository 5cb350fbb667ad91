/*
 * shard/zero/install_state.h - shard 0 installs the metadata state a
 * state transfer fetched (shard/zero/transfer.h): the primary's snapshot
 * payload at op S, its client table at op T (its commit_min when the
 * offer was built, S <= T) and op S's stored prepare header.
 *
 * Two steps, so that a refusal changes nothing:
 *  zinst_check  decodes everything into scratch (a private instance, the
 *               table image) and checks it: the snapshot decodes at the
 *               configured capacities and holds op S, the header is a
 *               Prepare of op S whose identity checksum verifies, the
 *               table decodes and fits the configured session slots.
 *               -EPROTO with one line, nothing on disk or in memory
 *               changed.
 *  zinst_write  (only when S is above the local commit_min) in this
 *               order, each step durable before the next:
 *                 1-3. snapinst_store (shard/storage/snapshot_install.h):
 *                    the journal cut above commit_min, snapshot.bin :=
 *                    payload + trailer (atomic), the journal emptied;
 *                 4. the state is restored into both left-right instances
 *                    at op S (lr_restore: decoded into the standby, flip,
 *                    readers drained, then the other one), so data shards
 *                    see the published op jump forward, never back;
 *                    partition stats live outside the instances and are
 *                    untouched; the private reply table is rebuilt from
 *                    the snapshot's. The snapshot is decoded once, by
 *                    zinst_check; the instances get copies of its pages.
 *               The caller then hands the install to the engine, which
 *               queues the superblock pairing {checkpoint op S, payload
 *               checksum, op S's prepare header} (5.). What a crash at
 *               each point boots is listed in snapshot_install.h (after
 *               4 and before 5 is its "after 2, before 4" case: the
 *               instances live in shared memory, the disk decides).
 *               An error after the journal cut is fatal (-VS_EFATAL:
 *               the node stops and boots one of the two states).
 *  zinst_table  the client table's sessions and reply rings: applied
 *               once the state reaches op T (at once when T equals the
 *               state's op, else when the commit walk applies op T). The
 *               state's own sessions come from the snapshot and the
 *               replayed ops, exactly as on the primary; the image must
 *               agree with them slot for slot (client, epoch, user,
 *               watermark and its checksum, created op, latest commit),
 *               then the rings replace the private table's, so a retried
 *               request finds the same cached replies as on the primary.
 *               A disagreement installs nothing (-EPROTO, logged).
 *
 * Callers: shard 0 only (the commit path, one thread).
 */
#ifndef VS_SHARD_ZERO_INSTALL_STATE_H
#define VS_SHARD_ZERO_INSTALL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "ipc/lr.h"
#include "shard/meta/client_table.h"
#include "shard/meta/state.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"
#include "shard/zero/transfer.h"

/* What zinst_check decoded. */
struct zinst_scratch {
    struct vs_hdr_prepare prepare; /* op S's stored header */
    struct meta_ct_image img;      /* the client table at table_op */
    uint64_t table_op;
    void *state; /* the snapshot decoded (a private zero-page mapping) */
    size_t state_len;
    struct meta_client_table ct; /* the snapshot's cached replies */
};

/* Decodes and checks the artifacts (see above). 0, or -EPROTO / -ENOMEM
 * with one line in err; on error s holds nothing to free. */
int zinst_check(const struct meta_caps *caps, const struct zt_artifacts *a,
                struct zinst_scratch *s, char *err, size_t errlen);
void zinst_scratch_fini(struct zinst_scratch *s);

/* Steps 1-4 for a checked a (snapshot op above commit_min): the
 * instances get sc's decoded state (its non-zero pages copied), ct the
 * snapshot's replies (moved out of sc). *sum gets the payload checksum
 * for the pairing. 0, -ENOSPC (no space for the journal cut: nothing
 * changed), or -VS_EFATAL with one line in err. */
int zinst_write(struct vs_sio *io, const char *meta_dir, struct wal *journal,
                uint64_t commit_min, struct vs_lr *lr, struct zinst_scratch *sc,
                struct meta_client_table *ct, const struct zt_artifacts *a,
                struct vs_u128 *sum, char *err, size_t errlen);

/* The table image against the writer's live state (at the image's op):
 * 0 and the rings installed, or -EPROTO with one line (nothing changed). */
int zinst_table(struct meta_client_table *ct, const void *state,
                const struct meta_ct_image *img, char *err, size_t errlen);

#endif /* VS_SHARD_ZERO_INSTALL_STATE_H */
