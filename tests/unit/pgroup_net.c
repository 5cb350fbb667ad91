/*
 * tests/unit/pgroup_net.c - the three-replica partition group harness of
 * the unit tests; see pgroup_net.h.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/serve/pgroup.h"
#include "shard/serve/pxfer.h"
#include "tests/unit/data_testutil.h"
#include "tests/unit/pgroup_net.h"

const struct part_id pn_id = {4, 5, 6, 88};
const struct vs_u128 pn_cluster = {0xC1, 0xC2};
struct pn_node pn_nodes[PN_N];
struct pn_msg pn_q[PN_QMAX];
size_t pn_nq;
int pn_drop[PN_N][PN_N];
int pn_drop_cmd[PN_N][PN_N][256];
struct pn_reply pn_rep[8192];
size_t pn_nrep;
int pn_hold_sync[PN_N];
uint64_t pn_wall = 1000000;
uint64_t pn_repair_requests;
uint32_t pn_slots = 256;
enum part_durability pn_durability = PART_FSYNC_EVERY_BATCH;
int pn_replicated;
int pn_async_state;
int pn_hold_state[PN_N];
uint64_t pn_vc_sent[PN_N];
int pn_async_files;
int pn_hold_files[PN_N];
struct pxfer_budget *pn_fetch_budget;
static struct pn_hooks pn_h;

static int
env_send(void *ctx, struct vs_pgroup *g, uint8_t replica, const void *frame,
         size_t len)
{
    (void)g;
    struct pn_node *n = ctx;
    ck_assert_uint_lt(replica, PN_N);
    const struct vs_header *h = frame;
    ck_assert_uint_ge(len, sizeof(*h));
    if (h->f.command == VS_CMD_REQUEST_PREPARES) {
        /* upstream #4230: a repair range is never empty */
        const struct vs_hdr_request_prepares *rp = frame;
        ck_assert_uint_gt(rp->from_op, 0);
        ck_assert_uint_le(rp->from_op, rp->to_op);
        pn_repair_requests++;
    }
    if (h->f.command == VS_CMD_START_VIEW_CHANGE ||
        h->f.command == VS_CMD_DO_VIEW_CHANGE ||
        h->f.command == VS_CMD_START_VIEW)
        pn_vc_sent[n->idx]++;
    if (pn_nq == PN_QMAX) {
        if (pn_h.sent != NULL)
            pn_h.sent(n, frame, len, NULL);
        return -EAGAIN;
    }
    struct pn_msg *m = &pn_q[pn_nq++];
    m->from = (uint8_t)n->idx;
    m->to = replica;
    m->len = (uint32_t)len;
    m->data = malloc(len);
    memcpy(m->data, frame, len);
    if (pn_h.sent != NULL)
        pn_h.sent(n, frame, len, m);
    return 0;
}

static void
env_reply(void *ctx, struct vs_pgroup *g, struct vs_u128 client,
          const void *frame, size_t len)
{
    (void)g;
    struct pn_node *n = ctx;
    ck_assert_uint_ge(len, sizeof(struct vs_hdr_reply));
    const struct vs_hdr_reply *r = frame;
    ck_assert(vs_u128_eq(r->client, client));
    ck_assert_uint_lt(pn_nrep, sizeof(pn_rep) / sizeof(pn_rep[0]));
    struct pn_reply *x = &pn_rep[pn_nrep++];
    x->client = client;
    x->request = r->request;
    x->op = r->op;
    x->status = r->status;
    x->node = n->idx;
    x->request_checksum = r->request_checksum;
    x->body_len = (uint32_t)(len - sizeof(*r));
    ck_assert_uint_eq(r->f.size, len);
    if (r->status == 0 && r->operation == VS_OP_SEND_MESSAGES) {
        const uint8_t *b = (const uint8_t *)frame + sizeof(*r);
        ck_assert_uint_eq(x->body_len, 24);
        ck_assert_uint_eq(vs_load_u32(b), 1);
        ck_assert_uint_eq(vs_load_u32(b + 4), pn_id.stream_id);
        ck_assert_uint_eq(vs_load_u32(b + 12), pn_id.partition_id);
        x->base_offset = vs_load_u64(b + 16);
    } else if (r->status != 0) {
        ck_assert_uint_eq(x->body_len, 0);
    }
}

static void
env_sync(void *ctx, struct vs_pgroup *g)
{
    (void)g;
    struct pn_node *n = ctx;
    n->want_sync = 1;
}

static void
env_state_sync(void *ctx, struct vs_pgroup *g, int fd)
{
    (void)g;
    struct pn_node *n = ctx;
    ck_assert_int_eq(n->state_fd, -1); /* one at a time */
    ck_assert_int_ge(fd, 0);
    n->state_fd = fd;
}

static struct vs_vsr_timeouts
timeouts(void)
{
    struct vs_vsr_timeouts t = {
        .prepare = 5,
        .commit = 10,
        .normal_heartbeat = 60,
        .view_change_message = 10,
        .view_change_status = 60,
        .rsv = 15,
        .probe_attempts = 5,
        .repair = 15,
    };
    return t;
}

static void
env_files_sync(void *ctx, struct vs_pgroup *g, const int *fds, size_t n,
               struct pxfer_sync *tok)
{
    (void)g;
    struct pn_node *nd = ctx;
    ck_assert_ptr_null(nd->files_tok); /* one request at a time */
    nd->files = malloc((n ? n : 1) * sizeof(*nd->files));
    for (size_t i = 0; i < n; i++) {
        nd->files[i] = dup(fds[i]);
        ck_assert_int_ge(nd->files[i], 0);
    }
    nd->n_files = n;
    nd->files_tok = tok;
}

/* Ends node n's files request: fsynced (sync) or dropped (a crash). */
static void
files_end(struct pn_node *n, int sync)
{
    if (n->files_tok == NULL)
        return;
    for (size_t i = 0; i < n->n_files; i++) {
        if (sync) {
            ck_assert_int_eq(fsync(n->files[i]), 0);
            n->files_synced++;
        }
        close(n->files[i]);
    }
    free(n->files);
    n->files = NULL;
    n->n_files = 0;
    struct pxfer_sync *tok = n->files_tok;
    n->files_tok = NULL;
    pxfer_fsynced(tok); /* a closed group's token is only freed */
}

struct pgroup_env
pn_env(struct pn_node *n)
{
    struct pgroup_env env = {n,
                             env_send,
                             env_reply,
                             env_sync,
                             pn_async_state ? env_state_sync : NULL,
                             pn_async_files ? env_files_sync : NULL};
    return env;
}

struct pgroup_opts
pn_group_opts(struct pn_node *n)
{
    struct pgroup_opts po = {
        .cluster = pn_cluster,
        .id = pn_id,
        .replica = (uint8_t)n->idx,
        .replica_count = PN_N,
        .journal_slots = pn_slots,
        .pipeline_max = 8,
        .body_max = 1 << 20,
        .seed = 77 + (uint64_t)n->idx * 1000 + n->boots++,
        .timeouts = timeouts(),
        .fetch_budget = pn_fetch_budget,
    };
    return po;
}

void
pn_node_start(struct pn_node *n)
{
    struct part_opts o;
    part_opts_default(&o);
    o.cut_damaged_tail = 1;
    o.segment_size = 16 * 1024; /* several segments per test */
    o.durability = pn_durability;
    o.replicated = pn_replicated;
    struct part_verdict v;
    int rc = part_open(&n->f.io, n->parts, &pn_id, &o, 1, 0, &n->p, &v);
    ck_assert_msg(rc == 0, "part_open: %d %s", rc, v.msg);
    struct pgroup_opts po = pn_group_opts(n);
    struct pgroup_env env = pn_env(n);
    n->state_fd = -1;
    char why[512];
    rc = pgroup_open(&po, n->p, &env, &n->g, why, sizeof(why));
    ck_assert_msg(rc == 0, "pgroup_open: %d %s", rc, why);
    n->up = 1;
}

/* A crash: nothing more is synced or written. */
void
pn_node_kill(struct pn_node *n)
{
    pgroup_close(n->g);
    files_end(n, 0);
    part_abandon(n->p);
    n->g = NULL;
    n->p = NULL;
    n->up = 0;
    n->want_sync = 0;
    n->state_fd = -1;
}

/* A lost disk: the node's partition directory is gone (a fresh member
 * again at its next start). */
void
pn_node_wipe(struct pn_node *n)
{
    dt_rm_rf(n->root);
    dt_mkdtemp(n->root, sizeof(n->root), n->parts, sizeof(n->parts));
}

void
pn_setup(const struct pn_hooks *h)
{
    memset(&pn_h, 0, sizeof(pn_h));
    if (h != NULL)
        pn_h = *h;
    pn_nq = 0;
    pn_nrep = 0;
    pn_repair_requests = 0;
    pn_slots = 256;
    pn_durability = PART_FSYNC_EVERY_BATCH;
    pn_replicated = 0;
    pn_async_state = 0;
    memset(pn_hold_state, 0, sizeof(pn_hold_state));
    pn_async_files = 0;
    memset(pn_hold_files, 0, sizeof(pn_hold_files));
    pn_fetch_budget = NULL;
    memset(pn_vc_sent, 0, sizeof(pn_vc_sent));
    memset(pn_drop, 0, sizeof(pn_drop));
    memset(pn_drop_cmd, 0, sizeof(pn_drop_cmd));
    memset(pn_hold_sync, 0, sizeof(pn_hold_sync));
    for (int i = 0; i < PN_N; i++) {
        struct pn_node *n = &pn_nodes[i];
        memset(n, 0, sizeof(*n));
        n->idx = i;
        dt_mkdtemp(n->root, sizeof(n->root), n->parts, sizeof(n->parts));
        sio_fault_init(&n->f, 1);
        pn_node_start(n);
    }
}

void
pn_teardown(void)
{
    for (int i = 0; i < PN_N; i++) {
        if (pn_nodes[i].up)
            pn_node_kill(&pn_nodes[i]);
        dt_rm_rf(pn_nodes[i].root);
    }
    for (size_t i = 0; i < pn_nq; i++)
        free(pn_q[i].data);
    pn_nq = 0;
}

void
pn_do_syncs(void)
{
    for (int i = 0; i < PN_N; i++) {
        struct pn_node *n = &pn_nodes[i];
        if (n->up && n->want_sync && !pn_hold_sync[i]) {
            n->want_sync = 0;
            ck_assert_int_eq(pgroup_sync_now(n->g), 0);
        }
        if (n->up && n->files_tok != NULL && !pn_hold_files[i])
            files_end(n, 1);
        if (n->up && n->state_fd >= 0 && !pn_hold_state[i]) {
            ck_assert_int_eq(fsync(n->state_fd), 0);
            n->state_fd = -1;
            pgroup_on_state_synced(n->g);
        }
    }
}

/* Delivers what is queued now (new messages wait for the next step),
 * syncs, then ticks every live node. */
void
pn_step(void)
{
    size_t n = pn_nq;
    struct pn_msg *batch = malloc((n ? n : 1) * sizeof(*batch));
    memcpy(batch, pn_q, n * sizeof(*batch));
    pn_nq = 0;
    for (size_t i = 0; i < n; i++) {
        struct pn_msg *m = &batch[i];
        struct pn_node *to = &pn_nodes[m->to];
        uint8_t cmd = m->len >= 256 ? m->data[60] : 0;
        if (to->up && pn_nodes[m->from].up && !pn_drop[m->from][m->to] &&
            !pn_drop_cmd[m->from][m->to][cmd])
            (void)pgroup_on_message(to->g, m->data, m->len);
        free(m->data);
        pn_do_syncs();
    }
    free(batch);
    pn_do_syncs();
    for (int i = 0; i < PN_N; i++)
        if (pn_nodes[i].up)
            pgroup_tick(pn_nodes[i].g);
    pn_do_syncs();
    if (pn_h.stepped != NULL)
        pn_h.stepped();
    pn_wall += 10000;
}

int
pn_settled_primary(void)
{
    for (int i = 0; i < PN_N; i++)
        if (pn_nodes[i].up && pgroup_is_settled_primary(pn_nodes[i].g))
            return i;
    return -1;
}

int
pn_wait_primary(int not_this)
{
    for (int s = 0; s < PN_MAX_STEPS; s++) {
        int p = pn_settled_primary();
        if (p >= 0 && p != not_this)
            return p;
        pn_step();
    }
    ck_abort_msg("no settled primary within %d steps", PN_MAX_STEPS);
    return -1;
}

struct vs_hdr_request
pn_request(uint64_t client, uint64_t req)
{
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.cluster = pn_cluster;
    r.f.command = VS_CMD_REQUEST;
    r.client.lo = client;
    r.client.hi = 0xAB;
    r.request = req;
    r.operation = VS_OP_SEND_MESSAGES;
    return r;
}

uint8_t *
pn_client_batch(uint64_t seed, uint32_t n, size_t *len)
{
    uint32_t pl[4] = {0, 0, 0, 0}, hl[4] = {0, 0, 0, 0};
    ck_assert_uint_le(n, 4);
    for (uint32_t i = 0; i < n; i++)
        pl[i] = 20 + (uint32_t)((seed * 7 + i) % 200);
    return dt_batch(seed, n, pl, hl, len);
}

int
pn_send_on(int node, uint64_t client, uint64_t req, uint32_t msgs)
{
    size_t len;
    uint8_t *b = pn_client_batch(client * 1000 + req, msgs, &len);
    struct vs_hdr_request r = pn_request(client, req);
    enum batch_err be;
    int rc = pgroup_on_send(pn_nodes[node].g, &r, b, len, pn_wall, &be);
    free(b);
    return rc;
}

const struct pn_reply *
pn_find_reply(uint64_t client, uint64_t req, uint32_t status)
{
    for (size_t i = 0; i < pn_nrep; i++)
        if (pn_rep[i].client.lo == client && pn_rep[i].request == req &&
            pn_rep[i].status == status)
            return &pn_rep[i];
    return NULL;
}

size_t
pn_count_replies(uint64_t client, uint64_t req)
{
    size_t c = 0;
    for (size_t i = 0; i < pn_nrep; i++)
        if (pn_rep[i].client.lo == client && pn_rep[i].request == req &&
            pn_rep[i].status == 0)
            c++;
    return c;
}

void
pn_wait_reply(uint64_t client, uint64_t req)
{
    for (int s = 0; s < PN_MAX_STEPS && !pn_find_reply(client, req, 0); s++)
        pn_step();
    ck_assert_msg(pn_find_reply(client, req, 0) != NULL,
                  "no reply for client %llu request %llu",
                  (unsigned long long)client, (unsigned long long)req);
}

/* Sends requests first..last of `clients` clients through the primary
 * (one in flight per client), waiting for each round's replies. */
void
pn_produce(uint64_t clients, uint64_t first, uint64_t last)
{
    for (uint64_t r = first; r <= last; r++) {
        for (uint64_t c = 1; c <= clients; c++) {
            int rc = -EAGAIN;
            for (int s = 0; s < PN_MAX_STEPS && rc != 0; s++) {
                int p = pn_settled_primary();
                rc = p >= 0 ? pn_send_on(p, c, r, 1 + (uint32_t)(r % 3))
                            : -EAGAIN;
                if (rc != 0) {
                    /* transient: no primary yet, or this client's
                     * previous request (adopted by a new primary) is
                     * still in its pipeline */
                    ck_assert_msg(rc == -EAGAIN || rc == -EBUSY ||
                                      rc == -EREMOTE || rc == -EALREADY,
                                  "send: %d", rc);
                    pn_step();
                }
            }
            ck_assert_int_eq(rc, 0);
        }
        for (uint64_t c = 1; c <= clients; c++)
            pn_wait_reply(c, r);
    }
}

void
pn_wait_commit_all(uint64_t op)
{
    for (int s = 0; s < PN_MAX_STEPS; s++) {
        int ok = 1;
        for (int i = 0; i < PN_N; i++)
            if (pn_nodes[i].up && pgroup_commit(pn_nodes[i].g) < op)
                ok = 0;
        if (ok)
            return;
        pn_step();
    }
    ck_abort_msg("commit %llu not reached everywhere", (unsigned long long)op);
}

uint32_t
pn_polled(int node, uint64_t *last)
{
    struct vs_wbuf out;
    struct part_poll_result r;
    vs_wbuf_init(&out);
    ck_assert_int_eq(part_poll(pgroup_part(pn_nodes[node].g), PART_POLL_OFFSET,
                               0, 1000000, 64 << 20, &out, &r),
                     0);
    vs_wbuf_fini(&out);
    if (last)
        *last = r.count ? r.last_offset : 0;
    return r.count;
}

/* Every segment's .log and .vsr are byte-identical on the live nodes. */
void
pn_files_identical(void)
{
    int ref = -1;
    for (int i = 0; i < PN_N && ref < 0; i++)
        if (pn_nodes[i].up)
            ref = i;
    struct vs_part *rp = pgroup_part(pn_nodes[ref].g);
    uint64_t start, size;
    size_t segs = 0;
    for (size_t s = 0; part_segment_at(rp, s, &start, &size) == 0; s++) {
        segs++;
        for (int e = 0; e < 2; e++) {
            char name[64], a[900], b[900];
            snprintf(name, sizeof(name), "%020llu.%s",
                     (unsigned long long)start, e ? "vsr" : "log");
            snprintf(a, sizeof(a), "%s/%s", part_dir(rp), name);
            size_t la = 0, lb = 0;
            uint8_t *da = dt_read_file(a, &la);
            for (int i = 0; i < PN_N; i++) {
                if (!pn_nodes[i].up || i == ref)
                    continue;
                snprintf(b, sizeof(b), "%s/%s",
                         part_dir(pgroup_part(pn_nodes[i].g)), name);
                uint8_t *db = dt_read_file(b, &lb);
                ck_assert_msg(da && db, "%s missing", name);
                ck_assert_msg(la == lb && memcmp(da, db, la) == 0,
                              "%s differs between nodes %d and %d", name, ref,
                              i);
                free(db);
            }
            free(da);
        }
    }
    ck_assert_uint_ge(segs, 1);
}

int
pn_offset_op(int node, uint64_t client, uint64_t req, uint8_t operation,
             uint32_t consumer, uint64_t offset)
{
    struct pgroup_offset_op o = {
        .kind = PART_CONSUMER, .id = consumer, .offset = offset};
    struct vs_hdr_request r = pn_request(client, req);
    r.operation = operation;
    return pgroup_on_offset(pn_nodes[node].g, &r, operation, &o, pn_wall);
}

void
pn_wait_status(uint64_t client, uint64_t req, uint32_t status)
{
    for (int s = 0; s < PN_MAX_STEPS && !pn_find_reply(client, req, status);
         s++)
        pn_step();
    ck_assert_msg(pn_find_reply(client, req, status) != NULL,
                  "no reply %u for client %llu request %llu", status,
                  (unsigned long long)client, (unsigned long long)req);
}
