/*
 * shard/serve/segments.h - DeleteSegments (code 503 -> operation 138) on
 * the data shards (iggy-client-protocol-2 §0, §1.2).
 *
 * Flow:
 *  1. The client's shard decodes `[stream id][topic id][partition_id u32]
 *     [segments_count u32]` (trailing bytes ignored). Undecodable ->
 *     status 0, EMPTY body, op 138 (op 138 is not result-framed), as the
 *     reference's server answers. It resolves the partition in the
 *     published state and checks manage-topic permission.
 *  2. Resolved and allowed: a DATA_DELETE_SEGMENTS command goes to the
 *     partition's owning data shard (here or FWD_DATA_REQUEST, the data
 *     plane's path, shard/serve/data.h), which answers the offset
 *     watermark part_watermark_for_segments() gives (the first offset
 *     that survives; nothing sealed -> the first offset: a no-op).
 *  3. The client's shard proposes the metadata op with that watermark
 *     (FWD_PROPOSE, the client's request header with operation 68
 *     TruncatePartition, body = meta op 68 {stream, topic, partition,
 *     offset}). Apply raises the partition's deleted_up_to_offset; once
 *     published, the owner's sync deletes the sealed segments below it
 *     (shard/serve/parts.h) and republishes its stats.
 *     Not found / not allowed on the client's shard: the op is proposed
 *     with watermark 0 so the replicated apply answers R 1009 / 2010 /
 *     3007 / 41 like every metadata op (a watermark never lowers one).
 *     The owner finding no open partition is treated the same way.
 *  Reply: shard 0's frame with operation 68, result-framed (success
 *  `00000000`, a rejection `[1][0][code]`), which upstream sends too and
 *  the SDK accepts. Transient failures (the owner restarting) -> H 57
 *  (the SDK resends).
 *
 * Reused ids: the op carries the partition's created_op (meta op format
 * 2), and apply refuses it (R 3007, partition not found) if the
 * partition with those ids is another one by then, so a topic deleted
 * and recreated with the same ids never takes the old watermark. Step 3
 * also re-reads the published state and proposes watermark 0 if the
 * partition's created_op already changed.
 *
 * Callers: the data shard's loop thread (serve.c dispatch, data.c).
 */
#ifndef VS_SHARD_SERVE_SEGMENTS_H
#define VS_SHARD_SERVE_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"

struct serve_conn;
struct data_cmd;
struct dpart;

/* struct data_cmd kind of the owner's step (after enum data_kind). */
#define DATA_DELETE_SEGMENTS 7u

/* Client's shard: a DeleteSegments request of a bound connection. */
void serve_segments_start(struct serve_conn *c,
                          const struct vs_hdr_request *req, const uint8_t *body,
                          size_t len);

/* Owner: appends [watermark u64] for cmd->value oldest sealed segments
 * of dp. Returns the status (0). */
uint32_t serve_segments_exec(struct dpart *dp, const struct data_cmd *cmd,
                             struct vs_wbuf *out);

/* Client's shard: the owner's answer (status, body) for the connection's
 * DeleteSegments in flight. Proposes, or answers the client. */
void serve_segments_on_watermark(struct serve_conn *c, uint32_t status,
                                 const void *body, size_t len);

/* Defined in data.c: runs cmd on the partition's owner (here or
 * forwarded); the answer comes back through serve_segments_on_watermark
 * for a request whose operation is 138. */
void serve_data_route(struct serve_conn *c, const struct vs_hdr_request *req,
                      const struct data_cmd *cmd);

#endif /* VS_SHARD_SERVE_SEGMENTS_H */
