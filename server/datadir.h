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
#include <sys/types.h>

/* How long a restart waits for the lock of a node that is gone or dying
 * (its SIGKILLed shards still exiting) before it gives up. */
#define SUP_LOCK_WAIT_MS 30000u

/* Creates `dir` (0700) if needed and locks it. Returns the lock fd
 * (children inherit it and keep the lock alive), or -EWOULDBLOCK with
 * "data dir X is locked by vstreamd pid N" in err when a live node holds
 * it, or -ETIMEDOUT when the processes of a dead node still held it after
 * lock_wait_ms (waited for, bounded and logged; see datadir.c), or
 * -errno. */
int sup_datadir_lock_wait(const char *dir, uint32_t lock_wait_ms, char *err,
                          size_t errlen);
/* sup_datadir_lock_wait with SUP_LOCK_WAIT_MS. */
int sup_datadir_lock(const char *dir, char *err, size_t errlen);
/* 1 if `pid` is a live process of this program (not a zombie, no SIGKILL
 * pending), i.e. a lock it holds belongs to a live node. */
int sup_lock_holder_live(pid_t pid);

/* Resolves K: the recorded value if DATA/shards exists (an explicit
 * different `requested` is refused with -EINVAL and a reason), else
 * `requested` (0 = one per online core, at least 1) which is recorded.
 * 0 or -errno with a reason in err. */
int sup_shards_resolve(const char *dir, uint32_t requested, int explicit_set,
                       uint32_t *k_out, char *err, size_t errlen);

#endif /* VS_SERVER_DATADIR_H */
