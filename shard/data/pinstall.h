/*
 * shard/data/pinstall.h - installing a partition directory fetched by
 * partition state transfer (shard/serve/pxfer.h), atomically: a crash at
 * any storage call leaves a bootable partition, its old state or the new
 * one, never a mix.
 *
 * Names under DATA/partitions (P) for partition directory <name>:
 *   P/.pxfer/<name>      staging: the new directory being written
 *   P/<name>.pxfer-new   the new directory, complete, fsynced, verified
 *   P/<name>.pxfer-old   the old directory during the swap
 * Steps:
 *   stage: P/.pxfer/<name> made from the two images (pimage.h), the live
 *     partition's `format` file, a fresh `state` and `vsr_state`; every
 *     file and directory fsynced; the staged directory opened read-only
 *     as a partition (part_open's full boot verdict: a staged image that
 *     would not boot is refused here, nothing live touched); then renamed
 *     to P/<name>.pxfer-new and P fsynced.
 *   swap (the partition closed): P/<name> -> P/<name>.pxfer-old, P
 *     fsynced; P/<name>.pxfer-new -> P/<name>, P fsynced; the old tree
 *     removed.
 *   recover (before the partition is opened, at every boot and after a
 *     failed swap): the staging directory is removed (incomplete);
 *     P/<name> missing: P/<name>.pxfer-new, else P/<name>.pxfer-old, is
 *     renamed back to P/<name>; P/<name> present: a leftover -old is
 *     removed and a leftover -new completes the swap (the new state was
 *     verified; the old one was behind its peers).
 * Renames are atomic (POSIX): after a crash one of the two names of a
 * renamed directory exists.
 * Invariants: only the owning data shard, with the partition closed for
 * swap and recover (stage runs beside the open partition: it never
 * touches P/<name>). Callers: shard/serve (pxfer, parts), tests.
 */
#ifndef VS_SHARD_DATA_PINSTALL_H
#define VS_SHARD_DATA_PINSTALL_H

#include <stddef.h>
#include <stdint.h>

#include "shard/data/partition.h"
#include "shard/data/pimage.h"
#include "shard/data/pjournal.h"
#include "shard/storage/io.h"

#define PINSTALL_STAGE_DIR ".pxfer"
#define PINSTALL_NEW       ".pxfer-new"
#define PINSTALL_OLD       ".pxfer-old"

/* What a new directory is made of (images decoded by pimg_decode). */
struct pinstall_src {
    const uint8_t *segs;
    const struct pimg *segs_m;
    const uint8_t *offs;
    const struct pimg *offs_m;
    const uint8_t *format; /* the live partition's `format` file */
    size_t format_len;
    uint8_t part_state[PART_STATE_IMAGE_SIZE];
    uint8_t vsr_state[PJ_STATE_IMAGE_SIZE];
};

/* Stages and verifies the new directory (see above). 0; -EBADMSG (the
 * staged image does not boot: err says why, nothing left behind);
 * -ENOSPC or another -errno (nothing left behind); -VS_EFATAL. */
int pinstall_stage(struct vs_sio *io, const char *partitions_dir,
                   const struct part_id *id, const struct pinstall_src *src,
                   const struct part_opts *opts, char *err, size_t errlen);
/* The same stage in two steps, for a caller that fsyncs off its thread:
 * pinstall_stage_write writes and verifies the staged directory without
 * an fsync and leaves every file and directory it wrote open in *fds
 * (0, or an error as above with *fds empty); once the caller made them
 * durable (and closed them: pinstall_fds_close), pinstall_stage_publish
 * renames it to P/<name>.pxfer-new and leaves P and P/.pxfer open in
 * *fds, to be fsynced before pinstall_pending may report it (the swap
 * must not run before). -ENOENT: nothing staged. A crash before the
 * publish's fsyncs leaves a staging directory (removed by recover) or an
 * unsynced rename of a durable directory: either boots. The fds kept
 * are the staged files (three per segment, the offsets, format and
 * state files) and its directories: the caller's fd limit must allow
 * them. */
struct pinstall_fds {
    int *fd;
    size_t n, cap;
};
int pinstall_stage_write(struct vs_sio *io, const char *partitions_dir,
                         const struct part_id *id,
                         const struct pinstall_src *src,
                         const struct part_opts *opts, struct pinstall_fds *fds,
                         char *err, size_t errlen);
int pinstall_stage_publish(struct vs_sio *io, const char *partitions_dir,
                           const struct part_id *id, struct pinstall_fds *fds,
                           char *err, size_t errlen);
void pinstall_fds_close(struct vs_sio *io, struct pinstall_fds *f);
/* 1 if a staged, verified directory waits for the swap. */
int pinstall_pending(const char *partitions_dir, const struct part_id *id);
/* The swap; the partition must be closed. 0 or -errno / -VS_EFATAL
 * (pinstall_recover then finishes it). */
int pinstall_swap(struct vs_sio *io, const char *partitions_dir,
                  const struct part_id *id);

enum pinstall_outcome {
    PINSTALL_NOTHING = 0,        /* no install was under way */
    PINSTALL_CLEANED = 1,        /* leftovers removed, P/<name> unchanged */
    PINSTALL_ROLLED_FORWARD = 2, /* the new directory is P/<name> */
    PINSTALL_ROLLED_BACK = 3,    /* the old directory is P/<name> */
};
/* The recovery above; *outcome (may be NULL) says what it did. 0 or
 * -errno / -VS_EFATAL. */
int pinstall_recover(struct vs_sio *io, const char *partitions_dir,
                     const struct part_id *id, enum pinstall_outcome *outcome);

#endif /* VS_SHARD_DATA_PINSTALL_H */
