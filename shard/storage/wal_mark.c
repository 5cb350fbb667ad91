/*
 * shard/storage/wal_mark.c - the journal's durable mark (format and
 * safety argument in wal_mark.h).
 *
 * Invariants: a write goes to the slot its sequence names and is fsynced
 * before wal_mark_write returns; the in-memory op is the newest value
 * written or read. Callers: shard/storage/journal.c only.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "shard/storage/wal_mark.h"

static const uint8_t mark_magic[4] = {'I', 'W', 'M', 'K'};

void
wal_mark_encode(uint64_t seq, uint64_t op, uint8_t out[WAL_MARK_SLOT_SIZE])
{
    memcpy(out, mark_magic, 4);
    vs_store_u32(out + 4, WAL_MARK_VERSION);
    vs_store_u64(out + 8, seq);
    vs_store_u64(out + 16, op);
    struct vs_u128 c = vs_checksum(out, 24);
    vs_store_u64(out + 24, c.lo);
    vs_store_u64(out + 32, c.hi);
}

int
wal_mark_decode(const uint8_t in[WAL_MARK_SLOT_SIZE], uint64_t *seq,
                uint64_t *op)
{
    int zero = 1;
    for (unsigned i = 0; i < WAL_MARK_SLOT_SIZE && zero; i++)
        zero = in[i] == 0;
    if (zero)
        return 0;
    struct vs_u128 c = vs_checksum(in, 24);
    if (vs_load_u64(in + 24) != c.lo || vs_load_u64(in + 32) != c.hi ||
        memcmp(in, mark_magic, 4) != 0 ||
        vs_load_u32(in + 4) != WAL_MARK_VERSION)
        return -1;
    *seq = vs_load_u64(in + 8);
    *op = vs_load_u64(in + 16);
    return *seq > 0 ? 1 : -1;
}

int
wal_mark_read(struct wal_mark *m, struct vs_sio *io, const char *dir)
{
    memset(m, 0, sizeof(*m));
    m->io = io;
    m->fd = -1;
    int rc = afile_join(m->path, sizeof(m->path), dir, WAL_MARK_FILE);
    if (rc < 0)
        return rc;
    int fd = sio_open(io, m->path, O_RDONLY, 0);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return fd;
    int valid = 0;
    for (unsigned s = 0; s < 2; s++) {
        uint8_t buf[WAL_MARK_SLOT_SIZE];
        size_t got = 0;
        memset(buf, 0, sizeof(buf));
        rc = sio_pread_all(io, fd, buf, sizeof(buf),
                           (off_t)(s * WAL_MARK_SLOT_GAP), &got);
        if (rc == -ENODATA)
            rc = 0; /* a short file: the rest reads as never written */
        uint64_t seq = 0, op = 0;
        int d = rc == 0 ? wal_mark_decode(buf, &seq, &op) : -1;
        if (rc < 0 && rc != -EIO) {
            sio_close(io, fd);
            return rc;
        }
        if (d < 0 || (d > 0 && seq % 2 != s)) {
            m->damaged_slots++;
            continue;
        }
        if (d > 0 && seq > m->seq) {
            m->seq = seq;
            m->op = op;
            valid = 1;
        }
    }
    sio_close(io, fd);
    if (valid)
        m->status = WAL_MARK_OK;
    else if (m->damaged_slots > 0)
        m->status = WAL_MARK_DAMAGED;
    return 0;
}

int
wal_mark_write(struct wal_mark *m, uint64_t op)
{
    if (m->fd < 0)
        return -EBADF;
    uint8_t buf[WAL_MARK_SLOT_SIZE];
    uint64_t seq = m->seq + 1;
    wal_mark_encode(seq, op, buf);
    int rc = sio_pwrite_all(m->io, m->fd, buf, sizeof(buf),
                            (off_t)((seq % 2) * WAL_MARK_SLOT_GAP), m->path);
    /* the slot's bytes (and, on creation, the file's size) are all a read
     * needs: no timestamp has to reach the disk with them */
    if (rc == 0)
        rc = sio_fdatasync(m->io, m->fd, m->path);
    if (rc < 0)
        return rc;
    m->seq = seq;
    m->op = op;
    m->status = WAL_MARK_OK;
    return 0;
}

int
wal_mark_open(struct wal_mark *m, const char *dir, uint64_t op)
{
    int created = 0;
    int fd = sio_open(m->io, m->path, O_RDWR, 0);
    if (fd == -ENOENT) {
        fd = sio_open(m->io, m->path, O_RDWR | O_CREAT | O_EXCL, 0600);
        created = 1;
    }
    if (fd < 0)
        return fd;
    m->fd = fd;
    int rc = 0;
    if (m->status != WAL_MARK_OK)
        rc = wal_mark_write(m, op);
    if (rc == 0 && created)
        rc = sio_dir_fsync(m->io, dir); /* the name is durable */
    if (rc < 0)
        wal_mark_close(m);
    return rc;
}

void
wal_mark_close(struct wal_mark *m)
{
    if (m->fd >= 0)
        sio_close(m->io, m->fd);
    m->fd = -1;
}

int
wal_mark_above(const struct wal_mark *m, uint64_t op)
{
    return m->status == WAL_MARK_OK && op > m->op;
}

const char *
wal_mark_status_name(enum wal_mark_status st)
{
    switch (st) {
    case WAL_MARK_OK:
        return "ok";
    case WAL_MARK_ABSENT:
        return "absent";
    case WAL_MARK_DAMAGED:
        return "damaged";
    }
    return "unknown";
}
