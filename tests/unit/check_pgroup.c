/*
 * tests/unit/check_pgroup.c - three replicas of one partition group in
 * one process (shard/serve/pgroup.c): each on its own partition in its
 * own temp dir, wired by an in-memory message queue (env->send), fsyncs
 * done synchronously after each step (env->sync). Sends commit on a
 * quorum, every replica's .log/.vsr bytes agree up to the commit, polls
 * never see uncommitted batches, a killed primary is replaced and rejoins
 * by repair, duplicates are answered by client id and request, and the
 * two upstream failures (an empty repair range after a leader restart, a
 * commit stalled on an adopted suffix nobody can repair) do not happen.
 * Every loop is bounded in steps.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/errors.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pdir.h"
#include "shard/data/pjournal.h"
#include "shard/serve/pgclients.h"
#include "shard/serve/pgroup.h"
#include "shard/storage/io.h"
#include "tests/unit/data_testutil.h"

#define N         3
#define QMAX      20000
#define MAX_STEPS 20000

static const struct part_id g_id = {4, 5, 6, 88};
static const struct vs_u128 g_cluster = {0xC1, 0xC2};

struct msg {
    uint8_t from, to;
    uint32_t len;
    uint8_t *data;
};

struct reply {
    struct vs_u128 client;
    uint64_t request;
    struct vs_u128 request_checksum;
    uint64_t base_offset; /* from a send's confirmation */
    uint32_t body_len;
    uint64_t op;
    uint32_t status;
    int node;
};

struct node {
    int idx;
    char root[256], parts[300];
    struct sio_fault f;
    struct vs_part *p;
    struct vs_pgroup *g;
    int up;
    int want_sync;
    uint64_t boots;
    int state_fd; /* env->state_sync asked for this fd's fsync (or -1) */
};

static struct node g_n[N];
static struct msg g_q[QMAX];
static size_t g_nq;
/* drop[from][to]: messages on that link are lost */
static int g_drop[N][N];
/* drop_cmd[from][to][command]: only that command is lost */
static int g_drop_cmd[N][N][256];
static struct reply g_rep[8192];
/* hold_sync[node]: its fsyncs do not complete (a slow disk) */
static int g_hold_sync[N];
static size_t g_nrep;
static uint64_t g_wall = 1000000;
static uint64_t g_repair_requests;
/* env->state_sync set: superblock fsyncs complete in do_syncs, unless
 * held (hold_state[node]) */
static int g_async_state;
static int g_hold_state[N];
/* view change messages each node sent (StartViewChange, DoViewChange,
 * StartView) */
static uint64_t g_vc_sent[N];

static int
env_send(void *ctx, struct vs_pgroup *g, uint8_t replica, const void *frame,
         size_t len)
{
    (void)g;
    struct node *n = ctx;
    ck_assert_uint_lt(replica, N);
    const struct vs_header *h = frame;
    ck_assert_uint_ge(len, sizeof(*h));
    if (h->f.command == VS_CMD_REQUEST_PREPARES) {
        /* upstream #4230: a repair range is never empty */
        const struct vs_hdr_request_prepares *rp = frame;
        ck_assert_uint_gt(rp->from_op, 0);
        ck_assert_uint_le(rp->from_op, rp->to_op);
        g_repair_requests++;
    }
    if (h->f.command == VS_CMD_START_VIEW_CHANGE ||
        h->f.command == VS_CMD_DO_VIEW_CHANGE ||
        h->f.command == VS_CMD_START_VIEW)
        g_vc_sent[n->idx]++;
    if (g_nq == QMAX)
        return -EAGAIN;
    struct msg *m = &g_q[g_nq++];
    m->from = (uint8_t)n->idx;
    m->to = replica;
    m->len = (uint32_t)len;
    m->data = malloc(len);
    memcpy(m->data, frame, len);
    return 0;
}

static void
env_reply(void *ctx, struct vs_pgroup *g, struct vs_u128 client,
          const void *frame, size_t len)
{
    (void)g;
    struct node *n = ctx;
    ck_assert_uint_ge(len, sizeof(struct vs_hdr_reply));
    const struct vs_hdr_reply *r = frame;
    ck_assert(vs_u128_eq(r->client, client));
    ck_assert_uint_lt(g_nrep, sizeof(g_rep) / sizeof(g_rep[0]));
    struct reply *x = &g_rep[g_nrep++];
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
        ck_assert_uint_eq(vs_load_u32(b + 4), g_id.stream_id);
        ck_assert_uint_eq(vs_load_u32(b + 12), g_id.partition_id);
        x->base_offset = vs_load_u64(b + 16);
    } else if (r->status != 0) {
        ck_assert_uint_eq(x->body_len, 0);
    }
}

static void
env_sync(void *ctx, struct vs_pgroup *g)
{
    (void)g;
    struct node *n = ctx;
    n->want_sync = 1;
}

static void
env_state_sync(void *ctx, struct vs_pgroup *g, int fd)
{
    (void)g;
    struct node *n = ctx;
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

static uint32_t g_slots = 256;
static enum part_durability g_durability = PART_FSYNC_EVERY_BATCH;
/* part_opts.replicated: the group's superblock is made at create */
static int g_replicated;

static struct pgroup_opts
group_opts(struct node *n)
{
    struct pgroup_opts po = {
        .cluster = g_cluster,
        .id = g_id,
        .replica = (uint8_t)n->idx,
        .replica_count = N,
        .journal_slots = g_slots,
        .pipeline_max = 8,
        .body_max = 1 << 20,
        .seed = 77 + (uint64_t)n->idx * 1000 + n->boots++,
        .timeouts = timeouts(),
    };
    return po;
}

static void
node_start(struct node *n)
{
    struct part_opts o;
    part_opts_default(&o);
    o.cut_damaged_tail = 1;
    o.segment_size = 16 * 1024; /* several segments per test */
    o.durability = g_durability;
    o.replicated = g_replicated;
    struct part_verdict v;
    int rc = part_open(&n->f.io, n->parts, &g_id, &o, 1, 0, &n->p, &v);
    ck_assert_msg(rc == 0, "part_open: %d %s", rc, v.msg);
    struct pgroup_opts po = group_opts(n);
    struct pgroup_env env = {n, env_send, env_reply, env_sync,
                             g_async_state ? env_state_sync : NULL};
    n->state_fd = -1;
    char why[512];
    rc = pgroup_open(&po, n->p, &env, &n->g, why, sizeof(why));
    ck_assert_msg(rc == 0, "pgroup_open: %d %s", rc, why);
    n->up = 1;
}

/* A crash: nothing more is synced or written. */
static void
node_kill(struct node *n)
{
    pgroup_close(n->g);
    part_abandon(n->p);
    n->g = NULL;
    n->p = NULL;
    n->up = 0;
    n->want_sync = 0;
    n->state_fd = -1;
}

/* A power loss before any fsync of the node's appends: every segment
 * and journal record file is emptied (what was written since the
 * partition was created never reached the disk). */
static void
node_lose_unsynced_appends(struct node *n)
{
    DIR *top = opendir(n->parts);
    ck_assert_ptr_nonnull(top);
    struct dirent *pd;
    while ((pd = readdir(top)) != NULL) {
        if (pd->d_name[0] == '.')
            continue;
        char dir[700];
        snprintf(dir, sizeof dir, "%s/%s", n->parts, pd->d_name);
        DIR *d = opendir(dir);
        if (d == NULL)
            continue;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            size_t l = strlen(e->d_name);
            if (l > 4 && (strcmp(e->d_name + l - 4, ".log") == 0 ||
                          strcmp(e->d_name + l - 4, ".vsr") == 0)) {
                char f[1000];
                snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
                ck_assert_int_eq(truncate(f, 0), 0);
            }
        }
        closedir(d);
    }
    closedir(top);
}

/* A lost disk: the node's partition directory is gone (a fresh member
 * again at its next start). */
static void
node_wipe(struct node *n)
{
    dt_rm_rf(n->root);
    dt_mkdtemp(n->root, sizeof(n->root), n->parts, sizeof(n->parts));
}

static void
setup(void)
{
    g_nq = 0;
    g_nrep = 0;
    g_repair_requests = 0;
    g_slots = 256;
    g_durability = PART_FSYNC_EVERY_BATCH;
    g_replicated = 0;
    g_async_state = 0;
    memset(g_hold_state, 0, sizeof(g_hold_state));
    memset(g_vc_sent, 0, sizeof(g_vc_sent));
    memset(g_drop, 0, sizeof(g_drop));
    memset(g_drop_cmd, 0, sizeof(g_drop_cmd));
    memset(g_hold_sync, 0, sizeof(g_hold_sync));
    for (int i = 0; i < N; i++) {
        struct node *n = &g_n[i];
        memset(n, 0, sizeof(*n));
        n->idx = i;
        dt_mkdtemp(n->root, sizeof(n->root), n->parts, sizeof(n->parts));
        sio_fault_init(&n->f, 1);
        node_start(n);
    }
}

static void
teardown(void)
{
    for (int i = 0; i < N; i++) {
        if (g_n[i].up)
            node_kill(&g_n[i]);
        dt_rm_rf(g_n[i].root);
    }
    for (size_t i = 0; i < g_nq; i++)
        free(g_q[i].data);
    g_nq = 0;
}

static void
do_syncs(void)
{
    for (int i = 0; i < N; i++) {
        struct node *n = &g_n[i];
        if (n->up && n->want_sync && !g_hold_sync[i]) {
            n->want_sync = 0;
            ck_assert_int_eq(pgroup_sync_now(n->g), 0);
        }
        if (n->up && n->state_fd >= 0 && !g_hold_state[i]) {
            ck_assert_int_eq(fsync(n->state_fd), 0);
            n->state_fd = -1;
            pgroup_on_state_synced(n->g);
        }
    }
}

/* Delivers what is queued now (new messages wait for the next step),
 * syncs, then ticks every live node. */
static void
step(void)
{
    size_t n = g_nq;
    struct msg *batch = malloc((n ? n : 1) * sizeof(*batch));
    memcpy(batch, g_q, n * sizeof(*batch));
    g_nq = 0;
    for (size_t i = 0; i < n; i++) {
        struct msg *m = &batch[i];
        struct node *to = &g_n[m->to];
        uint8_t cmd = m->len >= 256 ? m->data[60] : 0;
        if (to->up && g_n[m->from].up && !g_drop[m->from][m->to] &&
            !g_drop_cmd[m->from][m->to][cmd])
            (void)pgroup_on_message(to->g, m->data, m->len);
        free(m->data);
        do_syncs();
    }
    free(batch);
    do_syncs();
    for (int i = 0; i < N; i++)
        if (g_n[i].up)
            pgroup_tick(g_n[i].g);
    do_syncs();
    g_wall += 10000;
}

static int
settled_primary(void)
{
    for (int i = 0; i < N; i++)
        if (g_n[i].up && pgroup_is_settled_primary(g_n[i].g))
            return i;
    return -1;
}

static int
wait_primary(int not )
{
    for (int s = 0; s < MAX_STEPS; s++) {
        int p = settled_primary();
        if (p >= 0 && p != not )
            return p;
        step();
    }
    ck_abort_msg("no settled primary within %d steps", MAX_STEPS);
    return -1;
}

static struct vs_hdr_request
request(uint64_t client, uint64_t req)
{
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.cluster = g_cluster;
    r.f.command = VS_CMD_REQUEST;
    r.client.lo = client;
    r.client.hi = 0xAB;
    r.request = req;
    r.operation = VS_OP_SEND_MESSAGES;
    return r;
}

static uint8_t *
client_batch(uint64_t seed, uint32_t n, size_t *len)
{
    uint32_t pl[4], hl[4] = {0, 0, 0, 0};
    for (uint32_t i = 0; i < n; i++)
        pl[i] = 20 + (uint32_t)((seed * 7 + i) % 200);
    return dt_batch(seed, n, pl, hl, len);
}

static int
send_on(int node, uint64_t client, uint64_t req, uint32_t msgs)
{
    size_t len;
    uint8_t *b = client_batch(client * 1000 + req, msgs, &len);
    struct vs_hdr_request r = request(client, req);
    enum batch_err be;
    int rc = pgroup_on_send(g_n[node].g, &r, b, len, g_wall, &be);
    free(b);
    return rc;
}

static const struct reply *
find_reply(uint64_t client, uint64_t req, uint32_t status)
{
    for (size_t i = 0; i < g_nrep; i++)
        if (g_rep[i].client.lo == client && g_rep[i].request == req &&
            g_rep[i].status == status)
            return &g_rep[i];
    return NULL;
}

static size_t
count_replies(uint64_t client, uint64_t req)
{
    size_t c = 0;
    for (size_t i = 0; i < g_nrep; i++)
        if (g_rep[i].client.lo == client && g_rep[i].request == req &&
            g_rep[i].status == 0)
            c++;
    return c;
}

static void
wait_reply(uint64_t client, uint64_t req)
{
    for (int s = 0; s < MAX_STEPS && !find_reply(client, req, 0); s++)
        step();
    ck_assert_msg(find_reply(client, req, 0) != NULL,
                  "no reply for client %llu request %llu",
                  (unsigned long long)client, (unsigned long long)req);
}

/* Sends requests first..last of `clients` clients through the primary
 * (one in flight per client), waiting for each round's replies. */
static void
produce(uint64_t clients, uint64_t first, uint64_t last)
{
    for (uint64_t r = first; r <= last; r++) {
        for (uint64_t c = 1; c <= clients; c++) {
            int rc = -EAGAIN;
            for (int s = 0; s < MAX_STEPS && rc != 0; s++) {
                int p = settled_primary();
                rc = p >= 0 ? send_on(p, c, r, 1 + (uint32_t)(r % 3)) : -EAGAIN;
                if (rc != 0) {
                    /* transient: no primary yet, or this client's
                     * previous request (adopted by a new primary) is
                     * still in its pipeline */
                    ck_assert_msg(rc == -EAGAIN || rc == -EBUSY ||
                                      rc == -EREMOTE || rc == -EALREADY,
                                  "send: %d", rc);
                    step();
                }
            }
            ck_assert_int_eq(rc, 0);
        }
        for (uint64_t c = 1; c <= clients; c++)
            wait_reply(c, r);
    }
}

static void
wait_commit_all(uint64_t op)
{
    for (int s = 0; s < MAX_STEPS; s++) {
        int ok = 1;
        for (int i = 0; i < N; i++)
            if (g_n[i].up && pgroup_commit(g_n[i].g) < op)
                ok = 0;
        if (ok)
            return;
        step();
    }
    ck_abort_msg("commit %llu not reached everywhere", (unsigned long long)op);
}

static uint32_t
polled(int node, uint64_t *last)
{
    struct vs_wbuf out;
    struct part_poll_result r;
    vs_wbuf_init(&out);
    ck_assert_int_eq(part_poll(pgroup_part(g_n[node].g), PART_POLL_OFFSET, 0,
                               1000000, 64 << 20, &out, &r),
                     0);
    vs_wbuf_fini(&out);
    if (last)
        *last = r.count ? r.last_offset : 0;
    return r.count;
}

/* Every segment's .log and .vsr are byte-identical on the live nodes. */
static void
files_identical(void)
{
    int ref = -1;
    for (int i = 0; i < N && ref < 0; i++)
        if (g_n[i].up)
            ref = i;
    struct vs_part *rp = pgroup_part(g_n[ref].g);
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
            for (int i = 0; i < N; i++) {
                if (!g_n[i].up || i == ref)
                    continue;
                snprintf(b, sizeof(b), "%s/%s", part_dir(pgroup_part(g_n[i].g)),
                         name);
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

START_TEST(test_three_replicas_commit)
{
    int p = wait_primary(-1);
    ck_assert_int_eq(p, 0);
    /* a backup refuses and names the primary */
    ck_assert_int_eq(send_on(1, 9, 1, 1), -EREMOTE);
    ck_assert_int_eq(pgroup_primary(g_n[1].g), 0);
    ck_assert_uint_ne(pgroup_id(g_n[0].g), VS_METADATA_GROUP);
    ck_assert_uint_eq(pgroup_id(g_n[0].g), pgroup_group_id(&g_id));

    /* a send is invisible everywhere until it commits */
    ck_assert_int_eq(send_on(0, 1, 1, 3), 0);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(polled(i, NULL), 0);
    ck_assert(find_reply(1, 1, 0) == NULL);
    wait_reply(1, 1);
    ck_assert_uint_eq(polled(0, NULL), 3);

    produce(4, 2, 12);
    uint64_t top = pgroup_commit(g_n[0].g);
    ck_assert_uint_eq(top, 1 + 4 * 11);
    wait_commit_all(top);
    uint64_t last0 = 0, last = 0;
    uint32_t c0 = polled(0, &last0);
    for (int i = 1; i < N; i++) {
        ck_assert_uint_eq(polled(i, &last), c0);
        ck_assert_uint_eq(last, last0);
    }
    ck_assert_uint_eq(last0 + 1, c0); /* offsets 0..c0-1, no hole */
    files_identical();

    /* a retry of a committed request (the client reconnected: another
     * transport, same client id) is answered again, with no new op */
    size_t before = count_replies(3, 12);
    ck_assert_int_eq(send_on(0, 3, 12, 2), 0);
    ck_assert_uint_eq(count_replies(3, 12), before + 1);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), top);
    /* a retry while the first is still uncommitted: one op, one reply */
    ck_assert_int_eq(send_on(0, 5, 1, 1), 0);
    ck_assert_int_eq(send_on(0, 5, 1, 1), 0);
    wait_reply(5, 1);
    for (int s = 0; s < 50; s++)
        step();
    ck_assert_uint_eq(count_replies(5, 1), 1);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), top + 1);
    /* sends do not advance the request number: the request checksum
     * tells two batches of one (client, request) apart */
    {
        uint64_t op0 = vsr_op(pgroup_engine(g_n[0].g));
        uint64_t cks[2] = {0x1234, 0x5678};
        uint64_t base[2];
        for (int k = 0; k < 2; k++) {
            size_t len;
            uint8_t *b = client_batch(900 + (uint64_t)k, 2, &len);
            struct vs_hdr_request r = request(20, 1);
            r.request_checksum.lo = cks[k];
            int rc = -EAGAIN;
            for (int s = 0; s < MAX_STEPS && rc != 0; s++) {
                rc = pgroup_on_send(g_n[0].g, &r, b, len, g_wall, NULL);
                if (rc != 0) {
                    ck_assert_int_eq(rc, -EALREADY);
                    step();
                }
            }
            free(b);
            for (int s = 0; s < MAX_STEPS; s++) {
                int got = 0;
                for (size_t i = 0; i < g_nrep; i++)
                    if (g_rep[i].client.lo == 20 &&
                        g_rep[i].request_checksum.lo == cks[k]) {
                        got = 1;
                        base[k] = g_rep[i].base_offset;
                    }
                if (got)
                    break;
                step();
            }
        }
        ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op0 + 2);
        ck_assert_uint_eq(base[1], base[0] + 2);
        /* a retry of the first one: answered with its own offset */
        size_t len;
        uint8_t *b = client_batch(900, 2, &len);
        struct vs_hdr_request r = request(20, 1);
        r.request_checksum.lo = cks[0];
        size_t n0 = g_nrep;
        ck_assert_int_eq(pgroup_on_send(g_n[0].g, &r, b, len, g_wall, NULL), 0);
        free(b);
        ck_assert_uint_eq(g_nrep, n0 + 1);
        ck_assert_uint_eq(g_rep[n0].base_offset, base[0]);
        ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op0 + 2);
    }
    /* another request of a client with one in flight */
    ck_assert_int_eq(send_on(0, 6, 1, 1), 0);
    ck_assert_int_eq(send_on(0, 6, 2, 1), -EALREADY);
    wait_reply(6, 1);
    /* a refused batch is not proposed */
    {
        uint8_t junk[300] = {0};
        struct vs_hdr_request r = request(7, 1);
        enum batch_err be = BATCH_OK;
        ck_assert_int_eq(
            pgroup_on_send(g_n[0].g, &r, junk, sizeof(junk), g_wall, &be),
            -EINVAL);
        ck_assert_int_ne(be, BATCH_OK);
    }
    /* a consumer-offset op is replicated and applied everywhere */
    {
        struct pgroup_offset_op o = {
            .kind = PART_CONSUMER, .id = 11, .offset = 5};
        struct vs_hdr_request r = request(8, 1);
        ck_assert_int_eq(pgroup_on_offset(g_n[0].g, &r,
                                          VS_OP_STORE_CONSUMER_OFFSET, &o,
                                          g_wall),
                         0);
        wait_reply(8, 1);
        uint64_t op = pgroup_commit(g_n[0].g);
        wait_commit_all(op);
        struct part_consumer pc = {.kind = PART_CONSUMER, .id = 11};
        for (int i = 0; i < N; i++) {
            uint64_t off = 0;
            ck_assert_int_eq(part_offset_get(pgroup_part(g_n[i].g), &pc, &off),
                             0);
            ck_assert_uint_eq(off, 5);
        }
        /* an offset past the log is refused by the apply (4100) */
        o.offset = 1u << 30;
        r = request(8, 2);
        ck_assert_int_eq(pgroup_on_offset(g_n[0].g, &r,
                                          VS_OP_STORE_CONSUMER_OFFSET, &o,
                                          g_wall),
                         0);
        for (int s = 0; s < MAX_STEPS && !find_reply(8, 2, VS_E_INVALID_OFFSET);
             s++)
            step();
        ck_assert(find_reply(8, 2, VS_E_INVALID_OFFSET) != NULL);
    }
    wait_commit_all(pgroup_commit(g_n[0].g));
    files_identical();
}
END_TEST

START_TEST(test_primary_killed_view_change_rejoin)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(3, 1, 6);
    uint64_t top = pgroup_commit(g_n[0].g);
    node_kill(&g_n[0]);
    int p = wait_primary(0);
    ck_assert_int_ne(p, 0);
    /* the new primary continues, offsets after the old ones */
    uint64_t last_before = 0;
    polled(p, &last_before);
    produce(3, 7, 14);
    ck_assert_uint_gt(pgroup_commit(g_n[p].g), top);
    uint64_t last_after = 0;
    polled(p, &last_after);
    ck_assert_uint_gt(last_after, last_before);
    /* the old primary restarts, rejoins as a backup and repairs */
    node_start(&g_n[0]);
    produce(3, 15, 16);
    ck_assert_uint_gt(g_repair_requests, 0);
    uint64_t now = pgroup_commit(g_n[p].g);
    wait_commit_all(now);
    ck_assert(!pgroup_is_settled_primary(g_n[0].g));
    uint64_t l0 = 0, lp = 0;
    ck_assert_uint_eq(polled(0, &l0), polled(p, &lp));
    ck_assert_uint_eq(l0, lp);
    files_identical();
}
END_TEST

/* Upstream #4230: after a leader restart with nothing to repair the
 * repair range is empty; it must never be asked for (or assert). */
START_TEST(test_leader_restart_empty_repair)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(2, 1, 5);
    uint64_t top = pgroup_commit(g_n[0].g);
    wait_commit_all(top);
    for (int s = 0; s < 30; s++)
        step(); /* every commit heartbeat delivered: nothing missing */
    node_kill(&g_n[0]);
    node_start(&g_n[0]); /* back before anyone noticed */
    int p = wait_primary(-1);
    produce(2, 6, 8);
    wait_commit_all(pgroup_commit(g_n[p].g));
    ck_assert_uint_gt(pgroup_commit(g_n[0].g), top);
    /* the whole cluster restarts at once: every replica recovers */
    for (int i = 0; i < N; i++)
        node_kill(&g_n[i]);
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    p = wait_primary(-1);
    produce(2, 9, 10);
    wait_commit_all(pgroup_commit(g_n[p].g));
    files_identical();
}
END_TEST

/* Upstream #4075: a candidate adopts an uncommitted suffix whose body
 * only a replica that then dies holds. The commit must not stall
 * forever: the view change times out (view_change_status ticks, with
 * jitter and doubling) and the next view's merge, without the dead
 * replica's log, nacks the op; the group commits new sends again. */
START_TEST(test_unrepairable_adopted_suffix_bounded)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(2, 1, 3);
    uint64_t top = pgroup_commit(g_n[0].g);
    wait_commit_all(top);
    /* op top+1 reaches only node 0's journal, and node 0 never serves it
     * to a repair */
    g_drop[0][1] = g_drop[0][2] = 1;
    g_drop_cmd[0][1][VS_CMD_REPAIR_PREPARE] = 1;
    g_drop_cmd[0][1][VS_CMD_PREPARE] = 1; /* nor its retransmits */
    g_drop_cmd[0][2][VS_CMD_REPAIR_PREPARE] = 1;
    ck_assert_int_eq(send_on(0, 1, 4, 2), 0);
    for (int s = 0; s < 3; s++)
        step();
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), top + 1);
    /* node 2's view-change messages to node 1 are lost, so node 1 merges
     * with node 0's DoViewChange, which holds the op */
    g_drop[2][1] = 1;
    g_drop[0][1] = 0; /* node 0 hears the view change and answers */
    int adopted = 0;
    for (int s = 0; s < MAX_STEPS && !adopted; s++) {
        step();
        struct vs_hdr_prepare h;
        adopted = vsr_header(pgroup_engine(g_n[1].g), top + 1, &h) == 1;
    }
    ck_assert_msg(adopted, "node 1 never learned op %llu",
                  (unsigned long long)(top + 1));
    node_kill(&g_n[0]); /* the only holder of the body dies */
    g_drop[2][1] = 0;
    int p = -1;
    int steps = 0;
    for (; steps < MAX_STEPS && p < 0; steps++) {
        step();
        p = settled_primary();
    }
    ck_assert_msg(p >= 0, "stalled: no settled primary within %d steps",
                  MAX_STEPS);
    /* the op nobody could repair was cut by the next view's merge */
    ck_assert_uint_ge(vsr_stats(pgroup_engine(g_n[p].g))->nack_truncations +
                          vsr_stats(pgroup_engine(g_n[1].g))->nack_truncations,
                      1);
    ck_assert_uint_ge(vsr_view(pgroup_engine(g_n[p].g)), 2);
    /* bounded by a few view-change status timeouts (60 ticks, x16 at
     * most with the doubling) */
    ck_assert_int_le(steps, 60 * 16 * 4);
    produce(2, 5, 6);
    uint64_t now = pgroup_commit(g_n[p].g);
    ck_assert_uint_gt(now, top);
    wait_commit_all(now);
    /* the proposal of the lost op was answered "not committed" or never;
     * never acknowledged */
    ck_assert(find_reply(1, 4, 0) == NULL);
    struct vs_hdr_prepare h;
    ck_assert_int_eq(vsr_header(pgroup_engine(g_n[p].g), top + 1, &h), 1);
    ck_assert(!(h.client.lo == 1 && h.request == 4));
    files_identical();
}
END_TEST

/* No PrepareOk before the append is durable: with both backups' fsyncs
 * held, the primary's own fsync is not a quorum and nothing commits. */
START_TEST(test_prepare_ok_after_durable)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(1, 1, 2);
    uint64_t top = pgroup_commit(g_n[0].g);
    g_hold_sync[1] = g_hold_sync[2] = 1;
    ck_assert_int_eq(send_on(0, 1, 3, 2), 0);
    for (int s = 0; s < 40; s++)
        step();
    ck_assert_uint_eq(pgroup_commit(g_n[0].g), top);
    ck_assert(find_reply(1, 3, 0) == NULL);
    ck_assert_uint_eq(polled(0, NULL), polled(1, NULL));
    g_hold_sync[2] = 0; /* one backup's disk catches up: a quorum */
    wait_reply(1, 3);
    ck_assert_uint_eq(pgroup_commit(g_n[0].g), top + 1);
    g_hold_sync[1] = 0;
    wait_commit_all(top + 1);
    files_identical();
}
END_TEST

/* A backup out of space stops its group; the other two go on; once it is
 * reopened it rejoins and repairs what it missed. */
START_TEST(test_backup_enospc_stops_then_rejoins)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(2, 1, 2);
    sio_fault_arm(&g_n[2].f, SIO_WRITE, 1, ENOSPC, 7);
    produce(2, 3, 6);
    ck_assert(pgroup_fatal(g_n[2].g));
    struct pgroup_stats st;
    pgroup_stats(g_n[2].g, &st);
    ck_assert_uint_eq(st.enospc, 1);
    ck_assert(pgroup_is_settled_primary(g_n[0].g));
    sio_fault_reset(&g_n[2].f);
    node_kill(&g_n[2]);
    node_start(&g_n[2]);
    produce(2, 7, 8);
    wait_commit_all(pgroup_commit(g_n[0].g));
    files_identical();
}
END_TEST

/* A backup whose last batch was damaged on disk cuts it, marks it faulty
 * and gets it repaired: it never nacks it, and its log ends identical. */
START_TEST(test_damaged_tail_repaired)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(2, 1, 4);
    uint64_t top = pgroup_commit(g_n[0].g);
    wait_commit_all(top);
    char log[900];
    snprintf(log, sizeof(log), "%s/%020llu.log", part_dir(g_n[2].p),
             (unsigned long long)part_active_start(g_n[2].p));
    node_kill(&g_n[2]);
    {
        int fd = open(log, O_RDWR);
        ck_assert_int_ge(fd, 0);
        off_t at = dt_file_size(log) - 5;
        uint8_t b;
        ck_assert_int_eq(pread(fd, &b, 1, at), 1);
        b ^= 1;
        ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
        close(fd);
    }
    node_start(&g_n[2]);
    struct vs_vsr_info in;
    vsr_info(pgroup_engine(g_n[2].g), &in);
    ck_assert_uint_eq(in.faulty_op, top);
    ck_assert_uint_eq(in.journal_op, top - 1);
    produce(2, 5, 6);
    wait_commit_all(pgroup_commit(g_n[0].g));
    vsr_info(pgroup_engine(g_n[2].g), &in);
    ck_assert_uint_eq(in.faulty_op, 0);
    files_identical();
}
END_TEST

/* More ops than the journal window: checkpoints move it, the journal's
 * in-memory window is trimmed, a whole-cluster restart recovers from the
 * checkpoint, and a replica that missed a stretch inside the window
 * repairs it. */
START_TEST(test_long_run_checkpoints)
{
    for (int i = 0; i < N; i++) {
        node_kill(&g_n[i]);
        node_wipe(&g_n[i]); /* a fresh cluster with other options */
    }
    g_slots = 64;
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(4, 1, 40); /* 160 ops */
    uint64_t top = pgroup_commit(g_n[0].g);
    wait_commit_all(top);
    struct vs_vsr_persist d;
    vsr_durable(pgroup_engine(g_n[1].g), &d);
    ck_assert_uint_gt(d.checkpoint_op, 64);
    /* a backup misses a stretch shorter than the window */
    g_drop[0][2] = 1;
    produce(4, 41, 45);
    g_drop[0][2] = 0;
    wait_commit_all(pgroup_commit(g_n[0].g));
    files_identical();
    for (int i = 0; i < N; i++)
        node_kill(&g_n[i]);
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    int p = wait_primary(-1);
    uint64_t c0 = 0, c = 0;
    c0 = polled(p, NULL);
    produce(4, 46, 48);
    wait_commit_all(pgroup_commit(g_n[p].g));
    for (int i = 0; i < N; i++) {
        c = polled(i, NULL);
        ck_assert_uint_gt(c, c0);
        ck_assert_uint_eq(c, polled(p, NULL));
    }
    files_identical();
}
END_TEST

/* Interval policy: a replica acknowledges once written; the fsync
 * follows within PG_INTERVAL_TICKS. */
START_TEST(test_interval_policy)
{
    for (int i = 0; i < N; i++) {
        node_kill(&g_n[i]);
        node_wipe(&g_n[i]); /* a fresh cluster with other options */
    }
    g_durability = PART_FSYNC_INTERVAL;
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    ck_assert_int_eq(wait_primary(-1), 0);
    g_hold_sync[1] = g_hold_sync[2] = 1; /* acks do not wait for fsyncs */
    produce(2, 1, 5);
    g_hold_sync[1] = g_hold_sync[2] = 0;
    for (int s = 0; s < 30; s++)
        step();
    for (int i = 0; i < N; i++) {
        struct pgroup_stats st;
        pgroup_stats(g_n[i].g, &st);
        ck_assert_uint_gt(st.syncs, 0);
        ck_assert_uint_eq(pj_durable(pgroup_journal(g_n[i].g)),
                          pj_head(pgroup_journal(g_n[i].g)));
    }
    wait_commit_all(pgroup_commit(g_n[0].g));
    files_identical();
}
END_TEST

static int
offset_op(int node, uint64_t client, uint64_t req, uint8_t operation,
          uint32_t consumer, uint64_t offset)
{
    struct pgroup_offset_op o = {
        .kind = PART_CONSUMER, .id = consumer, .offset = offset};
    struct vs_hdr_request r = request(client, req);
    r.operation = operation;
    return pgroup_on_offset(g_n[node].g, &r, operation, &o, g_wall);
}

static void
wait_status(uint64_t client, uint64_t req, uint32_t status)
{
    for (int s = 0; s < MAX_STEPS && !find_reply(client, req, status); s++)
        step();
    ck_assert_msg(find_reply(client, req, status) != NULL,
                  "no reply %u for client %llu request %llu", status,
                  (unsigned long long)client, (unsigned long long)req);
}

/* The result of an offset op is a function of the committed log up to
 * it: a store refused at its commit stays refused when a restart replays
 * it over a partition that meanwhile holds later batches; an applied op
 * is not applied again; every replica ends with the same offsets. */
START_TEST(test_offset_ops_replay_deterministic)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(1, 1, 2); /* a few messages */
    ck_assert_int_eq(offset_op(0, 40, 1, VS_OP_STORE_CONSUMER_OFFSET, 1, 50),
                     0);
    wait_status(40, 1, VS_E_INVALID_OFFSET);
    ck_assert_int_eq(offset_op(0, 40, 2, VS_OP_STORE_CONSUMER_OFFSET, 2, 1), 0);
    wait_status(40, 2, 0);
    ck_assert_int_eq(offset_op(0, 40, 3, VS_OP_STORE_CONSUMER_OFFSET, 3, 1), 0);
    wait_status(40, 3, 0);
    ck_assert_int_eq(offset_op(0, 40, 4, VS_OP_DELETE_CONSUMER_OFFSET, 3, 0),
                     0);
    wait_status(40, 4, 0);
    ck_assert_int_eq(offset_op(0, 40, 5, VS_OP_DELETE_CONSUMER_OFFSET, 3, 0),
                     0);
    wait_status(40, 5, VS_E_CONSUMER_OFFSET_NOT_FOUND);
    produce(2, 3, 30); /* now far more than 50 messages */
    wait_commit_all(pgroup_commit(g_n[0].g));
    for (int i = 0; i < N; i++)
        node_kill(&g_n[i]);
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    int p = wait_primary(-1);
    produce(2, 31, 32);
    wait_commit_all(pgroup_commit(g_n[p].g));
    for (int i = 0; i < N; i++) {
        struct vs_part *pp = pgroup_part(g_n[i].g);
        struct part_consumer c1 = {.kind = PART_CONSUMER, .id = 1};
        struct part_consumer c2 = {.kind = PART_CONSUMER, .id = 2};
        struct part_consumer c3 = {.kind = PART_CONSUMER, .id = 3};
        uint64_t off = 0;
        ck_assert_int_eq(part_offset_get(pp, &c1, &off), -ENOENT);
        ck_assert_int_eq(part_offset_get(pp, &c2, &off), 0);
        ck_assert_uint_eq(off, 1);
        ck_assert_int_eq(part_offset_get(pp, &c3, &off), -ENOENT);
        ck_assert_int_eq(pgroup_fatal(g_n[i].g), 0);
    }
    /* retries after the restart: the table (rebuilt by the replay)
     * answers a cached one, an older one is never proposed again */
    uint64_t op = vsr_op(pgroup_engine(g_n[p].g));
    size_t n0 = g_nrep;
    ck_assert_int_eq(offset_op(p, 40, 2, VS_OP_STORE_CONSUMER_OFFSET, 2, 1), 0);
    ck_assert_uint_eq(g_nrep, n0 + 1);
    ck_assert_uint_eq(g_rep[n0].status, 0);
    ck_assert_int_eq(offset_op(p, 40, 1, VS_OP_STORE_CONSUMER_OFFSET, 1, 50),
                     -ESTALE);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[p].g)), op);
}
END_TEST

/* A late copy of an old request number is never proposed again. */
START_TEST(test_stale_request_never_reproposed)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    for (uint64_t r = 1; r <= 6; r++) {
        ck_assert_int_eq(send_on(0, 30, r, 1), 0);
        wait_reply(30, r);
    }
    uint64_t op = vsr_op(pgroup_engine(g_n[0].g));
    /* request 1 with another checksum (another batch): refused */
    size_t len;
    uint8_t *b = client_batch(77, 1, &len);
    struct vs_hdr_request r = request(30, 1);
    r.request_checksum.lo = 0xDEAD;
    ck_assert_int_eq(pgroup_on_send(g_n[0].g, &r, b, len, g_wall, NULL),
                     -ESTALE);
    free(b);
    /* request 1 as it was, after more than four newer ones: still never
     * proposed again (refused: it is no longer cached) */
    ck_assert_int_eq(send_on(0, 30, 1, 1), -ESTALE);
    /* the newest one as it was: answered from the table */
    size_t n0 = g_nrep;
    ck_assert_int_eq(send_on(0, 30, 6, 1), 0);
    ck_assert_uint_eq(g_nrep, n0 + 1);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op);
    struct pgroup_stats st;
    pgroup_stats(g_n[0].g, &st);
    ck_assert_uint_eq(st.stale, 2);
    /* the current request number with a new checksum: a new batch */
    b = client_batch(78, 1, &len);
    r = request(30, 6);
    r.request_checksum.lo = 0xBEEF;
    ck_assert_int_eq(pgroup_on_send(g_n[0].g, &r, b, len, g_wall, NULL), 0);
    free(b);
    for (int s = 0; s < 50; s++)
        step();
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op + 1);
}
END_TEST

/* A primary that dies before anything of its group was durable on its
 * disk (its fsync never ran) restarts Recovering, never as a fresh member
 * of view 0 (whose primary it is: it would propose another op 1 over the
 * one its backups acknowledged); the group keeps one op 1. */
START_TEST(test_restart_before_anything_durable)
{
    g_hold_sync[0] = 1; /* the primary's own appends never become durable */
    int rc = -EAGAIN;
    for (int s = 0; s < MAX_STEPS && rc != 0; s++) {
        rc = send_on(0, 1, 1, 2);
        if (rc != 0)
            step();
    }
    ck_assert_int_eq(rc, 0);
    for (int s = 0; s < 20; s++)
        step();
    struct vs_vsr_info in;
    vsr_info(pgroup_engine(g_n[1].g), &in);
    ck_assert_uint_ge(in.journal_op, 1); /* the backups hold op 1 */
    node_kill(&g_n[0]);
    node_lose_unsynced_appends(&g_n[0]);
    g_hold_sync[0] = 0;
    node_start(&g_n[0]);
    vsr_info(pgroup_engine(g_n[0].g), &in);
    ck_assert_int_eq(in.status, VSR_STATUS_RECOVERING);
    wait_primary(-1);
    produce(2, 2, 4);
    wait_commit_all(pgroup_commit(g_n[1].g));
    files_identical();
}
END_TEST

static int
state_file_present(const struct node *n)
{
    char name[128], path[1000];
    ck_assert_int_eq(pdir_name(name, sizeof(name), &g_id), 0);
    snprintf(path, sizeof(path), "%s/%s/vsr_state", n->parts, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* A replicated member's partition is created with its group's first
 * superblock (part_opts.replicated): the group's first run starts as a
 * fresh member of view 0 without writing one; any later open - the
 * group reopened on the same handle, or a restart - recovers, and a
 * primary that died before anything of it was durable still restarts
 * Recovering (the mark was durable at create). */
START_TEST(test_superblock_made_at_create)
{
    for (int i = 0; i < N; i++) {
        node_kill(&g_n[i]);
        node_wipe(&g_n[i]);
    }
    g_replicated = 1;
    struct vs_vsr_info in;
    for (int i = 0; i < N; i++) {
        node_start(&g_n[i]);
        ck_assert(state_file_present(&g_n[i]));
        vsr_info(pgroup_engine(g_n[i].g), &in);
        ck_assert_int_eq(in.status, VSR_STATUS_NORMAL);
        struct pgroup_stats ps;
        pgroup_stats(g_n[i].g, &ps);
        ck_assert_uint_eq(ps.superblock_writes, 0);
    }
    /* the created mark is taken once: node 2's group reopened on the
     * same partition handle recovers */
    ck_assert_int_eq(part_take_created(g_n[2].p), 0);
    pgroup_close(g_n[2].g);
    g_n[2].want_sync = 0;
    struct pgroup_opts po = group_opts(&g_n[2]);
    struct pgroup_env env = {&g_n[2], env_send, env_reply, env_sync, NULL};
    char why[512];
    ck_assert_int_eq(
        pgroup_open(&po, g_n[2].p, &env, &g_n[2].g, why, sizeof(why)), 0);
    vsr_info(pgroup_engine(g_n[2].g), &in);
    ck_assert_int_eq(in.status, VSR_STATUS_RECOVERING);
    /* the primary's appends never durable, then it dies */
    g_hold_sync[0] = 1;
    int rc = -EAGAIN;
    for (int s = 0; s < MAX_STEPS && rc != 0; s++) {
        rc = send_on(0, 1, 1, 2);
        if (rc != 0)
            step();
    }
    ck_assert_int_eq(rc, 0);
    for (int s = 0; s < 40; s++)
        step();
    node_kill(&g_n[0]);
    node_lose_unsynced_appends(&g_n[0]);
    g_hold_sync[0] = 0;
    node_start(&g_n[0]);
    vsr_info(pgroup_engine(g_n[0].g), &in);
    ck_assert_int_eq(in.status, VSR_STATUS_RECOVERING);
    wait_primary(-1);
    produce(2, 2, 4);
    wait_commit_all(pgroup_commit(g_n[1].g));
    files_identical();
}
END_TEST

/* Superblock fsyncs off the loop (env->state_sync): a backup's view
 * change writes its superblock, and its StartViewChange - and every
 * view change message after it - waits until the runtime reports that
 * write fsynced (persist before send); then the view change completes
 * and the group commits again. */
START_TEST(test_superblock_fsync_off_loop_withholds_sends)
{
    for (int i = 0; i < N; i++) {
        node_kill(&g_n[i]);
        node_wipe(&g_n[i]);
    }
    g_async_state = 1;
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(2, 1, 3);
    g_hold_state[1] = g_hold_state[2] = 1;
    uint64_t vc1 = g_vc_sent[1], vc2 = g_vc_sent[2];
    node_kill(&g_n[0]);
    /* well past the backups' timeout: both wrote view 1, unsynced */
    for (int s = 0; s < 400; s++)
        step();
    ck_assert_int_ge(g_n[1].state_fd, 0);
    ck_assert_int_ge(g_n[2].state_fd, 0);
    ck_assert_uint_eq(g_vc_sent[1], vc1);
    ck_assert_uint_eq(g_vc_sent[2], vc2);
    ck_assert_int_eq(settled_primary(), -1);
    /* one node's fsync completes: it speaks, the other still may not */
    g_hold_state[1] = 0;
    for (int s = 0; s < 5; s++)
        step();
    ck_assert_uint_gt(g_vc_sent[1], vc1);
    ck_assert_uint_eq(g_vc_sent[2], vc2);
    g_hold_state[2] = 0;
    int p = wait_primary(0);
    ck_assert(p == 1 || p == 2);
    produce(2, 4, 5);
    node_start(&g_n[0]);
    wait_commit_all(pgroup_commit(g_n[p].g));
    files_identical();
}
END_TEST

/* The create-time superblock's error path: it is never written over. */
START_TEST(test_state_format_refuses_existing)
{
    char name[128], dir[1000];
    ck_assert_int_eq(pdir_name(name, sizeof(name), &g_id), 0);
    snprintf(dir, sizeof(dir), "%s/%s", g_n[1].parts, name);
    ck_assert(state_file_present(&g_n[1])); /* the group's first open */
    ck_assert_int_eq(pj_state_format(&g_n[1].f.io, dir), -EEXIST);
    ck_assert_int_eq(pj_state_format(&g_n[1].f.io, "/nonexistent/dir"),
                     -ENOENT);
}
END_TEST

/* The client table outlives the journal window: after a restart whose
 * recovered window no longer holds a client's proposals (many checkpoints
 * later), a late copy of its last one is answered from the saved table,
 * an older one refused, and neither is committed again. */
START_TEST(test_client_table_survives_restart)
{
    for (int i = 0; i < N; i++) {
        node_kill(&g_n[i]);
        node_wipe(&g_n[i]);
    }
    g_slots = 16; /* a checkpoint every 8 applied ops */
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    ck_assert_int_eq(wait_primary(-1), 0);
    for (uint64_t r = 1; r <= 6; r++) {
        ck_assert_int_eq(send_on(0, 60, r, 1), 0);
        wait_reply(60, r);
    }
    const struct reply *last = find_reply(60, 6, 0);
    uint64_t base3 = last->base_offset, op3 = last->op;
    produce(3, 1, 12); /* 36 ops of other clients: the window moves on */
    wait_commit_all(pgroup_commit(g_n[0].g));
    struct vs_vsr_persist d;
    vsr_durable(pgroup_engine(g_n[0].g), &d);
    ck_assert_uint_gt(d.checkpoint_op, op3 + g_slots);
    for (int i = 0; i < N; i++)
        node_kill(&g_n[i]);
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    int p = wait_primary(-1);
    uint64_t op = vsr_op(pgroup_engine(g_n[p].g));
    size_t n0 = g_nrep;
    ck_assert_int_eq(send_on(p, 60, 6, 1), 0); /* the late copy */
    ck_assert_uint_eq(g_nrep, n0 + 1);
    ck_assert_uint_eq(g_rep[n0].status, 0);
    ck_assert_uint_eq(g_rep[n0].op, op3);
    ck_assert_uint_eq(g_rep[n0].base_offset, base3);
    ck_assert_int_eq(send_on(p, 60, 1, 1), -ESTALE);
    for (int s = 0; s < 30; s++)
        step();
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[p].g)), op);
    /* a damaged table file: the group still opens (from the window) */
    char path[900];
    snprintf(path, sizeof(path), "%s/%s", part_dir(pgroup_part(g_n[p].g)),
             PGC_FILE);
    node_kill(&g_n[p]);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 30, SEEK_SET), 0);
    fputc(0x5A, f);
    fclose(f);
    node_start(&g_n[p]);
    produce(1, 13, 14);
    wait_commit_all(pgroup_commit(g_n[(p + 1) % N].g));
    files_identical();
}
END_TEST

static void
hdr_of(struct vs_hdr_prepare *h, uint64_t client, uint64_t request,
       uint64_t checksum, uint64_t op)
{
    memset(h, 0, sizeof(*h));
    h->client.lo = client;
    h->client.hi = client ? 1 : 0;
    h->request = request;
    h->request_checksum.lo = checksum;
    h->op = op;
    h->operation = VS_OP_SEND_MESSAGES;
}

/* The "VSPC" form round-trips and every damage is refused. */
START_TEST(test_client_table_codec)
{
    struct pgc_table t, u;
    pgc_init(&t, 3);
    pgc_init(&u, 3);
    struct vs_hdr_prepare h;
    uint64_t op = 0;
    for (uint64_t i = 1; i <= 9; i++) {
        hdr_of(&h, 1 + i % 2, i, 100 + i, i);
        pgc_record(&t, &h, i * 10, 0);
    }
    hdr_of(&h, 1, 9, 109, 9); /* the same op again: not recorded twice */
    pgc_record(&t, &h, 90, 0);
    hdr_of(&h, 0, 1, 1, 10); /* no client: not recorded */
    pgc_record(&t, &h, 0, 0);
    ck_assert_uint_eq(t.n, 2);
    /* a fourth client evicts the least recently committed one */
    hdr_of(&h, 7, 1, 700, 11);
    pgc_record(&t, &h, 0, 4100);
    hdr_of(&h, 8, 1, 800, 12);
    pgc_record(&t, &h, 0, 0);
    ck_assert_uint_eq(t.n, 3);
    struct vs_u128 c2 = {2, 1}, c1 = {1, 1}, c7 = {7, 1};
    ck_assert_ptr_null(pgc_find(&t, c2)); /* last committed at op 8 */
    ck_assert_uint_eq(pgc_find(&t, c1)->max_request, 9);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    pgc_encode(&t, 12, &w);
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len, &op), 0);
    ck_assert_uint_eq(op, 12);
    ck_assert_uint_eq(u.n, 3);
    struct vs_u128 k = {109, 0};
    const struct pgc_done *d = pgc_done_find(&u, c1, 9, k);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(d->op, 9);
    ck_assert_uint_eq(d->base_offset, 90);
    k.lo = 700;
    ck_assert_uint_eq(pgc_done_find(&u, c7, 1, k)->code, 4100);
    k.lo = 101; /* evicted from client 1's ring of four */
    ck_assert_ptr_null(pgc_done_find(&u, c1, 1, k));
    /* re-encoding the decoded table gives the same bytes */
    struct vs_wbuf w2;
    vs_wbuf_init(&w2);
    pgc_encode(&u, 12, &w2);
    ck_assert_uint_eq(w.len, w2.len);
    ck_assert_int_eq(memcmp(w.data, w2.data, w.len), 0);
    /* damage: a flipped byte, trailing bytes, a short file, too many
     * clients for the capacity, a duplicate client id (re-sealed) */
    w.data[40] ^= 1;
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len, &op), -EBADMSG);
    w.data[40] ^= 1;
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len - 1, &op), -EBADMSG);
    ck_assert_int_eq(pgc_decode(&u, w.data, 20, &op), -EBADMSG);
    struct pgc_table small;
    pgc_init(&small, 2);
    ck_assert_int_eq(pgc_decode(&small, w.data, w.len, &op), -EBADMSG);
    pgc_fini(&small);
    memcpy(w.data + 28 + PGC_CLIENT_LEN, w.data + 28, 16);
    vs_store_u64(w.data + w.len - 8, vs_xxh3_64(w.data, w.len - 8));
    ck_assert_int_eq(pgc_decode(&u, w.data, w.len, &op), -EBADMSG);
    ck_assert_uint_eq(u.n, 3); /* unchanged by the refusals */
    vs_wbuf_fini(&w);
    vs_wbuf_fini(&w2);
    pgc_fini(&t);
    pgc_fini(&u);
}
END_TEST

static uint64_t
offset_on(int node, uint32_t consumer)
{
    struct part_consumer c = {.kind = PART_CONSUMER, .id = consumer};
    uint64_t off = UINT64_MAX;
    if (part_offset_get(pgroup_part(g_n[node].g), &c, &off) != 0)
        return UINT64_MAX;
    return off;
}

/* A poll's auto-commit is an op of the group proposed by the primary
 * only; it raises the offset on every replica, never lowers it (an
 * explicit store does), and needs no client. */
START_TEST(test_autocommit_group_op)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(1, 1, 4); /* at least 4 messages */
    struct pgroup_offset_op o = {.kind = PART_CONSUMER, .id = 9, .offset = 3};
    ck_assert_int_eq(pgroup_on_autocommit(g_n[1].g, &o, g_wall), -EREMOTE);
    uint64_t op = vsr_op(pgroup_engine(g_n[0].g));
    ck_assert_int_eq(pgroup_on_autocommit(g_n[0].g, &o, g_wall), 0);
    /* the same one in flight: not proposed twice */
    ck_assert_int_eq(pgroup_on_autocommit(g_n[0].g, &o, g_wall), 0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op + 1);
    wait_commit_all(op + 1);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 3);
    /* lower: nothing proposed (the applied offset is above) */
    o.offset = 1;
    ck_assert_int_eq(pgroup_on_autocommit(g_n[0].g, &o, g_wall), 0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op + 1);
    /* beyond the committed frontier: committed, refused at its apply */
    o.offset = 1000000;
    ck_assert_int_eq(pgroup_on_autocommit(g_n[0].g, &o, g_wall), 0);
    wait_commit_all(op + 2);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 3);
    /* an explicit store lowers it */
    ck_assert_int_eq(offset_op(0, 41, 1, VS_OP_STORE_CONSUMER_OFFSET, 9, 1), 0);
    wait_status(41, 1, 0);
    wait_commit_all(op + 3);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 1);
    /* a raising store proposed while a lower one is applied: raised */
    o.offset = 2;
    ck_assert_int_eq(pgroup_on_autocommit(g_n[0].g, &o, g_wall), 0);
    wait_commit_all(op + 4);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(offset_on(i, 9), 2);
    /* the body's raise flag: 0 and 1 only */
    uint8_t b[PGROUP_OFFSET_BODY];
    struct pgroup_offset_op x;
    o.raise = 1;
    pgroup_offset_encode(&o, b);
    ck_assert_uint_eq(b[1], 1);
    ck_assert_int_eq(pgroup_offset_decode(b, sizeof(b), &x), 0);
    ck_assert_uint_eq(x.raise, 1);
    b[1] = 2;
    ck_assert_int_eq(pgroup_offset_decode(b, sizeof(b), &x), -EINVAL);
    /* every replica kept the same files */
    files_identical();
}
END_TEST

static size_t
segments_of(int node, uint64_t *starts, size_t max)
{
    uint64_t start, size;
    size_t n = 0;
    struct vs_part *pp = pgroup_part(g_n[node].g);
    while (n < max && part_segment_at(pp, n, &start, &size) == 0)
        starts[n++] = start;
    return n;
}

static int
vsr_file_exists(int node, uint64_t start)
{
    char path[900];
    snprintf(path, sizeof(path), "%s/%020llu.vsr",
             part_dir(pgroup_part(g_n[node].g)), (unsigned long long)start);
    return access(path, F_OK) == 0;
}

/* Retention / DeleteSegments of a replicated partition is an op of its
 * group: only the primary proposes it, every replica (one of them cut
 * off while it commits, repaired after) deletes the same sealed segments
 * and their .vsr records, the logs stay byte-identical, and the group
 * restarts over the trimmed log. */
START_TEST(test_trim_same_segments_everywhere)
{
    for (int i = 0; i < N; i++) {
        node_kill(&g_n[i]);
        node_wipe(&g_n[i]);
    }
    /* no checkpoint during the run: the restart below recovers a journal
     * whose first ops were trimmed away */
    g_slots = 1024;
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(4, 1, 40);
    wait_commit_all(pgroup_commit(g_n[0].g));
    uint64_t st[64];
    size_t n = segments_of(0, st, 64);
    ck_assert_uint_ge(n, 4);
    /* a backup never proposes one; bad kinds are refused */
    ck_assert_int_eq(
        pgroup_on_trim(g_n[1].g, PGROUP_TRIM_RETENTION, st[2], g_wall),
        -EREMOTE);
    ck_assert_int_eq(pgroup_on_trim(g_n[0].g, 9, st[2], g_wall), -EINVAL);
    /* nothing to delete: not proposed */
    uint64_t op = vsr_op(pgroup_engine(g_n[0].g));
    ck_assert_int_eq(
        pgroup_on_trim(g_n[0].g, PGROUP_TRIM_RETENTION, st[0], g_wall), 0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op);
    /* the same watermark from the pure planner (the size cap) */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a, sz;
        ck_assert_int_eq(part_segment_at(pgroup_part(g_n[0].g), i, &a, &sz), 0);
        total += sz;
    }
    uint64_t s0, sz0, s1, sz1;
    part_segment_at(pgroup_part(g_n[0].g), 0, &s0, &sz0);
    part_segment_at(pgroup_part(g_n[0].g), 1, &s1, &sz1);
    ck_assert_uint_eq(part_retention_watermark(pgroup_part(g_n[0].g), 0, 0,
                                               total - sz0 - sz1, 0),
                      st[2]);
    ck_assert_uint_eq(
        part_retention_watermark(pgroup_part(g_n[0].g), 0, 0, 0, st[2]), st[2]);
    ck_assert_uint_eq(
        part_retention_watermark(pgroup_part(g_n[0].g), 0, 0, 0, 0), 0);
    g_drop[0][2] = 1; /* replica 2 misses the trim's prepare */
    ck_assert_int_eq(
        pgroup_on_trim(g_n[0].g, PGROUP_TRIM_RETENTION, st[2], g_wall), 0);
    /* one trim at a time */
    ck_assert_int_eq(
        pgroup_on_trim(g_n[0].g, PGROUP_TRIM_DELETE_SEGMENTS, st[3], g_wall),
        0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op + 1);
    for (int s = 0; s < 30; s++)
        step();
    ck_assert_uint_eq(segments_of(2, st + 32, 32), n); /* not yet */
    g_drop[0][2] = 0;
    produce(4, 41, 42);
    wait_commit_all(pgroup_commit(g_n[0].g));
    for (int i = 0; i < N; i++) {
        uint64_t mine[64];
        size_t m = segments_of(i, mine, 64);
        ck_assert_uint_ge(m, n - 2);
        ck_assert_uint_eq(mine[0], st[2]);
        ck_assert_int_eq(vsr_file_exists(i, st[0]), 0);
        ck_assert_int_eq(vsr_file_exists(i, st[1]), 0);
        ck_assert_int_eq(vsr_file_exists(i, st[2]), 1);
        struct pgroup_stats ps;
        pgroup_stats(g_n[i].g, &ps);
        ck_assert_uint_eq(ps.trims, 1);
        ck_assert_uint_eq(ps.segments_trimmed, 2);
        ck_assert_int_eq(pgroup_fatal(g_n[i].g), 0);
    }
    files_identical();
    /* a poll from offset 0 starts at the first kept segment everywhere */
    uint64_t c0 = polled(0, NULL);
    for (int i = 1; i < N; i++)
        ck_assert_uint_eq(polled(i, NULL), c0);
    /* the group restarts over the trimmed log and keeps going */
    for (int i = 0; i < N; i++)
        node_kill(&g_n[i]);
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    int p = wait_primary(-1);
    produce(4, 43, 45);
    wait_commit_all(pgroup_commit(g_n[p].g));
    files_identical();
    /* the trim body's refusals */
    uint8_t b[PGROUP_TRIM_BODY];
    struct pgroup_trim_op t = {.kind = PGROUP_TRIM_RETENTION,
                               .first = 10,
                               .watermark = 20},
                          x;
    pgroup_trim_encode(&t, b);
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b), &x), 0);
    ck_assert_uint_eq(x.watermark, 20);
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b) - 1, &x), -EINVAL);
    b[3] = 1;
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b), &x), -EINVAL);
    t.watermark = 10;
    pgroup_trim_encode(&t, b);
    ck_assert_int_eq(pgroup_trim_decode(b, sizeof(b), &x), -EINVAL);
}
END_TEST

/* A purge is an op of the group: every replica seals its active segment
 * at the purge's offset when it appends it, and at its commit deletes
 * every segment below it and every consumer offset, records the
 * generation; offsets continue; a repeat of the generation is nothing. */
START_TEST(test_purge_group_op)
{
    ck_assert_int_eq(wait_primary(-1), 0);
    produce(4, 1, 30);
    ck_assert_int_eq(offset_op(0, 42, 1, VS_OP_STORE_CONSUMER_OFFSET, 3, 5), 0);
    wait_status(42, 1, 0);
    wait_commit_all(pgroup_commit(g_n[0].g));
    uint64_t last = 0;
    uint32_t before = polled(0, &last);
    ck_assert_uint_gt(before, 0);
    uint64_t w = last + 1;
    ck_assert_int_eq(pgroup_on_purge(g_n[1].g, 1, g_wall), -EREMOTE);
    ck_assert_int_eq(pgroup_on_purge(g_n[0].g, 0, g_wall), -EINVAL);
    ck_assert_int_eq(pgroup_on_purge(g_n[0].g, 1, g_wall), 0);
    produce(4, 31, 33); /* sends right behind it */
    wait_commit_all(pgroup_commit(g_n[0].g));
    for (int i = 0; i < N; i++) {
        struct vs_part *pp = pgroup_part(g_n[i].g);
        ck_assert_uint_eq(part_purge_generation(pp), 1);
        uint64_t st[64];
        ck_assert_uint_ge(segments_of(i, st, 64), 1);
        ck_assert_uint_eq(st[0], w);
        ck_assert_uint_eq(offset_on(i, 3), UINT64_MAX);
        uint64_t l = 0;
        /* 4 clients x (2 + 3 + 1) messages (rounds 31..33) */
        ck_assert_uint_eq(polled(i, &l), 24);
        ck_assert_uint_eq(l, w + 24 - 1);
        ck_assert_int_eq(pgroup_fatal(g_n[i].g), 0);
    }
    files_identical();
    /* the same generation again: nothing proposed */
    uint64_t op = vsr_op(pgroup_engine(g_n[0].g));
    ck_assert_int_eq(pgroup_on_purge(g_n[0].g, 1, g_wall), 0);
    ck_assert_uint_eq(vsr_op(pgroup_engine(g_n[0].g)), op);
    /* a restart keeps it; the next generation purges again */
    for (int i = 0; i < N; i++)
        node_kill(&g_n[i]);
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    int p = wait_primary(-1);
    /* a replica serves what it knows committed: after the restart, once
     * the new view commits the old head again */
    wait_commit_all(op);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(polled(i, NULL), 24);
    ck_assert_int_eq(pgroup_on_purge(g_n[p].g, 2, g_wall), 0);
    produce(2, 34, 35);
    wait_commit_all(pgroup_commit(g_n[p].g));
    for (int i = 0; i < N; i++) {
        ck_assert_uint_eq(part_purge_generation(pgroup_part(g_n[i].g)), 2);
        ck_assert_uint_eq(polled(i, NULL), 2 * (2 + 3)); /* rounds 34, 35 */
    }
    files_identical();
}
END_TEST

static Suite *
pgroup_suite(void)
{
    Suite *s = suite_create("pgroup");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_three_replicas_commit);
    tcase_add_test(tc, test_primary_killed_view_change_rejoin);
    tcase_add_test(tc, test_leader_restart_empty_repair);
    tcase_add_test(tc, test_unrepairable_adopted_suffix_bounded);
    tcase_add_test(tc, test_prepare_ok_after_durable);
    tcase_add_test(tc, test_backup_enospc_stops_then_rejoins);
    tcase_add_test(tc, test_damaged_tail_repaired);
    tcase_add_test(tc, test_long_run_checkpoints);
    tcase_add_test(tc, test_interval_policy);
    tcase_add_test(tc, test_offset_ops_replay_deterministic);
    tcase_add_test(tc, test_stale_request_never_reproposed);
    tcase_add_test(tc, test_restart_before_anything_durable);
    tcase_add_test(tc, test_superblock_made_at_create);
    tcase_add_test(tc, test_state_format_refuses_existing);
    tcase_add_test(tc, test_superblock_fsync_off_loop_withholds_sends);
    tcase_add_test(tc, test_client_table_survives_restart);
    tcase_add_test(tc, test_client_table_codec);
    tcase_add_test(tc, test_autocommit_group_op);
    tcase_add_test(tc, test_trim_same_segments_everywhere);
    tcase_add_test(tc, test_purge_group_op);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(pgroup_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
