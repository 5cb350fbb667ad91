/*
 * shard/storage/xfer_store.c - snapshot.bin and journal replacement for a
 * state-transfer install, crash-safe order; see xfer_store.h.
 */
#include "config.h"

#include <errno.h>
#include "common/checksum.h"
#include "common/layout.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/xfer_store.h"

int
xstore_install_snapshot(struct vs_sio *io, const char *meta,
                        struct wal *journal, uint64_t commit_min, uint64_t op,
                        const uint8_t *p, size_t len, uint64_t expected,
                        struct vs_u128 *checksum)
{
    struct vs_snapshot_prefix pre;
    if (op <= commit_min || vs_snapshot_prefix_read(p, len, &pre) != 0)
        return -EINVAL;
    struct vs_u128 sum = vs_checksum(p, len);
    if (sum.lo != expected || pre.op != op)
        return -EBADMSG;
    int rc = 0;
    /* 1. entries above the local commit: the install replaces them */
    if (!wal_empty(journal) && wal_last_op(journal) > commit_min) {
        rc = wal_truncate_from(journal, commit_min + 1);
        if (rc != 0)
            goto fail;
    }
    /* 2. the snapshot */
    rc = snapfile_write(io, meta, p, len, checksum);
    if (rc != 0)
        goto fail;
    /* 3. everything left is behind the snapshot */
    if (!wal_empty(journal)) {
        rc = wal_drain(journal, op);
        if (rc != 0)
            goto fail;
    }
    return 0;
fail:
    return rc;
}
