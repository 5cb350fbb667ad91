/*
 * shard/meta/lookup.h - read-only lookups of a state instance by id or by
 * name, for data shards, reads (GetStream ...) and apply.
 *
 * Returned pointers point into the instance: valid while the caller holds
 * its read section (data shards) or until the next apply (shard 0).
 * NULL = not found. Names are raw bytes (len <= 255).
 *
 * Callers: any process holding a read section on an instance.
 */
#ifndef VS_SHARD_META_LOOKUP_H
#define VS_SHARD_META_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "shard/meta/ops.h"
#include "shard/meta/state.h"

const struct meta_stream *meta_stream_by_id(const void *st, uint32_t id);
const struct meta_stream *meta_stream_by_name(const void *st, const char *name,
                                              size_t len);
const struct meta_stream *meta_stream_find(const void *st,
                                           const struct meta_ident *id);

const struct meta_topic *meta_topic_by_id(const void *st, uint32_t stream_id,
                                          uint32_t topic_id);
const struct meta_topic *meta_topic_by_name(const void *st, uint32_t stream_id,
                                            const char *name, size_t len);
const struct meta_topic *meta_topic_find(const void *st, uint32_t stream_id,
                                         const struct meta_ident *id);

const struct meta_partition *meta_partition_by_id(const void *st,
                                                  uint32_t stream_id,
                                                  uint32_t topic_id,
                                                  uint32_t partition_id);

const struct meta_group *meta_group_by_id(const void *st, uint32_t stream_id,
                                          uint32_t topic_id, uint32_t group_id);
const struct meta_group *meta_group_by_name(const void *st, uint32_t stream_id,
                                            uint32_t topic_id, const char *name,
                                            size_t len);
const struct meta_group *meta_group_find(const void *st, uint32_t stream_id,
                                         uint32_t topic_id,
                                         const struct meta_ident *id);
/* The member of a group with this client id, or NULL. */
const struct meta_member *
meta_member_by_client(const void *st, uint32_t stream_id, uint32_t topic_id,
                      uint32_t group_id, struct vs_u128 client);
const struct meta_member *meta_member_by_id(const void *st, uint32_t stream_id,
                                            uint32_t topic_id,
                                            uint32_t group_id,
                                            uint32_t member_id);
/* The client ids of every consumer-group member in st, sorted (heap: the
 * caller frees; NULL when there are none), *n of them. */
struct vs_u128 *meta_member_ids(const void *st, size_t *n);
/* Whether client is among ids (as meta_member_ids returns them). */
int meta_member_ids_has(const struct vs_u128 *ids, size_t n,
                        struct vs_u128 client);
/* Ownership of a partition in a group, or NULL if unassigned. */
const struct meta_assign *meta_assign_get(const void *st, uint32_t stream_id,
                                          uint32_t topic_id, uint32_t group_id,
                                          uint32_t partition_id);

const struct meta_user *meta_user_by_id(const void *st, uint32_t id);
const struct meta_user *meta_user_by_name(const void *st, const char *name,
                                          size_t len);
const struct meta_user *meta_user_find(const void *st,
                                       const struct meta_ident *id);

const struct meta_sgrant *meta_sgrant_get(const void *st, uint32_t user_id,
                                          uint32_t stream_id);
const struct meta_tgrant *meta_tgrant_get(const void *st, uint32_t user_id,
                                          uint32_t stream_id,
                                          uint32_t topic_id);

const struct meta_pat *meta_pat_by_name(const void *st, uint32_t user_id,
                                        const char *name, size_t len);
/* The token with this digest, or NULL (expiry is the caller's check:
 * expired when expiry_at != 0 && expiry_at <= now). */
const struct meta_pat *meta_pat_by_digest(const void *st,
                                          const uint8_t digest[32]);

/* The live session of a client (published client-table part), or NULL. */
const struct meta_session *meta_session_by_client(const void *st,
                                                  struct vs_u128 client);
/* Session slot of a record returned above. */
uint32_t meta_session_slot(const void *st, const struct meta_session *s);
const struct meta_session *meta_session_at(const void *st, uint32_t slot);

/* A partition's replica set (node ids, its view-0 primary first; the
 * primary of view v is out[v % n], placement.h) copied into out; returns
 * its size n, or 0 for an unknown partition. */
uint32_t meta_partition_replicas(const void *st, uint32_t stream_id,
                                 uint32_t topic_id, uint32_t partition_id,
                                 uint8_t out[VS_REPLICAS_MAX]);

/* Owning data shard of a partition (K = data shard count). */
uint32_t meta_partition_owner(const struct meta_partition *p, uint32_t k);

#endif /* VS_SHARD_META_LOOKUP_H */
