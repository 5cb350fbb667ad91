/*
 * shard/zero/forward.h - a backup's table of client requests it handed to
 * the primary over the replica link, and the ForwardRequest /
 * ForwardResult frames (common/wire.h, commands 30 and 31).
 *
 * Role: on a backup, shard 0 gets FWD_PROPOSE frames from its data
 * shards like the primary does, but only the primary may propose. The
 * backup records where the answer goes (data shard slot, incarnation,
 * connection, the request header for a status answer), sends a sealed
 * ForwardRequest to the primary, and on the ForwardResult parks the
 * answer until its OWN commit_min reached the result's op: a client of
 * any node reads its writes on that node (DESIGN §3). An entry that the
 * primary does not answer within the timeout, or whose primary is no
 * longer the primary (view change) or unreachable, is answered status 57
 * TransientNotCommitted: the SDK resends the same request, and the
 * replicated client table turns a request that did commit into its
 * cached reply (at-most-once holds).
 *
 * The same link carries the backup's consumer-group liveness reports
 * (MemberReport, forward0_report_frame), and every ForwardRequest names
 * the forwarder's shard-0 incarnation, so the primary binds a client
 * registered through a backup to that node's life (groups0.h).
 *
 * Invariants: each entry is answered exactly once (released, expired or
 * failed); nonces are unique per table (a random per-boot base plus a
 * counter), so a result for an earlier shard 0 incarnation matches
 * nothing and is dropped; the table is bounded (FORWARD0_MAX entries; a
 * full table answers 57 at once). Pure: no I/O, no clock (ticks).
 * Callers: shard 0's commit path (shard/zero/commit.c) only.
 */
#ifndef VS_SHARD_ZERO_FORWARD_H
#define VS_SHARD_ZERO_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/fwd.h"

#define FORWARD0_MAX 4096u
/* Ticks (10 ms) a forwarded request may wait for the primary's answer,
 * and then for this node's own apply of the answered op. */
#define FORWARD0_PRIMARY_TICKS 300u
#define FORWARD0_APPLY_TICKS   1000u

/* Where an answer goes: a data shard's connection. */
struct forward0_origin {
    uint32_t slot;
    uint64_t incarnation;
    uint64_t conn_id;
    struct vs_hdr_request req; /* as proposed (for a status answer) */
};

/* An answer ready to be relayed (forward0_release) or a request that
 * failed (status != 0: answer status `status` built from origin.req). */
struct forward0_answer {
    struct forward0_origin origin;
    uint32_t status; /* 0: relay frame; else a status Reply */
    uint32_t flags;  /* FWD_F_* for FWD_REPLY */
    uint64_t session;
    uint32_t user_id;
    const uint8_t *frame; /* valid during the callback */
    uint32_t frame_len;
};

typedef void forward0_answer_fn(void *ctx, const struct forward0_answer *a);

struct forward0_entry;

struct forward0 {
    struct forward0_entry *e; /* FORWARD0_MAX slots */
    size_t used;
    uint64_t nonce_next;
    uint64_t incarnation; /* this shard 0's (the nonce base), never 0 */
    uint64_t forwarded, results, relayed, expired, failed, dropped;
};

/* nonce_base: random per boot (the binding draws it). */
void forward0_init(struct forward0 *f, uint64_t nonce_base);
void forward0_fini(struct forward0 *f);

/* Records a request for primary `primary` and appends its sealed
 * ForwardRequest frame to out. `payload` = request header + op body
 * (len >= 256). 0, or -ENOBUFS (table full: answer 57 yourself). */
int forward0_request(struct forward0 *f, const struct forward0_origin *o,
                     const uint8_t *payload, uint32_t len,
                     struct vs_u128 cluster, uint8_t self, uint32_t view,
                     uint8_t primary, struct vs_wbuf *out);

/* A ForwardResult frame from replica `from` (a whole frame, len bytes):
 * verified (size, seal, body checksum, cluster, sender is the primary the
 * request went to) and parked. 0, or -EBADMSG (malformed or forged:
 * dropped) / -ENOENT (no such request: expired or another incarnation). */
int forward0_on_result(struct forward0 *f, uint8_t from, const void *frame,
                       size_t len, struct vs_u128 cluster);

/* Answers every parked result whose op <= commit_min. */
void forward0_release(struct forward0 *f, uint64_t commit_min,
                      forward0_answer_fn *fn, void *ctx);

/* One tick: requests still waiting for a primary that is not `primary`
 * (or `primary_ok` 0: no settled primary, link down) or past the
 * timeouts are answered status 57. */
void forward0_tick(struct forward0 *f, int primary_ok, uint8_t primary,
                   forward0_answer_fn *fn, void *ctx);

/* Decodes a ForwardRequest (primary side): verified header, *req and the
 * op body; *incarnation (may be NULL) the forwarder's shard-0
 * incarnation (0: not sent). 0 or -EBADMSG. */
int forward0_decode_request(const void *frame, size_t len,
                            struct vs_u128 cluster, uint64_t *nonce,
                            struct vs_hdr_request *req, const uint8_t **body,
                            uint32_t *body_len);
int forward0_decode_request_inc(const void *frame, size_t len,
                                struct vs_u128 cluster, uint64_t *nonce,
                                uint64_t *incarnation,
                                struct vs_hdr_request *req,
                                const uint8_t **body, uint32_t *body_len);

/* MemberReport (common/wire.h, command 65): a backup's consumer-group
 * liveness report to the primary (shard/zero/groups0.h). Appends the
 * sealed frame to out: claims c[0..nc) then events e[0..ne) (their
 * conn_id is sent as 0). */
void forward0_report_frame(struct vs_u128 cluster, uint8_t self, uint32_t view,
                           uint64_t incarnation, uint64_t seq, uint32_t flags,
                           const struct fwd_member *c, size_t nc,
                           const struct fwd_member *e, size_t ne,
                           struct vs_wbuf *out);
/* Verifies a MemberReport (size, seal, body checksum, cluster, the
 * entry counts against the size, sender `from`): 0 and *h, with the
 * entries at *entries (claims first; pointing into frame, which must be
 * 8-byte aligned), or -EBADMSG. */
int forward0_decode_report(const void *frame, size_t len, uint8_t from,
                           struct vs_u128 cluster,
                           struct vs_hdr_member_report *h,
                           const struct fwd_member **entries);

/* Appends a sealed ForwardResult answering `nonce` to out. */
void forward0_result_frame(struct vs_u128 cluster, uint8_t self, uint32_t view,
                           uint64_t nonce, uint64_t op, uint32_t flags,
                           uint64_t session, uint32_t user_id,
                           struct vs_u128 client, const void *frame,
                           uint32_t frame_len, struct vs_wbuf *out);

#endif /* VS_SHARD_ZERO_FORWARD_H */
