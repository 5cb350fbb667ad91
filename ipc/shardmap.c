/*
 * ipc/shardmap.c - partition group -> data shard; see shardmap.h.
 */
#include "config.h"

#include "common/checksum.h"
#include "ipc/shardmap.h"

uint32_t
vs_shard_for_group(uint64_t group_id, uint32_t k)
{
    if (k == 0)
        return 0;
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(group_id >> (8 * i));
    return 1u + (uint32_t)(vs_xxh3_64(le, sizeof(le)) % k);
}
