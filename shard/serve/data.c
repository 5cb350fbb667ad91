/*
 * shard/serve/data.c - the data plane of a data shard: decoding,
 * resolution, authorization and routing of send / poll / offsets / flush,
 * execution on the owning shard, forwarding between data shards; see
 * data.h for the flow and fwd.h for the IPC frames.
 *
 * Invariants: read sections on the published state never span I/O or a
 * callback; a connection has at most one data request forwarded; every
 * request gets exactly one answer (a forwarded one whose owner dies is
 * answered 57 by the watch on the data timer).
 * Back-pressure: a forwarded request holds its connection in flight, so
 * the bytes queued towards another shard are bounded by the connections
 * times the largest body (the port queues them, never drops them).
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <event2/event.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mem.h"
#include "ipc/segment.h"
#include "shard/data/batch.h"
#include "shard/data/partition.h"
#include "shard/fwd.h"
#include "shard/meta/authz.h"
#include "shard/meta/lookup.h"
#include "shard/serve/data.h"
#include "shard/serve/dlinks.h"
#include "shard/serve/gcommit.h"
#include "shard/serve/handoff.h"
#include "shard/serve/liveness.h"
#include "shard/serve/parts.h"
#include "shard/serve/pgroups.h"
#include "shard/serve/segments.h"
#include "shard/serve/server.h"

#define DATA_TICK_MS       20u
#define DATA_RETENTION_MS  1000u
#define DATA_DISK_CHECK_MS 100u
#define DATA_RR_BUCKETS    256u
#define DATA_SENTINEL      UINT32_MAX
/* data_exec: the answer is held by the group commit (gcommit.h) */
#define DATA_DEFERRED (UINT32_MAX - 1u)

/* Per-topic round robin of Balanced sends (this shard's counter). */
struct data_rr {
    uint32_t stream_id, topic_id;
    uint64_t created_op;
    struct batch_rr rr;
    struct data_rr *next;
};

/* A message being reassembled from FWD_F_MORE pieces of one source. */
struct data_rx {
    int active;
    uint32_t kind;
    uint64_t incarnation, conn_id, seq;
    struct vs_wbuf buf;
};

struct serve_data {
    struct dparts parts;
    struct event *tick_ev;
    uint64_t ticks;
    uint64_t seq;
    struct data_rx *rx; /* [n_procs] */
    uint32_t n_procs;
    struct data_rr *rr[DATA_RR_BUCKETS];
    uint32_t rr_count;
    uint64_t disk_checked_ms;
    int disk_low;
    struct vs_wbuf out;
    struct serve_gcommit *gc; /* fsyncs off the loop, group commit */
    struct serve_pgroups *pg; /* replicated partitions (NULL: off) */
    /* while a request runs: the malloc'd buffer its data lies in, which
     * a deferred send may take (gcommit_send sets *own = NULL); NULL:
     * the data is not ours to keep (copied if it must outlive the call) */
    void **own;
    void **rx_own; /* serve_data_on_frame: the reassembly buffer */
};

/* ---------------------------------------------------------------- misc */

static uint64_t
mono_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

int
serve_data_is_data(unsigned operation, uint32_t code)
{
    if (operation >= VS_OP_SEND_MESSAGES &&
        operation <= VS_OP_DELETE_CONSUMER_OFFSET)
        return 1;
    return operation == VS_OP_NON_REPLICATED &&
           (code == SERVE_C_POLL || code == SERVE_C_FLUSH ||
            code == SERVE_C_GET_OFFSET);
}

static uint32_t
rr_next(struct serve_data *d, uint32_t sid, uint32_t tid, uint64_t created_op,
        uint32_t count)
{
    size_t b =
        (size_t)((sid * 2654435761u) ^ (tid * 40503u) ^ (uint32_t)created_op) %
        DATA_RR_BUCKETS;
    struct data_rr *e = d->rr[b];
    while (e && !(e->stream_id == sid && e->topic_id == tid &&
                  e->created_op == created_op))
        e = e->next;
    if (e == NULL) {
        if (d->rr_count >= 65536) { /* dead topics: start over */
            for (size_t i = 0; i < DATA_RR_BUCKETS; i++)
                while (d->rr[i]) {
                    struct data_rr *n = d->rr[i]->next;
                    free(d->rr[i]);
                    d->rr[i] = n;
                }
            d->rr_count = 0;
        }
        e = vs_xcalloc(1, sizeof(*e));
        e->stream_id = sid;
        e->topic_id = tid;
        e->created_op = created_op;
        e->next = d->rr[b];
        d->rr[b] = e;
        d->rr_count++;
    }
    return batch_rr_next(&e->rr, count);
}

/* 1 if free space on the data dir's filesystem is below the watermark
 * (checked at most every DATA_DISK_CHECK_MS). */
static int
disk_low(struct serve *s)
{
    struct serve_data *d = s->data;
    uint64_t wm = s->cfg->disk_watermark_bytes;
    if (wm == 0)
        return 0;
    uint64_t now = mono_ms();
    if (d->disk_checked_ms != 0 &&
        now - d->disk_checked_ms < DATA_DISK_CHECK_MS)
        return d->disk_low;
    d->disk_checked_ms = now;
    struct statvfs v;
    if (statvfs(s->cfg->data_dir, &v) == -1)
        return d->disk_low;
    uint64_t avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    int low = avail < wm;
    if (low != d->disk_low)
        vs_log_warn("data dir %s: %llu bytes free, watermark %llu: %s",
                    s->cfg->data_dir, (unsigned long long)avail,
                    (unsigned long long)wm,
                    low ? "refusing sends" : "accepting sends again");
    d->disk_low = low;
    vs_metrics_set(VS_M_DISK_WATERMARK, (uint64_t)low);
    return low;
}

/* ------------------------------------------------------- owner: execute */

static void
consumer_of(const struct data_cmd *cmd, struct part_consumer *pc)
{
    memset(pc, 0, sizeof(*pc));
    pc->kind = cmd->consumer_kind == 2 ? PART_GROUP : PART_CONSUMER;
    pc->id = cmd->consumer_id;
    pc->group_created_op = cmd->group_created_op;
}

/* Appends a send's batch; `nosync`: the fsync is the group commit's
 * (gcommit.h), else part_append's own under every-batch. `pw` non-NULL:
 * only begins it (part_append_begin): the group commit writes it, and
 * counts it once written. */
static uint32_t
exec_send(struct serve *s, struct dpart *dp, const struct data_cmd *cmd,
          uint8_t *batch, size_t blen, struct vs_wbuf *out, int nosync,
          struct part_write *pw)
{
    if (disk_low(s))
        return VS_E_CANNOT_SAVE_MESSAGES;
    struct part_append_result res;
    enum batch_err berr = BATCH_OK;
    uint64_t now = vs_realtime_us();
    int rc = pw != NULL
                 ? part_append_begin(dp->p, batch, blen, now, &res, &berr, pw)
             : nosync ? part_append_nosync(dp->p, batch, blen, now, &res, &berr)
                      : part_append(dp->p, batch, blen, now, &res, &berr);
    dparts_check_fatal(&s->data->parts, rc, "append");
    if (rc == -EINVAL) {
        vs_log_debug("partition %u.%u.%u: batch refused: %s", cmd->stream_id,
                     cmd->topic_id, cmd->partition_id, batch_err_str(berr));
        return batch_err_code(berr);
    }
    if (rc == -ENOSPC) {
        vs_log_warn("partition %u.%u.%u: out of space: send refused",
                    cmd->stream_id, cmd->topic_id, cmd->partition_id);
        return VS_E_CANNOT_SAVE_MESSAGES;
    }
    if (rc != 0)
        return VS_E_CANNOT_APPEND_TO_FILE;
    if (pw == NULL) {
        dparts_stats_note(&s->data->parts, dp);
        vs_metrics_add(VS_M_MESSAGES_SENT, res.message_count);
        vs_metrics_add(VS_M_MESSAGES_SENT_BYTES, blen);
    }
    vs_wr_u32(out, 1);
    vs_wr_u32(out, cmd->stream_id);
    vs_wr_u32(out, cmd->topic_id);
    vs_wr_u32(out, cmd->partition_id);
    vs_wr_u64(out, res.base_offset);
    return 0;
}

static uint32_t
exec_poll(struct serve *s, struct dpart *dp, const struct data_cmd *cmd,
          struct vs_u128 client, struct vs_wbuf *out)
{
    struct part_consumer pc;
    consumer_of(cmd, &pc);
    uint64_t value = cmd->value;
    if (cmd->strategy == PART_POLL_NEXT) {
        uint64_t stored = 0;
        int rc = part_offset_get(dp->p, &pc, &stored);
        if (rc != 0 && rc != -ENOENT) {
            /* damaged, never read as "no offset" (that would replay
             * the partition from 0) */
            vs_log_error("partition %u.%u.%u: consumer offset of %s %u: "
                         "%s",
                         cmd->stream_id, cmd->topic_id, cmd->partition_id,
                         pc.kind == PART_GROUP ? "group" : "consumer", pc.id,
                         rc == -EBADMSG ? "the file is damaged"
                                        : sio_strerror(rc));
            return VS_E_CANNOT_READ_CONSUMER_OFFSETS;
        }
        value = rc == 0 ? stored + 1 : 0;
    }
    struct part_stats stt;
    part_stats(dp->p, &stt);
    size_t head = out->len;
    vs_wr_u32(out, cmd->partition_id);
    vs_wr_u64(out, stt.current_offset);
    vs_wr_u32(out, 0);
    if (cmd->count == 0)
        return 0;
    size_t max = s->cfg->max_message_body > 1024
                     ? (size_t)s->cfg->max_message_body - 1024
                     : 1024;
    struct part_poll_result pr;
    memset(&pr, 0, sizeof(pr));
    int rc = part_poll(dp->p, (enum part_strategy)cmd->strategy, value,
                       cmd->count, max, out, &pr);
    if (rc != 0) {
        vs_log_warn("partition %u.%u.%u: poll: %s", cmd->stream_id,
                    cmd->topic_id, cmd->partition_id, sio_strerror(rc));
        out->len = head;
        if (rc == -EBADMSG) /* damage on disk: logged, never served */
            return VS_E_INVALID_MESSAGE_CHECKSUM;
        return rc == -EINVAL ? VS_E_INVALID_COMMAND : VS_E_ERROR;
    }
    vs_store_u32(out->data + head + 12, pr.count);
    vs_metrics_add(VS_M_MESSAGES_POLLED, pr.count);
    vs_metrics_add(VS_M_MESSAGES_POLLED_BYTES, out->len - head - 16);
    uint64_t stored = 0;
    int committed = 0;
    if (cmd->autocommit && pr.count > 0 &&
        pgroups_autocommit(s->data->pg, dp, cmd, pr.last_offset)) {
        /* an op of the partition's group: stored when it commits */
    } else if (cmd->autocommit && pr.count > 0) {
        rc = part_offset_commit(dp->p, &pc, pr.last_offset, &stored);
        dparts_check_fatal(&s->data->parts, rc, "auto-commit");
        if (rc != 0)
            vs_log_warn("partition %u.%u.%u: auto-commit: %s", cmd->stream_id,
                        cmd->topic_id, cmd->partition_id, sio_strerror(rc));
        committed = rc == 0;
    }
    /* last polled per (group, member, partition): liveness.h */
    if (pr.count > 0)
        serve_live_polled(s, client, cmd, pr.last_offset, committed, stored);
    return 0;
}

/* The group commit's append (gcommit.h gc_exec_fn): begun only, or
 * (pw NULL) written here without an fsync. */
static uint32_t
gc_exec(struct serve *s, struct dpart *dp, const struct data_cmd *cmd,
        uint8_t *batch, size_t len, struct vs_wbuf *out, struct part_write *pw)
{
    return exec_send(s, dp, cmd, batch, len, out, 1, pw);
}

/* A command for a partition with a replica set, when partition
 * replication is on (pgroups.h): PGROUPS_PASS for today's path. */
static uint32_t
data_exec_replicated(struct serve *s, struct dpart *dp,
                     const struct data_cmd *cmd,
                     const struct vs_hdr_request *req, uint8_t *data,
                     size_t dlen, const struct gc_waiter *w, uint32_t hops)
{
    struct serve_pgroups *pg = s->data->pg;
    pgroups_sync(pg);
    if (cmd->kind == DATA_SEND && disk_low(s))
        return VS_E_CANNOT_SAVE_MESSAGES;
    uint32_t st = pgroups_exec(pg, dp, cmd, req, data, dlen, w, hops);
    return st == PGROUPS_DEFERRED ? DATA_DEFERRED : st;
}

/* A send: with a waiter it goes through the group commit, which writes
 * the batch off the loop and holds the answer to w until it is written
 * (interval) or durable (every-batch): DATA_DEFERRED. The buffer the
 * caller offers in d->own is taken by it. Without a waiter or a group
 * commit: appended here, part_append's own fsync under every-batch, the
 * group commit's schedule under interval. */
static uint32_t
data_exec_send(struct serve *s, struct dpart *dp, const struct data_cmd *cmd,
               uint8_t *data, size_t dlen, struct vs_wbuf *out,
               const struct gc_waiter *w)
{
    struct serve_gcommit *gc = s->data->gc;
    if (gc == NULL)
        return exec_send(s, dp, cmd, data, dlen, out, 0, NULL);
    int offload = s->cfg->segment_write_offload;
    if (w != NULL && (offload || part_every_batch(dp->p))) {
        uint32_t st = gcommit_send(gc, dp, cmd, data, dlen, w, s->data->own);
        return st == 0 ? DATA_DEFERRED : st;
    }
    if (part_every_batch(dp->p))
        return exec_send(s, dp, cmd, data, dlen, out, 0, NULL);
    uint32_t st = exec_send(s, dp, cmd, data, dlen, out, 1, NULL);
    if (st == 0)
        gcommit_note(gc, dp, mono_ms());
    return st;
}

/* Runs a command on this (owning) shard. `data` is the batch of a send
 * (stamped in place), `req` the client's request header, `hops` the data
 * links it came over (pgroups.h). Appends the reply body to out; returns
 * the status, or DATA_DEFERRED when w will be answered by the group
 * commit or the partition's group. */
static uint32_t
data_exec(struct serve *s, const struct data_cmd *cmd,
          const struct vs_hdr_request *req, struct vs_u128 client,
          uint8_t *data, size_t dlen, struct vs_wbuf *out,
          const struct gc_waiter *w, uint32_t hops)
{
    struct dparts *parts = &s->data->parts;
    dparts_sync(parts);
    struct part_id id = {
        .stream_id = cmd->stream_id,
        .topic_id = cmd->topic_id,
        .partition_id = cmd->partition_id,
        .created_op = cmd->created_op,
    };
    struct dpart *dp = dparts_find(parts, &id);
    if (dp == NULL) /* deleted meanwhile, or not creatable (no space) */
        return cmd->kind == DATA_POLL || cmd->kind == DATA_OFFSET_GET ||
                       cmd->kind == DATA_FLUSH
                   ? VS_E_PARTITION_NOT_FOUND
                   : VS_E_RESOURCE_NOT_FOUND;
    if (s->data->pg != NULL) {
        uint32_t st =
            data_exec_replicated(s, dp, cmd, req, data, dlen, w, hops);
        if (st != PGROUPS_PASS)
            return st;
    }
    struct part_consumer pc;
    consumer_of(cmd, &pc);
    int rc;
    switch (cmd->kind) {
    case DATA_SEND:
        return data_exec_send(s, dp, cmd, data, dlen, out, w);
    case DATA_POLL:
        return exec_poll(s, dp, cmd, client, out);
    case DATA_OFFSET_GET: {
        uint64_t stored = 0;
        rc = part_offset_get(dp->p, &pc, &stored);
        if (rc == -ENOENT)
            return 0; /* nothing stored: empty */
        if (rc != 0) {
            vs_log_error("partition %u.%u.%u: consumer offset of %s %u: "
                         "%s",
                         cmd->stream_id, cmd->topic_id, cmd->partition_id,
                         pc.kind == PART_GROUP ? "group" : "consumer", pc.id,
                         rc == -EBADMSG ? "the file is damaged"
                                        : sio_strerror(rc));
            return VS_E_CANNOT_READ_CONSUMER_OFFSETS;
        }
        struct part_stats stt;
        part_stats(dp->p, &stt);
        vs_wr_u32(out, cmd->partition_id);
        vs_wr_u64(out, stt.current_offset);
        vs_wr_u64(out, stored);
        return 0;
    }
    case DATA_OFFSET_STORE:
        rc = part_offset_store(dp->p, &pc, cmd->value);
        dparts_check_fatal(parts, rc, "storing a consumer offset");
        if (rc == -ERANGE)
            return VS_E_INVALID_OFFSET;
        if (rc != 0)
            return VS_E_ERROR;
        vs_wr_u32(out, 0);
        return 0;
    case DATA_OFFSET_DELETE:
        rc = part_offset_delete(dp->p, &pc);
        dparts_check_fatal(parts, rc, "deleting a consumer offset");
        if (rc == -ENOENT)
            return VS_E_CONSUMER_OFFSET_NOT_FOUND;
        if (rc != 0)
            return VS_E_ERROR;
        vs_wr_u32(out, 0);
        return 0;
    case DATA_DELETE_SEGMENTS:
        return serve_segments_exec(dp, cmd, out);
    case DATA_FLUSH:
        rc = part_flush(dp->p);
        dparts_check_fatal(parts, rc, "flush");
        return rc == 0 ? 0 : VS_E_ERROR;
    default:
        return VS_E_INVALID_COMMAND;
    }
}

/* ------------------------------------------------------------ IPC pieces */

static size_t
piece_max(const struct serve *s)
{
    size_t ring = s->ctx->seg->hdr->ring_bytes;
    size_t m = ring / 4;
    return m > sizeof(struct fwd_hdr) + 1024 ? m - sizeof(struct fwd_hdr)
                                             : 1024;
}

/* Sends head+body as one logical payload in pieces, each gathered
 * straight into the ring (port_sendv: one copy of the body). 0 or
 * -errno. */
static int
send_pieces(struct serve *s, uint32_t dst, struct fwd_hdr *fh, const void *head,
            size_t hlen, const void *body, size_t blen)
{
    size_t max = piece_max(s);
    size_t total = hlen + blen, done = 0;
    do {
        size_t n = total - done < max ? total - done : max;
        fh->payload_len = (uint32_t)n;
        fh->flags = done + n < total ? FWD_F_MORE : 0;
        struct iovec iov[3];
        int k = 0;
        iov[k++] = (struct iovec){.iov_base = fh, .iov_len = sizeof(*fh)};
        /* the piece covers [done, done + n) of head ++ body */
        size_t a = done, e = done + n;
        if (a < hlen)
            iov[k++] = (struct iovec){
                .iov_base = (uint8_t *)(uintptr_t)head + a,
                .iov_len = (e < hlen ? e : hlen) - a,
            };
        if (e > hlen) {
            size_t b0 = a > hlen ? a - hlen : 0;
            iov[k++] = (struct iovec){
                .iov_base = (uint8_t *)(uintptr_t)body + b0,
                .iov_len = e - hlen - b0,
            };
        }
        int rc = port_sendv(s->port, dst, iov, k);
        if (rc < 0)
            return rc;
        done += n;
    } while (done < total);
    return 0;
}

/* -------------------------------------------------------- client shard */

static void
data_done(struct serve_conn *c, uint32_t status, const void *body, size_t len)
{
    part_key_answered(&c->pkey, status);
    if (c->req.operation == VS_OP_DELETE_SEGMENTS) { /* segments.c goes on */
        c->data_pending = 0;
        serve_segments_on_watermark(c, status, body, len);
        return;
    }
    serve_conn_reply(c, &c->req, status, body, len);
    c->data_pending = 0;
    serve_conn_request_done(c);
}

/* The request a replicated partition op goes on with: its request
 * checksum replaced by the connection's deduplication key (partkey.h);
 * every other request as it came. */
static const struct vs_hdr_request *
data_keyed(struct serve_conn *c, const struct vs_hdr_request *req,
           const struct data_cmd *cmd, const uint8_t *data, size_t dlen,
           struct vs_hdr_request *keyed)
{
    if (!serve_data_replicated(c->srv) ||
        (cmd->kind != DATA_SEND && cmd->kind != DATA_OFFSET_STORE &&
         cmd->kind != DATA_OFFSET_DELETE))
        return req;
    struct vs_u128 base = req->request_checksum;
    if (vs_u128_is_zero(base) && cmd->kind == DATA_SEND) {
        /* the batch header names its content: batch_checksum covers
         * every frame checksum, each its frame's bytes (all verified
         * before anything is stored), so hashing the header alone tells
         * two batches apart without a second pass over the batch */
        base = vs_checksum(data,
                           dlen < BATCH_HEADER_SIZE ? dlen : BATCH_HEADER_SIZE);
    } else if (vs_u128_is_zero(base)) {
        /* an offset op's body: what it does, to which consumer */
        uint8_t b[28];
        vs_store_u32(b, cmd->kind);
        vs_store_u32(b + 4, cmd->consumer_kind);
        vs_store_u32(b + 8, cmd->consumer_id);
        vs_store_u64(b + 12, cmd->group_created_op);
        vs_store_u64(b + 20, cmd->value);
        base = vs_checksum(b, sizeof(b));
    }
    if (vs_u128_is_zero(base))
        base.lo = 1;
    *keyed = *req;
    keyed->request_checksum = part_key_next(&c->pkey, req->request, base);
    return keyed;
}

/* Runs cmd on its owner: here, or forwarded. `data` is mutable. The
 * reply echoes req (the client's header), never the key. */
static void
data_route(struct serve_conn *c, const struct vs_hdr_request *req,
           const struct data_cmd *cmd, uint8_t *data, size_t dlen)
{
    struct serve *s = c->srv;
    struct serve_data *d = s->data;
    struct vs_hdr_request keyed;
    const struct vs_hdr_request *kreq =
        data_keyed(c, req, cmd, data, dlen, &keyed);
    uint32_t owner = meta_partition_shard(
        meta_group_id(cmd->stream_id, cmd->topic_id, cmd->partition_id),
        s->ctx->k);
    int segs = req->operation == VS_OP_DELETE_SEGMENTS;
    if (!segs)
        serve_handoff_note(c, owner); /* may move the connection later */
    if (owner == s->ctx->slot) {
        struct gc_waiter w;
        memset(&w, 0, sizeof(w));
        w.conn_id = c->id;
        w.seq = d->seq + 1;
        vs_wbuf_reset(&d->out);
        /* a frame read into its own buffer (rxbody.c) may be taken */
        d->own = data != NULL && s->frame_own != NULL ? &s->frame_own : NULL;
        uint32_t st = data_exec(s, cmd, kreq, c->client, data, dlen, &d->out,
                                segs ? NULL : &w, 0);
        d->own = NULL;
        if (st == DATA_DEFERRED) {
            /* held until durable: the connection waits like a forward */
            struct vs_proc_shm *me = seg_proc(s->ctx->seg, s->ctx->slot);
            c->req = *req;
            c->in_flight = 1;
            c->data_pending = 1;
            c->data_owner = s->ctx->slot;
            c->data_owner_incarnation =
                atomic_load_explicit(&me->incarnation, memory_order_relaxed);
            c->data_seq = ++d->seq;
            return;
        }
        part_key_answered(&c->pkey, st);
        if (segs)
            serve_segments_on_watermark(c, st, st == 0 ? d->out.data : NULL,
                                        st == 0 ? d->out.len : 0);
        else if (st == 0)
            /* a large poll reply: the batches read (and verified) into
             * d->out are queued as they are, no copy (conn.c) */
            serve_conn_reply_take(c, req, st, &d->out);
        else
            serve_conn_reply(c, req, st, NULL, 0);
        return;
    }
    struct vs_proc_shm *po = seg_proc(s->ctx->seg, owner);
    if (!atomic_load_explicit(&po->ready, memory_order_acquire)) {
        if (segs)
            serve_segments_on_watermark(c, VS_E_TRANSIENT_NOT_COMMITTED, NULL,
                                        0);
        else
            serve_conn_reply(c, req, VS_E_TRANSIENT_NOT_COMMITTED, NULL, 0);
        part_key_answered(&c->pkey, VS_E_TRANSIENT_NOT_COMMITTED);
        return;
    }
    c->req = *req;
    c->in_flight = 1;
    c->data_pending = 1;
    c->data_owner = owner;
    c->data_owner_incarnation =
        atomic_load_explicit(&po->incarnation, memory_order_relaxed);
    c->data_seq = ++d->seq;
    struct fwd_hdr fh;
    memset(&fh, 0, sizeof(fh));
    fh.kind = FWD_DATA_REQUEST;
    fh.worker_slot = s->ctx->slot;
    fh.worker_incarnation = s->ctx->incarnation;
    fh.conn_id = c->id;
    fh.session = c->data_seq;
    fh.user_id = c->user_id;
    fh.client = c->client;
    /* payload: the command, the client's request header, the data */
    uint8_t head[sizeof(*cmd) + VS_HEADER_SIZE];
    memcpy(head, cmd, sizeof(*cmd));
    memcpy(head + sizeof(*cmd), kreq, VS_HEADER_SIZE);
    int rc = send_pieces(s, owner, &fh, head, sizeof(head), data, dlen);
    if (rc < 0) {
        vs_log_warn("client %s: cannot forward a data request to shard %u: "
                    "%d",
                    c->peer, owner, rc);
        data_done(c, VS_E_TRANSIENT_NOT_COMMITTED, NULL, 0);
        return;
    }
    s->n.data_forwarded++;
    s->n.data_forwarded_bytes += dlen;
    vs_metrics_add(VS_M_DATA_FORWARDED_BYTES, dlen);
}

void
serve_data_route(struct serve_conn *c, const struct vs_hdr_request *req,
                 const struct data_cmd *cmd)
{
    data_route(c, req, cmd, NULL, 0);
}

/* The published state's view of stream + topic (read section held). */
static uint32_t
find_topic(const void *st, const struct meta_ident *si,
           const struct meta_ident *ti, const struct meta_stream **so,
           const struct meta_topic **to)
{
    *so = meta_stream_find(st, si);
    *to = NULL;
    if (*so == NULL)
        return VS_E_STREAM_ID_NOT_FOUND;
    *to = meta_topic_find(st, (*so)->id, ti);
    if (*to == NULL)
        return VS_E_TOPIC_ID_NOT_FOUND;
    return 0;
}

static void
data_send(struct serve_conn *c, const struct vs_hdr_request *req,
          const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    struct serve_send_meta m;
    if (serve_decode_send_meta(body, len, &m) != 0) {
        serve_conn_reply(c, req, VS_E_RESOURCE_NOT_FOUND, NULL, 0);
        return;
    }
    const uint8_t *batch = body + m.batch_off;
    size_t blen = len - m.batch_off;
    if (blen >= BATCH_HEADER_SIZE && batch_count(batch) != m.messages_count) {
        serve_conn_reply(c, req, VS_E_INVALID_MESSAGES_COUNT, NULL, 0);
        return;
    }
    struct data_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = DATA_SEND;
    uint32_t st = 0;
    const void *state = lr_read_begin(s->lr, NULL);
    const struct meta_stream *so;
    const struct meta_topic *to;
    if (find_topic(state, &m.stream, &m.topic, &so, &to) != 0) {
        st = VS_E_RESOURCE_NOT_FOUND;
    } else if (!meta_authz_check(state, c->user_id, META_ACT_SEND, so->id,
                                 to->id)) {
        st = VS_E_UNAUTHORIZED;
    } else if (to->partitions_count == 0) {
        st = VS_E_RESOURCE_NOT_FOUND;
    } else {
        uint32_t pid;
        if (m.partitioning_kind == 2)
            pid = vs_load_u32(m.partitioning);
        else if (m.partitioning_kind == 1)
            pid = rr_next(s->data, so->id, to->id, to->created_op,
                          to->partitions_count);
        else
            pid = batch_partition_by_key(m.partitioning, m.partitioning_len,
                                         to->partitions_count);
        const struct meta_partition *p =
            meta_partition_by_id(state, so->id, to->id, pid);
        if (p == NULL) {
            st = VS_E_RESOURCE_NOT_FOUND;
        } else {
            cmd.stream_id = so->id;
            cmd.topic_id = to->id;
            cmd.partition_id = pid;
            cmd.created_op = p->created_op;
        }
    }
    lr_read_end(s->lr);
    if (st != 0) {
        serve_conn_reply(c, req, st, NULL, 0);
        return;
    }
    /* The frame is this connection's input buffer (evbuffer_pullup):
     * owned by this loop and drained right after dispatch, so the batch
     * may be stamped in place. */
    data_route(c, req, &cmd, (uint8_t *)(uintptr_t)batch, blen);
}

/* Consumer part of poll/offset requests (read section held). 0, or a
 * status; *sentinel = 1 for a group fence failure. `own_ok_revoking`: a
 * pending-revoked partition still counts (offsets), not for polls. */
static uint32_t
resolve_consumer(struct serve_conn *c, const void *st, uint8_t kind,
                 const struct meta_ident *who, uint32_t sid, uint32_t tid,
                 uint32_t pid, int own_ok_revoking, struct data_cmd *cmd,
                 int *fenced)
{
    *fenced = 0;
    cmd->consumer_kind = kind;
    if (kind == 1) {
        cmd->consumer_id = who->kind == META_IDENT_NUMERIC
                               ? who->id
                               : part_consumer_name_key(who->name, who->len);
        return 0;
    }
    const struct meta_group *g = meta_group_find(st, sid, tid, who);
    if (g == NULL) {
        *fenced = 1;
        return 0;
    }
    cmd->consumer_id = g->id;
    cmd->group_created_op = g->created_op;
    if (own_ok_revoking < 0) /* GetOffset: not fenced */
        return 0;
    const struct meta_member *m =
        meta_member_by_client(st, sid, tid, g->id, c->client);
    const struct meta_assign *a = meta_assign_get(st, sid, tid, g->id, pid);
    if (m == NULL || a == NULL || a->owner != m->member_id ||
        (!own_ok_revoking && a->revoke_to != META_NONE))
        *fenced = 1;
    return 0;
}

static void
reply_sentinel(struct serve_conn *c, const struct vs_hdr_request *req)
{
    uint8_t b[16];
    memset(b, 0, sizeof(b));
    vs_store_u32(b, DATA_SENTINEL);
    serve_conn_reply(c, req, 0, b, sizeof(b));
}

static void
data_poll(struct serve_conn *c, const struct vs_hdr_request *req,
          const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    struct serve_poll_req q;
    uint32_t st = serve_decode_poll(body, len, &q);
    if (st != 0) {
        serve_conn_reply(c, req, st, NULL, 0);
        return;
    }
    struct data_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = DATA_POLL;
    cmd.strategy = q.strategy_kind;
    cmd.value = q.strategy_value;
    cmd.count = q.count;
    cmd.autocommit = q.autocommit ? 1 : 0;
    int fenced = 0;
    const void *state = lr_read_begin(s->lr, NULL);
    const struct meta_stream *so;
    const struct meta_topic *to;
    st = find_topic(state, &q.stream, &q.topic, &so, &to);
    if (st == 0 &&
        !meta_authz_check(state, c->user_id, META_ACT_POLL, so->id, to->id))
        st = VS_E_UNAUTHORIZED;
    if (st == 0 && q.consumer_kind == 2 && !q.has_partition)
        fenced = 1;
    uint32_t pid = q.has_partition ? q.partition_id : 0;
    const struct meta_partition *p = NULL;
    if (st == 0 && !fenced) {
        p = meta_partition_by_id(state, so->id, to->id, pid);
        st = resolve_consumer(c, state, q.consumer_kind, &q.consumer, so->id,
                              to->id, pid, 0, &cmd, &fenced);
        if (st == 0 && !fenced && p == NULL)
            st = VS_E_PARTITION_NOT_FOUND;
    }
    if (st == 0 && !fenced) {
        cmd.stream_id = so->id;
        cmd.topic_id = to->id;
        cmd.partition_id = pid;
        cmd.created_op = p->created_op;
    }
    lr_read_end(s->lr);
    if (st != 0) {
        serve_conn_reply(c, req, st, NULL, 0);
        return;
    }
    if (fenced) {
        reply_sentinel(c, req);
        return;
    }
    data_route(c, req, &cmd, NULL, 0);
}

static void
data_offset(struct serve_conn *c, const struct vs_hdr_request *req,
            const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    unsigned op = req->operation;
    int get = op == VS_OP_NON_REPLICATED;
    struct serve_offset_req q;
    if (serve_decode_offset(body, len, op, &q) != 0) {
        serve_conn_reply(c, req,
                         get ? VS_E_INVALID_COMMAND : VS_E_RESOURCE_NOT_FOUND,
                         NULL, 0);
        return;
    }
    if (!get && (!q.has_partition || q.ack > 1)) {
        serve_conn_reply(c, req, VS_E_RESOURCE_NOT_FOUND, NULL, 0);
        return;
    }
    struct data_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = get                                 ? DATA_OFFSET_GET
               : op == VS_OP_STORE_CONSUMER_OFFSET ? DATA_OFFSET_STORE
                                                   : DATA_OFFSET_DELETE;
    cmd.value = q.offset;
    uint32_t pid = q.has_partition ? q.partition_id : 0;
    uint32_t st = 0;
    int empty = 0, fenced = 0;
    const void *state = lr_read_begin(s->lr, NULL);
    const struct meta_stream *so;
    const struct meta_topic *to;
    if (find_topic(state, &q.stream, &q.topic, &so, &to) != 0) {
        if (get)
            empty = 1;
        else
            st = VS_E_RESOURCE_NOT_FOUND;
    } else if (!meta_authz_check(state, c->user_id, META_ACT_POLL, so->id,
                                 to->id)) {
        st = VS_E_UNAUTHORIZED;
    } else {
        const struct meta_partition *p =
            meta_partition_by_id(state, so->id, to->id, pid);
        if (p == NULL) {
            st = get ? VS_E_PARTITION_NOT_FOUND : VS_E_RESOURCE_NOT_FOUND;
        } else {
            resolve_consumer(c, state, q.kind, &q.consumer, so->id, to->id, pid,
                             get ? -1 : 1, &cmd, &fenced);
            if (fenced) {
                if (get)
                    empty = 1;
                else
                    st = VS_E_RESOURCE_NOT_FOUND;
            }
            cmd.stream_id = so->id;
            cmd.topic_id = to->id;
            cmd.partition_id = pid;
            cmd.created_op = p->created_op;
        }
    }
    lr_read_end(s->lr);
    if (st != 0 || empty) {
        serve_conn_reply(c, req, st, NULL, 0);
        return;
    }
    data_route(c, req, &cmd, NULL, 0);
}

/* FlushUnsavedBuffer: [stream id][topic id][partition_id u32][fsync u8] */
static void
data_flush(struct serve_conn *c, const struct vs_hdr_request *req,
           const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    struct vs_rbuf r;
    vs_rbuf_init(&r, body, len);
    struct meta_ident si, ti;
    if (serve_rd_ident(&r, &si) != 0 || serve_rd_ident(&r, &ti) != 0) {
        serve_conn_reply(c, req, VS_E_INVALID_COMMAND, NULL, 0);
        return;
    }
    uint32_t pid = vs_rd_u32(&r);
    uint8_t fsync = vs_rd_u8(&r);
    if (r.err) {
        serve_conn_reply(c, req, VS_E_INVALID_COMMAND, NULL, 0);
        return;
    }
    struct data_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = DATA_FLUSH;
    cmd.fsync = fsync;
    const void *state = lr_read_begin(s->lr, NULL);
    const struct meta_stream *so;
    const struct meta_topic *to;
    uint32_t st = find_topic(state, &si, &ti, &so, &to);
    if (st == 0 &&
        !meta_authz_check(state, c->user_id, META_ACT_SEND, so->id, to->id))
        st = VS_E_UNAUTHORIZED;
    if (st == 0) {
        const struct meta_partition *p =
            meta_partition_by_id(state, so->id, to->id, pid);
        if (p == NULL) {
            st = VS_E_PARTITION_NOT_FOUND;
        } else {
            cmd.stream_id = so->id;
            cmd.topic_id = to->id;
            cmd.partition_id = pid;
            cmd.created_op = p->created_op;
        }
    }
    lr_read_end(s->lr);
    if (st != 0) {
        serve_conn_reply(c, req, st, NULL, 0);
        return;
    }
    data_route(c, req, &cmd, NULL, 0);
}

void
serve_data_request(struct serve_conn *c, const struct vs_hdr_request *req,
                   const uint8_t *body, size_t len)
{
    /* the owning shard must have what the caller may see (read your
     * writes: a partition published is open before it is served) */
    dparts_sync(&c->srv->data->parts);
    switch (req->operation) {
    case VS_OP_SEND_MESSAGES:
        data_send(c, req, body, len);
        return;
    case VS_OP_STORE_CONSUMER_OFFSET:
    case VS_OP_DELETE_CONSUMER_OFFSET:
        data_offset(c, req, body, len);
        return;
    default:
        break;
    }
    switch (req->command_code) {
    case SERVE_C_POLL:
        data_poll(c, req, body, len);
        return;
    case SERVE_C_GET_OFFSET:
        data_offset(c, req, body, len);
        return;
    case SERVE_C_FLUSH:
        data_flush(c, req, body, len);
        return;
    default:
        serve_conn_reply(c, req, VS_E_INVALID_COMMAND, NULL, 0);
        return;
    }
}

/* ------------------------------------------------------------- IPC in */

static void
on_request(struct serve *s, uint32_t src, const struct fwd_hdr *fh, uint8_t *p,
           size_t len)
{
    struct serve_data *d = s->data;
    struct data_cmd cmd;
    vs_wbuf_reset(&d->out);
    vs_wr_u32(&d->out, 0);
    uint32_t st;
    size_t head = sizeof(cmd) + VS_HEADER_SIZE;
    if (len < head) {
        st = VS_E_INVALID_COMMAND;
    } else {
        memcpy(&cmd, p, sizeof(cmd));
        struct vs_hdr_request req;
        memcpy(&req, p + sizeof(cmd), sizeof(req));
        struct gc_waiter w;
        memset(&w, 0, sizeof(w));
        w.remote = 1;
        w.src = src;
        w.fh = *fh;
        /* the reassembly buffer may be taken (serve_data_on_frame) */
        d->own = d->rx_own;
        st = data_exec(s, &cmd, &req, fh->client, p + head, len - head, &d->out,
                       &w, 0);
        d->own = NULL;
        if (st == DATA_DEFERRED) {
            s->n.data_remote++;
            return; /* answered by gc_answer once durable */
        }
    }
    if (st != 0)
        d->out.len = 4;
    vs_store_u32(d->out.data, st);
    s->n.data_remote++;
    s->n.data_remote_reply_bytes += d->out.len - 4;
    struct fwd_hdr rh = *fh;
    rh.kind = FWD_DATA_REPLY;
    int rc = send_pieces(s, src, &rh, d->out.data, d->out.len, NULL, 0);
    if (rc < 0)
        vs_log_warn("data reply to shard %u not sent: %d", src, rc);
}

static void
on_reply(struct serve *s, const struct fwd_hdr *fh, const uint8_t *p,
         size_t len)
{
    if (fh->worker_slot != s->ctx->slot ||
        fh->worker_incarnation != s->ctx->incarnation || len < 4)
        return;
    struct serve_conn *c = serve_conn_find(s, fh->conn_id);
    if (c == NULL || !c->data_pending || c->data_seq != fh->session)
        return; /* closed, or already answered 57 */
    uint32_t st = vs_load_u32(p);
    data_done(c, st, st == 0 ? p + 4 : NULL, st == 0 ? len - 4 : 0);
}

void
serve_data_on_frame(struct serve *s, uint32_t src, const void *frame,
                    uint32_t len)
{
    struct serve_data *d = s->data;
    struct fwd_hdr fh;
    if (len < sizeof(fh) || src >= d->n_procs || src == 0) {
        vs_log_warn("IPC: bad data frame of %u bytes from shard %u", len, src);
        return;
    }
    memcpy(&fh, frame, sizeof(fh));
    if (fh.payload_len != len - sizeof(fh)) {
        vs_log_warn("IPC: data frame from shard %u: bad length", src);
        return;
    }
    const uint8_t *p = (const uint8_t *)frame + sizeof(fh);
    struct data_rx *rx = &d->rx[src];
    if (rx->active &&
        (rx->kind != fh.kind || rx->incarnation != fh.worker_incarnation ||
         rx->conn_id != fh.conn_id || rx->seq != fh.session)) {
        rx->active = 0; /* the rest of that message never came */
        vs_wbuf_reset(&rx->buf);
    }
    if (!rx->active) {
        rx->active = 1;
        rx->kind = fh.kind;
        rx->incarnation = fh.worker_incarnation;
        rx->conn_id = fh.conn_id;
        rx->seq = fh.session;
        vs_wbuf_reset(&rx->buf);
    }
    vs_wr_bytes(&rx->buf, p, fh.payload_len);
    if (fh.flags & FWD_F_MORE)
        return;
    rx->active = 0;
    if (fh.kind == FWD_DATA_REQUEST) {
        /* a send may keep the buffer until its write is done */
        void *own = rx->buf.data;
        d->rx_own = &own;
        size_t had = rx->buf.len;
        on_request(s, src, &fh, rx->buf.data, rx->buf.len);
        d->rx_own = NULL;
        if (own == NULL) { /* taken: the next message gets a new one */
            vs_wbuf_init(&rx->buf);
            /* of this one's size (a producer's batches are alike), so
             * its pieces are not copied again each time it doubles */
            if (had <= (size_t)4 << 20)
                (void)vs_wbuf_reserve(&rx->buf, had);
        }
    } else {
        on_reply(s, &fh, rx->buf.data, rx->buf.len);
    }
    if (rx->buf.cap > (size_t)4 << 20) { /* do not keep a huge buffer */
        vs_wbuf_fini(&rx->buf);
        vs_wbuf_init(&rx->buf);
    } else {
        vs_wbuf_reset(&rx->buf);
    }
}

/* The group commit's answer of a held send (gcommit.h gc_answer_fn):
 * back to the client shard, or to this shard's connection if it is still
 * waiting for exactly this request. */
static void
gc_answer(struct serve *s, const struct gc_waiter *w, uint32_t status,
          const uint8_t *body, size_t len)
{
    if (w->link) { /* a peer node forwarded it (pgroups.h) */
        pgroups_answer_link(s->data->pg, w, status, body, len);
        return;
    }
    if (w->remote) {
        uint8_t st4[4];
        vs_store_u32(st4, status);
        if (status != 0)
            len = 0;
        struct fwd_hdr rh = w->fh;
        rh.kind = FWD_DATA_REPLY;
        int rc = send_pieces(s, w->src, &rh, st4, sizeof(st4),
                             len > 0 ? body : NULL, len);
        if (rc < 0)
            vs_log_warn("data reply to shard %u not sent: %d", w->src, rc);
        return;
    }
    struct serve_conn *c = serve_conn_find(s, w->conn_id);
    if (c == NULL || !c->data_pending || c->data_seq != w->seq)
        return; /* closed meanwhile */
    data_done(c, status, status == 0 ? body : NULL, status == 0 ? len : 0);
}

/* ---------------------------------------------------------------- timer */

/* Forwards whose owner died (or restarted) get 57: the client resends. */
static void
watch_owners(struct serve *s)
{
    for (struct serve_conn *c = s->all, *next; c != NULL; c = next) {
        next = c->next;
        if (!c->data_pending)
            continue;
        struct vs_proc_shm *po = seg_proc(s->ctx->seg, c->data_owner);
        uint32_t ready = atomic_load_explicit(&po->ready, memory_order_acquire);
        uint64_t inc =
            atomic_load_explicit(&po->incarnation, memory_order_relaxed);
        if (ready && inc == c->data_owner_incarnation)
            continue;
        vs_log_info("client %s: data shard %u restarted with a request in "
                    "flight: answered 57 (resend)",
                    c->peer, c->data_owner);
        data_done(c, VS_E_TRANSIENT_NOT_COMMITTED, NULL, 0);
    }
}

static void
data_on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct serve *s = arg;
    struct serve_data *d = s->data;
    d->ticks++;
    dparts_sync(&d->parts);
    pgroups_sync(d->pg); /* the groups of newly listed partitions */
    if (d->gc != NULL)
        gcommit_tick(d->gc, mono_ms()); /* interval fsyncs, off the loop */
    else
        dparts_tick_fsync(&d->parts, mono_ms());
    if (d->ticks % (DATA_RETENTION_MS / DATA_TICK_MS) == 0) {
        dparts_tick_retention(&d->parts, vs_realtime_us());
        pgroups_tick_retention(d->pg, vs_realtime_us());
    }
    watch_owners(s);
}

/* A command a peer node forwarded (pgroups.h pgroups_exec_fn). */
static uint32_t
pg_exec(struct serve *s, const struct data_cmd *cmd,
        const struct vs_hdr_request *req, uint8_t *data, size_t dlen,
        struct vs_wbuf *out, const struct gc_waiter *w, uint32_t hops)
{
    s->n.data_remote++;
    struct dparts *parts = &s->data->parts;
    dparts_sync(parts);
    struct part_id id = {
        .stream_id = cmd->stream_id,
        .topic_id = cmd->topic_id,
        .partition_id = cmd->partition_id,
        .created_op = cmd->created_op,
    };
    /* the forwarding node knew the partition: this one's metadata may
     * lag behind, so the client retries rather than hear "not found" */
    if (dparts_find(parts, &id) == NULL)
        return VS_E_TRANSIENT_NOT_COMMITTED;
    /* data is the link's: never an outer request's buffer to take */
    void **outer = s->data->own;
    s->data->own = NULL;
    uint32_t st = data_exec(s, cmd, req, req->client, data, dlen, out, w, hops);
    s->data->own = outer;
    return st == DATA_DEFERRED ? PGROUPS_DEFERRED : st;
}

int
serve_data_init(struct serve *s)
{
    struct serve_data *d = vs_xcalloc(1, sizeof(*d));
    s->data = d;
    d->n_procs = s->ctx->seg->n_procs;
    d->rx = vs_xcalloc(d->n_procs ? d->n_procs : 1, sizeof(*d->rx));
    for (uint32_t i = 0; i < d->n_procs; i++)
        vs_wbuf_init(&d->rx[i].buf);
    vs_wbuf_init(&d->out);
    int rc = dparts_init(&d->parts, s->ctx, s->lr);
    if (rc != 0)
        return rc;
    dparts_sync(&d->parts);
    d->gc = gcommit_create(s, &d->parts, gc_exec, gc_answer,
                           s->cfg->segment_write_offload);
    if (d->gc == NULL)
        return -errno;
    errno = 0;
    d->pg = pgroups_create(s, &d->parts, d->gc, pg_exec, gc_answer);
    if (d->pg == NULL && errno != 0)
        return -errno;
    pgroups_sync(d->pg);
    d->tick_ev = event_new(s->base, -1, EV_PERSIST, data_on_tick, s);
    struct timeval tv = {0, DATA_TICK_MS * 1000};
    if (d->tick_ev == NULL || event_add(d->tick_ev, &tv) != 0)
        return -ENOMEM;
    return 0;
}

void
serve_data_attach_links(struct serve *s, struct dlinks *dl)
{
    struct serve_data *d = s->data;
    if (d == NULL || d->pg == NULL)
        return;
    pgroups_attach(d->pg, dlinks_mesh(dl));
    if (dl == NULL)
        return;
    struct dlinks_hooks h = {
        .on_frame = pgroups_on_frame,
        .on_beat = pgroups_on_beat,
        .on_tick = pgroups_on_tick,
        .on_state = pgroups_on_state,
        .ctx = d->pg,
    };
    dlinks_set_hooks(dl, &h);
}

int
serve_data_replicated(const struct serve *s)
{
    return s->data != NULL && s->data->pg != NULL;
}

struct dparts *
serve_data_parts(struct serve *s)
{
    return &s->data->parts;
}

void
serve_data_fini(struct serve *s)
{
    struct serve_data *d = s->data;
    if (d == NULL)
        return;
    if (d->tick_ev != NULL)
        event_free(d->tick_ev);
    if (d->gc != NULL) {
        struct gc_counters gn;
        gcommit_counters(d->gc, &gn);
        vs_log_info("data shard %u: group commit: %llu sends held for "
                    "%llu fsyncs in %llu groups, %llu queued behind a "
                    "waiting batch",
                    s->ctx->slot, (unsigned long long)gn.held,
                    (unsigned long long)gn.fsyncs,
                    (unsigned long long)gn.groups,
                    (unsigned long long)gn.queued);
    }
    pgroups_destroy(d->pg); /* its groups let go of their partitions */
    d->pg = NULL;
    gcommit_destroy(d->gc); /* before the partitions it syncs close */
    d->gc = NULL;
    if (d->parts.buckets != NULL)
        dparts_fini(&d->parts);
    for (uint32_t i = 0; i < d->n_procs; i++)
        vs_wbuf_fini(&d->rx[i].buf);
    free(d->rx);
    for (size_t i = 0; i < DATA_RR_BUCKETS; i++)
        while (d->rr[i]) {
            struct data_rr *n = d->rr[i]->next;
            free(d->rr[i]);
            d->rr[i] = n;
        }
    vs_wbuf_fini(&d->out);
    free(d);
    s->data = NULL;
}
