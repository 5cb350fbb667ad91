/*
 * tests/sim/sim_parts.c - replicated partition groups in the simulator:
 * the sim-local binding of the engine over the real partition storage on
 * sim_sio, the partition clients, the faults and the checkers
 * (sim_parts.h). Callers: the simulator only (one thread).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/buf.h"
#include "common/checksum.h"
#include "common/mem.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pdir.h"
#include "shard/data/pinstall.h"
#include "shard/data/pjournal.h"
#include "shard/serve/pgroup.h"
#include "shard/vsr/engine.h"
#include "tests/sim/sim_parts.h"
#include "tests/sim/sim_sio.h"
#include "tests/sim/sim_world.h"

#define SP_OPS       2048u /* journal slots = history bound per group */
#define SP_ROT_MAX   8u    /* flips remembered per replica */
#define SP_OPS_CAP   1900u /* clients stop proposing beyond it */
#define SP_OFFS      (SP_OPS * 4u)
#define SP_CLIENTS   8u
#define SP_BODY_MAX  (16u * 1024u)
#define SP_FROM_CL   100u /* net `from` of a client */
#define SP_STATE_LEN 64u
#define SP_CONSUMERS 3u
#define SP_PG_SLOTS  256u /* the production binding's journal window */

struct sp_hist {
    int set;
    struct vs_u128 checksum;
    struct vs_u128 client;
    uint64_t request;
    uint8_t operation;
    int acked;
    int out_set;
    uint8_t out[16];
    uint32_t out_len;
    /* the production binding: what the committed log says the answer is */
    int model_set;
    uint64_t base;
    uint32_t count, code;
};

struct sp_off {
    int set;
    uint64_t op;
    uint64_t hash; /* XXH3 of the stamped batch */
    uint32_t count;
};

struct sp_io {
    int kind; /* 1 journal fsync, 2 state fsync */
    uint64_t due, op;
    struct vs_u128 checksum;
    struct vs_vsr_persist persist;
};

struct sp_ded {
    struct vs_u128 client;
    uint64_t request;
    uint8_t out[16];
    uint32_t out_len;
};

struct sp_rep {
    struct sim_parts *ps;
    unsigned node, part, replica;
    int up;
    struct vs_vsr *eng;
    struct vs_part *p;
    int jfd, sfd;
    char jpath[400], spath[400];
    uint64_t jend, jhead, jdur;
    uint64_t joff[SP_OPS + 2];
    struct vs_vsr_persist sb; /* as durable */
    uint64_t sb_seq;
    struct sp_io *io;
    size_t nio, io_cap;
    struct sp_ded ded[SP_CLIENTS];
    unsigned nded;
    uint64_t applied;
    uint64_t mend; /* next offset by the committed log, as of applied */
    uint64_t lives;
    struct vs_vsr_stats acc;
    uint64_t verdicts[VSR_VERDICT_COUNT]; /* earlier lives */
    /* the production binding (shard/serve/pgroup.c) */
    struct vs_pgroup *g;
    struct pj_sync_target sync_t;
    int sync_pending, refused;
    char refuse[600]; /* why the last open refused */
    /* byte flips (and latent sectors: mask 0) of this group's files on
     * the node since its last successful open (the counterfactual
     * undoes them: heal) */
    struct sp_rot {
        char path[700];
        uint64_t off;
        uint8_t mask;
    } rot[SP_ROT_MAX];
    unsigned nrot;
    uint64_t sync_due;
    uint64_t boot_dur; /* recovered head: durable from the open on */
};

struct sp_node {
    struct sim_sio *fs;
    char root[300], parts_dir[340];
    int up;
    uint64_t boots_seen;
    uint64_t back_at; /* a side stopped by its own storage crash */
    int fatal;
    unsigned rotted; /* bit k: a group-k file of this node was damaged */
};

struct sp_msg {
    uint64_t due, seq;
    int to_client;
    unsigned from, to;
    uint32_t len;
    uint8_t *frame;
};

struct sp_client {
    struct vs_u128 id;
    uint64_t transport;
    unsigned part, target;
    uint64_t request;
    int busy;
    uint8_t operation;
    uint8_t *body;
    uint32_t len;
    uint64_t first_sent, retry_at;
    uint64_t done;
};

#define SP_PENDING 64u

struct sp_pend { /* an answer whose commit was not observed yet */
    unsigned part;
    uint64_t op, request, base;
    struct vs_u128 client;
    uint8_t operation;
    uint32_t status;
};

struct sim_parts {
    struct sim_world *w;
    struct sp_pend pend[SP_PENDING];
    size_t npend;
    struct sim_parts_opts o;
    uint64_t gid[SIM_PARTS_MAX]; /* group id of each partition */
    unsigned n;
    uint64_t rng;
    struct sp_node node[SIM_N_MAX];
    struct sp_rep rep[SIM_N_MAX][SIM_PARTS_MAX];
    struct sp_hist *hist[SIM_PARTS_MAX];
    struct sp_off *offs[SIM_PARTS_MAX];
    uint64_t end[SIM_PARTS_MAX]; /* offsets handed out by committed ops */
    unsigned rot_reps[SIM_PARTS_MAX];
    struct sp_msg *net;
    size_t nnet, cap;
    uint64_t seq;
    struct sp_client c[SP_CLIENTS];
    struct sim_parts_marks m;
    unsigned mute; /* nodes whose partition frames are dropped */
    int (*tamper)(void *ctx, unsigned from, unsigned to, uint8_t *frame,
                  uint32_t len);
    void *tamper_ctx;
    char why[300]; /* why the groups have not converged */
};

static struct sim_parts *
parts_of(const struct sim_world *w)
{
    return (struct sim_parts *)w->parts;
}

static uint64_t
prand(struct sim_parts *ps)
{
    uint64_t z = (ps->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int
pchance(struct sim_parts *ps, unsigned num, unsigned den)
{
    return prand(ps) % den < num;
}

static void ptrace(struct sim_parts *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
ptrace(struct sim_parts *ps, const char *fmt, ...)
{
    if (!ps->w->trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("[%6llu] parts: ", (unsigned long long)ps->w->now);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

unsigned
sim_parts_node_of(const struct sim_world *w, unsigned k, unsigned replica)
{
    return (replica + k) % w->p.n;
}

static struct part_id
part_ident_of(unsigned k)
{
    struct part_id id = {1, 1, k, 1};
    return id;
}

/* The group id of any replica frame, by command (the header places it
 * per command). 0 if the command carries none. */
static uint64_t
frame_group(const uint8_t *f, uint32_t len)
{
    if (len < VS_HEADER_SIZE)
        return 0;
    size_t off;
    switch (((const struct vs_header *)f)->f.command) {
    case VS_CMD_PREPARE:
    case VS_CMD_REPAIR_PREPARE:
        off = 216;
        break;
    case VS_CMD_PREPARE_OK:
        off = 200;
        break;
    case VS_CMD_COMMIT:
        off = 168;
        break;
    case VS_CMD_PONG:
    case VS_CMD_DO_VIEW_CHANGE:
    case VS_CMD_START_VIEW:
    case VS_CMD_REQUEST_STATE_TRANSFER:
        off = 144;
        break;
    case VS_CMD_START_VIEW_CHANGE:
    case VS_CMD_REQUEST_START_VIEW:
        off = 128;
        break;
    case VS_CMD_REQUEST_PREPARES:
        off = 160;
        break;
    case VS_CMD_REPAIR_DONE:
    case VS_CMD_RANGE_EVICTED:
    case VS_CMD_STATE_TRANSFER_TARGET:
    case VS_CMD_REQUEST_STATE_CHUNK:
    case VS_CMD_STATE_CHUNK:
        off = 152;
        break;
    default:
        return 0;
    }
    uint64_t g;
    memcpy(&g, f + off, sizeof(g));
    return g;
}

/* ------------------------------------------------------------ network */

static uint64_t
delay_ticks(struct sim_parts *ps)
{
    struct sim_world *w = ps->w;
    if (!w->faults_on || !w->f.delay)
        return 1;
    uint64_t d = 1 + w->p.delay_min + prand(ps) % (2 * w->p.delay_mean + 1);
    if (pchance(ps, 1, 50))
        d += prand(ps) % 200;
    return d;
}

static void
net_push(struct sim_parts *ps, int to_client, unsigned from, unsigned to,
         const void *frame, uint32_t len)
{
    if (ps->nnet == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 256;
        ps->net = vs_xrealloc(ps->net, ps->cap * sizeof(*ps->net));
    }
    struct sp_msg *m = &ps->net[ps->nnet++];
    m->due = ps->w->now + delay_ticks(ps);
    m->seq = ps->seq++;
    m->to_client = to_client;
    m->from = from;
    m->to = to;
    m->len = len;
    m->frame = vs_xmalloc(len);
    memcpy(m->frame, frame, len);
}

/* The faulty network: loss, duplication, delay, the world's cuts. */
static void
net_send(struct sim_parts *ps, int to_client, unsigned from, unsigned to,
         const void *frame, uint32_t len)
{
    struct sim_world *w = ps->w;
    if (w->faults_on && !to_client && from < SIM_N_MAX && to < SIM_N_MAX &&
        w->part[from][to])
        return;
    if (!to_client && from < SIM_N_MAX && to < SIM_N_MAX &&
        (ps->mute & (1u << from)))
        return; /* the waiver's mutation (sim_params.bootable_mute_parts) */
    if (w->faults_on && w->f.loss && pchance(ps, w->p.loss_pm, 1000))
        return;
    net_push(ps, to_client, from, to, frame, len);
    /* a request duplicated on the way (client -> node, or forwarded):
     * only when asked (sim_parts_opts.dup_requests) */
    int request =
        !to_client && len >= VS_HEADER_SIZE &&
        ((const struct vs_header *)frame)->f.command == VS_CMD_REQUEST;
    if (w->faults_on && w->f.dup && pchance(ps, w->p.dup_pm, 1000) &&
        (!request || ps->o.local_binding || ps->o.dup_requests))
        net_push(ps, to_client, from, to, frame, len);
}

/* ------------------------------------------------------------ helpers */

static void fail(struct sim_parts *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
fail(struct sim_parts *ps, const char *fmt, ...)
{
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    sim_world_failf(ps->w, "partitions: %s", m);
}

static void side_fatal(struct sp_rep *r, const char *what, int rc);

static uint64_t
pad8(uint64_t x)
{
    return (x + 7) & ~(uint64_t)7;
}

/* Reads journal record `op` (header + body) into out. 0 or -errno. */
static int
j_read(struct sp_rep *r, uint64_t op, struct vs_wbuf *out)
{
    if (op == 0 || op > r->jhead)
        return -ENOENT;
    struct vs_sio *io = sim_sio_io(r->ps->node[r->node].fs);
    struct vs_hdr_prepare h;
    int rc = sio_pread_all(io, r->jfd, &h, sizeof(h), (off_t)r->joff[op], NULL);
    if (rc < 0)
        return rc;
    if (h.f.size < VS_HEADER_SIZE || h.f.size > VS_HEADER_SIZE + SP_BODY_MAX ||
        h.op != op)
        return -EBADMSG;
    vs_wbuf_reset(out);
    uint8_t *dst = vs_wbuf_reserve(out, h.f.size);
    rc = sio_pread_all(io, r->jfd, dst, h.f.size, (off_t)r->joff[op], NULL);
    if (rc < 0)
        return rc;
    out->len = h.f.size;
    const struct vs_hdr_prepare *p = (const void *)out->data;
    if (!vs_prepare_verify_identity(p) ||
        !vs_body_verify((const struct vs_header *)p, out->data + VS_HEADER_SIZE,
                        h.f.size - VS_HEADER_SIZE))
        return -EBADMSG;
    return 0;
}

static void
io_push(struct sp_rep *r, const struct sp_io *x)
{
    if (r->nio == r->io_cap) {
        r->io_cap = r->io_cap ? 2 * r->io_cap : 16;
        r->io = vs_xrealloc(r->io, r->io_cap * sizeof(*r->io));
    }
    r->io[r->nio++] = *x;
}

/* --------------------------------------------------------- the model */

/* The apply output of op `h` over the committed state before it, as the
 * committed log defines it (the storage must agree): a send's base
 * offset and count, a store's result. `end` is the partition's next
 * offset before the op; *adv the offsets the op hands out. */
static void
model_output(const struct vs_hdr_prepare *h, const uint8_t *body, uint32_t len,
             uint64_t end, uint8_t out[16], uint32_t *out_len, uint32_t *adv)
{
    *adv = 0;
    if (h->operation == VS_OP_SEND_MESSAGES) {
        uint32_t count = len >= BATCH_HEADER_SIZE ? batch_count(body) : 0;
        memcpy(out, &end, 8);
        memcpy(out + 8, &count, 4);
        *out_len = 12;
        *adv = count;
        return;
    }
    int32_t rc = -EINVAL;
    if (h->operation == VS_OP_STORE_CONSUMER_OFFSET && len == 12) {
        uint64_t off;
        memcpy(&off, body + 4, 8);
        rc = end > 0 && off <= end - 1 ? 0 : -ERANGE;
    }
    memcpy(out, &rc, 4);
    *out_len = 4;
}

static struct sp_ded *
ded_find(struct sp_rep *r, struct vs_u128 client, int create)
{
    for (unsigned i = 0; i < r->nded; i++)
        if (vs_u128_eq(r->ded[i].client, client))
            return &r->ded[i];
    if (!create || r->nded == SP_CLIENTS)
        return NULL;
    struct sp_ded *d = &r->ded[r->nded++];
    memset(d, 0, sizeof(*d));
    d->client = client;
    return d;
}

/* ------------------------------------------------------------ actions */

static uint64_t rep_durable(const struct sp_rep *r);

static void
check_before_send(struct sp_rep *r, const struct vs_header *h)
{
    unsigned c = h->f.command;
    if (r->g == NULL &&
        (c == VS_CMD_PREPARE_OK || c == VS_CMD_COMMIT ||
         c == VS_CMD_START_VIEW_CHANGE || c == VS_CMD_DO_VIEW_CHANGE ||
         c == VS_CMD_START_VIEW) &&
        h->f.view > r->sb.view)
        fail(r->ps,
             "persist-before-send: group %u replica on node %u sent command "
             "%u in view %u above its durable view %u",
             r->part, r->node, c, h->f.view, r->sb.view);
    if (c == VS_CMD_PREPARE_OK) {
        const struct vs_hdr_prepare_ok *ok = (const void *)h;
        if (ok->op > rep_durable(r))
            fail(r->ps,
                 "R3: group %u replica on node %u acknowledged op %llu above "
                 "its durable journal op %llu",
                 r->part, r->node, (unsigned long long)ok->op,
                 (unsigned long long)rep_durable(r));
    }
}

static void
do_send(struct sp_rep *r, unsigned replica, const void *frame, uint32_t len)
{
    struct sim_parts *ps = r->ps;
    check_before_send(r, frame);
    unsigned to = sim_parts_node_of(ps->w, r->part, replica);
    if (ps->tamper != NULL) {
        uint8_t *copy = vs_xmalloc(len);
        memcpy(copy, frame, len);
        if (!ps->tamper(ps->tamper_ctx, r->node, to, copy, len))
            net_send(ps, 0, r->node, to, copy, len);
        free(copy);
        return;
    }
    net_send(ps, 0, r->node, to, frame, len);
}

static void
do_append(struct sp_rep *r, const struct vs_vsr_action *a)
{
    struct sim_parts *ps = r->ps;
    struct vs_sio *io = sim_sio_io(ps->node[r->node].fs);
    const struct vs_hdr_prepare *h = (const void *)a->frame;
    if (a->body == NULL && a->body_len > 0) {
        fail(ps, "engine appended op %llu without its body",
             (unsigned long long)h->op);
        return;
    }
    if (h->op != r->jhead + 1 || h->op > SP_OPS) {
        fail(ps, "group %u node %u: append of op %llu after head %llu", r->part,
             r->node, (unsigned long long)h->op, (unsigned long long)r->jhead);
        return;
    }
    uint64_t size = pad8(a->size);
    uint8_t *rec = vs_xcalloc(1, size);
    memcpy(rec, a->frame, a->size);
    ((struct vs_hdr_prepare *)rec)->f.command = VS_CMD_PREPARE;
    int rc = sio_pwrite_all(io, r->jfd, rec, size, (off_t)r->jend, r->jpath);
    free(rec);
    if (rc < 0) {
        side_fatal(r, "journal append", rc);
        return;
    }
    r->joff[h->op] = r->jend;
    r->jend += size;
    r->jhead = h->op;
    r->joff[h->op + 1] = r->jend;
    struct sp_io x = {.kind = 1,
                      .due = ps->w->now + ps->w->p.disk_delay,
                      .op = h->op,
                      .checksum = h->f.checksum};
    io_push(r, &x);
}

static void
state_encode(const struct vs_vsr_persist *p, uint64_t seq,
             uint8_t b[SP_STATE_LEN])
{
    memset(b, 0, SP_STATE_LEN);
    memcpy(b, "VSPG", 4);
    memcpy(b + 8, &seq, 8);
    memcpy(b + 16, &p->view, 4);
    memcpy(b + 20, &p->log_view, 4);
    memcpy(b + 24, &p->commit_max, 8);
    memcpy(b + 32, &p->faulty_op, 8);
    uint64_t x = vs_xxh3_64(b, 56);
    memcpy(b + 56, &x, 8);
}

static int
state_decode(const uint8_t b[SP_STATE_LEN], struct vs_vsr_persist *p,
             uint64_t *seq)
{
    uint64_t x;
    memcpy(&x, b + 56, 8);
    if (memcmp(b, "VSPG", 4) != 0 || x != vs_xxh3_64(b, 56))
        return 0;
    memset(p, 0, sizeof(*p));
    memcpy(seq, b + 8, 8);
    memcpy(&p->view, b + 16, 4);
    memcpy(&p->log_view, b + 20, 4);
    memcpy(&p->commit_max, b + 24, 8);
    memcpy(&p->faulty_op, b + 32, 8);
    return 1;
}

static void
do_state_write(struct sp_rep *r, const struct vs_vsr_action *a)
{
    struct sim_parts *ps = r->ps;
    struct vs_sio *io = sim_sio_io(ps->node[r->node].fs);
    uint8_t b[SP_STATE_LEN];
    uint64_t seq = r->sb_seq + 1;
    state_encode(&a->persist, seq, b);
    int rc = sio_pwrite_all(io, r->sfd, b, sizeof(b),
                            (off_t)((seq % 2) * SP_STATE_LEN), r->spath);
    if (rc < 0) {
        side_fatal(r, "state write", rc);
        return;
    }
    r->sb_seq = seq;
    struct sp_io x = {.kind = 2,
                      .due = ps->w->now + ps->w->p.disk_delay,
                      .persist = a->persist};
    io_push(r, &x);
}

static void
do_truncate(struct sp_rep *r, uint64_t op)
{
    struct vs_sio *io = sim_sio_io(r->ps->node[r->node].fs);
    if (op <= r->applied) {
        fail(r->ps, "group %u node %u: truncate of applied op %llu", r->part,
             r->node, (unsigned long long)op);
        return;
    }
    if (op > r->jhead)
        return;
    int rc = sio_ftruncate(io, r->jfd, (off_t)r->joff[op], r->jpath);
    if (rc == 0)
        rc = sio_fsync(io, r->jfd, r->jpath);
    if (rc < 0) {
        side_fatal(r, "journal truncate", rc);
        return;
    }
    r->jend = r->joff[op];
    r->jhead = op - 1;
    if (r->jdur > r->jhead)
        r->jdur = r->jhead;
    size_t k = 0;
    for (size_t i = 0; i < r->nio; i++)
        if (r->io[i].kind != 1 || r->io[i].op < op)
            r->io[k++] = r->io[i];
    r->nio = k;
}

static void
do_send_prepare(struct sp_rep *r, const struct vs_vsr_action *a)
{
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    if (j_read(r, a->op, &b) == 0) {
        struct vs_hdr_prepare *h = (void *)b.data;
        if (vs_u128_eq(h->f.checksum, a->checksum)) {
            if (a->retransmit)
                h->f.view = a->view; /* the primary's retransmit */
            else
                h->f.command = VS_CMD_REPAIR_PREPARE;
            do_send(r, a->replica, b.data, (uint32_t)b.len);
        }
    }
    vs_wbuf_fini(&b);
}

/* The output of op (known before it is applied: the committed log
 * defines it) is the same on every replica. */
static void
check_output(struct sp_rep *r, struct sp_hist *hs, uint64_t op,
             const uint8_t *out, uint32_t out_len)
{
    if (!hs->out_set) {
        hs->out_set = 1;
        memcpy(hs->out, out, out_len);
        hs->out_len = out_len;
    } else if (hs->out_len != out_len || memcmp(hs->out, out, out_len) != 0) {
        fail(r->ps, "determinism: group %u op %llu: node %u's output differs",
             r->part, (unsigned long long)op, r->node);
    }
}

/* Applies committed op `h` to the partition and checks it against the
 * history, the offsets handed out and the model. */
static void
do_commit(struct sp_rep *r, const struct vs_vsr_action *a)
{
    struct sim_parts *ps = r->ps;
    const struct vs_hdr_prepare *h = (const void *)a->frame;
    uint64_t op = a->op;
    struct vs_wbuf rb;
    vs_wbuf_init(&rb);
    const uint8_t *body = a->body;
    uint32_t len = a->body_len;
    if (body == NULL && len > 0) {
        int rc = j_read(r, op, &rb);
        if (rc < 0) {
            fail(ps, "group %u node %u: committed op %llu unreadable: %s",
                 r->part, r->node, (unsigned long long)op, strerror(-rc));
            goto out;
        }
        body = rb.data + VS_HEADER_SIZE;
    }
    if (op != r->applied + 1 || op > SP_OPS) {
        fail(ps, "history: group %u node %u committed op %llu after %llu",
             r->part, r->node, (unsigned long long)op,
             (unsigned long long)r->applied);
        goto out;
    }
    struct sp_hist *hs = &ps->hist[r->part][op];
    if (hs->set && !vs_u128_eq(hs->checksum, h->f.checksum)) {
        fail(ps,
             "history: group %u op %llu committed with two checksums "
             "(node %u)%s",
             r->part, (unsigned long long)op, r->node,
             hs->acked ? ", and it was acknowledged" : "");
        goto out;
    }
    ptrace(ps,
           "node %u group %u commits op %llu (operation %u, client %llx "
           "request %llu)",
           r->node, r->part, (unsigned long long)op, h->operation,
           (unsigned long long)h->client.lo, (unsigned long long)h->request);
    if (!hs->set) {
        hs->set = 1;
        hs->checksum = h->f.checksum;
        hs->client = h->client;
        hs->request = h->request;
        hs->operation = h->operation;
        ps->m.commits++;
    }
    uint8_t out[16];
    uint32_t out_len = 0, adv = 0;
    struct sp_ded *d = ded_find(r, h->client, 0);
    if (d != NULL && h->request <= d->request) {
        /* a duplicate commit of an applied request: no effect, the
         * cached answer */
        memcpy(out, d->out, d->out_len);
        out_len = d->out_len;
        ps->m.dedup_hits++;
        check_output(r, hs, op, out, out_len);
    } else {
        model_output(h, body, len, r->mend, out, &out_len, &adv);
        check_output(r, hs, op, out, out_len);
        for (uint64_t k = 1; k < op && !vs_u128_is_zero(h->client); k++) {
            const struct sp_hist *e = &ps->hist[r->part][k];
            if (e->set && vs_u128_eq(e->client, h->client) &&
                e->request == h->request)
                fail(ps,
                     "at-most-once: group %u node %u executes request "
                     "%llu of a client again at op %llu (first at op "
                     "%llu)",
                     r->part, r->node, (unsigned long long)h->request,
                     (unsigned long long)op, (unsigned long long)k);
        }
        if (h->operation == VS_OP_SEND_MESSAGES) {
            uint8_t *copy = vs_xmalloc(len ? len : 1);
            memcpy(copy, body, len);
            struct part_append_result res;
            enum batch_err be = BATCH_OK;
            int rc = part_append(r->p, copy, len, h->timestamp, &res, &be);
            if (rc == -EINVAL) {
                fail(ps, "group %u op %llu: committed batch refused: %s",
                     r->part, (unsigned long long)op, batch_err_str(be));
            } else if (rc < 0) {
                free(copy);
                side_fatal(r, "part_append", rc);
                goto out;
            } else {
                uint64_t x = vs_xxh3_64(copy, len);
                ptrace(ps,
                       "node %u group %u op %llu stamped at offset %llu "
                       "(+%u)",
                       r->node, r->part, (unsigned long long)op,
                       (unsigned long long)res.base_offset, res.message_count);
                for (uint32_t i = 0; i < res.message_count; i++) {
                    uint64_t o = res.base_offset + i;
                    if (o >= SP_OFFS)
                        break;
                    struct sp_off *f = &ps->offs[r->part][o];
                    if (f->set && ((f->op != 0 && f->op != op) || f->hash != x))
                        fail(ps,
                             "offsets: group %u offset %llu handed out twice "
                             "(ops %llu and %llu, node %u)",
                             r->part, (unsigned long long)o,
                             (unsigned long long)f->op, (unsigned long long)op,
                             r->node);
                    f->set = 1;
                    f->op = op;
                    f->hash = x;
                    f->count = i == 0 ? res.message_count : 0;
                }
                if (res.base_offset != r->mend || res.message_count != adv)
                    fail(ps,
                         "group %u op %llu on node %u: stamped at %llu "
                         "(+%u), the committed log says %llu (+%u)",
                         r->part, (unsigned long long)op, r->node,
                         (unsigned long long)res.base_offset, res.message_count,
                         (unsigned long long)r->mend, adv);
                if (r->mend + adv > ps->end[r->part])
                    ps->end[r->part] = r->mend + adv;
            }
            free(copy);
        } else if (h->operation == VS_OP_STORE_CONSUMER_OFFSET && len == 12) {
            struct part_consumer c = {PART_CONSUMER, 0, 0};
            uint64_t off;
            memcpy(&c.id, body, 4);
            memcpy(&off, body + 4, 8);
            int rc = part_offset_store(r->p, &c, off);
            if (rc < 0 && rc != -ERANGE) {
                /* a committed op cannot fail on one replica: the side
                 * stops (as the data shard exits on a storage error) */
                side_fatal(r, "part_offset_store", rc);
                goto out;
            }
            int32_t want;
            memcpy(&want, out, 4);
            if (rc != want)
                fail(ps,
                     "group %u op %llu on node %u: offset store gave %d, "
                     "the committed log says %d",
                     r->part, (unsigned long long)op, r->node, rc, want);
        }
        if (d == NULL)
            d = ded_find(r, h->client, 1);
        if (d != NULL && !vs_u128_is_zero(h->client)) {
            d->request = h->request;
            memcpy(d->out, out, out_len);
            d->out_len = out_len;
        }
    }
    r->applied = op;
    r->mend += adv;
    if (vsr_on_commit_applied(r->eng, op, out, out_len) != 0)
        fail(ps, "group %u node %u: commit %llu not outstanding", r->part,
             r->node, (unsigned long long)op);
out:
    vs_wbuf_fini(&rb);
}

static void
drain(struct sp_rep *r)
{
    struct vs_vsr_action a;
    while (r->up && !r->ps->w->failed && vsr_pop(r->eng, &a)) {
        switch (a.kind) {
        case VSR_ACT_SEND:
            do_send(r, a.replica, a.frame, a.size);
            break;
        case VSR_ACT_JOURNAL_APPEND:
            do_append(r, &a);
            break;
        case VSR_ACT_SUPERBLOCK_WRITE:
            do_state_write(r, &a);
            break;
        case VSR_ACT_COMMIT:
            do_commit(r, &a);
            break;
        case VSR_ACT_REPLY: {
            for (unsigned i = 0; i < r->ps->o.clients; i++)
                if (vs_u128_eq(r->ps->c[i].id, a.client))
                    net_send(r->ps, 1, r->node, i, a.frame, a.size);
            break;
        }
        case VSR_ACT_JOURNAL_TRUNCATE:
            do_truncate(r, a.op);
            break;
        case VSR_ACT_SEND_PREPARE:
            do_send_prepare(r, &a);
            break;
        case VSR_ACT_STATE_TRANSFER:
            /* no checkpoint drains a partition journal in this binding:
             * every op stays repairable, so this is never needed */
            r->ps->m.state_transfer++;
            break;
        }
    }
}

static void
io_tick(struct sp_rep *r)
{
    struct sim_parts *ps = r->ps;
    struct vs_sio *io = sim_sio_io(ps->node[r->node].fs);
    while (r->up && r->nio > 0 && r->io[0].due <= ps->w->now) {
        struct sp_io x = r->io[0];
        memmove(r->io, r->io + 1, (r->nio - 1) * sizeof(*r->io));
        r->nio--;
        if (x.kind == 1) {
            int rc = sio_fsync(io, r->jfd, r->jpath);
            if (rc < 0) {
                side_fatal(r, "journal fsync", rc);
                return;
            }
            r->jdur = x.op;
            (void)vsr_on_journal_durable(r->eng, x.op, x.checksum);
        } else {
            int rc = sio_fsync(io, r->sfd, r->spath);
            if (rc < 0) {
                side_fatal(r, "state fsync", rc);
                return;
            }
            r->sb = x.persist;
            if (vsr_on_superblock_durable(r->eng, &x.persist) != 0)
                fail(ps, "group %u node %u: superblock completion refused",
                     r->part, r->node);
        }
        drain(r);
    }
}

/* ------------------------------------------- the production binding */

static void status_reply(struct sp_rep *r, const struct vs_hdr_request *q,
                         uint32_t st);

static int
pg_send(void *ctx, struct vs_pgroup *g, uint8_t replica, const void *frame,
        size_t len)
{
    (void)g;
    do_send(ctx, replica, frame, (uint32_t)len);
    return 0;
}

static void
pg_reply(void *ctx, struct vs_pgroup *g, struct vs_u128 client,
         const void *frame, size_t len)
{
    (void)g;
    struct sp_rep *r = ctx;
    for (unsigned i = 0; i < r->ps->o.clients; i++)
        if (vs_u128_eq(r->ps->c[i].id, client))
            net_send(r->ps, 1, r->node, i, frame, (uint32_t)len);
}

/* The fsync the group asks for: its target now, the completion
 * `disk_delay` ticks later (io_tick). */
static void
pg_sync(void *ctx, struct vs_pgroup *g)
{
    struct sp_rep *r = ctx;
    if (pgroup_sync_target(g, &r->sync_t) != 0)
        return; /* the group stopped: observe() sees it */
    /* the fsync runs later on duplicates (the handles may close
     * meanwhile: a segment roll) */
    struct sim_sio *fs = r->ps->node[r->node].fs;
    r->sync_t.log_fd =
        r->sync_t.log_fd >= 0 ? sim_sio_dup(fs, r->sync_t.log_fd) : -1;
    r->sync_t.vsr_fd =
        r->sync_t.vsr_fd >= 0 ? sim_sio_dup(fs, r->sync_t.vsr_fd) : -1;
    r->sync_pending = 1;
    r->sync_due = r->ps->w->now + r->ps->w->p.disk_delay;
}

/* A committed op of the production binding, read back from its journal:
 * the same checks as the sim-local commit (history, at-most-once,
 * offsets) and the answer the committed log defines. */
static void
pg_committed(struct sp_rep *r, uint64_t op, const struct vs_hdr_prepare *h,
             const uint8_t *body, uint32_t len)
{
    struct sim_parts *ps = r->ps;
    struct sp_hist *hs = &ps->hist[r->part][op];
    ptrace(ps,
           "node %u group %u commits op %llu (operation %u, client %llx "
           "request %llu)",
           r->node, r->part, (unsigned long long)op, h->operation,
           (unsigned long long)h->client.lo, (unsigned long long)h->request);
    if (hs->set && !vs_u128_eq(hs->checksum, h->f.checksum)) {
        fail(ps,
             "history: group %u op %llu committed with two checksums "
             "(node %u)%s",
             r->part, (unsigned long long)op, r->node,
             hs->acked ? ", and it was acknowledged" : "");
        return;
    }
    if (!hs->set) {
        hs->set = 1;
        hs->checksum = h->f.checksum;
        hs->client = h->client;
        hs->request = h->request;
        hs->operation = h->operation;
        ps->m.commits++;
        for (uint64_t k = 1; k < op && !vs_u128_is_zero(h->client); k++) {
            const struct sp_hist *e = &ps->hist[r->part][k];
            if (e->set && vs_u128_eq(e->client, h->client) &&
                e->request == h->request &&
                e->operation == VS_OP_SEND_MESSAGES &&
                h->operation == VS_OP_SEND_MESSAGES) {
                fail(ps,
                     "at-most-once: group %u commits request %llu of a "
                     "client again at op %llu (first at op %llu)",
                     r->part, (unsigned long long)h->request,
                     (unsigned long long)op, (unsigned long long)k);
                return;
            }
        }
    }
    if (h->operation == VS_OP_SEND_MESSAGES) {
        if (len < BATCH_HEADER_SIZE) {
            fail(ps, "group %u op %llu: a send without a batch", r->part,
                 (unsigned long long)op);
            return;
        }
        uint64_t base = batch_base_offset(body), x = vs_xxh3_64(body, len);
        uint32_t n = batch_count(body);
        if (base < r->mend)
            fail(ps,
                 "offsets: group %u op %llu on node %u stamped at %llu, "
                 "below the committed log's next offset %llu",
                 r->part, (unsigned long long)op, r->node,
                 (unsigned long long)base, (unsigned long long)r->mend);
        else if (base > r->mend)
            ps->m.offset_gaps++;
        for (uint32_t i = 0; i < n && base + i < SP_OFFS; i++) {
            struct sp_off *f = &ps->offs[r->part][base + i];
            if (f->set && ((f->op != 0 && f->op != op) || f->hash != x))
                fail(ps,
                     "offsets: group %u offset %llu handed out twice "
                     "(ops %llu and %llu, node %u)",
                     r->part, (unsigned long long)(base + i),
                     (unsigned long long)f->op, (unsigned long long)op,
                     r->node);
            f->set = 1;
            f->op = op;
            f->hash = x;
            f->count = i == 0 ? n : 0;
        }
        if (!hs->model_set) {
            hs->model_set = 1;
            hs->base = base;
            hs->count = n;
        } else if (hs->base != base || hs->count != n) {
            fail(ps,
                 "determinism: group %u op %llu at another offset on "
                 "node %u",
                 r->part, (unsigned long long)op, r->node);
        }
        r->mend = base + n;
        if (r->mend > ps->end[r->part])
            ps->end[r->part] = r->mend;
    } else if (h->operation == VS_OP_STORE_CONSUMER_OFFSET) {
        struct pgroup_offset_op o;
        uint32_t code = VS_E_INVALID_FORMAT;
        if (pgroup_offset_decode(body, len, &o) == 0)
            code = r->mend > 0 && o.offset <= r->mend - 1 ? 0
                                                          : VS_E_INVALID_OFFSET;
        if (!hs->model_set) {
            hs->model_set = 1;
            hs->code = code;
        } else if (hs->code != code) {
            fail(ps,
                 "determinism: group %u op %llu: node %u's log gives "
                 "another result",
                 r->part, (unsigned long long)op, r->node);
        }
    }
}

/* After every input of a group: a stop, and the ops it committed. */
static void
observe(struct sp_rep *r)
{
    struct sim_parts *ps = r->ps;
    if (!r->up || r->g == NULL || ps->w->failed)
        return;
    uint64_t head = pj_head(pgroup_journal(r->g));
    if (head < r->boot_dur)
        r->boot_dur = head; /* a truncation: re-appends need a sync */
    uint64_t c = pgroup_commit(r->g);
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    while (r->applied < c && !ps->w->failed) {
        uint64_t op = r->applied + 1;
        vs_wbuf_reset(&b); /* pj_read appends */
        int rc = pj_read(pgroup_journal(r->g), op, &b);
        if (rc == 0 && b.len >= VS_HEADER_SIZE)
            pg_committed(r, op, (const void *)b.data, b.data + VS_HEADER_SIZE,
                         (uint32_t)(b.len - VS_HEADER_SIZE));
        else {
            ps->m.unobserved++; /* drained by a checkpoint meanwhile */
            ptrace(ps, "node %u group %u: committed op %llu unreadable: %s",
                   r->node, r->part, (unsigned long long)op, sio_strerror(rc));
        }
        r->applied = op;
    }
    vs_wbuf_fini(&b);
    /* the commits first (their answers may be out), then the stop */
    if (pgroup_fatal(r->g))
        side_fatal(r, "the partition group", -VS_EFATAL);
}

static void
sync_close(struct sp_rep *r)
{
    struct vs_sio *io = sim_sio_io(r->ps->node[r->node].fs);
    if (r->sync_t.log_fd >= 0)
        sio_close(io, r->sync_t.log_fd);
    if (r->sync_t.vsr_fd >= 0)
        sio_close(io, r->sync_t.vsr_fd);
    r->sync_t.log_fd = r->sync_t.vsr_fd = -1;
}

static void
pg_sync_tick(struct sp_rep *r)
{
    struct sim_parts *ps = r->ps;
    if (!r->up || !r->sync_pending || r->sync_due > ps->w->now)
        return;
    struct vs_sio *io = sim_sio_io(ps->node[r->node].fs);
    r->sync_pending = 0;
    int rc = 0;
    if (r->sync_t.log_fd >= 0)
        rc = sio_fsync(io, r->sync_t.log_fd, "partition log");
    if (rc == 0 && r->sync_t.vsr_fd >= 0)
        rc = sio_fsync(io, r->sync_t.vsr_fd, "partition journal");
    sync_close(r);
    if (rc < 0) {
        side_fatal(r, "journal fsync", rc);
        return;
    }
    pgroup_on_synced(r->g, &r->sync_t);
    observe(r);
}

/* The highest op of the replica's journal that is durable. */
static uint64_t
rep_durable(const struct sp_rep *r)
{
    if (r->g != NULL) {
        uint64_t d = pj_durable(pgroup_journal(r->g));
        return d > r->boot_dur ? d : r->boot_dur;
    }
    return r->jdur;
}

/* The committed log's next offset as of op `applied` (from the offsets
 * every replica committed). */
static uint64_t
committed_end(const struct sim_parts *ps, unsigned k, uint64_t applied)
{
    uint64_t end = 0;
    for (uint64_t o = 0; o < SP_OFFS; o++)
        if (ps->offs[k][o].set && ps->offs[k][o].op <= applied)
            end = o + 1;
    return end;
}

static void verify_partition(struct sp_rep *r, const uint64_t *bop);
static int open_part(struct sp_rep *r, int wipe);

/* The replicated journal's record files (*.vsr) of group k on node i:
 * their total length, and the path of the newest (empty if none). */
struct vsr_files {
    struct sim_parts *ps;
    unsigned node;
    char dir[600], last[700];
    long total;
};

static int
vsr_file_cb(void *arg, const char *name)
{
    struct vsr_files *v = arg;
    size_t n = strlen(name);
    if (n < 4 || strcmp(name + n - 4, ".vsr") != 0)
        return 0;
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", v->dir, name);
    long sz = sim_sio_size(v->ps->node[v->node].fs, path);
    if (sz > 0)
        v->total += sz;
    if (strcmp(path, v->last) > 0) /* zero-padded start offsets */
        snprintf(v->last, sizeof(v->last), "%s", path);
    return 0;
}

static void
vsr_files_of(struct sim_parts *ps, unsigned i, unsigned k, struct vsr_files *v)
{
    memset(v, 0, sizeof(*v));
    v->ps = ps;
    v->node = i;
    struct part_id id = part_ident_of(k);
    char name[128];
    pdir_name(name, sizeof(name), &id);
    snprintf(v->dir, sizeof(v->dir), "%s/%s", ps->node[i].parts_dir, name);
    (void)sim_sio_list(ps->node[i].fs, v->dir, vsr_file_cb, v);
}

static int
pg_boot(struct sp_rep *r)
{
    struct sim_parts *ps = r->ps;
    struct sim_world *w = ps->w;
    struct vsr_files before;
    vsr_files_of(ps, r->node, r->part, &before);
    int rc = open_part(r, 0);
    if (rc == 1) {
        r->refused = 1;
        ps->m.pg_refused++;
        return 1;
    }
    if (rc < 0)
        return rc;
    struct pgroup_opts po = {
        .cluster = w->cluster,
        .id = part_ident_of(r->part),
        .replica = (uint8_t)r->replica,
        .replica_count = (uint8_t)w->p.n,
        .journal_slots = SP_PG_SLOTS,
        .pipeline_max = 4,
        .body_max = SP_BODY_MAX,
        .seed = prand(ps),
    };
    struct pgroup_env env = {
        .ctx = r, .send = pg_send, .reply = pg_reply, .sync = pg_sync};
    char why[300];
    r->sync_pending = 0;
    r->up = 1; /* the open replays through env (sends) */
    rc = pgroup_open(&po, r->p, &env, &r->g, why, sizeof(why));
    if (rc < 0) {
        r->up = 0;
        r->g = NULL;
        part_abandon(r->p);
        r->p = NULL;
        if (sim_sio_crashed(ps->node[r->node].fs))
            return rc;
        r->refused = 1;
        ps->m.pg_refused++;
        ptrace(ps, "node %u group %u: pgroup_open refused: %s", r->node,
               r->part, why);
        snprintf(r->refuse, sizeof(r->refuse), "pgroup_open: %s", why);
        return 1;
    }
    r->refused = 0;
    r->eng = (struct vs_vsr *)pgroup_engine(r->g);
    r->applied = pgroup_commit(r->g);
    r->boot_dur = pj_head(pgroup_journal(r->g));
    /* the open cut the journal's tail: a torn append, or a damaged last
     * record (then the engine holds a faulty range above the head) */
    struct vsr_files after;
    vsr_files_of(ps, r->node, r->part, &after);
    if (after.total < before.total) {
        struct vs_vsr_info in;
        vsr_info(r->eng, &in);
        if (in.faulty_op > r->boot_dur)
            ps->m.faulty_cut++;
        else
            ps->m.torn_cut++;
        ptrace(ps, "node %u group %u: journal cut %ld bytes (faulty to %llu)",
               r->node, r->part, before.total - after.total,
               (unsigned long long)in.faulty_op);
    }
    /* ops the open's replay committed that no life observed (a commit
     * right before a stop): observed now */
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    for (uint64_t op = 1; op <= r->applied && !w->failed; op++) {
        if (ps->hist[r->part][op].set)
            continue;
        vs_wbuf_reset(&b);
        if (pj_read(pgroup_journal(r->g), op, &b) != 0 ||
            b.len < VS_HEADER_SIZE)
            continue;
        r->mend = committed_end(ps, r->part, op - 1);
        pg_committed(r, op, (const void *)b.data, b.data + VS_HEADER_SIZE,
                     (uint32_t)(b.len - VS_HEADER_SIZE));
    }
    vs_wbuf_fini(&b);
    verify_partition(r, NULL);
    r->mend = committed_end(ps, r->part, r->applied);
    r->lives++;
    ps->m.boots++;
    ptrace(ps, "node %u group %u boots: journal head %llu, commit %llu",
           r->node, r->part, (unsigned long long)pj_head(pgroup_journal(r->g)),
           (unsigned long long)r->applied);
    return 0;
}

static void
pg_request(struct sp_rep *r, const uint8_t *f, uint32_t len, int forwarded,
           const struct vs_hdr_request *req)
{
    struct sim_parts *ps = r->ps;
    const uint8_t *body = f + VS_HEADER_SIZE;
    uint32_t blen = len - VS_HEADER_SIZE;
    int rc;
    if (req->operation == VS_OP_SEND_MESSAGES) {
        uint8_t *copy = vs_xmalloc(blen ? blen : 1);
        memcpy(copy, body, blen);
        enum batch_err be = BATCH_OK;
        rc = pgroup_on_send(r->g, req, copy, blen, ps->w->now * 10000, &be);
        free(copy);
        if (rc == -EINVAL)
            fail(ps, "group %u node %u: a valid batch refused: %s", r->part,
                 r->node, batch_err_str(be));
    } else {
        struct pgroup_offset_op o = {.kind = PART_CONSUMER};
        uint64_t off = 0;
        if (blen == 12) {
            memcpy(&o.id, body, 4);
            memcpy(&off, body + 4, 8);
        }
        o.offset = off;
        rc = pgroup_on_offset(r->g, req, VS_OP_STORE_CONSUMER_OFFSET, &o,
                              ps->w->now * 10000);
    }
    if (rc == -EREMOTE && !forwarded) {
        int p = pgroup_primary(r->g);
        if (p >= 0) {
            ps->m.forwards++;
            net_send(ps, 0, r->node,
                     sim_parts_node_of(ps->w, r->part, (unsigned)p), f, len);
        }
    } else if (rc == -EAGAIN || rc == -EBUSY || rc == -EREMOTE) {
        ps->m.not_ready++;
        status_reply(r, req, 57);
    } else if (rc == -VS_EFATAL) {
        side_fatal(r, "the partition group", rc);
        return;
    } else if (rc == -ESTALE) {
        ps->m.stale++; /* an old copy of an answered request: dropped */
    } else if (rc != 0 && rc != -EALREADY && rc != -EINVAL) {
        fail(ps, "group %u node %u: request refused: %s", r->part, r->node,
             strerror(-rc));
    }
    observe(r);
}

/* -------------------------------------------------------------- boot */

struct jscan {
    struct vs_hdr_prepare *h; /* headers 1..head */
    uint64_t head, cut_at, faulty_op;
    int torn, damaged, interior, has_bad;
    struct vs_hdr_prepare bad;
};

/* Reads the journal file, sector by sector (an unreadable sector reads
 * as zeros: the records over it fail their checksums). */
static int
j_load(struct vs_sio *io, int fd, uint8_t **out, size_t *len)
{
    size_t cap = 0, n = 0;
    uint8_t *b = NULL;
    for (;;) {
        if (n + 512 > cap) {
            cap = cap ? 2 * cap : 8192;
            b = vs_xrealloc(b, cap);
        }
        size_t got = 0;
        int rc = sio_pread_all(io, fd, b + n, 512, (off_t)n, &got);
        if (rc == -ENODATA) {
            n += got;
            break;
        }
        if (rc < 0)
            memset(b + n, 0, 512);
        n += 512;
    }
    *out = b;
    *len = n;
    return 0;
}

static void
j_scan(const uint8_t *b, size_t len, struct jscan *s)
{
    memset(s, 0, sizeof(*s));
    s->h = vs_xcalloc(SP_OPS + 1, sizeof(*s->h));
    uint64_t pos = 0;
    struct vs_u128 parent = {0, 0};
    while (pos < len) {
        struct vs_hdr_prepare h;
        if (len - pos < VS_HEADER_SIZE) {
            s->torn = 1;
            break;
        }
        memcpy(&h, b + pos, sizeof(h));
        uint64_t want = s->head + 1;
        int hdr_ok = vs_prepare_verify_identity(&h) && h.op == want &&
                     h.f.size >= VS_HEADER_SIZE &&
                     h.f.size <= VS_HEADER_SIZE + SP_BODY_MAX &&
                     vs_u128_eq(h.parent, parent) && want <= SP_OPS;
        if (hdr_ok && pos + h.f.size > len) {
            s->torn = 1; /* the body was cut short */
            break;
        }
        int body_ok =
            hdr_ok && vs_body_verify((const void *)&h, b + pos + VS_HEADER_SIZE,
                                     h.f.size - VS_HEADER_SIZE);
        if (!body_ok) {
            /* damage: the ops the bytes from here may hold are faulty:
             * this one, and every later one whose header still verifies
             * (records are 8-aligned) */
            uint64_t top = want;
            for (uint64_t q = pad8(pos + 8); q + VS_HEADER_SIZE <= len;
                 q += 8) {
                struct vs_hdr_prepare x;
                memcpy(&x, b + q, sizeof(x));
                if (vs_prepare_verify_identity(&x) && x.op > top &&
                    x.op < want + SP_OPS)
                    top = x.op;
            }
            if (top > SP_OPS)
                top = SP_OPS;
            s->damaged = 1;
            s->interior = pos + (hdr_ok ? pad8(h.f.size) : 0) < len;
            s->faulty_op = top;
            if (hdr_ok) {
                s->has_bad = 1;
                s->bad = h;
            }
            break;
        }
        s->h[want] = h;
        s->head = want;
        parent = h.f.checksum;
        pos += pad8(h.f.size);
    }
    s->cut_at = pos;
}

/* The applied op of the partition: the committed batch ending at its
 * next offset (0: none); -1 if the partition holds what the journal
 * does not explain (it is rebuilt). Fills the dedup table as of it. */
static int64_t
applied_of(struct sp_rep *r, uint64_t next, uint64_t limit, uint64_t *bop)
{
    struct vs_wbuf b;
    vs_wbuf_init(&b);
    uint64_t end = 0;
    int64_t at = next == 0 ? 0 : -1;
    r->nded = 0;
    struct sp_ded saved[SP_CLIENTS];
    memset(saved, 0, sizeof(saved));
    unsigned nsaved = 0;
    for (uint64_t op = 1; op <= limit && end < next; op++) {
        if (j_read(r, op, &b) != 0)
            break;
        const struct vs_hdr_prepare *h = (const void *)b.data;
        uint8_t out[16];
        uint32_t out_len, adv;
        struct sp_ded *d = ded_find(r, h->client, 0);
        if (d != NULL && h->request <= d->request)
            continue;
        model_output(h, b.data + VS_HEADER_SIZE, h->f.size - VS_HEADER_SIZE,
                     end, out, &out_len, &adv);
        d = ded_find(r, h->client, 1);
        if (d != NULL && !vs_u128_is_zero(h->client)) {
            d->request = h->request;
            memcpy(d->out, out, out_len);
            d->out_len = out_len;
        }
        if (adv > 0 && end < SP_OFFS)
            bop[end] = op;
        end += adv;
        if (adv > 0 && end == next) {
            at = (int64_t)op;
            memcpy(saved, r->ded, sizeof(saved));
            nsaved = r->nded;
        }
    }
    vs_wbuf_fini(&b);
    memcpy(r->ded, saved, sizeof(saved));
    r->nded = at > 0 ? nsaved : 0;
    return at;
}

/* Every batch the partition holds at boot is the one committed at its
 * offset (registered here if its commit stopped after the append, in
 * the life before the crash). */
static void
verify_partition(struct sp_rep *r, const uint64_t *bop)
{
    struct sim_parts *ps = r->ps;
    struct vs_wbuf out;
    vs_wbuf_init(&out);
    struct part_poll_result res;
    int rc =
        part_poll(r->p, PART_POLL_OFFSET, 0, UINT32_MAX, SIZE_MAX, &out, &res);
    for (size_t pos = 0; rc == 0 && pos + BATCH_HEADER_SIZE <= out.len;) {
        const uint8_t *b = out.data + pos;
        uint64_t base = batch_base_offset(b), bl = batch_length(b);
        uint32_t n = batch_count(b);
        uint64_t x = vs_xxh3_64(b, bl);
        uint64_t op = bop != NULL && base < SP_OFFS ? bop[base] : 0;
        for (uint32_t i = 0; i < n && base + i < SP_OFFS; i++) {
            struct sp_off *f = &ps->offs[r->part][base + i];
            if (f->set &&
                ((op != 0 && f->op != 0 && f->op != op) || f->hash != x))
                fail(ps,
                     "offsets: node %u group %u recovered offset %llu "
                     "holding other bytes than committed (op %llu, "
                     "committed op %llu, %llu bytes, count %u)",
                     r->node, r->part, (unsigned long long)(base + i),
                     (unsigned long long)op, (unsigned long long)f->op,
                     (unsigned long long)bl, n);
            if (!f->set || op != 0)
                f->op = op;
            f->set = 1;
            f->hash = x;
            f->count = i == 0 ? n : 0;
        }
        if (base + n > ps->end[r->part])
            ps->end[r->part] = base + n;
        pos += bl;
    }
    vs_wbuf_fini(&out);
}

static int
open_part(struct sp_rep *r, int wipe)
{
    struct sim_parts *ps = r->ps;
    struct sp_node *nd = &ps->node[r->node];
    struct vs_sio *io = sim_sio_io(nd->fs);
    struct part_id id = part_ident_of(r->part);
    char name[128], dir[600];
    pdir_name(name, sizeof(name), &id);
    snprintf(dir, sizeof(dir), "%s/%s", nd->parts_dir, name);
    /* a partition state transfer install a crash interrupted: the old or
     * the new directory, as the data shard's open does (parts.c) */
    int prc = pinstall_recover(io, nd->parts_dir, &id, NULL);
    if (prc < 0)
        return prc;
    if (wipe) {
        int rc = pdir_rmtree(io, dir);
        if (rc == 0)
            rc = sio_dir_fsync(io, nd->parts_dir);
        if (rc < 0)
            return rc;
        ps->m.part_rebuilt++;
    }
    struct part_opts o;
    part_opts_default(&o);
    o.segment_size = 16 * 1024;
    /* a replicated partition's damaged last batch is cut and repaired
     * (pjournal.h): the journal decides, not the partition's open */
    o.cut_damaged_tail = !ps->o.local_binding;
    /* the group's window, as the data shard's open sets it (parts.c) */
    if (!ps->o.local_binding)
        o.unsynced_max = (uint64_t)SP_PG_SLOTS * SP_BODY_MAX;
    struct part_verdict v;
    int rc = part_open(io, nd->parts_dir, &id, &o, 1, 0, &r->p, &v);
    if (rc == -EBADMSG) {
        ptrace(ps, "node %u group %u: partition refused: %s", r->node, r->part,
               v.msg);
        snprintf(r->refuse, sizeof(r->refuse), "part_open: %s", v.msg);
        ps->m.part_refused++;
        return 1;
    }
    if (rc < 0)
        return rc;
    if (!ps->o.no_offsets_fsync) {
        char off[700];
        snprintf(off, sizeof(off), "%s/offsets", dir);
        rc = sio_dir_fsync(io, off);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int
rep_boot(struct sp_rep *r)
{
    if (!r->ps->o.local_binding)
        return pg_boot(r);
    struct sim_parts *ps = r->ps;
    struct sim_world *w = ps->w;
    struct sp_node *nd = &ps->node[r->node];
    struct vs_sio *io = sim_sio_io(nd->fs);
    struct jscan s = {0};
    uint8_t *jb = NULL;
    size_t jlen = 0;
    int rc = 0;
    snprintf(r->jpath, sizeof(r->jpath), "%s/p%u.journal", nd->root, r->part);
    snprintf(r->spath, sizeof(r->spath), "%s/p%u.state", nd->root, r->part);
    r->jfd = sio_open(io, r->jpath, O_CREAT | O_RDWR, 0600);
    r->sfd = r->jfd < 0 ? -1 : sio_open(io, r->spath, O_CREAT | O_RDWR, 0600);
    if (r->jfd < 0 || r->sfd < 0) {
        rc = r->jfd < 0 ? r->jfd : r->sfd;
        goto fail;
    }
    if ((rc = sio_dir_fsync(io, nd->root)) < 0)
        goto fail;
    /* the state: the newer valid slot */
    uint8_t sb[2 * SP_STATE_LEN];
    memset(sb, 0, sizeof(sb));
    size_t got = 0;
    (void)sio_pread_all(io, r->sfd, sb, sizeof(sb), 0, &got);
    memset(&r->sb, 0, sizeof(r->sb));
    r->sb_seq = 0;
    for (int i = 0; i < 2; i++) {
        struct vs_vsr_persist p;
        uint64_t seq;
        if (state_decode(sb + i * SP_STATE_LEN, &p, &seq) && seq > r->sb_seq) {
            r->sb = p;
            r->sb_seq = seq;
        }
    }
    /* the journal */
    j_load(io, r->jfd, &jb, &jlen);
    j_scan(jb, jlen, &s);
    r->jhead = s.head;
    r->jend = s.cut_at;
    uint64_t pos = 0;
    for (uint64_t op = 1; op <= s.head; op++) {
        r->joff[op] = pos;
        pos += pad8(s.h[op].f.size);
    }
    r->joff[s.head + 1] = pos;
    if (s.cut_at < jlen || s.torn || s.damaged) {
        if (s.damaged) {
            ps->m.faulty_cut++;
            ps->rot_reps[r->part] |= 1u << r->node; /* counts as damage */
        } else
            ps->m.torn_cut++;
        if (s.interior)
            ps->m.interior_cut++;
        if ((rc = sio_ftruncate(io, r->jfd, (off_t)s.cut_at, r->jpath)) < 0 ||
            (rc = sio_fsync(io, r->jfd, r->jpath)) < 0)
            goto fail;
        ptrace(ps,
               "node %u group %u: journal cut at op %llu (%s, faulty to "
               "%llu)",
               r->node, r->part, (unsigned long long)s.head + 1,
               s.damaged ? "damaged" : "torn", (unsigned long long)s.faulty_op);
    }
    r->jdur = r->jhead;
    if (w->p.n == 1)
        s.faulty_op = 0; /* one replica: the cut tail was never acked */
    /* the partition, and the op it holds */
    int wipe = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = open_part(r, wipe);
        if (rc < 0)
            goto fail;
        if (rc == 1) {
            wipe = 1;
            continue;
        }
        struct part_stats st;
        part_stats(r->p, &st);
        uint64_t *bop = vs_xcalloc(SP_OFFS, sizeof(*bop));
        int64_t at = applied_of(r, st.next_offset, r->jhead, bop);
        if (at >= 0)
            verify_partition(r, bop);
        free(bop);
        if (at >= 0) {
            r->applied = (uint64_t)at;
            r->mend = st.next_offset;
            ptrace(ps,
                   "node %u group %u boots: journal head %llu, partition "
                   "next offset %llu = op %llu applied",
                   r->node, r->part, (unsigned long long)r->jhead,
                   (unsigned long long)st.next_offset,
                   (unsigned long long)r->applied);
            break;
        }
        ptrace(ps,
               "node %u group %u: partition at offset %llu beyond the "
               "journal: rebuilt",
               r->node, r->part, (unsigned long long)st.next_offset);
        part_abandon(r->p);
        r->p = NULL;
        wipe = 1;
    }
    if (r->p == NULL) {
        rc = -EIO;
        goto fail;
    }
    /* the engine */
    struct vs_vsr_options o;
    memset(&o, 0, sizeof(o));
    o.cluster = w->cluster;
    o.group = ps->gid[r->part];
    o.replica = (uint8_t)r->replica;
    o.replica_count = (uint8_t)w->p.n;
    o.durable = r->sb;
    if (o.durable.commit_max < r->applied)
        o.durable.commit_max = r->applied;
    o.headers = s.head > 0 ? &s.h[1] : NULL;
    o.header_count = s.head;
    o.commit_min = r->applied;
    o.recovering =
        w->p.n > 1 && (s.head > 0 || r->applied > 0 || r->sb.view > 0 ||
                       r->sb.commit_max > 0 || s.faulty_op > 0 ||
                       r->sb.faulty_op > 0 || r->sb_seq > 0);
    if (o.recovering) {
        o.incarnation.lo = prand(ps) | 1;
        o.incarnation.hi = prand(ps);
    }
    if (s.faulty_op > s.head && w->p.n > 1) {
        o.faulty_op = s.faulty_op;
        o.faulty_header = s.has_bad ? &s.bad : NULL;
    }
    o.journal_slots = SP_OPS;
    o.pipeline_max = 4;
    o.body_max = SP_BODY_MAX;
    o.seed = prand(ps);
    char err[200];
    rc = vsr_create(&o, &r->eng, err, sizeof(err));
    if (rc != 0) {
        fail(ps, "group %u node %u: engine refused the recovered state: %s",
             r->part, r->node, err);
        goto fail;
    }
    r->up = 1;
    r->lives++;
    r->nio = 0;
    ps->m.boots++;
    free(jb);
    free(s.h);
    drain(r);
    return 0;
fail:
    free(jb);
    free(s.h);
    if (r->p != NULL)
        part_abandon(r->p);
    r->p = NULL;
    return rc < 0 ? rc : -EIO;
}

static void
rep_stop(struct sp_rep *r)
{
    struct vs_sio *io = sim_sio_io(r->ps->node[r->node].fs);
    if (r->eng != NULL) {
        const struct vs_vsr_stats *st = vsr_stats(r->eng);
        r->acc.view_changes += st->view_changes;
        r->acc.repairs += st->repairs;
        r->acc.truncations += st->truncations;
        r->acc.faulty_repaired += st->faulty_repaired;
        r->acc.divergences += st->divergences;
        for (unsigned v = 0; v < VSR_VERDICT_COUNT; v++)
            r->verdicts[v] += st->verdicts[v];
        if (r->g != NULL) {
            struct pgroup_stats gs;
            pgroup_stats(r->g, &gs);
            r->ps->m.pg_duplicates += gs.duplicates;
            pgroup_close(r->g); /* frees its engine */
            r->g = NULL;
        } else {
            vsr_destroy(r->eng);
        }
        r->eng = NULL;
    }
    if (r->sync_pending)
        sync_close(r);
    r->sync_pending = 0;
    if (r->p != NULL)
        part_abandon(r->p);
    r->p = NULL;
    if (r->jfd >= 0)
        sio_close(io, r->jfd);
    if (r->sfd >= 0)
        sio_close(io, r->sfd);
    r->jfd = r->sfd = -1;
    r->up = 0;
    r->nio = 0;
}

/* A storage error inside the side: every group of the node stops (the
 * data shard exits) and comes back later. */
static void
side_fatal(struct sp_rep *r, const char *what, int rc)
{
    struct sim_parts *ps = r->ps;
    struct sp_node *nd = &ps->node[r->node];
    if (!sim_sio_crashed(nd->fs))
        fail(ps, "node %u group %u: %s failed: %s", r->node, r->part, what,
             sio_strerror(rc));
    nd->fatal = 1;
    r->up = 0;
}

static void
side_crash(struct sim_parts *ps, unsigned i)
{
    struct sp_node *nd = &ps->node[i];
    for (unsigned k = 0; k < ps->o.partitions; k++) {
        /* an unsynced append may come back full length but torn (a
         * sector hole): damage that counts against the group's f */
        if (ps->rep[i][k].up && ps->rep[i][k].jhead > ps->rep[i][k].jdur)
            ps->rot_reps[k] |= 1u << i;
        rep_stop(&ps->rep[i][k]);
    }
    if (sim_sio_crash(nd->fs) != 0)
        fail(ps, "the simulated file system of node %u failed", i);
    nd->up = 0;
    nd->fatal = 0;
    ps->m.side_crashes++;
}

static void
side_boot(struct sim_parts *ps, unsigned i)
{
    struct sp_node *nd = &ps->node[i];
    for (unsigned k = 0; k < ps->o.partitions && !ps->w->failed; k++) {
        int rc = rep_boot(&ps->rep[i][k]);
        if (rc == 1)
            continue; /* refused: this group stays unserved on the node */
        if (rc == 0)
            ps->rep[i][k].nrot = 0; /* cut, repaired or rewritten now */
        if (rc < 0) {
            if (!sim_sio_crashed(nd->fs) && !ps->w->failed)
                fail(ps, "node %u group %u does not boot: %s", i, k,
                     sio_strerror(rc));
            side_crash(ps, i);
            return;
        }
    }
    nd->up = 1;
    nd->boots_seen = ps->w->node[i].boots;
}

/* Follows the node's life: down with it, up with it. */
static void
follow(struct sim_parts *ps)
{
    struct sim_world *w = ps->w;
    for (unsigned i = 0; i < w->p.n && !w->failed; i++) {
        struct sp_node *nd = &ps->node[i];
        int node_up = w->node[i].up;
        if (nd->fatal) {
            ps->m.side_fatal++;
            side_crash(ps, i);
            nd->back_at = w->now + 20 + prand(ps) % 200;
            continue;
        }
        if (nd->up && (!node_up || w->node[i].boots != nd->boots_seen))
            side_crash(ps, i);
        if (!nd->up && node_up && w->now >= nd->back_at)
            side_boot(ps, i);
    }
}

/* ---------------------------------------------------------- delivery */

static int
msg_cmp(const void *a, const void *b)
{
    const struct sp_msg *x = a, *y = b;
    if (x->due != y->due)
        return x->due < y->due ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void client_receive(struct sim_parts *ps, unsigned i, const uint8_t *f,
                           uint32_t len);
static void rep_request(struct sp_rep *r, const uint8_t *f, uint32_t len,
                        int forwarded);

static void
deliver(struct sim_parts *ps)
{
    if (ps->nnet == 0)
        return;
    qsort(ps->net, ps->nnet, sizeof(*ps->net), msg_cmp);
    size_t k = 0;
    while (k < ps->nnet && ps->net[k].due <= ps->w->now)
        k++;
    if (k == 0)
        return;
    struct sp_msg *due = vs_xmalloc(k * sizeof(*due));
    memcpy(due, ps->net, k * sizeof(*due));
    memmove(ps->net, ps->net + k, (ps->nnet - k) * sizeof(*ps->net));
    ps->nnet -= k;
    for (size_t i = 0; i < k; i++) {
        struct sp_msg *m = &due[i];
        if (!ps->w->failed) {
            if (m->to_client) {
                client_receive(ps, m->to, m->frame, m->len);
            } else {
                const struct vs_header *h = (const void *)m->frame;
                uint64_t g = h->f.command == VS_CMD_REQUEST
                                 ? 0
                                 : frame_group(m->frame, m->len);
                unsigned part;
                if (h->f.command == VS_CMD_REQUEST) {
                    uint32_t pk;
                    memcpy(&pk, ((const struct vs_hdr_request *)h)->reserved,
                           4);
                    part = pk;
                } else {
                    part = SIM_PARTS_MAX;
                    for (unsigned q = 0; q < ps->o.partitions; q++)
                        if (ps->gid[q] == g)
                            part = q;
                }
                if (part < ps->o.partitions && m->to < ps->w->p.n) {
                    struct sp_rep *r = &ps->rep[m->to][part];
                    if (r->up && h->f.command == VS_CMD_REQUEST)
                        rep_request(r, m->frame, m->len, m->from < SIM_N_MAX);
                    else if (r->up && r->g != NULL) {
                        (void)pgroup_on_message(r->g, m->frame, m->len);
                        observe(r);
                    } else if (r->up) {
                        (void)vsr_on_message(r->eng, m->frame, m->len);
                        drain(r);
                    }
                }
            }
        }
        free(m->frame);
    }
    free(due);
}

/* ---------------------------------------------------------- requests */

static void
status_reply(struct sp_rep *r, const struct vs_hdr_request *q, uint32_t st)
{
    struct vs_hdr_reply y;
    memset(&y, 0, sizeof(y));
    y.f.cluster = r->ps->w->cluster;
    y.f.size = VS_HEADER_SIZE;
    y.f.command = VS_CMD_REPLY;
    y.f.replica = (uint8_t)r->node;
    y.client = q->client;
    y.request = q->request;
    y.operation = q->operation;
    y.status = st;
    for (unsigned i = 0; i < r->ps->o.clients; i++)
        if (vs_u128_eq(r->ps->c[i].id, q->client))
            net_send(r->ps, 1, r->node, i, &y, sizeof(y));
}

static void
rep_request(struct sp_rep *r, const uint8_t *f, uint32_t len, int forwarded)
{
    struct sim_parts *ps = r->ps;
    const struct vs_hdr_request *q = (const void *)f;
    if (r->g != NULL) {
        /* the runtime's part: the request checksum stamp */
        struct vs_hdr_request req = *q;
        req.user_id = 1;
        req.request_checksum =
            vs_checksum(f + VS_HEADER_SIZE, len - VS_HEADER_SIZE);
        pg_request(r, f, len, forwarded, &req);
        return;
    }
    struct sp_ded *d = ded_find(r, q->client, 0);
    if (d != NULL && q->request <= d->request) {
        if (q->request == d->request) { /* the committed answer again */
            uint8_t fr[VS_HEADER_SIZE + 16];
            struct vs_hdr_reply *y = (void *)fr;
            memset(y, 0, sizeof(*y));
            y->f.cluster = ps->w->cluster;
            y->f.size = VS_HEADER_SIZE + d->out_len;
            y->f.command = VS_CMD_REPLY;
            y->f.replica = (uint8_t)r->node;
            y->client = q->client;
            y->request = q->request;
            y->operation = q->operation;
            memcpy(fr + VS_HEADER_SIZE, d->out, d->out_len);
            for (unsigned i = 0; i < ps->o.clients; i++)
                if (vs_u128_eq(ps->c[i].id, q->client))
                    net_send(ps, 1, r->node, i, fr, y->f.size);
            ps->m.dedup_hits++;
        }
        return;
    }
    struct vs_hdr_request req = *q;
    req.user_id = 1;
    req.request_checksum =
        vs_checksum(f + VS_HEADER_SIZE, len - VS_HEADER_SIZE);
    int rc = vsr_on_request(r->eng, &req, f + VS_HEADER_SIZE,
                            len - VS_HEADER_SIZE, ps->w->now * 10000);
    if (rc == -EREMOTE && !forwarded) {
        int p = vsr_primary(r->eng);
        if (p >= 0) {
            ps->m.forwards++;
            net_send(ps, 0, r->node,
                     sim_parts_node_of(ps->w, r->part, (unsigned)p), f, len);
        }
    } else if (rc == -EAGAIN || rc == -EBUSY || rc == -ENOSPC ||
               rc == -EREMOTE) {
        ps->m.not_ready++;
        ptrace(ps, "node %u group %u: request %llu not taken: %s", r->node,
               r->part, (unsigned long long)q->request, strerror(-rc));
        status_reply(r, q, 57);
    } else if (rc != 0 && rc != -EALREADY) {
        fail(ps, "group %u node %u: request refused: %s", r->part, r->node,
             strerror(-rc));
    }
    drain(r);
}

/* ----------------------------------------------------------- clients */

static void
client_build(struct sim_parts *ps, struct sp_client *c)
{
    free(c->body);
    c->body = NULL;
    c->request++;
    c->busy = 1;
    c->first_sent = ps->w->now;
    uint64_t end = ps->end[c->part];
    if (end > 0 && pchance(ps, 1, 4)) {
        c->operation = VS_OP_STORE_CONSUMER_OFFSET;
        c->len = 12;
        c->body = vs_xmalloc(12);
        uint32_t id = (uint32_t)(prand(ps) % SP_CONSUMERS) + 1;
        /* an offset beyond the committed log (refused, InvalidOffset)
         * only when asked (sim_parts_opts.bad_offsets) */
        uint64_t off =
            ps->o.bad_offsets ? prand(ps) % (end + 2) : prand(ps) % end;
        memcpy(c->body, &id, 4);
        memcpy(c->body + 4, &off, 8);
        return;
    }
    c->operation = VS_OP_SEND_MESSAGES;
    uint32_t n = 1 + (uint32_t)(prand(ps) % 3);
    uint8_t pay[3][200];
    const uint8_t *pl[3];
    uint32_t plen[3];
    for (uint32_t i = 0; i < n; i++) {
        plen[i] = 1 + (uint32_t)(prand(ps) % 200);
        for (uint32_t k = 0; k < plen[i]; k++)
            pay[i][k] = (uint8_t)(c->request * 31 + i * 7 + k);
        pl[i] = pay[i];
    }
    uint8_t buf[BATCH_HEADER_SIZE + 3 * (BATCH_FRAME_SIZE + 200)];
    size_t len = batch_build(buf, sizeof(buf), ps->w->now, n, pl, plen, NULL,
                             NULL, NULL);
    VS_ASSERT(len > 0);
    c->body = vs_xmalloc(len);
    memcpy(c->body, buf, len);
    c->len = (uint32_t)len;
}

static void
client_send(struct sim_parts *ps, unsigned i)
{
    struct sp_client *c = &ps->c[i];
    uint32_t size = VS_HEADER_SIZE + c->len;
    uint8_t *f = vs_xcalloc(1, size);
    struct vs_hdr_request *q = (void *)f;
    q->f.cluster = ps->w->cluster;
    q->f.size = size;
    q->f.command = VS_CMD_REQUEST;
    q->client = c->id;
    q->request = c->request;
    q->operation = c->operation;
    q->session = c->transport; /* never used for deduplication */
    uint32_t pk = c->part;
    memcpy(q->reserved, &pk, 4);
    memcpy(f + VS_HEADER_SIZE, c->body, c->len);
    net_send(ps, 0, SP_FROM_CL + i, c->target, f, size);
    free(f);
    c->retry_at = ps->w->now + 60 + prand(ps) % 60;
}

static void
client_receive(struct sim_parts *ps, unsigned i, const uint8_t *f, uint32_t len)
{
    struct sp_client *c = &ps->c[i];
    const struct vs_hdr_reply *y = (const void *)f;
    if (!c->busy || y->request != c->request || len < VS_HEADER_SIZE)
        return;
    if (y->status == VS_E_TRANSIENT_NOT_COMMITTED ||
        (ps->o.local_binding && y->status != 0)) {
        /* not ready, or cut by a view change: elsewhere, later */
        c->target = (unsigned)(prand(ps) % ps->w->p.n);
        c->retry_at = ps->w->now + 20 + prand(ps) % 50;
        return;
    }
    /* the committed op of this request */
    uint64_t op = 0;
    struct sp_hist *h = ps->hist[c->part];
    for (uint64_t k = SP_OPS; k >= 1; k--)
        if (h[k].set && vs_u128_eq(h[k].client, c->id) &&
            h[k].request == c->request) {
            op = k;
            break;
        }
    if (op == 0 && !ps->o.local_binding && y->op > 0 && y->op <= SP_OPS) {
        /* committed where it could not be observed (the node stopped on
         * a storage error right after, its answer already sent): checked
         * when a replica commits the op, and at the end */
        if (ps->npend < SP_PENDING) {
            struct sp_pend *q = &ps->pend[ps->npend++];
            q->part = c->part;
            q->op = y->op;
            q->client = c->id;
            q->request = c->request;
            q->operation = c->operation;
            q->status = y->status;
            q->base = len >= VS_HEADER_SIZE + 24
                          ? vs_load_u64(f + VS_HEADER_SIZE + 16)
                          : 0;
        }
        ps->m.acked++;
        c->busy = 0;
        c->done++;
        return;
    }
    if (op == 0) {
        fail(ps,
             "client %u got an answer to request %llu that no replica "
             "committed",
             i, (unsigned long long)c->request);
        return;
    }
    /* the first committed execution defines the answer */
    for (uint64_t k = 1; k < op; k++)
        if (h[k].set && vs_u128_eq(h[k].client, c->id) &&
            h[k].request == c->request) {
            op = k;
            break;
        }
    uint32_t blen = len - VS_HEADER_SIZE;
    if (!ps->o.local_binding) {
        /* the production binding's answer: a send's confirmation with
         * its base offset, an offset op's result code */
        const uint8_t *b = f + VS_HEADER_SIZE;
        int ok = h[op].model_set;
        if (ok && c->operation == VS_OP_SEND_MESSAGES)
            ok = y->status == 0 && blen == 24 &&
                 vs_load_u64(b + 16) == h[op].base;
        else if (ok)
            ok = y->status == h[op].code;
        if (!ok) {
            fail(ps,
                 "client %u: the answer of request %llu (op %llu, from "
                 "node %u: status %u, %u bytes) is not what the committed "
                 "log says (%s base %llu, code %u)",
                 i, (unsigned long long)c->request, (unsigned long long)op,
                 y->f.replica, y->status, blen,
                 h[op].model_set ? "" : "not observed,",
                 (unsigned long long)h[op].base, h[op].code);
            return;
        }
    } else if (!h[op].out_set || blen != h[op].out_len ||
               memcmp(f + VS_HEADER_SIZE, h[op].out, blen) != 0) {
        fail(ps,
             "client %u: the answer of request %llu (op %llu, from node "
             "%u, %u bytes) is not its committed output (%s%u bytes)",
             i, (unsigned long long)c->request, (unsigned long long)op,
             y->f.replica, blen, h[op].out_set ? "" : "unset, ", h[op].out_len);
        return;
    }
    h[op].acked = 1;
    ps->m.acked++;
    if (c->operation == VS_OP_SEND_MESSAGES)
        ps->m.sends++;
    else
        ps->m.stores++;
    c->busy = 0;
    c->done++;
}

/* A poll of a random batch from a random live replica: only committed
 * batches, each the very bytes committed at its offset. */
static void
poll_one(struct sim_parts *ps)
{
    unsigned k = (unsigned)(prand(ps) % ps->o.partitions);
    unsigned i = (unsigned)(prand(ps) % ps->w->p.n);
    struct sp_rep *r = &ps->rep[i][k];
    if (!r->up || ps->end[k] == 0)
        return;
    uint64_t start = prand(ps) % ps->end[k];
    while (start > 0 && (!ps->offs[k][start].set || !ps->offs[k][start].count))
        start--;
    struct vs_wbuf out;
    vs_wbuf_init(&out);
    struct part_poll_result res;
    int rc = part_poll(r->p, PART_POLL_OFFSET, start, 8, 1u << 20, &out, &res);
    ps->m.polls++;
    if (rc < 0) {
        if (rc != -EBADMSG && rc != -EIO)
            fail(ps, "poll of group %u on node %u failed: %s", k, i,
                 strerror(-rc));
        vs_wbuf_fini(&out);
        return;
    }
    size_t pos = 0;
    while (pos + BATCH_HEADER_SIZE <= out.len) {
        const uint8_t *b = out.data + pos;
        uint64_t bl = batch_length(b), base = batch_base_offset(b);
        if (bl < BATCH_HEADER_SIZE || pos + bl > out.len) {
            fail(ps, "poll of group %u on node %u: malformed reply", k, i);
            break;
        }
        const struct sp_off *f = base < SP_OFFS ? &ps->offs[k][base] : NULL;
        if (f == NULL || !f->set || f->op > r->applied)
            fail(ps,
                 "poll of group %u on node %u returned offset %llu that "
                 "is not committed there (op %llu, applied %llu)",
                 k, i, (unsigned long long)base,
                 (unsigned long long)(f && f->set ? f->op : 0),
                 (unsigned long long)r->applied);
        else if (f->count == batch_count(b) && f->hash != vs_xxh3_64(b, bl))
            fail(ps,
                 "poll of group %u on node %u: offset %llu holds other "
                 "bytes than committed",
                 k, i, (unsigned long long)base);
        ps->m.polled_batches++;
        pos += bl;
    }
    vs_wbuf_fini(&out);
}

static void
clients_tick(struct sim_parts *ps)
{
    struct sim_world *w = ps->w;
    for (unsigned i = 0; i < ps->o.clients; i++) {
        struct sp_client *c = &ps->c[i];
        if (!c->busy) {
            if (!w->faults_on && w->now > w->p.ticks)
                continue; /* the liveness phase: finish, do not start */
            int full = ps->hist[c->part][SP_OPS_CAP].set;
            for (unsigned k = 0; k < w->p.n; k++)
                full |= ps->rep[k][c->part].up &&
                        vsr_op(ps->rep[k][c->part].eng) >= SP_OPS_CAP;
            if (full)
                continue; /* the journal window (no checkpoints here) */
            if (!pchance(ps, 1, 8))
                continue;
            client_build(ps, c);
            client_send(ps, i);
            continue;
        }
        if (w->now >= c->retry_at) {
            if (pchance(ps, 1, 2))
                c->target = (unsigned)(prand(ps) % w->p.n);
            client_send(ps, i);
        }
    }
}

/* ------------------------------------------------------------ faults */

/* tail: within the file's last 64 bytes (its last record) */
static int
rot_file(struct sim_parts *ps, unsigned i, unsigned k, const char *path,
         int latent, int tail)
{
    struct sp_node *nd = &ps->node[i];
    long sz = sim_sio_size(nd->fs, path);
    if (sz <= 0)
        return 0;
    uint64_t off = prand(ps) % (uint64_t)sz;
    if (tail && sz > 64)
        off = (uint64_t)sz - 1 - off % 64;
    uint8_t mask = latent ? 0 : (uint8_t)(1u << (prand(ps) % 8));
    int rc = latent ? sim_sio_latent(nd->fs, path, off)
                    : sim_sio_flip(nd->fs, path, off, mask);
    struct sp_rep *r = &ps->rep[i][k];
    if (rc == 1 && r->nrot < SP_ROT_MAX) {
        struct sp_rot *q = &r->rot[r->nrot++];
        snprintf(q->path, sizeof(q->path), "%s", path);
        q->off = off;
        q->mask = mask;
    } else if (rc == 1) {
        r->nrot = SP_ROT_MAX + 1; /* beyond what is remembered */
    }
    return rc;
}

static void
faults_tick(struct sim_parts *ps)
{
    struct sim_world *w = ps->w;
    unsigned f = (w->p.n - 1) / 2;
    for (unsigned i = 0; i < w->p.n; i++) {
        struct sp_node *nd = &ps->node[i];
        if (nd->up && w->f.torn && pchance(ps, w->p.crash_pm, 300000))
            sim_sio_arm_crash(nd->fs, 1 + prand(ps) % 12);
        if (nd->up || w->node[i].up || f == 0)
            continue;
        if (!(w->f.bitrot || w->f.latent) || !pchance(ps, 1, 2000))
            continue;
        unsigned k = (unsigned)(prand(ps) % ps->o.partitions);
        if (!(nd->rotted & (1u << k)) &&
            (unsigned)__builtin_popcount(ps->rot_reps[k]) >= f)
            continue; /* at most f replicas of a group carry damage (a
                       * torn append cut as damaged counts too) */
        char path[700];
        int latent = w->f.latent && pchance(ps, 1, 3);
        int tail = 0;
        if (pchance(ps, 1, 2) && !ps->o.local_binding) {
            /* the replicated journal's newest record file, half the time
             * its last record (a damaged tail: cut, faulty, repaired) */
            struct vsr_files v;
            vsr_files_of(ps, i, k, &v);
            snprintf(path, sizeof(path), "%s", v.last);
            tail = pchance(ps, 1, 2);
        } else if (ps->o.local_binding && pchance(ps, 1, 2)) {
            snprintf(path, sizeof(path), "%s/p%u.journal", nd->root, k);
        } else {
            struct part_id id = part_ident_of(k);
            char name[128];
            pdir_name(name, sizeof(name), &id);
            snprintf(path, sizeof(path), "%s/%s/%020llu.log", nd->parts_dir,
                     name, 0ull);
        }
        if (path[0] != '\0' && rot_file(ps, i, k, path, latent, tail) == 1) {
            nd->rotted |= 1u << k;
            ps->rot_reps[k] |= 1u << i;
            if (latent)
                ps->m.latent++;
            else
                ps->m.flips++;
            ptrace(ps, "node %u group %u: %s in %s", i, k,
                   latent ? "latent sector" : "bit flip", path);
        }
    }
}

/* A fetched partition is staged (pgroup_install_pending): as the data
 * shard's runtime does (pgroups.c, parts.c), the group and the partition
 * close, the directories swap and both open again (the engine recovers at
 * the installed checkpoint and repairs above it). */
static void
pg_reinstall(struct sp_rep *r)
{
    struct sim_parts *ps = r->ps;
    struct sp_node *nd = &ps->node[r->node];
    struct part_id id = part_ident_of(r->part);
    rep_stop(r);
    int rc = pinstall_swap(sim_sio_io(nd->fs), nd->parts_dir, &id);
    if (rc < 0) {
        side_fatal(r, "the state transfer install", rc);
        return;
    }
    ps->m.pg_installs++;
    ptrace(ps, "node %u group %u: transferred partition installed", r->node,
           r->part);
    rc = pg_boot(r);
    if (rc < 0)
        side_fatal(r, "the boot after an install", rc);
}

/* ------------------------------------------------------------- world */

void
sim_parts_step(struct sim_world *w)
{
    struct sim_parts *ps = parts_of(w);
    if (ps == NULL || w->failed)
        return;
    follow(ps);
    deliver(ps);
    for (unsigned i = 0; i < w->p.n && !w->failed; i++)
        for (unsigned k = 0; k < ps->o.partitions && !w->failed; k++) {
            struct sp_rep *r = &ps->rep[i][k];
            if (!r->up)
                continue;
            if (r->g != NULL) {
                pgroup_tick(r->g);
                observe(r);
                pg_sync_tick(r);
                if (r->up && r->g != NULL && pgroup_install_pending(r->g))
                    pg_reinstall(r);
                continue;
            }
            vsr_tick(r->eng);
            drain(r);
            io_tick(r);
        }
    follow(ps);
    if (w->trace && w->now % 250 == 0)
        for (unsigned k = 0; k < ps->o.partitions; k++)
            for (unsigned i = 0; i < w->p.n; i++) {
                struct sp_rep *r = &ps->rep[i][k];
                if (!r->up) {
                    ptrace(ps, "node %u group %u down", i, k);
                    continue;
                }
                struct vs_vsr_info in;
                vsr_info(r->eng, &in);
                ptrace(ps,
                       "node %u group %u status %d view %u/%u op %llu commit "
                       "%llu/%llu settled %d faulty %llu",
                       i, k, in.status, in.view, in.log_view,
                       (unsigned long long)in.op,
                       (unsigned long long)in.commit_min,
                       (unsigned long long)in.commit_max, in.settled,
                       (unsigned long long)in.faulty_op);
            }
    clients_tick(ps);
    if (pchance(ps, 1, 4))
        poll_one(ps);
    if (w->faults_on)
        faults_tick(ps);
}

void
sim_parts_heal(struct sim_world *w)
{
    struct sim_parts *ps = parts_of(w);
    if (ps == NULL)
        return;
    for (unsigned i = 0; i < w->p.n; i++) {
        sim_sio_arm_crash(ps->node[i].fs, 0);
        ps->node[i].back_at = 0;
        if (!w->p.refused_bootable)
            continue;
        /* the waiver's counterfactual: a group that refused to open gets
         * its flips undone and the node's side reopens it; so does every
         * group of a node whose metadata replica was made bootable (its
         * whole disk restored: flips made while it was down, which its
         * groups never opened over, would refuse them at this boot) */
        int again = 0;
        int restored = (w->made_bootable >> i) & 1u;
        for (unsigned k = 0; k < ps->o.partitions; k++) {
            struct sp_rep *r = &ps->rep[i][k];
            if ((!r->refused && !(restored && r->nrot > 0)) ||
                r->nrot > SP_ROT_MAX)
                continue;
            while (r->nrot > 0) {
                const struct sp_rot *q = &r->rot[--r->nrot];
                if (q->mask)
                    (void)sim_sio_flip(ps->node[i].fs, q->path, q->off,
                                       q->mask);
                else
                    (void)sim_sio_remap(ps->node[i].fs, q->path, q->off);
            }
            ptrace(ps, "node %u group %u made bootable", i, k);
            again = 1;
        }
        if (again && ps->node[i].up)
            side_crash(ps, i);
        if (w->p.refused_bootable == 2 && w->p.bootable_mute_parts &&
            (again || (w->made_bootable & (1u << i))))
            ps->mute |= 1u << i;
    }
}

int
sim_parts_converged(struct sim_world *w)
{
    struct sim_parts *ps = parts_of(w);
    if (ps == NULL)
        return 1;
    for (unsigned i = 0; i < ps->o.clients; i++)
        if (ps->c[i].busy) {
            snprintf(ps->why, sizeof(ps->why),
                     "client %u still waits for request %llu of group %u", i,
                     (unsigned long long)ps->c[i].request, ps->c[i].part);
            return 0;
        }
    for (unsigned k = 0; k < ps->o.partitions; k++) {
        uint64_t best = 0, top = 0;
        for (unsigned i = 0; i < w->p.n; i++) {
            struct sp_rep *r = &ps->rep[i][k];
            if (r->up && vsr_status(r->eng) == VSR_STATUS_NORMAL &&
                r->applied > best)
                best = r->applied;
            for (uint64_t op = top + 1; op <= SP_OPS && ps->hist[k][op].set;
                 op++)
                top = op;
        }
        unsigned at = 0, need = w->p.converge_all
                                    ? w->p.n
                                    : vsr_quorum_replication(w->p.n);
        for (unsigned i = 0; i < w->p.n; i++) {
            struct sp_rep *r = &ps->rep[i][k];
            at += r->up && vsr_status(r->eng) == VSR_STATUS_NORMAL &&
                  r->applied == best && vsr_commit_max(r->eng) == best &&
                  vsr_op(r->eng) == best;
        }
        if (at < need || best < top) {
            snprintf(ps->why, sizeof(ps->why),
                     "group %u: %u of %u replicas Normal at commit %llu "
                     "(committed somewhere: %llu)",
                     k, at, w->p.n, (unsigned long long)best,
                     (unsigned long long)top);
            return 0;
        }
    }
    return 1;
}

/* 1 if a copy of op f that replica o holds can serve it, as far as the
 * engine can tell: o applied it, or journaled it in a log_view at least
 * the asker's (an older log_view's copy may be another op f). */
static int
holds_usable(struct sp_rep *o, uint64_t f, uint32_t log_view)
{
    if (o->applied >= f)
        return 1;
    if (rep_durable(o) < f)
        return 0;
    struct vs_vsr_info oi;
    vsr_info(o->eng, &oi);
    return oi.log_view >= log_view;
}

/* 1 if a group that did not converge is undecidable without the nodes
 * down for good (their metadata replica refuses to boot, or the group
 * refused to open there): fewer live replicas than a quorum, or a live
 * replica needs an op f above its durable journal (known committed, a
 * header it knows, its faulty range, or its never-nacked range: a
 * damaged cut it may have acknowledged) that no live replica holds
 * usably (holds_usable), and f is known committed or the live nacks
 * (its own among them) are fewer than a nack quorum:
 * the live replicas can neither repair nor truncate it. Records why in
 * the world (waived_op, waived_why); the counterfactual run
 * (sim_params.refused_bootable) proves the refused nodes decide it.
 * Never applies in that run. */
static int
needs_refused_votes(struct sim_parts *ps)
{
    struct sim_world *w = ps->w;
    if (w->p.refused_bootable)
        return 0;
    unsigned nq = vsr_quorum_nack(w->p.n);
    for (unsigned k = 0; k < ps->o.partitions; k++) {
        unsigned refused = 0;
        for (unsigned j = 0; j < w->p.n; j++)
            if ((!w->node[j].up && w->node[j].refused) || ps->rep[j][k].refused)
                refused |= 1u << j;
        if (refused == 0)
            continue;
        /* a group that refused to open on an up node with no fault
         * injected into its files since its last good open: the damage
         * came from a crash alone (torn unsynced writes), which the
         * product must recover from, so no counterfactual can restore
         * it: a product finding, named (w->waived_crash) */
        w->waived_crash = 0;
        for (unsigned j = 0; j < w->p.n; j++) {
            const struct sp_rep *q = &ps->rep[j][k];
            if (q->refused && w->node[j].up && q->nrot == 0) {
                w->waived_crash = 1;
                snprintf(w->waived_crash_why, sizeof(w->waived_crash_why),
                         "group %u refused to open on node %u after a crash "
                         "alone (no injected fault): %s",
                         k, j, q->refuse);
            }
        }
        unsigned live = w->p.n - (unsigned)__builtin_popcount(refused);
        if (live < vsr_quorum_view_change(w->p.n) ||
            live < vsr_quorum_replication(w->p.n)) {
            snprintf(w->waived_why, sizeof(w->waived_why),
                     "group %u: %u live replicas, fewer than a quorum; nodes "
                     "0x%x refused",
                     k, live, refused);
            return 1;
        }
        for (unsigned i = 0; i < w->p.n; i++) {
            struct sp_rep *r = &ps->rep[i][k];
            if (!r->up)
                continue;
            struct vs_vsr_info in;
            vsr_info(r->eng, &in);
            uint64_t top = in.nonack_top;
            if (in.op > top)
                top = in.op;
            if (in.commit_max > top)
                top = in.commit_max;
            if (in.faulty_op > top)
                top = in.faulty_op;
            uint64_t low = rep_durable(r);
            if (r->applied > low)
                low = r->applied;
            for (uint64_t f = top; f > low; f--) {
                unsigned holders = 0, nackers = f > in.nonack_top;
                for (unsigned j = 0; j < w->p.n; j++) {
                    struct sp_rep *o = &ps->rep[j][k];
                    if (j == i || !o->up)
                        continue;
                    struct vs_vsr_info oi;
                    vsr_info(o->eng, &oi);
                    /* a replica holding another log_view's f offers it
                     * and does not nack it */
                    if (holds_usable(o, f, in.log_view))
                        holders++;
                    else if (oi.nonack_top < f && rep_durable(o) < f)
                        nackers++;
                }
                if (holders > 0)
                    break;
                if (f > in.commit_max && nackers >= nq)
                    continue; /* a nack quorum truncates it */
                w->waived_op = f;
                snprintf(w->waived_why, sizeof(w->waived_why),
                         "group %u: op %llu (%s on node %u) has no usable "
                         "live copy and %u of %u nacks; nodes 0x%x refused",
                         k, (unsigned long long)f,
                         f <= in.commit_max   ? "known committed"
                         : f <= in.op         ? "a header without body"
                         : f <= in.nonack_top ? "never nacked"
                                              : "faulty",
                         i, nackers, nq, refused);
                return 1;
            }
        }
    }
    return 0;
}

/* The partitions' bytes from offset 0 (whole batches as stored). */
static int
read_all(struct sp_rep *r, struct vs_wbuf *out)
{
    vs_wbuf_reset(out);
    struct part_poll_result res;
    return part_poll(r->p, PART_POLL_OFFSET, 0, UINT32_MAX, SIZE_MAX, out,
                     &res);
}

void
sim_parts_finish(struct sim_world *w)
{
    struct sim_parts *ps = parts_of(w);
    if (ps == NULL || w->failed)
        return;
    if (!sim_parts_converged(w)) {
        if (needs_refused_votes(ps) && w->waived_crash &&
            w->p.strict_crash_refusal) {
            sim_world_failf(w,
                            "partition liveness: %s after the faults "
                            "stopped, and %s",
                            ps->why, w->waived_crash_why);
            return;
        }
        if (needs_refused_votes(ps)) {
            ps->m.waived_refused++;
            ps->m.waived_crash += w->waived_crash;
            w->waived_part = 1;
            ptrace(ps, "liveness waived: %s: %s", ps->why, w->waived_why);
            return;
        }
        sim_world_failf(w, "partition liveness: %s after the faults stopped",
                        ps->why);
        return;
    }
    for (size_t q = 0; q < ps->npend && !w->failed; q++) {
        const struct sp_pend *e = &ps->pend[q];
        const struct sp_hist *h = &ps->hist[e->part][e->op];
        int ok = h->set && h->model_set && vs_u128_eq(h->client, e->client) &&
                 h->request == e->request;
        if (ok && e->operation == VS_OP_SEND_MESSAGES)
            ok = e->status == 0 && e->base == h->base;
        else if (ok)
            ok = e->status == h->code;
        if (!ok)
            fail(ps,
                 "answer: group %u: an answer (status %u, base %llu) "
                 "named op %llu, which the group committed %s (code %u, "
                 "base %llu)",
                 e->part, e->status, (unsigned long long)e->base,
                 (unsigned long long)e->op,
                 h->set ? "for another request or with another result"
                        : "nowhere",
                 h->code, (unsigned long long)h->base);
    }
    struct vs_wbuf a, b;
    vs_wbuf_init(&a);
    vs_wbuf_init(&b);
    for (unsigned k = 0; k < ps->o.partitions && !w->failed; k++) {
        /* every acknowledged op is committed */
        for (uint64_t op = 1; op <= SP_OPS; op++)
            if (ps->hist[k][op].acked) {
                int anywhere = 0;
                for (unsigned i = 0; i < w->p.n; i++)
                    anywhere |= ps->rep[i][k].up && ps->rep[i][k].applied >= op;
                if (!anywhere)
                    fail(ps,
                         "durability: group %u acked op %llu is not "
                         "committed on any live replica",
                         k, (unsigned long long)op);
            }
        int ref = -1;
        for (unsigned i = 0; i < w->p.n && !w->failed; i++) {
            struct sp_rep *r = &ps->rep[i][k];
            if (!r->up || vsr_status(r->eng) != VSR_STATUS_NORMAL)
                continue;
            struct vs_wbuf *dst = ref < 0 ? &a : &b;
            int rc = read_all(r, dst);
            if (rc == -EBADMSG || rc == -EIO) {
                /* damage a read found (a flipped or unreadable sector of
                 * a sealed segment): never served, left out */
                ps->m.damaged_reads++;
                continue;
            }
            if (rc < 0) {
                fail(ps, "group %u node %u: the log does not read: %s", k, i,
                     strerror(-rc));
                break;
            }
            /* the log is exactly the committed batches, in offset order */
            size_t pos = 0;
            while (pos + BATCH_HEADER_SIZE <= dst->len) {
                const uint8_t *x = dst->data + pos;
                uint64_t base = batch_base_offset(x), bl = batch_length(x);
                const struct sp_off *f = &ps->offs[k][base];
                if (!f->set || f->hash != vs_xxh3_64(x, bl))
                    fail(ps,
                         "group %u node %u: offset %llu holds a batch "
                         "never committed there",
                         k, i, (unsigned long long)base);
                pos += bl;
            }
            if (ref < 0) {
                ref = (int)i;
                continue;
            }
            if (ps->rep[ref][k].applied == r->applied &&
                (a.len != b.len || memcmp(a.data, b.data, a.len) != 0))
                fail(ps,
                     "group %u: the logs of nodes %d and %u differ at "
                     "commit %llu",
                     k, ref, i, (unsigned long long)r->applied);
            for (uint32_t c = 1; c <= SP_CONSUMERS; c++) {
                struct part_consumer pc = {PART_CONSUMER, c, 0};
                uint64_t x = 0, y = 0;
                int rx = part_offset_get(ps->rep[ref][k].p, &pc, &x);
                int ry = part_offset_get(r->p, &pc, &y);
                if (ps->rep[ref][k].applied == r->applied &&
                    (rx != ry || x != y))
                    fail(ps,
                         "group %u consumer %u: offsets differ on nodes "
                         "%d (%d %llu) and %u (%d %llu)",
                         k, c, ref, rx, (unsigned long long)x, i, ry,
                         (unsigned long long)y);
            }
        }
    }
    vs_wbuf_fini(&a);
    vs_wbuf_fini(&b);
    for (unsigned i = 0; i < w->p.n; i++)
        for (unsigned k = 0; k < ps->o.partitions; k++) {
            struct sp_rep *r = &ps->rep[i][k];
            uint64_t div = r->acc.divergences;
            if (r->eng != NULL)
                div += vsr_stats(r->eng)->divergences;
            if (div)
                fail(ps,
                     "history: group %u node %u saw %llu divergent "
                     "commits",
                     k, i, (unsigned long long)div);
        }
}

int
sim_parts_attach(struct sim_world *w, const struct sim_parts_opts *o)
{
    if (o->partitions == 0 || o->partitions > SIM_PARTS_MAX ||
        o->clients > SP_CLIENTS)
        return -EINVAL;
    struct sim_parts *ps = vs_xcalloc(1, sizeof(*ps));
    ps->w = w;
    ps->o = *o;
    ps->n = w->p.n;
    ps->rng = w->seed ^ 0x9a27171005ull;
    w->parts = ps;
    int rc = 0;
    for (unsigned k = 0; k < o->partitions; k++) {
        struct part_id id = part_ident_of(k);
        ps->gid[k] =
            o->local_binding ? SIM_PARTS_GROUP0 + k : pgroup_group_id(&id);
        ps->hist[k] = vs_xcalloc(SP_OPS + 1, sizeof(*ps->hist[k]));
        ps->offs[k] = vs_xcalloc(SP_OFFS, sizeof(*ps->offs[k]));
    }
    for (unsigned i = 0; i < w->p.n; i++) {
        struct sp_node *nd = &ps->node[i];
        snprintf(nd->root, sizeof(nd->root), "%s/r%u/pdata", w->root, i);
        snprintf(nd->parts_dir, sizeof(nd->parts_dir),
                 "%s/r%u/pdata/partitions", w->root, i);
        if ((rc = sim_sio_create(nd->root, prand(ps), w->p.tear_pm, &nd->fs)) <
            0)
            return rc;
        struct vs_sio *io = sim_sio_io(nd->fs);
        /* the data directory's layout, durable before any partition */
        if ((rc = sio_mkdir(io, nd->parts_dir, 0700)) < 0 ||
            (rc = sio_dir_fsync(io, nd->root)) < 0)
            return rc;
        for (unsigned k = 0; k < o->partitions; k++) {
            struct sp_rep *r = &ps->rep[i][k];
            r->ps = ps;
            r->node = i;
            r->part = k;
            r->replica = (i + w->p.n - k % w->p.n) % w->p.n;
            r->jfd = r->sfd = -1;
        }
        if (w->node[i].up)
            side_boot(ps, i);
    }
    for (unsigned i = 0; i < o->clients; i++) {
        struct sp_client *c = &ps->c[i];
        c->id.lo = prand(ps) | 1;
        c->id.hi = prand(ps);
        c->transport = prand(ps);
        c->part = i % o->partitions;
        c->target = (unsigned)(prand(ps) % w->p.n);
    }
    return w->failed ? -EIO : 0;
}

void
sim_parts_detach(struct sim_world *w)
{
    struct sim_parts *ps = parts_of(w);
    if (ps == NULL)
        return;
    for (unsigned i = 0; i < ps->n; i++) {
        for (unsigned k = 0; k < ps->o.partitions; k++)
            if (ps->node[i].fs != NULL)
                rep_stop(&ps->rep[i][k]);
        for (unsigned k = 0; k < ps->o.partitions; k++)
            free(ps->rep[i][k].io);
        sim_sio_destroy(ps->node[i].fs);
    }
    for (unsigned k = 0; k < SIM_PARTS_MAX; k++) {
        free(ps->hist[k]);
        free(ps->offs[k]);
    }
    for (size_t i = 0; i < ps->nnet; i++)
        free(ps->net[i].frame);
    free(ps->net);
    for (unsigned i = 0; i < SP_CLIENTS; i++)
        free(ps->c[i].body);
    free(ps);
    w->parts = NULL;
}

void
sim_parts_get_marks(const struct sim_world *w, struct sim_parts_marks *m)
{
    const struct sim_parts *ps = parts_of(w);
    memset(m, 0, sizeof(*m));
    if (ps == NULL)
        return;
    *m = ps->m;
    for (unsigned i = 0; i < ps->n; i++)
        for (unsigned k = 0; k < ps->o.partitions; k++) {
            const struct sp_rep *r = &ps->rep[i][k];
            struct vs_vsr_stats st = r->acc;
            if (r->eng != NULL) {
                const struct vs_vsr_stats *s = vsr_stats(r->eng);
                st.view_changes += s->view_changes;
                st.repairs += s->repairs;
                st.truncations += s->truncations;
                st.faulty_repaired += s->faulty_repaired;
            }
            if (r->g != NULL) {
                struct pgroup_stats gs;
                pgroup_stats(r->g, &gs);
                m->pg_duplicates += gs.duplicates;
            }
            m->view_changes += st.view_changes;
            m->repairs += st.repairs;
            m->truncations += st.truncations;
            m->faulty_repaired += st.faulty_repaired;
        }
    m->reconnects = ps->m.reconnects;
    /* under pgroup.c the binding dedups (the sim's own table is the
     * local binding's): its duplicates answered are the dedup hits */
    if (!ps->o.local_binding)
        m->dedup_hits += m->pg_duplicates;
}

/* ---------------------------------------------------------- scenarios */

int
sim_parts_primary(const struct sim_world *w, unsigned k)
{
    const struct sim_parts *ps = parts_of(w);
    for (unsigned i = 0; i < w->p.n; i++) {
        const struct sp_rep *r = &ps->rep[i][k];
        if (r->up && vsr_is_primary(r->eng))
            return (int)i;
    }
    return -1;
}

uint64_t
sim_parts_acked(const struct sim_world *w)
{
    return parts_of(w)->m.acked;
}

uint64_t
sim_parts_commit(const struct sim_world *w, unsigned k)
{
    const struct sim_parts *ps = parts_of(w);
    uint64_t best = 0;
    for (unsigned i = 0; i < w->p.n; i++)
        if (ps->rep[i][k].applied > best)
            best = ps->rep[i][k].applied;
    return best;
}

void
sim_parts_arm_crash(struct sim_world *w, unsigned node, uint64_t nth)
{
    sim_sio_arm_crash(parts_of(w)->node[node].fs, nth);
}

int
sim_parts_trim(struct sim_world *w, unsigned k, unsigned segments)
{
    struct sim_parts *ps = parts_of(w);
    int node = sim_parts_primary(w, k);
    if (ps->o.local_binding || node < 0)
        return 0;
    struct sp_rep *r = &ps->rep[node][k];
    if (r->g == NULL || !pgroup_is_settled_primary(r->g))
        return 0;
    uint64_t start = 0, size = 0;
    unsigned s = segments;
    /* the start of segment s is the watermark below s sealed segments;
     * with s or fewer sealed it is the active segment's start: every
     * sealed segment goes, as retention by expiry deletes them */
    while (s > 0 && part_segment_at(r->p, s, &start, &size) != 0)
        s--;
    if (s == 0)
        return 0;
    int rc = pgroup_on_trim(r->g, PGROUP_TRIM_DELETE_SEGMENTS, start,
                            ps->w->now * 10000);
    ptrace(ps, "node %u group %u proposes a trim below offset %llu: %d",
           (unsigned)node, k, (unsigned long long)start, rc);
    return rc == 0 ? 1 : -1;
}

uint64_t
sim_parts_first_offset(const struct sim_world *w, unsigned node, unsigned k,
                       uint64_t *trims)
{
    const struct sim_parts *ps = parts_of(w);
    const struct sp_rep *r = &ps->rep[node][k];
    uint64_t start = 0, size = 0;
    *trims = 0;
    if (!r->up || r->p == NULL || r->g == NULL ||
        part_segment_at(r->p, 0, &start, &size) != 0)
        return UINT64_MAX;
    struct pgroup_stats st;
    pgroup_stats(r->g, &st);
    *trims = st.trims;
    return start;
}

struct seg_pick {
    char best[SIM_SIO_NAME];
    const char *ext;
};

static int
seg_pick(void *arg, const char *name)
{
    struct seg_pick *p = arg;
    size_t n = strlen(name), e = strlen(p->ext);
    if (n == 20 + e && strcmp(name + 20, p->ext) == 0 &&
        strcmp(name, p->best) > 0)
        snprintf(p->best, sizeof(p->best), "%s", name);
    return 0;
}

/* The production binding's journal: the last batch of the newest .log
 * (its body: a message byte) or the last record of the newest .vsr (a
 * header byte). */
static int
pg_rot_tail(struct sim_parts *ps, unsigned node, unsigned k, int in_header)
{
    struct sp_node *nd = &ps->node[node];
    struct part_id id = part_ident_of(k);
    char name[128], dir[600], path[800];
    pdir_name(name, sizeof(name), &id);
    snprintf(dir, sizeof(dir), "%s/%s", nd->parts_dir, name);
    struct seg_pick p = {"", in_header ? ".vsr" : ".log"};
    if (sim_sio_list(nd->fs, dir, seg_pick, &p) != 0 || p.best[0] == '\0')
        return 0;
    snprintf(path, sizeof(path), "%s/%s", dir, p.best);
    long sz = sim_sio_size(nd->fs, path);
    if (sz <= 0)
        return 0;
    /* the last bytes are the last record's (a payload byte of the last
     * message, or the inline body / header tail of the last record) */
    uint64_t at = (uint64_t)sz - 1 - prand(ps) % (sz > 16 ? 16 : 1);
    int done = sim_sio_flip(nd->fs, path, at, 0x10) == 1;
    ps->m.flips += done;
    ps->rot_reps[k] |= 1u << node;
    return done;
}

int
sim_parts_rot_tail(struct sim_world *w, unsigned node, unsigned k,
                   int in_header)
{
    struct sim_parts *ps = parts_of(w);
    struct sp_node *nd = &ps->node[node];
    char path[700];
    if (!ps->o.local_binding)
        return pg_rot_tail(ps, node, k, in_header);
    snprintf(path, sizeof(path), "%s/p%u.journal", nd->root, k);
    long sz = sim_sio_size(nd->fs, path);
    if (sz <= 0)
        return 0;
    /* the last record: walk the durable image */
    struct vs_sio *io = sim_sio_io(nd->fs);
    int fd = sio_open(io, path, O_RDONLY, 0);
    if (fd < 0)
        return 0;
    uint8_t *b;
    size_t len;
    j_load(io, fd, &b, &len);
    sio_close(io, fd);
    struct jscan s;
    j_scan(b, len, &s);
    int done = 0;
    if (s.head > 0) {
        uint64_t pos = 0;
        for (uint64_t op = 1; op < s.head; op++)
            pos += pad8(s.h[op].f.size);
        uint64_t at =
            in_header
                ? pos + 100
                : pos + VS_HEADER_SIZE +
                      (s.h[s.head].f.size > VS_HEADER_SIZE
                           ? prand(ps) % (s.h[s.head].f.size - VS_HEADER_SIZE)
                           : 0);
        done = sim_sio_flip(nd->fs, path, at, 0x10) == 1;
        ps->m.flips += done;
        ps->rot_reps[k] |= 1u << node;
    }
    free(b);
    free(s.h);
    return done;
}

void
sim_parts_set_tamper(struct sim_world *w,
                     int (*fn)(void *ctx, unsigned from, unsigned to,
                               uint8_t *frame, uint32_t len),
                     void *ctx)
{
    struct sim_parts *ps = parts_of(w);
    ps->tamper = fn;
    ps->tamper_ctx = ctx;
}

void
sim_parts_reconnect_all(struct sim_world *w)
{
    struct sim_parts *ps = parts_of(w);
    for (unsigned i = 0; i < ps->o.clients; i++) {
        struct sp_client *c = &ps->c[i];
        c->transport = prand(ps);
        ps->m.reconnects++;
        if (c->busy)
            client_send(ps, i);
    }
}

const struct vs_vsr_stats *
sim_parts_stats(const struct sim_world *w, unsigned node, unsigned k)
{
    const struct sp_rep *r = &parts_of(w)->rep[node][k];
    return r->eng ? vsr_stats(r->eng) : NULL;
}

int64_t
sim_parts_head(const struct sim_world *w, unsigned node, unsigned k)
{
    const struct sp_rep *r = &parts_of(w)->rep[node][k];
    if (!r->up)
        return -1;
    return r->g != NULL ? (int64_t)pj_head(pgroup_journal(r->g))
                        : (int64_t)r->jhead;
}

uint64_t
sim_parts_verdicts(const struct sim_world *w, enum vsr_verdict v)
{
    const struct sim_parts *ps = parts_of(w);
    uint64_t sum = 0;
    for (unsigned i = 0; i < w->p.n; i++)
        for (unsigned k = 0; k < ps->o.partitions; k++) {
            const struct sp_rep *r = &ps->rep[i][k];
            sum += r->verdicts[v];
            if (r->eng != NULL)
                sum += vsr_stats(r->eng)->verdicts[v];
        }
    return sum;
}

uint64_t
sim_parts_frame_group(const uint8_t *frame, uint32_t len)
{
    return frame_group(frame, len);
}

uint64_t
sim_parts_group_id(const struct sim_world *w, unsigned k)
{
    return parts_of(w)->gid[k];
}

int64_t
sim_parts_durable(const struct sim_world *w, unsigned node, unsigned k)
{
    const struct sp_rep *r = &parts_of(w)->rep[node][k];
    return r->up ? (int64_t)rep_durable(r) : -1;
}

uint64_t
sim_parts_faulty(const struct sim_world *w, unsigned node, unsigned k)
{
    const struct sp_rep *r = &parts_of(w)->rep[node][k];
    if (!r->up || r->eng == NULL)
        return 0;
    struct vs_vsr_info in;
    vsr_info(r->eng, &in);
    return in.faulty_op;
}
