/*
 * shard/link/links.c - replica links of one mesh (shard 0's, or a data
 * shard's); see links.h for the connection rules, the handshake and the
 * queue bound.
 *
 * Structure: one struct link_peer per replica id (state, counters, the
 * dialer's retry timer) and one struct link_conn per TCP connection (a
 * libevent bufferevent plus the handshake state). A peer's `conn` is its
 * one live connection (dialing, in handshake or up); connections accepted
 * from a not yet identified peer wait on the `pending` list until their
 * HELLO names the peer and their FINISH proves the secret.
 *
 * Re-entrancy: callbacks (on_frame, on_state) may call links_send or
 * links_drop. A connection is never freed under its own read loop: it is
 * marked dead and freed when the loop returns.
 * Process: shard 0 and the data shards (each its own struct links).
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sodium.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/tls.h"
#include "shard/link/links.h"

#define LINKS_QUEUE_DEFAULT       (64u << 20)
#define LINKS_FRAME_DEFAULT       ((64u << 20) + VS_HEADER_SIZE)
#define LINKS_HANDSHAKE_MS        5000u
#define LINKS_BACKOFF_MIN_MS      100u
#define LINKS_BACKOFF_MAX_MS      5000u
#define LINKS_REFUSAL_LOG_MS      60000u
#define LINKS_HANDSHAKE_FRAME_MAX (VS_HEADER_SIZE + LINKS_ADDR_MAX)
/* Bytes one write callback may hand the kernel, and one TLS read may
 * take (libevent's defaults, 16 KiB, cost a loop iteration per 16 KiB of
 * a 1 MB prepare). */
#define LINKS_IO_CHUNK_MAX (4u << 20)
#define LINKS_NONCE_BYTES  32u
#define LINKS_MAC_BYTES    crypto_auth_BYTES
#define LINKS_PENDING_MAX  64u /* unauthenticated accepted connections */

/* Refusal reasons carried in REPLICA_CHALLENGE.status. */
enum link_refusal {
    LINK_OK = 0,
    LINK_REFUSE_CLUSTER = 1,
    LINK_REFUSE_REPLICA = 2,
    LINK_REFUSE_COUNT = 3,
    LINK_REFUSE_RELEASE = 4,
    LINK_REFUSE_MALFORMED = 5,
    LINK_REFUSE_SHARD = 6,  /* the HELLO names another mesh */
    LINK_REFUSE_SHARDS = 7, /* another data-shard count per node */
    LINK_REFUSE_NAMES = 8,  /* other replica names (names_digest) */
};

/* Refusal log rate limit: the reasons last logged for one peer. */
#define LINKS_REFUSAL_SLOTS 8u
struct link_refusal_log {
    uint64_t key; /* hash of the reason text */
    uint64_t last_ns;
};

enum link_hs {
    HS_CONNECTING = 0, /* dialer: TCP connect in progress */
    HS_WAIT_HELLO,     /* acceptor: waiting for the dialer's HELLO */
    HS_WAIT_CHALLENGE, /* dialer: HELLO sent */
    HS_WAIT_FINISH,    /* acceptor: CHALLENGE sent */
    HS_UP,
};

struct link_conn {
    struct links *l;
    struct bufferevent *bev;
    struct event *hs_timer;
    struct link_conn *next; /* pending list (acceptor, unidentified) */
    int peer;               /* -1 until known */
    int dialer;
    enum link_hs hs;
    int busy, dead;
    char dead_why[160];
    uint8_t nonce_d[LINKS_NONCE_BYTES];
    uint8_t nonce_a[LINKS_NONCE_BYTES];
    char peer_addr[LINKS_ADDR_MAX]; /* client address the peer advertised */
};

struct link_peer {
    struct links *owner;
    uint8_t index;
    struct link_conn *conn;
    struct event *retry;
    uint32_t backoff_ms;
    struct link_refusal_log rlog[LINKS_REFUSAL_SLOTS];
    int want_writable; /* back-pressure: a send was refused with -EAGAIN */
    struct links_peer_info info;
};

struct links {
    struct event_base *base;
    struct links_opts o;
    char addrs[VS_REPLICAS_MAX][LINKS_ADDR_MAX];
    char client_addr[LINKS_ADDR_MAX];
    struct evconnlistener *listener;
    links_frame_cb on_frame;
    links_state_cb on_state;
    void *ctx;
    struct link_peer peers[VS_REPLICAS_MAX];
    struct link_conn *pending;
    unsigned pending_count;
    /* refusals of ids out of range */
    struct link_refusal_log unknown_rlog[LINKS_REFUSAL_SLOTS];
    /* for logs: "replica link" / "link" on shard 0 (as they always
     * read), "shard S data link" on a data mesh */
    char name[40], up_name[40];
    /* an 8-aligned copy of a frame the input buffer holds misaligned
     * (after a frame whose size is not a multiple of 8): receivers read
     * the header through struct pointers */
    uint8_t *aligned;
    size_t aligned_cap;
};

static void conn_read_cb(struct bufferevent *bev, void *arg);
static void conn_event_cb(struct bufferevent *bev, short what, void *arg);
static void peer_dial(struct links *l, uint8_t peer);

const char *
links_state_name(enum links_state s)
{
    switch (s) {
    case LINKS_DOWN:
        return "down";
    case LINKS_CONNECTING:
        return "connecting";
    case LINKS_HANDSHAKE:
        return "handshake";
    case LINKS_UP:
        return "up";
    }
    return "unknown";
}

static const char *
refusal_name(uint8_t r)
{
    switch (r) {
    case LINK_REFUSE_CLUSTER:
        return "another cluster";
    case LINK_REFUSE_REPLICA:
        return "unknown replica id";
    case LINK_REFUSE_COUNT:
        return "different replica count";
    case LINK_REFUSE_RELEASE:
        return "incompatible release";
    case LINK_REFUSE_MALFORMED:
        return "malformed handshake";
    case LINK_REFUSE_SHARD:
        return "another shard's link (shard index differs)";
    case LINK_REFUSE_SHARDS:
        return "different data shard count";
    case LINK_REFUSE_NAMES:
        return "different replica names (replica_names)";
    }
    return "refused";
}

/* FNV-1a of a reason text: the rate limit's key. */
static uint64_t
reason_key(const char *what)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)what; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* 1 if `what` may be logged now for the peer whose slots are r: not
 * logged within the last minute (a reason not in the slots takes the
 * oldest one). */
static int
refusal_log_due(struct link_refusal_log *r, const char *what, uint64_t now)
{
    uint64_t key = reason_key(what);
    struct link_refusal_log *slot = &r[0];
    for (size_t i = 0; i < LINKS_REFUSAL_SLOTS; i++) {
        if (r[i].last_ns != 0 && r[i].key == key) {
            slot = &r[i];
            break;
        }
        if (r[i].last_ns < slot->last_ns)
            slot = &r[i];
    }
    if (slot->last_ns != 0 && slot->key == key &&
        now - slot->last_ns < (uint64_t)LINKS_REFUSAL_LOG_MS * 1000000u)
        return 0;
    slot->key = key;
    slot->last_ns = now;
    return 1;
}

/* Logs a refusal at most once per minute per (claimed peer id, reason);
 * ids out of range share one peer slot. */
static void
log_refusal(struct links *l, int peer, const char *what)
{
    int known = peer >= 0 && peer < l->o.count && peer != l->o.self;
    struct link_refusal_log *r = known ? l->peers[peer].rlog : l->unknown_rlog;
    if (!refusal_log_due(r, what, vs_monotonic_ns()))
        return;
    if (known)
        vs_log_warn("%s with replica %d refused: %s", l->name, peer, what);
    else
        vs_log_warn("%s refused (claimed replica %d): %s", l->name, peer, what);
}

static void
conn_free(struct link_conn *c)
{
    if (c->hs_timer != NULL)
        event_free(c->hs_timer);
    if (c->bev != NULL)
        bufferevent_free(c->bev);
    free(c);
}

static void
pending_remove(struct links *l, struct link_conn *c)
{
    for (struct link_conn **p = &l->pending; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            c->next = NULL;
            l->pending_count--;
            return;
        }
    }
}

static void
schedule_retry(struct links *l, uint8_t peer)
{
    struct link_peer *p = &l->peers[peer];
    uint32_t base_ms = p->backoff_ms ? p->backoff_ms : LINKS_BACKOFF_MIN_MS;
    uint32_t delay = base_ms + randombytes_uniform(base_ms / 2 + 1);
    struct timeval tv = {.tv_sec = delay / 1000,
                         .tv_usec = (delay % 1000) * 1000};
    p->backoff_ms =
        base_ms * 2 > LINKS_BACKOFF_MAX_MS ? LINKS_BACKOFF_MAX_MS : base_ms * 2;
    evtimer_add(p->retry, &tv);
}

/* Ends connection c (now, or when its read loop returns). */
static void
conn_close(struct link_conn *c, const char *why)
{
    struct links *l = c->l;
    if (c->busy) {
        if (!c->dead)
            snprintf(c->dead_why, sizeof(c->dead_why), "%s", why);
        c->dead = 1;
        return;
    }
    if (c->peer >= 0 && l->peers[c->peer].conn == c) {
        struct link_peer *p = &l->peers[c->peer];
        int was_up = c->hs == HS_UP;
        p->conn = NULL;
        p->want_writable = 0;
        p->info.state = LINKS_DOWN;
        p->info.queued = 0;
        snprintf(p->info.last_error, sizeof(p->info.last_error), "%s", why);
        if (was_up)
            vs_log_info("%s to replica %d down: %s", l->up_name, c->peer, why);
        if (c->dialer)
            schedule_retry(l, (uint8_t)c->peer);
        int peer = c->peer;
        conn_free(c);
        if (was_up && l->on_state != NULL)
            l->on_state(l->ctx, (uint8_t)peer, 0);
        return;
    }
    pending_remove(l, c);
    conn_free(c);
}

static void
conn_finish_busy(struct link_conn *c)
{
    c->busy = 0;
    if (c->dead)
        conn_close(c, c->dead_why);
}

static void
mac_compute(const struct links *l, const char *label, uint8_t d, uint8_t a,
            const uint8_t first[LINKS_NONCE_BYTES],
            const uint8_t second[LINKS_NONCE_BYTES],
            uint8_t out[LINKS_MAC_BYTES])
{
    uint8_t msg[5 + 16 + 3 + 2 * LINKS_NONCE_BYTES];
    size_t n = 0;
    memcpy(msg + n, label, 5);
    n += 5;
    memcpy(msg + n, &l->o.cluster, 16);
    n += 16;
    msg[n++] = d;
    msg[n++] = a;
    if (l->o.shard != 0) /* data meshes only: shard 0's input unchanged */
        msg[n++] = l->o.shard;
    memcpy(msg + n, first, LINKS_NONCE_BYTES);
    n += LINKS_NONCE_BYTES;
    memcpy(msg + n, second, LINKS_NONCE_BYTES);
    n += LINKS_NONCE_BYTES;
    _Static_assert(crypto_auth_KEYBYTES == LINKS_SECRET_BYTES, "key size");
    crypto_auth(out, msg, n, l->o.secret);
}

/* Sends a sealed handshake frame with an optional body (the client
 * address). Handshake frames bypass the queue bound (they are tiny and
 * the output is empty during the handshake). */
static void
send_handshake(struct link_conn *c, struct vs_header *h, uint8_t command,
               const char *body)
{
    size_t blen = body != NULL ? strlen(body) : 0;
    h->f.cluster = c->l->o.cluster;
    h->f.size = (uint32_t)(VS_HEADER_SIZE + blen);
    h->f.release = c->l->o.release_max;
    h->f.command = command;
    h->f.replica = c->l->o.self;
    h->f.checksum_body =
        blen ? vs_body_checksum(body, blen) : (struct vs_u128){0, 0};
    vs_frame_seal(h);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add(out, h, VS_HEADER_SIZE);
    if (blen)
        evbuffer_add(out, body, blen);
}

static void
copy_addr(char *dst, const uint8_t *body, size_t len)
{
    size_t n = len < LINKS_ADDR_MAX - 1 ? len : LINKS_ADDR_MAX - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = (body[i] >= 0x20 && body[i] < 0x7f) ? (char)body[i] : '?';
    dst[n] = '\0';
}

static void
link_up(struct link_conn *c)
{
    struct links *l = c->l;
    struct link_peer *p = &l->peers[c->peer];
    c->hs = HS_UP;
    if (c->hs_timer != NULL) {
        event_free(c->hs_timer);
        c->hs_timer = NULL;
    }
    p->info.state = LINKS_UP;
    p->info.connects++;
    p->info.last_error[0] = '\0';
    p->backoff_ms = 0;
    memcpy(p->info.client_addr, c->peer_addr, sizeof(p->info.client_addr));
    if (l->o.on_writable != NULL) /* the write callback runs at half */
        bufferevent_setwatermark(c->bev, EV_WRITE, l->o.queue_max / 2, 0);
    if (l->o.shard == 0)
        vs_log_info("%s to replica %d up (%s, client address %s)", l->up_name,
                    c->peer, c->dialer ? "dialed" : "accepted",
                    p->info.client_addr);
    else
        vs_log_info("%s to replica %d up (%s)", l->up_name, c->peer,
                    c->dialer ? "dialed" : "accepted");
    if (l->on_state != NULL)
        l->on_state(l->ctx, (uint8_t)c->peer, 1);
}

/* Acceptor: the dialer's HELLO. */
static int
on_hello(struct link_conn *c, const struct vs_hdr_replica_hello *h,
         const uint8_t *body, size_t blen)
{
    struct links *l = c->l;
    struct vs_hdr_replica_challenge ch;
    uint8_t status = LINK_OK;
    int peer = h->f.replica;
    memset(&ch, 0, sizeof(ch));

    if (memcmp(&h->f.cluster, &l->o.cluster, sizeof(l->o.cluster)) != 0)
        status = LINK_REFUSE_CLUSTER;
    else if (peer >= l->o.count || peer >= l->o.self)
        status = LINK_REFUSE_REPLICA;
    else if (h->replica_count != l->o.count)
        status = LINK_REFUSE_COUNT;
    else if (h->shard != l->o.shard)
        status = LINK_REFUSE_SHARD;
    else if (l->o.shard != 0 && h->shard_count != l->o.shard_count)
        status = LINK_REFUSE_SHARDS;
    else if (h->release_min > l->o.release_max ||
             h->release_max < l->o.release_min)
        status = LINK_REFUSE_RELEASE;
    else if (l->o.names_digest != 0 && h->names_digest != 0 &&
             h->names_digest != l->o.names_digest)
        status = LINK_REFUSE_NAMES;
    if (status != LINK_OK) {
        log_refusal(l, peer, refusal_name(status));
        if (peer >= 0 && peer < l->o.count)
            l->peers[peer].info.refusals++;
        ch.status = status;
        send_handshake(c, (struct vs_header *)&ch, VS_CMD_REPLICA_CHALLENGE,
                       NULL);
        /* close once the refusal is written */
        bufferevent_disable(c->bev, EV_READ);
        return 1;
    }
    c->peer = peer;
    memcpy(c->nonce_d, h->nonce_d, LINKS_NONCE_BYTES);
    randombytes_buf(c->nonce_a, LINKS_NONCE_BYTES);
    memcpy(ch.nonce_a, c->nonce_a, LINKS_NONCE_BYTES);
    ch.names_digest = l->o.names_digest;
    mac_compute(l, "vsl-a", (uint8_t)peer, l->o.self, c->nonce_d, c->nonce_a,
                ch.mac_a);
    /* the dialer's advertised address, trusted once FINISH proves it */
    copy_addr(c->peer_addr, body, blen);
    send_handshake(c, (struct vs_header *)&ch, VS_CMD_REPLICA_CHALLENGE,
                   l->client_addr);
    c->hs = HS_WAIT_FINISH;
    return 0;
}

/* Dialer: the acceptor's CHALLENGE. */
static int
on_challenge(struct link_conn *c, const struct vs_hdr_replica_challenge *h,
             const uint8_t *body, size_t blen)
{
    struct links *l = c->l;
    struct link_peer *p = &l->peers[c->peer];
    uint8_t want[LINKS_MAC_BYTES];
    char why[160];

    if (h->status != LINK_OK) {
        snprintf(why, sizeof(why), "refused by replica %d: %s", c->peer,
                 refusal_name(h->status));
        p->info.refusals++;
        log_refusal(l, c->peer, refusal_name(h->status));
        conn_close(c, why);
        return -1;
    }
    if (h->f.replica != c->peer ||
        memcmp(&h->f.cluster, &l->o.cluster, sizeof(l->o.cluster)) != 0) {
        p->info.refusals++;
        log_refusal(l, c->peer,
                    "the peer answered as another replica or cluster");
        conn_close(c, "peer answered as another replica or cluster");
        return -1;
    }
    mac_compute(l, "vsl-a", l->o.self, (uint8_t)c->peer, c->nonce_d, h->nonce_a,
                want);
    if (crypto_verify_32(want, h->mac_a) != 0) {
        p->info.refusals++;
        log_refusal(l, c->peer, "bad MAC (wrong cluster secret?)");
        conn_close(c, "bad MAC from the peer (wrong cluster secret?)");
        return -1;
    }
    if (l->o.names_digest != 0 && h->names_digest != 0 &&
        h->names_digest != l->o.names_digest) {
        /* an acceptor that did not compare (or could not): we do */
        p->info.refusals++;
        log_refusal(l, c->peer, refusal_name(LINK_REFUSE_NAMES));
        conn_close(c, "the peer has other replica names");
        return -1;
    }
    struct vs_hdr_replica_finish fin;
    memset(&fin, 0, sizeof(fin));
    memcpy(c->nonce_a, h->nonce_a, LINKS_NONCE_BYTES);
    mac_compute(l, "vsl-d", l->o.self, (uint8_t)c->peer, c->nonce_a, c->nonce_d,
                fin.mac_d);
    send_handshake(c, (struct vs_header *)&fin, VS_CMD_REPLICA_FINISH, NULL);
    copy_addr(c->peer_addr, body, blen);
    link_up(c);
    return 0;
}

/* Acceptor: the dialer's FINISH; body of the HELLO kept in addr. */
static int
on_finish(struct link_conn *c, const struct vs_hdr_replica_finish *h)
{
    struct links *l = c->l;
    uint8_t want[LINKS_MAC_BYTES];
    int peer = c->peer;

    mac_compute(l, "vsl-d", (uint8_t)peer, l->o.self, c->nonce_a, c->nonce_d,
                want);
    if (h->f.replica != peer || crypto_verify_32(want, h->mac_d) != 0) {
        l->peers[peer].info.refusals++;
        log_refusal(l, peer, "bad MAC (wrong cluster secret?)");
        conn_close(c, "bad MAC");
        return -1;
    }
    /* authenticated: this connection replaces any older one */
    pending_remove(l, c);
    struct link_peer *p = &l->peers[peer];
    if (p->conn != NULL) {
        struct link_conn *old = p->conn;
        conn_close(old, "replaced by a new connection from the peer");
    }
    p->conn = c;
    return 0;
}

/* One complete frame of `len` bytes at `frame`. Returns -1 if c was
 * closed (or marked dead). */
static int
conn_frame(struct link_conn *c, const uint8_t *frame, size_t len)
{
    const struct vs_header *h = (const struct vs_header *)frame;
    const uint8_t *body = frame + VS_HEADER_SIZE;
    size_t blen = len - VS_HEADER_SIZE;
    struct links *l = c->l;

    if (c->hs == HS_UP) {
        struct link_peer *p = &l->peers[c->peer];
        p->info.bytes_in += len;
        p->info.frames_in++;
        if (((uintptr_t)frame & 7u) != 0) {
            if (l->aligned_cap < len) {
                free(l->aligned);
                l->aligned = vs_xmalloc(len);
                l->aligned_cap = len;
            }
            memcpy(l->aligned, frame, len);
            frame = l->aligned;
        }
        if (l->on_frame != NULL)
            l->on_frame(l->ctx, (uint8_t)c->peer, frame, len);
        if (l->aligned_cap > ((size_t)4 << 20)) { /* keep no huge copy */
            free(l->aligned);
            l->aligned = NULL;
            l->aligned_cap = 0;
        }
        return c->dead ? -1 : 0;
    }
    /* handshake frames: sealed, body under checksum_body */
    if (!vs_frame_verify(h) || !vs_body_verify(h, body, blen)) {
        log_refusal(l, c->peer, "bad seal on a handshake frame");
        conn_close(c, "bad seal on a handshake frame");
        return -1;
    }
    switch (c->hs) {
    case HS_WAIT_HELLO:
        if (h->f.command != VS_CMD_REPLICA_HELLO)
            break;
        if (on_hello(c, (const struct vs_hdr_replica_hello *)frame, body,
                     blen) != 0)
            return -1;
        return 0;
    case HS_WAIT_CHALLENGE:
        if (h->f.command != VS_CMD_REPLICA_CHALLENGE)
            break;
        return on_challenge(c, (const struct vs_hdr_replica_challenge *)frame,
                            body, blen);
    case HS_WAIT_FINISH:
        if (h->f.command != VS_CMD_REPLICA_FINISH || blen != 0)
            break;
        if (on_finish(c, (const struct vs_hdr_replica_finish *)frame) != 0)
            return -1;
        link_up(c);
        return c->dead ? -1 : 0;
    default:
        break;
    }
    log_refusal(l, c->peer, "unexpected frame during the handshake");
    conn_close(c, "unexpected frame during the handshake");
    return -1;
}

/* read_rest's loop: 0 (want bytes arrived), 1 (none more for now), or
 * -ENOMEM, -EPIPE (EOF), -errno. */
static int
read_into(struct evbuffer *in, evutil_socket_t fd, size_t want)
{
    while (want > 0) {
        struct evbuffer_iovec v[2];
        int nv = evbuffer_reserve_space(in, (ev_ssize_t)want, v, 2);
        if (nv <= 0)
            return -ENOMEM;
        struct iovec iov[2];
        size_t room = 0;
        for (int i = 0; i < nv; i++) {
            iov[i].iov_base = v[i].iov_base;
            iov[i].iov_len = v[i].iov_len;
            room += v[i].iov_len;
        }
        if (room > want) { /* reserve may offer more than asked */
            size_t cut = room - want;
            for (int i = nv - 1; i >= 0 && cut > 0; i--) {
                size_t d = cut < iov[i].iov_len ? cut : iov[i].iov_len;
                iov[i].iov_len -= d;
                cut -= d;
            }
        }
        ssize_t n = readv(fd, iov, nv);
        if (n <= 0) {
            int err = errno;
            evbuffer_commit_space(in, v, 0);
            if (n < 0 && err == EINTR)
                continue;
            if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK))
                return 1;
            return n == 0 ? -EPIPE : -err;
        }
        size_t left = (size_t)n;
        int used = 0;
        for (int i = 0; i < nv && left > 0; i++, used++) {
            v[i].iov_len = left < iov[i].iov_len ? left : iov[i].iov_len;
            left -= v[i].iov_len;
        }
        evbuffer_commit_space(in, v, used);
        want -= (size_t)n;
    }
    return 0;
}

/* Reads up to `want` bytes of a plain connection's socket straight into
 * its input buffer: libevent 2.1's socket reads take at most 4 KiB per
 * readable event. 0 when `want` bytes arrived; 1 when the socket has no
 * more for now (the bufferevent's read event brings the rest); -1 when
 * the connection was closed (EOF, an error, no memory). */
static int
read_rest(struct link_conn *c, struct evbuffer *in, size_t want)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    /* a socket bufferevent freezes its input's end between its own
     * reads; this is one of them */
    evbuffer_unfreeze(in, 0);
    /* room for the rest in the last chain: libevent moves a small head
     * (the 4 KiB it read) into it, so the frame ends up contiguous and
     * its pull-up copies nothing */
    int rc = evbuffer_expand(in, want) == 0 ? read_into(in, fd, want) : -ENOMEM;
    evbuffer_freeze(in, 0);
    if (rc < 0)
        conn_close(c, rc == -ENOMEM  ? "out of memory"
                      : rc == -EPIPE ? "connection closed by the peer"
                                     : evutil_socket_error_to_string(-rc));
    return rc < 0 ? -1 : rc;
}
static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct link_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    uint32_t max =
        c->hs == HS_UP ? c->l->o.frame_max : LINKS_HANDSHAKE_FRAME_MAX;
    c->busy = 1;
    while (!c->dead) {
        struct vs_frame f;
        size_t have = evbuffer_get_length(in);
        if (have < VS_HEADER_SIZE)
            break;
        evbuffer_copyout(in, &f, sizeof(f));
        if (f.size < VS_HEADER_SIZE || f.size > max) {
            char why[96];
            snprintf(why, sizeof(why), "frame size %u out of range", f.size);
            conn_close(c, why);
            break;
        }
        if (have < f.size) {
            /* the rest of a large frame (a partition prepare): read it
             * at once, not 4 KiB per loop iteration */
            if (f.size - have <= 4096 || c->l->o.tls_server != NULL ||
                read_rest(c, in, f.size - have) != 0)
                break;
            continue;
        }
        const uint8_t *frame = evbuffer_pullup(in, f.size);
        if (frame == NULL) {
            conn_close(c, "out of memory");
            break;
        }
        int rc = conn_frame(c, frame, f.size);
        if (c->dead || rc < 0)
            break;
        evbuffer_drain(in, f.size);
        max = c->hs == HS_UP ? c->l->o.frame_max : LINKS_HANDSHAKE_FRAME_MAX;
    }
    conn_finish_busy(c);
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct link_conn *c = arg;
    struct links *l = c->l;
    /* a refused acceptor stopped reading: close once the refusal left */
    if (c->hs == HS_WAIT_HELLO && !(bufferevent_get_enabled(bev) & EV_READ) &&
        evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        conn_close(c, "handshake refused");
        return;
    }
    /* back-pressure: the queue drained to half (the write low-water
     * mark): the producer that was refused may send again */
    if (c->hs == HS_UP && c->peer >= 0 && l->peers[c->peer].conn == c &&
        l->peers[c->peer].want_writable && l->o.on_writable != NULL &&
        evbuffer_get_length(bufferevent_get_output(bev)) <=
            l->o.queue_max / 2) {
        l->peers[c->peer].want_writable = 0;
        c->busy = 1;
        l->o.on_writable(l->ctx, (uint8_t)c->peer);
        conn_finish_busy(c);
    }
}

static void
set_nodelay(struct bufferevent *bev)
{
    int one = 1;
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void
send_hello(struct link_conn *c)
{
    struct vs_hdr_replica_hello h;
    memset(&h, 0, sizeof(h));
    randombytes_buf(c->nonce_d, LINKS_NONCE_BYTES);
    memcpy(h.nonce_d, c->nonce_d, LINKS_NONCE_BYTES);
    h.release_min = c->l->o.release_min;
    h.release_max = c->l->o.release_max;
    h.replica_count = c->l->o.count;
    h.shard = c->l->o.shard;
    h.shard_count = c->l->o.shard_count;
    h.names_digest = c->l->o.names_digest;
    send_handshake(c, (struct vs_header *)&h, VS_CMD_REPLICA_HELLO,
                   c->l->client_addr);
    c->hs = HS_WAIT_CHALLENGE;
    c->l->peers[c->peer].info.state = LINKS_HANDSHAKE;
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct link_conn *c = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        /* a dialer's TCP connect (and its TLS handshake, with TLS); an
         * acceptor's TLS handshake completing is reported too: it waits
         * for the HELLO */
        if (c->dialer) {
            set_nodelay(c->bev);
            send_hello(c);
        }
        return;
    }
    char why[160];
    unsigned long tls_err =
        c->l->o.tls_server != NULL ? bufferevent_get_openssl_error(c->bev) : 0;
    if (tls_err != 0) {
        const char *r = ERR_reason_error_string(tls_err);
        snprintf(why, sizeof(why), "TLS: %s", r ? r : "handshake failed");
        while (bufferevent_get_openssl_error(c->bev) != 0)
            ;
        if (c->hs != HS_UP) {
            if (c->peer >= 0 && c->peer < c->l->o.count)
                c->l->peers[c->peer].info.refusals++;
            log_refusal(c->l, c->peer, why);
        }
    } else if (what & BEV_EVENT_EOF) {
        snprintf(why, sizeof(why), "connection closed by the peer");
    } else {
        snprintf(why, sizeof(why), "%s",
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    }
    conn_close(c, why);
}

static void
hs_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct link_conn *c = arg;
    (void)fd;
    (void)what;
    if (c->hs != HS_UP)
        conn_close(c, "handshake timed out");
}

/* The bufferevent of a new connection: plain, or TLS (accepting for an
 * accepted fd, connecting for a dial to `peer`). NULL on failure (an
 * accepted fd is then closed). */
static struct bufferevent *
conn_bev(struct links *l, evutil_socket_t fd, int peer, int dialer)
{
    if (l->o.tls_server == NULL)
        return bufferevent_socket_new(l->base, fd, BEV_OPT_CLOSE_ON_FREE);
    SSL *ssl = SSL_new(dialer ? l->o.tls_client : l->o.tls_server);
    if (ssl == NULL) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (dialer) {
        /* verify the acceptor's certificate against its address' host */
        char host[LINKS_ADDR_MAX], err[160];
        snprintf(host, sizeof(host), "%s", l->addrs[peer]);
        char *colon = strrchr(host, ':');
        if (colon != NULL)
            *colon = '\0';
        if (host[0] == '[') { /* [v6]:port */
            memmove(host, host + 1, strlen(host));
            char *rb = strchr(host, ']');
            if (rb != NULL)
                *rb = '\0';
        }
        if (vs_tls_client_set_name(ssl, host, err, sizeof(err)) != 0) {
            vs_log_warn("replica link to %d: %s", peer, err);
            SSL_free(ssl);
            return NULL;
        }
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        l->base, fd, ssl,
        dialer ? BUFFEREVENT_SSL_CONNECTING : BUFFEREVENT_SSL_ACCEPTING,
        BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        if (fd >= 0)
            close(fd);
    }
    return bev;
}

static struct link_conn *
conn_new(struct links *l, evutil_socket_t fd, int peer, int dialer)
{
    struct link_conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->l = l;
    c->peer = peer;
    c->dialer = dialer;
    c->bev = conn_bev(l, fd, peer, dialer);
    c->hs_timer = evtimer_new(l->base, hs_timeout_cb, c);
    if (c->bev == NULL || c->hs_timer == NULL) {
        conn_free(c); /* conn_bev closed fd if it could not wrap it */
        return NULL;
    }
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    bufferevent_set_max_single_read(c->bev, LINKS_IO_CHUNK_MAX);
    bufferevent_set_max_single_write(c->bev, LINKS_IO_CHUNK_MAX);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    struct timeval tv = {.tv_sec = LINKS_HANDSHAKE_MS / 1000,
                         .tv_usec = (LINKS_HANDSHAKE_MS % 1000) * 1000};
    evtimer_add(c->hs_timer, &tv);
    return c;
}

static int
resolve(const char *addr, struct sockaddr_storage *ss, int *sslen)
{
    char host[LINKS_ADDR_MAX], *colon;
    *sslen = (int)sizeof(*ss);
    if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)ss, sslen) == 0)
        return 0;
    /* a host name: resolved (blocking) at each dial attempt */
    snprintf(host, sizeof(host), "%s", addr);
    colon = strrchr(host, ':');
    if (colon == NULL)
        return -EINVAL;
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM},
                    *res = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || res == NULL)
        return -EHOSTUNREACH;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sslen = (int)res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static void
peer_dial(struct links *l, uint8_t peer)
{
    struct link_peer *p = &l->peers[peer];
    struct sockaddr_storage ss;
    int sslen;
    if (p->conn != NULL)
        return;
    if (resolve(l->addrs[peer], &ss, &sslen) != 0) {
        char why[sizeof(p->info.last_error)];
        snprintf(why, sizeof(why), "cannot resolve %s", l->addrs[peer]);
        memcpy(p->info.last_error, why, sizeof(why));
        schedule_retry(l, peer);
        return;
    }
    struct link_conn *c = conn_new(l, -1, peer, 1);
    if (c == NULL) {
        schedule_retry(l, peer);
        return;
    }
    p->conn = c;
    p->info.state = LINKS_CONNECTING;
    c->hs = HS_CONNECTING;
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&ss, sslen) != 0)
        conn_close(c, "connect failed");
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct link_peer *p = arg;
    (void)fd;
    (void)what;
    peer_dial(p->owner, p->index);
}

static void
accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
          int salen, void *arg)
{
    struct links *l = arg;
    (void)lis;
    (void)sa;
    (void)salen;
    if (l->pending_count >= LINKS_PENDING_MAX) {
        /* a flood of unauthenticated connections: refuse the newest */
        log_refusal(l, -1,
                    "too many connections in "
                    "handshake; refused one");
        close(fd);
        return;
    }
    struct link_conn *c = conn_new(l, fd, -1, 0);
    if (c == NULL)
        return;
    set_nodelay(c->bev);
    c->hs = HS_WAIT_HELLO;
    c->next = l->pending;
    l->pending = c;
    l->pending_count++;
}

int
links_create(struct event_base *base, const struct links_opts *o, int listen_fd,
             links_frame_cb on_frame, links_state_cb on_state, void *ctx,
             struct links **out, char *err, size_t errlen)
{
    struct links *l;
    int rc;

    *out = NULL;
    if (o->count < 2 || o->count > VS_REPLICAS_MAX || o->self >= o->count) {
        snprintf(err, errlen, "replica links: replica %u of %u out of range",
                 o->self, o->count);
        return -EINVAL;
    }
    if (o->release_min == 0 || o->release_min > o->release_max) {
        snprintf(err, errlen, "replica links: bad release window %u..%u",
                 o->release_min, o->release_max);
        return -EINVAL;
    }
    if (o->shard != 0 && (o->shard_count == 0 || o->shard > o->shard_count)) {
        snprintf(err, errlen, "replica links: shard %u of %u out of range",
                 o->shard, o->shard_count);
        return -EINVAL;
    }
    if (o->shard == 0 && o->shard_count != 0) {
        snprintf(err, errlen,
                 "replica links: shard 0's mesh takes no shard count");
        return -EINVAL;
    }
    if ((o->tls_server == NULL) != (o->tls_client == NULL)) {
        snprintf(err, errlen,
                 "replica links: TLS needs both a server and a client context");
        return -EINVAL;
    }
    if (sodium_init() < 0) {
        snprintf(err, errlen, "replica links: libsodium failed to start");
        return -EIO;
    }
    l = calloc(1, sizeof(*l));
    if (l == NULL) {
        snprintf(err, errlen, "replica links: out of memory");
        return -ENOMEM;
    }
    l->base = base;
    l->o = *o;
    if (o->shard == 0) {
        snprintf(l->name, sizeof(l->name), "replica link");
        snprintf(l->up_name, sizeof(l->up_name), "link");
    } else {
        snprintf(l->name, sizeof(l->name), "shard %u data link", o->shard);
        snprintf(l->up_name, sizeof(l->up_name), "shard %u data link",
                 o->shard);
    }
    if (l->o.queue_max == 0)
        l->o.queue_max = LINKS_QUEUE_DEFAULT;
    if (l->o.frame_max == 0)
        l->o.frame_max = LINKS_FRAME_DEFAULT;
    snprintf(l->client_addr, sizeof(l->client_addr), "%s",
             o->client_addr != NULL ? o->client_addr : "");
    l->on_frame = on_frame;
    l->on_state = on_state;
    l->ctx = ctx;
    for (unsigned i = 0; i < o->count; i++) {
        struct link_peer *p = &l->peers[i];
        l->o.addrs[i] = NULL;
        p->owner = l;
        p->index = (uint8_t)i;
        if (i == o->self)
            continue;
        if (i > o->self && (o->addrs[i] == NULL || o->addrs[i][0] == '\0' ||
                            strlen(o->addrs[i]) >= LINKS_ADDR_MAX)) {
            snprintf(err, errlen,
                     "replica links: no usable address for replica %u", i);
            rc = -EINVAL;
            goto fail;
        }
        if (o->addrs[i] != NULL)
            snprintf(l->addrs[i], sizeof(l->addrs[i]), "%s", o->addrs[i]);
        p->retry = evtimer_new(base, retry_cb, p);
        if (p->retry == NULL) {
            snprintf(err, errlen, "replica links: out of memory");
            rc = -ENOMEM;
            goto fail;
        }
    }
    if (listen_fd >= 0) {
        l->listener = evconnlistener_new(base, accept_cb, l,
                                         LEV_OPT_CLOSE_ON_FREE, -1, listen_fd);
        if (l->listener == NULL) {
            snprintf(err, errlen, "replica links: cannot watch the listener");
            rc = -EIO;
            goto fail;
        }
    }
    for (unsigned i = o->self + 1u; i < o->count; i++)
        peer_dial(l, (uint8_t)i);
    *out = l;
    return 0;
fail:
    for (unsigned i = 0; i < o->count; i++)
        if (l->peers[i].retry != NULL)
            event_free(l->peers[i].retry);
    free(l);
    return rc;
}

int
links_send(struct links *l, uint8_t peer, const void *frame, size_t len)
{
    const struct vs_frame *f = frame;
    if (peer >= l->o.count || peer == l->o.self || len < VS_HEADER_SIZE ||
        f->size != len || len > l->o.frame_max)
        return -EINVAL;
    struct link_peer *p = &l->peers[peer];
    struct link_conn *c = p->conn;
    if (c == NULL || c->hs != HS_UP || c->dead)
        return -ENOTCONN;
    struct evbuffer *outb = bufferevent_get_output(c->bev);
    size_t queued = evbuffer_get_length(outb);
    if (queued + len > l->o.queue_max) {
        if (l->o.on_writable != NULL) {
            p->want_writable = 1;
            p->info.blocked++;
            return -EAGAIN;
        }
        p->info.dropped++;
        return -ENOBUFS;
    }
    if (evbuffer_add(outb, frame, len) != 0) {
        p->info.dropped++;
        return -ENOBUFS;
    }
    p->info.bytes_out += len;
    p->info.frames_out++;
    return 0;
}

int
links_can_send(const struct links *l, uint8_t peer, size_t len)
{
    if (!links_up(l, peer) || len > l->o.frame_max)
        return 0;
    const struct link_conn *c = l->peers[peer].conn;
    return evbuffer_get_length(bufferevent_get_output(c->bev)) + len <=
           l->o.queue_max;
}

int
links_up(const struct links *l, uint8_t peer)
{
    if (peer >= l->o.count || peer == l->o.self)
        return 0;
    const struct link_conn *c = l->peers[peer].conn;
    return c != NULL && c->hs == HS_UP && !c->dead;
}

void
links_peer(const struct links *l, uint8_t peer, struct links_peer_info *out)
{
    memset(out, 0, sizeof(*out));
    if (peer >= l->o.count || peer == l->o.self)
        return;
    const struct link_peer *p = &l->peers[peer];
    *out = p->info;
    if (p->conn != NULL && p->conn->bev != NULL)
        out->queued = evbuffer_get_length(bufferevent_get_output(p->conn->bev));
}

void
links_drop(struct links *l, uint8_t peer, const char *why)
{
    if (peer >= l->o.count || peer == l->o.self)
        return;
    if (l->peers[peer].conn != NULL)
        conn_close(l->peers[peer].conn, why != NULL ? why : "dropped");
}

void
links_destroy(struct links *l)
{
    if (l == NULL)
        return;
    while (l->pending != NULL) {
        struct link_conn *c = l->pending;
        l->pending = c->next;
        conn_free(c);
    }
    l->pending_count = 0;
    for (unsigned i = 0; i < l->o.count; i++) {
        struct link_peer *p = &l->peers[i];
        if (p->conn != NULL)
            conn_free(p->conn);
        if (p->retry != NULL)
            event_free(p->retry);
    }
    if (l->listener != NULL)
        evconnlistener_free(l->listener);
    sodium_memzero(l->o.secret, sizeof(l->o.secret));
    free(l->aligned);
    free(l);
}
