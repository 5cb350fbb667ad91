/*
 * shard/serve/liveness.c - a data shard's client liveness: silent
 * authenticated clients evicted (StaleClient, memberships released), and
 * its consumer-group reports to shard 0: completed cooperative
 * revocations and the in-flight set; see liveness.h and shard/fwd.h.
 *
 * Clock: the loop's monotonic clock (activity stamps and the limit are
 * both local to this process). Frames go to shard 0 only while it is
 * ready (a frame sent before would be dropped); what was not sent is
 * sent at a later tick (silence: not marked; in-flight set: not
 * recorded as sent).
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"
#include "ipc/segment.h"
#include "shard/fwd.h"
#include "shard/zero/groups0.h"
#include "shard/meta/index.h"
#include "shard/meta/lookup.h"
#include "shard/meta/state.h"
#include "shard/serve/liveness.h"
#include "shard/serve/parts.h"
#include "shard/serve/polled.h"
#include "shard/serve/server.h"
#include "shard/serve/sessend.h"
#include "server/listen.h"

struct serve_live {
    struct polled rec;
    uint64_t last_scan_ms;
    int cluster; /* a node of a cluster: FWD_MEMBERS */
    uint64_t last_members_ms;
    struct fwd_group_part *sent; /* the in-flight set shard 0 has */
    size_t nsent;
    uint64_t sent_inc; /* shard 0's incarnation it went to (0: none) */
    int full_logged;
};

/* A pending revocation of an owned partition (collected in a read
 * section, checked after it). */
struct live_cand {
    struct fwd_group_part e;
    uint64_t part_created_op;
    struct vs_u128 client; /* the revoking member's */
};

static uint64_t
live_now_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

void
serve_live_init(struct serve *s)
{
    s->live = vs_xcalloc(1, sizeof(*s->live));
    polled_init(&s->live->rec);
    s->live->cluster = sup_addr_list_count(s->cfg->replica_addrs) > 1;
}

void
serve_live_fini(struct serve *s)
{
    if (s->live == NULL)
        return;
    polled_fini(&s->live->rec);
    free(s->live->sent);
    free(s->live);
    s->live = NULL;
}

void
serve_live_touch(struct serve_conn *c)
{
    c->last_active_ms = live_now_ms();
}

void
serve_live_polled(struct serve *s, struct vs_u128 client,
                  const struct data_cmd *cmd, uint64_t last, int committed,
                  uint64_t off)
{
    struct serve_live *l = s->live;
    if (l == NULL || cmd->consumer_kind != 2)
        return;
    struct polled_key k = {
        .stream_id = cmd->stream_id,
        .topic_id = cmd->topic_id,
        .partition_id = cmd->partition_id,
        .group_id = cmd->consumer_id,
        .part_created_op = cmd->created_op,
        .group_created_op = cmd->group_created_op,
        .client = client,
    };
    if (!polled_in_flight(last, committed, off)) {
        polled_del(&l->rec, &k);
        return;
    }
    if (polled_set(&l->rec, &k, last) != 0 && !l->full_logged) {
        l->full_logged = 1;
        vs_log_warn("data shard %u: %u in-flight group polls recorded: more "
                    "are not (their revocations wait for the timeout)",
                    s->ctx->slot, POLLED_MAX);
    }
}

/* Shard 0's incarnation if it is ready to take frames, else 0. */
static uint64_t
live_shard0(struct serve *s)
{
    struct vs_proc_shm *p0 = seg_proc(s->ctx->seg, 0);
    if (!atomic_load_explicit(&p0->ready, memory_order_acquire))
        return 0;
    return atomic_load_explicit(&p0->incarnation, memory_order_relaxed);
}

/* ------------------------------------------------------------ silence */

static void
live_silence(struct serve *s, uint64_t now)
{
    uint64_t limit = (uint64_t)s->cfg->group_heartbeat_interval_ms * 6u / 5u;
    const void *st = NULL;
    uint64_t *ids = NULL;
    uint8_t *member = NULL;
    size_t n = 0;
    for (struct serve_conn *c = s->all; c != NULL; c = c->next) {
        if (!c->bound || c->closing || c->in_flight || c->last_active_ms == 0 ||
            now - c->last_active_ms < limit)
            continue;
        if (st == NULL)
            st = lr_read_begin(s->lr, NULL);
        /* a member whose session is still this connection's */
        const struct meta_session *m = meta_session_by_client(st, c->client);
        int live_member = m != NULL && m->epoch == c->session &&
                          groups0_is_member(st, c->client);
        ids = vs_xrealloc(ids, (n + 1) * sizeof(*ids));
        member = vs_xrealloc(member, n + 1);
        ids[n] = c->id;
        member[n++] = (uint8_t)live_member;
    }
    if (st != NULL)
        lr_read_end(s->lr);
    for (size_t i = 0; i < n; i++) {
        struct serve_conn *c = serve_conn_find(s, ids[i]);
        if (c == NULL)
            continue;
        uint64_t quiet = now - c->last_active_ms;
        if (member[i])
            vs_log_info("client %s: a consumer-group member silent for %llu "
                        "ms: evicted (StaleClient), its memberships released",
                        c->peer, (unsigned long long)quiet);
        else
            vs_log_info("client %s: no request for %llu ms (limit %llu): "
                        "evicted (StaleClient)",
                        c->peer, (unsigned long long)quiet,
                        (unsigned long long)limit);
        serve_live_evict_stale(c);
    }
    free(member);
    free(ids);
}

void
serve_live_evict_stale(struct serve_conn *c)
{
    /* the session ends (sessend.h): StaleClient, memberships released */
    serve_session_end(c, VS_EVICT_STALE_CLIENT);
    c->srv->stale_evicted++;
}

/* ------------------------------------------------------ group reports */

/* Read section: prunes records whose group, partition or member is gone
 * and collects the pending revocations of owned partitions. */
static void
live_collect(struct serve *s, const void *st, struct live_cand **out, size_t *n)
{
    struct polled *t = &s->live->rec;
    for (size_t i = 0; i < t->n;) {
        const struct polled_key *k = &t->v[i].k;
        const struct meta_group *g =
            meta_group_by_id(st, k->stream_id, k->topic_id, k->group_id);
        const struct meta_partition *p = meta_partition_by_id(
            st, k->stream_id, k->topic_id, k->partition_id);
        if (g == NULL || g->created_op != k->group_created_op || p == NULL ||
            p->created_op != k->part_created_op ||
            meta_member_by_client(st, k->stream_id, k->topic_id, k->group_id,
                                  k->client) == NULL)
            polled_del_at(t, i);
        else
            i++;
    }
    *out = NULL;
    *n = 0;
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t cap = meta_tab_cap(st, META_TAB_ASSIGN);
    uint32_t seen = 0;
    for (uint32_t i = 0; i < cap && seen < h->count[META_TAB_ASSIGN]; i++) {
        const struct meta_assign *a = meta_rec_c(st, META_TAB_ASSIGN, i);
        if (!a->in_use)
            continue;
        seen++;
        if (a->revoke_to == META_NONE ||
            !dparts_owner_is(a->stream_id, a->topic_id, a->partition_id,
                             s->ctx->k, s->ctx->slot))
            continue;
        const struct meta_group *g =
            meta_group_by_id(st, a->stream_id, a->topic_id, a->group_id);
        const struct meta_partition *p = meta_partition_by_id(
            st, a->stream_id, a->topic_id, a->partition_id);
        const struct meta_member *m = meta_member_by_id(
            st, a->stream_id, a->topic_id, a->group_id, a->owner);
        if (g == NULL || p == NULL || m == NULL)
            continue;
        *out = vs_xrealloc(*out, (*n + 1) * sizeof(**out));
        struct live_cand *c = &(*out)[(*n)++];
        memset(c, 0, sizeof(*c));
        c->e.stream_id = a->stream_id;
        c->e.topic_id = a->topic_id;
        c->e.group_id = a->group_id;
        c->e.partition_id = a->partition_id;
        c->e.group_created_op = g->created_op;
        c->e.owner = a->owner;
        c->e.revoke_to = a->revoke_to;
        c->part_created_op = p->created_op;
        c->client = m->client_id;
    }
}

/* The committed group offset of (group, partition) on its open
 * partition: 1 and *off, 0 if nothing is stored, -1 if not open here. */
static int
live_committed(struct serve *s, uint32_t sid, uint32_t tid, uint32_t pid,
               uint64_t part_created_op, uint32_t gid, uint64_t gco,
               uint64_t *off)
{
    struct part_id id = {.stream_id = sid,
                         .topic_id = tid,
                         .partition_id = pid,
                         .created_op = part_created_op};
    struct dpart *dp = dparts_find(serve_data_parts(s), &id);
    if (dp == NULL)
        return -1;
    struct part_consumer pc = {
        .kind = PART_GROUP, .id = gid, .group_created_op = gco};
    return part_offset_get(dp->p, &pc, off) == 0 ? 1 : 0;
}

static void
live_groups(struct serve *s)
{
    struct serve_live *l = s->live;
    uint64_t inc0 = live_shard0(s);
    if (inc0 == 0)
        return;
    struct live_cand *cand;
    size_t nc;
    const void *st = lr_read_begin(s->lr, NULL);
    live_collect(s, st, &cand, &nc);
    lr_read_end(s->lr);

    struct fwd_group_part *done = NULL, *fl = NULL;
    size_t nd = 0, nf = 0;
    for (size_t i = 0; i < nc; i++) {
        const struct live_cand *c = &cand[i];
        struct polled_key k = {
            .stream_id = c->e.stream_id,
            .topic_id = c->e.topic_id,
            .partition_id = c->e.partition_id,
            .group_id = c->e.group_id,
            .part_created_op = c->part_created_op,
            .group_created_op = c->e.group_created_op,
            .client = c->client,
        };
        uint64_t last = 0, off = 0;
        int has = polled_get(&l->rec, &k, &last);
        int committed = 0;
        if (has) {
            committed = live_committed(s, k.stream_id, k.topic_id,
                                       k.partition_id, k.part_created_op,
                                       k.group_id, k.group_created_op, &off);
            if (committed < 0)
                continue; /* not open here (yet) */
        }
        if (polled_revoke_done(has, last, committed == 1, off)) {
            done = vs_xrealloc(done, (nd + 1) * sizeof(*done));
            done[nd++] = c->e;
        }
    }
    free(cand);

    struct polled *t = &l->rec;
    for (size_t i = 0; i < t->n;) {
        const struct polled_key *k = &t->v[i].k;
        uint64_t off = 0;
        int committed = live_committed(s, k->stream_id, k->topic_id,
                                       k->partition_id, k->part_created_op,
                                       k->group_id, k->group_created_op, &off);
        if (committed < 0 ||
            !polled_in_flight(t->v[i].last, committed == 1, off)) {
            polled_del_at(t, i);
            continue;
        }
        fl = vs_xrealloc(fl, (nf + 1) * sizeof(*fl));
        memset(&fl[nf], 0, sizeof(*fl));
        fl[nf].stream_id = k->stream_id;
        fl[nf].topic_id = k->topic_id;
        fl[nf].group_id = k->group_id;
        fl[nf].partition_id = k->partition_id;
        fl[nf].group_created_op = k->group_created_op;
        nf++;
        i++;
    }
    nf = polled_parts_normalize(fl, nf);
    /* one ring frame: the report is small (in-flight partitions only) */
    size_t ring = s->ctx->seg->hdr->ring_bytes;
    size_t max = (ring / 4 - sizeof(struct fwd_hdr) - 8) / sizeof(*fl);
    if (nd > max)
        nd = max;
    if (nf > max - nd)
        nf = max - nd;
    int changed = l->sent_inc != inc0 || nf != l->nsent ||
                  (nf > 0 && memcmp(fl, l->sent, nf * sizeof(*fl)) != 0);
    if (nd > 0 || changed) {
        struct vs_wbuf w;
        vs_wbuf_init(&w);
        struct fwd_hdr h;
        memset(&h, 0, sizeof(h));
        h.kind = FWD_GROUP_REPORT;
        h.worker_slot = s->ctx->slot;
        h.worker_incarnation = s->ctx->incarnation;
        h.payload_len = (uint32_t)(8 + (nd + nf) * sizeof(*fl));
        vs_wr_bytes(&w, &h, sizeof(h));
        vs_wr_u32(&w, (uint32_t)nd);
        vs_wr_u32(&w, (uint32_t)nf);
        if (nd > 0)
            vs_wr_bytes(&w, done, nd * sizeof(*done));
        if (nf > 0)
            vs_wr_bytes(&w, fl, nf * sizeof(*fl));
        if (port_send(s->port, 0, w.data, (uint32_t)w.len) >= 0) {
            free(l->sent);
            l->sent = fl;
            l->nsent = nf;
            l->sent_inc = inc0;
            fl = NULL;
        }
        vs_wbuf_fini(&w);
    }
    free(fl);
    free(done);
}

/* ---------------------------------------------------------- members */

/* FWD_MEMBERS (shard/fwd.h): this shard's complete set of live members
 * (bound, not closing, current session), in ring-sized pieces. */
static void
live_members(struct serve *s)
{
    if (live_shard0(s) == 0)
        return;
    struct fwd_member *e = NULL;
    size_t n = 0, cap = 0, nids = 0;
    const void *st = lr_read_begin(s->lr, NULL);
    struct vs_u128 *ids = meta_member_ids(st, &nids);
    for (struct serve_conn *c = s->all; c != NULL && nids > 0; c = c->next) {
        if (!c->bound || c->closing ||
            !meta_member_ids_has(ids, nids, c->client))
            continue;
        const struct meta_session *m = meta_session_by_client(st, c->client);
        if (m == NULL || m->epoch != c->session)
            continue; /* an older session: the client moved on */
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            e = vs_xrealloc(e, cap * sizeof(*e));
        }
        memset(&e[n], 0, sizeof(*e));
        e[n].client = c->client;
        e[n].session = c->session;
        e[n].conn_id = c->id;
        n++;
    }
    lr_read_end(s->lr);
    free(ids);
    size_t ring = s->ctx->seg->hdr->ring_bytes;
    size_t per = (ring / 4 - sizeof(struct fwd_hdr)) / sizeof(*e);
    size_t off = 0;
    do {
        size_t k = n - off < per ? n - off : per;
        struct vs_wbuf w;
        vs_wbuf_init(&w);
        struct fwd_hdr h;
        memset(&h, 0, sizeof(h));
        h.kind = FWD_MEMBERS;
        h.worker_slot = s->ctx->slot;
        h.worker_incarnation = s->ctx->incarnation;
        h.payload_len = (uint32_t)(k * sizeof(*e));
        h.flags = off + k < n ? FWD_F_MORE : 0;
        vs_wr_bytes(&w, &h, sizeof(h));
        if (k > 0)
            vs_wr_bytes(&w, e + off, k * sizeof(*e));
        int rc = port_send(s->port, 0, w.data, (uint32_t)w.len);
        vs_wbuf_fini(&w);
        if (rc < 0)
            break; /* the next period sends the whole set again */
        off += k;
    } while (off < n);
    free(e);
}

void
serve_live_tick(struct serve *s)
{
    if (s->live == NULL)
        return;
    uint64_t now = live_now_ms();
    if (live_shard0(s) != 0)
        live_silence(s, now);
    if (now - s->live->last_scan_ms >= LIVE_SCAN_MS) {
        s->live->last_scan_ms = now;
        live_groups(s);
    }
    if (s->live->cluster && now - s->live->last_members_ms >= LIVE_MEMBERS_MS) {
        s->live->last_members_ms = now;
        live_members(s);
    }
}
