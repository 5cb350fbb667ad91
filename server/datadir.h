/*
 * server/datadir.h - the data-dir lock and the recorded shard count.
 *
 * Role: a node owns its data dir for its whole life through
 * flock(LOCK_EX|LOCK_NB) on DATA/vstream.lock (the file holds the
 * supervisor's pid, for the message a second node prints); the lock fd
 * is inherited by the shards, so it is only released once every process
 * of the node is gone. K is recorded in DATA/shards at first boot
 * (tmp, fsync, rename, fsync dir) and later boots use it.
 * Callers: the supervisor before it forks; tests.
 */
#ifndef VS_SERVER_DATADIR_H
#define VS_SERVER_DATADIR_H

#include <stddef.h>
#include <stdint.h>

/* Creates `dir` (0700) if needed and locks it. Returns the lock fd
 * (O_CLOEXEC is NOT set: children keep the lock alive), or -EWOULDBLOCK
 * with "data dir X is locked by vstreamd pid N" in err, or -errno. */
int sup_datadir_lock(const char *dir, char *err, size_t errlen);

/* Resolves K: the recorded value if DATA/shards exists (an explicit
 * different `requested` is refused with -EINVAL and a reason), else
 * `requested` (0 = one per online core, at least 1) which is recorded.
 * 0 or -errno with a reason in err. */
int sup_shards_resolve(const char *dir, uint32_t requested, int explicit_set,
                       uint32_t *k_out, char *err, size_t errlen);

#endif /* VS_SERVER_DATADIR_H */
