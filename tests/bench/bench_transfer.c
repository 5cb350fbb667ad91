/*
 * tests/bench/bench_transfer.c - metadata state transfer throughput (not
 * run by make check): a state of S streams x T topics x P partitions is
 * built in-process, checkpointed to a real snapshot.bin, then fetched by
 * a second shard-0 transfer binding (shard/zero/transfer.h: offers,
 * chunked reads of snapshot.bin with its streaming verification, frames
 * sealed and checked, artifacts verified) through an in-memory frame
 * queue, and installed (shard/zero/install_state.h: decode into scratch,
 * snapshot.bin written with fsync, journal emptied, both left-right
 * instances restored in a shared mapping). Prints the snapshot size, the
 * fetch and install times and MB/s. No network: loopback TCP and the
 * links' MAC are not in these numbers.
 * Usage: bench_transfer [streams topics partitions]  (default 10000 10 10,
 * a 16.5 MB snapshot; 78000 10 10 gives about 128 MB)
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/config.h"
#include "common/log.h"
#include "common/mem.h"
#include "ipc/lr.h"
#include "shard/meta/apply.h"
#include "shard/meta/client_table.h"
#include "shard/meta/ops.h"
#include "shard/meta/snapshot_codec.h"
#include "shard/meta/state.h"
#include "shard/storage/journal.h"
#include "shard/storage/snapshot_file.h"
#include "shard/zero/install_state.h"
#include "shard/zero/transfer.h"

#define QMAX 16

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct frame {
    uint8_t to, from;
    size_t len;
    uint8_t *bytes;
};

static double
cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct frame queue[QMAX];
static int qhead, qlen;
static struct zt *zt_of[2];
static uint64_t opn, snap_op;
static struct vs_u128 pairing;
static struct vs_hdr_prepare prep;
static struct meta_client_table ct;
static void *state;
static struct meta_caps caps;
static struct vs_sio io;
static struct vs_lr lr;
static struct wal journal;
static char lagmeta[300];
static double t_install, t_check, t_write, c_install;
static int installed;

static void
apply(void *st, const struct meta_op *op, struct meta_result *res,
      struct vs_wbuf *w)
{
    vs_wbuf_reset(w);
    if (meta_op_encode(op, w) != 0)
        abort();
    struct meta_op_ctx c = {0};
    c.op = ++opn;
    c.timestamp = 1000 + opn;
    c.operation = op->operation;
    if (meta_apply(st, &c, w->data, w->len, res) != 0) {
        fprintf(stderr, "op %llu failed: %u\n", (unsigned long long)opn,
                res->code);
        exit(1);
    }
}

static void
on_send(void *ctx, uint8_t peer, const void *f, size_t len)
{
    if (qlen == QMAX)
        abort();
    struct frame *q = &queue[(qhead + qlen++) % QMAX];
    q->to = peer;
    q->from = (uint8_t)(uintptr_t)ctx;
    q->len = len;
    q->bytes = vs_xmalloc(len);
    memcpy(q->bytes, f, len);
}

static void
serve_state(void *ctx, struct zt_serve_state *s)
{
    (void)ctx;
    s->caught_up_primary = 1;
    s->view = 1;
    s->commit_min = s->commit_max = snap_op;
    s->checkpoint_op = snap_op;
    s->checkpoint_checksum = pairing;
    s->checkpoint_prepare = prep;
}

static int
encode_table(void *ctx, struct vs_wbuf *w, uint64_t *frontier)
{
    (void)ctx;
    *frontier = snap_op;
    return meta_ct_transfer_encode(&ct, state, w);
}

static int
install(void *ctx, const struct zt_artifacts *a, char *err, size_t errlen)
{
    (void)ctx;
    double t0 = now(), c0 = cpu();
    struct zinst_scratch sc;
    int rc = zinst_check(&caps, a, &sc, err, errlen);
    if (rc != 0)
        return rc;
    t_check = now() - t0;
    struct meta_client_table lct;
    meta_ct_init(&lct);
    struct vs_u128 sum;
    double t1 = now();
    rc = zinst_write(&io, lagmeta, &journal, 0, &lr, &sc, &lct, a, &sum, err,
                     errlen);
    t_write = now() - t1;
    if (rc == 0)
        rc = zinst_table(&lct, lr_writer_live(&lr), &sc.img, err, errlen);
    zinst_scratch_fini(&sc);
    meta_ct_fini(&lct);
    t_install = now() - t0;
    c_install = cpu() - c0;
    installed = rc == 0;
    return rc;
}

static struct zt *
make(uint8_t self, const char *d)
{
    struct zt_opts o = {.cluster = {7, 7},
                        .group = UINT64_C(1) << 63,
                        .self = self,
                        .metadata_dir = d,
                        .io = &io};
    struct zt_hooks h = {.ctx = (void *)(uintptr_t)self,
                         .serve_state = serve_state,
                         .encode_table = encode_table,
                         .send = on_send,
                         .install = install};
    struct zt *t;
    char err[128];
    if (zt_create(&o, &h, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return t;
}

int
main(int argc, char **argv)
{
    uint32_t ns = 10000, nt = 10, np = 10;
    if (argc == 4) {
        ns = (uint32_t)atoi(argv[1]);
        nt = (uint32_t)atoi(argv[2]);
        np = (uint32_t)atoi(argv[3]);
    }
    vs_log_set_level(VS_LOG_WARN);
    struct vs_config cfg;
    vs_config_init(&cfg);
    char err[256];
    if (vs_config_finalize(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    meta_caps_from_config(&caps, &cfg);
    if (caps.streams < ns)
        caps.streams = ns;
    if (caps.topics < ns * nt)
        caps.topics = ns * nt;
    if (caps.partitions < ns * nt * np)
        caps.partitions = ns * nt * np;
    size_t sz = meta_state_size(&caps);
    state = vs_xcalloc(1, sz);
    meta_state_init(state, &caps);
    struct meta_result res;
    meta_result_init(&res);
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    meta_op_init(op, VS_OP_GENESIS);
    meta_op_set_name(op, "iggy", 4);
    meta_op_set_secret(op, "$argon2id$x", 11);
    apply(state, op, &res, &w);
    char name[32];
    for (uint32_t s = 0; s < ns; s++) {
        meta_op_init(op, VS_OP_CREATE_STREAM);
        int l = snprintf(name, sizeof(name), "stream-%u", s);
        meta_op_set_name(op, name, (size_t)l);
        apply(state, op, &res, &w);
        for (uint32_t t = 0; t < nt; t++) {
            meta_op_init(op, VS_OP_CREATE_TOPIC);
            meta_ident_id(&op->stream, s);
            l = snprintf(name, sizeof(name), "topic-%u", t);
            meta_op_set_name(op, name, (size_t)l);
            op->count = np;
            op->opts.compression = 1;
            op->opts.message_expiry = UINT64_MAX;
            op->opts.max_topic_size = UINT64_MAX;
            apply(state, op, &res, &w);
        }
    }
    snap_op = opn;
    meta_ct_init(&ct);
    struct vs_wbuf snap;
    vs_wbuf_init(&snap);
    meta_snapshot_encode(state, &ct, &snap);

    char pdir[] = "/tmp/vs-bxfer-p-XXXXXX", ldir[] = "/tmp/vs-bxfer-l-XXXXXX";
    if (mkdtemp(pdir) == NULL || mkdtemp(ldir) == NULL)
        return 1;
    snprintf(lagmeta, sizeof(lagmeta), "%s", ldir);
    sio_init_real(&io);
    if (snapfile_write(&io, pdir, snap.data, snap.len, &pairing) != 0)
        return 1;
    uint8_t body[16] = {1};
    memset(&prep, 0, sizeof(prep));
    prep.f.cluster = (struct vs_u128){7, 7};
    prep.f.size = VS_HEADER_SIZE + sizeof(body);
    prep.f.command = VS_CMD_PREPARE;
    prep.op = snap_op;
    prep.group = UINT64_C(1) << 63;
    vs_prepare_seal(&prep, body, sizeof(body));
    if (wal_open(&journal, &io, ldir, NULL, NULL) != 0)
        return 1;
    size_t rlen = lr_region_size(4, sz);
    void *region = mmap(NULL, rlen, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct vs_lr_writer_opts wo = {.deadline_ns = 1000000000ull};
    if (region == MAP_FAILED || lr_region_init(region, rlen, 4, sz) != 0 ||
        lr_attach(&lr, region, rlen) != 0 || lr_writer_start(&lr, &wo) != 0)
        return 1;

    zt_of[0] = make(0, pdir);
    zt_of[1] = make(1, ldir);
    double t0 = now(), c0 = cpu();
    if (zt_start(zt_of[1], 0, 1) != 0)
        return 1;
    uint64_t frames = 0;
    while (qlen > 0 && frames < 100000000ull) {
        struct frame f = queue[qhead];
        qhead = (qhead + 1) % QMAX;
        qlen--;
        zt_on_frame(zt_of[f.to], f.from, f.bytes, f.len);
        free(f.bytes);
        frames++;
    }
    double total = now() - t0;
    double ctotal = cpu() - c0;
    double fetch = total - t_install;
    double mb = (double)snap.len / 1e6;
    printf("snapshot of %u x %u x %u at op %llu: %.1f MB\n", ns, nt, np,
           (unsigned long long)snap_op, mb);
    printf("%s: fetch %.3f s (%.0f MB/s, %llu frames), install %.3f s "
           "(%.1f MB/s: decode check, snapshot.bin + fsync, both "
           "instances), total %.3f s = %.1f MB/s\n",
           installed ? "installed" : "NOT installed", fetch, mb / fetch,
           (unsigned long long)frames, t_install, mb / t_install, total,
           mb / total);
    printf("install parts: decode check %.3f s, write + restore %.3f s\n",
           t_check, t_write);
    printf("cpu time (the machine may be shared): fetch %.3f s (%.0f MB/s), "
           "install %.3f s (%.1f MB/s)\n",
           ctotal - c_install, mb / (ctotal - c_install), c_install,
           mb / c_install);
    zt_destroy(zt_of[0]);
    zt_destroy(zt_of[1]);
    wal_close(&journal);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s", pdir, ldir);
    if (system(cmd) != 0)
        return 1;
    return installed ? 0 : 1;
}
