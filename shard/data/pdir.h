/*
 * shard/data/pdir.h - the lifecycle of partition directories under
 * DATA/partitions: naming, removal, reconciliation with the metadata.
 *
 * Role: a partition's directory is named "<stream>.<topic>.<partition>.
 * <created_op>" (decimal), so a partition id reused after a delete never
 * meets the dead partition's files. A data shard creates the directory
 * when it sees the published create op (part_open(create = 1)), removes it
 * when it sees the delete (pdir_remove), and, once shard 0 has published
 * the recovered state, reconciles: directories whose (ids, created_op) the
 * metadata does not list are removed; if the metadata lists NOTHING while
 * partition directories exist, reconciliation refuses (-EBADE with a typed
 * reason): empty metadata beside data is damage, never a reason to delete.
 *
 * Removal is crash safe: the directory is first renamed to
 * "<name>.deleted" (and the parent fsynced), then emptied and removed; a
 * leftover "*.deleted" is finished by the next reconcile. Names that are
 * not partition directories are left alone.
 *
 * A partition deleted while a state transfer was installing it may leave
 * the transfer's directories (shard/data/pinstall.h: "<name>.pxfer-new",
 * "<name>.pxfer-old", ".pxfer/<name>"): once the metadata no longer lists
 * <name>, reconcile removes them; those of a listed partition are left to
 * pinstall_recover (the partition's open). A "-new"/"-old" directory is a
 * whole partition: beside empty metadata it is refused like the others.
 *
 * Each shard reconciles only the partitions it owns (the `owned` filter).
 *
 * Invariants: only the owning data shard touches a partition's directory.
 * Callers: data shards, tests.
 */
#ifndef VS_SHARD_DATA_PDIR_H
#define VS_SHARD_DATA_PDIR_H

#include <stddef.h>
#include <stdint.h>

#include "shard/data/partition.h"
#include "shard/storage/io.h"

/* "<stream>.<topic>.<partition>.<created_op>"; 0 or -ENAMETOOLONG. */
int pdir_name(char *out, size_t cap, const struct part_id *id);
/* Parses a directory name; 1 if it is one (fills *id), 0 otherwise. */
int pdir_parse(const char *name, struct part_id *id);

/* Removes a partition directory and everything in it (rename to .deleted,
 * fsync the parent, unlink the contents, rmdir). 0 (also if absent),
 * -VS_EFATAL, -errno. */
int pdir_remove(struct vs_sio *io, const char *partitions_dir,
                const struct part_id *id);

/* Removes `path` and everything under it (files through sio_unlink).
 * 0 (also if absent) or -errno / -VS_EFATAL. */
int pdir_rmtree(struct vs_sio *io, const char *path);

enum pdir_reason {
    PDIR_R_NONE = 0,
    PDIR_R_EMPTY_METADATA, /* metadata lists nothing, directories exist */
};

struct pdir_reconcile_result {
    enum pdir_reason reason;
    uint32_t kept;
    uint32_t removed;
    uint32_t finished_deletes;   /* leftover *.deleted removed */
    uint32_t transfer_leftovers; /* pxfer dirs of unlisted partitions */
    char msg[256];
};

/* 1 if this shard owns the partition (reconcile ignores the others). NULL
 * = every partition. */
typedef int (*pdir_owned_fn)(const struct part_id *id, void *ctx);

/* Keeps exactly the directories listed in live[0..n) (matched on all four
 * fields) among those this shard owns; removes the rest. n == 0 with any
 * owned partition directory present -> -EBADE, reason
 * PDIR_R_EMPTY_METADATA, nothing removed. A missing partitions_dir is
 * created (0700). 0, -EBADE, -VS_EFATAL, -errno. */
int pdir_reconcile(struct vs_sio *io, const char *partitions_dir,
                   const struct part_id *live, size_t n, pdir_owned_fn owned,
                   void *ctx, struct pdir_reconcile_result *res);

#endif /* VS_SHARD_DATA_PDIR_H */
