/*
 * shard/meta/authz.h - the one permission check (iggy-client-protocol-2
 * §3), used inside meta_apply and by the data shards on the published
 * instance.
 *
 * Rules: user 0 (root) may do everything. A user that does not exist may
 * do nothing. A user without Permissions has only the always-allowed set
 * (the caller does not ask for those). A scoped check whose stream (or
 * topic) does not exist passes, so the request then fails with its
 * not-found code. Grants are looked up by numeric ids; they never outlive
 * the stream/topic they name (state.h).
 *
 * Callers: any process holding a read section on an instance.
 */
#ifndef VS_SHARD_META_AUTHZ_H
#define VS_SHARD_META_AUTHZ_H

#include <stdint.h>

enum meta_perm_action {
    META_ACT_READ_SERVERS = 0, /* GetStats, GetClients, GetSnapshotFile */
    META_ACT_READ_USERS,       /* GetUsers, GetUser(other) */
    META_ACT_MANAGE_USERS,     /* Create/Delete/UpdateUser, perms, pw */
    META_ACT_READ_STREAMS,     /* GetStreams (global only) */
    META_ACT_READ_STREAM,      /* GetStream(s) */
    META_ACT_CREATE_STREAM,
    META_ACT_MANAGE_STREAM, /* Update/Delete/PurgeStream(s) */
    META_ACT_READ_TOPICS,   /* GetTopics(s) */
    META_ACT_READ_TOPIC,    /* GetTopic(s,t), group ops */
    META_ACT_CREATE_TOPIC,  /* CreateTopic(s) */
    META_ACT_MANAGE_TOPIC,  /* Update/Delete/Purge topic, partitions,
                               segments */
    META_ACT_POLL,          /* Poll, offsets */
    META_ACT_SEND,          /* SendMessages */
    META_ACT_COUNT
};

/* 1 if user_id may perform `action` on (stream_id, topic_id); ids unused
 * by the action are ignored (pass META_NONE). */
int meta_authz_check(const void *state, uint32_t user_id,
                     enum meta_perm_action action, uint32_t stream_id,
                     uint32_t topic_id);

#endif /* VS_SHARD_META_AUTHZ_H */
