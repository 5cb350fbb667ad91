/*
 * shard/serve/server.h - internal structures of the client listener
 * shared by its files (serve.c dispatch, conn.c connections and framing,
 * login.c, propose.c); not for use outside shard/serve.
 *
 * Invariants:
 *  - a connection has at most one request in flight (hashing or at
 *    shard 0); while it has one, nothing more is parsed from its input
 *    and reading is off;
 *  - a connection is freed only by conn.c (peer closed, error, unauth
 *    timeout, or `closing` with its output flushed), never from inside
 *    the frame loop; handlers set `closing` instead;
 *  - reading is on iff not in flight, not closing, the output is below
 *    conn_output_max and the port towards shard 0 is not blocked;
 *  - read sections on the metadata state never span a callback or I/O.
 * Callers: the data shard's loop thread.
 */
#ifndef VS_SHARD_SERVE_SERVER_H
#define VS_SHARD_SERVE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/wire.h"
#include "ipc/lr.h"
#include "ipc/port.h"
#include "shard/meta/ops.h"
#include "shard/meta/secrets.h"
#include "shard/serve/cluster.h"
#include "shard/serve/hasher.h"
#include "shard/serve/proto.h"
#include "shard/serve/serve.h"
#include "shard/shard.h"

struct bufferevent;
struct event;

#define SERVE_BUCKETS 1024u

struct serve_conn {
    struct serve *srv;
    uint64_t id; /* (counter << 9) | slot: unique on the node */
    struct bufferevent *bev;
    struct serve_conn *hnext;       /* id hash chain */
    struct serve_conn *prev, *next; /* all connections */
    struct event *unauth_ev;
    char peer[64];

    /* session (bound by FWD_REPLY with FWD_F_BIND) */
    int bound;
    uint64_t session;
    uint32_t user_id;
    struct vs_u128 client;

    /* the request in flight */
    int in_flight;
    /* forwarded to shard 0 and not answered yet, and the incarnation of
     * shard 0 it went to: if that shard 0 dies, the request is answered
     * 57 (the client resends; the client table makes that safe) */
    int fwd_pending;
    uint64_t fwd_shard0_incarnation;
    struct vs_hdr_request req; /* its header (checksum filled in) */
    uint8_t *body;             /* copy of its body while hashing */
    size_t body_len;
    struct meta_op *op;      /* op being completed by the hasher */
    uint8_t login_pw_failed; /* login: password shape failed creds */
    uint8_t pat_pending;     /* CreatePAT: append the token */
    char pat_token[META_PAT_TOKEN_LEN + 1];

    /* a data-plane request forwarded to the owning data shard
     * (data.c): answered 57 if that shard's incarnation changes */
    int data_pending;
    uint32_t data_owner;
    uint64_t data_owner_incarnation;
    uint64_t data_seq;

    int closing;
    int dispatching; /* inside serve_dispatch (frame loop) */

    /* consumer-group liveness (liveness.c): monotonic ms of the last
     * request, and of the last FWD_MEMBER_SILENT sent (0: none since) */
    uint64_t last_active_ms;
    uint64_t silent_sent_ms;
};

struct serve_data; /* data.c */
struct serve_live; /* liveness.c */

struct serve {
    struct event_base *base;
    const struct vs_shard_ctx *ctx;
    const struct vs_config *cfg;
    struct vs_lr *lr;
    struct vs_port *port;
    int listen_fd;
    struct event *listen_ev;
    char listen_ip[64];
    uint16_t listen_port;
    struct vs_u128 cluster;
    struct serve_hasher *hasher;
    uint64_t start_time_us;

    uint64_t conn_seq;
    uint32_t max_conns;
    struct serve_conn *buckets[SERVE_BUCKETS];
    struct serve_conn *all;

    int shard0_blocked;            /* port_send returned 1; until on_drain(0) */
    struct event *shard0_watch_ev; /* answers forwards lost with shard 0 */

    uint64_t login_window; /* second of the current window (monotonic) */
    uint32_t login_count;

    struct serve_data *data; /* the data plane (data.c) */
    struct serve_live *live; /* group liveness reports (liveness.c) */
    struct serve_cluster cl; /* the node's cluster view (cluster.h) */

    struct serve_counters n;
    struct vs_wbuf scratch;
};

/* ---- propose.c ---- */
/* Answers 57 to every forward whose shard 0 is no longer the one it was
 * sent to (crashed or restarting). Called from a periodic timer. */
void serve_propose_watch_shard0(struct serve *s);

/* ---- conn.c ---- */
int serve_conn_accept(struct serve *s, int fd);
struct serve_conn *serve_conn_find(struct serve *s, uint64_t id);
void serve_conn_free(struct serve_conn *c);
/* Queues bytes to the client (never blocks; checks conn_output_max). */
void serve_conn_send(struct serve_conn *c, const void *p, size_t len);
/* Reply to the request with header `req`. */
void serve_conn_reply(struct serve_conn *c, const struct vs_hdr_request *req,
                      uint32_t status, const void *body, size_t len);
/* Eviction for client `client`. */
void serve_conn_evict(struct serve_conn *c, struct vs_u128 client,
                      uint8_t reason);
/* Sets reading on or off from the invariants above. */
void serve_conn_update_read(struct serve_conn *c);
/* The request in flight finished: parse what is buffered. May free c. */
void serve_conn_request_done(struct serve_conn *c);
/* (Un)binding: stops/starts the unauthenticated-connection timer. */
void serve_conn_bind(struct serve_conn *c, uint64_t session, uint32_t user,
                     struct vs_u128 client);
void serve_conn_unbind(struct serve_conn *c);
/* Re-evaluates reading on every connection (port drained/blocked). */
void serve_conns_update_read(struct serve *s);
/* Parses what every idle connection has buffered (after a drain). May
 * free connections. */
void serve_conns_resume(struct serve *s);

/* ---- serve.c ---- */
/* One complete frame (framing already checked). */
void serve_dispatch(struct serve_conn *c, const struct vs_hdr_request *req,
                    const uint8_t *body, size_t len);

/* ---- login.c ---- */
void serve_login_start(struct serve_conn *c, const struct vs_hdr_request *req,
                       const uint8_t *body, size_t len);
void serve_login_hash_done(struct serve_conn *c, struct serve_hash_job *j);

/* ---- propose.c ---- */
void serve_propose_start(struct serve_conn *c, const struct vs_hdr_request *req,
                         const uint8_t *body, size_t len);
void serve_propose_hash_done(struct serve_conn *c, struct serve_hash_job *j);
/* Encodes op and sends FWD_PROPOSE for the request in c->req; the
 * connection stays in flight until FWD_REPLY. */
void serve_propose_send(struct serve_conn *c, const struct meta_op *op);
void serve_propose_on_reply(struct serve *s, const void *frame, uint32_t len);
/* Tells shard 0 a bound connection closed. */
void serve_propose_closed(struct serve *s, const struct serve_conn *c);

#endif /* VS_SHARD_SERVE_SERVER_H */
