/*
 * shard/link/links.h - replica links: one authenticated TCP connection
 * to every other replica of the cluster (DESIGN §3), for one mesh.
 *
 * Meshes: shard 0 of every node forms one mesh (the metadata group's
 * links, `shard` 0); data shard s of every node forms mesh s (the links
 * partition groups run on, shard/link/mesh.h): shard s only ever talks
 * to shard s of its peers. The HELLO names the dialer's mesh and, on a
 * data mesh, the node's data-shard count; the acceptor refuses another
 * mesh or another count, and a data mesh's MAC covers the shard index.
 *
 * Role: carries whole VSR frames ([256-byte header][body], the size at
 * header byte 48) between the nodes of one cluster. The engine
 * never sees a socket: the binding hands frames to links_send() and gets
 * the peers' frames through the on_frame callback, which only checks the
 * framing (256 <= size <= frame_max); every checksum, cluster and view
 * check is the engine's (it trusts no field before its checksum).
 *
 * Connections: for a pair of replicas the lower id dials the higher one's
 * address in `addrs`; the higher one accepts on the inherited replica
 * listener. A dialer reconnects with exponential back-off (100 ms doubling
 * to 5 s, with jitter) after any close or refusal. An accepted, newly
 * authenticated connection from a peer replaces the old one (the peer
 * restarted); a connection from an id that is not a lower replica of
 * this cluster is refused.
 *
 * Handshake (every frame sealed with vs_frame_seal; the body, if any,
 * under checksum_body):
 *   dialer -> REPLICA_HELLO      f.cluster, f.replica = dialer id,
 *                                release window, replica count, shard,
 *                                shard count, nonce_d (32 random bytes),
 *                                body = the dialer's client address (for
 *                                cluster metadata)
 *   acceptor -> REPLICA_CHALLENGE status 0 (else a refusal reason and
 *                                close), nonce_a, mac_a = MAC(key,
 *                                "vsl-a" | cluster | d | a | [s] |
 *                                nonce_d | nonce_a), body = the
 *                                acceptor's client address
 *   dialer -> REPLICA_FINISH     mac_d = MAC(key, "vsl-d" | cluster | d | a
 *                                | [s] | nonce_a | nonce_d)
 * [s] is the shard byte of a data mesh (s >= 1); shard 0's MAC input has
 * no shard byte, exactly as before data meshes existed, so the metadata
 * links of nodes of the previous release still authenticate.
 * MAC = libsodium crypto_auth (HMAC-SHA-512-256) keyed by the 32-byte
 * cluster secret. The MAC binds both fresh nonces and both ids, so a
 * recorded handshake cannot be replayed; it proves membership of the
 * cluster (whoever holds the secret), not identity, as upstream. The
 * dialer's link is up once it verified mac_a and sent FINISH; the
 * acceptor's once it verified mac_d. Only then are frames delivered.
 * A wrong cluster id, an unknown or out-of-range replica id, a replica
 * count that differs, other replica names (names_digest, compared on
 * both sides when both send one: the acceptor refuses with a status, the
 * dialer closes), another mesh (shard index) or data-shard count, a
 * release window that does not overlap, a bad seal
 * or a bad MAC closes the connection and is logged at most once per
 * minute per (peer, reason): per claimed id, one shared peer slot for
 * ids out of range, and a reason that changed is logged at once.
 *
 * TLS (optional): with tls_server/tls_client set, every link runs inside
 * TLS 1.2+ (common/tls.h policy) before the handshake above: the
 * acceptor requires and verifies the dialer's certificate, the dialer
 * verifies the acceptor's against the host of its address. The MAC
 * handshake still runs inside, so a stolen certificate alone does not
 * admit a peer. A TLS failure (no certificate, wrong CA, a plaintext
 * peer) costs that connection only and is logged like a refusal.
 *
 * Send queues: each link's output is bounded by queue_max bytes. A frame
 * that does not fit is dropped (-ENOBUFS, counted): the engine retransmits
 * what matters and repairs the rest, so a slow peer never makes shard 0
 * buffer without limit. With on_writable set (back-pressure mode, the
 * data meshes), a frame that does not fit is refused with -EAGAIN
 * instead (counted as blocked, not dropped: the caller keeps it) and
 * on_writable(peer) is called once that link's queue has drained to at
 * most queue_max / 2, so producers wait rather than lose frames. Frames
 * queued together leave in one write (libevent's output buffer
 * coalesces them).
 *
 * Invariants: on_frame gets only frames of an authenticated link, each
 * exactly `size` bytes with 256 <= size <= frame_max, at an 8-aligned
 * address (a frame the input buffer holds misaligned, after one whose
 * size is not a multiple of 8, is handed over as a copy); links_send never
 * blocks; at most one live link per peer.
 * Callers: shard 0's process (mesh 0) and each data shard's process (its
 * own mesh), one thread each, on its libevent base.
 */
#ifndef VS_SHARD_LINK_LINKS_H
#define VS_SHARD_LINK_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

struct event_base;
struct links;
struct ssl_ctx_st; /* OpenSSL's SSL_CTX */

#define LINKS_SECRET_BYTES 32u
#define LINKS_ADDR_MAX     128u /* "HOST:PORT" incl. NUL */

struct links_opts {
    uint8_t self;  /* this replica's id, < count */
    uint8_t count; /* replicas in the cluster, 2..VS_REPLICAS_MAX */
    /* Replica address of every id ("HOST:PORT"); addrs[self] is unused
     * (the listener is bound by the supervisor). */
    const char *addrs[VS_REPLICAS_MAX];
    struct vs_u128 cluster;             /* XXH3-128 of the name */
    uint8_t secret[LINKS_SECRET_BYTES]; /* the cluster secret */
    uint32_t release_min, release_max;  /* wire formats understood */
    const char *client_addr;            /* advertised to peers */
    size_t queue_max;                   /* bytes queued per link; 0 = 64 MiB */
    /* TLS contexts (both or neither; owned by the caller, kept alive
     * until links_destroy): vs_tls_server_ctx with a CA file (client
     * certificates required) and vs_tls_client_ctx with this node's
     * certificate and the CA. NULL: plain TCP. */
    struct ssl_ctx_st *tls_server;
    struct ssl_ctx_st *tls_client;
    uint32_t frame_max; /* largest frame accepted; 0 = 64 MiB + 256 */
    /* The mesh: 0 = shard 0's links; s = data shard s of every node
     * (1 <= s <= shard_count). */
    uint8_t shard;
    uint16_t shard_count; /* data shards per node; 0 with shard 0 */
    /* vs_names_digest of this cluster's replica names (common/names.h),
     * sent in the HELLO (dialer) and the CHALLENGE (acceptor); a peer
     * whose nonzero digest differs is refused. 0: neither sent nor
     * compared. */
    uint64_t names_digest;
    /* Back-pressure mode (see the header comment); NULL: drop mode. The
     * callback gets the ctx of links_create. */
    void (*on_writable)(void *ctx, uint8_t peer);
};

/* A whole frame from authenticated peer `peer` (valid for the call). */
typedef void (*links_frame_cb)(void *ctx, uint8_t peer, const void *frame,
                               size_t len);
/* The link to `peer` came up (1) or went down (0). */
typedef void (*links_state_cb)(void *ctx, uint8_t peer, int up);

enum links_state {
    LINKS_DOWN = 0,   /* no connection (a dialer waits for its retry) */
    LINKS_CONNECTING, /* dialing */
    LINKS_HANDSHAKE,  /* connected, not yet authenticated */
    LINKS_UP,         /* authenticated: frames flow */
};

struct links_peer_info {
    enum links_state state;
    uint64_t bytes_in, bytes_out; /* frame bytes of the up link(s) */
    uint64_t frames_in, frames_out;
    uint64_t dropped;  /* frames refused by a full queue */
    uint64_t blocked;  /* sends refused with -EAGAIN (back-pressure mode) */
    uint64_t connects; /* links that came up */
    uint64_t refusals; /* handshakes refused (either side) */
    size_t queued;     /* bytes waiting in the output */
    char client_addr[LINKS_ADDR_MAX]; /* as the peer advertised it; "" */
    char last_error[160];             /* why the last link ended; "" */
};

/* Starts the links on `base`: listens on `listen_fd` (the inherited,
 * non-blocking replica listener; links takes it over and closes it in
 * links_destroy) and dials every higher id. Returns 0 and *out, or
 * -errno with a one-line reason in err. */
int links_create(struct event_base *base, const struct links_opts *o,
                 int listen_fd, links_frame_cb on_frame,
                 links_state_cb on_state, void *ctx, struct links **out,
                 char *err, size_t errlen);

/* Queues one whole frame for `peer`. Returns 0 (queued), -EINVAL (peer
 * is self or out of range, or len is not the frame's size), -ENOTCONN
 * (no authenticated link now), -ENOBUFS (the queue is full: dropped) or,
 * in back-pressure mode, -EAGAIN (the queue is full: not queued, and
 * on_writable(peer) follows once it drained). */
int links_send(struct links *l, uint8_t peer, const void *frame, size_t len);

/* 1 if a frame of len bytes would be queued for `peer` now (the link is
 * up and the queue has room), else 0. */
int links_can_send(const struct links *l, uint8_t peer, size_t len);

/* 1 if the link to `peer` is authenticated and up. */
int links_up(const struct links *l, uint8_t peer);

/* Copies the counters and state of the link to `peer` (zeroed for self
 * or out of range). */
void links_peer(const struct links *l, uint8_t peer,
                struct links_peer_info *out);

/* Closes the link to `peer` now (a dialer reconnects after its back-off).
 * For tests and for the binding's "peer misbehaves" path. */
void links_drop(struct links *l, uint8_t peer, const char *why);

/* Closes every connection and the listener; frees. NULL is accepted. */
void links_destroy(struct links *l);

/* The name of a link state, for logs and `vstream cluster`. */
const char *links_state_name(enum links_state s);

#endif /* VS_SHARD_LINK_LINKS_H */
