/*
 * shard/zero/commit_frames.h - the frames shard 0 answers a forwarded request
 * with: the Reply of a committed op, a pre-commit status Reply and an
 * Eviction (reference/iggy-client-protocol.md §3, -2.md §8).
 *
 * Role: pure, deterministic builders. The Reply of a committed op is a
 * function of the prepare header and the apply output only: no replica
 * index and no view (both 0), so the frame sent live, the one cached in
 * the client table, the one rebuilt by recovery replay and the one every
 * other replica caches for the same op are equal byte for byte (equal
 * snapshots, equal checkpoint checksums across replicas). They match the
 * header the VSR engine puts in its REPLY action (shard/vsr/engine.c
 * vsr_on_commit_applied) but for its view and replica bytes: cluster,
 * size, release 0, command 8, request_checksum, client, op, commit = op,
 * timestamp, request, operation echoed, status 0; checksum fields and
 * every other byte zero (Iggy client framing: unsealed).
 *
 * Reply bodies: Logout is not result-framed (empty body); GENESIS and
 * other internal ops have no client and no reply; every other op is
 * result-framed (meta_reply_body_write: success `[0 u32]` + payload,
 * refusal `[1 u32][0 u32][code u32]`), Register included.
 *
 * Callers: shard 0 (commit path, recovery replay) and tests.
 */
#ifndef VS_SHARD_COMMIT_FRAMES_H
#define VS_SHARD_COMMIT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"

/* 1 if a committed op of this operation answers a client. */
int commit_op_replies(const struct vs_hdr_prepare *p);

/* Appends the reply body of a committed op (result code + apply
 * payload) to w. */
void commit_reply_body(uint8_t operation, uint32_t code, const uint8_t *payload,
                       size_t payload_len, struct vs_wbuf *w);

/* Appends the whole Reply frame (header + body) of committed prepare p
 * to w. */
void commit_reply_frame(const struct vs_hdr_prepare *p, const uint8_t *body,
                        size_t body_len, struct vs_wbuf *w);

/* A header-only Reply refusing `req` before consensus: status != 0,
 * op/commit/timestamp 0, client, request, request_checksum and
 * operation echoed, size 256. */
void commit_status_reply(struct vs_hdr_reply *r, struct vs_u128 cluster,
                         uint32_t view, uint8_t replica,
                         const struct vs_hdr_request *req, uint32_t status);

/* An Eviction of `client` for `reason` (enum vs_eviction_reason), with
 * the server's protocol window at bytes 144/148. */
void commit_eviction(struct vs_hdr_eviction *e, struct vs_u128 cluster,
                     uint32_t view, uint8_t replica, struct vs_u128 client,
                     uint8_t reason);

#endif /* VS_SHARD_COMMIT_FRAMES_H */
