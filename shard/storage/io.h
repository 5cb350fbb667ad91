/*
 * shard/storage/io.h - the injectable I/O interface of the storage layer.
 *
 * Role: every syscall the storage layer makes on a data dir (open, read,
 * write, pwrite, fsync, rename, directory fsync, ftruncate, unlink, close)
 * goes through a `struct vs_sio`, a table of function pointers. Production
 * uses sio_init_real(); tests wrap it with the fault injector
 * (struct sio_fault) that can make the Nth call of a kind fail with an
 * errno, tear a write after K bytes, stub fsync out, or fail everything
 * after the fault (a crash).
 *
 * Error convention (DESIGN §4, vsr-safety §1 (d)):
 *  - Primitive ops return >= 0 or -errno; they never classify.
 *  - The sio_* helpers below classify: any fsync / rename / directory
 *    fsync failure, whatever its errno, and any write or ftruncate error
 *    other than ENOSPC is FATAL. A fatal error returns -VS_EFATAL and
 *    records the failing op, path and errno in io->fatal (first one
 *    wins); the io then stays poisoned: every later mutating helper (write,
 *    fsync, rename, ftruncate, unlink) fails with -VS_EFATAL without
 *    touching the disk (never retry and carry on); reads still work.
 *    The node turns it into exit 2 with sio_fatal_msg() on one line.
 *  - ENOSPC on a write is returned as -ENOSPC (clean failure: the caller
 *    cuts back what it appended).
 *  - open/read/unlink failures are plain -errno (not fatal).
 *
 * Invariants: one struct vs_sio per owner thread; not thread-safe.
 * Callers: shard 0 (metadata storage), vstream-inspect (read-only use),
 * tests; later the data shards for their partition superblocks.
 */
#ifndef VS_SHARD_STORAGE_IO_H
#define VS_SHARD_STORAGE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The distinct "fatal I/O" error value (negated on return). Far above
 * any errno so it never collides with one. */
#define VS_EFATAL 100000

/* Kinds of operation, for fault injection and messages. */
enum sio_kind {
    SIO_OPEN = 0,
    SIO_READ,
    SIO_WRITE, /* write and pwrite */
    SIO_FSYNC,
    SIO_RENAME,
    SIO_DIR_FSYNC,
    SIO_FTRUNCATE,
    SIO_UNLINK,
    /* directory operations (io_dir.c) */
    SIO_MKDIR,
    SIO_RMDIR,
    SIO_READDIR,    /* opening and reading a directory's entries */
    SIO_DIR_RENAME, /* rename of a directory */
    SIO_KIND_COUNT,
};

/* What made the io fatal: the first fatal error only. */
struct sio_fatal {
    int set;
    enum sio_kind kind;
    int err; /* positive errno */
    char path[512];
};

struct vs_sio {
    /* Returns an fd, or -errno. */
    int (*open)(struct vs_sio *io, const char *path, int flags, mode_t mode);
    /* Return bytes transferred (may be short), or -errno. */
    ssize_t (*pread)(struct vs_sio *io, int fd, void *buf, size_t len,
                     off_t off);
    ssize_t (*pwrite)(struct vs_sio *io, int fd, const void *buf, size_t len,
                      off_t off);
    ssize_t (*write)(struct vs_sio *io, int fd, const void *buf, size_t len);
    /* Return 0 or -errno. */
    int (*fsync)(struct vs_sio *io, int fd);
    int (*rename)(struct vs_sio *io, const char *from, const char *to);
    int (*dir_fsync)(struct vs_sio *io, const char *dir);
    int (*ftruncate)(struct vs_sio *io, int fd, off_t len);
    int (*unlink)(struct vs_sio *io, const char *path);
    int (*close)(struct vs_sio *io, int fd);
    struct sio_fatal fatal;
    /* directory operations (io_dir.c); 0 or -errno */
    int (*mkdir)(struct vs_sio *io, const char *path, mode_t mode);
    int (*rmdir)(struct vs_sio *io, const char *path);
    /* Calls fn for every entry of `path` but "." and "..", in directory
     * order, until fn returns non-zero (returned); 0 or -errno. */
    int (*readdir)(struct vs_sio *io, const char *path,
                   int (*fn)(void *arg, const char *name), void *arg);
    int (*dir_rename)(struct vs_sio *io, const char *from, const char *to);
    /* fdatasync(2); NULL (the simulators, fault injection): fsync */
    int (*fdatasync)(struct vs_sio *io, int fd);
};

/* The real implementation (EINTR retried inside). */
void sio_init_real(struct vs_sio *io);

/* Name of a kind: "open", "fsync", "directory fsync"... */
const char *sio_kind_name(enum sio_kind kind);

/* ---- classifying helpers (use these, not the raw pointers) ---- */

/* 1 if a fatal error happened on this io. */
int sio_is_fatal(const struct vs_sio *io);
/* "fatal I/O error: fsync of /d/metadata/journal.wal failed: Input/output
 * error (errno 5)"; "" if not fatal. */
void sio_fatal_msg(const struct vs_sio *io, char *buf, size_t len);
/* Records a fatal error (first one wins) and returns -VS_EFATAL. */
int sio_set_fatal(struct vs_sio *io, enum sio_kind kind, int err,
                  const char *path);
/* strerror-like for any return value of this module (handles VS_EFATAL). */
const char *sio_strerror(int rc);

/* Opens `path`; -errno (not fatal) on failure. */
int sio_open(struct vs_sio *io, const char *path, int flags, mode_t mode);
void sio_close(struct vs_sio *io, int fd);
/* Reads exactly len bytes at off. 0, -EIO-like -errno, or -ENODATA if the
 * file ends first (*got, if not NULL, says how many bytes were read). */
int sio_pread_all(struct vs_sio *io, int fd, void *buf, size_t len, off_t off,
                  size_t *got);
/* Writes exactly len bytes at off (pwrite) or at the file position
 * (write). 0, -ENOSPC (some bytes may have landed: the caller cuts back),
 * or -VS_EFATAL for any other error. `path` names the file in messages. */
int sio_pwrite_all(struct vs_sio *io, int fd, const void *buf, size_t len,
                   off_t off, const char *path);
int sio_write_all(struct vs_sio *io, int fd, const void *buf, size_t len,
                  const char *path);
/* 0 or -VS_EFATAL (any errno). */
int sio_fsync(struct vs_sio *io, int fd, const char *path);
/* The same for the file's data and what reading it needs (its size), not
 * its timestamps: a small record rewritten in place is durable without a
 * file-system journal commit. Faults and messages count it as an fsync. */
int sio_fdatasync(struct vs_sio *io, int fd, const char *path);
int sio_rename(struct vs_sio *io, const char *from, const char *to);
int sio_dir_fsync(struct vs_sio *io, const char *dir);
int sio_ftruncate(struct vs_sio *io, int fd, off_t len, const char *path);
/* 0, -ENOENT, or -errno (not fatal). */
int sio_unlink(struct vs_sio *io, const char *path);

/* ---- fault injection (tests) ---- */

struct sio_fault_rule {
    int armed;
    uint64_t nth;   /* 1-based: the nth call of `kind` after arming fails */
    int err;        /* errno it fails with (EIO, ENOSPC, ...) */
    long tear;      /* SIO_WRITE only: >= 0 writes that many bytes of the
                       call first, then fails with err; -1 none */
    uint64_t count; /* calls of `kind` seen since arming */
};

struct sio_fault {
    struct vs_sio io; /* first: pass &f->io to the storage code */
    struct vs_sio real;
    struct sio_fault_rule rule[SIO_KIND_COUNT];
    int stub_fsync;        /* fsync and dir fsync succeed without a syscall */
    int crash_after_fault; /* after a fault fires, every call fails EIO */
    int crashed;
    uint64_t calls[SIO_KIND_COUNT]; /* all calls, armed or not */
};

/* Wraps the real implementation. stub_fsync = 1 keeps loops fast. */
void sio_fault_init(struct sio_fault *f, int stub_fsync);
/* The nth (1-based) next call of `kind` fails with `err`; for SIO_WRITE,
 * tear >= 0 first writes `tear` bytes of that call. */
void sio_fault_arm(struct sio_fault *f, enum sio_kind kind, uint64_t nth,
                   int err, long tear);
/* Clears all rules, the crash state and the io's fatal record. */
void sio_fault_reset(struct sio_fault *f);

/* ---- directories (io_dir.c) ----
 * Classification: mkdir, rmdir and reading a directory fail cleanly with
 * -errno (the caller refuses the operation: a partition that cannot get
 * its directory is not created; a scan that cannot read the directory
 * reports it), as open and unlink do; renaming a directory is a rename:
 * any error is fatal. All but reading are refused on a poisoned io. */

/* Entry callback of sio_readdir: 0 goes on, anything else stops. */
typedef int sio_dirent_fn(void *arg, const char *name);

/* mkdir; an existing directory is 0 (EEXIST of a non-directory is
 * -ENOTDIR). 0 or -errno. */
int sio_mkdir(struct vs_sio *io, const char *path, mode_t mode);
/* 0, -ENOENT, or -errno. */
int sio_rmdir(struct vs_sio *io, const char *path);
/* See struct vs_sio's readdir. */
int sio_readdir(struct vs_sio *io, const char *path, sio_dirent_fn *fn,
                void *arg);
/* 0 or -VS_EFATAL (any errno). */
int sio_dir_rename(struct vs_sio *io, const char *from, const char *to);

/* Fills the directory operations of a real / fault-injecting io (called
 * by sio_init_real and sio_fault_init). */
void sio_dir_init_real(struct vs_sio *io);
void sio_dir_init_fault(struct sio_fault *f);
/* The fault injector's decision for one call of `kind` (1: fail with
 * *err), counting it; for io_dir.c's wrappers. */
int sio_fault_fire(struct sio_fault *f, enum sio_kind kind, int *err);

#endif /* VS_SHARD_STORAGE_IO_H */
