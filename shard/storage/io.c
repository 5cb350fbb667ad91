/*
 * shard/storage/io.c - real and fault-injecting implementations of the
 * storage I/O interface, and the helpers that classify errors as fatal.
 *
 * Invariants: the helpers never retry a failed fsync/rename/dir fsync
 * (fsyncgate: the kernel may have dropped the dirty pages); the first
 * fatal error is recorded in io->fatal and the io refuses to mutate the
 * disk afterwards. EINTR is retried inside the real primitives.
 * Callers: see io.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/metrics.h"
#include "shard/storage/io.h"

/* ---- the real implementation ---- */

static int
real_open(struct vs_sio *io, const char *path, int flags, mode_t mode)
{
    (void)io;
    int fd;
    do {
        fd = open(path, flags | O_CLOEXEC, mode);
    } while (fd == -1 && errno == EINTR);
    return fd == -1 ? -errno : fd;
}

static ssize_t
real_pread(struct vs_sio *io, int fd, void *buf, size_t len, off_t off)
{
    (void)io;
    ssize_t n;
    do {
        n = pread(fd, buf, len, off);
    } while (n == -1 && errno == EINTR);
    return n == -1 ? -errno : n;
}

static ssize_t
real_pwrite(struct vs_sio *io, int fd, const void *buf, size_t len, off_t off)
{
    (void)io;
    ssize_t n;
    do {
        n = pwrite(fd, buf, len, off);
    } while (n == -1 && errno == EINTR);
    return n == -1 ? -errno : n;
}

static ssize_t
real_write(struct vs_sio *io, int fd, const void *buf, size_t len)
{
    (void)io;
    ssize_t n;
    do {
        n = write(fd, buf, len);
    } while (n == -1 && errno == EINTR);
    return n == -1 ? -errno : n;
}

static int
real_fsync(struct vs_sio *io, int fd)
{
    (void)io;
    /* No EINTR retry loop: fsync is not interrupted by signals on Linux
     * and a retry after a real failure would lie (fsyncgate). */
    return fsync(fd) == -1 ? -errno : 0;
}

static int
real_fdatasync(struct vs_sio *io, int fd)
{
    (void)io;
    return fdatasync(fd) == -1 ? -errno : 0; /* never retried, as fsync */
}

static int
real_rename(struct vs_sio *io, const char *from, const char *to)
{
    (void)io;
    return rename(from, to) == -1 ? -errno : 0;
}

static int
real_dir_fsync(struct vs_sio *io, const char *dir)
{
    (void)io;
    int fd;
    do {
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd == -1 && errno == EINTR);
    if (fd == -1)
        return -errno;
    int rc = fsync(fd) == -1 ? -errno : 0;
    close(fd);
    return rc;
}

static int
real_ftruncate(struct vs_sio *io, int fd, off_t len)
{
    (void)io;
    int rc;
    do {
        rc = ftruncate(fd, len);
    } while (rc == -1 && errno == EINTR);
    return rc == -1 ? -errno : 0;
}

static int
real_unlink(struct vs_sio *io, const char *path)
{
    (void)io;
    return unlink(path) == -1 ? -errno : 0;
}

static int
real_close(struct vs_sio *io, int fd)
{
    (void)io;
    /* Never retry close on EINTR (Linux closes the fd anyway). */
    return close(fd) == -1 ? -errno : 0;
}

void
sio_init_real(struct vs_sio *io)
{
    memset(io, 0, sizeof(*io));
    io->open = real_open;
    io->pread = real_pread;
    io->pwrite = real_pwrite;
    io->write = real_write;
    io->fsync = real_fsync;
    io->fdatasync = real_fdatasync;
    io->rename = real_rename;
    io->dir_fsync = real_dir_fsync;
    io->ftruncate = real_ftruncate;
    io->unlink = real_unlink;
    io->close = real_close;
    sio_dir_init_real(io);
}

/* ---- classification ---- */

const char *
sio_kind_name(enum sio_kind kind)
{
    switch (kind) {
    case SIO_OPEN:
        return "open";
    case SIO_READ:
        return "read";
    case SIO_WRITE:
        return "write";
    case SIO_FSYNC:
        return "fsync";
    case SIO_RENAME:
        return "rename";
    case SIO_DIR_FSYNC:
        return "directory fsync";
    case SIO_FTRUNCATE:
        return "ftruncate";
    case SIO_UNLINK:
        return "unlink";
    case SIO_MKDIR:
        return "mkdir";
    case SIO_RMDIR:
        return "rmdir";
    case SIO_READDIR:
        return "readdir";
    case SIO_DIR_RENAME:
        return "directory rename";
    case SIO_KIND_COUNT:
        break;
    }
    return "unknown";
}

int
sio_is_fatal(const struct vs_sio *io)
{
    return io->fatal.set;
}

int
sio_set_fatal(struct vs_sio *io, enum sio_kind kind, int err, const char *path)
{
    if (!io->fatal.set) {
        io->fatal.set = 1;
        io->fatal.kind = kind;
        io->fatal.err = err;
        snprintf(io->fatal.path, sizeof(io->fatal.path), "%s",
                 path ? path : "?");
    }
    return -VS_EFATAL;
}

void
sio_fatal_msg(const struct vs_sio *io, char *buf, size_t len)
{
    if (len == 0)
        return;
    if (!io->fatal.set) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, len, "fatal I/O error: %s of %s failed: %s (errno %d)",
             sio_kind_name(io->fatal.kind), io->fatal.path,
             strerror(io->fatal.err), io->fatal.err);
}

const char *
sio_strerror(int rc)
{
    if (rc == -VS_EFATAL || rc == VS_EFATAL)
        return "fatal I/O error";
    return strerror(rc < 0 ? -rc : rc);
}

int
sio_open(struct vs_sio *io, const char *path, int flags, mode_t mode)
{
    return io->open(io, path, flags, mode);
}

void
sio_close(struct vs_sio *io, int fd)
{
    if (fd >= 0)
        (void)io->close(io, fd);
}

int
sio_pread_all(struct vs_sio *io, int fd, void *buf, size_t len, off_t off,
              size_t *got)
{
    size_t done = 0;
    int rc = 0;
    while (done < len) {
        ssize_t n = io->pread(io, fd, (uint8_t *)buf + done, len - done,
                              off + (off_t)done);
        if (n < 0) {
            rc = (int)n;
            break;
        }
        if (n == 0) {
            rc = -ENODATA;
            break;
        }
        done += (size_t)n;
    }
    if (got)
        *got = done;
    return rc;
}

static int
classify_write(struct vs_sio *io, int err, const char *path)
{
    if (err == -ENOSPC)
        return -ENOSPC;
    return sio_set_fatal(io, SIO_WRITE, -err, path);
}

int
sio_pwrite_all(struct vs_sio *io, int fd, const void *buf, size_t len,
               off_t off, const char *path)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    size_t done = 0;
    while (done < len) {
        ssize_t n = io->pwrite(io, fd, (const uint8_t *)buf + done, len - done,
                               off + (off_t)done);
        if (n < 0)
            return classify_write(io, (int)n, path);
        if (n == 0) /* no progress and no error: treat as out of space */
            return -ENOSPC;
        done += (size_t)n;
    }
    return 0;
}

int
sio_write_all(struct vs_sio *io, int fd, const void *buf, size_t len,
              const char *path)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    size_t done = 0;
    while (done < len) {
        ssize_t n = io->write(io, fd, (const uint8_t *)buf + done, len - done);
        if (n < 0)
            return classify_write(io, (int)n, path);
        if (n == 0)
            return -ENOSPC;
        done += (size_t)n;
    }
    return 0;
}

int
sio_fsync(struct vs_sio *io, int fd, const char *path)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    uint64_t t0 = vs_monotonic_ns();
    int rc = io->fsync(io, fd);
    vs_metrics_observe_us(VS_M_HIST_FSYNC, (vs_monotonic_ns() - t0) / 1000u);
    if (rc < 0)
        return sio_set_fatal(io, SIO_FSYNC, -rc, path);
    return 0;
}

int
sio_fdatasync(struct vs_sio *io, int fd, const char *path)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    uint64_t t0 = vs_monotonic_ns();
    int rc = io->fdatasync ? io->fdatasync(io, fd) : io->fsync(io, fd);
    vs_metrics_observe_us(VS_M_HIST_FSYNC, (vs_monotonic_ns() - t0) / 1000u);
    if (rc < 0)
        return sio_set_fatal(io, SIO_FSYNC, -rc, path);
    return 0;
}

int
sio_rename(struct vs_sio *io, const char *from, const char *to)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    int rc = io->rename(io, from, to);
    if (rc < 0)
        return sio_set_fatal(io, SIO_RENAME, -rc, to);
    return 0;
}

int
sio_dir_fsync(struct vs_sio *io, const char *dir)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    uint64_t t0 = vs_monotonic_ns();
    int rc = io->dir_fsync(io, dir);
    vs_metrics_observe_us(VS_M_HIST_FSYNC, (vs_monotonic_ns() - t0) / 1000u);
    if (rc < 0)
        return sio_set_fatal(io, SIO_DIR_FSYNC, -rc, dir);
    return 0;
}

int
sio_ftruncate(struct vs_sio *io, int fd, off_t len, const char *path)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    int rc = io->ftruncate(io, fd, len);
    if (rc < 0)
        return sio_set_fatal(io, SIO_FTRUNCATE, -rc, path);
    return 0;
}

int
sio_unlink(struct vs_sio *io, const char *path)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    return io->unlink(io, path);
}

/* ---- fault injection ---- */

static struct sio_fault *
fault_of(struct vs_sio *io)
{
    /* io is the first member of struct sio_fault */
    return (struct sio_fault *)(void *)io;
}

/* 1 if this call of `kind` must fail; *tear gets the tear length. */
static int
fault_fire(struct sio_fault *f, enum sio_kind kind, int *err, long *tear)
{
    f->calls[kind]++;
    *tear = -1;
    if (f->crashed) {
        *err = EIO;
        return 1;
    }
    struct sio_fault_rule *r = &f->rule[kind];
    if (!r->armed)
        return 0;
    r->count++;
    if (r->count != r->nth)
        return 0;
    r->armed = 0;
    *err = r->err;
    *tear = r->tear;
    if (f->crash_after_fault)
        f->crashed = 1;
    return 1;
}

static int
fault_open(struct vs_sio *io, const char *path, int flags, mode_t mode)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_OPEN, &err, &tear))
        return -err;
    return f->real.open(&f->real, path, flags, mode);
}

static ssize_t
fault_pread(struct vs_sio *io, int fd, void *buf, size_t len, off_t off)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_READ, &err, &tear))
        return -err;
    return f->real.pread(&f->real, fd, buf, len, off);
}

static ssize_t
fault_pwrite(struct vs_sio *io, int fd, const void *buf, size_t len, off_t off)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_WRITE, &err, &tear)) {
        if (tear > 0) {
            size_t k = (size_t)tear < len ? (size_t)tear : len;
            ssize_t n = f->real.pwrite(&f->real, fd, buf, k, off);
            if (n < 0)
                return n;
            /* A short write first, as the kernel reports a partial one;
             * the helper's next call then gets the error. */
            f->rule[SIO_WRITE].armed = 1;
            f->rule[SIO_WRITE].nth = f->rule[SIO_WRITE].count + 1;
            f->rule[SIO_WRITE].tear = -1;
            f->rule[SIO_WRITE].err = err;
            return n;
        }
        return -err;
    }
    return f->real.pwrite(&f->real, fd, buf, len, off);
}

static ssize_t
fault_write(struct vs_sio *io, int fd, const void *buf, size_t len)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_WRITE, &err, &tear)) {
        if (tear > 0) {
            size_t k = (size_t)tear < len ? (size_t)tear : len;
            ssize_t n = f->real.write(&f->real, fd, buf, k);
            if (n < 0)
                return n;
            f->rule[SIO_WRITE].armed = 1;
            f->rule[SIO_WRITE].nth = f->rule[SIO_WRITE].count + 1;
            f->rule[SIO_WRITE].tear = -1;
            f->rule[SIO_WRITE].err = err;
            return n;
        }
        return -err;
    }
    return f->real.write(&f->real, fd, buf, len);
}

static int
fault_fsync(struct vs_sio *io, int fd)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_FSYNC, &err, &tear))
        return -err;
    return f->stub_fsync ? 0 : f->real.fsync(&f->real, fd);
}

static int
fault_rename(struct vs_sio *io, const char *from, const char *to)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_RENAME, &err, &tear))
        return -err;
    return f->real.rename(&f->real, from, to);
}

static int
fault_dir_fsync(struct vs_sio *io, const char *dir)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_DIR_FSYNC, &err, &tear))
        return -err;
    return f->stub_fsync ? 0 : f->real.dir_fsync(&f->real, dir);
}

static int
fault_ftruncate(struct vs_sio *io, int fd, off_t len)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_FTRUNCATE, &err, &tear))
        return -err;
    return f->real.ftruncate(&f->real, fd, len);
}

static int
fault_unlink(struct vs_sio *io, const char *path)
{
    struct sio_fault *f = fault_of(io);
    int err;
    long tear;
    if (fault_fire(f, SIO_UNLINK, &err, &tear))
        return -err;
    return f->real.unlink(&f->real, path);
}

static int
fault_close(struct vs_sio *io, int fd)
{
    struct sio_fault *f = fault_of(io);
    /* close always closes: a crash must not leak descriptors */
    return f->real.close(&f->real, fd);
}

void
sio_fault_init(struct sio_fault *f, int stub_fsync)
{
    memset(f, 0, sizeof(*f));
    sio_init_real(&f->real);
    f->io.open = fault_open;
    f->io.pread = fault_pread;
    f->io.pwrite = fault_pwrite;
    f->io.write = fault_write;
    f->io.fsync = fault_fsync;
    f->io.rename = fault_rename;
    f->io.dir_fsync = fault_dir_fsync;
    f->io.ftruncate = fault_ftruncate;
    f->io.unlink = fault_unlink;
    f->io.close = fault_close;
    f->stub_fsync = stub_fsync;
    sio_dir_init_fault(f);
}

int
sio_fault_fire(struct sio_fault *f, enum sio_kind kind, int *err)
{
    long tear;
    return fault_fire(f, kind, err, &tear);
}

void
sio_fault_arm(struct sio_fault *f, enum sio_kind kind, uint64_t nth, int err,
              long tear)
{
    struct sio_fault_rule *r = &f->rule[kind];
    r->armed = 1;
    r->nth = nth;
    r->err = err;
    r->tear = kind == SIO_WRITE ? tear : -1;
    r->count = 0;
}

void
sio_fault_reset(struct sio_fault *f)
{
    memset(f->rule, 0, sizeof(f->rule));
    f->crashed = 0;
    memset(&f->io.fatal, 0, sizeof(f->io.fatal));
}
