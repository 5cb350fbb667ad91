/*
 * shard/zero/boot.h - shard 0's boot: the storage verdict and the
 * rebuild of the metadata state it publishes.
 *
 * Role: shard0_boot() runs the recovery verdict of shard/storage/recovery.h
 * on DATA/metadata (formatting a fresh one-replica node first) and keeps
 * what it recovered: the VsrState, the verified snapshot payload and the
 * open journal with the range of ops to replay. shard0_rebuild_state()
 * turns that into one metadata instance: decode the snapshot (if any),
 * then apply every op of the replay range in order with meta_apply(),
 * calling an optional hook after each op (the commit path uses it to
 * rebuild the cached replies of the client table). Recovery builds the
 * standby instance before the first left-right flip, so readers never see
 * the published op go backwards (DESIGN §2).
 *
 * Invariants: a refusal or a fatal storage error is returned with one
 * line in err and must end the process with exit status 2 (the node does
 * not restart into a refused data dir). One-replica nodes replay the
 * whole journal (every durable entry is committed); a cluster replica
 * will replay only up to its commit (the cluster issue).
 * Callers: shard 0 only (and tests).
 */
#ifndef VS_SHARD_SHARD0_BOOT_H
#define VS_SHARD_SHARD0_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "shard/meta/apply.h"
#include "shard/meta/client_table.h"
#include "shard/meta/state.h"
#include "shard/storage/io.h"
#include "shard/storage/recovery.h"

struct shard0_recovered {
    struct vs_sio io;         /* real I/O; fatal errors recorded here */
    struct recovery_result r; /* verdict BOOT; r.journal open */
    uint8_t *snapshot;        /* verified payload or NULL (owned) */
    size_t snapshot_len;
    int formatted; /* this boot formatted a fresh node */
    /* DATA/metadata/rebuilt exists: `vstreamd recover` rebuilt this
     * replica after a lost disk and it has not caught up since. */
    int rebuilt;
};

/* The marker `vstreamd recover` leaves in DATA/metadata until the
 * rebuilt replica caught up with its cluster. */
#define SHARD0_REBUILT_FILE "rebuilt"

/* Number of replicas named by cfg->replica_addrs (1 when empty). */
uint32_t shard0_replica_count(const struct vs_config *cfg);

/* Opens DATA/metadata: 0 with *out filled (free with
 * shard0_recovered_fini), or a negative value with one line in err:
 * -EPERM for a refusal verdict (err = the verdict's reason), -VS_EFATAL
 * for a fatal storage error (err = file and errno), -errno otherwise. */
int shard0_boot(const struct vs_config *cfg, struct shard0_recovered *out,
                char *err, size_t errlen);
void shard0_recovered_fini(struct shard0_recovered *rec);

/* `vstreamd format`: writes the first superblock of an empty data dir
 * (any replica count) so that a cluster replica may boot on it. 0 with a
 * one-line summary in msg, -EEXIST if anything is there already, or a
 * negative error with one line in msg. Caller holds the data-dir lock. */
int shard0_format(const struct vs_config *cfg, char *msg, size_t msglen);

/* `vstreamd recover`: a replica of a cluster that lost its disk. Formats
 * the empty data dir like shard0_format and leaves the rebuilt marker,
 * so the replica boots Recovering and neither votes nor acknowledges
 * until it caught up (R8). 0 with a one-line summary in msg, -EINVAL for
 * a one-replica node, -EEXIST if anything is there already, or a
 * negative error with one line in msg. Caller holds the data-dir lock. */
int shard0_recover(const struct vs_config *cfg, char *msg, size_t msglen);
/* Removes the rebuilt marker (the replica caught up): 0, -VS_EFATAL (a
 * directory fsync failed: io records it), or -errno. */
int shard0_rebuilt_clear(struct vs_sio *io, const char *data_dir);

/* Called after each replayed op with its prepare header and apply result. */
typedef void shard0_replay_fn(void *ctx, const struct vs_hdr_prepare *h,
                              const struct meta_result *res);

/* Builds `instance` (meta_state_size(caps) bytes, ALL ZERO on entry, e.g.
 * after lr_instance_zero) from rec: init the header, decode
 * the snapshot, replay the journal range. *op_out gets the op the state
 * reflects (0 for an empty node). `ct` (may be NULL) receives the cached
 * replies of the snapshot's client table (the hook adds the replayed
 * ones). 0, or -EBADMSG (undecodable snapshot or
 * journal body) / -EIO with one line in err. */
int shard0_rebuild_state(void *instance, const struct meta_caps *caps,
                         struct shard0_recovered *rec,
                         struct meta_client_table *ct, shard0_replay_fn *hook,
                         void *hook_ctx, uint64_t *op_out, char *err,
                         size_t errlen);

#endif /* VS_SHARD_SHARD0_BOOT_H */
