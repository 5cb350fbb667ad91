/*
 * shard/serve/parts.c - the owned partitions of a data shard: sync with
 * the published metadata, reconcile, durability and retention ticks; see
 * parts.h for the rules.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/assert.h"
#include "common/buf.h"
#include "common/checksum.h"
#include "common/layout.h"
#include "common/log.h"
#include "common/mem.h"
#include "ipc/segment.h"
#include "shard/data/pdir.h"
#include "shard/data/pinstall.h"
#include "shard/meta/lookup.h"
#include "shard/meta/state.h"
#include "shard/serve/parts.h"
#include "shard/storage/atomic_file.h"

/* What a sync learned about one owned partition inside the read section. */
struct dlive {
    struct part_id id;
    uint64_t purge_gen;
    uint64_t watermark;
    uint64_t segment_size;
    uint64_t message_expiry;
    uint64_t max_bytes;
    uint8_t enforce_fsync;
    /* a replicated partition on this node (partition_replication, a set
     * of more than one member including this node): its group repairs a
     * damaged last batch, so the open cuts it (pgroups.h) */
    uint8_t replicated;
};

struct dlist {
    struct dlive *v;
    size_t n, cap;
};

static void
dlist_push(struct dlist *l, const struct dlive *e)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = vs_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n++] = *e;
}

int
dparts_owner_is(uint32_t stream_id, uint32_t topic_id, uint32_t partition_id,
                uint32_t k, uint32_t slot)
{
    if (k == 0)
        return 0;
    return meta_partition_shard(
               meta_group_id(stream_id, topic_id, partition_id), k) == slot;
}

static size_t
dparts_hash(const struct dparts *d, const struct part_id *id)
{
    uint64_t h = meta_group_id(id->stream_id, id->topic_id, id->partition_id);
    h ^= id->created_op * UINT64_C(0x9e3779b97f4a7c15);
    h ^= h >> 29;
    return (size_t)(h & (d->nbuckets - 1));
}

static int
id_eq(const struct part_id *a, const struct part_id *b)
{
    return a->stream_id == b->stream_id && a->topic_id == b->topic_id &&
           a->partition_id == b->partition_id && a->created_op == b->created_op;
}

struct dpart *
dparts_find(struct dparts *d, const struct part_id *id)
{
    for (struct dpart *p = d->buckets[dparts_hash(d, id)]; p; p = p->hnext)
        if (id_eq(&p->id, id))
            return p;
    return NULL;
}

static void
stats_values_of(const struct dpart *dp, struct vs_stats_values *v)
{
    struct part_stats st;
    part_stats(dp->p, &st);
    memset(v, 0, sizeof(*v));
    v->messages_count = st.messages;
    v->size_bytes = st.size_bytes;
    v->current_offset = st.current_offset;
    v->segments_count = st.segments;
}

void
dparts_stats_note(struct dparts *d, struct dpart *dp)
{
    if (d->stats.capacity == 0)
        return;
    struct vs_stats_values v;
    stats_values_of(dp, &v);
    if (dp->stats_ix != VS_STATS_NONE) {
        stats_publish(&d->stats, dp->stats_ix, &v);
        return;
    }
    uint64_t gid =
        meta_group_id(dp->id.stream_id, dp->id.topic_id, dp->id.partition_id);
    int rc = stats_claim(&d->stats, d->ctx->slot, gid, dp->id.created_op, &v,
                         &dp->stats_ix);
    if (rc != 0) {
        dp->stats_ix = VS_STATS_NONE;
        vs_log_warn("partition %u.%u.%u: no stats entry (%s); retried later",
                    dp->id.stream_id, dp->id.topic_id, dp->id.partition_id,
                    strerror(-rc));
    }
}

static void
stats_drop(struct dparts *d, struct dpart *dp)
{
    if (dp->stats_ix == VS_STATS_NONE)
        return;
    stats_release(&d->stats, d->ctx->slot, dp->stats_ix);
    dp->stats_ix = VS_STATS_NONE;
}

static void
dparts_unlink(struct dparts *d, struct dpart *dp)
{
    struct dpart **pp = &d->buckets[dparts_hash(d, &dp->id)];
    while (*pp && *pp != dp)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = dp->hnext;
    pp = &d->all;
    while (*pp && *pp != dp)
        pp = &(*pp)->next;
    if (*pp)
        *pp = dp->next;
    d->count--;
}

void
dparts_check_fatal(struct dparts *d, int rc, const char *what)
{
    if (rc != -VS_EFATAL)
        return;
    char msg[700];
    sio_fatal_msg(&d->io, msg, sizeof(msg));
    shard_fatal(d->ctx, "%s: %s", what, msg);
}

/* The close hook (parts.h on_close), before the handle goes. */
static void
dparts_notify_close(struct dparts *d, struct dpart *dp)
{
    if (d->on_close != NULL)
        d->on_close(d->on_close_ctx, dp);
}

static int created_hw_read(struct dparts *d);

int
dparts_init(struct dparts *d, const struct vs_shard_ctx *ctx, struct vs_lr *lr)
{
    memset(d, 0, sizeof(*d));
    d->ctx = ctx;
    d->lr = lr;
    sio_init_real(&d->io);
    int n = snprintf(d->dir, sizeof(d->dir), "%s/%s", ctx->cfg->data_dir,
                     VS_PARTITIONS_DIR);
    if (n < 0 || (size_t)n >= sizeof(d->dir))
        return -ENAMETOOLONG;
    size_t want = 64;
    uint32_t k = ctx->k ? ctx->k : 1;
    while (want < 4u * (ctx->cfg->max_partitions / k + 1) && want < (1u << 20))
        want <<= 1;
    d->nbuckets = want;
    d->buckets = vs_xcalloc(want, sizeof(*d->buckets));
    size_t slen = 0;
    void *sregion = ctx->seg ? seg_stats_region(ctx->seg, &slen) : NULL;
    int src = stats_attach(&d->stats, sregion, slen);
    if (src != 0)
        return src;
    uint32_t left = stats_reclaim(&d->stats, ctx->slot);
    if (left > 0)
        vs_log_info("stats: %u entries of a previous incarnation cleared",
                    left);
    stats_set_process(&d->stats);
    struct stat st;
    int existed = stat(d->dir, &st) == 0;
    int mrc = sio_mkdir(&d->io, d->dir, 0700);
    if (mrc != 0)
        return mrc;
    if (!existed) {
        int rc = sio_dir_fsync(&d->io, ctx->cfg->data_dir);
        if (rc != 0)
            dparts_check_fatal(d, rc, "partitions directory");
    }
    return created_hw_read(d);
}

/* DATA/partitions/.created.<slot>: created_hw u64 LE | XXH3-64 u64. */
static void
created_hw_name(const struct dparts *d, char *out, size_t cap)
{
    snprintf(out, cap, ".created.%u", (unsigned)d->ctx->slot);
}

static int
created_hw_read(struct dparts *d)
{
    char name[32], path[sizeof(d->dir) + 40];
    created_hw_name(d, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", d->dir, name);
    uint8_t *b = NULL;
    size_t len = 0;
    int rc = afile_read_all(&d->io, path, 64, &b, &len);
    d->created_hw = 0;
    if (rc == -ENOENT)
        return 0; /* no partition created yet (or an older release) */
    if (rc == 0 && (len != 16 || vs_load_u64(b + 8) != vs_xxh3_64(b, 8)))
        rc = -EBADMSG;
    if (rc == 0)
        d->created_hw = vs_load_u64(b);
    free(b);
    if (rc == -EBADMSG)
        shard_fatal(d->ctx,
                    "%s is damaged: cannot tell which partitions "
                    "must exist; refusing to serve",
                    path);
    return rc;
}

/* After a complete sync: every listed partition's directory exists. */
static void
created_hw_advance(struct dparts *d, const struct dlist *l)
{
    uint64_t hw = d->created_hw;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].id.created_op > hw)
            hw = l->v[i].id.created_op;
    if (hw == d->created_hw)
        return;
    char name[32];
    created_hw_name(d, name, sizeof(name));
    uint8_t b[16];
    vs_store_u64(b, hw);
    vs_store_u64(b + 8, vs_xxh3_64(b, 8));
    int rc = afile_replace(&d->io, d->dir, name, b, sizeof(b));
    dparts_check_fatal(d, rc, "recording the created partitions");
    if (rc == 0)
        d->created_hw = hw;
    else
        vs_log_warn("%s/%s: %s (retried at the next sync)", d->dir, name,
                    sio_strerror(rc));
}

void
dparts_fini(struct dparts *d)
{
    while (d->all != NULL) {
        struct dpart *dp = d->all;
        dparts_notify_close(d, dp);
        dparts_unlink(d, dp);
        stats_drop(d, dp);
        int rc = part_close(dp->p);
        if (rc != 0)
            vs_log_warn("partition %u.%u.%u: close: %s", dp->id.stream_id,
                        dp->id.topic_id, dp->id.partition_id, sio_strerror(rc));
        free(dp);
    }
    free(d->buckets);
    d->buckets = NULL;
    if (stats_process() == &d->stats)
        stats_set_process(NULL);
}

/* Topic options -> what the partition engine and retention use. */
static void
live_from_topic(struct dlive *e, const struct vs_config *cfg,
                const struct meta_topic *t)
{
    e->segment_size = cfg->segment_size;
    if ((t->opts.explicit_mask & META_TOPT_SEGMENT_SIZE) &&
        t->opts.segment_size != 0)
        e->segment_size = t->opts.segment_size;
    e->message_expiry = t->opts.message_expiry;
    uint64_t cap = t->opts.max_topic_size;
    if (cap == 0 || cap == UINT64_MAX || t->partitions_count == 0)
        e->max_bytes = UINT64_MAX;
    else
        e->max_bytes = cap / t->partitions_count;
    e->enforce_fsync = t->opts.enforce_fsync;
}

/* 1 if partition p is replicated with this node among its members. */
static uint8_t
replicated_here(const struct vs_config *cfg, const struct meta_partition *p)
{
    if (!cfg->partition_replication || p->replica_count < 2)
        return 0;
    for (uint8_t i = 0; i < p->replica_count && i < VS_REPLICAS_MAX; i++)
        if (p->replicas[i] == cfg->replica_id)
            return 1;
    return 0;
}

/* Collects partitions (owned only when `owned_only`) inside one read
 * section. Returns the op of the instance read (0: nothing published). */
static uint64_t
collect(struct dparts *d, struct dlist *out, int owned_only)
{
    uint64_t op = 0;
    const void *st = lr_read_begin(d->lr, &op);
    if (op == 0) {
        lr_read_end(d->lr);
        return 0;
    }
    const struct meta_hdr *h = meta_hdr_c(st);
    uint32_t streams = h->count[META_TAB_STREAM];
    uint32_t found = 0;
    for (uint32_t sid = 0; found < streams && sid < h->caps.streams; sid++) {
        const struct meta_stream *s = meta_stream_by_id(st, sid);
        if (s == NULL)
            continue;
        found++;
        uint32_t tfound = 0;
        for (uint32_t tid = 0;
             tfound < s->topics_count && tid < META_MAX_TOPIC_ID; tid++) {
            const struct meta_topic *t = meta_topic_by_id(st, sid, tid);
            if (t == NULL)
                continue;
            tfound++;
            struct dlive e;
            memset(&e, 0, sizeof(e));
            live_from_topic(&e, d->ctx->cfg, t);
            for (uint32_t pid = 0; pid < t->partitions_count; pid++) {
                if (owned_only &&
                    !dparts_owner_is(sid, tid, pid, d->ctx->k, d->ctx->slot))
                    continue;
                const struct meta_partition *p =
                    meta_partition_by_id(st, sid, tid, pid);
                if (p == NULL)
                    continue;
                e.id.stream_id = sid;
                e.id.topic_id = tid;
                e.id.partition_id = pid;
                e.id.created_op = p->created_op;
                e.purge_gen = p->purge_generation;
                e.watermark = p->deleted_up_to_offset;
                e.replicated = replicated_here(d->ctx->cfg, p);
                dlist_push(out, &e);
            }
        }
    }
    lr_read_end(d->lr);
    return op;
}

static void
part_opts_for(struct dparts *d, const struct dlive *e, struct part_opts *o)
{
    const struct vs_config *cfg = d->ctx->cfg;
    part_opts_default(o);
    o->segment_size = e->segment_size;
    if (e->enforce_fsync || cfg->fsync_policy == VS_FSYNC_EVERY_BATCH)
        o->durability = PART_FSYNC_EVERY_BATCH;
    else
        o->durability = PART_FSYNC_INTERVAL;
    o->fsync_interval_ms = cfg->fsync_interval_ms;
    o->fsync_bytes = cfg->fsync_bytes;
    o->limits.max_batch_bytes = cfg->max_message_body;
    if (e->replicated) {
        o->cut_damaged_tail = 1; /* its group repairs it from a peer */
        o->replicated = 1;       /* its group's superblock made at create */
        /* its group holds at most wal_slots ops (each at most one
         * message body of batch) above its durable checkpoint */
        o->unsynced_max = (uint64_t)cfg->wal_slots * cfg->max_message_body;
    }
}

/* A partition state transfer interrupted by a crash: its directory
 * becomes the old or the new one before anything looks at it. 0 or
 * -errno. */
static int
install_recover(struct dparts *d, const struct dlive *e)
{
    enum pinstall_outcome po = PINSTALL_NOTHING;
    int prc = pinstall_recover(&d->io, d->dir, &e->id, &po);
    dparts_check_fatal(d, prc, "recovering a partition state transfer");
    if (prc < 0)
        return prc;
    if (po != PINSTALL_NOTHING)
        vs_log_warn("partition %u.%u.%u@%llu: an interrupted state transfer "
                    "install was %s",
                    e->id.stream_id, e->id.topic_id, e->id.partition_id,
                    (unsigned long long)e->id.created_op,
                    po == PINSTALL_ROLLED_FORWARD ? "completed"
                    : po == PINSTALL_ROLLED_BACK  ? "rolled back"
                                                  : "cleaned up");
    return 0;
}

/* Opens (creating unless `made`: its directory was just made by
 * create_new) one listed partition. 0, or -errno to retry later. */
static int
open_one(struct dparts *d, const struct dlive *e, int made)
{
    struct part_opts o;
    part_opts_for(d, e, &o);
    o.created_now = made;
    struct vs_part *p = NULL;
    struct part_verdict v;
    memset(&v, 0, sizeof(v));
    int prc = install_recover(d, e);
    if (prc < 0)
        return prc;
    if (e->id.created_op <= d->created_hw) {
        char name[128], path[sizeof(d->dir) + 130];
        struct stat st;
        if (pdir_name(name, sizeof(name), &e->id) == 0 &&
            snprintf(path, sizeof(path), "%s/%s", d->dir, name) > 0 &&
            stat(path, &st) == -1 && errno == ENOENT)
            shard_fatal(d->ctx,
                        "refusing partition %u.%u.%u@%llu: its directory %s "
                        "is missing, but this shard made the directory of "
                        "every partition created up to op %llu: its "
                        "acknowledged messages are gone",
                        e->id.stream_id, e->id.topic_id, e->id.partition_id,
                        (unsigned long long)e->id.created_op, path,
                        (unsigned long long)d->created_hw);
    }
    /* a replicated partition's purges are its group's ops: its open
     * never completes one from the metadata's generation */
    int rc = part_open(&d->io, d->dir, &e->id, &o, 1,
                       e->replicated ? 0 : e->purge_gen, &p, &v);
    if (rc == -EBADMSG)
        shard_fatal(d->ctx, "refusing partition: %s", v.msg);
    dparts_check_fatal(d, rc, "opening a partition");
    if (rc != 0) {
        vs_log_error("partition %u.%u.%u@%llu: cannot open: %s",
                     e->id.stream_id, e->id.topic_id, e->id.partition_id,
                     (unsigned long long)e->id.created_op, sio_strerror(rc));
        return rc;
    }
    struct dpart *dp = vs_xcalloc(1, sizeof(*dp));
    dp->id = e->id;
    dp->p = p;
    dp->purge_gen = e->replicated ? part_purge_generation(p) : e->purge_gen;
    dp->watermark = 0;
    dp->grouped = e->replicated;
    dp->meta_purge_gen = e->purge_gen;
    dp->stats_ix = VS_STATS_NONE;
    size_t b = dparts_hash(d, &dp->id);
    dp->hnext = d->buckets[b];
    d->buckets[b] = dp;
    dp->next = d->all;
    d->all = dp;
    d->count++;
    d->opened++;
    dparts_stats_note(d, dp);
    vs_log_debug("partition %u.%u.%u@%llu open", e->id.stream_id,
                 e->id.topic_id, e->id.partition_id,
                 (unsigned long long)e->id.created_op);
    return 0;
}

static void
update_one(struct dparts *d, struct dpart *dp, const struct dlive *e)
{
    dp->message_expiry = e->message_expiry;
    dp->max_bytes = e->max_bytes;
    int changed = 0;
    dp->meta_purge_gen = e->purge_gen;
    if (e->replicated)
        dp->grouped = 1;
    if (e->purge_gen > dp->purge_gen && !dp->grouped) {
        changed = 1;
        int rc = part_purge(dp->p, e->purge_gen);
        dparts_check_fatal(d, rc, "purging a partition");
        if (rc == 0) {
            dp->purge_gen = e->purge_gen;
            dp->watermark = 0;
        } else {
            vs_log_error("partition %u.%u.%u: purge: %s", dp->id.stream_id,
                         dp->id.topic_id, dp->id.partition_id,
                         sio_strerror(rc));
        }
    }
    dp->meta_watermark = e->watermark;
    if (e->watermark > dp->watermark && !dp->grouped) {
        int rc = part_apply_watermark(dp->p, e->watermark, NULL);
        dparts_check_fatal(d, rc, "deleting segments");
        if (rc == 0)
            dp->watermark = e->watermark;
        changed = 1;
    }
    if (changed || dp->stats_ix == VS_STATS_NONE)
        dparts_stats_note(d, dp);
}

static void
remove_one(struct dparts *d, struct dpart *dp)
{
    dparts_notify_close(d, dp);
    dparts_unlink(d, dp);
    stats_drop(d, dp);   /* a deleted partition's counters are cleared */
    part_abandon(dp->p); /* its files go away: nothing to flush */
    int rc = pdir_remove(&d->io, d->dir, &dp->id);
    dparts_check_fatal(d, rc, "removing a deleted partition");
    if (rc != 0)
        vs_log_error("partition %u.%u.%u@%llu: remove: %s", dp->id.stream_id,
                     dp->id.topic_id, dp->id.partition_id,
                     (unsigned long long)dp->id.created_op, sio_strerror(rc));
    else
        d->removed++;
    vs_log_debug("partition %u.%u.%u@%llu deleted", dp->id.stream_id,
                 dp->id.topic_id, dp->id.partition_id,
                 (unsigned long long)dp->id.created_op);
    free(dp);
}

static int
owned_cb(const struct part_id *id, void *ctx)
{
    const struct dparts *d = ctx;
    return dparts_owner_is(id->stream_id, id->topic_id, id->partition_id,
                           d->ctx->k, d->ctx->slot);
}

/* The first owned partition directory created by an op past `op`. */
struct future_scan {
    struct dparts *d;
    uint64_t op;
    int found;
    uint64_t created_op;
    char name[256];
};

static int
future_check(void *arg, const char *name)
{
    struct future_scan *fs = arg;
    struct part_id id;
    if (!pdir_parse(name, &id) || !owned_cb(&id, fs->d) ||
        id.created_op <= fs->op)
        return 0;
    fs->found = 1;
    fs->created_op = id.created_op;
    snprintf(fs->name, sizeof(fs->name), "%s", name);
    return 1;
}

static void
reconcile(struct dparts *d)
{
    struct vs_proc_shm *p0 = seg_proc(d->ctx->seg, 0);
    if (!atomic_load_explicit(&p0->ready, memory_order_acquire))
        return;
    struct dlist all = {0};
    uint64_t op = collect(d, &all, 0);
    if (op == 0) {
        free(all.v);
        return;
    }
    /* a directory from the future: the metadata lost acknowledged ops
     * (an unreadable directory is reported by the reconcile below) */
    struct future_scan fs = {.d = d, .op = op};
    (void)sio_readdir(&d->io, d->dir, future_check, &fs);
    if (fs.found)
        shard_fatal(d->ctx,
                    "partition directory %s/%s was created by op %llu but "
                    "the metadata is at op %llu: metadata lost or rolled "
                    "back; refusing to serve",
                    d->dir, fs.name, (unsigned long long)fs.created_op,
                    (unsigned long long)op);
    struct part_id *live = vs_xcalloc(all.n + 1, sizeof(*live));
    for (size_t i = 0; i < all.n; i++)
        live[i] = all.v[i].id;
    struct pdir_reconcile_result res;
    memset(&res, 0, sizeof(res));
    int rc = pdir_reconcile(&d->io, d->dir, live, all.n, owned_cb, d, &res);
    free(live);
    free(all.v);
    if (rc == -EBADE)
        shard_fatal(d->ctx, "refusing to serve: %s", res.msg);
    dparts_check_fatal(d, rc, "reconciling partition directories");
    if (rc != 0) {
        vs_log_error("reconciling %s: %s", d->dir, sio_strerror(rc));
        return;
    }
    d->reconciled = 1;
    d->stray_removed =
        res.removed + res.finished_deletes + res.transfer_leftovers;
    vs_log_info("partition directories reconciled at op %llu: %u kept, %u "
                "removed, %u interrupted deletes finished, %u state "
                "transfer leftovers removed",
                (unsigned long long)op, res.kept, res.removed,
                res.finished_deletes, res.transfer_leftovers);
}

/* The directories of the listed partitions not open here and never made
 * by this shard (created_op above created_hw: a missing one at or below
 * it is refused by open_one), made together (part_create_many: one fsync
 * of the partitions directory for a whole CreateTopic, not one per
 * partition). Returns l->n flags, 1 where a directory was made (its open
 * counts as the creating one); on an error none, and open_one creates
 * each on its own. */
static uint8_t *
create_new(struct dparts *d, const struct dlist *l)
{
    uint8_t *made = vs_xcalloc(l->n ? l->n : 1, 1);
    struct part_create *v = vs_xcalloc(l->n ? l->n : 1, sizeof(*v));
    size_t *ix = vs_xcalloc(l->n ? l->n : 1, sizeof(*ix));
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        const struct dlive *e = &l->v[i];
        if (e->id.created_op <= d->created_hw || dparts_find(d, &e->id) ||
            install_recover(d, e) != 0)
            continue;
        v[n].id = e->id;
        v[n].purge_generation = e->replicated ? 0 : e->purge_gen;
        v[n].replicated = e->replicated;
        ix[n++] = i;
    }
    if (n > 1) { /* one alone: part_open's create path is the same */
        int rc = part_create_many(&d->io, d->dir, v, n);
        dparts_check_fatal(d, rc, "creating partitions");
        if (rc < 0)
            vs_log_error("creating %zu partitions in %s: %s", n, d->dir,
                         sio_strerror(rc));
        for (size_t k = 0; rc == 0 && k < n; k++)
            made[ix[k]] = (uint8_t)v[k].made;
    }
    free(v);
    free(ix);
    return made;
}

void
dparts_sync(struct dparts *d)
{
    uint64_t pub = lr_published_op(d->lr);
    if (pub != 0 && pub != d->synced_op) {
        struct dlist l = {0};
        uint64_t op = collect(d, &l, 1);
        if (op != 0) {
            int complete = 1;
            d->epoch++;
            uint8_t *made = create_new(d, &l);
            for (size_t i = 0; i < l.n; i++) {
                struct dpart *dp = dparts_find(d, &l.v[i].id);
                if (dp == NULL) {
                    if (open_one(d, &l.v[i], made[i]) != 0) {
                        complete = 0;
                        continue;
                    }
                    dp = dparts_find(d, &l.v[i].id);
                    VS_ASSERT(dp != NULL);
                }
                update_one(d, dp, &l.v[i]);
                dp->seen = d->epoch;
            }
            for (struct dpart *dp = d->all, *next; dp; dp = next) {
                next = dp->next;
                if (dp->seen != d->epoch)
                    remove_one(d, dp);
            }
            if (complete) {
                d->synced_op = op;
                created_hw_advance(d, &l);
            }
            free(made);
        }
        free(l.v);
    }
    if (!d->reconciled && d->synced_op != 0)
        reconcile(d);
}

void
dparts_tick_fsync(struct dparts *d, uint64_t now_ms)
{
    for (struct dpart *dp = d->all; dp; dp = dp->next) {
        int rc = part_tick(dp->p, now_ms);
        dparts_check_fatal(d, rc, "fsync of a partition");
    }
}

void
dparts_tick_retention(struct dparts *d, uint64_t now_us)
{
    for (struct dpart *dp = d->all; dp; dp = dp->next) {
        if (dp->grouped)
            continue; /* its group's primary proposes it (pgroups.h) */
        struct part_retention_result r = {0};
        int rc = part_retention(dp->p, now_us, dp->message_expiry,
                                dp->max_bytes, &r);
        dparts_check_fatal(d, rc, "retention");
        if (r.segments_deleted == 0)
            continue;
        dparts_stats_note(d, dp);
        vs_log_info("partition %u.%u.%u: retention deleted %u segments "
                    "(%llu bytes)",
                    dp->id.stream_id, dp->id.topic_id, dp->id.partition_id,
                    r.segments_deleted, (unsigned long long)r.bytes_deleted);
    }
}

/* Partition state transfer (pinstall.h): the open partition is closed,
 * the staged directory swapped in and the partition opened again with
 * the same options. A failure after the close ends the process (exit 2):
 * the next boot's open_one finishes or rolls back the swap. */
int
dparts_reinstall(struct dparts *d, struct dpart *dp)
{
    struct part_opts o = *part_options(dp->p);
    int rc = part_close(dp->p);
    dp->p = NULL;
    if (rc != 0)
        vs_log_warn("partition %u.%u.%u: close before the install: %s",
                    dp->id.stream_id, dp->id.topic_id, dp->id.partition_id,
                    sio_strerror(rc));
    rc = pinstall_swap(&d->io, d->dir, &dp->id);
    if (rc < 0)
        rc = pinstall_recover(&d->io, d->dir, &dp->id, NULL);
    if (rc < 0)
        shard_fatal(d->ctx,
                    "partition %u.%u.%u: installing the transferred "
                    "partition failed: %s",
                    dp->id.stream_id, dp->id.topic_id, dp->id.partition_id,
                    sio_strerror(rc));
    struct part_verdict v;
    memset(&v, 0, sizeof(v));
    rc = part_open(&d->io, d->dir, &dp->id, &o, 0, dp->purge_gen, &dp->p, &v);
    if (rc == -EBADMSG)
        shard_fatal(d->ctx, "refusing the installed partition: %s", v.msg);
    if (rc < 0)
        shard_fatal(d->ctx,
                    "partition %u.%u.%u: reopening after the install "
                    "failed: %s",
                    dp->id.stream_id, dp->id.topic_id, dp->id.partition_id,
                    sio_strerror(rc));
    dparts_stats_note(d, dp);
    return 0;
}
