/*
 * shard/storage/snapshot_install.c - writing a transferred snapshot and
 * clearing the journal under it; the order and its crash cases are in
 * snapshot_install.h.
 *
 * Invariant: once step 1 changed the journal, every failure is fatal
 * (never carry on with an engine that believes the old journal).
 * Callers: the data dir's one writer.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "common/errors.h"
#include "shard/storage/snapshot_file.h"
#include "shard/storage/snapshot_install.h"

static int
fatal(char *err, size_t errlen, const char *what, uint64_t op, int rc)
{
    snprintf(err, errlen, "state transfer of op %llu: %s failed: %s",
             (unsigned long long)op, what, sio_strerror(rc));
    return -VS_EFATAL;
}

int
snapinst_store(struct vs_sio *io, const char *meta_dir, struct wal *journal,
               uint64_t commit_min, const uint8_t *payload, size_t len,
               uint64_t op, struct vs_u128 *sum, char *err, size_t errlen)
{
    if (op <= commit_min) {
        snprintf(err, errlen, "snapshot op %llu is not above commit_min %llu",
                 (unsigned long long)op, (unsigned long long)commit_min);
        return -EINVAL;
    }
    /* 1. the suffix above commit_min */
    int rc = 0;
    if (!wal_empty(journal) && wal_last_op(journal) > commit_min)
        rc = wal_truncate_from(journal, wal_first_op(journal) > commit_min
                                            ? wal_first_op(journal)
                                            : commit_min + 1);
    if (rc == -ENOSPC) {
        snprintf(err, errlen, "journal cut: no space left on device");
        return -ENOSPC;
    }
    if (rc != 0)
        return fatal(err, errlen, "the journal cut", op, rc);
    /* 2. snapshot.bin */
    rc = snapfile_write(io, meta_dir, payload, len, sum);
    if (rc != 0)
        return fatal(err, errlen, "writing snapshot.bin", op, rc);
    /* 3. the journal below it */
    if (!wal_empty(journal)) {
        rc = wal_drain(journal, op + 1);
        if (rc != 0)
            return fatal(err, errlen, "emptying the journal", op, rc);
    }
    return 0;
}
