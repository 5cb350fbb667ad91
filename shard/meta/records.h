/*
 * shard/meta/records.h - reply payload records built from the state, in
 * the byte layouts of iggy-client-protocol*.md (StreamRecord, TopicHeader,
 * PartitionRecord, GroupDetails, UserDetails, permissions blob).
 *
 * Role: used by meta_apply for the replies of create ops and by the
 * serving layer for reads (which pass the data-plane stats; apply passes
 * zeros). Callers: any process holding a read section.
 */
#ifndef VS_SHARD_META_RECORDS_H
#define VS_SHARD_META_RECORDS_H

#include <stdint.h>

#include "common/buf.h"
#include "shard/meta/state.h"

void meta_wr_stream_record(struct vs_wbuf *w, const struct meta_stream *s,
                           uint64_t size_bytes, uint64_t messages_count);
/* TopicHeader (without partitions), options blocks included. */
void meta_wr_topic_header(struct vs_wbuf *w, const struct meta_topic *t,
                          uint64_t size_bytes, uint64_t messages_count);
/* PartitionRecord (40 bytes). */
void meta_wr_partition_record(struct vs_wbuf *w, const struct meta_partition *p,
                              uint32_t segments_count, uint64_t current_offset,
                              uint64_t size_bytes, uint64_t messages_count);
/* GroupDetails: GroupRecord + members with their partitions (pending
 * revocations included). */
void meta_wr_group_details(struct vs_wbuf *w, const void *st,
                           const struct meta_group *g);
/* UserRecord only, or UserDetails (record + stored permissions, streams
 * and topics sorted by id). `status` is the byte to report. */
void meta_wr_user_record(struct vs_wbuf *w, const struct meta_user *u,
                         uint8_t status);
void meta_wr_user_details(struct vs_wbuf *w, const void *st,
                          const struct meta_user *u);
/* The user's stored Permissions in wire form (has_perms must be 1). */
void meta_wr_permissions(struct vs_wbuf *w, const void *st,
                         const struct meta_user *u);

#endif /* VS_SHARD_META_RECORDS_H */
