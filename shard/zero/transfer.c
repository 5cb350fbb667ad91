/*
 * shard/zero/transfer.c - shard 0's metadata state transfer; see
 * transfer.h.
 *
 * Each cached offer (xfer_serve) has a slot here with what the I/O-free
 * core does not hold: the client table's transfer bytes (encoded once when
 * the offer is built) and the snapshot reader (snapshot.bin, opened when
 * the offer is built; the trailer is checked against the checkpoint then,
 * every payload byte as it is served) and the checkpoint op's prepare
 * header (copied from the superblock's record when the offer is built).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/log.h"
#include "shard/storage/snapshot_reader.h"
#include "shard/vsr/xfer_frames.h"
#include "shard/zero/transfer.h"

struct zt_offer_data {
    uint64_t id; /* 0 = free */
    struct vs_wbuf table;
    struct snapfile_reader snap;
    int snap_open;
    uint8_t prepare[VS_HEADER_SIZE];
};

struct zt {
    struct zt_opts o;
    struct zt_hooks h;
    char dir[1024];
    struct xfer_fetch fetch;
    struct xfer_serve serve;
    struct zt_offer_data data[XFER_OFFERS_MAX];
    uint8_t *chunk;          /* VS_HEADER_SIZE + chunk_max */
    uint64_t bad_checkpoint; /* checkpoint whose snapshot failed to verify */
    uint64_t session_ticks;
    uint64_t session_start_ns; /* monotonic, for the logged rate */
    enum xfer_stage last_stage;
    uint64_t last_bytes; /* the last installed session */
    double last_secs;
};

int
zt_is_transfer_command(uint8_t command)
{
    return command >= VS_CMD_REQUEST_STATE_TRANSFER &&
           command <= VS_CMD_STATE_CHUNK;
}

static struct zt_offer_data *
data_of(struct zt *t, uint64_t id)
{
    for (unsigned i = 0; i < XFER_OFFERS_MAX; i++)
        if (t->data[i].id == id && id != 0)
            return &t->data[i];
    return NULL;
}

static void
data_free(struct zt *t, uint64_t id)
{
    struct zt_offer_data *d = data_of(t, id);
    if (d == NULL)
        return;
    vs_wbuf_fini(&d->table);
    if (d->snap_open)
        snapfile_reader_close(&d->snap);
    memset(d, 0, sizeof(*d));
}

static void
drop_all_offers(struct zt *t)
{
    uint64_t ids[XFER_OFFERS_MAX];
    size_t n = xfer_serve_clear(&t->serve, ids, XFER_OFFERS_MAX);
    for (size_t i = 0; i < n && i < XFER_OFFERS_MAX; i++)
        data_free(t, ids[i]);
}

int
zt_create(const struct zt_opts *o, const struct zt_hooks *h, struct zt **out,
          char *err, size_t errlen)
{
    struct zt *t = calloc(1, sizeof(*t));
    *out = NULL;
    if (t == NULL) {
        snprintf(err, errlen, "state transfer: out of memory");
        return -ENOMEM;
    }
    t->o = *o;
    t->h = *h;
    snprintf(t->dir, sizeof(t->dir), "%s", o->metadata_dir);
    t->o.metadata_dir = t->dir;
    if (t->o.chunk_max == 0 || t->o.chunk_max > XFER_CHUNK_MAX)
        t->o.chunk_max = XFER_CHUNK_MAX;
    t->chunk = malloc(VS_HEADER_SIZE + t->o.chunk_max);
    if (t->chunk == NULL) {
        free(t);
        snprintf(err, errlen, "state transfer: out of memory");
        return -ENOMEM;
    }
    struct xfer_sender me = {o->cluster, o->group, o->self, 0};
    struct xfer_fetch_opts fo = {
        .me = me, .chunk_max = t->o.chunk_max, .stall_ticks = o->stall_ticks};
    struct xfer_serve_opts so = {.me = me, .chunk_max = t->o.chunk_max};
    xfer_fetch_init(&t->fetch, &fo);
    xfer_serve_init(&t->serve, &so);
    *out = t;
    return 0;
}

void
zt_destroy(struct zt *t)
{
    if (t == NULL)
        return;
    drop_all_offers(t);
    xfer_fetch_destroy(&t->fetch);
    free(t->chunk);
    free(t);
}

static void
send_frame(struct zt *t, uint8_t peer, const void *frame, size_t len)
{
    t->h.send(t->h.ctx, peer, frame, len);
}

static void
answer_unavailable(struct zt *t, uint8_t to, struct vs_u128 nonce,
                   uint8_t reason, const struct zt_serve_state *s)
{
    uint8_t out[VS_HEADER_SIZE];
    size_t n = xfer_serve_unavailable(&t->serve, out, nonce, reason, 0,
                                      s->commit_min, s->commit_max);
    send_frame(t, to, out, n);
}

static void
serve_request(struct zt *t, uint8_t from,
              const struct vs_hdr_request_state_transfer *r)
{
    struct zt_serve_state s;
    char why[1300];
    memset(&s, 0, sizeof(s));
    t->h.serve_state(t->h.ctx, &s);
    xfer_serve_set_view(&t->serve, s.view);
    if (!s.caught_up_primary) {
        drop_all_offers(t); /* offers of an earlier primaryship are void */
        answer_unavailable(t, from, r->nonce, XFER_NOT_CAUGHT_UP_PRIMARY, &s);
        return;
    }
    const struct xfer_offer *o = xfer_serve_find(&t->serve, from, r->nonce);
    if (o != NULL) { /* a retry: the same Target, byte for byte */
        send_frame(t, from, o->target, o->target_len);
        return;
    }
    if (s.checkpoint_op == 0) {
        answer_unavailable(t, from, r->nonce, XFER_NO_SNAPSHOT, &s);
        return;
    }
    if (s.checkpoint_prepare.op != s.checkpoint_op ||
        vs_u128_is_zero(s.checkpoint_prepare.f.checksum)) {
        /* without the op's header the receiver could not restart on the
         * installed checkpoint: wait for a checkpoint that has it */
        answer_unavailable(t, from, r->nonce, XFER_NO_SNAPSHOT, &s);
        return;
    }
    if (t->bad_checkpoint == s.checkpoint_op) {
        answer_unavailable(t, from, r->nonce, XFER_SNAPSHOT_UNREADABLE, &s);
        return;
    }
    struct zt_offer_data nd;
    memset(&nd, 0, sizeof(nd));
    int rc =
        snapfile_reader_open(&nd.snap, t->o.io, t->dir, s.checkpoint_checksum);
    if (rc == 0 && nd.snap.prefix.op != s.checkpoint_op) {
        snprintf(nd.snap.reason, sizeof(nd.snap.reason),
                 "snapshot.bin holds op %llu, the checkpoint op %llu",
                 (unsigned long long)nd.snap.prefix.op,
                 (unsigned long long)s.checkpoint_op);
        snapfile_reader_close(&nd.snap);
        rc = -EBADMSG;
    }
    if (rc != 0) {
        t->bad_checkpoint = s.checkpoint_op;
        snprintf(why, sizeof(why), "%s", nd.snap.reason);
        vs_log_error("state transfer: cannot serve replica %u: %s", from, why);
        answer_unavailable(t, from, r->nonce, XFER_SNAPSHOT_UNREADABLE, &s);
        return;
    }
    nd.snap_open = 1;
    memcpy(nd.prepare, &s.checkpoint_prepare, VS_HEADER_SIZE);
    uint64_t frontier = 0;
    vs_wbuf_init(&nd.table);
    rc = t->h.encode_table(t->h.ctx, &nd.table, &frontier);
    if (rc != 0) {
        vs_log_error("state transfer: client table encode failed (%d)", rc);
        vs_wbuf_fini(&nd.table);
        snapfile_reader_close(&nd.snap);
        answer_unavailable(t, from, r->nonce, XFER_NOT_CAUGHT_UP_PRIMARY, &s);
        return;
    }
    struct xfer_manifest m;
    memset(&m, 0, sizeof(m));
    m.count = 3;
    m.a[0] =
        (struct xfer_artifact){XFER_KIND_METADATA_SNAPSHOT, s.checkpoint_op,
                               nd.snap.payload_len, s.checkpoint_checksum.lo};
    m.a[1] = (struct xfer_artifact){
        XFER_KIND_CLIENT_TABLE, frontier, nd.table.len,
        vs_xxh3_64(nd.table.data != NULL ? nd.table.data : (uint8_t *)"",
                   nd.table.len)};
    m.a[2] = (struct xfer_artifact){XFER_KIND_CHECKPOINT_PREPARE,
                                    s.checkpoint_op, VS_HEADER_SIZE,
                                    vs_xxh3_64(nd.prepare, VS_HEADER_SIZE)};
    uint64_t replaced = 0;
    o = xfer_serve_offer(&t->serve, from, r->nonce, &m, s.commit_min,
                         s.commit_max, &replaced);
    if (o == NULL) {
        vs_wbuf_fini(&nd.table);
        snapfile_reader_close(&nd.snap);
        answer_unavailable(t, from, r->nonce, XFER_SNAPSHOT_UNREADABLE, &s);
        return;
    }
    if (replaced != 0)
        data_free(t, replaced);
    struct zt_offer_data *d = data_of(t, 0);
    for (unsigned i = 0; i < XFER_OFFERS_MAX && d == NULL; i++)
        if (t->data[i].id == 0)
            d = &t->data[i];
    if (d == NULL) { /* one slot per requester: cannot happen */
        vs_wbuf_fini(&nd.table);
        snapfile_reader_close(&nd.snap);
        return;
    }
    *d = nd;
    d->id = o->id;
    vs_log_info("state transfer: offering replica %u the checkpoint at op "
                "%llu (%llu + %zu bytes), commit %llu",
                from, (unsigned long long)s.checkpoint_op,
                (unsigned long long)nd.snap.payload_len, nd.table.len,
                (unsigned long long)s.commit_min);
    send_frame(t, from, o->target, o->target_len);
}

static void
serve_chunk(struct zt *t, uint8_t from, const void *frame)
{
    const struct xfer_offer *o;
    uint8_t kind;
    uint64_t off;
    uint32_t n;
    const struct vs_hdr_request_state_chunk *r = frame;
    enum xfer_serve_result res =
        xfer_serve_chunk(&t->serve, from, frame, &o, &kind, &off, &n);
    if (res == XFER_SERVE_UNKNOWN) {
        struct zt_serve_state s;
        memset(&s, 0, sizeof(s));
        t->h.serve_state(t->h.ctx, &s);
        answer_unavailable(t, from, r->nonce, XFER_UNKNOWN_SESSION, &s);
        return;
    }
    if (res != XFER_SERVE_CHUNK) {
        vs_log_debug("state transfer: refused a chunk request of replica %u "
                     "(artifact %u, offset %llu)",
                     from, r->artifact, (unsigned long long)r->offset);
        return;
    }
    struct zt_offer_data *d = data_of(t, o->id);
    if (d == NULL)
        return;
    uint8_t *body = t->chunk + VS_HEADER_SIZE;
    if (kind == XFER_KIND_METADATA_SNAPSHOT) {
        long got = snapfile_reader_read(&d->snap, off, body, n);
        if (got != (long)n) {
            t->bad_checkpoint = d->snap.prefix.op;
            vs_log_error("state transfer: stopped serving the snapshot of op "
                         "%llu: %s",
                         (unsigned long long)t->bad_checkpoint, d->snap.reason);
            drop_all_offers(t);
            return;
        }
    } else if (kind == XFER_KIND_CLIENT_TABLE) {
        memcpy(body, d->table.data + off, n);
    } else if (kind == XFER_KIND_CHECKPOINT_PREPARE &&
               off + n <= VS_HEADER_SIZE) {
        memcpy(body, d->prepare + off, n);
    } else {
        return;
    }
    xfer_frame_chunk((struct vs_hdr_state_chunk *)t->chunk, &t->serve.o.me,
                     r->nonce, r->artifact, off, body, n);
    send_frame(t, from, t->chunk, VS_HEADER_SIZE + n);
}

static uint64_t
fetch_total(const struct xfer_fetch *f, uint64_t *done)
{
    uint64_t total = 0;
    *done = 0;
    for (uint32_t i = 0; i < f->m.count; i++) {
        total += f->m.a[i].len;
        if (i < f->cursor)
            *done += f->m.a[i].len;
    }
    if (f->stage == XFER_FETCHING)
        *done += f->offset;
    return total;
}

/* Sends what the receiver wants and runs the install when it is due. */
static void
pump(struct zt *t)
{
    uint8_t req[VS_HEADER_SIZE];
    uint8_t peer;
    if (t->fetch.stage != t->last_stage) {
        if (t->fetch.stage == XFER_FETCHING) {
            uint64_t done, total = fetch_total(&t->fetch, &done);
            vs_log_info("state transfer: fetching %llu bytes from replica %u "
                        "(snapshot at op %llu, commit %llu)",
                        (unsigned long long)total, t->fetch.peer,
                        (unsigned long long)t->fetch.m.a[0].frontier,
                        (unsigned long long)t->fetch.commit_op);
        } else if (t->fetch.stage == XFER_IDLE &&
                   t->last_stage != XFER_INSTALLING) {
            vs_log_warn("state transfer: session ended: %s", t->fetch.reason);
        }
        t->last_stage = t->fetch.stage;
    }
    while (xfer_fetch_pop(&t->fetch, req, &peer))
        send_frame(t, peer, req, VS_HEADER_SIZE);
    if (t->fetch.stage != XFER_INSTALLING)
        return;
    uint64_t slen, sop, tlen, top, plen = 0, pop = 0;
    struct zt_artifacts a;
    memset(&a, 0, sizeof(a));
    a.snapshot = xfer_fetch_artifact(&t->fetch, XFER_KIND_METADATA_SNAPSHOT,
                                     &slen, &sop);
    a.table =
        xfer_fetch_artifact(&t->fetch, XFER_KIND_CLIENT_TABLE, &tlen, &top);
    a.prepare = xfer_fetch_artifact(&t->fetch, XFER_KIND_CHECKPOINT_PREPARE,
                                    &plen, &pop);
    if (plen != VS_HEADER_SIZE)
        a.prepare = NULL;
    a.snapshot_len = slen;
    a.snapshot_op = sop;
    a.table_len = tlen;
    a.table_frontier = top;
    a.commit_op = t->fetch.commit_op;
    a.commit_max = t->fetch.commit_max;
    uint8_t from = t->fetch.peer;
    char err[256] = "";
    int rc = t->h.install(t->h.ctx, &a, err, sizeof(err));
    uint64_t bytes = slen + tlen + plen;
    double secs = (double)(vs_monotonic_ns() - t->session_start_ns) / 1e9;
    if (rc == 0) {
        xfer_fetch_installed(&t->fetch);
        t->last_bytes = bytes;
        t->last_secs = secs;
        vs_log_info("state transfer: installed the snapshot at op %llu and the "
                    "client table from replica %u (%llu bytes in %.3f s, "
                    "%.1f MB/s)",
                    (unsigned long long)sop, from, (unsigned long long)bytes,
                    secs, secs > 0 ? (double)bytes / secs / 1e6 : 0.0);
    } else {
        xfer_fetch_install_failed(&t->fetch, rc == -EPROTO, err);
        vs_log_error("state transfer: install failed: %s", err);
    }
    t->last_stage = t->fetch.stage;
}

void
zt_on_frame(struct zt *t, uint8_t from, const void *frame, size_t len)
{
    enum xfer_frame_verdict v =
        xfer_frame_check(frame, len, t->o.cluster, t->o.group, t->o.chunk_max);
    if (v != XFER_FRAME_OK) {
        vs_log_debug("state transfer: dropped a frame from replica %u: %s",
                     from, xfer_frame_verdict_name(v));
        return;
    }
    const struct vs_header *h = frame;
    switch (h->f.command) {
    case VS_CMD_REQUEST_STATE_TRANSFER:
        serve_request(t, from, frame);
        return;
    case VS_CMD_REQUEST_STATE_CHUNK:
        serve_chunk(t, from, frame);
        return;
    case VS_CMD_STATE_TRANSFER_TARGET:
        xfer_fetch_on_target(&t->fetch, from, frame, len);
        break;
    default:
        xfer_fetch_on_chunk(&t->fetch, from, frame, len);
        break;
    }
    pump(t);
}

int
zt_start(struct zt *t, uint8_t peer, uint32_t durable_view)
{
    struct vs_u128 nonce;
    randombytes_buf(&nonce, sizeof(nonce));
    if (nonce.lo == 0 && nonce.hi == 0)
        nonce.lo = 1;
    return zt_start_nonce(t, peer, durable_view, nonce);
}

int
zt_start_nonce(struct zt *t, uint8_t peer, uint32_t durable_view,
               struct vs_u128 nonce)
{
    if (vs_u128_is_zero(nonce))
        return -EINVAL;
    xfer_fetch_set_view(&t->fetch, durable_view);
    int rc = xfer_fetch_arm(&t->fetch, nonce, peer);
    if (rc != 0)
        return rc;
    t->session_ticks = 0;
    t->session_start_ns = vs_monotonic_ns();
    vs_log_info("state transfer: asking replica %u for its checkpoint", peer);
    pump(t);
    return 0;
}

void
zt_retarget(struct zt *t, uint8_t peer)
{
    if (xfer_fetch_retarget(&t->fetch, peer) == 0) {
        vs_log_info("state transfer: asking replica %u instead", peer);
        pump(t);
    }
}

void
zt_abandon(struct zt *t, const char *why)
{
    xfer_fetch_abandon(&t->fetch, why);
    pump(t);
}

int
zt_fetching(const struct zt *t)
{
    return t->fetch.stage != XFER_IDLE;
}

int
zt_wants_peer(const struct zt *t)
{
    return t->fetch.want_peer;
}

void
zt_tick(struct zt *t)
{
    uint64_t ids[XFER_OFFERS_MAX];
    size_t n = xfer_serve_tick(&t->serve, ids, XFER_OFFERS_MAX);
    for (size_t i = 0; i < n && i < XFER_OFFERS_MAX; i++)
        data_free(t, ids[i]);
    if (t->fetch.stage != XFER_IDLE)
        t->session_ticks++;
    if (t->fetch.stage == XFER_FETCHING && t->session_ticks % 100 == 0) {
        uint64_t done, total = fetch_total(&t->fetch, &done);
        double secs =
            (double)(vs_monotonic_ns() - t->session_start_ns) / 1e9 + 1e-9;
        vs_log_info("state transfer: fetching from replica %u: %llu of %llu "
                    "bytes (%.1f MB/s)",
                    t->fetch.peer, (unsigned long long)done,
                    (unsigned long long)total, (double)done / secs / 1e6);
    }
    xfer_fetch_tick(&t->fetch);
    pump(t);
}

void
zt_info(const struct zt *t, struct zt_info *out)
{
    memset(out, 0, sizeof(*out));
    out->stage = t->fetch.stage;
    out->peer = t->fetch.stage == XFER_IDLE ? -1 : t->fetch.peer;
    out->total = fetch_total(&t->fetch, &out->fetched);
    out->ticks = t->session_ticks;
    out->sessions = t->fetch.stats.sessions;
    out->completed = t->fetch.stats.completed;
    out->abandoned = t->fetch.stats.abandoned;
    out->served_offers = t->serve.stats.offers;
    out->served_bytes = t->serve.stats.bytes;
    out->last_bytes = t->last_bytes;
    out->last_secs = t->last_secs;
    snprintf(out->last, sizeof(out->last), "%s", t->fetch.reason);
}
