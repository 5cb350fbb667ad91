/*
 * shard/storage/checkpoint_header.c - the header a checkpoint pairing
 * records; the rule is in checkpoint_header.h.
 *
 * Invariant: only a header of exactly op `op` with a non-zero checksum
 * is returned. Callers: the data dir's one writer.
 */
#include "config.h"

#include "common/checksum.h"
#include "shard/storage/checkpoint_header.h"

int
ckpt_header_find(const struct wal *journal, const struct vs_hdr_prepare *known,
                 uint64_t op, struct vs_hdr_prepare *out)
{
    if (op == 0)
        return 0;
    const struct vs_hdr_prepare *h = wal_header(journal, op);
    if (h == NULL && known != NULL && known->op == op &&
        !vs_u128_is_zero(known->f.checksum))
        h = known;
    if (h == NULL)
        return 0;
    *out = *h;
    return 1;
}
