/*
 * tests/sim/sim_net.c - the deterministic test binding of the VSR engine.
 *
 * Role: see sim_net.h. Every action an engine emits is performed here
 * against in-memory state and checked against the rules listed there.
 * Invariants: the only randomness is the seeded xoshiro state in struct
 * sim; frames in flight are delivered in (due tick, send order) order.
 * Callers: tests only.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/mem.h"
#include "tests/sim/sim_net.h"

#define SIM_DRAIN_MAX 1000000u /* actions per drain: a loop is a bug */

static void
violate(struct sim *s, const char *fmt, ...)
{
    if (s->violations++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->violation, sizeof(s->violation), fmt, ap);
        va_end(ap);
    }
}

static uint64_t
rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t
sim_rand(struct sim *s)
{
    uint64_t *r = s->rng;
    uint64_t out = rotl(r[1] * 5, 7) * 9;
    uint64_t t = r[1] << 17;
    r[2] ^= r[0];
    r[3] ^= r[1];
    r[1] ^= r[2];
    r[0] ^= r[3];
    r[2] ^= t;
    r[3] = rotl(r[3], 45);
    return out;
}

void
sim_default_options(struct vs_vsr_options *o, unsigned n)
{
    memset(o, 0, sizeof(*o));
    o->cluster.lo = 0x76737472u; /* "vstr" */
    o->cluster.hi = 0x1;
    o->group = VS_METADATA_GROUP;
    o->replica_count = (uint8_t)n;
    o->journal_slots = 64;
    o->pipeline_max = 4;
    o->body_max = 4096;
    o->timeouts.prepare = 5;
    o->timeouts.commit = 10;
    o->timeouts.normal_heartbeat = 100;
}

static int
engine_start(struct sim *s, unsigned i, const struct vs_hdr_prepare *headers,
             size_t count, uint64_t commit_min, int recovering, char *reason,
             size_t reason_len)
{
    struct vs_vsr_options o = s->opt;
    o.faulty_op = s->r[i].cut_faulty;
    o.rebuilt = s->r[i].rebuilt;
    s->r[i].cut_faulty = 0;
    s->r[i].dvc_set = 0;
    o.replica = (uint8_t)i;
    o.durable = s->r[i].sb;
    o.headers = headers;
    o.header_count = count;
    o.commit_min = commit_min;
    o.commit_min_checksum = s->r[i].snap_checksum;
    o.recovering = recovering;
    if (recovering) {
        /* A fresh per-boot nonce, as the binding draws one. */
        o.incarnation.lo = sim_rand(s) | 1;
        o.incarnation.hi = sim_rand(s);
    }
    o.seed = s->opt.seed + i;
    return vsr_create(&o, &s->r[i].eng, reason, reason_len);
}

int
sim_init(struct sim *s, unsigned n, uint64_t seed,
         const struct vs_vsr_options *o)
{
    memset(s, 0, sizeof(*s));
    if (n < 1 || n > SIM_REPLICAS_MAX)
        return -EINVAL;
    s->n = n;
    s->opt = *o;
    s->opt.seed = seed;
    uint64_t z = seed;
    for (int k = 0; k < 4; k++) {
        z += 0x9e3779b97f4a7c15ull;
        uint64_t x = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        s->rng[k] = x ^ (x >> 31);
    }
    s->delay_min = 1;
    s->delay_max = 1;
    for (unsigned i = 0; i < n; i++) {
        s->r[i].sb = o->durable;
        int rc = engine_start(s, i, NULL, 0, 0, 0, NULL, 0);
        if (rc != 0)
            return rc;
    }
    sim_drain(s);
    return 0;
}

static void
pending_free(struct sim_replica *r)
{
    for (size_t k = 0; k < r->pending_len; k++)
        free(r->pending[k].frame);
    r->pending_len = 0;
}

void
sim_fini(struct sim *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        struct sim_replica *r = &s->r[i];
        vsr_destroy(r->eng);
        r->eng = NULL;
        pending_free(r);
        free(r->pending);
        for (size_t op = 0; op <= SIM_OPS_MAX; op++)
            free(r->journal[op].body);
    }
    for (size_t k = 0; k < s->net_len; k++)
        free(s->net[k].frame);
    free(s->net);
    free(s->replies);
}

/* ---- actions ---- */

static int
carries_view(uint8_t command)
{
    return command == VS_CMD_PREPARE_OK || command == VS_CMD_COMMIT ||
           command == VS_CMD_START_VIEW_CHANGE ||
           command == VS_CMD_DO_VIEW_CHANGE || command == VS_CMD_START_VIEW;
}

/* Commands that imply the sender's log_view equals their view. */
static int
implies_log_view(uint8_t command)
{
    return command == VS_CMD_PREPARE_OK || command == VS_CMD_COMMIT ||
           command == VS_CMD_START_VIEW;
}

static void net_enqueue(struct sim *s, unsigned from, unsigned to,
                        const void *frame, uint32_t size);

static void
net_send(struct sim *s, unsigned from, const struct vs_vsr_action *a)
{
    const struct vs_header *h = a->frame;
    struct sim_replica *r = &s->r[from];
    if (a->size != h->f.size)
        violate(s, "replica %u: SEND without the whole frame", from);
    if (carries_view(h->f.command) && h->f.view > r->sb.view)
        violate(s, "replica %u: %s in view %u before view %u is durable", from,
                vs_command_name(h->f.command), h->f.view, r->sb.view);
    if (implies_log_view(h->f.command) && h->f.view > r->sb.log_view)
        violate(s, "replica %u: %s in view %u before log_view %u is durable",
                from, vs_command_name(h->f.command), h->f.view, h->f.view);
    if (h->f.command == VS_CMD_DO_VIEW_CHANGE) {
        const struct vs_hdr_do_view_change *d =
            (const struct vs_hdr_do_view_change *)h;
        if (d->log_view > r->sb.log_view)
            violate(s, "replica %u: DVC with log_view %u before it is durable",
                    from, d->log_view);
        /* R2: one DVC per view. */
        struct vs_u128 sum = vs_checksum(h, h->f.size);
        if (r->dvc_view == h->f.view && r->dvc_set &&
            !vs_u128_eq(sum, r->dvc_sum))
            violate(s, "replica %u: two different DVCs for view %u", from,
                    h->f.view);
        r->dvc_view = h->f.view;
        r->dvc_set = 1;
        r->dvc_sum = sum;
    }
    s->cmd_sent[h->f.command % 32]++;
    if (h->f.command == VS_CMD_PREPARE_OK && r->xfer)
        violate(s, "replica %u: PrepareOk during state transfer", from);
    if (h->f.command == VS_CMD_PREPARE_OK) {
        const struct vs_hdr_prepare_ok *ok =
            (const struct vs_hdr_prepare_ok *)h;
        const struct sim_entry *e =
            ok->op <= SIM_OPS_MAX ? &r->journal[ok->op] : NULL;
        if (e == NULL || !e->present ||
            !vs_u128_eq(e->h.f.checksum, ok->prepare_checksum))
            violate(s, "replica %u: PrepareOk op %llu before it is durable",
                    from, (unsigned long long)ok->op);
        if (!vs_frame_verify(h))
            violate(s, "replica %u: unsealed PrepareOk", from);
    }
    net_enqueue(s, from, a->replica, a->frame, a->size);
}

static int
partitioned(const struct sim *s, unsigned from, unsigned to)
{
    return (s->cut[from] & (1u << to)) != 0;
}

static void
net_enqueue(struct sim *s, unsigned from, unsigned to, const void *frame,
            uint32_t size)
{
    const struct vs_header *h = frame;
    s->sent++;
    if (s->filter != NULL && s->filter(s->filter_ctx, from, to, h)) {
        s->dropped++;
        return;
    }
    if (partitioned(s, from, to)) {
        s->dropped++;
        return;
    }
    if (s->loss_per_mille > 0 && sim_rand(s) % 1000 < s->loss_per_mille) {
        s->dropped++;
        return;
    }
    unsigned copies = 1;
    if (s->dup_per_mille > 0 && sim_rand(s) % 1000 < s->dup_per_mille)
        copies = 2;
    for (unsigned c = 0; c < copies; c++) {
        if (s->net_len == s->net_cap) {
            s->net_cap = s->net_cap ? s->net_cap * 2 : 256;
            s->net = vs_xrealloc(s->net, s->net_cap * sizeof(*s->net));
        }
        struct sim_msg *m = &s->net[s->net_len++];
        unsigned span = s->delay_max - s->delay_min + 1;
        m->due = s->now + s->delay_min + sim_rand(s) % span;
        m->seq = s->net_seq++;
        m->from = (uint8_t)from;
        m->to = (uint8_t)to;
        m->len = size;
        m->frame = vs_xmalloc(size);
        memcpy(m->frame, frame, size);
    }
}

/* JOURNAL_TRUNCATE: entries and pending appends >= op go, durably. */
static void
journal_truncate(struct sim *s, unsigned i, const struct vs_vsr_action *a)
{
    struct sim_replica *r = &s->r[i];
    if (a->op == 0 || a->op <= r->applied)
        violate(s, "replica %u: truncation at op %llu below applied %llu", i,
                (unsigned long long)a->op, (unsigned long long)r->applied);
    for (uint64_t o = a->op; o > 0 && o <= SIM_OPS_MAX; o++) {
        free(r->journal[o].body);
        memset(&r->journal[o], 0, sizeof(r->journal[o]));
    }
    size_t keep = 0;
    for (size_t k = 0; k < r->pending_len; k++) {
        if (r->pending[k].op >= a->op)
            free(r->pending[k].frame);
        else
            r->pending[keep++] = r->pending[k];
    }
    r->pending_len = keep;
    if (r->journal_first >= a->op)
        r->journal_first = 0;
    r->truncations++;
}

/* SEND_PREPARE: read the entry back and send it as a RepairPrepare (the
 * primary's retransmit: as a Prepare of its view). */
static void
send_prepare(struct sim *s, unsigned i, const struct vs_vsr_action *a)
{
    struct sim_replica *r = &s->r[i];
    if (a->op == 0 || a->op > SIM_OPS_MAX)
        return;
    const struct sim_entry *e = &r->journal[a->op];
    if (!e->present || !vs_u128_eq(e->h.f.checksum, a->checksum))
        return; /* gone or replaced: send nothing */
    uint32_t size = e->h.f.size;
    uint8_t *frame = vs_xmalloc(size);
    memcpy(frame, &e->h, VS_HEADER_SIZE);
    if (size > VS_HEADER_SIZE)
        memcpy(frame + VS_HEADER_SIZE, e->body, size - VS_HEADER_SIZE);
    struct vs_header *fh = (struct vs_header *)frame;
    if (a->retransmit) { /* the primary's retransmit: a Prepare of its view */
        fh->f.view = a->view;
        s->cmd_sent[VS_CMD_PREPARE]++;
    } else {
        fh->f.command = VS_CMD_REPAIR_PREPARE;
        s->cmd_sent[VS_CMD_REPAIR_PREPARE]++;
    }
    net_enqueue(s, i, a->replica, frame, size);
    free(frame);
}

static void
journal_append(struct sim *s, unsigned i, const struct vs_vsr_action *a)
{
    struct sim_replica *r = &s->r[i];
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a->frame;
    if (a->body == NULL || a->size != p->f.size)
        violate(s, "replica %u: JOURNAL_APPEND without its body", i);
    else if (!vs_prepare_verify_identity(p) ||
             !vs_body_verify(a->frame, a->body, a->body_len))
        violate(s, "replica %u: JOURNAL_APPEND op %llu not sealed", i,
                (unsigned long long)p->op);
    if (p->op == 0 || p->op > SIM_OPS_MAX) {
        violate(s, "replica %u: op %llu out of the harness range", i,
                (unsigned long long)p->op);
        return;
    }
    if (r->pending_len == r->pending_cap) {
        r->pending_cap = r->pending_cap ? r->pending_cap * 2 : 16;
        r->pending =
            vs_xrealloc(r->pending, r->pending_cap * sizeof(*r->pending));
    }
    struct sim_pending *w = &r->pending[r->pending_len++];
    w->op = p->op;
    w->due = s->now + s->disk_delay;
    w->size = a->size;
    w->frame = vs_xmalloc(a->size);
    memcpy(w->frame, a->frame, a->size);
}

static void
commit_apply(struct sim *s, unsigned i, const struct vs_vsr_action *a)
{
    struct sim_replica *r = &s->r[i];
    const struct vs_hdr_prepare *p = (const struct vs_hdr_prepare *)a->frame;
    if (r->xfer && a->op > r->xfer_applied + 1)
        violate(s, "replica %u: COMMIT op %llu during state transfer", i,
                (unsigned long long)a->op);
    if (a->op != r->applied + 1 || p->op != a->op) {
        violate(s, "replica %u: COMMIT op %llu after applied %llu", i,
                (unsigned long long)a->op, (unsigned long long)r->applied);
        return;
    }
    const struct sim_entry *e = &r->journal[a->op];
    if (!e->present || !vs_u128_eq(e->h.f.checksum, p->f.checksum))
        violate(s, "replica %u: COMMIT op %llu not durable here", i,
                (unsigned long long)a->op);
    if (!vs_u128_eq(p->parent, r->applied_checksum))
        violate(s, "replica %u: COMMIT op %llu breaks the chain", i,
                (unsigned long long)a->op);
    if (s->history_set[a->op] && !vs_u128_eq(s->history[a->op], p->f.checksum))
        violate(s, "op %llu committed with two checksums",
                (unsigned long long)a->op);
    s->history[a->op] = p->f.checksum;
    s->history_set[a->op] = 1;

    const uint8_t *body = a->body;
    if (body == NULL) {
        body = e->body; /* replay: the binding reads its journal */
        r->commits_replayed++;
    }
    struct vs_xxh3_stream st;
    vs_xxh3_stream_init(&st);
    vs_xxh3_stream_update(&st, &r->sm_hash, sizeof(r->sm_hash));
    vs_xxh3_stream_update(&st, &p->op, sizeof(p->op));
    if (a->body_len > 0 && body != NULL)
        vs_xxh3_stream_update(&st, body, a->body_len);
    r->sm_hash = vs_xxh3_stream_digest(&st);
    r->applied = a->op;
    r->applied_checksum = p->f.checksum;
    uint64_t out[2] = {a->op, r->sm_hash};
    if (vsr_on_commit_applied(r->eng, a->op, out, sizeof(out)) != 0)
        violate(s, "replica %u: applied op %llu refused", i,
                (unsigned long long)a->op);
}

static void
reply_record(struct sim *s, unsigned i, const struct vs_vsr_action *a)
{
    const struct vs_hdr_reply *h = (const struct vs_hdr_reply *)a->frame;
    if (h->f.command != VS_CMD_REPLY || h->op != a->op || h->commit != a->op ||
        !vs_u128_eq(h->client, a->client) || a->body_len != 16 ||
        a->body == NULL)
        violate(s, "replica %u: malformed reply for op %llu", i,
                (unsigned long long)a->op);
    else {
        uint64_t out[2];
        memcpy(out, a->body, sizeof(out));
        if (out[0] != a->op)
            violate(s, "replica %u: reply body of another op", i);
    }
    if (s->replies_len == s->replies_cap) {
        s->replies_cap = s->replies_cap ? s->replies_cap * 2 : 64;
        s->replies =
            vs_xrealloc(s->replies, s->replies_cap * sizeof(*s->replies));
    }
    struct sim_reply *rp = &s->replies[s->replies_len++];
    rp->replica = (uint8_t)i;
    rp->client = h->client;
    rp->request = h->request;
    rp->op = h->op;
    s->r[i].replies++;
}

static void
superblock_write(struct sim *s, unsigned i, const struct vs_vsr_action *a)
{
    struct sim_replica *r = &s->r[i];
    if (r->sb_pending)
        violate(s, "replica %u: two superblock writes in flight", i);
    const struct vs_vsr_persist *p = &a->persist;
    if (p->view < r->sb.view || p->log_view < r->sb.log_view ||
        p->checkpoint_op < r->sb.checkpoint_op || p->log_view > p->view)
        violate(s, "replica %u: superblock would regress", i);
    r->sb_pending = 1;
    r->sb_writing = *p;
    r->sb_due = s->now + s->disk_delay;
}

void
sim_drain(struct sim *s)
{
    unsigned count = 0;
    int busy = 1;
    while (busy) {
        busy = 0;
        for (unsigned i = 0; i < s->n; i++) {
            struct vs_vsr_action a;
            while (s->r[i].eng != NULL && vsr_pop(s->r[i].eng, &a)) {
                busy = 1;
                if (++count > SIM_DRAIN_MAX) {
                    violate(s, "drain did not converge");
                    return;
                }
                switch (a.kind) {
                case VSR_ACT_SEND:
                    net_send(s, i, &a);
                    break;
                case VSR_ACT_JOURNAL_APPEND:
                    journal_append(s, i, &a);
                    break;
                case VSR_ACT_SUPERBLOCK_WRITE:
                    superblock_write(s, i, &a);
                    break;
                case VSR_ACT_COMMIT:
                    commit_apply(s, i, &a);
                    break;
                case VSR_ACT_REPLY:
                    reply_record(s, i, &a);
                    break;
                case VSR_ACT_JOURNAL_TRUNCATE:
                    journal_truncate(s, i, &a);
                    break;
                case VSR_ACT_SEND_PREPARE:
                    send_prepare(s, i, &a);
                    break;
                case VSR_ACT_STATE_TRANSFER:
                    s->r[i].transfers++;
                    if (s->xfer_ticks > 0 && !s->r[i].xfer && a.replica < s->n)
                        sim_transfer_start(s, i, a.replica);
                    break;
                default:
                    violate(s, "unknown action %d", (int)a.kind);
                }
            }
        }
    }
}

/* ---- disk completions ---- */

static void
journal_make_durable(struct sim *s, unsigned i, size_t k)
{
    struct sim_replica *r = &s->r[i];
    struct sim_pending w = r->pending[k];
    memmove(&r->pending[k], &r->pending[k + 1],
            (r->pending_len - k - 1) * sizeof(w));
    r->pending_len--;
    struct sim_entry *e = &r->journal[w.op];
    free(e->body);
    memcpy(&e->h, w.frame, sizeof(e->h));
    e->body = NULL;
    if (w.size > VS_HEADER_SIZE) {
        e->body = vs_xmalloc(w.size - VS_HEADER_SIZE);
        memcpy(e->body, w.frame + VS_HEADER_SIZE, w.size - VS_HEADER_SIZE);
    }
    e->present = 1;
    if (r->journal_first == 0 || w.op < r->journal_first)
        r->journal_first = w.op;
    if (w.op > 1 && w.op > r->journal_first && !r->journal[w.op - 1].present)
        violate(s, "replica %u: append of op %llu leaves a hole", i,
                (unsigned long long)w.op);
    free(w.frame);
    if (vsr_on_journal_durable(r->eng, w.op, e->h.f.checksum) != 0)
        violate(s, "replica %u: journal completion of op %llu refused", i,
                (unsigned long long)w.op);
}

int
sim_complete_journal(struct sim *s, unsigned i, uint64_t op)
{
    struct sim_replica *r = &s->r[i];
    for (size_t k = 0; k < r->pending_len; k++) {
        if (r->pending[k].op == op) {
            journal_make_durable(s, i, k);
            sim_drain(s);
            return 0;
        }
    }
    return -ENOENT;
}

static void
journal_drain_below(struct sim_replica *r, uint64_t op)
{
    for (uint64_t o = r->journal_first; o > 0 && o < op; o++) {
        free(r->journal[o].body);
        memset(&r->journal[o], 0, sizeof(r->journal[o]));
    }
    if (r->journal_first != 0 && r->journal_first < op)
        r->journal_first = op;
}

int
sim_complete_superblock(struct sim *s, unsigned i)
{
    struct sim_replica *r = &s->r[i];
    if (!r->sb_pending)
        return -ENOENT;
    r->sb_pending = 0;
    r->sb = r->sb_writing;
    /* Checkpoint phase 3: the pairing is durable, drain below it less
     * the engine's repair margin (as shard 0 does). */
    journal_drain_below(r, vsr_drain_keep_from(r->eng, r->sb.checkpoint_op));
    if (vsr_on_superblock_durable(r->eng, &r->sb) != 0)
        violate(s, "replica %u: superblock completion refused", i);
    sim_drain(s);
    return 0;
}

/* ---- state transfer ---- */

int
sim_transfer_start(struct sim *s, unsigned i, unsigned src)
{
    struct sim_replica *r = &s->r[i];
    int rc = vsr_transfer_begin(r->eng);
    if (rc != 0)
        return rc;
    r->xfer = 1;
    r->xfer_src = src;
    r->xfer_due = s->now + s->xfer_ticks;
    r->xfer_applied = r->applied;
    return 0;
}

static int
can_serve(const struct sim *s, unsigned j)
{
    const struct sim_replica *p = &s->r[j];
    return p->eng != NULL && vsr_is_settled_primary(p->eng) && p->snap_op > 0;
}

/* The binding's install: snapshot ahead -> cut the journal, write the
 * snapshot, restore the state; else keep the state (table only). */
static void
transfer_install(struct sim *s, unsigned i)
{
    struct sim_replica *r = &s->r[i];
    const struct sim_replica *p = &s->r[r->xfer_src];
    uint64_t op = p->snap_op;
    struct vs_u128 sum = vs_checksum(&p->snap_hash, sizeof(p->snap_hash));
    int ahead = op > r->applied;
    if (ahead) {
        for (uint64_t o = 0; o <= SIM_OPS_MAX; o++) {
            free(r->journal[o].body);
            memset(&r->journal[o], 0, sizeof(r->journal[o]));
        }
        r->journal_first = 0;
        pending_free(r);
        r->snap_op = op;
        r->snap_hash = p->snap_hash;
        r->snap_checksum = p->snap_checksum;
        r->applied = op;
        r->sm_hash = p->snap_hash;
        r->applied_checksum = p->snap_checksum;
    }
    struct vs_u128 op_sum = p->snap_checksum;
    if (s->xfer_no_op_checksum)
        memset(&op_sum, 0, sizeof(op_sum));
    int rc =
        vsr_on_state_installed(r->eng, op, op_sum, sum, vsr_commit_max(p->eng));
    if (rc != (ahead ? 0 : 1))
        violate(s, "replica %u: install of op %llu refused (%d)", i,
                (unsigned long long)op, rc);
    r->xfer = 0;
    if (ahead)
        r->installs++;
    else
        r->installs_table++;
}

static void
transfer_step(struct sim *s, unsigned i)
{
    struct sim_replica *r = &s->r[i];
    if (!can_serve(s, r->xfer_src)) {
        for (unsigned j = 0; j < s->n; j++) {
            if (j != i && can_serve(s, j)) {
                r->xfer_src = j;
                r->xfer_due = s->now + s->xfer_ticks;
                r->retargets++;
                break;
            }
        }
        return;
    }
    if (s->now >= r->xfer_due)
        transfer_install(s, i);
    sim_drain(s);
}

void
sim_step(struct sim *s)
{
    s->now++;
    /* Deliver due frames in (due, seq) order. */
    for (;;) {
        size_t best = SIZE_MAX;
        for (size_t k = 0; k < s->net_len; k++) {
            const struct sim_msg *m = &s->net[k];
            if (m->due > s->now)
                continue;
            if (best == SIZE_MAX || m->due < s->net[best].due ||
                (m->due == s->net[best].due && m->seq < s->net[best].seq))
                best = k;
        }
        if (best == SIZE_MAX)
            break;
        struct sim_msg m = s->net[best];
        s->net[best] = s->net[--s->net_len];
        if (s->r[m.to].eng != NULL) {
            vsr_on_message(s->r[m.to].eng, m.frame, m.len);
            s->delivered++;
        }
        free(m.frame);
        sim_drain(s);
    }
    for (unsigned i = 0; i < s->n; i++) {
        struct sim_replica *r = &s->r[i];
        if (r->eng == NULL)
            continue;
        while (!r->hold_journal && r->pending_len > 0 &&
               r->pending[0].due <= s->now) {
            journal_make_durable(s, i, 0);
            sim_drain(s);
        }
        if (r->sb_pending && !r->hold_superblock && r->sb_due <= s->now)
            sim_complete_superblock(s, i);
    }
    for (unsigned i = 0; i < s->n; i++)
        if (s->r[i].eng != NULL && s->r[i].xfer)
            transfer_step(s, i);
    for (unsigned i = 0; i < s->n; i++)
        if (s->r[i].eng != NULL)
            vsr_tick(s->r[i].eng);
    sim_drain(s);
}

int
sim_run_until_applied(struct sim *s, uint64_t op, uint64_t max_ticks)
{
    for (uint64_t t = 0; t <= max_ticks; t++) {
        int done = 1;
        for (unsigned i = 0; i < s->n && done; i++)
            if (s->r[i].eng != NULL && s->r[i].applied < op)
                done = 0;
        if (done)
            return 0;
        sim_step(s);
    }
    return -ETIMEDOUT;
}

int
sim_request(struct sim *s, unsigned i, uint64_t client, uint64_t request,
            uint8_t operation, const void *body, uint32_t len)
{
    struct vs_hdr_request req;
    memset(&req, 0, sizeof(req));
    req.f.command = VS_CMD_REQUEST;
    req.f.size = VS_HEADER_SIZE + len;
    req.client.lo = client;
    req.request = request;
    req.operation = operation;
    req.user_id = (uint32_t)client;
    req.request_checksum = vs_checksum(body, len);
    int rc = vsr_on_request(s->r[i].eng, &req, body, len, 1000 + s->now);
    sim_drain(s);
    return rc;
}

/* ---- crash, restart, checkpoint ---- */

void
sim_partition(struct sim *s, unsigned i, unsigned j, int cut)
{
    if (cut) {
        s->cut[i] |= 1u << j;
        s->cut[j] |= 1u << i;
    } else {
        s->cut[i] &= ~(1u << j);
        s->cut[j] &= ~(1u << i);
    }
}

void
sim_isolate(struct sim *s, unsigned i, int cut)
{
    for (unsigned j = 0; j < s->n; j++)
        if (j != i)
            sim_partition(s, i, j, cut);
}

int
sim_cut_tail(struct sim *s, unsigned i)
{
    return sim_cut_tail_n(s, i, 1);
}

int
sim_cut_tail_n(struct sim *s, unsigned i, unsigned k)
{
    struct sim_replica *r = &s->r[i];
    if (r->eng != NULL)
        return -EBUSY;
    uint64_t op = r->journal_first;
    if (op == 0 || k == 0)
        return -ENOENT;
    while (op < SIM_OPS_MAX && r->journal[op + 1].present)
        op++;
    if (op < r->snap_op + k || op < r->journal_first + k - 1)
        return -ENOENT;
    uint64_t top = op;
    for (unsigned c = 0; c < k; c++, op--) {
        free(r->journal[op].body);
        memset(&r->journal[op], 0, sizeof(r->journal[op]));
        if (op == r->journal_first)
            r->journal_first = 0;
    }
    r->cut_faulty = top;
    return 0;
}

int
sim_rebuild(struct sim *s, unsigned i, char *reason, size_t reason_len)
{
    struct sim_replica *r = &s->r[i];
    if (r->eng != NULL)
        sim_crash(s, i);
    for (uint64_t o = 0; o <= SIM_OPS_MAX; o++) {
        free(r->journal[o].body);
        memset(&r->journal[o], 0, sizeof(r->journal[o]));
    }
    r->journal_first = 0;
    memset(&r->sb, 0, sizeof(r->sb));
    r->snap_op = 0;
    r->snap_hash = 0;
    memset(&r->snap_checksum, 0, sizeof(r->snap_checksum));
    r->rebuilt = 1;
    return sim_restart(s, i, reason, reason_len);
}

void
sim_crash(struct sim *s, unsigned i)
{
    struct sim_replica *r = &s->r[i];
    if (r->eng != NULL && r->rebuilt) {
        struct vs_vsr_info info;
        vsr_info(r->eng, &info);
        if (!info.rebuilding)
            r->rebuilt = 0; /* caught up: the binding clears its mark */
    }
    vsr_destroy(r->eng);
    r->eng = NULL;
    r->xfer = 0;
    pending_free(r); /* never fsynced: lost */
    r->sb_pending = 0;
    /* An append-only WAL keeps a contiguous prefix. */
    uint64_t op = r->journal_first;
    while (op > 0 && op <= SIM_OPS_MAX && r->journal[op].present)
        op++;
    for (uint64_t o = op; o > 0 && o <= SIM_OPS_MAX; o++) {
        free(r->journal[o].body);
        memset(&r->journal[o], 0, sizeof(r->journal[o]));
    }
}

int
sim_restart(struct sim *s, unsigned i, char *reason, size_t reason_len)
{
    struct sim_replica *r = &s->r[i];
    struct vs_hdr_prepare *h = vs_xcalloc(SIM_OPS_MAX + 1, sizeof(*h));
    size_t count = 0;
    for (uint64_t op = r->journal_first;
         op > 0 && op <= SIM_OPS_MAX && r->journal[op].present; op++)
        h[count++] = r->journal[op].h;
    /* The engine's window is journal_slots ops: older entries (the repair
     * margin a drain keeps) are below the state op (as shard 0 trims). */
    size_t skip =
        count > s->opt.journal_slots ? count - s->opt.journal_slots : 0;
    if (skip > 0) {
        memmove(h, h + skip, (count - skip) * sizeof(*h));
        count -= skip;
    }
    r->applied = r->snap_op;
    r->sm_hash = r->snap_hash;
    memset(&r->applied_checksum, 0, sizeof(r->applied_checksum));
    if (r->snap_op > 0 && r->journal[r->snap_op].present)
        r->applied_checksum = r->journal[r->snap_op].h.f.checksum;
    else if (r->snap_op > 0)
        r->applied_checksum = r->snap_checksum; /* installed snapshot */
    int rc =
        engine_start(s, i, h, count, r->snap_op, s->n > 1, reason, reason_len);
    free(h);
    if (rc == 0)
        sim_drain(s);
    return rc;
}

int
sim_checkpoint(struct sim *s, unsigned i)
{
    struct sim_replica *r = &s->r[i];
    struct vs_u128 sum = vs_checksum(&r->sm_hash, sizeof(r->sm_hash));
    int rc = vsr_checkpoint(r->eng, r->applied, sum);
    if (rc != 0)
        return rc;
    r->snap_op = r->applied;
    r->snap_hash = r->sm_hash;
    r->snap_checksum = r->applied_checksum;
    sim_drain(s);
    return 0;
}
