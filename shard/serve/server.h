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
#include "ipc/conntab.h"
#include "ipc/port.h"
#include "ipc/throttle.h"
#include "shard/meta/ops.h"
#include "shard/meta/secrets.h"
#include "shard/serve/cluster.h"
#include "shard/serve/hasher.h"
#include "shard/serve/partkey.h"
#include "shard/serve/proto.h"
#include "shard/serve/serve.h"
#include "shard/shard.h"

struct bufferevent;
struct ssl_ctx_st;
struct event;

#define SERVE_BUCKETS 1024u

/* Vendor NonReplicated code of GetSessionStatus (login needed): the
 * calling connection's session as the published client table holds it,
 * [created_op u64][epoch u64][watermark u64] (created_op: the op of the
 * Register that created the table entry; a re-register with the same
 * client id keeps it, an entry evicted and registered again gets a newer
 * one). A session no longer live -> H 40. Lets a client that re-registered
 * after a broken connection tell whether the table still holds its
 * history before it resends a request. */
#define SERVE_C_SESSION_STATUS 9101u

/* The credentials a session was opened with (sessend.c). */
struct serve_cred {
    uint64_t user_created_op; /* the user's, at login */
    uint8_t pat;              /* 1: opened with the token of `digest` */
    uint8_t digest[META_DIGEST_LEN];
};

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

    /* client liveness (liveness.c): monotonic ms of the last request */
    uint64_t last_active_ms;

    int ct_idx; /* its entry in the node's connection table, or -1 */

    /* credentials of the login in flight, and of the bound session */
    struct serve_cred login_cred;
    struct serve_cred cred;
    uint64_t cred_checked_op; /* published op of the last check */
    uint64_t cred_expiry;     /* its token's expiry (µs), 0: none */

    /* frame timer (frametimer.c): frames dispatched on this connection,
     * and the count when the running timer was started */
    struct event *frame_ev;
    uint64_t frames;
    uint64_t frame_seq;
    int frame_armed;
    uint64_t silent_sent_ms;

    /* direct read of a large frame (rxbody.c): its buffer, size and the
     * bytes received; rx_ev watches the socket while rx != NULL */
    uint8_t *rx;
    uint32_t rx_size, rx_have;
    struct event *rx_ev;

    /* transport (transport.c) and request metrics */
    uint8_t tls;             /* accepted on the TLS listener */
    uint8_t tls_up;          /* its handshake completed */
    uint8_t req_metric_op;   /* vs_metrics_op_index of the request */
    uint64_t req_started_ns; /* monotonic, when it was dispatched */

    /* connection handoff (handoff.h): the data shard the last data
     * requests went to and how many in a row; set once it was handed */
    uint32_t ho_target;
    uint32_t ho_run;
    uint8_t handed_off;

    /* the deduplication key of its partition ops (partkey.h) */
    struct part_key pkey;
};

/* Bytes a connection reads or writes per system call at most. */
#define SERVE_IO_CHUNK (1u << 20)

struct serve_data; /* data.c */
struct serve_live; /* liveness.c */
struct serve_bal;  /* balance.c */
struct serve_ho;   /* handoff.c */

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

    /* readiness gate (gate.c): 1 once the published metadata can judge
     * logins; requests answered 58 before that */
    int gate_open;
    uint64_t gate_refused;

    /* the node's connection table (clients.c), attached on first use */
    struct vs_conntab conntab;
    int conntab_absent;

    /* failed-login throttle (throttle.c): the node's shared table,
     * attached on first use */
    struct vs_throttle throttle;
    int throttle_failed; /* no table: logged once, unthrottled */
    uint64_t login_throttled;
    uint64_t frames_timed_out; /* closed by the frame timer */
    uint64_t stale_evicted;    /* evicted StaleClient (liveness.c) */
    /* sessions ended with their credentials (sessend.c): the published
     * op of the last scan, the earliest token expiry seen then (µs) */
    uint64_t sessions_ended;
    uint64_t cred_scan_op;
    uint64_t cred_next_expiry;

    struct serve_data *data; /* the data plane (data.c) */
    /* while rxbody.c dispatches a frame read into its own malloc'd
     * buffer: that buffer, which the data plane may take for a send
     * whose write outlives the dispatch (it sets frame_own = NULL and
     * frees it later); NULL otherwise */
    void *frame_own;
    struct serve_live *live; /* group liveness reports (liveness.c) */
    struct serve_bal *bal;   /* connection balance (balance.c) */
    struct serve_ho *ho;     /* connection handoff (handoff.c) */
    struct serve_cluster cl; /* the node's cluster view (cluster.h) */

    struct serve_counters n;
    struct vs_wbuf scratch;

    /* the TLS listener (transport.c): -1 / NULL when off */
    int tls_fd;
    struct event *tls_ev;
    struct ssl_ctx_st *tls_ctx;
};

/* ---- propose.c ---- */
/* Answers 57 to every forward whose shard 0 is no longer the one it was
 * sent to (crashed or restarting). Called from a periodic timer. */
void serve_propose_watch_shard0(struct serve *s);

/* ---- transport.c ---- */
/* The bufferevent of an accepted socket: plain, or TLS (accepting) on
 * the listener's context. NULL if it cannot be created (fd closed). */
struct bufferevent *serve_transport_bev(struct serve *s, int fd, int tls);
/* Bufferevent events of a connection (handshake done, TLS errors
 * logged and counted) before conn.c handles EOF/error. */
void serve_transport_event(struct serve_conn *c, short what);

/* ---- conn.c ---- */
/* Accepts fd (tls: from the TLS listener). 0 or -errno (fd closed). */
int serve_conn_accept(struct serve *s, int fd, int tls);
struct handoff_msg;
/* Takes over plain-TCP socket fd handed by another data shard with its
 * session and pending input (handoff.h) and parses what is pending.
 * 0 or -errno (fd closed). */
int serve_conn_adopt(struct serve *s, int fd, const struct handoff_msg *m,
                     struct serve_conn **out);
/* Bytes queued to the client and not yet written to the socket. */
size_t serve_conn_out_len(const struct serve_conn *c);
struct serve_conn *serve_conn_find(struct serve *s, uint64_t id);
void serve_conn_free(struct serve_conn *c);
/* Queues bytes to the client (never blocks; checks conn_output_max). */
void serve_conn_send(struct serve_conn *c, const void *p, size_t len);
/* Reply to the request with header `req`. */
void serve_conn_reply(struct serve_conn *c, const struct vs_hdr_request *req,
                      uint32_t status, const void *body, size_t len);
/* The same with the body in `body`, whose buffer the output takes when
 * it is large (no copy; *body is left empty) or copies. */
void serve_conn_reply_take(struct serve_conn *c,
                           const struct vs_hdr_request *req, uint32_t status,
                           struct vs_wbuf *body);
/* Eviction for client `client`. */
void serve_conn_evict(struct serve_conn *c, struct vs_u128 client,
                      uint8_t reason);
/* Sets reading on or off from the invariants above. */
void serve_conn_update_read(struct serve_conn *c);
/* The request in flight finished: parse what is buffered. May free c. */
void serve_conn_request_done(struct serve_conn *c);
/* Dispatches the complete frame f (header + body, `size` bytes; the
 * callee may modify it, the caller frees it after the call). */
void serve_conn_dispatch_frame(struct serve_conn *c, uint8_t *f, uint32_t size);
/* Parses and dispatches what is buffered, if nothing is in flight (or
 * closes a closing connection). May free c. */
void serve_conn_resume(struct serve_conn *c);
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
