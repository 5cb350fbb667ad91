/*
 * shard/storage/io_dir.c - directory operations of the storage I/O
 * interface (mkdir, rmdir, reading entries, renaming a directory): the
 * real implementation, the fault-injecting wrappers and the classifying
 * helpers; see io.h for the classification.
 * Callers: see io.h.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shard/storage/io.h"

static int
real_mkdir(struct vs_sio *io, const char *path, mode_t mode)
{
    (void)io;
    return mkdir(path, mode) == -1 ? -errno : 0;
}

static int
real_rmdir(struct vs_sio *io, const char *path)
{
    (void)io;
    return rmdir(path) == -1 ? -errno : 0;
}

static int
real_readdir(struct vs_sio *io, const char *path,
             int (*fn)(void *arg, const char *name), void *arg)
{
    (void)io;
    DIR *d = opendir(path);
    if (d == NULL)
        return -errno;
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (de == NULL) {
            if (errno != 0)
                rc = -errno;
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        rc = fn(arg, de->d_name);
        if (rc != 0)
            break;
    }
    closedir(d);
    return rc;
}

static int
real_dir_rename(struct vs_sio *io, const char *from, const char *to)
{
    (void)io;
    return rename(from, to) == -1 ? -errno : 0;
}

void
sio_dir_init_real(struct vs_sio *io)
{
    io->mkdir = real_mkdir;
    io->rmdir = real_rmdir;
    io->readdir = real_readdir;
    io->dir_rename = real_dir_rename;
}

/* ---- fault injection: io is the first member of struct sio_fault ---- */

static struct sio_fault *
fault_of(struct vs_sio *io)
{
    return (struct sio_fault *)(void *)io;
}

static int
fault_mkdir(struct vs_sio *io, const char *path, mode_t mode)
{
    struct sio_fault *f = fault_of(io);
    int err;
    if (sio_fault_fire(f, SIO_MKDIR, &err))
        return -err;
    return f->real.mkdir(&f->real, path, mode);
}

static int
fault_rmdir(struct vs_sio *io, const char *path)
{
    struct sio_fault *f = fault_of(io);
    int err;
    if (sio_fault_fire(f, SIO_RMDIR, &err))
        return -err;
    return f->real.rmdir(&f->real, path);
}

static int
fault_readdir(struct vs_sio *io, const char *path,
              int (*fn)(void *arg, const char *name), void *arg)
{
    struct sio_fault *f = fault_of(io);
    int err;
    if (sio_fault_fire(f, SIO_READDIR, &err))
        return -err;
    return f->real.readdir(&f->real, path, fn, arg);
}

static int
fault_dir_rename(struct vs_sio *io, const char *from, const char *to)
{
    struct sio_fault *f = fault_of(io);
    int err;
    if (sio_fault_fire(f, SIO_DIR_RENAME, &err))
        return -err;
    return f->real.dir_rename(&f->real, from, to);
}

void
sio_dir_init_fault(struct sio_fault *f)
{
    f->io.mkdir = fault_mkdir;
    f->io.rmdir = fault_rmdir;
    f->io.readdir = fault_readdir;
    f->io.dir_rename = fault_dir_rename;
}

/* ---- classifying helpers ---- */

int
sio_mkdir(struct vs_sio *io, const char *path, mode_t mode)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    int rc = io->mkdir(io, path, mode);
    if (rc == -EEXIST) {
        struct stat st;
        if (stat(path, &st) == -1)
            return -errno;
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    }
    return rc;
}

int
sio_rmdir(struct vs_sio *io, const char *path)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    return io->rmdir(io, path);
}

int
sio_readdir(struct vs_sio *io, const char *path, sio_dirent_fn *fn, void *arg)
{
    return io->readdir(io, path, fn, arg);
}

int
sio_dir_rename(struct vs_sio *io, const char *from, const char *to)
{
    if (io->fatal.set)
        return -VS_EFATAL;
    int rc = io->dir_rename(io, from, to);
    if (rc < 0)
        return sio_set_fatal(io, SIO_DIR_RENAME, -rc, to);
    return 0;
}
