/*
 * shard/serve/reads.c - reads served from the published metadata
 * instance; see reads.h. Runs inside a read section on a data shard's
 * loop: bounded work, no blocking, no socket I/O.
 * Data-plane counters (GetStats messages / sizes / segments, the size,
 * message count, segment count and current offset of the stream, topic
 * and partition records) come from the shared per-partition stats table
 * (ipc/stats.h, written by each partition's owning shard), looked up by
 * (group id, created_op) of every partition the published state lists
 * and summed per topic and stream; a partition without an entry yet
 * reports zeros and one segment (never below 1 in reads).
 */
#include "config.h"

#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/clock.h"
#include "common/errors.h"
#include "ipc/stats.h"
#include "shard/meta/authz.h"
#include "shard/meta/lookup.h"
#include "shard/meta/placement.h"
#include "shard/meta/records.h"
#include "shard/meta/state.h"
#include "shard/serve/reads.h"

static void
wr_str32(struct vs_wbuf *w, const char *s)
{
    size_t n = strlen(s);
    vs_wr_u32(w, (uint32_t)n);
    vs_wr_bytes(w, s, n);
}

static void
wr_str8(struct vs_wbuf *w, const char *s)
{
    size_t n = strlen(s);
    if (n > 255)
        n = 255;
    vs_wr_u8(w, (uint8_t)n);
    vs_wr_bytes(w, s, n);
}

void
serve_wr_cluster_metadata(struct vs_wbuf *w, const char *cluster,
                          const char *node, const char *ip, uint16_t tcp_port)
{
    wr_str32(w, cluster);
    vs_wr_u32(w, 1);
    wr_str32(w, node);
    wr_str32(w, ip);
    vs_wr_u16(w, tcp_port);
    vs_wr_u16(w, 0); /* quic: not served */
    vs_wr_u16(w, 0); /* http: not served */
    vs_wr_u16(w, 0); /* websocket: not served */
    vs_wr_u8(w, 0);  /* role Leader */
    vs_wr_u8(w, 0);  /* status Healthy */
}

static const struct {
    const char *key;
    uint8_t kind;
    uint8_t len;
    uint64_t def; /* numeric default (LE bytes, len of them) */
    const char *sdef;
    const char *desc;
} topic_catalog[8] = {
    {"compression_algorithm", 2, 4, 0, "none",
     "compression of stored messages: none or gzip"},
    {"message_expiry", 12, 8, UINT64_MAX, NULL,
     "message retention in microseconds (u64::MAX = never)"},
    {"max_topic_size", 12, 8, UINT64_MAX, NULL,
     "maximum topic size in bytes (u64::MAX = unlimited)"},
    {"segment_size", 12, 8, UINT64_C(1073741824), NULL,
     "segment size in bytes, a multiple of 512 in [1 MiB, 1 GiB]"},
    {"enforce_fsync", 3, 1, 0, NULL, "fsync every saved batch"},
    {"messages_required_to_save", 11, 4, 1024, NULL,
     "buffered messages that trigger a save (1..16777216)"},
    {"size_of_messages_required_to_save", 12, 8, UINT64_C(1048576), NULL,
     "buffered bytes that trigger a save (at most 1 GiB)"},
    {"preallocate_segments", 3, 1, 0, NULL,
     "preallocate segment files at their full size"},
};

void
serve_wr_describe_options(struct vs_wbuf *w, uint8_t scope)
{
    if (scope != 1) {
        vs_wr_u32(w, 0);
        return;
    }
    vs_wr_u32(w, 8);
    for (int i = 0; i < 8; i++) {
        wr_str8(w, topic_catalog[i].key);
        vs_wr_u8(w, topic_catalog[i].kind);
        vs_wr_u32(w, topic_catalog[i].len);
        if (topic_catalog[i].sdef != NULL) {
            vs_wr_bytes(w, topic_catalog[i].sdef, topic_catalog[i].len);
        } else {
            uint64_t v = topic_catalog[i].def;
            vs_wr_bytes(w, &v, topic_catalog[i].len);
        }
        wr_str32(w, topic_catalog[i].desc);
    }
}

void
serve_wr_client_info(struct vs_wbuf *w, const void *st,
                     const struct serve_client_info *ci, int details)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    const struct meta_member *m = meta_tab_c(st, META_TAB_MEMBER);
    uint32_t cap = h->caps.members;
    uint32_t groups = 0;
    if (!vs_u128_is_zero(ci->client))
        for (uint32_t i = 0; i < cap; i++)
            if (m[i].in_use && vs_u128_eq(m[i].client_id, ci->client))
                groups++;
    vs_wr_u32(w, ci->client_id);
    vs_wr_u32(w, ci->user_id);
    vs_wr_u8(w, 1); /* TCP */
    wr_str32(w, ci->address);
    vs_wr_u32(w, groups);
    if (!details || groups == 0)
        return;
    for (uint32_t i = 0; i < cap; i++) {
        if (!m[i].in_use || !vs_u128_eq(m[i].client_id, ci->client))
            continue;
        vs_wr_u32(w, m[i].stream_id);
        vs_wr_u32(w, m[i].topic_id);
        vs_wr_u32(w, m[i].group_id);
    }
}

/* Sums of partitions' counters. */
struct agg {
    uint64_t size_bytes;
    uint64_t messages;
    uint64_t segments;
};

static void
part_values(const struct meta_partition *p, struct vs_stats_values *v)
{
    (void)stats_lookup(stats_process(),
                       meta_group_id(p->stream_id, p->topic_id, p->id),
                       p->created_op, v);
    if (v->segments_count == 0)
        v->segments_count = 1;
}

static void
topic_agg(const void *st, const struct meta_topic *t, struct agg *a)
{
    for (uint32_t pid = 0; pid < t->partitions_count; pid++) {
        const struct meta_partition *p =
            meta_partition_by_id(st, t->stream_id, t->id, pid);
        if (p == NULL)
            continue;
        struct vs_stats_values v;
        part_values(p, &v);
        a->size_bytes += v.size_bytes;
        a->messages += v.messages_count;
        a->segments += v.segments_count;
    }
}

static void
stream_agg(const void *st, const struct meta_stream *s, struct agg *a)
{
    uint32_t found = 0;
    for (uint32_t id = 0; id < META_MAX_TOPIC_ID && found < s->topics_count;
         id++) {
        const struct meta_topic *t = meta_topic_by_id(st, s->id, id);
        if (t == NULL)
            continue;
        found++;
        topic_agg(st, t, a);
    }
}

static void
all_agg(const void *st, struct agg *a)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t found = 0;
    for (uint32_t id = 0;
         id < h->caps.streams && found < h->count[META_TAB_STREAM]; id++) {
        const struct meta_stream *s = meta_stream_by_id(st, id);
        if (s == NULL)
            continue;
        found++;
        stream_agg(st, s, a);
    }
}

static void
wr_stream(struct vs_wbuf *w, const void *st, const struct meta_stream *s)
{
    struct agg a = {0, 0, 0};
    stream_agg(st, s, &a);
    meta_wr_stream_record(w, s, a.size_bytes, a.messages);
}

static void
wr_topic_header(struct vs_wbuf *w, const void *st, const struct meta_topic *t)
{
    struct agg a = {0, 0, 0};
    topic_agg(st, t, &a);
    meta_wr_topic_header(w, t, a.size_bytes, a.messages);
}

static void
wr_stats(struct vs_wbuf *w, const void *st, const struct serve_read_env *env)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    struct agg a = {0, 0, 0};
    all_agg(st, &a);
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    (void)getrusage(RUSAGE_SELF, &ru);
    struct sysinfo si;
    memset(&si, 0, sizeof(si));
    (void)sysinfo(&si);
    uint64_t now = vs_realtime_us();
    float zero = 0.0f;
    vs_wr_u32(w, (uint32_t)getpid());
    vs_wr_bytes(w, &zero, 4); /* cpu_usage */
    vs_wr_bytes(w, &zero, 4); /* total_cpu_usage */
    vs_wr_u64(w, (uint64_t)ru.ru_maxrss * 1024);
    vs_wr_u64(w, (uint64_t)si.totalram * si.mem_unit);
    vs_wr_u64(w, (uint64_t)si.freeram * si.mem_unit);
    vs_wr_u64(w, now > env->start_time_us ? now - env->start_time_us : 0);
    vs_wr_u64(w, env->start_time_us);
    vs_wr_u64(w, (uint64_t)ru.ru_inblock * 512);
    vs_wr_u64(w, (uint64_t)ru.ru_oublock * 512);
    vs_wr_u64(w, a.size_bytes); /* messages_size_bytes */
    vs_wr_u32(w, h->count[META_TAB_STREAM]);
    vs_wr_u32(w, h->count[META_TAB_TOPIC]);
    vs_wr_u32(w, h->count[META_TAB_PARTITION]);
    vs_wr_u32(w, a.segments > UINT32_MAX ? UINT32_MAX : (uint32_t)a.segments);
    vs_wr_u64(w, a.messages);
    vs_wr_u32(w, h->count[META_TAB_SESSION]);
    vs_wr_u32(w, h->count[META_TAB_GROUP]);
    char host[256];
    if (gethostname(host, sizeof(host)) != 0)
        host[0] = '\0';
    host[sizeof(host) - 1] = '\0';
    struct utsname u;
    memset(&u, 0, sizeof(u));
    (void)uname(&u);
    wr_str32(w, host);
    wr_str32(w, u.sysname);
    wr_str32(w, u.version);
    wr_str32(w, u.release);
}

static uint32_t
ident_stream(const void *st, const struct meta_ident *id,
             const struct meta_stream **out)
{
    *out = meta_stream_find(st, id);
    return *out ? (*out)->id : META_NONE;
}

static void
wr_topic_full(struct vs_wbuf *w, const void *st, const struct meta_topic *t)
{
    wr_topic_header(w, st, t);
    for (uint32_t p = 0; p < t->partitions_count; p++) {
        const struct meta_partition *pr =
            meta_partition_by_id(st, t->stream_id, t->id, p);
        if (pr == NULL)
            continue;
        struct vs_stats_values v;
        part_values(pr, &v);
        meta_wr_partition_record(w, pr, v.segments_count, v.current_offset,
                                 v.size_bytes, v.messages_count);
    }
}

/* GetTopicReplicas's body (reads.h). */
static void
wr_topic_replicas(struct vs_wbuf *w, const void *st, const struct meta_topic *t)
{
    vs_wr_u32(w, t->stream_id);
    vs_wr_u32(w, t->id);
    vs_wr_u8(w, t->opts.replication_factor);
    vs_wr_u8(w, (uint8_t)meta_nodes(st));
    vs_wr_u32(w, t->partitions_count);
    for (uint32_t p = 0; p < t->partitions_count; p++) {
        const struct meta_partition *pr =
            meta_partition_by_id(st, t->stream_id, t->id, p);
        VS_ASSERT(pr != NULL);
        vs_wr_u32(w, pr->id);
        vs_wr_u64(w, meta_group_id(pr->stream_id, pr->topic_id, pr->id));
        vs_wr_u8(w, pr->replica_count);
        vs_wr_bytes(w, pr->replicas, pr->replica_count);
        vs_wr_u8(w, meta_partition_primary(pr, 0));
    }
}

/* Topics of a stream in ascending id order. */
static void
each_topic(const void *st, const struct meta_stream *s, struct vs_wbuf *w)
{
    uint32_t found = 0;
    for (uint32_t id = 0; id < META_MAX_TOPIC_ID && found < s->topics_count;
         id++) {
        const struct meta_topic *t = meta_topic_by_id(st, s->id, id);
        if (!t)
            continue;
        found++;
        wr_topic_header(w, st, t);
    }
}

struct clients_ctx {
    const void *st;
    struct vs_wbuf *w;
};

static void
visit_client(void *arg, const struct serve_client_info *ci)
{
    struct clients_ctx *c = arg;
    serve_wr_client_info(c->w, c->st, ci, 0);
}

static uint32_t
read_groups(const void *st, const struct serve_read_env *env,
            const struct serve_read_req *q, struct vs_wbuf *out)
{
    const struct meta_stream *s;
    uint32_t sid = ident_stream(st, &q->stream, &s);
    const struct meta_topic *t = s ? meta_topic_find(st, sid, &q->topic) : NULL;
    if (!meta_authz_check(st, env->user_id, META_ACT_READ_TOPIC, sid,
                          t ? t->id : META_NONE))
        return VS_E_UNAUTHORIZED;
    if (q->code == SERVE_C_SYNC_GROUP) {
        const struct meta_group *g =
            t ? meta_group_find(st, sid, t->id, &q->group) : NULL;
        if (!g || vs_u128_is_zero(env->self->client))
            return 0;
        const struct meta_member *m =
            meta_member_by_client(st, sid, t->id, g->id, env->self->client);
        if (!m)
            return 0;
        vs_wr_u64(out, g->generation);
        size_t at = out->len;
        vs_wr_u32(out, 0);
        uint32_t n = 0;
        for (uint32_t p = 0; p < t->partitions_count; p++) {
            const struct meta_assign *a =
                meta_assign_get(st, sid, t->id, g->id, p);
            if (a && a->owner == m->member_id && a->revoke_to == META_NONE) {
                vs_wr_u32(out, p);
                n++;
            }
        }
        vs_store_u32(out->data + at, n);
        return 0;
    }
    if (!s)
        return VS_E_STREAM_ID_NOT_FOUND;
    if (!t)
        return VS_E_TOPIC_ID_NOT_FOUND;
    if (q->code == SERVE_C_GET_GROUP) {
        const struct meta_group *g = meta_group_find(st, sid, t->id, &q->group);
        if (g)
            meta_wr_group_details(out, st, g);
        return 0;
    }
    for (uint32_t id = 0; id < t->next_group_id; id++) {
        const struct meta_group *g = meta_group_by_id(st, sid, t->id, id);
        if (!g)
            continue;
        vs_wr_u32(out, g->id);
        vs_wr_u32(out, t->partitions_count);
        vs_wr_u32(out, g->members_count);
        vs_wr_u8(out, g->name_len);
        vs_wr_bytes(out, g->name, g->name_len);
    }
    return 0;
}

uint32_t
serve_read(const void *st, const struct serve_read_env *env,
           const struct serve_read_req *q, struct vs_wbuf *out)
{
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t me = env->user_id;
    switch (q->code) {
    case SERVE_C_GET_STATS:
        if (!meta_authz_check(st, me, META_ACT_READ_SERVERS, META_NONE,
                              META_NONE))
            return VS_E_UNAUTHORIZED;
        wr_stats(out, st, env);
        return 0;
    case SERVE_C_GET_CLUSTER:
        if (env->cluster != NULL && env->cluster->clustered) {
            serve_cluster_write_metadata(env->cluster, env->cfg->cluster_name,
                                         out);
            return 0;
        }
        serve_wr_cluster_metadata(out, env->cfg->cluster_name,
                                  env->cfg->node_name, env->listen_ip,
                                  env->listen_port);
        return 0;
    case SERVE_C_DESCRIBE_OPTIONS:
        serve_wr_describe_options(out, q->scope);
        return 0;
    case SERVE_C_GET_ME:
        serve_wr_client_info(out, st, env->self, 1);
        return 0;
    case SERVE_C_GET_CLIENT: {
        if (!meta_authz_check(st, me, META_ACT_READ_SERVERS, META_NONE,
                              META_NONE))
            return VS_E_UNAUTHORIZED;
        struct serve_client_info ci;
        if (env->client_by_id != NULL &&
            env->client_by_id(env->arg, q->client_id, &ci))
            serve_wr_client_info(out, st, &ci, 1);
        return 0;
    }
    case SERVE_C_GET_CLIENTS: {
        if (!meta_authz_check(st, me, META_ACT_READ_SERVERS, META_NONE,
                              META_NONE))
            return VS_E_UNAUTHORIZED;
        struct clients_ctx c = {st, out};
        if (env->each_client != NULL)
            env->each_client(env->arg, visit_client, &c);
        return 0;
    }
    case SERVE_C_GET_USER: {
        const struct meta_user *u = meta_user_find(st, &q->user);
        if (!(u && u->id == me) &&
            !meta_authz_check(st, me, META_ACT_READ_USERS, META_NONE,
                              META_NONE))
            return VS_E_UNAUTHORIZED;
        if (u)
            meta_wr_user_details(out, st, u);
        return 0;
    }
    case SERVE_C_GET_USERS:
        if (!meta_authz_check(st, me, META_ACT_READ_USERS, META_NONE,
                              META_NONE))
            return VS_E_UNAUTHORIZED;
        for (uint32_t id = 0; id < h->caps.users; id++) {
            const struct meta_user *u = meta_user_by_id(st, id);
            if (u)
                meta_wr_user_record(out, u, u->status);
        }
        return 0;
    case SERVE_C_GET_PATS: {
        const struct meta_pat *p = meta_tab_c(st, META_TAB_PAT);
        for (uint32_t i = 0; i < h->caps.pats; i++) {
            if (!p[i].in_use || p[i].user_id != me)
                continue;
            vs_wr_u8(out, p[i].name_len);
            vs_wr_bytes(out, p[i].name, p[i].name_len);
            vs_wr_u64(out, p[i].expiry_at);
        }
        return 0;
    }
    case SERVE_C_GET_STREAM: {
        const struct meta_stream *s;
        uint32_t sid = ident_stream(st, &q->stream, &s);
        if (!meta_authz_check(st, me, META_ACT_READ_STREAM, sid, META_NONE))
            return VS_E_UNAUTHORIZED;
        if (!s)
            return 0;
        wr_stream(out, st, s);
        each_topic(st, s, out);
        return 0;
    }
    case SERVE_C_GET_STREAMS:
        if (!meta_authz_check(st, me, META_ACT_READ_STREAMS, META_NONE,
                              META_NONE))
            return VS_E_UNAUTHORIZED;
        for (uint32_t id = 0; id < h->caps.streams; id++) {
            const struct meta_stream *s = meta_stream_by_id(st, id);
            if (s)
                wr_stream(out, st, s);
        }
        return 0;
    case SERVE_C_GET_TOPICS: {
        const struct meta_stream *s;
        uint32_t sid = ident_stream(st, &q->stream, &s);
        if (!meta_authz_check(st, me, META_ACT_READ_TOPICS, sid, META_NONE))
            return VS_E_UNAUTHORIZED;
        vs_wr_u32(out, s ? s->topics_count : 0);
        if (s)
            each_topic(st, s, out);
        return 0;
    }
    case SERVE_C_GET_TOPIC: {
        const struct meta_stream *s;
        uint32_t sid = ident_stream(st, &q->stream, &s);
        const struct meta_topic *t =
            s ? meta_topic_find(st, sid, &q->topic) : NULL;
        if (!meta_authz_check(st, me, META_ACT_READ_TOPIC, sid,
                              t ? t->id : META_NONE))
            return VS_E_UNAUTHORIZED;
        if (t)
            wr_topic_full(out, st, t);
        return 0;
    }
    case SERVE_C_GET_TOPIC_REPLICAS: {
        const struct meta_stream *s;
        uint32_t sid = ident_stream(st, &q->stream, &s);
        const struct meta_topic *t =
            s ? meta_topic_find(st, sid, &q->topic) : NULL;
        if (!meta_authz_check(st, me, META_ACT_READ_TOPIC, sid,
                              t ? t->id : META_NONE))
            return VS_E_UNAUTHORIZED;
        if (t)
            wr_topic_replicas(out, st, t);
        return 0;
    }
    case SERVE_C_GET_GROUP:
    case SERVE_C_GET_GROUPS:
    case SERVE_C_SYNC_GROUP:
        return read_groups(st, env, q, out);
    default:
        return VS_E_INVALID_COMMAND;
    }
}
