/*
 * tests/unit/check_pxfer.c - partition state transfer (shard/serve/
 * pxfer.c, shard/data/pimage.c, shard/data/pinstall.c, the partition
 * profile of shard/vsr/xfer_fetch.c): the file-set image codec and each
 * of its refusals; the partition manifest rules; three replicas of one
 * partition group in one process (the harness of check_pgroup.c: an
 * in-memory queue for the links, synchronous fsyncs, the runtime's
 * install emulated as pgroups.c does it) where a replica down while its
 * peers checkpoint past its window fetches the primary's partition,
 * installs it and converges byte-identical (segments, polls, consumer
 * offsets); the serving rules (first wins, unknown sessions, chunks at or
 * past an artifact's end refused, a corrupted chunk dropped); and the
 * install's crash points: a failure at every storage call of the swap
 * leaves, after the boot recovery, a partition that opens with its
 * journal, holding the old state or the new one. Every loop is bounded.
 */
#include "config.h"

#include <check.h>
#include <sodium.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "common/wire.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/data/pjournal.h"
#include "shard/data/pimage.h"
#include "shard/data/pinstall.h"
#include "shard/serve/pgroup.h"
#include "shard/serve/pxfer.h"
#include "shard/vsr/xfer_fetch.h"
#include "shard/vsr/xfer_frames.h"
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
/* chunks to alter (resealed) in flight, and how many were */
static unsigned g_tamper, g_tampered;
/* distinct nonces of the RequestStateTransfer frames seen */
static struct vs_u128 g_nonces[64];
static unsigned g_nnonces;

static void
note_nonce(struct vs_u128 n)
{
    for (unsigned i = 0; i < g_nnonces; i++)
        if (vs_u128_eq(g_nonces[i], n))
            return;
    if (g_nnonces < 64)
        g_nonces[g_nnonces++] = n;
}

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
    if (g_nq == QMAX)
        return -EAGAIN;
    if (h->f.command == VS_CMD_REQUEST_STATE_TRANSFER)
        note_nonce(
            ((const struct vs_hdr_request_state_transfer *)frame)->nonce);
    struct msg *m = &g_q[g_nq++];
    m->from = (uint8_t)n->idx;
    m->to = replica;
    m->len = (uint32_t)len;
    m->data = malloc(len);
    memcpy(m->data, frame, len);
    if (h->f.command == VS_CMD_STATE_CHUNK && g_tamper > 0 &&
        len > VS_HEADER_SIZE + 64) {
        /* a server that sends other bytes than its manifest promised,
         * resealed so that only the artifact checksum can catch it */
        g_tamper--;
        g_tampered++;
        struct vs_hdr_state_chunk *c = (struct vs_hdr_state_chunk *)m->data;
        uint8_t *body = m->data + VS_HEADER_SIZE;
        body[40] ^= 0x5A;
        struct xfer_sender snd = {g_cluster, c->group, c->f.replica, c->f.view};
        xfer_frame_chunk(c, &snd, c->nonce, c->artifact, c->offset, body,
                         len - VS_HEADER_SIZE);
    }
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

static void
node_start(struct node *n)
{
    struct part_opts o;
    part_opts_default(&o);
    o.cut_damaged_tail = 1;
    o.segment_size = 16 * 1024; /* several segments per test */
    o.durability = g_durability;
    struct part_verdict v;
    int rc = part_open(&n->f.io, n->parts, &g_id, &o, 1, 0, &n->p, &v);
    ck_assert_msg(rc == 0, "part_open: %d %s", rc, v.msg);
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
    struct pgroup_env env = {n, env_send, env_reply, env_sync};
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
}

/* A lost disk: the node's partition directory is gone (a fresh member
 * again at its next start). */
static void
node_wipe(struct node *n)
{
    dt_rm_rf(n->root);
    dt_mkdtemp(n->root, sizeof(n->root), n->parts, sizeof(n->parts));
}

static uint64_t g_installs;
static int g_hold_install; /* leave a staged install for the test */

/* What the runtime (pgroups.c, parts.c) does with a staged install: the
 * group and the partition close, the directories swap, both reopen. */
static void
node_reinstall(struct node *n)
{
    if (g_hold_install)
        return;
    pgroup_close(n->g);
    n->g = NULL;
    ck_assert_int_eq(part_close(n->p), 0);
    n->p = NULL;
    ck_assert_int_eq(pinstall_swap(&n->f.io, n->parts, &g_id), 0);
    g_installs++;
    node_start(n);
}

static void
setup(void)
{
    g_nq = 0;
    g_nrep = 0;
    g_repair_requests = 0;
    g_installs = 0;
    g_hold_install = 0;
    g_tamper = g_tampered = 0;
    g_nnonces = 0;
    g_slots = 256;
    g_durability = PART_FSYNC_EVERY_BATCH;
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
    for (int i = 0; i < N; i++)
        if (g_n[i].up && pgroup_install_pending(g_n[i].g))
            node_reinstall(&g_n[i]);
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

/* ---- the file-set image ---- */

static uint8_t *
image(uint32_t kind, const char *const *names, const uint64_t *lens, uint32_t n,
      size_t *len)
{
    struct pimg_file f[8];
    uint64_t meta[3] = {7, 100, 42};
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    memset(f, 0, sizeof(f));
    for (uint32_t i = 0; i < n; i++) {
        snprintf(f[i].name, sizeof(f[i].name), "%s", names[i]);
        f[i].len = lens[i];
    }
    ck_assert_int_eq(pimg_header(&w, kind, meta, f, n), 0);
    for (uint32_t i = 0; i < n; i++)
        for (uint64_t k = 0; k < lens[i]; k++)
            vs_wr_u8(&w, (uint8_t)(i * 31 + k));
    *len = w.len;
    return w.data;
}

START_TEST(test_image_roundtrip_and_refusals)
{
    const char *names[] = {"00000000000000000000.log",
                           "00000000000000000000.vsr",
                           "00000000000000000000.index"};
    uint64_t lens[] = {100, 272, 24};
    size_t len;
    uint8_t *b = image(PIMG_SEGMENTS, names, lens, 3, &len);
    struct pimg m;
    char err[256];
    ck_assert_int_eq(pimg_decode(b, len, PIMG_SEGMENTS, &m, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(m.count, 3);
    ck_assert_uint_eq(m.meta[0], 7);
    ck_assert_uint_eq(m.meta[1], 100);
    ck_assert_uint_eq(m.meta[2], 42);
    ck_assert_str_eq(m.files[1].name, names[1]);
    ck_assert_uint_eq(m.files[1].len, 272);
    ck_assert_uint_eq(m.files[1].off, m.header_len + 100);
    ck_assert_uint_eq(b[m.files[2].off], (uint8_t)(2 * 31));
    pimg_free(&m);
    /* every refusal */
    ck_assert_int_eq(pimg_decode(b, len - 1, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* a file runs past the end */
    ck_assert_int_eq(pimg_decode(b, 10, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* shorter than the header */
    ck_assert_int_eq(pimg_decode(b, len, PIMG_OFFSETS, &m, err, 256),
                     -EBADMSG); /* another kind */
    uint8_t *c = malloc(len + 1);
    memcpy(c, b, len);
    c[len] = 0;
    ck_assert_int_eq(pimg_decode(c, len + 1, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* trailing bytes */
    c[0] ^= 1;
    ck_assert_int_eq(pimg_decode(c, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* magic */
    c[0] ^= 1;
    c[4] = 9;
    ck_assert_int_eq(pimg_decode(c, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG); /* version */
    c[4] = 1;
    c[PIMG_FIXED + 2] = '/'; /* a name with a path in it */
    ck_assert_int_eq(pimg_decode(c, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err, "file name"));
    free(c);
    free(b);
    /* names outside the patterns are refused by the encoder too */
    const char *bad[] = {"../00000000000000000000.log"};
    struct pimg_file f;
    memset(&f, 0, sizeof(f));
    snprintf(f.name, sizeof(f.name), "%s", bad[0]);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    uint64_t meta[3] = {0, 0, 0};
    ck_assert_int_eq(pimg_header(&w, PIMG_SEGMENTS, meta, &f, 1), -EINVAL);
    vs_wbuf_fini(&w);
    /* a file named twice; a segment image without journal records */
    const char *dup[] = {"00000000000000000000.log",
                         "00000000000000000000.log"};
    uint64_t dl[] = {1, 1};
    b = image(PIMG_SEGMENTS, dup, dl, 2, &len);
    ck_assert_int_eq(pimg_decode(b, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err, "twice"));
    free(b);
    b = image(PIMG_SEGMENTS, names, lens, 1, &len);
    ck_assert_int_eq(pimg_decode(b, len, PIMG_SEGMENTS, &m, err, 256),
                     -EBADMSG);
    free(b);
    /* offsets names; an empty offsets image is valid */
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "offsets/consumers/17"));
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "offsets/groups/3.99"));
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "offsets_applied"));
    ck_assert(pimg_name_ok(PIMG_OFFSETS, "clients"));
    ck_assert(!pimg_name_ok(PIMG_SEGMENTS, "clients"));
    ck_assert(!pimg_name_ok(PIMG_OFFSETS, "offsets/groups/3"));
    ck_assert(!pimg_name_ok(PIMG_OFFSETS, "offsets/consumers/x"));
    ck_assert(!pimg_name_ok(PIMG_OFFSETS, "format"));
    vs_wbuf_init(&w);
    ck_assert_int_eq(pimg_header(&w, PIMG_OFFSETS, meta, NULL, 0), 0);
    ck_assert_int_eq(pimg_decode(w.data, w.len, PIMG_OFFSETS, &m, err, 256), 0);
    ck_assert_uint_eq(m.count, 0);
    pimg_free(&m);
    vs_wbuf_fini(&w);
}
END_TEST

/* ---- the partition manifest profile ---- */

static size_t
target_frame(uint8_t *out, struct vs_u128 nonce, const struct xfer_manifest *m,
             uint64_t commit)
{
    uint8_t mb[XFER_MANIFEST_MAX_SIZE];
    int n = xfer_manifest_encode(m, mb, sizeof(mb));
    ck_assert_int_gt(n, 0);
    struct xfer_sender s = {g_cluster, 9, 0, 1};
    return xfer_frame_target(out, &s, nonce, commit, commit, mb, (size_t)n, 0,
                             0);
}

START_TEST(test_partition_manifest_rules)
{
    struct xfer_fetch f;
    struct xfer_fetch_opts o = {.me = {g_cluster, 9, 2, 1},
                                .profile = XFER_PROFILE_PARTITION};
    struct vs_u128 nonce = {5, 6};
    uint8_t frame[XFER_TARGET_FRAME_MAX];
    struct xfer_manifest good;
    memset(&good, 0, sizeof(good));
    good.count = 3;
    good.a[0] = (struct xfer_artifact){XFER_KIND_SEGMENT_LOG, 40, 1000, 1};
    good.a[1] = (struct xfer_artifact){XFER_KIND_CONSUMER_OFFSETS, 44, 40, 2};
    good.a[2] = (struct xfer_artifact){XFER_KIND_CHECKPOINT_PREPARE, 40,
                                       VS_HEADER_SIZE, 3};
    struct xfer_manifest bad[5];
    for (int i = 0; i < 5; i++)
        bad[i] = good;
    bad[0].count = 2;                          /* no prepare */
    bad[1].a[2].frontier = 39;                 /* prepare of another op */
    bad[2].a[2].len = 100;                     /* not one header */
    bad[3].a[1].frontier = 60;                 /* offsets above the commit */
    bad[4].a[1].kind = XFER_KIND_CLIENT_TABLE; /* a metadata kind */
    uint64_t commit[5] = {50, 50, 50, 50, 50};
    for (int i = 0; i < 5; i++) {
        xfer_fetch_init(&f, &o);
        ck_assert_int_eq(xfer_fetch_arm(&f, nonce, 0), 0);
        size_t n = target_frame(frame, nonce, &bad[i], commit[i]);
        ck_assert_int_eq(
            xfer_frame_check(frame, n, g_cluster, 9, XFER_CHUNK_MAX),
            XFER_FRAME_OK);
        ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n),
                         XFER_DROP_MANIFEST);
        ck_assert_int_eq(f.stage, XFER_AWAITING_TARGET);
        xfer_fetch_destroy(&f);
    }
    /* the log's frontier above the commit */
    xfer_fetch_init(&f, &o);
    ck_assert_int_eq(xfer_fetch_arm(&f, nonce, 0), 0);
    size_t n = target_frame(frame, nonce, &good, 39);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_MANIFEST);
    /* another nonce, another peer, then the good one */
    struct vs_u128 other = {7, 7};
    n = target_frame(frame, other, &good, 50);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_NONCE);
    n = target_frame(frame, nonce, &good, 50);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 1, frame, n), XFER_DROP_PEER);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_TAKEN);
    ck_assert_int_eq(f.stage, XFER_FETCHING);
    /* first wins: a second Target is not taken */
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_STAGE);
    xfer_fetch_destroy(&f);
    /* the metadata profile refuses a partition manifest */
    o.profile = XFER_PROFILE_METADATA;
    xfer_fetch_init(&f, &o);
    ck_assert_int_eq(xfer_fetch_arm(&f, nonce, 0), 0);
    ck_assert_int_eq(xfer_fetch_on_target(&f, 0, frame, n), XFER_DROP_MANIFEST);
    xfer_fetch_destroy(&f);
}
END_TEST

/* ---- three replicas ---- */

static void
fresh_cluster(uint32_t slots)
{
    for (int i = 0; i < N; i++) {
        node_kill(&g_n[i]);
        node_wipe(&g_n[i]);
    }
    g_slots = slots;
    for (int i = 0; i < N; i++)
        node_start(&g_n[i]);
    ck_assert_int_eq(wait_primary(-1), 0);
}

static void
offsets_equal(uint32_t consumers)
{
    for (uint32_t c = 1; c <= consumers; c++) {
        struct part_consumer pc = {.kind = PART_CONSUMER, .id = c};
        uint64_t ref = 0, off = 0;
        int rr = part_offset_get(pgroup_part(g_n[0].g), &pc, &ref);
        for (int i = 1; i < N; i++) {
            int r = part_offset_get(pgroup_part(g_n[i].g), &pc, &off);
            ck_assert_int_eq(r, rr);
            if (r == 0)
                ck_assert_uint_eq(off, ref);
        }
    }
}

/* Node 2 is down while its peers commit and checkpoint far past its
 * window; restarted, repair cannot reach the ops (RangeEvicted), so it
 * fetches the primary's partition, installs it and repairs above it. */
static void
lag_node2(void)
{
    produce(2, 1, 3);
    ck_assert_int_eq(offset_op(0, 40, 1, VS_OP_STORE_CONSUMER_OFFSET, 1, 2), 0);
    wait_status(40, 1, 0);
    wait_commit_all(pgroup_commit(g_n[0].g));
    node_kill(&g_n[2]);
    produce(3, 4, 40); /* ~110 ops: many checkpoints of a 16-slot window */
    ck_assert_int_eq(offset_op(0, 40, 2, VS_OP_STORE_CONSUMER_OFFSET, 2, 30),
                     0);
    wait_status(40, 2, 0);
    ck_assert_int_eq(offset_op(0, 40, 3, VS_OP_STORE_CONSUMER_OFFSET, 1, 50),
                     0);
    wait_status(40, 3, 0);
    produce(3, 41, 44);
    struct vs_vsr_persist d;
    vsr_durable(pgroup_engine(g_n[0].g), &d);
    ck_assert_uint_gt(d.checkpoint_op, 3 * 16);
    node_start(&g_n[2]);
}

START_TEST(test_lagging_replica_installs_and_converges)
{
    fresh_cluster(16);
    lag_node2();
    for (int s = 0; s < MAX_STEPS && g_installs == 0; s++)
        step();
    ck_assert_uint_eq(g_installs, 1);
    produce(3, 45, 46); /* the group goes on with all three */
    uint64_t top = pgroup_commit(g_n[0].g);
    wait_commit_all(top);
    files_identical();
    uint64_t l0 = 0, l2 = 0;
    ck_assert_uint_eq(polled(0, &l0), polled(2, &l2));
    ck_assert_uint_eq(l0, l2);
    ck_assert_uint_gt(l0, 100);
    offsets_equal(3);
    /* a restart of the installed replica recovers on its own files */
    node_kill(&g_n[2]);
    node_start(&g_n[2]);
    produce(3, 47, 47);
    wait_commit_all(pgroup_commit(g_n[0].g));
    files_identical();
    ck_assert_uint_eq(g_installs, 1);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(pgroup_fatal(g_n[i].g), 0);
}
END_TEST

/* A chunk whose bytes differ from what the manifest promised (resealed,
 * so the frame checks pass): the artifact fails its checksum, nothing is
 * installed, the session ends and the engine is disarmed; the next fetch
 * (a fresh nonce) installs. */
START_TEST(test_tampered_artifact_refused_then_retried)
{
    fresh_cluster(16);
    g_tamper = 1;
    lag_node2();
    for (int s = 0; s < MAX_STEPS && g_installs == 0; s++)
        step();
    ck_assert_uint_eq(g_tampered, 1);
    ck_assert_uint_eq(g_installs, 1);
    ck_assert_uint_ge(g_nnonces, 2); /* a fresh nonce for the retry */
    produce(3, 45, 46);
    wait_commit_all(pgroup_commit(g_n[0].g));
    files_identical();
    offsets_equal(3);
}
END_TEST

/* The serving side's rules, driven by hand-made frames from "replica 2"
 * to the primary (node 0): the offer is hashed first (answered
 * "transient"), then a retry with the same nonce gets the same Target
 * byte for byte, a chunk at the artifact's end or for an unknown
 * session is not served, a corrupted chunk is dropped by the receiver. */
static struct msg *
take_from(int from, int to, uint8_t command)
{
    for (size_t i = 0; i < g_nq; i++)
        if (g_q[i].from == from && g_q[i].to == to &&
            g_q[i].data[60] == command) {
            struct msg *m = malloc(sizeof(*m));
            *m = g_q[i];
            memmove(&g_q[i], &g_q[i + 1], (g_nq - i - 1) * sizeof(*g_q));
            g_nq--;
            return m;
        }
    return NULL;
}

static void
drop_queue(void)
{
    for (size_t i = 0; i < g_nq; i++)
        free(g_q[i].data);
    g_nq = 0;
}

START_TEST(test_serving_rules)
{
    fresh_cluster(16);
    produce(3, 1, 20);
    wait_commit_all(pgroup_commit(g_n[0].g));
    node_kill(&g_n[2]); /* its frames are made by hand */
    drop_queue();
    struct xfer_sender me = {g_cluster, pgroup_id(g_n[0].g), 2, 0};
    struct vs_u128 nonce = {0x1234, 0x5678};
    struct vs_hdr_request_state_transfer rq;
    xfer_frame_request_transfer(&rq, &me, nonce);
    ck_assert_int_eq(pgroup_on_message(g_n[0].g, &rq, sizeof(rq)),
                     VSR_ACCEPTED);
    struct msg *t = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(t);
    const struct vs_hdr_state_transfer_target *th = (const void *)t->data;
    ck_assert_int_eq(th->available, 0);
    ck_assert_int_eq(th->unavailable_transient, 1); /* hashing */
    free(t->data);
    free(t);
    /* the tick finishes the hash and sends the Target */
    pgroup_tick(g_n[0].g);
    struct msg *t1 = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(t1);
    th = (const void *)t1->data;
    ck_assert_int_eq(th->available, 1);
    struct xfer_manifest m;
    ck_assert_int_eq(xfer_manifest_decode(t1->data + VS_HEADER_SIZE,
                                          t1->len - VS_HEADER_SIZE, &m),
                     XFER_MANIFEST_OK);
    ck_assert_uint_eq(m.count, 3);
    ck_assert_uint_eq(m.a[0].kind, XFER_KIND_SEGMENT_LOG);
    /* a retry with the same nonce: the same Target, byte for byte */
    drop_queue();
    ck_assert_int_eq(pgroup_on_message(g_n[0].g, &rq, sizeof(rq)),
                     VSR_ACCEPTED);
    struct msg *t2 = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(t2);
    ck_assert_uint_eq(t2->len, t1->len);
    ck_assert(memcmp(t2->data, t1->data, t1->len) == 0);
    /* a chunk inside the artifact is served, never more than asked */
    struct vs_hdr_request_state_chunk rc;
    xfer_frame_request_chunk(&rc, &me, nonce, 0, 0, 100);
    ck_assert_int_eq(pgroup_on_message(g_n[0].g, &rc, sizeof(rc)),
                     VSR_ACCEPTED);
    struct msg *c = take_from(0, 2, VS_CMD_STATE_CHUNK);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->len, VS_HEADER_SIZE + 100);
    ck_assert_int_eq(xfer_frame_check(c->data, c->len, g_cluster,
                                      pgroup_id(g_n[0].g), XFER_CHUNK_MAX),
                     XFER_FRAME_OK);
    /* a flipped byte in transit: the receiver's frame check drops it */
    c->data[VS_HEADER_SIZE + 5] ^= 0x40;
    ck_assert_int_ne(xfer_frame_check(c->data, c->len, g_cluster,
                                      pgroup_id(g_n[0].g), XFER_CHUNK_MAX),
                     XFER_FRAME_OK);
    free(c->data);
    free(c);
    /* at the artifact's end, past it, another artifact: no answer */
    struct pxfer_info in0, in1;
    pgroup_xfer_info(g_n[0].g, &in0);
    xfer_frame_request_chunk(&rc, &me, nonce, 0, m.a[0].len, 10);
    (void)pgroup_on_message(g_n[0].g, &rc, sizeof(rc));
    xfer_frame_request_chunk(&rc, &me, nonce, 2, VS_HEADER_SIZE, 10);
    (void)pgroup_on_message(g_n[0].g, &rc, sizeof(rc));
    xfer_frame_request_chunk(&rc, &me, nonce, 3, 0, 10);
    (void)pgroup_on_message(g_n[0].g, &rc, sizeof(rc));
    ck_assert_ptr_null(take_from(0, 2, VS_CMD_STATE_CHUNK));
    pgroup_xfer_info(g_n[0].g, &in1);
    ck_assert_uint_eq(in1.served_chunks, in0.served_chunks);
    ck_assert_uint_ge(in1.refused_chunks, in0.refused_chunks + 2);
    /* a request running past the end is served up to the end only */
    xfer_frame_request_chunk(&rc, &me, nonce, 2, VS_HEADER_SIZE - 4, 10);
    (void)pgroup_on_message(g_n[0].g, &rc, sizeof(rc));
    c = take_from(0, 2, VS_CMD_STATE_CHUNK);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->len, VS_HEADER_SIZE + 4);
    free(c->data);
    free(c);
    /* a zero-byte chunk request never passes the frame check */
    xfer_frame_request_chunk(&rc, &me, nonce, 0, 0, 0);
    ck_assert_int_ne(xfer_frame_check(&rc, sizeof(rc), g_cluster,
                                      pgroup_id(g_n[0].g), XFER_CHUNK_MAX),
                     XFER_FRAME_OK);
    /* an unknown session is answered "unknown session" */
    struct vs_u128 stranger = {9, 9};
    xfer_frame_request_chunk(&rc, &me, stranger, 0, 0, 10);
    (void)pgroup_on_message(g_n[0].g, &rc, sizeof(rc));
    struct msg *u = take_from(0, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(u);
    th = (const void *)u->data;
    ck_assert_int_eq(th->available, 0);
    ck_assert_int_eq(th->reason, XFER_UNKNOWN_SESSION);
    free(u->data);
    free(u);
    /* a backup does not serve */
    drop_queue();
    xfer_frame_request_transfer(&rq, &me, (struct vs_u128){77, 1});
    (void)pgroup_on_message(g_n[1].g, &rq, sizeof(rq));
    u = take_from(1, 2, VS_CMD_STATE_TRANSFER_TARGET);
    ck_assert_ptr_nonnull(u);
    th = (const void *)u->data;
    ck_assert_int_eq(th->available, 0);
    ck_assert_int_eq(th->reason, XFER_NOT_CAUGHT_UP_PRIMARY);
    free(u->data);
    free(u);
    free(t1->data);
    free(t1);
    free(t2->data);
    free(t2);
    drop_queue();
}
END_TEST

/* ---- install crash points ---- */

static void
sh(const char *cmd)
{
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* The partitions directory as it was saved in `backup`. */
static void
restore(const char *parts, const char *backup)
{
    char cmd[2400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -a '%s' '%s'", parts, backup,
             parts);
    sh(cmd);
}

/* Opens the partition at dir (with its journal) and returns its
 * superblock's checkpoint op; asserts it boots. */
static uint64_t
boot_checkpoint(struct vs_sio *io, const char *parts)
{
    struct part_opts o;
    part_opts_default(&o);
    o.cut_damaged_tail = 1;
    o.segment_size = 16 * 1024;
    struct vs_part *p = NULL;
    struct part_verdict v;
    memset(&v, 0, sizeof(v));
    int rc = part_open(io, parts, &g_id, &o, 0, 0, &p, &v);
    ck_assert_msg(rc == 0, "the partition does not boot: %d %s", rc, v.msg);
    struct vs_pjournal *j = NULL;
    struct pj_recovered rec;
    rc = pj_open(p, g_slots, &j, &rec, &v);
    ck_assert_msg(rc == 0, "its journal does not open: %d %s", rc, v.msg);
    uint64_t c = rec.state.checkpoint_op;
    pj_recovered_free(&rec);
    pj_close(j);
    part_abandon(p);
    return c;
}

START_TEST(test_install_crash_points)
{
    fresh_cluster(16);
    g_hold_install = 1;
    lag_node2();
    struct node *n = &g_n[2];
    for (int s = 0; s < MAX_STEPS && !(n->up && pgroup_install_pending(n->g));
         s++)
        step();
    ck_assert(pgroup_install_pending(n->g));
    ck_assert(pinstall_pending(n->parts, &g_id));
    node_kill(n);
    /* what each state looks like */
    char backup[400];
    snprintf(backup, sizeof(backup), "%s/backup", n->root);
    char cmd[2400];
    snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", n->parts, backup);
    sh(cmd);
    struct sio_fault f;
    sio_fault_init(&f, 1);
    uint64_t old_ck = 0, new_ck = 0;
    {
        /* the two outcomes, measured once */
        old_ck = boot_checkpoint(&f.io, n->parts);
        ck_assert_int_eq(pinstall_swap(&f.io, n->parts, &g_id), 0);
        new_ck = boot_checkpoint(&f.io, n->parts);
        ck_assert_uint_gt(new_ck, old_ck);
    }
    const enum sio_kind kinds[] = {SIO_DIR_RENAME, SIO_DIR_FSYNC, SIO_UNLINK,
                                   SIO_RMDIR, SIO_READDIR};
    unsigned points = 0, olds = 0, news = 0;
    for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (uint64_t nth = 1; nth < 200; nth++) {
            restore(n->parts, backup);
            sio_fault_reset(&f);
            f.crash_after_fault = 1;
            sio_fault_arm(&f, kinds[k], nth, EIO, -1);
            int rc = pinstall_swap(&f.io, n->parts, &g_id);
            int fired = f.crashed || rc != 0;
            sio_fault_reset(&f);
            if (!fired)
                break; /* past the last call of that kind */
            points++;
            enum pinstall_outcome out;
            ck_assert_int_eq(pinstall_recover(&f.io, n->parts, &g_id, &out), 0);
            uint64_t ck = boot_checkpoint(&f.io, n->parts);
            ck_assert_msg(ck == old_ck || ck == new_ck,
                          "crash at call %llu of kind %u: checkpoint %llu",
                          (unsigned long long)nth, kinds[k],
                          (unsigned long long)ck);
            olds += ck == old_ck;
            news += ck == new_ck;
            /* nothing of the install is left behind */
            ck_assert(!pinstall_pending(n->parts, &g_id));
        }
    }
    ck_assert_uint_ge(points, 5);
    ck_assert_uint_gt(olds + news, 0);
    /* a crash while staging (the staged tree incomplete) is cleaned up and
     * leaves the old state */
    restore(n->parts, backup);
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s/" PINSTALL_STAGE_DIR
             "' && mv '%s/4.5.6.88" PINSTALL_NEW "' '%s/" PINSTALL_STAGE_DIR
             "/4.5.6.88'",
             n->parts, n->parts, n->parts);
    sh(cmd);
    enum pinstall_outcome out;
    ck_assert_int_eq(pinstall_recover(&f.io, n->parts, &g_id, &out), 0);
    ck_assert_int_eq(out, PINSTALL_CLEANED);
    ck_assert_uint_eq(boot_checkpoint(&f.io, n->parts), old_ck);
    dt_rm_rf(backup);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("pxfer");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_image_roundtrip_and_refusals);
    tcase_add_test(tc, test_partition_manifest_rules);
    tcase_add_test(tc, test_lagging_replica_installs_and_converges);
    tcase_add_test(tc, test_tampered_artifact_refused_then_retried);
    tcase_add_test(tc, test_serving_rules);
    tcase_add_test(tc, test_install_crash_points);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
