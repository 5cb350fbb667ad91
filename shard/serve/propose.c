/*
 * shard/serve/propose.c - replicated requests on a data shard: the
 * client body decoded into a metadata op (proto.c), pre-consensus checks
 * answered in the header status, secrets prepared (argon2 hashes on the
 * hasher thread, a new PAT made here), the op encoded (meta_op_encode)
 * and sent to shard 0 as FWD_PROPOSE (shard/fwd.h); shard 0's FWD_REPLY
 * relayed to the client.
 *
 * Secrets: CreateUser's password is hashed before proposing;
 * ChangePassword verifies the current password against the stored hash
 * first (mismatch -> H 42) and proposes the new hash with the verified
 * old one (apply refuses if it changed meanwhile); unknown target or a
 * caller without manage_users on someone else's password is proposed
 * unhashed so apply answers R 20 / R 41. CreatePAT makes the token here:
 * only its digest is proposed, and the raw token is appended to shard
 * 0's success reply `00000000` as [len u8][token] (never cached, never
 * replicated). The PAT cap (100 per user) is checked first -> H 52.
 *
 * FWD_PROPOSE payload: the request header with user_id stamped (the
 * session's user) and request_checksum set, then the op body.
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "ipc/segment.h"
#include "shard/fwd.h"
#include "shard/meta/authz.h"
#include "shard/meta/lookup.h"
#include "shard/serve/server.h"
#include "shard/serve/sessend.h"

static void
propose_fail(struct serve_conn *c, uint32_t status)
{
    serve_conn_reply(c, &c->req, status, NULL, 0);
    c->pat_pending = 0;
    sodium_memzero(c->pat_token, sizeof(c->pat_token));
    serve_conn_request_done(c);
}

void
serve_propose_send(struct serve_conn *c, const struct meta_op *op)
{
    struct serve *s = c->srv;
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    struct fwd_hdr fh;
    memset(&fh, 0, sizeof(fh));
    vs_wr_bytes(&w, &fh, sizeof(fh));
    vs_wr_bytes(&w, &c->req, sizeof(c->req));
    if (meta_op_encode(op, &w) != 0) {
        vs_wbuf_fini(&w);
        propose_fail(c, VS_E_INVALID_COMMAND);
        return;
    }
    /* Shard 0 resets its incoming rings when it starts and marks its slot
     * ready after that: a frame sent before would be dropped unanswered. */
    struct vs_proc_shm *p0 = seg_proc(s->ctx->seg, 0);
    if (!atomic_load_explicit(&p0->ready, memory_order_acquire)) {
        vs_wbuf_fini(&w);
        propose_fail(c, VS_E_TRANSIENT_NOT_COMMITTED);
        return;
    }
    c->fwd_shard0_incarnation =
        atomic_load_explicit(&p0->incarnation, memory_order_relaxed);
    fh.kind = FWD_PROPOSE;
    fh.worker_slot = s->ctx->slot;
    fh.worker_incarnation = s->ctx->incarnation;
    fh.conn_id = c->id;
    fh.payload_len = (uint32_t)(w.len - sizeof(fh));
    fh.client = c->req.client;
    fh.user_id = c->req.user_id;
    memcpy(w.data, &fh, sizeof(fh));
    c->in_flight = 1;
    c->fwd_pending = 1;
    int rc = port_send(s->port, 0, w.data, (uint32_t)w.len);
    vs_wbuf_fini(&w);
    if (rc < 0) {
        c->fwd_pending = 0;
        vs_log_warn("client %s: cannot forward operation %u to shard 0: "
                    "%d",
                    c->peer, c->req.operation, rc);
        propose_fail(c, VS_E_INVALID_COMMAND);
        return;
    }
    s->n.forwarded++;
    if (rc == 1 && !s->shard0_blocked) {
        s->shard0_blocked = 1;
        serve_conns_update_read(s);
    }
}

static void
prepare_request(struct serve_conn *c, const struct vs_hdr_request *req,
                const uint8_t *body, size_t len)
{
    c->req = *req;
    if (vs_u128_is_zero(c->req.request_checksum))
        c->req.request_checksum = vs_checksum(body, len);
    c->req.user_id = c->user_id;
    c->in_flight = 1;
}

void
serve_propose_start(struct serve_conn *c, const struct vs_hdr_request *req,
                    const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    struct meta_op *op = vs_xmalloc(sizeof(*op));
    struct serve_secrets sec;
    uint32_t st = serve_decode_replicated(req->operation, body, len, op, &sec);
    if (st != 0) {
        serve_conn_reply(c, req, st, NULL, 0);
        goto out;
    }
    prepare_request(c, req, body, len);
    switch (req->operation) {
    case VS_OP_CREATE_USER: {
        struct serve_hash_job *j = serve_hash_job_new(SERVE_HASH_MAKE);
        j->conn_id = c->id;
        memcpy(j->pw, sec.pw, sec.pw_len);
        j->pw_len = sec.pw_len;
        c->op = op;
        op = NULL;
        serve_hasher_submit(s->hasher, j);
        goto out;
    }
    case VS_OP_CHANGE_PASSWORD: {
        struct serve_hash_job *j = serve_hash_job_new(SERVE_HASH_VERIFY_MAKE);
        int hash = 0;
        const void *stt = lr_read_begin(s->lr, NULL);
        const struct meta_user *u = meta_user_find(stt, &op->user);
        if (u != NULL &&
            (u->id == c->user_id ||
             meta_authz_check(stt, c->user_id, META_ACT_MANAGE_USERS, META_NONE,
                              META_NONE))) {
            hash = 1;
            memcpy(j->phc, u->pw_hash, sizeof(j->phc));
            j->phc[sizeof(j->phc) - 1] = '\0';
        }
        lr_read_end(s->lr);
        if (!hash) { /* apply answers R 20 / R 41 */
            serve_hash_job_free(j);
            serve_propose_send(c, op);
            goto out;
        }
        j->conn_id = c->id;
        memcpy(j->pw, sec.pw, sec.pw_len);
        j->pw_len = sec.pw_len;
        memcpy(j->pw2, sec.pw2, sec.pw2_len);
        j->pw2_len = sec.pw2_len;
        c->op = op;
        op = NULL;
        serve_hasher_submit(s->hasher, j);
        goto out;
    }
    case VS_OP_CREATE_PAT: {
        const void *stt = lr_read_begin(s->lr, NULL);
        const struct meta_user *u = meta_user_by_id(stt, c->user_id);
        int full = u != NULL && u->pat_count >= META_PATS_PER_USER;
        lr_read_end(s->lr);
        if (full) {
            propose_fail(c, VS_E_PAT_LIMIT_REACHED);
            goto out;
        }
        uint8_t digest[META_DIGEST_LEN];
        meta_pat_make(c->pat_token, digest);
        meta_op_set_secret(op, digest, sizeof(digest));
        c->pat_pending = 1;
        serve_propose_send(c, op);
        goto out;
    }
    default:
        serve_propose_send(c, op);
        goto out;
    }
out:
    sodium_memzero(&sec, sizeof(sec));
    free(op);
}

void
serve_propose_hash_done(struct serve_conn *c, struct serve_hash_job *j)
{
    if (c->op == NULL) {
        propose_fail(c, VS_E_ERROR);
        return;
    }
    if (j->result != 0) {
        propose_fail(c, j->result == -EACCES ? VS_E_INVALID_CREDENTIALS
                                             : VS_E_ERROR);
        return;
    }
    size_t n = strnlen(j->out, META_PWHASH_MAX);
    meta_op_set_secret(c->op, j->out, n);
    if (c->req.operation == VS_OP_CHANGE_PASSWORD) {
        size_t m = strnlen(j->phc, META_PWHASH_MAX);
        memcpy(c->op->secret2, j->phc, m);
        c->op->secret2_len = (uint8_t)m;
    }
    serve_propose_send(c, c->op);
}

/* CreatePAT success: shard 0 answers `00000000`; the client gets the
 * token appended. Anything else is relayed as is. */
static void
relay_reply(struct serve_conn *c, const uint8_t *p, uint32_t len)
{
    struct vs_hdr_reply h;
    static const uint8_t ok[4] = {0, 0, 0, 0};
    if (c->pat_pending && len == VS_HEADER_SIZE + 4) {
        memcpy(&h, p, sizeof(h));
        if (h.f.command == VS_CMD_REPLY && h.status == 0 &&
            memcmp(p + VS_HEADER_SIZE, ok, 4) == 0) {
            size_t tl = strlen(c->pat_token);
            struct vs_wbuf w;
            vs_wbuf_init(&w);
            h.f.size = (uint32_t)(VS_HEADER_SIZE + 4 + 1 + tl);
            memset(&h.f.checksum, 0, sizeof(h.f.checksum));
            memset(&h.f.checksum_body, 0, sizeof(h.f.checksum_body));
            vs_wr_bytes(&w, &h, sizeof(h));
            vs_wr_bytes(&w, ok, 4);
            vs_wr_u8(&w, (uint8_t)tl);
            vs_wr_bytes(&w, c->pat_token, tl);
            serve_conn_send(c, w.data, w.len);
            sodium_memzero(w.data, w.len);
            vs_wbuf_fini(&w);
            return;
        }
    }
    serve_conn_send(c, p, len);
}

void
serve_propose_on_reply(struct serve *s, const void *frame, uint32_t len)
{
    struct fwd_hdr fh;
    if (len < sizeof(fh)) {
        vs_log_warn("IPC: short frame of %u bytes from shard 0", len);
        return;
    }
    memcpy(&fh, frame, sizeof(fh));
    const uint8_t *p = (const uint8_t *)frame + sizeof(fh);
    if (fh.kind != FWD_REPLY || fh.payload_len != len - sizeof(fh) ||
        fh.payload_len < VS_HEADER_SIZE) {
        vs_log_warn("IPC: bad frame from shard 0 (kind %u, %u bytes)", fh.kind,
                    len);
        return;
    }
    if (fh.worker_slot != s->ctx->slot ||
        fh.worker_incarnation != s->ctx->incarnation)
        return; /* for an earlier incarnation of this shard */
    struct serve_conn *c = serve_conn_find(s, fh.conn_id);
    if (c == NULL || !c->in_flight) {
        if (c == NULL && (fh.flags & FWD_F_BIND)) {
            /* bound a connection that is gone: tell shard 0 */
            struct fwd_hdr cl;
            memset(&cl, 0, sizeof(cl));
            cl.kind = FWD_CLOSED;
            cl.worker_slot = s->ctx->slot;
            cl.worker_incarnation = s->ctx->incarnation;
            cl.conn_id = fh.conn_id;
            cl.client = fh.client;
            cl.session = fh.session;
            (void)port_send(s->port, 0, &cl, sizeof(cl));
        } else if (c != NULL) {
            vs_log_warn("client %s: reply from shard 0 with no request in "
                        "flight: dropped",
                        c->peer);
        }
        return;
    }
    c->fwd_pending = 0;
    relay_reply(c, p, fh.payload_len);
    c->pat_pending = 0;
    sodium_memzero(c->pat_token, sizeof(c->pat_token));
    if (fh.flags & FWD_F_BIND) {
        serve_conn_bind(c, fh.session, fh.user_id,
                        vs_u128_is_zero(fh.client) ? c->req.client : fh.client);
        serve_cred_bound(c); /* sessend.h: ends with its credentials */
    }
    if (fh.flags & FWD_F_UNBIND)
        serve_conn_unbind(c);
    serve_conn_request_done(c);
}

void
serve_propose_watch_shard0(struct serve *s)
{
    struct vs_proc_shm *p0 = seg_proc(s->ctx->seg, 0);
    uint32_t ready = atomic_load_explicit(&p0->ready, memory_order_acquire);
    uint64_t inc = atomic_load_explicit(&p0->incarnation, memory_order_relaxed);
    for (struct serve_conn *c = s->all, *next; c != NULL; c = next) {
        next = c->next;
        if (!c->fwd_pending || (ready && inc == c->fwd_shard0_incarnation))
            continue;
        /* The shard 0 that had this request is gone: whether it committed
         * is unknown here, so ask the client to resend the same request;
         * the new shard 0's client table answers a committed one from its
         * cache and executes an uncommitted one once. */
        vs_log_info("client %s: shard 0 restarted with operation %u in "
                    "flight: answered 57 (resend)",
                    c->peer, c->req.operation);
        c->fwd_pending = 0;
        propose_fail(c, VS_E_TRANSIENT_NOT_COMMITTED);
    }
}

void
serve_propose_closed(struct serve *s, const struct serve_conn *c)
{
    struct fwd_hdr cl;
    memset(&cl, 0, sizeof(cl));
    cl.kind = FWD_CLOSED;
    cl.worker_slot = s->ctx->slot;
    cl.worker_incarnation = s->ctx->incarnation;
    cl.conn_id = c->id;
    cl.client = c->client;
    cl.session = c->session;
    (void)port_send(s->port, 0, &cl, sizeof(cl));
}
