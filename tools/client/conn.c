/*
 * tools/client/conn.c - the client library's connection: sockets with
 * timeouts, the session and request-number rules, Register/Logout, and
 * the reconnect-and-resend path that makes replicated requests
 * at-most-once (DESIGN §5).
 *
 * Protocol of one call (vsc_call):
 *  1. The request number comes from the counter (Register: 0; Logout and
 *     metadata ops: counter, then counter + 1; other ops: counter). The
 *     frame is built once; only its session field changes later. Its
 *     body may end in the caller's bytes (a prebuilt batch,
 *     vsc_call_frame), written from there and never copied.
 *  2. Write the frame, read exactly one reply frame (bounded by the
 *     request deadline).
 *  3. Transport failure (reset, EOF, timeout): close, and up to
 *     `reconnects` times, each with a fresh deadline: connect, Register
 *     again with the SAME client id and the remembered credentials, patch
 *     the new session into the frame, resend it unchanged otherwise (go
 *     to 2). The server's client table answers a request it already
 *     executed with the cached reply.
 *  4. Status 57/58: resend the identical frame until the deadline, after
 *     a pause that starts at 2 ms and doubles up to 50 ms, each drawn
 *     between half and all of that bound (jitter, so clients refused
 *     together do not come back together; a full pipeline usually frees
 *     within a few ms, so a fixed 50 ms made every 57 a 50 ms tail).
 *  5. An eviction throws the session away (the server ended it): the
 *     connection is closed and the handle is logged out.
 * Leader following (a cluster): after every Register the handle reads
 * GetClusterMetadata; a healthy Leader at another address makes it
 * close, connect there and Register again with the same client id (a new
 * session epoch; the client table keeps its watermark and cached
 * replies), at most VSC_HOPS_MAX times. A connect that fails tries the
 * other known addresses (vsc_opts.more_addrs and every node the metadata
 * listed). A 58 whose body names the leader ([len u32][HOST:PORT]: the
 * partition plane on a backup) moves there and resends.
 * Invariants: one request in flight; the fd is non-blocking and every
 * wait is a poll() bounded by the deadline; SIGPIPE is never raised
 * (MSG_NOSIGNAL).
 * Callers: any process; one handle per thread.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>

#include "common/assert.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/mem.h"
#include "tools/client/vsc.h"
#include "tools/client/vsc_int.h"

enum vsc_login_kind {
    VSC_LOGIN_NONE = 0,
    VSC_LOGIN_PASSWORD = 1,
    VSC_LOGIN_PAT = 2,
};

struct vsc {
    char addr[256];
    uint32_t connect_timeout_ms;
    uint32_t io_timeout_ms;
    uint32_t reconnects;
    int fd;
    struct vs_u128 client;
    uint64_t session; /* 0 = not bound */
    uint64_t counter; /* next request number of a replicated op */
    /* created_op of the client-table entry holding this handle's history
     * (GetSessionStatus); an entry created later means it was lost */
    uint64_t origin;
    enum vsc_login_kind login;
    char user[256];
    char password[256];
    char token[256];
    struct vs_wbuf req;  /* the frame of the call in progress */
    const uint8_t *tail; /* the rest of its body: the caller's bytes */
    size_t tail_len;
    struct vs_wbuf last_repl; /* last replicated (non-Register) frame */
    struct vs_wbuf body;      /* scratch for command bodies */
    uint8_t *reply;           /* last reply frame */
    size_t reply_len;
    size_t reply_cap;
    char err[512];
    /* TLS (tls.c): options kept for every (re)connect */
    int tls;
    struct vsc_opts tls_opts; /* strings below */
    char tls_ca[1024], tls_name[256], tls_cert[1024], tls_key[1024];
    struct vsc_tls *tls_t;         /* context, created at the first connect */
    int follow;                    /* leader following on */
    int settling;                  /* inside vsc_settle */
    char known[VSC_KNOWN_MAX][64]; /* node addresses learnt */
    unsigned n_known;
};

/* Remembers a node address (deduplicated, bounded). */
static void
vsc_known_add(struct vsc *c, const char *addr)
{
    size_t n = strlen(addr);
    if (n == 0 || n >= sizeof(c->known[0]))
        return;
    for (unsigned i = 0; i < c->n_known; i++)
        if (strcmp(c->known[i], addr) == 0)
            return;
    if (c->n_known < VSC_KNOWN_MAX)
        memcpy(c->known[c->n_known++], addr, n + 1);
}

static struct vs_u128
vsc_random_id(void)
{
    struct vs_u128 id = {0, 0};
    while (vs_u128_is_zero(id)) {
        ssize_t n = getrandom(&id, sizeof id, 0);
        if (n != (ssize_t)sizeof id) {
            /* getrandom cannot fail for 16 bytes once the pool is
             * initialised; fall back to the clock rather than abort. */
            id.lo = vs_monotonic_ns() ^ ((uint64_t)getpid() << 32);
            id.hi = vs_realtime_us();
        }
    }
    return id;
}

struct vsc *
vsc_create(const struct vsc_opts *o)
{
    struct vsc *c = vs_xcalloc(1, sizeof *c);
    const char *addr = o && o->addr ? o->addr : "127.0.0.1:8090";
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    c->connect_timeout_ms =
        o && o->connect_timeout_ms ? o->connect_timeout_ms : 5000;
    c->io_timeout_ms = o && o->io_timeout_ms ? o->io_timeout_ms : 30000;
    c->reconnects = o && o->reconnects ? o->reconnects : 3;
    c->fd = -1;
    if (o && o->tls) {
        c->tls = 1;
        snprintf(c->tls_ca, sizeof c->tls_ca, "%s",
                 o->tls_ca_file ? o->tls_ca_file : "");
        snprintf(c->tls_name, sizeof c->tls_name, "%s",
                 o->tls_server_name ? o->tls_server_name : "");
        snprintf(c->tls_cert, sizeof c->tls_cert, "%s",
                 o->tls_cert_file ? o->tls_cert_file : "");
        snprintf(c->tls_key, sizeof c->tls_key, "%s",
                 o->tls_key_file ? o->tls_key_file : "");
        c->tls_opts.tls = 1;
        c->tls_opts.tls_ca_file = c->tls_ca;
        c->tls_opts.tls_server_name = c->tls_name;
        c->tls_opts.tls_cert_file = c->tls_cert;
        c->tls_opts.tls_key_file = c->tls_key;
    }
    c->follow = !(o && o->no_follow);
    vsc_known_add(c, c->addr);
    for (const char *p = o ? o->more_addrs : NULL; p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char one[64];
        if (n > 0 && n < sizeof(one)) {
            memcpy(one, p, n);
            one[n] = '\0';
            vsc_known_add(c, one);
        }
        p = comma ? comma + 1 : NULL;
    }
    c->client = vsc_random_id();
    c->counter = 1;
    vs_wbuf_init(&c->req);
    vs_wbuf_init(&c->last_repl);
    vs_wbuf_init(&c->body);
    return c;
}

void
vsc_destroy(struct vsc *c)
{
    if (c == NULL)
        return;
    vsc_close(c);
    vsc_tls_destroy(c->tls_t);
    vs_wbuf_fini(&c->req);
    vs_wbuf_fini(&c->last_repl);
    vs_wbuf_fini(&c->body);
    free(c->reply);
    explicit_bzero(c->password, sizeof c->password);
    explicit_bzero(c->token, sizeof c->token);
    free(c);
}

void
vsc_close(struct vsc *c)
{
    vsc_tls_stop(c->tls_t);
    if (c->fd >= 0) {
        (void)close(c->fd);
        c->fd = -1;
    }
}

void
vsc_set_addr(struct vsc *c, const char *addr)
{
    snprintf(c->addr, sizeof c->addr, "%s", addr);
}

struct vs_u128
vsc_client_id(const struct vsc *c)
{
    return c->client;
}

void
vsc_set_client_id(struct vsc *c, struct vs_u128 id)
{
    c->client = id;
}

uint64_t
vsc_session(const struct vsc *c)
{
    return c->session;
}

uint64_t
vsc_request_counter(const struct vsc *c)
{
    return c->counter;
}

const uint8_t *
vsc_last_request(const struct vsc *c, size_t *len)
{
    *len = c->req.len;
    return c->req.data;
}

const uint8_t *
vsc_last_reply(const struct vsc *c, size_t *len)
{
    *len = c->reply_len;
    return c->reply;
}

const char *
vsc_last_error(const struct vsc *c)
{
    return c->err;
}

int
vsc_fail(struct vsc *c, int rc, const char *what)
{
    if (rc > 0)
        snprintf(c->err, sizeof c->err, "%s (%d): %s%s%s",
                 vs_iggy_error_name((uint32_t)rc), rc,
                 vs_iggy_error_str((uint32_t)rc), what ? ": " : "",
                 what ? what : "");
    else if (rc < 0)
        snprintf(c->err, sizeof c->err, "%s (%d): %s%s%s",
                 rc == -EPROTO ? "InvalidCommand" : "Error",
                 rc == -EPROTO ? 3 : 1, strerror(-rc), what ? ": " : "",
                 what ? what : "");
    return rc;
}

/* ---- sockets ---- */

static uint64_t
vsc_deadline(uint32_t ms)
{
    return vs_monotonic_ns() + (uint64_t)ms * 1000000u;
}

/* Waits for `events` on fd until the deadline. 0, -ETIMEDOUT or -errno. */
static int
vsc_wait(int fd, short events, uint64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events, .revents = 0};
        uint64_t now = vs_monotonic_ns();
        int ms, rc;
        if (now >= deadline)
            return -ETIMEDOUT;
        ms = (int)((deadline - now + 999999u) / 1000000u);
        rc = poll(&p, 1, ms);
        if (rc == -1) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (rc == 0)
            return -ETIMEDOUT;
        return 0;
    }
}

static int
vsc_split_addr(const char *addr, char host[256], char port[16])
{
    const char *colon = strrchr(addr, ':');
    size_t hl;
    if (colon == NULL || colon[1] == '\0' || strlen(colon + 1) >= 16)
        return -EINVAL;
    hl = (size_t)(colon - addr);
    if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
        addr++;
        hl -= 2;
    }
    if (hl == 0 || hl >= 256)
        return -EINVAL;
    memcpy(host, addr, hl);
    host[hl] = '\0';
    snprintf(port, 16, "%s", colon + 1);
    return 0;
}

int
vsc_connect(struct vsc *c)
{
    char host[256], port[16];
    struct addrinfo hints, *res = NULL, *ai;
    uint64_t deadline = vsc_deadline(c->connect_timeout_ms);
    int rc, fd = -1;

    vsc_close(c);
    rc = vsc_split_addr(c->addr, host, port);
    if (rc != 0)
        return vsc_fail(c, rc, "bad address (want HOST:PORT)");
    if (c->tls && c->tls_t == NULL) {
        c->tls_t = vsc_tls_create(&c->tls_opts, c->err, sizeof c->err);
        if (c->tls_t == NULL)
            return -EINVAL;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        snprintf(c->err, sizeof c->err, "Error (1): cannot resolve %s: %s",
                 c->addr, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    rc = -ECONNREFUSED;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        int one = 1, soerr = 0;
        socklen_t sl = sizeof soerr;
        fd = socket(ai->ai_family,
                    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd == -1) {
            rc = -errno;
            continue;
        }
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
            if (errno != EINPROGRESS) {
                rc = -errno;
                goto next;
            }
            rc = vsc_wait(fd, POLLOUT, deadline);
            if (rc != 0)
                goto next;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1) {
                rc = -errno;
                goto next;
            }
            if (soerr != 0) {
                rc = -soerr;
                goto next;
            }
        }
        if (c->tls) {
            rc =
                vsc_tls_start(c->tls_t, fd, c->tls_name[0] ? c->tls_name : host,
                              deadline, c->err, sizeof c->err);
            if (rc != 0) {
                (void)close(fd);
                freeaddrinfo(res);
                return rc;
            }
        }
        c->fd = fd;
        freeaddrinfo(res);
        return 0;
    next:
        (void)close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return vsc_fail(c, rc, c->addr);
}

/* Writes the n buffers of iov (changed: stepped over what went out). */
static int
vsc_writev_all(int fd, struct iovec *iov, size_t n, uint64_t deadline)
{
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = iov;
    m.msg_iovlen = n;
    while (m.msg_iovlen > 0) {
        ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (k == -1) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int rc = vsc_wait(fd, POLLOUT, deadline);
                if (rc != 0)
                    return rc;
                continue;
            }
            return -errno;
        }
        while (m.msg_iovlen > 0 && (size_t)k >= m.msg_iov->iov_len) {
            k -= (ssize_t)m.msg_iov->iov_len;
            m.msg_iov++;
            m.msg_iovlen--;
        }
        if (m.msg_iovlen > 0) {
            m.msg_iov->iov_base = (uint8_t *)m.msg_iov->iov_base + k;
            m.msg_iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

/* A read of more than VSC_LOWAT_MIN bytes waits for up to VSC_LOWAT_MAX
 * of them at once (SO_RCVLOWAT, never above what is still to come: the
 * peer sends nothing more until the next request), so a large reply
 * wakes the reader a few times instead of once per segment; the mark is
 * put back to 1 afterwards. */
#define VSC_LOWAT_MIN (256u << 10)
#define VSC_LOWAT_MAX (1u << 20)

static void
vsc_set_lowat(int fd, size_t want, int *cur)
{
    int v = want > VSC_LOWAT_MAX ? (int)VSC_LOWAT_MAX : (int)want;
    if (v < 1)
        v = 1;
    if (v == *cur)
        return;
    /* advisory: without it the reads are only woken more often */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0)
        *cur = v;
}

static int
vsc_read_all(int fd, uint8_t *p, size_t len, uint64_t deadline)
{
    int lowat = 1, rc = 0;
    int big = len > VSC_LOWAT_MIN;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (big)
                    vsc_set_lowat(fd, len, &lowat);
                rc = vsc_wait(fd, POLLIN, deadline);
                if (rc != 0)
                    break;
                continue;
            }
            rc = -errno;
            break;
        }
        if (n == 0) {
            rc = -ECONNRESET;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    if (lowat != 1)
        vsc_set_lowat(fd, 1, &lowat);
    return rc;
}

/* The connection's transport: TLS when the handle was made with tls. */
static int
vsc_xread(struct vsc *c, uint8_t *p, size_t len, uint64_t deadline)
{
    if (c->tls)
        return vsc_tls_read_all(c->tls_t, c->fd, p, len, deadline);
    return vsc_read_all(c->fd, p, len, deadline);
}

/* Writes the frame of the call: c->req then its tail, one sendmsg for
 * both on a plain socket (no copy of the tail into the frame). */
static int
vsc_write_frame(struct vsc *c, uint64_t deadline)
{
    struct iovec iov[2] = {
        {.iov_base = c->req.data, .iov_len = c->req.len},
        {.iov_base = (void *)c->tail, .iov_len = c->tail_len}};
    int rc;
    if (!c->tls)
        return vsc_writev_all(c->fd, iov, c->tail_len > 0 ? 2 : 1, deadline);
    rc = vsc_tls_write_all(c->tls_t, c->fd, c->req.data, c->req.len, deadline);
    if (rc == 0 && c->tail_len > 0)
        rc = vsc_tls_write_all(c->tls_t, c->fd, c->tail, c->tail_len, deadline);
    return rc;
}

/* Sends the frame of the call and reads one reply frame into c->reply.
 * 0 or -errno. */
static int
vsc_exchange(struct vsc *c, uint64_t deadline)
{
    struct vs_header h;
    int rc;
    if (c->fd < 0)
        return -ENOTCONN;
    rc = vsc_write_frame(c, deadline);
    if (rc != 0)
        return rc;
    if (c->reply_cap < VS_HEADER_SIZE) {
        c->reply = vs_xrealloc(c->reply, VS_HEADER_SIZE);
        c->reply_cap = VS_HEADER_SIZE;
    }
    c->reply_len = 0;
    rc = vsc_xread(c, c->reply, VS_HEADER_SIZE, deadline);
    if (rc != 0)
        return rc;
    memcpy(&h, c->reply, sizeof h);
    /* The SDK's frame limits: 256 <= size <= 64 MiB. */
    if (h.f.size < VS_HEADER_SIZE || h.f.size > VS_FRAME_MAX)
        return -EPROTO;
    if (c->reply_cap < h.f.size) {
        c->reply = vs_xrealloc(c->reply, h.f.size);
        c->reply_cap = h.f.size;
    }
    rc = vsc_xread(c, c->reply + VS_HEADER_SIZE, h.f.size - VS_HEADER_SIZE,
                   deadline);
    if (rc != 0)
        return rc;
    c->reply_len = h.f.size;
    return 0;
}

static void
vsc_patch_session(struct vs_wbuf *frame, uint64_t session)
{
    vs_store_u64(frame->data + offsetof(struct vs_hdr_request, session),
                 session);
}

static void
vsc_sleep_ms(uint32_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static int vsc_register(struct vsc *c, uint32_t *user_id);
static int vsc_settle(struct vsc *c);
static int vsc_run(struct vsc *c, struct vsc_reply *r, int resend_ok);
static int vsc_is_transport(int rc);

uint8_t *
vsc_reply_take(struct vsc *c, size_t *len)
{
    uint8_t *b = c->reply;
    *len = c->reply_len;
    c->reply = NULL;
    c->reply_cap = 0;
    c->reply_len = 0;
    return b;
}

const char *
vsc_addr(const struct vsc *c)
{
    return c->addr;
}

/* Connects to the current address, else to each other known address in
 * turn (the first that answers becomes current). 0 or vsc_connect's
 * error for the current address. */
static int
vsc_connect_any(struct vsc *c)
{
    int rc = vsc_connect(c);
    if (rc == 0 || c->n_known < 2)
        return rc;
    char first[256], err[512];
    snprintf(first, sizeof first, "%s", c->addr);
    snprintf(err, sizeof err, "%s", c->err);
    for (unsigned i = 0; i < c->n_known; i++) {
        if (strcmp(c->known[i], first) == 0)
            continue;
        memcpy(c->addr, c->known[i], strlen(c->known[i]) + 1);
        if (vsc_connect(c) == 0)
            return 0;
    }
    snprintf(c->addr, sizeof c->addr, "%s", first);
    snprintf(c->err, sizeof c->err, "%s", err);
    return rc;
}

/* The frame of a call in progress, put aside while a nested exchange
 * (Register, GetSessionStatus, GetClusterMetadata) uses the handle. */
struct vsc_saved_req {
    struct vs_wbuf req;
    const uint8_t *tail;
    size_t tail_len;
};

static void
vsc_req_save(struct vsc *c, struct vsc_saved_req *s)
{
    s->req = c->req;
    s->tail = c->tail;
    s->tail_len = c->tail_len;
    vs_wbuf_init(&c->req);
    c->tail = NULL;
    c->tail_len = 0;
}

/* Drops the nested frame (wiped: a Register carries the password) and
 * puts the saved one back. */
static void
vsc_req_restore(struct vsc *c, struct vsc_saved_req *s)
{
    if (c->req.len > 0)
        explicit_bzero(c->req.data, c->req.len);
    vs_wbuf_fini(&c->req);
    c->req = s->req;
    c->tail = s->tail;
    c->tail_len = s->tail_len;
}

/* GetSessionStatus on the current connection, keeping the frame of the
 * call in progress. 0 and *created_op, an Iggy code, or -errno. */
static int
vsc_query_origin(struct vsc *c, uint64_t *created_op)
{
    struct vsc_reply r;
    struct vsc_saved_req saved;
    vsc_req_save(c, &saved);
    vsc_frame_request(&c->req, c->client, c->session, c->counter,
                      VS_OP_NON_REPLICATED, VSC_GET_SESSION_STATUS, NULL, 0, 0);
    int rc = vsc_run(c, &r, 0);
    vsc_req_restore(c, &saved);
    if (rc != 0)
        return rc;
    struct vs_rbuf b;
    vs_rbuf_init(&b, r.payload, r.payload_len);
    *created_op = vs_rd_u64(&b);
    if (b.err || *created_op == 0)
        return vsc_fail(c, -EPROTO, "session status reply");
    return 0;
}

/* Reconnects (any known node) and, if the handle was logged in,
 * registers again with the same client id, then follows the leader, and
 * asks whether the client table still holds the handle's history: *lost
 * = 1 when the entry was created after the handle's (its session was
 * evicted meanwhile and the table forgot every request of the handle) or
 * when the server could not tell; a server that does not know the query
 * (InvalidCommand: not a vstream node) keeps *lost = 0, the behaviour
 * before the query existed. 0, an Iggy code, or -errno. */
static int
vsc_reestablish(struct vsc *c, int *lost)
{
    *lost = 0;
    int rc = vsc_connect_any(c);
    if (rc != 0)
        return rc;
    if (c->login == VSC_LOGIN_NONE)
        return 0;
    rc = vsc_register(c, NULL);
    if (rc == 0)
        rc = vsc_settle(c);
    if (rc != 0)
        return rc;
    uint64_t created = 0;
    rc = vsc_query_origin(c, &created);
    if (rc != 0 && vsc_is_transport(rc))
        return rc; /* the caller reconnects again */
    if (rc == VS_E_INVALID_COMMAND)
        return 0; /* a server without the query (Iggy's): resend as before */
    if (rc != 0 || created > c->origin) {
        *lost = 1;
        if (rc == 0)
            c->origin = created;
    }
    return 0;
}

/* The leader a 58 reply names in its body, into addr: 1, else 0. */
static int
vsc_refused_for_leader(const struct vsc *c, char *addr, size_t cap)
{
    if (c->reply_len < VS_HEADER_SIZE + 4)
        return 0;
    const uint8_t *b = c->reply + VS_HEADER_SIZE;
    uint32_t n;
    memcpy(&n, b, 4);
    if (n == 0 || n >= cap || n > c->reply_len - VS_HEADER_SIZE - 4)
        return 0;
    memcpy(addr, b + 4, n);
    addr[n] = '\0';
    return strcmp(addr, c->addr) != 0;
}

/* The pause before the next resend of a 57/58: a bound that starts at
 * 2 ms and doubles up to 50 ms, the pause drawn in [bound/2, bound]. The
 * jitter comes from the monotonic clock's low bits (no shared state). */
static uint32_t
vsc_backoff_ms(uint32_t *bound)
{
    if (*bound == 0)
        *bound = 2;
    uint32_t b = *bound;
    *bound = b >= 25 ? 50 : b * 2;
    uint64_t x = vs_monotonic_ns();
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return b / 2 + (uint32_t)(x % (b - b / 2 + 1));
}

static int
vsc_is_transport(int rc)
{
    return rc < 0 && rc != -EPROTO && rc != -EINVAL;
}

/* Runs c->req to a decoded reply: steps 2-5 of the file comment.
 * `resend_ok`: whether a broken connection may re-register and resend
 * (not for Register itself, which vsc_reestablish drives). */
static int
vsc_run(struct vsc *c, struct vsc_reply *r, int resend_ok)
{
    uint64_t deadline = vsc_deadline(c->io_timeout_ms);
    uint32_t attempts = 0, backoff = 0;
    int rc, lost = 0;
    /* The frame of a replicated request was written and its reply lost:
     * it may have been executed. */
    int maybe_ran = 0;
    const struct vs_hdr_request *h = (const struct vs_hdr_request *)c->req.data;
    int replicated = c->req.len >= VS_HEADER_SIZE &&
                     h->operation != VS_OP_REGISTER &&
                     vsc_operation_is_replicated(h->operation);
    for (;;) {
        if (c->fd < 0) {
            rc = resend_ok ? vsc_reestablish(c, &lost) : vsc_connect(c);
            if (rc == 0 && lost && maybe_ran) {
                /* The table forgot this client: a resend would run as
                 * new, so the request's outcome is unknown. */
                char why[160];
                snprintf(why, sizeof why,
                         "session evicted while request %llu was in flight: "
                         "its outcome is unknown (not resent)",
                         (unsigned long long)h->request);
                return vsc_fail(c, -ESTALE, why);
            }
            if (rc != 0) {
                if (vsc_is_transport(rc) && attempts < c->reconnects) {
                    attempts++;
                    vsc_close(c);
                    vsc_sleep_ms(100u * attempts);
                    deadline = vsc_deadline(c->io_timeout_ms);
                    continue;
                }
                return vsc_fail(c, rc, "reconnect");
            }
            if (c->session != 0)
                vsc_patch_session(&c->req, c->session);
        }
        rc = vsc_exchange(c, deadline);
        if (rc != 0) {
            vsc_close(c);
            /* A reset, EOF or timeout: the reply may be lost. Resend
             * (same request number) with a fresh deadline. */
            if (rc != -EPROTO && resend_ok && attempts < c->reconnects) {
                attempts++;
                maybe_ran |= replicated;
                deadline = vsc_deadline(c->io_timeout_ms);
                continue;
            }
            return vsc_fail(c, rc, "request");
        }
        rc = vsc_reply_decode(c->reply, c->reply_len, r);
        char leader[64];
        if (rc == VS_E_NOT_ACCEPTED && r->command == VS_CMD_REPLY &&
            resend_ok && c->follow && c->login != VSC_LOGIN_NONE &&
            vs_monotonic_ns() < deadline &&
            vsc_refused_for_leader(c, leader, sizeof leader)) {
            /* Served by the leader only: move there and resend. */
            vsc_close(c);
            vsc_known_add(c, leader);
            snprintf(c->addr, sizeof c->addr, "%s", leader);
            vsc_sleep_ms(20);
            continue;
        }
        /* Resend only while a resend can still be answered in time, so
         * the caller gets the status, not a timeout, at the deadline. */
        if ((rc == VS_E_TRANSIENT_NOT_COMMITTED || rc == VS_E_NOT_ACCEPTED) &&
            r->command == VS_CMD_REPLY &&
            vs_monotonic_ns() + 250000000ull < deadline) {
            vsc_sleep_ms(vsc_backoff_ms(&backoff));
            continue;
        }
        if (r->command == VS_CMD_EVICTION) {
            /* The server ended the session: forget it. A resend refused
             * so says nothing of the first attempt's outcome. */
            vsc_close(c);
            c->session = 0;
            c->login = VSC_LOGIN_NONE;
            if (maybe_ran)
                return vsc_fail(c, -ESTALE,
                                "evicted while resending a request whose "
                                "reply was lost: its outcome is unknown");
            return vsc_fail(c, rc, "evicted");
        }
        if (rc != 0)
            return vsc_fail(c, rc, NULL);
        c->err[0] = '\0';
        return 0;
    }
}

/* ---- Register / Logout ---- */

static int
vsc_register(struct vsc *c, uint32_t *user_id)
{
    struct vs_wbuf body;
    struct vsc_saved_req saved;
    struct vsc_reply r;
    uint32_t uid = 0, proto = 0;
    uint64_t session = 0;
    char ver[256];
    int rc;

    vs_wbuf_init(&body);
    if (c->login == VSC_LOGIN_PAT)
        vsc_body_login_pat(&body, VSC_PROTOCOL_VERSION, VSC_SDK_NAME,
                           VSC_SDK_VERSION, c->token);
    else
        vsc_body_login(&body, VSC_PROTOCOL_VERSION, VSC_SDK_NAME,
                       VSC_SDK_VERSION, c->user, c->password);
    /* The call in progress (when re-registering) keeps its frame. */
    vsc_req_save(c, &saved);
    vsc_frame_request(&c->req, c->client, 0, 0, VS_OP_REGISTER,
                      VSC_LOGIN_REGISTER, body.data, body.len, 1);
    explicit_bzero(body.data, body.len);
    vs_wbuf_fini(&body);
    c->session = 0;
    rc = vsc_run(c, &r, 0);
    vsc_req_restore(c, &saved);
    if (rc != 0)
        return rc;
    if (vsc_decode_login(r.payload, r.payload_len, &uid, &session, &proto,
                         ver) != 0 ||
        session == 0) {
        vsc_close(c);
        return vsc_fail(c, -EPROTO, "register reply");
    }
    c->session = session;
    if (user_id != NULL)
        *user_id = uid;
    return 0;
}

/* Leader following (file comment): 0, or the error of a failed move
 * (the handle then stays connected where it could). */
static int
vsc_settle(struct vsc *c)
{
    if (!c->follow || c->settling || c->session == 0)
        return 0;
    c->settling = 1;
    struct vsc_saved_req saved;
    vsc_req_save(c, &saved);
    int rc = 0;
    for (unsigned hop = 0; hop < VSC_HOPS_MAX; hop++) {
        struct vsc_reply r;
        vs_wbuf_reset(&c->req);
        vsc_frame_request(&c->req, c->client, c->session, c->counter,
                          VS_OP_NON_REPLICATED, VSC_GET_CLUSTER_METADATA, NULL,
                          0, 0);
        if (vsc_run(c, &r, 0) != 0)
            break; /* no metadata: stay (as the SDKs do) */
        struct vs_rbuf b;
        vs_rbuf_init(&b, r.payload, r.payload_len);
        uint32_t n = vs_rd_u32(&b);
        (void)vs_rd_bytes(&b, n);
        n = vs_rd_u32(&b);
        char leader[64] = "";
        for (uint32_t i = 0; i < n && !b.err && i < 64; i++) {
            uint32_t k = vs_rd_u32(&b);
            (void)vs_rd_bytes(&b, k);
            k = vs_rd_u32(&b);
            const uint8_t *ip = vs_rd_bytes(&b, k);
            uint16_t port = vs_rd_u16(&b);
            (void)vs_rd_bytes(&b, 6);
            uint8_t role = vs_rd_u8(&b), status = vs_rd_u8(&b);
            if (b.err || ip == NULL || k == 0 || k > 45 || port == 0)
                continue;
            char a[64];
            snprintf(a, sizeof a, memchr(ip, ':', k) ? "[%.*s]:%u" : "%.*s:%u",
                     (int)k, (const char *)ip, port);
            vsc_known_add(c, a);
            if (role == 0 && status == 0)
                snprintf(leader, sizeof leader, "%s", a);
        }
        if (b.err || n <= 1 || leader[0] == '\0' ||
            strcmp(leader, c->addr) == 0)
            break;
        char here[256];
        snprintf(here, sizeof here, "%s", c->addr);
        vsc_close(c);
        snprintf(c->addr, sizeof c->addr, "%s", leader);
        rc = vsc_connect(c);
        if (rc == 0)
            rc = vsc_register(c, NULL);
        if (rc != 0) {
            /* the leader is not reachable from here: go back */
            vsc_close(c);
            snprintf(c->addr, sizeof c->addr, "%s", here);
            int back = vsc_connect_any(c);
            if (back == 0)
                back = vsc_register(c, NULL);
            rc = back;
            break;
        }
    }
    vsc_req_restore(c, &saved);
    c->settling = 0;
    return rc;
}

/* Drops the session state: the next login uses a new client id. */
static void
vsc_forget_session(struct vsc *c)
{
    c->session = 0;
    c->login = VSC_LOGIN_NONE;
    c->client = vsc_random_id();
    c->counter = 1;
    explicit_bzero(c->password, sizeof c->password);
    explicit_bzero(c->token, sizeof c->token);
}

static int
vsc_login_common(struct vsc *c, uint32_t *user_id)
{
    int rc;
    if (c->fd < 0) {
        rc = vsc_connect_any(c);
        if (rc != 0)
            return rc;
    }
    rc = vsc_register(c, user_id);
    if (rc == 0) {
        /* this Register created the handle's table entry (its op is
         * the entry's created_op) or resumed an older one */
        c->origin = c->session;
        rc = vsc_settle(c);
    }
    if (rc != 0)
        c->login = VSC_LOGIN_NONE;
    return rc;
}

int
vsc_login(struct vsc *c, const char *user, const char *password,
          uint32_t *user_id)
{
    if (strlen(user) > VSC_NAME_MAX || strlen(password) > VSC_NAME_MAX)
        return vsc_fail(c, -EINVAL, "username or password too long");
    if (c->session != 0)
        (void)vsc_logout(c);
    snprintf(c->user, sizeof c->user, "%s", user);
    snprintf(c->password, sizeof c->password, "%s", password);
    c->login = VSC_LOGIN_PASSWORD;
    return vsc_login_common(c, user_id);
}

int
vsc_login_pat(struct vsc *c, const char *token, uint32_t *user_id)
{
    if (strlen(token) > VSC_NAME_MAX)
        return vsc_fail(c, -EINVAL, "token too long");
    if (c->session != 0)
        (void)vsc_logout(c);
    snprintf(c->token, sizeof c->token, "%s", token);
    c->login = VSC_LOGIN_PAT;
    return vsc_login_common(c, user_id);
}

int
vsc_logout(struct vsc *c)
{
    struct vsc_reply r;
    int rc = vsc_call(c, VSC_LOGOUT_USER, NULL, 0, &r);
    vsc_forget_session(c);
    return rc;
}

/* ---- generic calls ---- */

struct vs_wbuf *
vsc_frame_begin(struct vsc *c)
{
    vs_wbuf_reset(&c->req);
    (void)vs_wbuf_reserve(&c->req, VS_HEADER_SIZE);
    c->req.len = VS_HEADER_SIZE;
    c->tail = NULL;
    c->tail_len = 0;
    return &c->req;
}

int
vsc_call_frame(struct vsc *c, uint32_t code, const uint8_t *tail,
               size_t tail_len, struct vsc_reply *r)
{
    uint8_t op = vsc_code_operation(code);
    uint64_t request;
    int repl = vsc_operation_is_replicated(op), rc;
    struct vs_hdr_request h;
    size_t len;

    VS_ASSERT(c->req.len >= VS_HEADER_SIZE);
    if (op == VS_OP_REGISTER)
        return vsc_fail(c, -EINVAL, "use vsc_login for Register");
    if (op != VS_OP_NON_REPLICATED && c->session == 0)
        return vsc_fail(c, VS_E_UNAUTHENTICATED, "not logged in");
    if (repl && tail_len > 0) {
        /* the request checksum covers the whole body: one piece */
        vs_wr_bytes(&c->req, tail, tail_len);
        tail = NULL;
        tail_len = 0;
    }
    len = c->req.len - VS_HEADER_SIZE;
    if (tail_len > VS_FRAME_MAX - VS_HEADER_SIZE - len)
        return vsc_fail(c, -E2BIG, "request larger than a frame");
    len += tail_len;
    request = c->counter;
    if (repl)
        c->counter++;
    vsc_request_header(&h, c->client, c->session, request, op, code,
                       c->req.data + VS_HEADER_SIZE, len, repl);
    memcpy(c->req.data, &h, sizeof h);
    if (repl) {
        vs_wbuf_reset(&c->last_repl);
        vs_wr_bytes(&c->last_repl, c->req.data, c->req.len);
    }
    c->tail = tail;
    c->tail_len = tail_len;
    rc = vsc_run(c, r, 1);
    /* the caller's bytes are not kept past the call */
    c->tail = NULL;
    c->tail_len = 0;
    return rc;
}

int
vsc_call(struct vsc *c, uint32_t code, const void *body, size_t len,
         struct vsc_reply *r)
{
    struct vs_wbuf *w = vsc_frame_begin(c);
    if (len > 0)
        vs_wr_bytes(w, body, len);
    return vsc_call_frame(c, code, NULL, 0, r);
}

int
vsc_resend_last(struct vsc *c)
{
    struct vsc_reply r;
    int rc;
    if (c->last_repl.len == 0)
        return vsc_fail(c, -ENOENT, "no replicated request sent yet");
    vsc_close(c);
    int lost;
    rc = vsc_reestablish(c, &lost);
    if (rc != 0)
        return rc;
    if (lost)
        return vsc_fail(c, -ESTALE,
                        "session evicted since the request was sent: its "
                        "outcome is unknown (not resent)");
    vs_wbuf_reset(&c->req);
    c->tail = NULL;
    c->tail_len = 0;
    vs_wr_bytes(&c->req, c->last_repl.data, c->last_repl.len);
    vsc_patch_session(&c->req, c->session);
    return vsc_run(c, &r, 1);
}

struct vs_wbuf *
vsc_body(struct vsc *c)
{
    vs_wbuf_reset(&c->body);
    return &c->body;
}
