/*
 * server/datadir.c - data-dir lock and recorded shard count; see
 * datadir.h. Supervisor only, before fork (and `vstreamd format`).
 *
 * A lock held by a dying node: after SIGKILL of a whole node, its shards
 * may still be tearing down their address spaces (they hold the inherited
 * lock fd until their last page is unmapped) when a restart arrives. The
 * restart must not be refused with exit 2 then. The lock file records the
 * supervisor's pid; the shards die with it (PR_SET_PDEATHSIG), so the
 * node is live exactly while that pid is a live vstreamd:
 *   1. try the lock; taken -> done;
 *   2. classify the recorded pid: live = it exists, is neither a zombie
 *      nor exiting (PF_EXITING), has no SIGKILL pending, and runs the
 *      same program as we do (a pid reused by another program is not the
 *      holder);
 *   3. live -> refuse at once (-EWOULDBLOCK, exit 2 upstream);
 *   4. otherwise (gone, dying, reused, or not written yet by a node that
 *      has just taken the lock) log once, sleep DD_LOCK_POLL_MS and go to
 *      1 (the pid is read again each round: a node that takes the lock
 *      meanwhile is seen as live), for at most lock_wait_ms; past that
 *      -ETIMEDOUT (exit 1: worth a restart, not a refusal).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/layout.h"
#include "common/log.h"
#include "server/datadir.h"
#include "shard/storage/atomic_file.h"
#include "shard/storage/datadir.h"
#include "shard/storage/io.h"

static int
dd_path(char *out, size_t len, const char *dir, const char *name)
{
    if (snprintf(out, len, "%s/%s", dir, name) >= (int)len)
        return -ENAMETOOLONG;
    return 0;
}

#define DD_LOCK_POLL_MS 20u

/* The comm of `pid` into out (NUL-terminated, newline cut). 0 or -errno. */
static int
dd_proc_comm(pid_t pid, char *out, size_t len)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%ld/comm", (long)pid);
    FILE *f = fopen(p, "re");
    if (f == NULL)
        return -errno;
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -EIO;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

/* PF_EXITING in /proc/PID/stat's flags: set as do_exit() begins, before
 * the address space and the files (our lock fd) are released. */
#define DD_PF_EXITING 0x4u

int
sup_lock_holder_live(pid_t pid)
{
    if (pid <= 0)
        return 0;
    char p[64], line[512];
    snprintf(p, sizeof(p), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(p, "re");
    if (f == NULL)
        return 0; /* gone (ESRCH) or unreadable: not a live holder */
    int ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    const char *rp = ok ? strrchr(line, ')') : NULL;
    char state = 0;
    unsigned flags = 0;
    int d;
    if (rp == NULL || sscanf(rp + 1, " %c %d %d %d %d %d %u", &state, &d, &d,
                             &d, &d, &d, &flags) != 7)
        return 0;
    if (state == 'Z' || state == 'X' || state == 'x' || (flags & DD_PF_EXITING))
        return 0;
    snprintf(p, sizeof(p), "/proc/%ld/status", (long)pid);
    f = fopen(p, "re");
    if (f == NULL)
        return 0;
    int live = 1;
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long mask = 0;
        /* a fatal signal on its way: the kernel marks SIGKILL pending on
         * every thread of a process it is about to end */
        if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
             sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
            (mask & (1ull << (SIGKILL - 1))))
            live = 0;
    }
    fclose(f);
    if (!live)
        return 0;
    char mine[64], theirs[64];
    if (dd_proc_comm(getpid(), mine, sizeof(mine)) == 0 &&
        dd_proc_comm(pid, theirs, sizeof(theirs)) == 0 &&
        strcmp(mine, theirs) != 0)
        return 0; /* the pid was reused by another program */
    return 1;
}

static void
dd_sleep_ms(uint32_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int
sup_datadir_lock_wait(const char *dir, uint32_t lock_wait_ms, char *err,
                      size_t errlen)
{
    /* The children inherit the lock fd across fork (no exec), so the lock
     * lives until the last process of the node is gone. */
    uint64_t start = vs_monotonic_ns();
    uint64_t deadline = start + (uint64_t)lock_wait_ms * 1000000u;
    pid_t logged = -1;
    for (;;) {
        int fd = -1;
        int rc = datadir_open_locked(dir, &fd, err, errlen);
        if (rc == 0) {
            if (logged != -1)
                vs_log_info("data dir %s: lock taken after %llu ms", dir,
                            (unsigned long long)((vs_monotonic_ns() - start) /
                                                 1000000u));
            return fd;
        }
        if (rc != -EWOULDBLOCK)
            return rc;
        pid_t holder = 0;
        enum datadir_lock_state st = datadir_probe_lock(dir, &holder);
        if (st == DATADIR_UNLOCKED)
            continue; /* released between the two calls: try again now */
        if (st == DATADIR_LOCKED && sup_lock_holder_live(holder)) {
            snprintf(err, errlen, "data dir %s is locked by vstreamd pid %ld",
                     dir, (long)holder);
            return -EWOULDBLOCK;
        }
        uint64_t now = vs_monotonic_ns();
        if (now >= deadline) {
            snprintf(err, errlen,
                     "data dir %s is still locked %u ms after its node "
                     "(vstreamd pid %ld) died: its processes have not "
                     "exited",
                     dir, lock_wait_ms, (long)holder);
            return -ETIMEDOUT;
        }
        if (holder != logged) {
            logged = holder;
            vs_log_warn("data dir %s is locked by vstreamd pid %ld, which "
                        "is gone or dying: waiting up to %u ms for its "
                        "processes to exit",
                        dir, (long)holder, lock_wait_ms);
        }
        uint64_t left_ms = (deadline - now) / 1000000u;
        dd_sleep_ms(left_ms < DD_LOCK_POLL_MS ? (uint32_t)left_ms + 1
                                              : DD_LOCK_POLL_MS);
    }
}

int
sup_datadir_lock(const char *dir, char *err, size_t errlen)
{
    return sup_datadir_lock_wait(dir, SUP_LOCK_WAIT_MS, err, errlen);
}

/* Writes "K\n" to dir/shards through the storage layer's atomic
 * replacement (tmp, fsync, rename, fsync dir). */
static int
dd_record_shards(const char *dir, uint32_t k, char *err, size_t errlen)
{
    struct vs_sio io;
    sio_init_real(&io);
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%u\n", k);
    int rc = afile_replace(&io, dir, VS_DATADIR_SHARDS_FILE, buf, (size_t)n);
    if (rc != 0) {
        char why[512];
        if (sio_is_fatal(&io))
            sio_fatal_msg(&io, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "%s", strerror(-rc));
        snprintf(err, errlen, "cannot record the shard count in %s/%s: %s", dir,
                 VS_DATADIR_SHARDS_FILE, why);
    }
    return rc;
}

int
sup_shards_resolve(const char *dir, uint32_t requested, int explicit_set,
                   uint32_t *k_out, char *err, size_t errlen)
{
    char path[4096];
    int rc = dd_path(path, sizeof(path), dir, VS_DATADIR_SHARDS_FILE);
    if (rc != 0) {
        snprintf(err, errlen, "data dir path too long: %s", dir);
        return rc;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1 && errno != ENOENT) {
        rc = -errno;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
        return rc;
    }
    if (fd >= 0) {
        char buf[32] = {0};
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        char *end = NULL;
        errno = 0;
        unsigned long v = n > 0 ? strtoul(buf, &end, 10) : 0;
        if (n <= 0 || errno != 0 || end == buf || *end != '\n' ||
            end[1] != '\0' || v < 1 || v > 256) {
            snprintf(err, errlen,
                     "%s is damaged (expected a shard count 1..256 and a "
                     "newline)",
                     path);
            return -EINVAL;
        }
        if (explicit_set && requested != 0 && requested != v) {
            snprintf(err, errlen,
                     "--shards %u differs from the %lu shards recorded in "
                     "%s at first boot; re-sharding is not supported",
                     requested, v, path);
            return -EINVAL;
        }
        *k_out = (uint32_t)v;
        return 0;
    }
    uint32_t k = requested;
    if (k == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        k = cpus < 1 ? 1 : (cpus > 256 ? 256 : (uint32_t)cpus);
    }
    rc = dd_record_shards(dir, k, err, errlen);
    if (rc != 0)
        return rc;
    *k_out = k;
    return 0;
}
