/*
 * tests/unit/commit_fixture.h - drives shard 0's commit path in-process:
 * a temporary data dir (real files), a test-profile config, a left-right
 * region in anonymous shared memory (this process is the writer), the
 * boot of shard0_boot.h and commit_create, and a captured reply channel.
 * Requests are built the way a data shard forwards them (shard/fwd.h).
 * Test and bench code only (static functions; included once per program).
 */
#ifndef VS_TESTS_COMMIT_FIXTURE_H
#define VS_TESTS_COMMIT_FIXTURE_H

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/config.h"
#include "common/mem.h"
#include "common/wire.h"
#include "ipc/lr.h"
#include "shard/zero/commit.h"
#include "shard/fwd.h"
#include "shard/meta/ops.h"
#include "shard/shard.h"
#include "shard/zero/boot.h"

#define FX_WORKER_SLOT 1u
#define FX_INCARNATION 7u
#define FX_MAX_SENT    64u

struct fx_sent {
    uint32_t dst;
    struct fwd_hdr h;
    uint8_t *frame; /* the payload: a Reply or Eviction frame */
    uint32_t len;
};

struct fx {
    char dir[256];
    struct vs_config cfg;
    void *region;
    size_t region_len;
    struct vs_lr lr;
    struct shard0_recovered rec;
    struct commit *c;
    struct vs_sio *io; /* NULL: real */
    uint64_t wall;     /* fake clock, µs; 0 = real */
    struct fx_sent sent[FX_MAX_SENT];
    unsigned nsent;
    uint64_t conn;
};

static inline int
fx_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void
fx_clear_sent(struct fx *f)
{
    for (unsigned i = 0; i < f->nsent; i++)
        free(f->sent[i].frame);
    f->nsent = 0;
}

static inline void
fx_send(void *ctx, uint32_t dst, const void *frame, uint32_t len)
{
    struct fx *f = ctx;
    if (f->nsent == FX_MAX_SENT)
        abort();
    struct fx_sent *s = &f->sent[f->nsent++];
    if (len < sizeof(s->h))
        abort();
    s->dst = dst;
    memcpy(&s->h, frame, sizeof(s->h));
    s->len = len - (uint32_t)sizeof(s->h);
    s->frame = vs_xmalloc(s->len ? s->len : 1);
    memcpy(s->frame, (const uint8_t *)frame + sizeof(s->h), s->len);
}

static inline uint64_t
fx_clock(void *ctx)
{
    struct fx *f = ctx;
    return f->wall += 1000;
}

static inline void
fx_config(struct fx *f, const char *key, const char *value)
{
    char err[256];
    if (vs_config_set(&f->cfg, key, value, "test", err, sizeof(err)) != 0) {
        fprintf(stderr, "config %s: %s\n", key, err);
        abort();
    }
}

/* A fresh data dir and config (test profile). Call fx_boot next. */
static inline void
fx_init(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/vs-commit-XXXXXX");
    if (!mkdtemp(f->dir))
        abort();
    vs_config_init(&f->cfg);
    fx_config(f, "profile", "test");
    fx_config(f, "data_dir", f->dir);
    fx_config(f, "with_default_root_credentials", "true");
    f->wall = 1700000000000000ull;
}

/* Finalizes the config and maps the left-right region (once). */
static inline void
fx_region(struct fx *f)
{
    char err[256];
    if (vs_config_finalize(&f->cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "config: %s\n", err);
        abort();
    }
    size_t inst = shard0_instance_size(&f->cfg);
    f->region_len = lr_region_size(2, inst);
    f->region = mmap(NULL, f->region_len, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (f->region == MAP_FAILED)
        abort();
    if (lr_region_init(f->region, f->region_len, 2, inst) != 0 ||
        lr_attach(&f->lr, f->region, f->region_len) != 0)
        abort();
}

/* Boots shard 0's storage and the commit path; returns commit_create's
 * result (err gets its line). Genesis is NOT run here. */
static inline int
fx_boot(struct fx *f, char *err, size_t errlen)
{
    if (f->region == NULL)
        fx_region(f);
    struct vs_lr_writer_opts wo = {.deadline_ns = 1000000000ull};
    lr_writer_start(&f->lr, &wo);
    int rc = shard0_boot(&f->cfg, &f->rec, err, errlen);
    if (rc != 0) { /* a refused boot: release what it read */
        shard0_recovered_fini(&f->rec);
        return rc;
    }
    struct commit_options o = {
        .cfg = &f->cfg,
        .lr = &f->lr,
        .io = f->io,
        .send = fx_send,
        .send_ctx = f,
        .clock = fx_clock,
        .clock_ctx = f,
    };
    rc = commit_create(&o, &f->rec, &f->c, err, errlen);
    shard0_recovered_fini(&f->rec);
    return rc;
}

/* Stops the commit path (a restart reboots from disk with fx_boot). */
static inline void
fx_stop(struct fx *f)
{
    commit_destroy(f->c);
    f->c = NULL;
    fx_clear_sent(f);
}

static inline void
fx_fini(struct fx *f)
{
    fx_stop(f);
    if (f->region != NULL)
        munmap(f->region, f->region_len);
    nftw(f->dir, fx_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Forwards one request like a data shard: the request header (client's
 * checksum of `client_body`) and the encoded metadata op. Returns
 * commit_on_frame's result. */
static inline int
fx_propose_raw(struct fx *f, struct vs_u128 client, uint8_t operation,
               uint64_t session, uint64_t request, uint32_t user_id,
               const uint8_t *opbody, size_t oplen, struct vs_u128 checksum)
{
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.size = (uint32_t)(VS_HEADER_SIZE + 7); /* the client's frame */
    r.f.command = VS_CMD_REQUEST;
    r.client = client;
    r.request_checksum = checksum;
    r.request = request;
    r.operation = operation;
    r.session = session;
    r.user_id = user_id;
    struct fwd_hdr h;
    memset(&h, 0, sizeof(h));
    h.kind = FWD_PROPOSE;
    h.worker_slot = FX_WORKER_SLOT;
    h.worker_incarnation = FX_INCARNATION;
    h.conn_id = ++f->conn;
    h.payload_len = (uint32_t)(VS_HEADER_SIZE + oplen);
    size_t len = sizeof(h) + VS_HEADER_SIZE + oplen;
    uint8_t *buf = vs_xmalloc(len);
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), &r, sizeof(r));
    if (oplen)
        memcpy(buf + sizeof(h) + VS_HEADER_SIZE, opbody, oplen);
    int rc = commit_on_frame(f->c, FX_WORKER_SLOT, buf, (uint32_t)len);
    free(buf);
    return rc;
}

/* Encodes op and forwards it; the request checksum is XXH3 of the
 * encoded op (standing in for the client's body). */
static inline int
fx_propose(struct fx *f, struct vs_u128 client, uint64_t session,
           uint64_t request, uint32_t user_id, const struct meta_op *op)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    if (meta_op_encode(op, &w) != 0)
        abort();
    struct vs_u128 sum = vs_checksum(w.data, w.len);
    int rc = fx_propose_raw(f, client, op->operation, session, request, user_id,
                            w.data, w.len, sum);
    vs_wbuf_fini(&w);
    return rc;
}

static inline int
fx_register(struct fx *f, struct vs_u128 client, uint32_t user_id)
{
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    meta_op_init(op, VS_OP_REGISTER);
    op->user_id = user_id;
    int rc = fx_propose(f, client, 0, 0, user_id, op);
    free(op);
    return rc;
}

static inline int
fx_create_stream(struct fx *f, struct vs_u128 client, uint64_t session,
                 uint64_t request, const char *name)
{
    struct meta_op *op = vs_xcalloc(1, sizeof(*op));
    meta_op_init(op, VS_OP_CREATE_STREAM);
    meta_op_set_name(op, name, strlen(name));
    int rc = fx_propose(f, client, session, request, 0, op);
    free(op);
    return rc;
}

/* The last frame sent (NULL if none). */
static inline const struct fx_sent *
fx_last(const struct fx *f)
{
    return f->nsent ? &f->sent[f->nsent - 1] : NULL;
}

#endif /* VS_TESTS_COMMIT_FIXTURE_H */
