/*
 * shard/storage/atomic_file.h - atomic replacement of a whole file.
 *
 * Role: the only way the storage layer replaces a file (superblock slots,
 * snapshot.bin, journal.wal rewrites):
 *   1. create DIR/NAME.tmp (O_TRUNC), write the new contents,
 *   2. fsync NAME.tmp,
 *   3. rename NAME.tmp over NAME,
 *   4. fsync DIR.
 * A crash before 3 leaves the old NAME intact (the .tmp is ignored by
 * readers and removed by afile_cleanup_tmp); after 4 the new one is durable.
 *
 * Errors (see io.h): ENOSPC while writing the .tmp -> the .tmp is removed
 * and -ENOSPC returned, the old file untouched. Any other write error, and
 * any fsync / rename / directory-fsync error -> -VS_EFATAL (io poisoned).
 * Opening the .tmp failing -> -errno.
 *
 * Invariants: one transaction per NAME at a time (the caller serialises).
 * Callers: shard 0 and tests (anything that owns the data dir lock).
 */
#ifndef VS_SHARD_STORAGE_ATOMIC_FILE_H
#define VS_SHARD_STORAGE_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shard/storage/io.h"

#define AFILE_PATH_MAX 512

/* A replacement in progress (embedded by the caller). */
struct afile_tx {
    struct vs_sio *io;
    int fd;
    off_t len;
    char dir[AFILE_PATH_MAX];
    char path[AFILE_PATH_MAX];     /* DIR/NAME */
    char tmp_path[AFILE_PATH_MAX]; /* DIR/NAME.tmp */
};

/* Step 1: creates DIR/NAME.tmp (mode 0600). 0 or -errno. */
int afile_begin(struct afile_tx *tx, struct vs_sio *io, const char *dir,
                const char *name);
/* Appends to the .tmp. 0, -ENOSPC or -VS_EFATAL. On any failure the
 * caller must call afile_abort. */
int afile_write(struct afile_tx *tx, const void *buf, size_t len);
/* Steps 2-4. 0 or -VS_EFATAL. The tx is finished either way (no abort). */
int afile_commit(struct afile_tx *tx);
/* Closes and removes the .tmp (old file untouched). Safe after begin. */
void afile_abort(struct afile_tx *tx);

/* begin + write + commit of one buffer. 0, -errno, -ENOSPC, -VS_EFATAL. */
int afile_replace(struct vs_sio *io, const char *dir, const char *name,
                  const void *buf, size_t len);

/* Removes a leftover DIR/NAME.tmp of a crashed replacement. 1 if one was
 * removed, 0 if none, -errno otherwise. */
int afile_cleanup_tmp(struct vs_sio *io, const char *dir, const char *name);

/* Reads a whole file of at most max_len bytes into a malloc'd buffer the
 * caller frees (*out is NULL for an empty file). 0, -ENOENT (absent),
 * -EFBIG (larger than max_len), or -errno. */
int afile_read_all(struct vs_sio *io, const char *path, size_t max_len,
                   uint8_t **out, size_t *out_len);

/* snprintf of "DIR/NAME" that refuses truncation: 0 or -ENAMETOOLONG. */
int afile_join(char *out, size_t cap, const char *dir, const char *name);

#endif /* VS_SHARD_STORAGE_ATOMIC_FILE_H */
