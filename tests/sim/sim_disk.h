/*
 * tests/sim/sim_disk.h - a simulated disk behind the storage layer's
 * injectable I/O table (struct vs_sio, shard/storage/io.h).
 *
 * Role: the REAL journal, superblock, snapshot and recovery code run on
 * it unchanged. Files live in a real scratch directory (the storage code
 * also fstat()s and mkdir()s), so what a read sees is the page cache;
 * the disk keeps, per file, the DURABLE image besides it:
 *  - a write lands in the page cache and is remembered as pending;
 *  - fsync of a file makes its current bytes durable;
 *  - create / rename / unlink change the names at once, but the durable
 *    names of a directory change only at its directory fsync;
 *  - sim_disk_crash() rebuilds the directory from the durable state:
 *    each name takes its durable file (or, if renamed since the last
 *    directory fsync, either one), each pending write of that file is
 *    applied whole, dropped, or torn (cut at a byte, or one 512-byte
 *    sector lost), torn with the probability `tear_permille`.
 * A crash can be armed at the Nth mutating call: that call and every
 * later one fail with EIO (the storage layer makes that fatal), a write
 * that fires it first lands a prefix (still pending, so it tears).
 *
 * Faults applied while the node is down (the image is durable then):
 * sim_disk_flip() flips one byte of a file, sim_disk_latent() makes one
 * sector unreadable (a latent sector error), sim_disk_wipe() removes all.
 *
 * Torn-write provenance (the liveness checker's torn-copies waiver): a
 * crash records every pending write it tore, with the file's durable
 * length at the crash (bytes at or above it never completed an fsync);
 * sim_disk_torn_unsynced() asks whether a byte range is such a torn,
 * never-fsynced write untouched since. The counterfactual of that
 * waiver registers byte ranges (sim_disk_lose_whole) whose pending
 * writes the next crash loses whole instead of tearing them; the same
 * random draws are made, so the rest of the crash is unchanged.
 *
 * Invariants: one node per disk; file names are short; at most
 * SIM_DISK_FILES files and SIM_DISK_FDS open descriptors.
 * Callers: the simulator only (one thread).
 */
#ifndef VS_TESTS_SIM_DISK_H
#define VS_TESTS_SIM_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "shard/storage/io.h"

#define SIM_DISK_FILES 32
#define SIM_DISK_FDS   1024 /* real descriptor numbers */
#define SIM_DISK_NAME  64
#define SIM_DISK_BAD   8  /* latent bad sectors per file */
#define SIM_DISK_TORN  64 /* torn writes remembered until the next boot */
#define SIM_DISK_LOSE  8  /* ranges the next crash loses whole */

struct sim_extent {
    uint64_t off, len;
};

struct sim_inode {
    int used;
    uint8_t *dur; /* durable bytes */
    size_t dur_len;
    struct sim_extent *pend; /* writes since the last fsync */
    size_t npend, cap;
    int trunc_pending;
    uint64_t trunc_len;
    /* latent sector errors: 512-byte sectors whose reads fail with EIO
     * until a write covers them (the drive remaps a rewritten sector) */
    uint64_t bad[SIM_DISK_BAD];
    unsigned nbad;
};

struct sim_dname {
    char name[SIM_DISK_NAME];
    int ino; /* -1: no such name */
};

/* A write the crash tore (or, sim_disk_lose_whole, a range to lose). */
struct sim_torn {
    char name[SIM_DISK_NAME];
    uint64_t off, end;
    uint64_t durable_len; /* the file's fsynced length at the crash */
    int touched;          /* a flip or latent sector hit it since */
};

struct sim_disk {
    struct vs_sio io; /* first: the storage code gets &d->io */
    char dir[512];    /* the real directory holding the files */
    struct sim_inode ino[SIM_DISK_FILES];
    struct sim_dname vol[SIM_DISK_FILES]; /* names as seen now */
    struct sim_dname dur[SIM_DISK_FILES]; /* names as durable */
    int fd_ino[SIM_DISK_FDS];
    int fd_real[SIM_DISK_FDS];
    uint64_t rng;
    unsigned tear_permille;
    uint64_t mutating_calls;
    uint64_t crash_at; /* 0: none; else crash on that mutating call */
    int crashed;
    /* counters */
    uint64_t torn, dropped, applied, renames_lost;
    struct sim_torn tornlog[SIM_DISK_TORN]; /* since sim_disk_torn_forget */
    unsigned ntorn;
    int tornlog_full; /* some were not remembered: none qualifies */
    struct sim_torn lose[SIM_DISK_LOSE];
    unsigned nlose;
    uint64_t lost_whole; /* pending writes the counterfactual lost whole */
    /* the torn-copies waiver's mutation: every torn write is recorded
     * as having completed its fsync before the crash (the same bytes as
     * an entry fsynced and then damaged in that sector) */
    int torn_as_synced;
};

/* Creates the disk over an existing empty real directory `dir` (the
 * node's DATA/metadata). 0 or -errno. */
int sim_disk_init(struct sim_disk *d, const char *dir, uint64_t seed,
                  unsigned tear_permille);
void sim_disk_fini(struct sim_disk *d);
/* The crash: every descriptor closes, the directory becomes what a
 * power cut would leave (see the header). 0 or -errno. */
int sim_disk_crash(struct sim_disk *d);
/* Arms a crash on the nth next mutating call (write, fsync, rename,
 * directory fsync, truncate, unlink); 0 disarms. */
void sim_disk_arm_crash(struct sim_disk *d, uint64_t nth);
/* Flips byte `off` (modulo the file length) of file `name` in the
 * durable image; only while the node is down. 1 done, 0 no such file or
 * empty, -errno. */
int sim_disk_flip(struct sim_disk *d, const char *name, uint64_t off,
                  uint8_t mask);
/* Makes the 512-byte sector holding byte `off` (modulo the file length)
 * of file `name` unreadable: reads touching it fail with EIO until a
 * write covers it. Only while the node is down. 1 done, 0 no such file,
 * empty, or the file's bad-sector table full. */
int sim_disk_latent(struct sim_disk *d, const char *name, uint64_t off);
/* Remaps the latent sector holding byte `off` of file `name` (reads
 * succeed again, the bytes unchanged). 1 done, 0 no such bad sector. */
int sim_disk_remap(struct sim_disk *d, const char *name, uint64_t off);
/* Length of file `name` (durable image), or -1 if absent. */
long sim_disk_size(struct sim_disk *d, const char *name);
/* Reads the durable image of `name` (malloc'd, caller frees) or NULL. */
uint8_t *sim_disk_read(struct sim_disk *d, const char *name, size_t *len);
/* Removes every file (a lost disk); only while the node is down. */
int sim_disk_wipe(struct sim_disk *d);
/* 1 if bytes [off, end) of file `name` hold a write the crashes since
 * the last sim_disk_torn_forget tore, none of those bytes had completed
 * an fsync at that crash (the durable length was at or below off), and
 * no flip or latent sector touched them since; else 0. */
int sim_disk_torn_unsynced(const struct sim_disk *d, const char *name,
                           uint64_t off, uint64_t end);
/* Forgets the torn writes remembered so far (the node booted). */
void sim_disk_torn_forget(struct sim_disk *d);
/* At the next crash, if a pending write of `name` touching [off, end)
 * tears, every pending write touching it is dropped whole instead; an
 * fsync of the file (the writes completed) or the crash forgets the
 * range. 0, or -ENOSPC when SIM_DISK_LOSE ranges are registered. */
int sim_disk_lose_whole(struct sim_disk *d, const char *name, uint64_t off,
                        uint64_t end);

#endif /* VS_TESTS_SIM_DISK_H */
