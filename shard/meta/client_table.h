/*
 * shard/meta/client_table.h - at-most-once execution for every client
 * (iggy-server-ng §4, DESIGN §5).
 *
 * Split in two parts:
 *  - the replicated SESSION part (client id, epoch, user id, watermark and
 *    its checksum, latest commit, created op) lives in the state instance
 *    (struct meta_session, state.h) and is written only by meta_apply of a
 *    committed op: Register binds (a re-register keeps watermark and ring,
 *    epoch := op), Logout removes, every other op from the client advances
 *    the watermark. A Register into a full table evicts the entry with the
 *    smallest latest_commit (first slot on ties). The effective capacity
 *    (hdr->client_capacity) is set from the config BEFORE any entry is
 *    installed; a restore uses max(config, highest slot + 1).
 *  - the shard-0-private REPLY part (struct meta_client_table): per slot a
 *    ring of up to 5 cached reply frames (256-byte reply header + body),
 *    recorded after commit by meta_ct_record_reply(). A ring belongs to
 *    (client id, created_op) of the session in its slot; a ring whose
 *    owner no longer matches is ignored and replaced. A ring holds the
 *    replies of numbered requests only, never a Register's (which has
 *    request number 0), so a checkpoint -- which keeps the newest reply
 *    per slot -- keeps the reply of the watermark request across any
 *    number of re-registers.
 * Changes happen only at commit: meta_ct_check_request() is read-only.
 *
 * Outcome -> answer (exactly one, never a silent drop):
 *   New -> execute; Duplicate -> the cached reply bytes; NoSession ->
 *   Eviction 1; SessionTooLow -> Eviction 7; EpochAhead -> Eviction 12;
 *   ChecksumMismatch -> Eviction 5; AlreadyApplied -> Eviction 12 + a log
 *   line (the result is gone, the request is never re-executed).
 * A cached reply never holds a secret: a CreatePAT success is cached as
 * the refusal [1][0][51] (the token plaintext exists only in the live
 * reply), so a duplicate CreatePAT gets that refusal.
 *
 * Transfer form "ICT3" (encoded): magic | count u32 | per live session in
 * ascending slot order: slot u32, client u128, epoch u64, user_id u32,
 * watermark u64, watermark_checksum u128, created_op u64, latest_commit
 * u64, ring_len u8 (0..5; 0: no request since the Register), ring_len x
 * (len u32, reply bytes) | XXH3-64 of everything before, u64. Installed,
 * it puts every session in its slot with every field as the primary had
 * it, so a transferred replica checkpoints to the same bytes as its peers.
 * Form "ICT2" (decoded only, from older peers): the same without slot,
 * created_op and latest_commit; entries packed (entry i -> slot i),
 * created_op := epoch, latest_commit := max(epoch, newest reply's op).
 * The decoder rejects a bad magic/checksum/size, count > 65536, zero or
 * duplicate client ids, oversized rings, replies shorter than 256 or
 * longer than VS_FRAME_MAX, trailing bytes, and for ICT3 slots not
 * strictly ascending or >= 65536, created_op 0 or after epoch,
 * latest_commit before epoch.
 *
 * Callers: shard 0 only (data shards read sessions through lookup.h).
 */
#ifndef VS_SHARD_META_CLIENT_TABLE_H
#define VS_SHARD_META_CLIENT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"

#define META_CT_RING     5u
#define META_CT_MAGIC    "ICT3" /* the form encoded */
#define META_CT_MAGIC_V2 "ICT2" /* still decoded */

enum meta_ct_outcome {
    META_CT_NEW = 0,
    META_CT_DUPLICATE,
    META_CT_NO_SESSION,
    META_CT_SESSION_TOO_LOW,
    META_CT_EPOCH_AHEAD,
    META_CT_ALREADY_APPLIED,
    META_CT_CHECKSUM_MISMATCH,
};

enum meta_ct_action {
    META_CT_EXECUTE = 0, /* propose / execute the request */
    META_CT_REPLY,       /* send the cached reply bytes */
    META_CT_EVICT,       /* send an Eviction with *reason */
};

struct meta_ct_reply {
    uint32_t len;
    uint8_t *bytes; /* heap, owned by the table */
};

struct meta_ct_slot {
    struct vs_u128 client;
    uint64_t created_op;
    uint8_t n;    /* replies in the ring */
    uint8_t head; /* index of the oldest */
    struct meta_ct_reply ring[META_CT_RING];
};

struct meta_client_table {
    uint32_t slots; /* = META_CT_CEILING: any restorable slot fits */
    struct meta_ct_slot *s;
};

void meta_ct_init(struct meta_client_table *ct);
void meta_ct_fini(struct meta_client_table *ct);
/* Drops every cached reply. */
void meta_ct_clear(struct meta_client_table *ct);

/* Classifies a request (read-only). On META_CT_DUPLICATE, *reply and
 * *reply_len borrow the cached reply frame (valid until the next record
 * or install). session/request/checksum come from the request header. */
enum meta_ct_outcome
meta_ct_check_request(const struct meta_client_table *ct, const void *state,
                      struct vs_u128 client, uint64_t session, uint64_t request,
                      struct vs_u128 request_checksum, const uint8_t **reply,
                      size_t *reply_len);

/* The single answer of an outcome; *reason = eviction reason for EVICT.
 * Logs AlreadyApplied. */
enum meta_ct_action meta_ct_answer(enum meta_ct_outcome o,
                                   struct vs_u128 client, uint8_t *reason);
const char *meta_ct_outcome_name(enum meta_ct_outcome o);

/* After commit (and after meta_apply on the instance `state`): caches the
 * reply frame (header + body) of the committed request of `client`.
 * `operation` is the request's; CreatePAT successes are stored as the
 * refusal described above. No-op if the client has no session (Logout) or
 * the request number is 0 (Register). */
void meta_ct_record_reply(struct meta_client_table *ct, const void *state,
                          struct vs_u128 client, unsigned operation,
                          const uint8_t *reply, size_t len);

/* The latest cached reply of a slot (checkpoint form), or NULL. */
const struct meta_ct_reply *meta_ct_latest(const struct meta_client_table *ct,
                                           const void *state, uint32_t slot);
/* Installs a single reply as the ring of `slot` (snapshot restore). */
void meta_ct_install_latest(struct meta_client_table *ct, const void *state,
                            uint32_t slot, const uint8_t *reply, size_t len);

/* 1 if bytes look like a reply frame: 256 <= len <= VS_FRAME_MAX,
 * header size == len, command == VS_CMD_REPLY. */
int meta_ct_reply_valid(const uint8_t *reply, size_t len);

/* Transfer form. A decoded image, installable into each left-right
 * instance (sessions) and into the private table (rings). */
struct meta_ct_image_entry {
    uint32_t slot; /* ICT3; ICT2: the entry's index */
    struct vs_u128 client;
    uint64_t epoch;
    uint32_t user_id;
    uint64_t watermark;
    struct vs_u128 watermark_checksum;
    uint64_t created_op;    /* ICT3 only */
    uint64_t latest_commit; /* ICT3 only */
    uint8_t ring_len;
    struct meta_ct_reply ring[META_CT_RING]; /* oldest first, heap */
};
struct meta_ct_image {
    unsigned version; /* 3 (ICT3) or 2 (ICT2); hand-built images: 0 =
                         packed like ICT2 */
    uint32_t count;
    struct meta_ct_image_entry *e;
};

/* Encodes ICT3: every live session with its ring (possibly empty). 0. */
int meta_ct_transfer_encode(const struct meta_client_table *ct,
                            const void *state, struct vs_wbuf *w);
/* The same in form `version` (3, or 2 for a peer that reads only ICT2);
 * -EINVAL for another version. */
int meta_ct_transfer_encode_version(const struct meta_client_table *ct,
                                    const void *state, struct vs_wbuf *w,
                                    unsigned version);
/* 0, or -EPROTO (malformed), -EINVAL (bad values: duplicate ids, ring
 * sizes, reply sizes), -EBADMSG (checksum). On error *img is empty. */
int meta_ct_transfer_decode(const uint8_t *p, size_t len,
                            struct meta_ct_image *img);
void meta_ct_image_fini(struct meta_ct_image *img);
/* Replaces the sessions of `state` with the image. ICT3: each in its
 * slot with created_op and latest_commit as encoded; capacity :=
 * max(configured caps.clients, highest slot + 1) (the snapshot restore's
 * rule). ICT2 / hand-built: slot i = entry i, capacity := max(caps.clients,
 * count), created_op := epoch, latest_commit := max(epoch, op of the
 * newest cached reply) so the eviction order survives. -ENOSPC (nothing
 * changed) if the slots needed exceed session_slots. */
int meta_ct_install_sessions(void *state, const struct meta_ct_image *img);
/* Replaces the rings of the private table with the image's. Call after
 * meta_ct_install_sessions on the instance passed. */
void meta_ct_install_replies(struct meta_client_table *ct, const void *state,
                             const struct meta_ct_image *img);

#endif /* VS_SHARD_META_CLIENT_TABLE_H */
