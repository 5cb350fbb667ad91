/*
 * shard/serve/serve.c - the data shard's client listener: accept, the
 * per-request answer rules (iggy-client-protocol-2 §0, §7), reads from
 * the published state, and the IPC entry points; see serve.h.
 *
 * Answer rules, in order, for one framed request:
 *  1. request_checksum non-zero and != XXH3(body) -> H 4 (zero: the
 *     server computes it for forwarding);
 *  2. a bound connection whose credentials are gone (user deleted or
 *     deactivated, token deleted or expired: sessend.h) gets the
 *     eviction as its answer; one whose session is no longer live in the
 *     published client table is logged out first;
 *  3. NonReplicated (2): codes 38/44 -> Eviction 15 (before or after
 *     login); Ping -> status 0, empty body; before login -> H 40; a
 *     replicated code -> H 5; 39/40/45 -> status 0, empty; Flush -> H 5;
 *     reads -> served here (H 3 undecodable, H 41 denied, not found =
 *     status 0 empty); the vendor reads GetReplicaStatus (cluster.h) and
 *     GetSessionStatus (server.h); any other code -> H 3; the connection
 *     stays;
 *  4. Register (1), replicated requests and metadata reads are answered
 *     58 until the published metadata can judge them (gate.h);
 *     Register (1) -> login.c; Logout (3) and metadata ops 128..149 ->
 *     Eviction 1 before login, else propose.c (DeleteSegments 138:
 *     segments.c, which asks the owner for the watermark first); partition
 * plane 160..162
 *     -> Eviction 1 before login, else data.c (send, store/delete
 *     offset; also NR Poll, GetOffset, Flush); any other operation -> H 3.
 * Every request gets exactly one answer (or, for a framing error, the
 * close described in conn.c).
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "shard/fwd.h"
#include "shard/meta/lookup.h"
#include "shard/serve/clients.h"
#include "shard/serve/balance.h"
#include "server/listen.h"
#include "shard/serve/data.h"
#include "shard/serve/gate.h"
#include "shard/serve/handoff.h"
#include "shard/serve/liveness.h"
#include "shard/serve/reads.h"
#include "shard/serve/segments.h"
#include "shard/serve/server.h"
#include "shard/serve/sessend.h"

static void
fill_info(const struct serve_conn *c, struct serve_client_info *ci)
{
    memset(ci, 0, sizeof(*ci));
    ci->client_id = (uint32_t)c->id;
    ci->user_id = c->bound ? c->user_id : META_NONE;
    ci->client = c->bound ? c->client : (struct vs_u128){0, 0};
    memcpy(ci->address, c->peer, sizeof(ci->address));
}

static void
serve_read_request(struct serve_conn *c, const struct vs_hdr_request *req,
                   uint32_t code, const uint8_t *body, size_t len)
{
    struct serve *s = c->srv;
    struct serve_read_req q;
    uint32_t st = serve_decode_read(code, body, len, &q);
    if (st != 0) {
        serve_conn_reply(c, req, st, NULL, 0);
        return;
    }
    struct serve_client_info self;
    fill_info(c, &self);
    struct serve_read_env env = {
        .cfg = s->cfg,
        .user_id = c->user_id,
        .self = &self,
        .listen_port = s->listen_port,
        .start_time_us = s->start_time_us,
        .client_by_id = serve_clients_by_id, /* every data shard's */
        .each_client = serve_clients_each,
        .arg = s,
        .cluster = &s->cl,
    };
    memcpy(env.listen_ip, s->listen_ip, sizeof(env.listen_ip));
    struct vs_wbuf out;
    vs_wbuf_init(&out);
    const void *state = lr_read_begin(s->lr, NULL);
    st = serve_read(state, &env, &q, &out);
    lr_read_end(s->lr);
    if (st != 0)
        serve_conn_reply(c, req, st, NULL, 0);
    else
        serve_conn_reply(c, req, 0, out.data, out.len);
    vs_wbuf_fini(&out);
}

/* GetSessionStatus (server.h): read from the published client table. */
static void
serve_session_status(struct serve_conn *c, const struct vs_hdr_request *req)
{
    uint64_t created_op = 0, epoch = 0, watermark = 0;
    const void *st = lr_read_begin(c->srv->lr, NULL);
    const struct meta_session *m = meta_session_by_client(st, c->client);
    int live = m != NULL && m->epoch == c->session;
    if (live) {
        created_op = m->created_op;
        epoch = m->epoch;
        watermark = m->watermark;
    }
    lr_read_end(c->srv->lr);
    if (!live) {
        serve_conn_reply(c, req, VS_E_UNAUTHENTICATED, NULL, 0);
        return;
    }
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    vs_wr_u64(&w, created_op);
    vs_wr_u64(&w, epoch);
    vs_wr_u64(&w, watermark);
    serve_conn_reply(c, req, 0, w.data, w.len);
    vs_wbuf_fini(&w);
}

/* Until partitions are replicated, only the leader's node serves the
 * partition plane (cluster.h): 1 if the request was refused here. With
 * partition replication the partition's replica set decides where a
 * command runs (pgroups.h): nothing is refused here. */
static int
serve_cluster_gate_data(struct serve_conn *c, const struct vs_hdr_request *req)
{
    if (serve_data_replicated(c->srv))
        return 0;
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    int refused = serve_cluster_refuses_data(&c->srv->cl, &w);
    if (refused)
        serve_conn_reply(c, req, VS_E_NOT_ACCEPTED, w.data, w.len);
    vs_wbuf_fini(&w);
    return refused;
}

static void
serve_nr(struct serve_conn *c, const struct vs_hdr_request *req,
         const uint8_t *body, size_t len)
{
    uint32_t code = req->command_code;
    enum serve_nr_class k = serve_nr_classify(code);
    if (k == SERVE_NR_LEGACY_LOGIN) {
        serve_conn_evict(c, req->client, VS_EVICT_MALFORMED_LOGIN);
        serve_conn_unbind(c);
        return;
    }
    if (k == SERVE_NR_PING) {
        serve_conn_reply(c, req, 0, NULL, 0);
        return;
    }
    if (!c->bound) {
        serve_conn_reply(c, req, VS_E_UNAUTHENTICATED, NULL, 0);
        return;
    }
    if (code == SERVE_C_REPLICA_STATUS) {
        struct vs_wbuf w;
        vs_wbuf_init(&w);
        serve_cluster_write_status(&c->srv->cl, &w);
        serve_conn_reply(c, req, 0, w.data, w.len);
        vs_wbuf_fini(&w);
        return;
    }
    if (code == SERVE_C_SESSION_STATUS) {
        serve_session_status(c, req);
        return;
    }
    if (serve_data_is_data(VS_OP_NON_REPLICATED, code)) {
        if (!serve_cluster_gate_data(c, req))
            serve_data_request(c, req, body, len);
        return;
    }
    switch (k) {
    case SERVE_NR_REPLICATED:
    case SERVE_NR_UNAVAILABLE:
        serve_conn_reply(c, req, VS_E_FEATURE_UNAVAILABLE, NULL, 0);
        return;
    case SERVE_NR_NO_HANDLER:
        serve_conn_reply(c, req, 0, NULL, 0);
        return;
    case SERVE_NR_READ:
        if (!serve_gate_open(c->srv)) {
            serve_conn_reply(c, req, VS_E_NOT_ACCEPTED, NULL, 0);
            return;
        }
        serve_read_request(c, req, code, body, len);
        return;
    default:
        serve_conn_reply(c, req, VS_E_INVALID_COMMAND, NULL, 0);
        return;
    }
}

/* The session of a bound connection must still be live in the
 * published client table (logout, eviction by a newer Register). */
static void
check_session(struct serve_conn *c)
{
    if (!c->bound)
        return;
    const void *st = lr_read_begin(c->srv->lr, NULL);
    const struct meta_session *m = meta_session_by_client(st, c->client);
    int live = m != NULL && m->epoch == c->session && m->user_id == c->user_id;
    lr_read_end(c->srv->lr);
    if (!live) {
        vs_log_debug("client %s: session %llu no longer live: logged out",
                     c->peer, (unsigned long long)c->session);
        serve_conn_unbind(c);
    }
}

void
serve_dispatch(struct serve_conn *c, const struct vs_hdr_request *req,
               const uint8_t *body, size_t len)
{
    serve_live_touch(c);     /* any request counts as a heartbeat */
    if (serve_cred_check(c)) /* sessend.h: its eviction is the answer */
        return;
    struct vs_u128 sum = vs_checksum(body, len);
    if (!vs_u128_is_zero(req->request_checksum) &&
        !vs_u128_eq(req->request_checksum, sum)) {
        serve_conn_reply(c, req, VS_E_INVALID_FORMAT, NULL, 0);
        return;
    }
    check_session(c);
    unsigned op = req->operation;
    if (op == VS_OP_NON_REPLICATED) {
        serve_nr(c, req, body, len);
        return;
    }
    if (op == VS_OP_REGISTER) {
        if (!serve_gate_open(c->srv)) { /* gate.h: not judgeable yet */
            serve_conn_reply(c, req, VS_E_NOT_ACCEPTED, NULL, 0);
            return;
        }
        serve_login_start(c, req, body, len);
        return;
    }
    int replicated = op == VS_OP_LOGOUT || (op >= VS_OP_CREATE_STREAM &&
                                            op <= VS_OP_LEAVE_CONSUMER_GROUP);
    int partition =
        op >= VS_OP_SEND_MESSAGES && op <= VS_OP_DELETE_CONSUMER_OFFSET;
    if (!replicated && !partition) {
        serve_conn_reply(c, req, VS_E_INVALID_COMMAND, NULL, 0);
        return;
    }
    if (!c->bound) {
        serve_conn_evict(c, req->client, VS_EVICT_NO_SESSION);
        return;
    }
    if (req->session == 0 || req->request == 0) {
        serve_conn_reply(c, req, VS_E_INVALID_COMMAND, NULL, 0);
        return;
    }
    if (partition) {
        if (!serve_cluster_gate_data(c, req))
            serve_data_request(c, req, body, len);
        return;
    }
    if (!serve_gate_open(c->srv)) {
        serve_conn_reply(c, req, VS_E_NOT_ACCEPTED, NULL, 0);
        return;
    }
    if (op == VS_OP_DELETE_SEGMENTS) {
        serve_segments_start(c, req, body, len);
        return;
    }
    serve_propose_start(c, req, body, len);
}

/* ------------------------------------------------------------ listener */

static void
serve_on_accept(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    serve_bal_on_accept(arg, fd, 0); /* balance.h: an even spread */
}

static void
serve_hash_done(void *ctx, struct serve_hash_job *j)
{
    struct serve *s = ctx;
    struct serve_conn *c = serve_conn_find(s, j->conn_id);
    if (c == NULL || !c->in_flight) {
        serve_hash_job_free(j);
        return;
    }
    if (c->req.operation == VS_OP_REGISTER)
        serve_login_hash_done(c, j);
    else
        serve_propose_hash_done(c, j);
    serve_hash_job_free(j);
}

/* Every 100 ms: forwards lost with a crashed shard 0 get an answer;
 * client liveness and group reports (liveness.c); sessions whose
 * credentials are gone end (sessend.c). */
static void
serve_on_shard0_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    serve_propose_watch_shard0(arg);
    serve_live_tick(arg);
    serve_cred_tick(arg);
    serve_bal_publish(arg); /* closes since the last accept */
}

struct serve *
serve_create(struct event_base *base, const struct vs_shard_ctx *ctx,
             struct vs_lr *lr, struct vs_port *port, int listen_fd)
{
    struct serve *s = vs_xcalloc(1, sizeof(*s));
    int err = 0;
    s->base = base;
    s->ctx = ctx;
    s->cfg = ctx->cfg;
    s->lr = lr;
    s->port = port;
    s->listen_fd = listen_fd;
    s->tls_fd = -1;
    s->start_time_us = vs_realtime_us();
    uint32_t k = ctx->k > 0 ? ctx->k : 1;
    s->max_conns = (ctx->cfg->max_connections + k - 1) / k;
    vs_config_cluster_id(ctx->cfg, &s->cluster.lo, &s->cluster.hi);
    serve_cluster_init(&s->cl, ctx->cfg);
    vs_wbuf_init(&s->scratch);
    snprintf(s->listen_ip, sizeof(s->listen_ip), "127.0.0.1");
    if (listen_fd >= 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(listen_fd, (struct sockaddr *)&ss, &sl) == 0) {
            if (ss.ss_family == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *)&ss;
                inet_ntop(AF_INET, &a->sin_addr, s->listen_ip,
                          sizeof(s->listen_ip));
                s->listen_port = ntohs(a->sin_port);
            } else if (ss.ss_family == AF_INET6) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
                inet_ntop(AF_INET6, &a->sin6_addr, s->listen_ip,
                          sizeof(s->listen_ip));
                s->listen_port = ntohs(a->sin6_port);
            }
        }
    }
    s->hasher =
        serve_hasher_create(base, ctx->cfg->argon2_opslimit,
                            ctx->cfg->argon2_memlimit, serve_hash_done, s);
    if (s->hasher == NULL) {
        err = errno;
        goto fail;
    }
    s->shard0_watch_ev =
        event_new(base, -1, EV_PERSIST, serve_on_shard0_watch, s);
    struct timeval watch = {.tv_sec = 0, .tv_usec = 100000};
    if (s->shard0_watch_ev == NULL ||
        event_add(s->shard0_watch_ev, &watch) != 0) {
        err = ENOMEM;
        goto fail;
    }
    /* partitions this shard owns are open before it serves (data.c) */
    serve_live_init(s);
    int drc = serve_data_init(s);
    if (drc != 0) {
        vs_log_error("data plane: %s", strerror(-drc));
        err = -drc;
        goto fail;
    }
    if (serve_bal_init(s) != 0 || serve_handoff_init(s) != 0) {
        err = ENOMEM;
        goto fail;
    }
    if (listen_fd >= 0) {
        s->listen_ev = event_new(base, listen_fd, EV_READ | EV_PERSIST,
                                 serve_on_accept, s);
        if (s->listen_ev == NULL || event_add(s->listen_ev, NULL) != 0) {
            err = ENOMEM;
            goto fail;
        }
    }
    return s;
fail:
    serve_destroy(s);
    errno = err;
    return NULL;
}

void
serve_destroy(struct serve *s)
{
    if (s == NULL)
        return;
    while (s->all != NULL) {
        s->all->bound = 0; /* no FWD_CLOSED while stopping */
        serve_conn_free(s->all);
    }
    serve_handoff_fini(s);
    serve_hasher_destroy(s->hasher);
    if (s->data != NULL) {
        vs_log_info("data shard %u: %llu data requests forwarded to other "
                    "shards, %llu served for them",
                    s->ctx->slot, (unsigned long long)s->n.data_forwarded,
                    (unsigned long long)s->n.data_remote);
        vs_log_info("data shard %u: %llu batch bytes forwarded to other "
                    "shards, %llu reply bytes returned to them",
                    s->ctx->slot, (unsigned long long)s->n.data_forwarded_bytes,
                    (unsigned long long)s->n.data_remote_reply_bytes);
        vs_log_info("data shard %u: %llu frames read straight into place, "
                    "%llu poll replies queued without a copy",
                    s->ctx->slot, (unsigned long long)s->n.rx_direct,
                    (unsigned long long)s->n.poll_zero_copy);
    }
    serve_data_fini(s);
    serve_live_fini(s);
    if (s->shard0_watch_ev != NULL)
        event_free(s->shard0_watch_ev);
    serve_bal_fini(s);
    if (s->listen_ev != NULL)
        event_free(s->listen_ev);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->tls_ev != NULL)
        event_free(s->tls_ev);
    if (s->tls_fd >= 0)
        close(s->tls_fd);
    SSL_CTX_free(s->tls_ctx);
    vs_wbuf_fini(&s->scratch);
    free(s);
}

void
serve_on_frame(void *srv, uint32_t src, const void *frame, uint32_t len)
{
    struct serve *s = srv;
    if (src != 0) {
        serve_data_on_frame(s, src, frame, len);
        return;
    }
    uint32_t kind = 0;
    if (len >= sizeof(struct fwd_hdr))
        memcpy(&kind, frame, sizeof(kind)); /* fwd_hdr.kind at 0 */
    if (kind == FWD_CLUSTER) {
        if (serve_cluster_on_frame(&s->cl, frame, len) != 0)
            vs_log_warn("IPC: malformed cluster report from shard 0");
        return;
    }
    serve_propose_on_reply(s, frame, len);
}

void
serve_on_drain(void *srv, uint32_t dst)
{
    struct serve *s = srv;
    if (dst != 0 || !s->shard0_blocked)
        return;
    s->shard0_blocked = 0;
    serve_conns_update_read(s);
    serve_conns_resume(s);
}

void
serve_get_counters(const struct serve *s, struct serve_counters *out)
{
    *out = s->n;
}
