/*
 * shard/storage/datadir.c - mkdir -p of the data dir and its flock.
 *
 * Invariants: the lock is flock(2) on DATA/vstream.lock (advisory, per
 * open file description, released by the kernel when the last holder
 * dies: no stale lock after a crash). The pid written into the file is
 * informational only (messages); the flock is the truth.
 * Callers: the supervisor (datadir_open_locked), vstream-inspect
 * (datadir_probe_lock), tests.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/layout.h"
#include "shard/storage/datadir.h"
#include "shard/storage/io.h"

/* fsyncs the directory holding path's last component, so a directory
 * just created there survives a crash. 0 or -VS_EFATAL. */
static int
fsync_parent(struct vs_sio *io, const char *path)
{
    char parent[4096];
    snprintf(parent, sizeof(parent), "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash == NULL)
        snprintf(parent, sizeof(parent), ".");
    else if (slash == parent)
        parent[1] = '\0';
    else
        *slash = '\0';
    return sio_dir_fsync(io, parent);
}

int
datadir_mkdir_p(const char *path, mode_t mode)
{
    struct vs_sio io;
    sio_init_real(&io);
    int rc = datadir_mkdir_p_io(&io, path, mode);
    return rc == -VS_EFATAL ? -EIO : rc;
}

int
datadir_mkdir_p_io(struct vs_sio *io, const char *path, mode_t mode)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0)
        return -EINVAL;
    if (len >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) == -1) {
            if (errno != EEXIST)
                return -errno;
        } else {
            int rc = fsync_parent(io, buf);
            if (rc < 0)
                return rc;
        }
        *p = '/';
    }
    if (mkdir(buf, mode) == -1) {
        if (errno != EEXIST)
            return -errno;
        struct stat st;
        if (stat(buf, &st) == -1)
            return -errno;
        if (!S_ISDIR(st.st_mode))
            return -ENOTDIR;
        return 0;
    }
    return fsync_parent(io, buf);
}

static pid_t
read_pid(int fd)
{
    char buf[32];
    ssize_t n;
    do {
        n = pread(fd, buf, sizeof(buf) - 1, 0);
    } while (n == -1 && errno == EINTR);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    long v = strtol(buf, NULL, 10);
    return v > 0 ? (pid_t)v : 0;
}

int
datadir_open_locked(const char *path, int *fd_out, char *err, size_t errlen)
{
    *fd_out = -1;
    char lock[4096], meta[4096];
    int rc;
    int fd = -1;
    if (snprintf(lock, sizeof(lock), "%s/%s", path, VS_DATADIR_LOCK_FILE) >=
            (int)sizeof(lock) ||
        snprintf(meta, sizeof(meta), "%s/%s", path, VS_METADATA_DIR) >=
            (int)sizeof(meta)) {
        rc = -ENAMETOOLONG;
        snprintf(err, errlen, "data dir path %s is too long", path);
        goto fail;
    }
    rc = datadir_mkdir_p(path, 0700);
    if (rc < 0) {
        snprintf(err, errlen, "cannot create data dir %s: %s", path,
                 strerror(-rc));
        goto fail;
    }
    do {
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    } while (fd == -1 && errno == EINTR);
    if (fd == -1) {
        rc = -errno;
        snprintf(err, errlen, "cannot open %s: %s", lock, strerror(-rc));
        goto fail;
    }
    int r;
    do {
        r = flock(fd, LOCK_EX | LOCK_NB);
    } while (r == -1 && errno == EINTR);
    if (r == -1) {
        rc = -errno;
        if (rc == -EWOULDBLOCK) {
            pid_t holder = read_pid(fd);
            snprintf(err, errlen, "data dir %s is locked by vstreamd pid %ld",
                     path, (long)holder);
        } else {
            snprintf(err, errlen, "cannot lock %s: %s", lock, strerror(-rc));
        }
        goto fail;
    }
    /* we hold the lock: record our pid (informational) */
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == -1 || pwrite(fd, pid, (size_t)n, 0) != n) {
        rc = -errno;
        snprintf(err, errlen, "cannot write %s: %s", lock, strerror(-rc));
        goto fail;
    }
    rc = datadir_mkdir_p(meta, 0700);
    if (rc < 0) {
        snprintf(err, errlen, "cannot create %s: %s", meta, strerror(-rc));
        goto fail;
    }
    *fd_out = fd;
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    return rc;
}

enum datadir_lock_state
datadir_probe_lock(const char *path, pid_t *pid)
{
    if (pid)
        *pid = 0;
    char lock[4096];
    if (snprintf(lock, sizeof(lock), "%s/%s", path, VS_DATADIR_LOCK_FILE) >=
        (int)sizeof(lock))
        return DATADIR_LOCK_UNKNOWN;
    int fd;
    do {
        fd = open(lock, O_RDONLY | O_CLOEXEC);
    } while (fd == -1 && errno == EINTR);
    if (fd == -1)
        return errno == ENOENT ? DATADIR_UNLOCKED : DATADIR_LOCK_UNKNOWN;
    enum datadir_lock_state st = DATADIR_UNLOCKED;
    int r;
    do {
        r = flock(fd, LOCK_SH | LOCK_NB);
    } while (r == -1 && errno == EINTR);
    if (r == -1) {
        st = errno == EWOULDBLOCK ? DATADIR_LOCKED : DATADIR_LOCK_UNKNOWN;
        if (st == DATADIR_LOCKED && pid)
            *pid = read_pid(fd);
    } else {
        (void)flock(fd, LOCK_UN);
    }
    close(fd);
    return st;
}
