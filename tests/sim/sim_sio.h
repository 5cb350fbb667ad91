/*
 * tests/sim/sim_sio.h - a deterministic simulated file system behind the
 * storage layer's injectable I/O table (struct vs_sio, shard/storage/io.h),
 * with directories, for the partition storage (shard/data/) inside the
 * simulator.
 *
 * Role: the REAL partition code (part_open, part_append, recovery, offsets,
 * directories) runs on it unchanged. The whole tree (files and directories)
 * is modelled in memory as inodes: a file keeps its DURABLE image and the
 * writes made since its last fsync; a directory keeps its entries as seen
 * now and as durable (the entries become durable at its directory fsync,
 * as on a real file system). The current image is mirrored into a real
 * scratch tree under `root` because the partition code also stat()s and
 * fstat()s paths and descriptors outside the vs_sio table
 * (shard/data/segment.c, partition.c, pdir.c); descriptors are the real
 * ones, mapped to their inodes.
 *
 * Crash (sim_sio_crash): every descriptor closes and the tree becomes what
 * a power cut leaves: from the root, each directory keeps its durable
 * entries, and each entry changed since the last directory fsync takes
 * either its durable or its current value; each surviving file keeps its
 * durable bytes, a pending truncation may or may not have landed, and each
 * pending write is applied whole, dropped, or torn (cut at a byte or one
 * 512-byte sector left old) with probability tear_permille. Every random
 * choice comes from the seed's own stream: a seed replays exactly.
 * A crash can be armed at the Nth mutating call (write, fsync, rename,
 * directory fsync, truncate, unlink, mkdir, rmdir, directory rename): that
 * call and every later one fail with EIO (the storage layer makes that
 * fatal); a write that fires it first lands a prefix, still pending.
 *
 * Faults while the owner is down (after a crash, when the current image
 * is the durable one): sim_sio_flip() flips a byte of a file,
 * sim_sio_latent() makes one sector unreadable (EIO until a write covers
 * it: the drive remaps a rewritten sector).
 *
 * Invariants: one owner per instance; paths are absolute and under root;
 * names are at most SIM_SIO_NAME - 1 bytes. Callers: the simulator and its
 * unit test (one thread).
 */
#ifndef VS_TESTS_SIM_SIO_H
#define VS_TESTS_SIM_SIO_H

#include <stddef.h>
#include <stdint.h>

#include "shard/storage/io.h"

#define SIM_SIO_NAME 128
#define SIM_SIO_FDS  1024 /* real descriptor numbers */

struct sim_sio_stats {
    uint64_t crashes, torn, dropped, applied, names_lost, names_kept,
        latent_hits, mutating;
};

struct sim_sio;

/* Creates the file system over `root` (created if missing, emptied).
 * 0 or -errno. */
int sim_sio_create(const char *root, uint64_t seed, unsigned tear_permille,
                   struct sim_sio **out);
void sim_sio_destroy(struct sim_sio *s);
/* The table to hand to the storage code. */
struct vs_sio *sim_sio_io(struct sim_sio *s);
const char *sim_sio_root(const struct sim_sio *s);
/* The power cut described above; the io's fatal record is cleared (a new
 * life). 0 or -errno (the scratch tree could not be rewritten). */
int sim_sio_crash(struct sim_sio *s);
/* dup(2) of one of its descriptors (an fsync off the loop works on a
 * duplicate, as the data shards do): the new descriptor names the same
 * file; close it with the io's close. -errno on failure. */
int sim_sio_dup(struct sim_sio *s, int fd);
/* Crash on the nth next mutating call; 0 disarms. */
void sim_sio_arm_crash(struct sim_sio *s, uint64_t nth);
/* 1 once an armed crash fired (until sim_sio_crash). */
int sim_sio_crashed(const struct sim_sio *s);
/* Flips byte `off` (modulo the file length) of the file at `path` (an
 * absolute path under root) in its durable and current image. 1 done,
 * 0 no such file or empty. */
int sim_sio_flip(struct sim_sio *s, const char *path, uint64_t off,
                 uint8_t mask);
/* Makes the sector holding byte `off` (modulo the length) unreadable.
 * 1 done, 0 no such file or empty. */
int sim_sio_latent(struct sim_sio *s, const char *path, uint64_t off);
/* Durable length of the file at `path`, or -1. */
/* Remaps the bad sector holding byte `off` (reads succeed again, the
 * bytes unchanged). 1 done, 0 no such bad sector. */
int sim_sio_remap(struct sim_sio *s, const char *path, uint64_t off);
long sim_sio_size(struct sim_sio *s, const char *path);
/* Names in the directory at `path` as they are now, in creation order:
 * fn(arg, name) for each until it returns non-zero. 0 or -ENOENT. */
int sim_sio_list(struct sim_sio *s, const char *path,
                 int (*fn)(void *arg, const char *name), void *arg);
void sim_sio_get_stats(const struct sim_sio *s, struct sim_sio_stats *out);

#endif /* VS_TESTS_SIM_SIO_H */
