/*
 * shard/storage/vsr_state.h - the VsrState payload of a superblock record.
 *
 * Role: the consensus numbers a replica must never forget. Superblock
 * record format version 1 carries exactly 66 bytes, little-endian:
 *
 *    0 cluster              u128
 *   16 replica_id           u8
 *   17 replica_count        u8
 *   18 view                 u32
 *   22 log_view             u32
 *   26 commit_max           u64   (recovery lower bound only)
 *   34 checkpoint_op        u64
 *   42 checkpoint_checksum  u128  (checksum of the snapshot PAYLOAD)
 *   58 offset_frontier      u64   (0 for the metadata replica)
 *   66 end
 *
 * Invariants: decode refuses (typed, never misparses) an unknown record
 * version, a payload of the wrong length, log_view > view, a replica
 * count of 0 or above VS_REPLICAS_MAX, and replica_id >= replica_count.
 * Golden bytes are pinned by tests/unit/check_storage_sb.c.
 * Callers: any process (pure functions).
 */
#ifndef VS_SHARD_STORAGE_VSR_STATE_H
#define VS_SHARD_STORAGE_VSR_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

#define VSR_STATE_VERSION 1u /* superblock record version carrying it */
#define VSR_STATE_SIZE    66u

struct vs_vsr_state {
    struct vs_u128 cluster;
    uint8_t replica_id;
    uint8_t replica_count;
    uint32_t view;
    uint32_t log_view;
    uint64_t commit_max;
    uint64_t checkpoint_op;
    struct vs_u128 checkpoint_checksum;
    uint64_t offset_frontier;
};

enum vsr_state_error {
    VSR_STATE_OK = 0,
    VSR_STATE_UNKNOWN_VERSION,
    VSR_STATE_BAD_LENGTH,
    VSR_STATE_LOG_VIEW_AHEAD,
    VSR_STATE_BAD_REPLICA,
};

/* Writes the 66-byte version-1 encoding into out. */
void vsr_state_encode(const struct vs_vsr_state *s,
                      uint8_t out[VSR_STATE_SIZE]);
/* Decodes a payload of superblock record version `version`. Returns
 * VSR_STATE_OK or the typed error; `reason` (may be NULL) gets one line. */
enum vsr_state_error vsr_state_decode(uint16_t version, const void *payload,
                                      size_t len, struct vs_vsr_state *out,
                                      char *reason, size_t reason_len);
const char *vsr_state_error_name(enum vsr_state_error e);

#endif /* VS_SHARD_STORAGE_VSR_STATE_H */
