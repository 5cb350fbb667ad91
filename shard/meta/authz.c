/*
 * shard/meta/authz.c - the permission model of iggy-client-protocol-2 §3,
 * one function for apply and the data shards (see authz.h).
 * Invariants: pure read of the instance. Callers: any process.
 */
#include "config.h"

#include "shard/meta/authz.h"
#include "shard/meta/lookup.h"

int
meta_authz_check(const void *st, uint32_t user_id, enum meta_perm_action action,
                 uint32_t stream_id, uint32_t topic_id)
{
    if (user_id == 0)
        return 1;
    const struct meta_user *u = meta_user_by_id(st, user_id);
    if (!u)
        return 0;
    if (!u->has_perms)
        return 0;
    uint32_t g = u->global;
    uint32_t s = 0, t = 0;
    int stream_missing = 0, topic_missing = 0;
    if (action >= META_ACT_READ_STREAM && action != META_ACT_CREATE_STREAM) {
        if (!meta_stream_by_id(st, stream_id)) {
            stream_missing = 1;
        } else {
            const struct meta_sgrant *sg =
                meta_sgrant_get(st, user_id, stream_id);
            s = sg ? sg->bits : 0;
        }
    }
    if (action == META_ACT_READ_TOPIC || action == META_ACT_MANAGE_TOPIC ||
        action == META_ACT_POLL || action == META_ACT_SEND) {
        if (!stream_missing && !meta_topic_by_id(st, stream_id, topic_id)) {
            topic_missing = 1;
        } else if (!stream_missing) {
            const struct meta_tgrant *tg =
                meta_tgrant_get(st, user_id, stream_id, topic_id);
            t = tg ? tg->bits : 0;
        }
    }
    switch (action) {
    case META_ACT_READ_SERVERS:
        return (g & (META_G_MANAGE_SERVERS | META_G_READ_SERVERS)) != 0;
    case META_ACT_READ_USERS:
        return (g & (META_G_MANAGE_USERS | META_G_READ_USERS)) != 0;
    case META_ACT_MANAGE_USERS:
        return (g & META_G_MANAGE_USERS) != 0;
    case META_ACT_READ_STREAMS:
        return (g & (META_G_MANAGE_STREAMS | META_G_READ_STREAMS)) != 0;
    case META_ACT_CREATE_STREAM:
        return (g & META_G_MANAGE_STREAMS) != 0;
    default:
        break;
    }
    if (stream_missing || topic_missing)
        return 1;
    switch (action) {
    case META_ACT_READ_STREAM:
        return (g & (META_G_MANAGE_STREAMS | META_G_READ_STREAMS)) ||
               (s & (META_S_MANAGE_STREAM | META_S_READ_STREAM));
    case META_ACT_MANAGE_STREAM:
        return (g & META_G_MANAGE_STREAMS) || (s & META_S_MANAGE_STREAM);
    case META_ACT_READ_TOPICS:
    case META_ACT_READ_TOPIC:
        if ((g & (META_G_MANAGE_STREAMS | META_G_READ_STREAMS |
                  META_G_MANAGE_TOPICS | META_G_READ_TOPICS)) ||
            (s & (META_S_MANAGE_STREAM | META_S_READ_STREAM |
                  META_S_MANAGE_TOPICS | META_S_READ_TOPICS)))
            return 1;
        return action == META_ACT_READ_TOPIC &&
               (t & (META_T_MANAGE_TOPIC | META_T_READ_TOPIC));
    case META_ACT_CREATE_TOPIC:
    case META_ACT_MANAGE_TOPIC:
        if ((g & (META_G_MANAGE_STREAMS | META_G_MANAGE_TOPICS)) ||
            (s & (META_S_MANAGE_STREAM | META_S_MANAGE_TOPICS)))
            return 1;
        return action == META_ACT_MANAGE_TOPIC && (t & META_T_MANAGE_TOPIC);
    case META_ACT_POLL:
        return (g & (META_G_POLL_MESSAGES | META_G_READ_STREAMS |
                     META_G_MANAGE_STREAMS | META_G_READ_TOPICS |
                     META_G_MANAGE_TOPICS)) ||
               (s & (META_S_MANAGE_STREAM | META_S_READ_STREAM |
                     META_S_MANAGE_TOPICS | META_S_READ_TOPICS |
                     META_S_POLL_MESSAGES)) ||
               (t & (META_T_MANAGE_TOPIC | META_T_READ_TOPIC |
                     META_T_POLL_MESSAGES));
    case META_ACT_SEND:
        return (g & (META_G_SEND_MESSAGES | META_G_MANAGE_STREAMS |
                     META_G_MANAGE_TOPICS)) ||
               (s & (META_S_MANAGE_STREAM | META_S_MANAGE_TOPICS |
                     META_S_SEND_MESSAGES)) ||
               (t & (META_T_MANAGE_TOPIC | META_T_SEND_MESSAGES));
    default:
        return 0;
    }
}
