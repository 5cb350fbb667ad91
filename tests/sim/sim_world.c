/*
 * tests/sim/sim_world.c - the simulator's world: network, clients, fault
 * schedule and checkers over N sim_nodes (sim_world.h).
 * Callers: tests/sim/vsr_sim.c (one thread).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "common/layout.h"
#include "common/assert.h"
#include "common/mem.h"
#include "shard/meta/lookup.h"
#include "shard/meta/ops.h"
#include "shard/meta/snapshot_codec.h"
#include "tests/sim/sim_model.h"
#include "tests/sim/sim_world.h"
#include "tests/sim/sim_parts.h"
#include "tests/sim/sim_xfer.h"

#define LIVENESS_TICKS 6000u /* 60 s of virtual time after the faults */
#define CLIENT_TIMEOUT 60u   /* ticks before a request is resent */

/* ------------------------------------------------------------ PRNG */

static uint64_t
rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t
sim_world_rand(struct sim_world *w)
{
    /* xoshiro256** */
    uint64_t *s = w->rng;
    uint64_t r = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static uint64_t
splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t
rnd(struct sim_world *w, uint64_t n)
{
    return n ? sim_world_rand(w) % n : 0;
}

static int
chance(struct sim_world *w, unsigned num, unsigned den)
{
    return rnd(w, den) < num;
}

static void tracef(struct sim_world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
tracef(struct sim_world *w, const char *fmt, ...)
{
    if (!w->trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%8llu] ", (unsigned long long)w->now);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void
sim_world_failf(struct sim_world *w, const char *fmt, ...)
{
    if (w->failed)
        return;
    w->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    int k = snprintf(w->failure, sizeof(w->failure),
                     "tick %llu: ", (unsigned long long)w->now);
    vsnprintf(w->failure + k, sizeof(w->failure) - (size_t)k, fmt, ap);
    va_end(ap);
    tracef(w, "FAIL %s", w->failure);
}

/* ---------------------------------------------------------- params */

void
sim_world_params(uint64_t seed, unsigned n, struct sim_params *p)
{
    uint64_t x = seed;
    memset(p, 0, sizeof(*p));
    static const unsigned pick[10] = {1, 2, 3, 3, 3, 3, 3, 4, 5, 5};
    unsigned drawn = pick[splitmix(&x) % 10]; /* drawn either way, so
                                                  --replicas keeps the rest */
    p->n = n ? n : drawn;
    p->loss_pm = (unsigned)(splitmix(&x) % 301);
    p->dup_pm = (unsigned)(splitmix(&x) % 501);
    p->delay_min = (unsigned)(splitmix(&x) % 4);
    p->delay_mean = 1 + (unsigned)(splitmix(&x) % 5);
    p->part_on_pm = (unsigned)(splitmix(&x) % 301);
    p->part_off_pm = 100 + (unsigned)(splitmix(&x) % 901);
    p->crash_pm = 20 + (unsigned)(splitmix(&x) % 200);
    p->restart_pm = 50 + (unsigned)(splitmix(&x) % 200);
    p->tear_pm = 800 + (unsigned)(splitmix(&x) % 201);
    p->disk_delay = (unsigned)(splitmix(&x) % 4);
    p->ckpt_every = 12 + (unsigned)(splitmix(&x) % 25);
    p->wal_slots = 32 + (unsigned)(splitmix(&x) % 33);
    if (p->ckpt_every > p->wal_slots / 2)
        p->ckpt_every = p->wal_slots / 2;
    p->clients = 2 * 4 - 1;
    p->ticks = 2000 + splitmix(&x) % 2000;
    p->allow_sessionless = 1;
    p->allow_lost_session = 1;
}

/* --------------------------------------------------------- network */

static uint64_t
delay_ticks(struct sim_world *w)
{
    if (!w->faults_on || !w->f.delay)
        return 1;
    uint64_t d = 1 + w->p.delay_min + rnd(w, 2 * w->p.delay_mean + 1);
    if (chance(w, 1, 50))
        d += rnd(w, 200); /* the long tail */
    return d;
}

static void
net_push(struct sim_world *w, int to_client, unsigned from, unsigned to,
         const void *frame, uint32_t len, uint64_t due)
{
    if (w->nnet == w->net_cap) {
        w->net_cap = w->net_cap ? 2 * w->net_cap : 256;
        w->net = vs_xrealloc(w->net, w->net_cap * sizeof(*w->net));
    }
    struct sim_msg *m = &w->net[w->nnet++];
    m->due = due;
    m->seq = w->net_seq++;
    m->to_client = to_client;
    m->from = from;
    m->to = to;
    m->len = len;
    m->frame = vs_xmalloc(len);
    memcpy(m->frame, frame, len);
}

static int
lost(struct sim_world *w)
{
    return w->faults_on && w->f.loss && chance(w, w->p.loss_pm, 1000);
}

static void
send_faulty(struct sim_world *w, int to_client, unsigned from, unsigned to,
            const void *frame, uint32_t len)
{
    if (lost(w))
        return;
    net_push(w, to_client, from, to, frame, len, w->now + delay_ticks(w));
    if (w->faults_on && w->f.dup && chance(w, w->p.dup_pm, 1000))
        net_push(w, to_client, from, to, frame, len, w->now + delay_ticks(w));
}

/* ----------------------------------------------------------- hooks */

static void
check_persist_before_send(struct sim_world *w, struct sim_node *n,
                          const struct vs_header *h)
{
    unsigned c = h->f.command;
    if (c != VS_CMD_PREPARE_OK && c != VS_CMD_COMMIT &&
        c != VS_CMD_START_VIEW_CHANGE && c != VS_CMD_DO_VIEW_CHANGE &&
        c != VS_CMD_START_VIEW)
        return;
    if (h->f.view > n->sb_durable.view)
        sim_world_failf(w,
                        "persist-before-send: replica %u sent command %u in "
                        "view %u above its durable view %u",
                        n->cfg.replica, c, h->f.view, n->sb_durable.view);
    if (c == VS_CMD_DO_VIEW_CHANGE) {
        const struct vs_hdr_do_view_change *d = (const void *)h;
        if (d->log_view > n->sb_durable.log_view)
            sim_world_failf(w,
                            "persist-before-send: replica %u sent a DVC with "
                            "log_view %u above its durable %u",
                            n->cfg.replica, d->log_view,
                            n->sb_durable.log_view);
    }
    if (c == VS_CMD_PREPARE_OK) {
        const struct vs_hdr_prepare_ok *ok = (const void *)h;
        const struct vs_hdr_prepare *j =
            n->journal_open ? wal_header(&n->journal, ok->op) : NULL;
        int drained =
            n->journal_open && ok->op <= n->last_ckpt_op &&
            (wal_empty(&n->journal) || ok->op < wal_first_op(&n->journal));
        if (!drained &&
            (j == NULL || !vs_u128_eq(j->f.checksum, ok->prepare_checksum)))
            sim_world_failf(w,
                            "R3: replica %u acknowledged op %llu that its "
                            "journal does not hold",
                            n->cfg.replica, (unsigned long long)ok->op);
        if (sim_node_append_pending(n, ok->op, ok->prepare_checksum))
            sim_world_failf(w,
                            "R3: replica %u acknowledged op %llu before its "
                            "journal append was reported durable",
                            n->cfg.replica, (unsigned long long)ok->op);
    }
}

static uint8_t *dup_bytes(const void *p, size_t len);

static void
hook_send(void *ctx, struct sim_node *n, unsigned to, const void *frame,
          uint32_t len)
{
    struct sim_world *w = ctx;
    check_persist_before_send(w, n, frame);
    if (to >= w->p.n)
        return;
    if (w->faults_on && w->part[n->cfg.replica][to])
        return;
    if (w->tamper != NULL) {
        uint8_t *copy = dup_bytes(frame, len);
        if (!w->tamper(w, n->cfg.replica, to, copy, len))
            send_faulty(w, 0, n->cfg.replica, to, copy, len);
        free(copy);
        return;
    }
    send_faulty(w, 0, n->cfg.replica, to, frame, len);
}

static void
hook_to_client(void *ctx, struct sim_node *n, struct vs_u128 client,
               const void *frame, uint32_t len)
{
    struct sim_world *w = ctx;
    for (unsigned i = 0; i < w->p.clients; i++)
        if (vs_u128_eq(w->c[i].id, client)) {
            send_faulty(w, 1, n->cfg.replica, i, frame, len);
            return;
        }
}

static uint8_t *
dup_bytes(const void *p, size_t len)
{
    uint8_t *b = vs_xmalloc(len ? len : 1);
    if (len)
        memcpy(b, p, len);
    return b;
}

static void oracle_advance(struct sim_world *w);

/* No earlier op of the same (client, request). Two re-executions are
 * tolerated behind named switches (sim-findings.md): F2, the client's
 * session was evicted in between and a reconnect registered a new one
 * (its watermark starts over: the client cannot tell); F3, the earlier
 * execution ran after its session had been evicted in the pipeline. */
static void
check_at_most_once(struct sim_world *w, const struct vs_hdr_prepare *p,
                   uint64_t op)
{
    int evicted_between = 0;
    for (uint64_t o = op - 1; o >= 1; o--) {
        const struct sim_hist *e = &w->hist[o];
        if (e->evicted_set && vs_u128_eq(e->evicted, p->client))
            evicted_between = 1;
        if (!e->set || e->request != p->request ||
            !vs_u128_eq(e->client, p->client) || e->operation == VS_OP_REGISTER)
            continue;
        if (e->sessionless && w->p.allow_sessionless) {
            w->m.sessionless++;
            return;
        }
        if (evicted_between && w->p.allow_lost_session) {
            w->m.lost_sessions++;
            return;
        }
        sim_world_failf(w,
                        "at-most-once: request %llu of a client committed "
                        "as op %llu and op %llu%s%s",
                        (unsigned long long)p->request, (unsigned long long)o,
                        (unsigned long long)op,
                        e->sessionless ? " (the first without a session)" : "",
                        evicted_between ? " (its session evicted between)"
                                        : "");
        return;
    }
}

static void
hook_committed(void *ctx, struct sim_node *n, const struct vs_hdr_prepare *p,
               const uint8_t *body, uint32_t body_len, const uint8_t *out,
               uint32_t out_len)
{
    struct sim_world *w = ctx;
    uint64_t op = p->op;
    w->m.commits++;
    if (op >= SIM_HIST_MAX) {
        sim_world_failf(w, "op %llu beyond the simulator's history bound",
                        (unsigned long long)op);
        return;
    }
    struct sim_hist *h = &w->hist[op];
    if (!h->set) {
        if (op > 1 && !w->hist[op - 1].set)
            sim_world_failf(w,
                            "history: replica %u committed op %llu before "
                            "any replica committed op %llu",
                            n->cfg.replica, (unsigned long long)op,
                            (unsigned long long)op - 1);
        h->set = 1;
        h->checksum = p->f.checksum;
        h->client = p->client;
        h->request = p->request;
        h->operation = p->operation;
        h->body = dup_bytes(body, body_len);
        h->body_len = body_len;
        h->out = dup_bytes(out, out_len);
        h->out_len = out_len;
        if (op > w->hist_max)
            w->hist_max = op;
        oracle_advance(w);
        /* at-most-once: no earlier op of the same (client, request),
         * unless the client's session was evicted in between (a new
         * session starts a new watermark: the client cannot tell) */
        if (!vs_u128_is_zero(p->client) && p->request > 0 &&
            p->operation != VS_OP_REGISTER)
            check_at_most_once(w, p, op);
        if (w->trace) {
            int ci = -1, ei = -1;
            for (unsigned k = 0; k < w->p.clients; k++) {
                if (vs_u128_eq(w->c[k].id, p->client))
                    ci = (int)k;
                if (h->evicted_set && vs_u128_eq(w->c[k].id, h->evicted))
                    ei = (int)k;
            }
            tracef(w,
                   "commit op %llu operation %u client %d request %llu "
                   "(replica %u)%s%d",
                   (unsigned long long)op, p->operation, ci,
                   (unsigned long long)p->request, n->cfg.replica,
                   ei >= 0 ? " evicts client " : "", ei);
        }
        return;
    }
    if (w->trace && op <= 3)
        tracef(w,
               "replica %u applies op %llu checksum %016llx (history %016llx)",
               n->cfg.replica, (unsigned long long)op,
               (unsigned long long)p->f.checksum.lo,
               (unsigned long long)h->checksum.lo);
    if (!vs_u128_eq(h->checksum, p->f.checksum)) {
        sim_world_failf(w,
                        "history: op %llu committed with two checksums "
                        "(replica %u differs)",
                        (unsigned long long)op, n->cfg.replica);
        return;
    }
    if (h->out_len != out_len || (out_len && memcmp(h->out, out, out_len) != 0))
        sim_world_failf(w,
                        "determinism: replica %u applied op %llu with "
                        "another result",
                        n->cfg.replica, (unsigned long long)op);
}

static void
hook_checkpointed(void *ctx, struct sim_node *n, uint64_t op,
                  struct vs_u128 sum)
{
    struct sim_world *w = ctx;
    w->m.checkpoints++;
    if (op >= SIM_HIST_MAX)
        return;
    struct sim_hist *h = &w->hist[op];
    tracef(w, "checkpoint op %llu (replica %u)", (unsigned long long)op,
           n->cfg.replica);
    if (!h->ckpt_set) {
        h->ckpt_set = 1;
        h->ckpt = sum;
    } else if (!vs_u128_eq(h->ckpt, sum)) {
        sim_world_failf(w,
                        "determinism: checkpoint of op %llu on replica %u "
                        "has another checksum",
                        (unsigned long long)op, n->cfg.replica);
    }
}

/* The oracle applies the history in op order as it becomes contiguous. */
static void
oracle_advance(struct sim_world *w)
{
    struct meta_result res;
    meta_result_init(&res);
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    while (w->oracle_op + 1 < SIM_HIST_MAX && w->hist[w->oracle_op + 1].set) {
        struct sim_hist *h = &w->hist[++w->oracle_op];
        struct meta_op_ctx ctx = {
            .op = w->oracle_op,
            .timestamp = 0,
            .user_id = 0,
            .operation = h->operation,
            .client = h->client,
            .request = h->request,
        };
        /* the prepare's own timestamp and checksum are in its reply;
         * only the result body is compared */
        meta_result_reset(&res);
        if (!vs_u128_is_zero(h->client) && h->operation != VS_OP_REGISTER &&
            meta_session_by_client(w->oracle, h->client) == NULL)
            h->sessionless = 1; /* its session was evicted in the pipeline */
        meta_apply(w->oracle, &ctx, h->body, h->body_len, &res);
        uint32_t model_code = 0;
        char model_op[96];
        if (!h->sessionless && w->model != NULL &&
            sim_model_check(w->model, h->operation, h->body, h->body_len,
                            res.code, &model_code, model_op,
                            sizeof(model_op)) != 0)
            sim_world_failf(w,
                            "model: op %llu, %s, answered %u by the state "
                            "machine, %u by the reference model",
                            (unsigned long long)w->oracle_op, model_op,
                            res.code, model_code);
        if (w->model != NULL)
            w->m.modelled = sim_model_checked(w->model);
        if (h->operation == VS_OP_REGISTER &&
            !vs_u128_is_zero(res.evicted_client)) {
            h->evicted_set = 1;
            h->evicted = res.evicted_client;
        }
        vs_wbuf_reset(&b);
        if (h->operation != VS_OP_LOGOUT && !vs_u128_is_zero(h->client)) {
            meta_reply_body_write(res.code, res.payload.data, res.payload.len,
                                  &b);
            if (b.len != h->out_len || memcmp(b.data, h->out, b.len) != 0) {
                /* timestamps are part of some payloads: compare codes */
                uint32_t want = b.len >= 4 ? vs_load_u32(b.data) : 0;
                uint32_t got = h->out_len >= 4 ? vs_load_u32(h->out) : 0;
                if (want != got)
                    sim_world_failf(w,
                                    "sequential spec: op %llu answered %s, "
                                    "the in-order oracle says %s",
                                    (unsigned long long)w->oracle_op,
                                    got ? "a refusal" : "success",
                                    want ? "a refusal" : "success");
            }
        }
    }
    vs_wbuf_fini(&b);
    meta_result_fini(&res);
}

/* --------------------------------------------------------- clients */

static void
client_set_request(struct sim_world *w, struct sim_client *c)
{
    struct meta_op op;
    char name[32];
    unsigned k = (unsigned)rnd(w, 6);
    int len =
        snprintf(name, sizeof(name), "n%llu", (unsigned long long)rnd(w, 12));
    switch (k) {
    case 0:
    case 1:
        meta_op_init(&op, VS_OP_CREATE_STREAM);
        meta_op_set_name(&op, name, (size_t)len);
        break;
    case 2:
        meta_op_init(&op, VS_OP_DELETE_STREAM);
        meta_ident_id(&op.stream, (uint32_t)rnd(w, 6));
        break;
    case 3:
        meta_op_init(&op, VS_OP_CREATE_TOPIC);
        meta_ident_id(&op.stream, (uint32_t)rnd(w, 6));
        meta_op_set_name(&op, name, (size_t)len);
        op.count = 1 + (uint32_t)rnd(w, 2);
        op.opts.compression = 1;
        break;
    case 4: {
        char u[32];
        int ul =
            snprintf(u, sizeof(u), "user%llu", (unsigned long long)rnd(w, 8));
        meta_op_init(&op, VS_OP_CREATE_USER);
        meta_op_set_name(&op, u, (size_t)ul);
        op.has_status = 1;
        op.status = 1;
        meta_op_set_secret(&op, "$argon2id$sim", 13);
        break;
    }
    default:
        meta_op_init(&op, VS_OP_DELETE_USER);
        meta_ident_id(&op.user, 1 + (uint32_t)rnd(w, 7));
        break;
    }
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    VS_ASSERT(meta_op_encode(&op, &b) == 0);
    free(c->body);
    c->body = dup_bytes(b.data, b.len);
    c->body_len = (uint32_t)b.len;
    c->operation = op.operation;
    vs_wbuf_fini(&b);
}

static void
client_set_register(struct sim_client *c)
{
    struct meta_op op;
    meta_op_init(&op, VS_OP_REGISTER);
    op.user_id = 0;
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    VS_ASSERT(meta_op_encode(&op, &b) == 0);
    free(c->body);
    c->body = dup_bytes(b.data, b.len);
    c->body_len = (uint32_t)b.len;
    c->operation = VS_OP_REGISTER;
    vs_wbuf_fini(&b);
}

static void
client_send(struct sim_world *w, unsigned i)
{
    struct sim_client *c = &w->c[i];
    uint8_t frame[VS_HEADER_SIZE + 512];
    VS_ASSERT(c->body_len <= 512);
    struct vs_hdr_request *r = (struct vs_hdr_request *)frame;
    memset(r, 0, sizeof(*r));
    r->f.cluster = w->cluster;
    r->f.size = VS_HEADER_SIZE + c->body_len;
    r->f.command = VS_CMD_REQUEST;
    r->client = c->id;
    r->request = c->operation == VS_OP_REGISTER ? 0 : c->request;
    r->operation = c->operation;
    r->session = c->operation == VS_OP_REGISTER ? 0 : c->session;
    r->user_id = 0; /* the data shard stamps the session's user: root */
    r->request_checksum = c->checksum;
    memcpy(frame + VS_HEADER_SIZE, c->body, c->body_len);
    if (c->first_sent == 0)
        c->first_sent = w->now ? w->now : 1;
    c->last_sent = w->now;
    c->retry_at = w->now + CLIENT_TIMEOUT + rnd(w, CLIENT_TIMEOUT);
    send_faulty(w, 0, SIM_N_MAX + i, c->target, frame, r->f.size);
}

static void
client_begin(struct sim_world *w, unsigned i, int reg)
{
    struct sim_client *c = &w->c[i];
    if (reg) {
        client_set_register(c);
        c->registering = 1;
    } else {
        c->request++;
        client_set_request(w, c);
    }
    c->checksum = vs_checksum(c->body, c->body_len);
    c->busy = 1;
    c->first_sent = 0;
    c->floor_op = w->acked_max;
    free(c->reply);
    c->reply = NULL;
    c->reply_len = 0;
    client_send(w, i);
}

/* A reply frame of a committed op reached client i. */
static void
client_accept(struct sim_world *w, unsigned i, const uint8_t *f, uint32_t len)
{
    struct sim_client *c = &w->c[i];
    const struct vs_hdr_reply *r = (const void *)f;
    if (r->op >= SIM_HIST_MAX) {
        sim_world_failf(w, "a reply names op %llu beyond the history",
                        (unsigned long long)r->op);
        return;
    }
    struct sim_hist *h = &w->hist[r->op];
    if (!h->set || !vs_u128_eq(h->client, c->id) ||
        h->operation != r->operation ||
        (r->operation != VS_OP_REGISTER && h->request != r->request)) {
        sim_world_failf(w,
                        "durability: client %u got a reply for op %llu that "
                        "the committed history does not hold as its request",
                        i, (unsigned long long)r->op);
        return;
    }
    if (r->op <= c->floor_op && c->floor_op > 0)
        sim_world_failf(w,
                        "sequential spec: op %llu answers a request first "
                        "sent after op %llu was acknowledged",
                        (unsigned long long)r->op,
                        (unsigned long long)c->floor_op);
    uint32_t blen = len - VS_HEADER_SIZE;
    if (blen != h->out_len || memcmp(f + VS_HEADER_SIZE, h->out, blen) != 0)
        sim_world_failf(w,
                        "sequential spec: the reply body of op %llu differs "
                        "from the committed result",
                        (unsigned long long)r->op);
    h->acked = 1;
    w->m.acked++;
    if (r->op > w->acked_max)
        w->acked_max = r->op;
    if (c->reply == NULL && !c->registering) {
        c->reply = dup_bytes(f, len);
        c->reply_len = len;
        c->reply_request = c->request;
    }
    c->busy = 0;
    c->done++;
    if (c->registering) {
        c->registering = 0;
        if (blen >= 16 && vs_load_u32(f + VS_HEADER_SIZE) == 0)
            c->session = vs_load_u64(f + VS_HEADER_SIZE + 8);
        else
            c->session = 0;
        tracef(w, "client %u registered: session %llu", i,
               (unsigned long long)c->session);
        if (c->held && c->session != 0) {
            /* the request in flight before the reconnect, unchanged */
            free(c->body);
            c->body = c->held_body;
            c->body_len = c->held_len;
            c->operation = c->held_op;
            c->checksum = c->held_checksum;
            c->held_body = NULL;
            c->held = 0;
            c->busy = 1;
            c->first_sent = c->held_first;
            c->floor_op = c->held_floor;
            free(c->reply);
            c->reply = NULL;
            client_send(w, i);
        }
    }
}

static int
reply_same(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
    if (alen != blen)
        return 0;
    /* view (52..55) and replica (61) say who answered, not what */
    for (uint32_t k = 0; k < alen; k++) {
        if ((k >= 52 && k < 56) || k == 61)
            continue;
        if (a[k] != b[k])
            return 0;
    }
    return 1;
}

static void
client_receive(struct sim_world *w, unsigned i, unsigned from, const uint8_t *f,
               uint32_t len)
{
    struct sim_client *c = &w->c[i];
    const struct vs_header *h = (const void *)f;
    if (h->f.command == VS_CMD_EVICTION) {
        const struct vs_hdr_eviction *e = (const void *)f;
        tracef(w, "client %u evicted (reason %u) by replica %u", i, e->reason,
               from);
        w->m.evictions++;
        c->evicted++;
        c->session = 0;
        free(c->held_body);
        c->held_body = NULL;
        c->held = 0;
        /* the outcome of the request in flight is unknown: the client
         * gives it up and registers again */
        client_begin(w, i, 1);
        return;
    }
    if (h->f.command != VS_CMD_REPLY || len < VS_HEADER_SIZE)
        return;
    const struct vs_hdr_reply *r = (const void *)f;
    if (!c->busy) {
        /* a late duplicate of an answered request: same bytes (a reply
         * naming another op is a second execution, which the history's
         * at-most-once check judges) */
        if (c->reply && r->operation != VS_OP_REGISTER &&
            r->request == c->reply_request && r->status == 0 &&
            r->op == ((const struct vs_hdr_reply *)c->reply)->op &&
            !reply_same(c->reply, c->reply_len, f, len))
            sim_world_failf(w,
                            "at-most-once: client %u got two different "
                            "replies to request %llu",
                            i, (unsigned long long)r->request);
        return;
    }
    /* Register bodies are all alike: a Register reply is this one's only
     * if its op committed after the request was first sent */
    int mine = c->registering
                   ? (r->operation == VS_OP_REGISTER &&
                      (r->status != 0 || r->op > c->floor_op))
                   : (r->request == c->request && r->operation == c->operation);
    if (!mine)
        return;
    if (r->status != 0) {
        /* refused before consensus: try another replica soon */
        if (r->status == VS_E_TRANSIENT_NOT_COMMITTED) {
            unsigned p = vsr_primary_index(r->f.view, w->p.n);
            c->target = p != from ? p : (c->target + 1) % w->p.n;
        }
        c->retry_at = w->now + 5 + rnd(w, 20);
        return;
    }
    c->target = vsr_primary_index(r->f.view, w->p.n);
    client_accept(w, i, f, len);
}

static void
clients_tick(struct sim_world *w)
{
    if (!w->genesis_done)
        return;
    for (unsigned i = 0; i < w->p.clients; i++) {
        struct sim_client *c = &w->c[i];
        if (!c->busy) {
            if (c->session == 0)
                client_begin(w, i, 1);
            else if (w->faults_on && chance(w, 1, 4))
                client_begin(w, i, 0); /* none once the faults stop */
            continue;
        }
        if (w->faults_on && !c->registering && c->session != 0 && !c->held &&
            chance(w, 1, 2000)) {
            /* reconnect: register again with the same id (a new epoch),
             * then resend the same request number and body */
            w->m.reregisters++;
            c->held = 1;
            c->held_op = c->operation;
            c->held_body = c->body;
            c->held_len = c->body_len;
            c->held_checksum = c->checksum;
            c->held_first = c->first_sent;
            c->held_floor = c->floor_op;
            c->body = NULL;
            client_begin(w, i, 1);
            continue;
        }
        if (w->now >= c->retry_at) {
            w->m.retries++;
            if (w->now - c->last_sent >= CLIENT_TIMEOUT)
                c->target = (c->target + 1) % w->p.n;
            client_send(w, i);
        }
    }
}

/* ---------------------------------------------------------- faults */

static unsigned
primary_of(struct sim_world *w)
{
    uint32_t view = 0;
    for (unsigned i = 0; i < w->p.n; i++)
        if (w->node[i].up && vsr_view(w->node[i].eng) > view)
            view = vsr_view(w->node[i].eng);
    return vsr_primary_index(view, w->p.n);
}

static unsigned
up_count(struct sim_world *w)
{
    unsigned k = 0;
    for (unsigned i = 0; i < w->p.n; i++)
        k += w->node[i].up;
    return k;
}

void
sim_world_crash(struct sim_world *w, unsigned i)
{
    struct sim_node *n = &w->node[i];
    int was_up = n->up;
    sim_node_stop(n);
    if (sim_disk_crash(&w->disk[i]) != 0)
        sim_world_failf(w, "the simulated disk of replica %u failed", i);
    if (was_up) {
        w->m.crashes++;
        w->down_since[i] = w->now;
    }
    tracef(w, "crash replica %u (torn %llu dropped %llu)", i,
           (unsigned long long)w->disk[i].torn,
           (unsigned long long)w->disk[i].dropped);
}

int
sim_world_recover(struct sim_world *w, unsigned i)
{
    /* a lost disk: the superblock starts over (the monotonic floor too) */
    memset(&w->sb_floor[i], 0, sizeof(w->sb_floor[i]));
    w->nrot[i] = 0;
    return sim_node_recover(&w->node[i]);
}

int
sim_world_restart(struct sim_world *w, unsigned i)
{
    struct sim_node *n = &w->node[i];
    if (n->up)
        return 0;
    uint64_t torn0 = n->m_torn_cut, dam0 = n->m_damaged_cut;
    uint64_t group0 = n->m_group_tails;
    uint64_t markc0 = n->m_mark_cuts;
    uint64_t drop0 = n->m_wal_dropped;
    int rc = sim_node_boot(n, 0);
    if (rc == 1 && w->p.n == 1 && !w->p.no_operator_cut &&
        strstr(n->refuse, "damaged") != NULL) {
        /* the operator's --cut-damaged-tail: the checkers decide whether
         * anything acknowledged was lost by it */
        tracef(w, "replica %u refused (%s): operator cuts the damaged tail", i,
               n->refuse);
        rc = sim_node_boot(n, 1);
    }
    if (rc != 0) {
        w->m.refusals++;
        tracef(w, "replica %u refuses to boot: %s", i,
               rc == 1 ? n->refuse : strerror(-rc));
        if (!n->up && n->fatal[0] == '\0')
            sim_disk_crash(&w->disk[i]);
        return rc;
    }
    w->m.restarts++;
    w->nrot[i] = 0; /* booted: its rot is cut, dropped or rewritten */
    if (n->m_wal_dropped != drop0)
        tracef(w,
               "replica %u dropped damaged WAL ops up to %llu (covered by "
               "its snapshot of op %llu)",
               i, (unsigned long long)n->wal_dropped_last,
               (unsigned long long)n->snap_op);
    w->m.torn_cut += n->m_torn_cut - torn0;
    w->m.damaged_cut += n->m_damaged_cut - dam0;
    w->m.group_tails += n->m_group_tails - group0;
    w->m.mark_cuts += n->m_mark_cuts - markc0;
    /* the superblock never goes backwards at an open */
    const struct vs_vsr_persist *fl = &w->sb_floor[i];
    if (n->sb_durable.view < fl->view ||
        n->sb_durable.log_view < fl->log_view ||
        n->sb_durable.checkpoint_op < fl->checkpoint_op)
        sim_world_failf(w,
                        "superblock regressed on replica %u: view %u/%u "
                        "log_view %u/%u checkpoint %llu/%llu (read/written)",
                        i, n->sb_durable.view, fl->view, n->sb_durable.log_view,
                        fl->log_view,
                        (unsigned long long)n->sb_durable.checkpoint_op,
                        (unsigned long long)fl->checkpoint_op);
    tracef(w, "restart replica %u: view %u op %llu commit %llu", i,
           vsr_view(n->eng), (unsigned long long)vsr_op(n->eng),
           (unsigned long long)vsr_commit_min(n->eng));
    return 0;
}

/* Remembers a fault of replica i's journal (sim_world_unrot); a log
 * that is full keeps the replica's rot beyond repair (never unrotted). */
static void
rot_record(struct sim_world *w, unsigned i, uint64_t at, uint8_t mask)
{
    if (w->nrot[i] < SIM_ROT_MAX)
        w->rotlog[i][w->nrot[i]] = (struct sim_rot){at, mask};
    w->nrot[i]++;
}

unsigned
sim_world_unrot(struct sim_world *w, unsigned i)
{
    if (w->nrot[i] > SIM_ROT_MAX)
        return 0;
    unsigned done = 0;
    for (unsigned k = w->nrot[i]; k-- > 0;) {
        const struct sim_rot *r = &w->rotlog[i][k];
        done += r->mask ? sim_disk_flip(&w->disk[i], VS_JOURNAL_FILE, r->at,
                                        r->mask) == 1
                        : sim_disk_remap(&w->disk[i], VS_JOURNAL_FILE, r->at);
    }
    w->nrot[i] = 0;
    return done;
}

/* Offset and length of WAL entry `op` in the durable journal image. */
static int
wal_locate(const uint8_t *b, size_t len, uint64_t op, size_t *off, size_t *elen)
{
    size_t pos = 0;
    while (pos + VS_HEADER_SIZE <= len) {
        struct vs_hdr_prepare h; /* entries are not aligned in the file */
        memcpy(&h, b + pos, sizeof(h));
        if (h.f.size < VS_HEADER_SIZE || pos + h.f.size > len)
            return 0;
        if (h.op == op) {
            *off = pos;
            *elen = h.f.size;
            return 1;
        }
        pos += h.f.size;
    }
    return 0;
}

int
sim_world_rot_op(struct sim_world *w, unsigned i, uint64_t op, int in_header)
{
    size_t len;
    uint8_t *b = sim_disk_read(&w->disk[i], VS_JOURNAL_FILE, &len);
    if (b == NULL)
        return 0;
    size_t off, elen;
    int found = wal_locate(b, len, op, &off, &elen);
    free(b);
    if (!found)
        return 0;
    size_t at = in_header || elen == VS_HEADER_SIZE
                    ? off + 64 + rnd(w, VS_HEADER_SIZE - 64)
                    : off + VS_HEADER_SIZE + rnd(w, elen - VS_HEADER_SIZE);
    uint8_t mask = (uint8_t)(1u << rnd(w, 8));
    if (w->f.latent && splitmix(&w->latent_rng) % 2 == 0) {
        /* a latent sector error instead: the sector holding `at` fails
         * every read until rewritten, judged as damage like the flip */
        if (sim_disk_latent(&w->disk[i], VS_JOURNAL_FILE, at) != 1)
            return 0;
        rot_record(w, i, at, 0);
        w->m.latent++;
        tracef(w, "latent read error in op %llu of replica %u (%s)",
               (unsigned long long)op, i, in_header ? "header" : "body");
        return 1;
    }
    int rc = sim_disk_flip(&w->disk[i], VS_JOURNAL_FILE, at, mask);
    if (rc == 1)
        rot_record(w, i, at, mask);
    if (rc == 1)
        tracef(w, "bit rot in op %llu of replica %u (%s)",
               (unsigned long long)op, i, in_header ? "header" : "body");
    return rc == 1;
}

/* One superblock slot rots while replica i is down: the boot must
 * refuse (the lost slot may have held the newer record), never fall back
 * to the older one. Then the slot is restored, as an operator restoring
 * the file would, and the replica boots normally. */
static void
sb_corrupt_probe(struct sim_world *w, unsigned i)
{
    const char *slot = chance(w, 1, 2) ? VS_SUPERBLOCK_A : VS_SUPERBLOCK_B;
    uint64_t off = rnd(w, 64);
    uint8_t mask = (uint8_t)(1u << rnd(w, 8));
    if (sim_disk_flip(&w->disk[i], slot, off, mask) != 1)
        return;
    w->m.sb_corrupt++;
    tracef(w, "superblock %s of replica %u flipped", slot, i);
    int rc = sim_node_boot(&w->node[i], 0);
    if (rc == 0) {
        sim_world_failf(w,
                        "superblock: replica %u booted beside a corrupt "
                        "slot %s",
                        i, slot);
        return;
    }
    if (rc == 1 && strstr(w->node[i].refuse, "superblock") == NULL)
        sim_world_failf(w,
                        "superblock: replica %u refused for another reason: "
                        "%s",
                        i, w->node[i].refuse);
    (void)sim_disk_flip(&w->disk[i], slot, off, mask);
}

/* 1 if a replica is rebuilding from a lost disk (one at a time). */
static int
any_rebuilt(const struct sim_world *w)
{
    for (unsigned i = 0; i < w->p.n; i++)
        if (w->node[i].rebuilt)
            return 1;
    return 0;
}

/* 1 if every replica but i is up, Normal, with no faulty op: a lost
 * disk is then the only fault (the model allows one at a time, and only
 * where f >= 1: three replicas or more). */
static int
others_whole(const struct sim_world *w, unsigned i)
{
    if (w->p.n < 3)
        return 0;
    for (unsigned k = 0; k < w->p.n; k++) {
        if (k == i)
            continue;
        if (!w->node[k].up || vsr_status(w->node[k].eng) != VSR_STATUS_NORMAL)
            return 0;
        struct vs_vsr_info info;
        vsr_info(w->node[k].eng, &info);
        if (info.faulty_op != 0)
            return 0;
    }
    return 1;
}

static void
faults_tick(struct sim_world *w)
{
    unsigned n = w->p.n;
    /* partitions come and go */
    if (w->f.partitions && n > 1) {
        if (!w->partitioned && chance(w, w->p.part_on_pm, 10000)) {
            unsigned kind = (unsigned)rnd(w, 3);
            unsigned a = kind == 2 ? primary_of(w) : (unsigned)rnd(w, n);
            for (unsigned j = 0; j < n; j++) {
                if (j == a)
                    continue;
                if (kind != 1 || chance(w, 1, 2))
                    w->part[a][j] = 1;
                if (kind != 1 || !w->part[a][j])
                    w->part[j][a] = 1;
            }
            w->partitioned = 1;
            w->m.partitions++;
            tracef(w, "partition around replica %u (kind %u)", a, kind);
        } else if (w->partitioned && chance(w, w->p.part_off_pm, 10000)) {
            memset(w->part, 0, sizeof(w->part));
            w->partitioned = 0;
            tracef(w, "partition healed");
        }
    }
    /* crashes: at most a minority down for n > 1 */
    unsigned f = n > 1 ? (n - 1) / 2 : 1;
    for (unsigned i = 0; i < n; i++) {
        struct sim_node *nd = &w->node[i];
        int primary = i == primary_of(w);
        /* a rebuilding replica (lost disk) cannot vote: it counts as
         * down */
        if (nd->up && n - up_count(w) + (unsigned)any_rebuilt(w) < f &&
            ((primary && w->f.crash_primary) ||
             (!primary && w->f.crash_backup)) &&
            chance(w, w->p.crash_pm, 100000)) {
            if (w->f.torn && chance(w, 1, 2)) {
                sim_disk_arm_crash(&w->disk[i], 1 + rnd(w, 12));
                tracef(w, "replica %u: crash armed inside storage", i);
            } else {
                sim_world_crash(w, i);
            }
        }
        if (!nd->up && w->f.restart && w->now > w->down_since[i] + 20 &&
            chance(w, w->p.restart_pm, 10000)) {
            if (w->f.bitrot && n > 1 && chance(w, 1, 4) && !any_rebuilt(w)) {
                /* bit rot of one op on this replica only: the other
                 * replicas of that op are intact (f >= 1 here) */
                uint64_t op = 1 + rnd(w, w->hist_max ? w->hist_max : 1);
                /* an interior rot refuses the boot (DESIGN §4): at most
                 * f replicas ever carry rot, so a quorum stays bootable */
                unsigned mask = op < SIM_HIST_MAX ? w->rot[op] : 0xff;
                unsigned rotted = w->rot_replicas | (1u << i);
                if ((unsigned)__builtin_popcount(mask) < (n - 1) / 2 &&
                    (unsigned)__builtin_popcount(rotted) <= (n - 1) / 2 &&
                    !(mask & (1u << i)) &&
                    sim_world_rot_op(w, i, op, (int)rnd(w, 2))) {
                    w->rot[op] |= (uint8_t)(1u << i);
                    w->rot_replicas |= 1u << i;
                    w->m.bitrot++;
                }
            }
            if (w->f.sb_corrupt && chance(w, 1, 8))
                sb_corrupt_probe(w, i);
            /* a lost disk counts against f like rot: never beside a
             * replica that carries rot (it may refuse to boot) */
            if (w->f.wipe && n > 1 && chance(w, 1, 10) && !any_rebuilt(w) &&
                (w->rot_replicas & ~(1u << i)) == 0 && others_whole(w, i)) {
                tracef(w, "replica %u lost its disk: recover", i);
                w->m.wipes++;
                if (sim_world_recover(w, i) == 0)
                    w->m.restarts++;
            } else {
                (void)sim_world_restart(w, i);
            }
            w->down_since[i] = w->now;
        }
    }
    if (w->f.cluster_restart && n > 0 && !any_rebuilt(w) &&
        chance(w, 1, 20000)) {
        w->m.cluster_restarts++;
        tracef(w, "whole-cluster crash");
        for (unsigned i = 0; i < n; i++)
            sim_world_crash(w, i);
    }
}

/* -------------------------------------------------------------- step */

static int
msg_cmp(const void *a, const void *b)
{
    const struct sim_msg *x = a, *y = b;
    if (x->due != y->due)
        return x->due < y->due ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void
deliver(struct sim_world *w)
{
    if (w->nnet == 0)
        return;
    qsort(w->net, w->nnet, sizeof(*w->net), msg_cmp);
    size_t k = 0;
    while (k < w->nnet && w->net[k].due <= w->now)
        k++;
    if (k == 0)
        return;
    struct sim_msg *due = vs_xmalloc(k * sizeof(*due));
    memcpy(due, w->net, k * sizeof(*due));
    memmove(w->net, w->net + k, (w->nnet - k) * sizeof(*w->net));
    w->nnet -= k;
    for (size_t i = 0; i < k; i++) {
        struct sim_msg *m = &due[i];
        if (m->to_client) {
            client_receive(w, m->to, m->from, m->frame, m->len);
        } else if (m->from >= SIM_N_MAX) {
            const struct vs_hdr_request *r = (const void *)m->frame;
            sim_node_request(&w->node[m->to], r, m->frame + VS_HEADER_SIZE,
                             m->len - VS_HEADER_SIZE);
        } else {
            sim_node_message(&w->node[m->to], m->frame, m->len);
        }
        free(m->frame);
    }
    free(due);
}

static void
reap_fatal(struct sim_world *w)
{
    for (unsigned i = 0; i < w->p.n; i++) {
        struct sim_node *n = &w->node[i];
        if (!n->up && n->fatal[0] != '\0') {
            if (!w->disk[i].crashed)
                sim_world_failf(w, "replica %u stopped: %s", i, n->fatal);
            tracef(w, "replica %u stopped: %s", i, n->fatal);
            w->m.crashes_in_io++;
            n->fatal[0] = '\0';
            w->m.crashes++;
            w->down_since[i] = w->now;
            sim_disk_crash(&w->disk[i]);
        }
        if (n->up) {
            struct vs_vsr_persist *fl = &w->sb_floor[i];
            if (n->sb_durable.view > fl->view)
                fl->view = n->sb_durable.view;
            if (n->sb_durable.log_view > fl->log_view)
                fl->log_view = n->sb_durable.log_view;
            if (n->sb_durable.checkpoint_op > fl->checkpoint_op)
                fl->checkpoint_op = n->sb_durable.checkpoint_op;
        }
    }
}

static void
genesis_tick(struct sim_world *w)
{
    if (w->genesis_done)
        return;
    if (w->hist[1].set) {
        w->genesis_done = 1;
        return;
    }
    if (w->now % 50 != 1)
        return;
    unsigned p = primary_of(w);
    if (!w->node[p].up)
        return;
    struct meta_op op;
    meta_op_init(&op, VS_OP_GENESIS);
    meta_op_set_name(&op, "iggy", 4);
    meta_op_set_secret(&op, "$argon2id$sim", 13);
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    VS_ASSERT(meta_op_encode(&op, &b) == 0);
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.cluster = w->cluster;
    r.f.size = (uint32_t)(VS_HEADER_SIZE + b.len);
    r.f.command = VS_CMD_REQUEST;
    r.operation = VS_OP_GENESIS;
    sim_node_request(&w->node[p], &r, b.data, (uint32_t)b.len);
    vs_wbuf_fini(&b);
}

void
sim_world_step(struct sim_world *w)
{
    w->now++;
    for (unsigned i = 0; i < w->p.n; i++)
        w->node[i].now = w->now;
    deliver(w);
    for (unsigned i = 0; i < w->p.n; i++)
        sim_node_tick(&w->node[i]);
    reap_fatal(w);
    genesis_tick(w);
    clients_tick(w);
    if (w->faults_on)
        faults_tick(w);
    reap_fatal(w);
    sim_parts_step(w);
}

/* ---------------------------------------------------------- lifecycle */

int
sim_world_init(struct sim_world *w, uint64_t seed, const struct sim_params *p,
               const struct sim_faults *f, int trace)
{
    memset(w, 0, sizeof(*w));
    w->p = *p;
    w->f = *f;
    w->seed = seed;
    w->trace = trace;
    uint64_t x = seed ^ 0x5eed5eed5eedull;
    for (int i = 0; i < 4; i++)
        w->rng[i] = splitmix(&x);
    w->latent_rng = seed ^ 0x1a7e4715ec7011ull;
    w->cluster.lo = splitmix(&x) | 1;
    w->cluster.hi = splitmix(&x);
    w->hist = vs_xcalloc(SIM_HIST_MAX, sizeof(*w->hist));
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(w->root, sizeof(w->root), "%s/vsr-sim.XXXXXX", tmp);
    if (mkdtemp(w->root) == NULL)
        return -errno;
    w->hooks.ctx = w;
    w->hooks.send = hook_send;
    w->hooks.to_client = hook_to_client;
    w->hooks.committed = hook_committed;
    w->hooks.checkpointed = hook_checkpointed;
    struct meta_caps caps;
    memset(&caps, 0, sizeof(caps));
    caps.streams = 6;
    caps.topics = 12;
    caps.partitions = 32;
    caps.groups = 4;
    caps.members = 8;
    caps.users = 8;
    caps.pats = 4;
    caps.stream_grants = 8;
    caps.topic_grants = 8;
    caps.assignments = 16;
    caps.session_slots = 16;
    caps.clients = 4;
    w->oracle = vs_xcalloc(1, meta_state_size(&caps));
    VS_ASSERT(meta_state_init(w->oracle, &caps) == 0);
    w->model = sim_model_create(&caps);
    VS_ASSERT(w->model != NULL);
    for (unsigned i = 0; i < p->n; i++) {
        char dd[400], md[512];
        snprintf(dd, sizeof(dd), "%s/r%u", w->root, i);
        snprintf(md, sizeof(md), "%s/%s", dd, VS_METADATA_DIR);
        if (mkdir(dd, 0700) != 0 || mkdir(md, 0700) != 0)
            return -errno;
        int rc = sim_disk_init(&w->disk[i], md, splitmix(&x), p->tear_pm);
        if (rc != 0)
            return rc;
        struct sim_node_config nc = {
            .cluster = w->cluster,
            .replica = i,
            .replica_count = p->n,
            .wal_slots = p->wal_slots,
            .pipeline = 4,
            .ckpt_every = p->ckpt_every,
            .disk_delay = p->disk_delay,
            .caps = caps,
            .seed = splitmix(&x),
            .own_reply_bytes = p->own_reply_bytes,
            .group_commit = p->group_commit,
            .hooks = &w->hooks,
        };
        if (p->torn_lost == 1 && (p->torn_mask >> i & 1u)) {
            nc.lose_lo = p->torn_lo;
            nc.lose_hi = p->torn_hi;
        }
        w->disk[i].torn_as_synced = (int)(p->torn_synced_mask >> i & 1u);
        sim_node_init(&w->node[i], &nc, &w->disk[i], dd);
        if (p->n > 1 && (rc = sim_node_format(&w->node[i])) != 0)
            return rc;
        if ((rc = sim_node_boot(&w->node[i], 0)) != 0) {
            char m[600];
            sio_fatal_msg(&w->disk[i].io, m, sizeof(m));
            snprintf(w->failure, sizeof(w->failure),
                     "replica %u does not boot: %s %.200s %.200s", i,
                     rc < 0 ? sio_strerror(rc) : "refused", w->node[i].refuse,
                     m);
            return rc < 0 ? rc : -EINVAL;
        }
    }
    for (unsigned i = 0; i < p->clients && i < SIM_CLIENTS_MAX; i++) {
        w->c[i].id.lo = splitmix(&x) | 1;
        w->c[i].id.hi = splitmix(&x);
        w->c[i].target = (unsigned)(splitmix(&x) % p->n);
    }
    return 0;
}

static void
rm_tree(const char *root, unsigned n)
{
    char path[700];
    static const char *names[] = {
        VS_SUPERBLOCK_A,        VS_SUPERBLOCK_B,        VS_JOURNAL_FILE,
        VS_SNAPSHOT_FILE,       VS_SUPERBLOCK_A ".tmp", VS_SUPERBLOCK_B ".tmp",
        VS_JOURNAL_FILE ".tmp", VS_SNAPSHOT_FILE ".tmp"};
    for (unsigned i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
            snprintf(path, sizeof(path), "%s/r%u/%s/%s", root, i,
                     VS_METADATA_DIR, names[k]);
            unlink(path);
        }
        snprintf(path, sizeof(path), "%s/r%u/%s", root, i, VS_METADATA_DIR);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/r%u", root, i);
        rmdir(path);
    }
    rmdir(root);
}

void
sim_world_fini(struct sim_world *w)
{
    sim_parts_detach(w);
    for (unsigned i = 0; i < w->p.n; i++) {
        sim_node_fini(&w->node[i]);
        sim_disk_fini(&w->disk[i]);
    }
    if (w->root[0])
        rm_tree(w->root, w->p.n);
    for (size_t i = 0; i < w->nnet; i++)
        free(w->net[i].frame);
    free(w->net);
    for (unsigned i = 0; i < SIM_CLIENTS_MAX; i++) {
        free(w->c[i].body);
        free(w->c[i].held_body);
        free(w->c[i].reply);
    }
    if (w->hist)
        for (size_t i = 0; i < SIM_HIST_MAX; i++) {
            free(w->hist[i].body);
            free(w->hist[i].out);
        }
    free(w->hist);
    free(w->oracle);
    sim_model_destroy(w->model);
}

/* 1 if a live replica needs ops no peer's journal holds any more (they
 * were drained by checkpoints): only state transfer can help it. */
static int
needs_transfer(const struct sim_world *w)
{
    for (unsigned i = 0; i < w->p.n; i++) {
        const struct sim_node *n = &w->node[i];
        if (!n->up)
            continue;
        struct vs_vsr_info info;
        vsr_info(n->eng, &info);
        if (info.state_transfer)
            return 1;
        uint64_t need = vsr_commit_min(n->eng) + 1;
        int behind = 0, held = 0;
        for (unsigned k = 0; k < w->p.n; k++) {
            const struct sim_node *o = &w->node[k];
            if (k == i || !o->up)
                continue;
            if (vsr_commit_min(o->eng) >= need)
                behind = 1;
            if (!wal_empty(&o->journal) && wal_first_op(&o->journal) <= need &&
                wal_last_op(&o->journal) >= need)
                held = 1;
        }
        if (behind && !held)
            return 1;
    }
    return 0;
}

/* 1 if a settled, caught-up primary is up: it can serve a transfer. */
static int
serving_primary(const struct sim_world *w)
{
    for (unsigned i = 0; i < w->p.n; i++) {
        const struct sim_node *n = &w->node[i];
        if (n->up && vsr_is_settled_primary(n->eng) &&
            vsr_commit_min(n->eng) == vsr_commit_max(n->eng))
            return 1;
    }
    return 0;
}

/* 1 if the primary of the view (Normal) needs ops that no peer's
 * journal holds any more while a peer committed them. */
static int
primary_needs_transfer(const struct sim_world *w)
{
    for (unsigned i = 0; i < w->p.n; i++) {
        const struct sim_node *n = &w->node[i];
        if (!n->up || vsr_status(n->eng) != VSR_STATUS_NORMAL ||
            !vsr_is_primary(n->eng))
            continue;
        uint64_t need = vsr_commit_min(n->eng) + 1;
        int behind = 0, held = 0;
        for (unsigned k = 0; k < w->p.n; k++) {
            const struct sim_node *o = &w->node[k];
            if (k == i || !o->up)
                continue;
            if (vsr_commit_min(o->eng) >= need)
                behind = 1;
            if (!wal_empty(&o->journal) && wal_first_op(&o->journal) <= need &&
                wal_last_op(&o->journal) >= need)
                held = 1;
        }
        if (behind && !held)
            return 1;
    }
    return 0;
}

/* The stall scan: the highest op f that an up replica (*who) names
 * above its journal (a header it knows but holds no body for, its
 * faulty range, or its never-nacked range: ops it may have acknowledged
 * before a damaged tail was cut) while no up replica holds f in a
 * log_view that could be canonical (or applied it), and the up replicas
 * that could nack f (itself among them) are fewer than a nack quorum:
 * the up replicas can neither repair f nor truncate it. *lo: the lowest
 * op of the undecidable run ending at f (scanning down to the first op
 * that is decidable or held). 1 found, 0 none. */
static int
stalled_op(struct sim_world *w, uint64_t *lo, uint64_t *f_out, unsigned *who,
           unsigned *nackers_out)
{
    unsigned nq = vsr_quorum_nack(w->p.n);
    for (unsigned i = 0; i < w->p.n; i++) {
        const struct sim_node *n = &w->node[i];
        if (!n->up)
            continue;
        struct vs_vsr_info info;
        vsr_info(n->eng, &info);
        uint64_t held = wal_empty(&n->journal) ? vsr_commit_min(n->eng)
                                               : wal_last_op(&n->journal);
        uint64_t top = info.nonack_top > info.op ? info.nonack_top : info.op;
        if (info.faulty_op > top)
            top = info.faulty_op;
        int found = 0;
        for (uint64_t f = top; f > held && f > vsr_commit_min(n->eng); f--) {
            unsigned holders = 0, nackers = f > info.nonack_top;
            for (unsigned k = 0; k < w->p.n; k++) {
                const struct sim_node *o = &w->node[k];
                if (k == i || !o->up)
                    continue;
                struct vs_vsr_info oi;
                vsr_info(o->eng, &oi);
                /* a copy counts only if it can be canonical */
                if (vsr_commit_min(o->eng) >= f ||
                    (!wal_empty(&o->journal) &&
                     wal_first_op(&o->journal) <= f &&
                     wal_last_op(&o->journal) >= f &&
                     vsr_log_view(o->eng) >= vsr_log_view(n->eng)))
                    holders++;
                else if (oi.nonack_top < f && (wal_empty(&o->journal) ||
                                               wal_last_op(&o->journal) < f))
                    nackers++; /* a holder of another log_view's f does
                                * not nack it */
            }
            if (holders > 0)
                break; /* decidable from here down */
            if (nackers >= nq) {
                if (found)
                    break; /* the run of undecidable ops ends */
                continue;  /* a nack quorum truncates it */
            }
            if (!found) {
                *f_out = f;
                *who = i;
                *nackers_out = nackers;
                found = 1;
            }
            *lo = f;
        }
        if (found)
            return 1;
    }
    return 0;
}

/* 1 when the stall is undecidable without the replicas that refuse to
 * boot: the stall scan (stalled_op) finds an op f with a replica down
 * refusing to boot, so the cluster rightly waits. Records the op and
 * the refused replicas (waived_op, waived_mask, waived_why). That the
 * missing copies or votes are on the refused replicas is then proven
 * by the counterfactual run (sim_params.refused_bootable, vsr_sim.c):
 * the same seed with their disks restored must converge without any
 * waiver. A replica that refuses to boot (interior WAL corruption) is a
 * lost disk in this design (`vstreamd recover`), and a rebuilt replica
 * never votes on what it lost. Never applies in the counterfactual
 * run. */
static int
needs_refused_votes(struct sim_world *w)
{
    unsigned refused = 0;
    for (unsigned i = 0; i < w->p.n; i++)
        if (!w->node[i].up && w->node[i].refused)
            refused |= 1u << i;
    if (refused == 0 || w->p.refused_bootable)
        return 0;
    uint64_t lo, f;
    unsigned i, nackers;
    if (!stalled_op(w, &lo, &f, &i, &nackers))
        return 0;
    struct vs_vsr_info info;
    vsr_info(w->node[i].eng, &info);
    w->waived_op = f;
    w->waived_mask = refused;
    snprintf(w->waived_why, sizeof(w->waived_why),
             "op %llu (%s of replica %u) has no live copy and %u of "
             "%u nacks; replicas 0x%x refuse to boot",
             (unsigned long long)f,
             f <= info.op           ? "a header without body"
             : f <= info.nonack_top ? "never nacked"
                                    : "faulty",
             i, nackers, vsr_quorum_nack(w->p.n), refused);
    return 1;
}

/* Whether stalled op f is the torn-copies class on every replica (all
 * up): none applied it or holds it in its journal; each replica whose
 * faulty range holds f had its copy cut at boot as a torn write that
 * never completed an fsync (sim_node_torn_copy, from the disk's crash
 * record), of the header its engine knows there; no replica ever
 * reported f durable under any checksum a replica knows for it (none
 * known: under any checksum); the history never committed it. Adds the
 * replicas with torn copies to *mask. 1 the class, else 0 (why says
 * what broke it). */
static int
torn_class_op(struct sim_world *w, uint64_t f, unsigned *mask, char *why,
              size_t whylen)
{
    struct vs_u128 sums[SIM_N_MAX * 2];
    unsigned nsums = 0, torn = 0;
    for (unsigned k = 0; k < w->p.n; k++) {
        const struct sim_node *o = &w->node[k];
        struct vs_vsr_info oi;
        vsr_info(o->eng, &oi);
        if (vsr_commit_min(o->eng) >= f ||
            (!wal_empty(&o->journal) && wal_first_op(&o->journal) <= f &&
             wal_last_op(&o->journal) >= f)) {
            snprintf(why, whylen, "replica %u holds op %llu", k,
                     (unsigned long long)f);
            return 0;
        }
        struct vs_hdr_prepare h;
        int hdr = vsr_header(o->eng, f, &h) && h.op == f;
        if (hdr)
            sums[nsums++] = h.f.checksum;
        if (f > oi.faulty_op)
            continue; /* absent here */
        struct vs_u128 ts;
        if (!sim_node_torn_copy(o, f, &ts)) {
            snprintf(why, whylen,
                     "replica %u's faulty copy of op %llu is not a torn "
                     "write that never completed an fsync",
                     k, (unsigned long long)f);
            return 0;
        }
        if (!vs_u128_is_zero(ts)) {
            if (hdr && !vs_u128_eq(ts, h.f.checksum)) {
                snprintf(why, whylen,
                         "replica %u's torn copy of op %llu is not the "
                         "header its engine knows",
                         k, (unsigned long long)f);
                return 0;
            }
            sums[nsums++] = ts;
        }
        torn |= 1u << k;
    }
    if (torn == 0) {
        snprintf(why, whylen, "op %llu: no faulty copy", (unsigned long long)f);
        return 0;
    }
    for (unsigned k = 0; k < w->p.n; k++) {
        int ever = nsums == 0 && sim_node_ever_durable(&w->node[k], f, NULL);
        for (unsigned j = 0; j < nsums && !ever; j++)
            ever = sim_node_ever_durable(&w->node[k], f, &sums[j]);
        if (ever) {
            snprintf(why, whylen,
                     "replica %u reported op %llu durable (it may have "
                     "acknowledged it)",
                     k, (unsigned long long)f);
            return 0;
        }
    }
    if (f <= w->hist_max && f < SIM_HIST_MAX && w->hist[f].set) {
        snprintf(why, whylen, "op %llu was committed", (unsigned long long)f);
        return 0;
    }
    *mask |= torn;
    return 1;
}

/* 1 when, with every replica up, the stall is the torn-copies class:
 * the ops the stall scan finds undecidable (stalled_op: x, or a run of
 * them) have no intact copy anywhere, every copy being absent or a
 * damaged tail a crash tore from a write that never completed an fsync
 * (torn_class_op), so no replica may decide them (a present but faulty
 * entry is never nacked) though nothing acknowledged them: the WAL
 * format keeps no proof of that. Records the ops and the replicas with
 * torn copies (torn_lo, torn_hi, torn_mask, waived_why); vsr_sim.c then
 * proves it by the counterfactual (sim_params.torn_lost: those torn
 * appends lost whole must converge unwaived). Never applies in the
 * counterfactual. */
static int
needs_torn_proof(struct sim_world *w)
{
    if (w->p.torn_lost)
        return 0;
    for (unsigned i = 0; i < w->p.n; i++)
        if (!w->node[i].up)
            return 0;
    uint64_t lo, f;
    unsigned who, nackers, mask = 0;
    if (!stalled_op(w, &lo, &f, &who, &nackers))
        return 0;
    char why[200];
    for (uint64_t x = lo; x <= f; x++)
        if (!torn_class_op(w, x, &mask, why, sizeof(why))) {
            tracef(w, "no torn-copies waiver: %s", why);
            return 0;
        }
    w->torn_lo = lo;
    w->torn_hi = f;
    w->torn_mask = mask;
    if (lo == f)
        snprintf(w->waived_why, sizeof(w->waived_why),
                 "op %llu has no intact copy: replicas 0x%x hold it as a "
                 "damaged tail torn from a write never fsynced, %u of %u "
                 "nacks",
                 (unsigned long long)f, mask, nackers, vsr_quorum_nack(w->p.n));
    else
        snprintf(w->waived_why, sizeof(w->waived_why),
                 "ops %llu..%llu have no intact copy: replicas 0x%x hold "
                 "them as damaged tails torn from writes never fsynced, %u "
                 "of %u nacks at %llu",
                 (unsigned long long)lo, (unsigned long long)f, mask, nackers,
                 vsr_quorum_nack(w->p.n), (unsigned long long)f);
    return 1;
}

/* 1 once every client is idle and the live replicas agree. */
static int
converged(struct sim_world *w)
{
    if (!w->genesis_done)
        return 0;
    for (unsigned i = 0; i < w->p.clients; i++)
        if (w->c[i].busy || w->c[i].session == 0)
            return 0;
    if (w->p.converge_all) {
        /* scenarios: every replica up, Normal, at one commit */
        for (unsigned i = 0; i < w->p.n; i++)
            if (!w->node[i].up ||
                vsr_status(w->node[i].eng) != VSR_STATUS_NORMAL ||
                vsr_commit_min(w->node[i].eng) !=
                    vsr_commit_min(w->node[0].eng) ||
                vsr_commit_min(w->node[i].eng) < w->acked_max)
                return 0;
        return 1;
    }
    /* a replication quorum of Normal replicas at one commit past every
     * acknowledged op */
    uint64_t best = 0;
    for (unsigned i = 0; i < w->p.n; i++)
        if (w->node[i].up && vsr_status(w->node[i].eng) == VSR_STATUS_NORMAL &&
            vsr_commit_min(w->node[i].eng) > best)
            best = vsr_commit_min(w->node[i].eng);
    unsigned at = 0;
    for (unsigned i = 0; i < w->p.n; i++)
        if (w->node[i].up && vsr_status(w->node[i].eng) == VSR_STATUS_NORMAL &&
            vsr_commit_min(w->node[i].eng) == best)
            at++;
    return at >= vsr_quorum_replication(w->p.n) && best >= w->acked_max;
}

/* Determinism after convergence: live replicas Normal at the same
 * commit hold the same state machine and client table (their snapshots
 * encode to the same bytes), however they got there (commits, replay,
 * state transfer). */
static void
check_equal_states(struct sim_world *w)
{
    struct vs_wbuf a, b;
    vs_wbuf_init(&a);
    vs_wbuf_init(&b);
    for (unsigned i = 0; i < w->p.n && !w->failed; i++) {
        const struct sim_node *x = &w->node[i];
        if (!x->up || vsr_status(x->eng) != VSR_STATUS_NORMAL)
            continue;
        vs_wbuf_reset(&a);
        meta_snapshot_encode(x->state, &x->ct, &a);
        for (unsigned k = i + 1; k < w->p.n && !w->failed; k++) {
            const struct sim_node *y = &w->node[k];
            if (!y->up || vsr_status(y->eng) != VSR_STATUS_NORMAL ||
                vsr_commit_min(y->eng) != vsr_commit_min(x->eng))
                continue;
            vs_wbuf_reset(&b);
            meta_snapshot_encode(y->state, &y->ct, &b);
            if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
                sim_world_failf(w,
                                "determinism: replicas %u and %u at op %llu "
                                "hold different states",
                                i, k,
                                (unsigned long long)vsr_commit_min(x->eng));
        }
    }
    vs_wbuf_fini(&a);
    vs_wbuf_fini(&b);
}

int
sim_world_run(struct sim_world *w)
{
    w->faults_on = 1;
    while (w->now < w->p.ticks && !w->failed)
        sim_world_step(w);
    /* the faults stop: heal, restart what is down, then converge */
    w->faults_on = 0;
    memset(w->part, 0, sizeof(w->part));
    w->partitioned = 0;
    for (unsigned i = 0; i < w->p.n; i++) {
        w->disk[i].crash_at = 0;
        if (!w->node[i].up)
            (void)sim_world_restart(w, i);
        if (w->p.refused_bootable && !w->node[i].up && w->node[i].refused) {
            /* the counterfactual: its disk restored, it boots */
            unsigned k = sim_world_unrot(w, i);
            if (w->p.refused_bootable == 2 && !w->p.bootable_mute_parts &&
                sim_world_rot_op(w, i, w->p.bootable_rot_op, 1))
                w->m.bitrot++;
            w->made_bootable |= 1u << i;
            tracef(w, "replica %u made bootable (%u faults undone)", i, k);
            (void)sim_world_restart(w, i);
        }
    }
    sim_parts_heal(w);
    uint64_t end = w->now + LIVENESS_TICKS;
    while (!w->failed && w->now < end &&
           (!converged(w) || !sim_parts_converged(w)))
        sim_world_step(w);
    if (!w->failed && converged(w))
        sim_parts_finish(w);
    if (!w->failed && !converged(w) && w->trace) {
        for (unsigned i = 0; i < w->p.n; i++) {
            struct sim_node *n = &w->node[i];
            if (!n->up) {
                tracef(w, "replica %u down (%s)", i, n->refuse);
                continue;
            }
            const struct vs_vsr_stats *st = vsr_stats(n->eng);
            char v[600] = "";
            size_t k = 0;
            for (unsigned c = 1; c < VSR_VERDICT_COUNT; c++)
                if (st->verdicts[c] && k < sizeof(v) - 40)
                    k += (size_t)snprintf(v + k, sizeof(v) - k, " %s=%llu",
                                          vsr_verdict_name(c),
                                          (unsigned long long)st->verdicts[c]);
            tracef(w,
                   "replica %u status %d view %u op %llu commit %llu/%llu "
                   "ckpt %llu journal %llu..%llu%s",
                   i, vsr_status(n->eng), vsr_view(n->eng),
                   (unsigned long long)vsr_op(n->eng),
                   (unsigned long long)vsr_commit_min(n->eng),
                   (unsigned long long)vsr_commit_max(n->eng),
                   (unsigned long long)n->last_ckpt_op,
                   (unsigned long long)(wal_empty(&n->journal)
                                            ? 0
                                            : wal_first_op(&n->journal)),
                   (unsigned long long)(wal_empty(&n->journal)
                                            ? 0
                                            : wal_last_op(&n->journal)),
                   v);
        }
        for (unsigned i = 0; i < w->p.clients; i++)
            tracef(w,
                   "client %u busy %d registering %d session %llu "
                   "request %llu target %u",
                   i, w->c[i].busy, w->c[i].registering,
                   (unsigned long long)w->c[i].session,
                   (unsigned long long)w->c[i].request, w->c[i].target);
    }
    if (!w->failed && converged(w))
        check_equal_states(w);
    if (!w->failed && !converged(w) && primary_needs_transfer(w)) {
        /* the view's primary itself is behind every peer's journal: no
         * caught-up primary exists to serve a transfer (only a caught-up
         * primary serves), and the engine does not step such a primary
         * aside yet (an engine finding, reported); counted, and the only
         * transfer stall still waived */
        w->m.waived_transfer++;
        tracef(w, "liveness waived: the primary needs state transfer");
    } else if (!w->failed && !converged(w) && needs_refused_votes(w)) {
        /* an op an up replica may have acknowledged can only be decided
         * with the votes of replicas that refuse to boot (lost disks) */
        w->m.waived_refused++;
        tracef(w, "liveness waived: %s", w->waived_why);
    } else if (!w->failed && !converged(w) && needs_torn_proof(w)) {
        /* an op no replica holds intact, only torn never-fsynced copies
         * that may not be nacked: undecidable by the format's rules */
        w->m.waived_torn++;
        tracef(w, "liveness waived: %s", w->waived_why);
    } else if (!w->failed && !converged(w) && needs_transfer(w) &&
               serving_primary(w)) {
        /* state transfer runs (sim_xfer.h): a backup still behind its
         * peers' checkpoints after the liveness bound, beside a caught-up
         * primary that could serve it, is a failure (without one, the
         * generic liveness failure below names the stall) */
        sim_world_failf(w,
                        "liveness: a replica still needs state transfer %u "
                        "ticks after the faults stopped (acked op %llu)",
                        LIVENESS_TICKS, (unsigned long long)w->acked_max);
    } else if (!w->failed && !converged(w)) {
        unsigned busy = 0;
        for (unsigned i = 0; i < w->p.clients; i++)
            busy += w->c[i].busy;
        unsigned normal = 0;
        for (unsigned i = 0; i < w->p.n; i++)
            normal += w->node[i].up &&
                      vsr_status(w->node[i].eng) == VSR_STATUS_NORMAL;
        sim_world_failf(w,
                        "liveness: %u of %u clients still wait %u ticks after "
                        "the faults stopped (%u of %u replicas up, %u Normal; "
                        "acked op %llu)",
                        busy, w->p.clients, LIVENESS_TICKS, up_count(w), w->p.n,
                        normal, (unsigned long long)w->acked_max);
    }
    for (unsigned i = 0; i < w->p.n; i++) {
        struct sim_node *n = &w->node[i];
        w->m.replays += n->m_replayed;
        w->m.lost_whole += w->disk[i].lost_whole;
        sim_xfer_close(n); /* folds its served counters in; reopened at boot */
        w->m.xfer_begun += n->m_xfer_begun;
        w->m.xfer_installs += n->m_xfer_installs;
        w->m.xfer_table_only += n->m_xfer_table_only;
        w->m.xfer_retargets += n->m_xfer_retargets;
        w->m.xfer_abandoned += n->m_xfer_abandoned;
        w->m.xfer_served += n->m_xfer_served;
        w->m.xfer_tables += n->m_xfer_table_installed;
        if (n->m_xfer_table_refused)
            sim_world_failf(w,
                            "determinism: replica %u refused %llu transferred "
                            "client tables (their sessions disagree with the "
                            "replayed ones)",
                            i, (unsigned long long)n->m_xfer_table_refused);
        struct vs_vsr_stats st;
        sim_node_stats(n, &st);
        w->m.view_changes += st.view_changes;
        w->m.nack_truncations += st.nack_truncations;
        w->m.older_adopted += st.older_adopted;
        w->m.faulty_not_nacked += st.faulty_not_nacked;
        w->m.repairs += st.repairs;
        w->m.truncations += st.truncations;
        w->m.range_evicted += st.range_evicted;
        w->m.sv_adopted += st.sv_adopted;
        w->m.probe_elections += st.probe_elections;
        w->m.faulty_repaired += st.faulty_repaired;
        w->m.divergences += st.divergences;
        if (st.divergences)
            sim_world_failf(w,
                            "history: replica %u saw a commit that disagrees "
                            "with its log (%llu divergences)",
                            i, (unsigned long long)st.divergences);
    }
    return w->failed;
}
