/*
 * tests/model/meta_model.c - the reference model's rules (meta_model.h).
 * Callers: tests only.
 */
#include "config.h"

#include <string.h>

#include "common/errors.h"
#include "tests/model/meta_model.h"

enum {
    A_CREATE_STREAM,
    A_MANAGE_STREAM,
    A_CREATE_TOPIC,
    A_MANAGE_TOPIC,
    A_READ_TOPIC,
    A_MANAGE_USERS
};

static int
m_ntopics(const struct model *m)
{
    int n = 0;
    for (int s = 0; s < M_STREAMS; s++)
        for (int t = 0; t < M_TPS; t++)
            n += m->s[s].live && m->s[s].t[t].live;
    return n;
}

static uint32_t
m_nparts(const struct model *m)
{
    uint32_t n = 0;
    for (int s = 0; s < M_STREAMS; s++)
        for (int t = 0; t < M_TPS; t++)
            if (m->s[s].live && m->s[s].t[t].live)
                n += m->s[s].t[t].parts;
    return n;
}

static void
m_counts(const struct model *m, int *groups, int *members, uint32_t *assign)
{
    *groups = *members = 0;
    *assign = 0;
    for (int s = 0; s < M_STREAMS; s++)
        for (int t = 0; t < M_TPS; t++) {
            const struct m_topic *tp = &m->s[s].t[t];
            if (!m->s[s].live || !tp->live)
                continue;
            for (int g = 0; g < M_GPT; g++) {
                if (!tp->g[g].live)
                    continue;
                (*groups)++;
                *members += tp->g[g].nmembers;
                if (tp->g[g].nmembers)
                    *assign += tp->parts;
            }
        }
}

/* §3: root passes; a scope that does not exist passes. */
static int
m_allowed(const struct model *m, uint32_t user, int act, int s, int t)
{
    if (user == 0)
        return 1;
    if (user >= M_USERS || !m->u[user].live || !m->u[user].has_perms)
        return 0;
    const struct m_user *u = &m->u[user];
    uint16_t g = u->global;
    if (act == A_MANAGE_USERS)
        return (g >> 2) & 1;
    if (act == A_CREATE_STREAM)
        return (g >> 4) & 1;
    if (s < 0 || !m->s[s].live)
        return 1;
    int sb = u->sg[s] < 0 ? 0 : u->sg[s];
    int tb = 0;
    if (act == A_MANAGE_TOPIC || act == A_READ_TOPIC) {
        if (t < 0 || t >= M_TPS || !m->s[s].t[t].live)
            return 1;
        tb = (u->sg[s] >= 0 && t < 4 && u->tg[s][t] >= 0) ? u->tg[s][t] : 0;
    }
    int gms = (g >> 4) & 1, grs = (g >> 5) & 1, gmt = (g >> 6) & 1,
        grt = (g >> 7) & 1;
    int sms = sb & 1, srs = (sb >> 1) & 1, smt = (sb >> 2) & 1,
        srt = (sb >> 3) & 1;
    int tmt = tb & 1, trt = (tb >> 1) & 1;
    switch (act) {
    case A_MANAGE_STREAM:
        return gms || sms;
    case A_CREATE_TOPIC:
        return gms || gmt || sms || smt;
    case A_MANAGE_TOPIC:
        return gms || gmt || sms || smt || tmt;
    case A_READ_TOPIC:
        return gms || grs || gmt || grt || sms || srs || smt || srt || tmt ||
               trt;
    }
    return 0;
}

static void
m_drop_grants(struct model *m, int s, int t)
{
    for (int u = 0; u < M_USERS; u++) {
        if (t < 0) {
            m->u[u].sg[s] = -1;
            for (int k = 0; k < 4; k++)
                m->u[u].tg[s][k] = -1;
        } else if (t < 4) {
            m->u[u].tg[s][t] = -1;
        }
    }
}

static int
m_valid_name(const char *n)
{
    return n[0] != 0;
}
static int
m_find_stream(const struct model *m, const struct gen_op *o)
{
    if (!o->by_name)
        return (o->s >= 0 && o->s < M_STREAMS && m->s[o->s].live) ? o->s : -1;
    for (int s = 0; s < M_STREAMS; s++)
        if (m->s[s].live && strcmp(m->s[s].name, o->name) == 0)
            return s;
    return -1;
}

static uint32_t
m_topic_scope(struct model *m, const struct gen_op *o, int act,
              struct m_topic **tp)
{
    int s = (o->s < M_STREAMS && m->s[o->s].live) ? o->s : -1;
    int t = (s >= 0 && o->t < M_TPS && m->s[s].t[o->t].live) ? o->t : -1;
    if (!m_allowed(m, o->actor, act, s, t))
        return VS_E_UNAUTHORIZED;
    if (s < 0)
        return VS_E_STREAM_ID_NOT_FOUND;
    if (t < 0)
        return VS_E_TOPIC_ID_NOT_FOUND;
    *tp = &m->s[s].t[t];
    return 0;
}

static void
m_set_perms(struct m_user *u, const struct gen_op *o)
{
    u->has_perms = o->has_perms;
    u->global = o->has_perms ? o->global : 0;
    for (int s = 0; s <= M_STREAMS; s++) {
        u->sg[s] = -1;
        for (int k = 0; k < 4; k++)
            u->tg[s][k] = -1;
    }
    if (o->has_perms && o->ps >= 0) {
        u->sg[o->ps] = o->psb;
        if (o->pt >= 0)
            u->tg[o->ps][o->pt] = o->ptb;
    }
}

uint32_t
mm_apply(struct model *m, const struct gen_op *o)
{
    int groups, members;
    uint32_t assign;
    m_counts(m, &groups, &members, &assign);
    switch (o->kind) {
    case K_CREATE_STREAM: {
        if (!m_allowed(m, o->actor, A_CREATE_STREAM, -1, -1))
            return VS_E_UNAUTHORIZED;
        if (!m_valid_name(o->name))
            return VS_E_INVALID_COMMAND;
        for (int s = 0; s < M_STREAMS; s++)
            if (m->s[s].live && strcmp(m->s[s].name, o->name) == 0)
                return VS_E_STREAM_NAME_ALREADY_EXISTS;
        for (int s = 0; s < (int)m->caps.streams; s++) {
            if (m->s[s].live)
                continue;
            memset(&m->s[s], 0, sizeof(m->s[s]));
            m->s[s].live = 1;
            strcpy(m->s[s].name, o->name);
            m_drop_grants(m, s, -1);
            return 0;
        }
        return VS_E_TOO_MANY_STREAMS;
    }
    case K_DELETE_STREAM:
    case K_UPDATE_STREAM:
    case K_PURGE_STREAM: {
        int s = m_find_stream(m, o);
        if (!m_allowed(m, o->actor, A_MANAGE_STREAM, s, -1))
            return VS_E_UNAUTHORIZED;
        if (s < 0)
            return VS_E_STREAM_ID_NOT_FOUND;
        if (o->kind == K_DELETE_STREAM) {
            m->s[s].live = 0;
            m_drop_grants(m, s, -1);
        } else if (o->kind == K_UPDATE_STREAM) {
            const char *nn = o->name + 8; /* new name after the old */
            if (!m_valid_name(nn))
                return VS_E_INVALID_COMMAND;
            for (int k = 0; k < M_STREAMS; k++)
                if (k != s && m->s[k].live && strcmp(m->s[k].name, nn) == 0)
                    return VS_E_STREAM_NAME_ALREADY_EXISTS;
            strcpy(m->s[s].name, nn);
        }
        return 0;
    }
    case K_CREATE_TOPIC: {
        int s = (o->s < M_STREAMS && m->s[o->s].live) ? o->s : -1;
        if (!m_allowed(m, o->actor, A_CREATE_TOPIC, s, -1))
            return VS_E_UNAUTHORIZED;
        if (s < 0)
            return VS_E_STREAM_ID_NOT_FOUND;
        if (!m_valid_name(o->name))
            return VS_E_INVALID_COMMAND;
        for (int t = 0; t < M_TPS; t++)
            if (m->s[s].t[t].live && strcmp(m->s[s].t[t].name, o->name) == 0)
                return VS_E_TOPIC_NAME_ALREADY_EXISTS;
        int t = 0;
        while (t < M_TPS && m->s[s].t[t].live)
            t++;
        if (t >= M_TPS || m_ntopics(m) >= (int)m->caps.topics)
            return VS_E_TOO_MANY_TOPICS;
        if (m_nparts(m) + o->count > m->caps.partitions)
            return VS_E_TOO_MANY_PARTITIONS;
        memset(&m->s[s].t[t], 0, sizeof(m->s[s].t[t]));
        m->s[s].t[t].live = 1;
        strcpy(m->s[s].t[t].name, o->name);
        m->s[s].t[t].parts = o->count;
        m_drop_grants(m, s, t);
        return 0;
    }
    case K_DELETE_TOPIC:
    case K_CREATE_PARTS:
    case K_DELETE_PARTS: {
        struct m_topic *tp;
        uint32_t e = m_topic_scope(m, o, A_MANAGE_TOPIC, &tp);
        if (e)
            return e;
        if (o->kind == K_DELETE_TOPIC) {
            tp->live = 0;
            m_drop_grants(m, o->s, o->t);
            return 0;
        }
        if (o->count == 0)
            return VS_E_TOO_MANY_PARTITIONS;
        if (o->kind == K_CREATE_PARTS) {
            uint32_t with = 0;
            for (int g = 0; g < M_GPT; g++)
                with += tp->g[g].live && tp->g[g].nmembers;
            if (m_nparts(m) + o->count > m->caps.partitions ||
                assign + with * o->count > m->caps.assignments)
                return VS_E_TOO_MANY_PARTITIONS;
            tp->parts += o->count;
        } else {
            if (o->count > tp->parts)
                return VS_E_INVALID_PARTITIONS_COUNT;
            tp->parts -= o->count;
        }
        for (int g = 0; g < M_GPT; g++)
            if (tp->g[g].live)
                tp->g[g].gen++;
        return 0;
    }
    case K_CREATE_GROUP: {
        struct m_topic *tp;
        uint32_t e = m_topic_scope(m, o, A_READ_TOPIC, &tp);
        if (e)
            return e;
        if (!m_valid_name(o->name))
            return VS_E_INVALID_COMMAND;
        for (int g = 0; g < M_GPT; g++)
            if (tp->g[g].live && strcmp(tp->g[g].name, o->name) == 0)
                return VS_E_CONSUMER_GROUP_NAME_ALREADY_EXISTS;
        if (groups >= (int)m->caps.groups || tp->next_gid >= M_GPT)
            return VS_E_ERROR;
        struct m_group *g = &tp->g[tp->next_gid++];
        memset(g, 0, sizeof(*g));
        g->live = 1;
        strcpy(g->name, o->name);
        return 0;
    }
    case K_DELETE_GROUP:
    case K_JOIN:
    case K_LEAVE: {
        struct m_topic *tp;
        uint32_t e = m_topic_scope(m, o, A_READ_TOPIC, &tp);
        if (e)
            return e;
        if (o->g < 0 || o->g >= M_GPT || !tp->g[o->g].live)
            return VS_E_CONSUMER_GROUP_ID_NOT_FOUND;
        struct m_group *g = &tp->g[o->g];
        if (o->kind == K_DELETE_GROUP) {
            g->live = 0;
            return 0;
        }
        int c = (int)o->client;
        if (o->kind == K_JOIN) {
            if (g->members[c])
                return 0;
            if (members >= (int)m->caps.members ||
                (g->nmembers == 0 && assign + tp->parts > m->caps.assignments))
                return VS_E_ERROR;
            g->members[c] = 1;
            g->nmembers++;
            g->gen++;
            return 0;
        }
        if (!g->members[c])
            return VS_E_CONSUMER_GROUP_MEMBER_NOT_FOUND;
        g->members[c] = 0;
        g->nmembers--;
        g->gen++;
        return 0;
    }
    case K_CREATE_USER: {
        if (!m_allowed(m, o->actor, A_MANAGE_USERS, -1, -1))
            return VS_E_UNAUTHORIZED;
        size_t l = strlen(o->name);
        if (l < 3 || l > 50)
            return VS_E_INVALID_USERNAME;
        for (int u = 0; u < M_USERS; u++)
            if (m->u[u].live && strcmp(m->u[u].name, o->name) == 0)
                return VS_E_USER_ALREADY_EXISTS;
        for (int u = 0; u < (int)m->caps.users; u++) {
            if (m->u[u].live)
                continue;
            memset(&m->u[u], 0, sizeof(m->u[u]));
            m->u[u].live = 1;
            strcpy(m->u[u].name, o->name);
            m_set_perms(&m->u[u], o);
            return 0;
        }
        return VS_E_USERS_LIMIT_REACHED;
    }
    case K_DELETE_USER:
    case K_UPDATE_PERMS: {
        if (!m_allowed(m, o->actor, A_MANAGE_USERS, -1, -1))
            return VS_E_UNAUTHORIZED;
        int u = o->s;
        if (u < 0 || u >= M_USERS || !m->u[u].live)
            return VS_E_RESOURCE_NOT_FOUND;
        if (u == 0)
            return o->kind == K_DELETE_USER ? VS_E_CANNOT_DELETE_USER
                                            : VS_E_CANNOT_CHANGE_PERMISSIONS;
        if (o->kind == K_DELETE_USER)
            m->u[u].live = 0;
        else
            m_set_perms(&m->u[u], o);
        return 0;
    }
    }
    return VS_E_INVALID_COMMAND;
}

void
mm_init(struct model *m, const struct mm_caps *caps)
{
    memset(m, 0, sizeof(*m));
    m->caps = *caps;
    for (int u = 0; u < M_USERS; u++)
        for (int s = 0; s <= M_STREAMS; s++) {
            m->u[u].sg[s] = -1;
            for (int k = 0; k < 4; k++)
                m->u[u].tg[s][k] = -1;
        }
    m->u[0].live = 1;
    strcpy(m->u[0].name, "iggy");
    m->u[0].has_perms = 1;
    m->u[0].global = 0x3ff;
}
