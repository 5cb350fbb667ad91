/*
 * shard/storage/vsr_state.h - the VsrState payload of a superblock record.
 *
 * Role: the consensus numbers a replica must never forget. The
 * superblock record's version versions this payload. Little-endian:
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
 *   66 end of version 1 (66 bytes)
 *   66 faulty_op            u64   (0 = none) the top of the faulty
 *                                  range: the ops above the recovered
 *                                  head up to this one may belong to the
 *                                  replica's log without being in its
 *                                  journal (a damaged tail cut at boot,
 *                                  or the reach of an adopted log); a
 *                                  DoViewChange claims op >= it
 *   74 checkpoint_prepare   256   the stored header of the prepare at
 *                                  checkpoint_op (all zero: not
 *                                  recorded, checkpoint_op 0 or written
 *                                  by version 1): what the hash chain
 *                                  needs to restart from the checkpoint
 *                                  without that op's WAL entry
 *  330 end of version 2 (330 bytes)
 *  330 nonack_op            u64   (0 = none, <= faulty_op) the top of
 *                                  the never-nacked part of that range:
 *                                  a damaged tail cut at some boot may
 *                                  have held the ops above the head up to
 *                                  it (journaled and acknowledged before
 *                                  the damage): never nacked until held
 *                                  again. The ops above it up to
 *                                  faulty_op are an adopted log's reach
 *                                  never journaled: nackable
 *  338 end of version 3 (338 bytes)
 *  338 faulty_prepare       256   (all zero: none) the header this
 *                                  replica's log holds at the first op
 *                                  of the faulty range (the op above the
 *                                  journal's last entry) when it knows
 *                                  one: a damaged entry whose header
 *                                  verified, or a canonical header it
 *                                  adopted. The WAL no longer holds it
 *                                  (the cut removed it), so without this
 *                                  copy a second restart forgets which
 *                                  op the faulty slot holds. The engine
 *                                  takes it only chained to the
 *                                  recovered head (engine.h
 *                                  faulty_header)
 *  594 end of version 4 (594 bytes)
 *
 * Version 1 payloads decode with faulty_op = nonack_op = 0 and no
 * checkpoint prepare; version 2 (one field for both meanings) decodes
 * with nonack_op = faulty_op (the whole range never nacked, as that
 * release did); version 3 decodes with no faulty prepare; this release
 * writes version 4.
 *
 * Invariants: decode refuses (typed, never misparses) an unknown record
 * version, a payload of the wrong length for its version, log_view >
 * view, a replica count of 0 or above VS_REPLICAS_MAX, replica_id >=
 * replica_count, (version 2 and later) a recorded checkpoint prepare
 * whose op is not checkpoint_op or that is not a prepare, (version 3
 * and later) nonack_op above faulty_op, and (version 4) a recorded
 * faulty prepare that is not a verifying prepare or whose op is 0 or
 * above faulty_op.
 * Golden bytes are pinned by tests/unit/check_storage_sb.c.
 * Callers: any process (pure functions).
 */
#ifndef VS_SHARD_STORAGE_VSR_STATE_H
#define VS_SHARD_STORAGE_VSR_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

#define VSR_STATE_V1      1u /* superblock record version 1 */
#define VSR_STATE_V1_SIZE 66u
#define VSR_STATE_V2      2u /* superblock record version 2 */
#define VSR_STATE_V2_SIZE 330u
#define VSR_STATE_V3      3u /* superblock record version 3 */
#define VSR_STATE_V3_SIZE 338u
#define VSR_STATE_V4      4u /* superblock record version 4 */
#define VSR_STATE_V4_SIZE 594u
#define VSR_STATE_VERSION VSR_STATE_V4 /* written by this release */
#define VSR_STATE_SIZE    VSR_STATE_V4_SIZE

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
    uint64_t faulty_op; /* 0 = none */
    uint64_t nonack_op; /* 0 = none, <= faulty_op */
    /* zero (checksum 0) when not recorded */
    struct vs_hdr_prepare checkpoint_prepare;
    /* the header at the faulty range's first op; zero when none */
    struct vs_hdr_prepare faulty_prepare;
};

enum vsr_state_error {
    VSR_STATE_OK = 0,
    VSR_STATE_UNKNOWN_VERSION,
    VSR_STATE_BAD_LENGTH,
    VSR_STATE_LOG_VIEW_AHEAD,
    VSR_STATE_BAD_REPLICA,
    VSR_STATE_BAD_CHECKPOINT_PREPARE,
    VSR_STATE_BAD_FAULTY_RANGE,
    VSR_STATE_BAD_FAULTY_PREPARE,
};

/* Writes the VSR_STATE_SIZE-byte encoding of VSR_STATE_VERSION. */
void vsr_state_encode(const struct vs_vsr_state *s,
                      uint8_t out[VSR_STATE_SIZE]);
/* Decodes a payload of superblock record version `version`. Returns
 * VSR_STATE_OK or the typed error; `reason` (may be NULL) gets one line. */
enum vsr_state_error vsr_state_decode(uint16_t version, const void *payload,
                                      size_t len, struct vs_vsr_state *out,
                                      char *reason, size_t reason_len);
const char *vsr_state_error_name(enum vsr_state_error e);
/* 1 if s->checkpoint_prepare holds the checkpoint op's header. */
int vsr_state_has_checkpoint_prepare(const struct vs_vsr_state *s);
/* 1 if s->faulty_prepare holds a header (version 4). */
int vsr_state_has_faulty_prepare(const struct vs_vsr_state *s);

#endif /* VS_SHARD_STORAGE_VSR_STATE_H */
