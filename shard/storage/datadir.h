/*
 * shard/storage/datadir.h - creating and locking a node's data dir.
 *
 * Role: DATA is created (mkdir -p; the last component mode 0700) and
 * locked with flock(LOCK_EX | LOCK_NB) on DATA/vstream.lock for the
 * node's life; the holder's pid is written into the lock file so a second
 * vstreamd refuses with "data dir X is locked by vstreamd pid N".
 * The lock fd is O_CLOEXEC; forked children share the open file
 * description (and so the lock) until the last one closes it.
 * datadir_probe_lock is the read-only probe vstream-inspect uses
 * (flock(LOCK_SH | LOCK_NB), released at once).
 *
 * Callers: the supervisor (before forking shards), vstream-inspect
 * (probe), tests.
 */
#ifndef VS_SHARD_STORAGE_DATADIR_H
#define VS_SHARD_STORAGE_DATADIR_H

#include <stddef.h>
#include <sys/types.h>

/* Creates DATA (0700) and DATA/metadata (0700), locks DATA/vstream.lock.
 * 0 with *fd_out the lock fd (keep it open), -EWOULDBLOCK if another
 * process holds the lock, or -errno; err gets one line on failure. */
int datadir_open_locked(const char *path, int *fd_out, char *err,
                        size_t errlen);
/* mkdir -p of path; the last component gets `mode`. The parent of every
 * directory it creates is fsynced, so the new entry is durable. 0 or
 * -errno (-EIO for a failed directory fsync, which is fatal to the
 * caller: DESIGN §4). */
int datadir_mkdir_p(const char *path, mode_t mode);
struct vs_sio;
/* The same through an I/O layer (tests count and fail the fsyncs):
 * 0, -errno, or -VS_EFATAL (a directory fsync failed). */
int datadir_mkdir_p_io(struct vs_sio *io, const char *path, mode_t mode);

enum datadir_lock_state {
    DATADIR_UNLOCKED = 0, /* no lock file, or nobody holds it */
    DATADIR_LOCKED,       /* a running node holds it */
    DATADIR_LOCK_UNKNOWN, /* the lock file could not be opened/probed */
};
/* Probes DATA/vstream.lock without taking it. *pid (if not NULL) gets
 * the pid recorded in the file, or 0. */
enum datadir_lock_state datadir_probe_lock(const char *path, pid_t *pid);

#endif /* VS_SHARD_STORAGE_DATADIR_H */
