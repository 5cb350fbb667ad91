/*
 * shard/storage/atomic_file.c - tmp, fsync, rename, directory fsync.
 *
 * Protocol (numbered once, here):
 *   1. open DIR/NAME.tmp O_CREAT|O_TRUNC|O_WRONLY, mode 0600;
 *   2. write the contents (ENOSPC -> unlink the .tmp, report -ENOSPC);
 *   3. fsync the .tmp, close it;
 *   4. rename .tmp over NAME (atomic: readers see old or new, never a mix);
 *   5. fsync DIR so the rename itself is durable.
 * Any failure in 3-5, and any write error but ENOSPC, is fatal (io.h).
 * Callers: see atomic_file.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mem.h"
#include "shard/storage/atomic_file.h"

int
afile_join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return -ENAMETOOLONG;
    return 0;
}

int
afile_begin(struct afile_tx *tx, struct vs_sio *io, const char *dir,
            const char *name)
{
    memset(tx, 0, sizeof(*tx));
    tx->io = io;
    tx->fd = -1;
    int rc = afile_join(tx->path, sizeof(tx->path), dir, name);
    if (rc == 0)
        rc = snprintf(tx->tmp_path, sizeof(tx->tmp_path), "%s.tmp", tx->path) >=
                     (int)sizeof(tx->tmp_path)
                 ? -ENAMETOOLONG
                 : 0;
    if (rc == 0 &&
        snprintf(tx->dir, sizeof(tx->dir), "%s", dir) >= (int)sizeof(tx->dir))
        rc = -ENAMETOOLONG;
    if (rc < 0)
        return rc;
    if (sio_is_fatal(io))
        return -VS_EFATAL;
    int fd = sio_open(io, tx->tmp_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0)
        return fd;
    tx->fd = fd;
    return 0;
}

int
afile_write(struct afile_tx *tx, const void *buf, size_t len)
{
    int rc = sio_write_all(tx->io, tx->fd, buf, len, tx->tmp_path);
    if (rc == 0)
        tx->len += (off_t)len;
    return rc;
}

int
afile_commit(struct afile_tx *tx)
{
    int rc = sio_fsync(tx->io, tx->fd, tx->tmp_path);
    sio_close(tx->io, tx->fd);
    tx->fd = -1;
    if (rc < 0)
        return rc; /* fatal; the .tmp stays as evidence, never renamed */
    rc = sio_rename(tx->io, tx->tmp_path, tx->path);
    if (rc < 0)
        return rc;
    return sio_dir_fsync(tx->io, tx->dir);
}

void
afile_abort(struct afile_tx *tx)
{
    if (tx->fd >= 0) {
        sio_close(tx->io, tx->fd);
        tx->fd = -1;
    }
    /* Best effort: a leftover .tmp is ignored by readers and removed by
     * afile_cleanup_tmp at the next open. On a poisoned io this does
     * nothing. */
    (void)sio_unlink(tx->io, tx->tmp_path);
}

int
afile_replace(struct vs_sio *io, const char *dir, const char *name,
              const void *buf, size_t len)
{
    struct afile_tx tx;
    int rc = afile_begin(&tx, io, dir, name);
    if (rc < 0)
        return rc;
    rc = afile_write(&tx, buf, len);
    if (rc < 0)
        goto fail;
    return afile_commit(&tx);
fail:
    afile_abort(&tx);
    return rc;
}

int
afile_cleanup_tmp(struct vs_sio *io, const char *dir, const char *name)
{
    char path[AFILE_PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/%s.tmp", dir, name);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -ENAMETOOLONG;
    int rc = sio_unlink(io, path);
    if (rc == -ENOENT)
        return 0;
    return rc < 0 ? rc : 1;
}

int
afile_read_all(struct vs_sio *io, const char *path, size_t max_len,
               uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    int fd = sio_open(io, path, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    int rc;
    uint8_t *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) == -1) {
        rc = -errno;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        goto fail;
    }
    if ((uint64_t)st.st_size > max_len) {
        rc = -EFBIG;
        goto fail;
    }
    size_t len = (size_t)st.st_size;
    if (len > 0) {
        buf = vs_xmalloc(len);
        size_t got = 0;
        rc = sio_pread_all(io, fd, buf, len, 0, &got);
        if (rc == -ENODATA) { /* shrank while reading: take what is there */
            len = got;
            rc = 0;
        }
        if (rc < 0)
            goto fail;
    }
    sio_close(io, fd);
    *out = buf;
    *out_len = len;
    return 0;
fail:
    free(buf);
    sio_close(io, fd);
    return rc;
}
