/*
 * tests/unit/check_links.c - shard 0's replica links (shard/link/links.h)
 * and the cluster secret file (common/secret.h), in one process: three
 * link sets on one libevent base over 127.0.0.1 ephemeral ports.
 *
 * Covers: the handshake between every pair, frames in both directions,
 * counters and advertised client addresses; refusals of a wrong secret,
 * another cluster, a different replica count, a disjoint release window,
 * a data shard's mesh meeting shard 0's,
 * a raw connection sending garbage, a HELLO claiming a higher id; the
 * queue bound (drops, -ENOBUFS); reconnect after a drop and after the
 * peer restarts; oversized frames end the link; frames of megabytes
 * arrive whole and intact, and a peer gone in the middle of one ends the
 * link without delivering it; argument errors. Every
 * wait is bounded (a deadline in loop iterations of 10 ms).
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/checksum.h"
#include "common/secret.h"
#include "common/tls.h"
#include "common/wire.h"
#include "shard/link/links.h"
#include "tests/unit/link_fixture.h"

#define NODES       3
#define WAIT_ROUNDS 500 /* x 10 ms */
#define FRAMES_MAX  64

struct node {
    struct links *l;
    int listen_fd;
    char addr[64];
    uint8_t secret[32];
    struct vs_u128 cluster;
    uint8_t count;
    uint32_t rel_min, rel_max;
    size_t queue_max;
    uint32_t frame_max;
    uint8_t shard; /* 0: shard 0's mesh */
    uint16_t shard_count;
    SSL_CTX *tls_server, *tls_client; /* NULL: plain TCP */
    /* received */
    unsigned frames[NODES];
    size_t last_len[NODES];
    uint8_t last[NODES][1024];
    uint64_t digest[NODES]; /* xxh3 of the last frame received */
    int ups[NODES], downs[NODES];
};

static struct event_base *base;
static struct node nodes[NODES];

static void
on_frame(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct node *n = ctx;
    ck_assert_uint_lt(peer, NODES);
    n->frames[peer]++;
    n->last_len[peer] = len;
    n->digest[peer] = vs_xxh3_64(frame, len);
    if (len <= sizeof(n->last[peer]))
        memcpy(n->last[peer], frame, len);
}

static void
on_state(void *ctx, uint8_t peer, int up)
{
    struct node *n = ctx;
    if (up)
        n->ups[peer]++;
    else
        n->downs[peer]++;
}

static void
node_defaults(void)
{
    memset(nodes, 0, sizeof(nodes));
    for (int i = 0; i < NODES; i++) {
        struct node *n = &nodes[i];
        n->listen_fd = link_listen_any(n->addr, sizeof(n->addr));
        memset(n->secret, 0x5a, sizeof(n->secret));
        n->cluster = (struct vs_u128){0x1234, 0x5678};
        n->count = NODES;
        n->rel_min = 1;
        n->rel_max = 2;
        n->frame_max = 4096;
    }
}

static void
node_start(int i)
{
    struct node *n = &nodes[i];
    struct links_opts o;
    char err[256];
    memset(&o, 0, sizeof(o));
    o.self = (uint8_t)i;
    o.count = n->count;
    for (int j = 0; j < n->count; j++)
        o.addrs[j] = j < NODES ? nodes[j].addr : "127.0.0.1:1";
    o.cluster = n->cluster;
    memcpy(o.secret, n->secret, sizeof(o.secret));
    o.release_min = n->rel_min;
    o.release_max = n->rel_max;
    char client[64];
    snprintf(client, sizeof(client), "127.0.0.1:%d", 8090 + i);
    o.client_addr = client;
    o.queue_max = n->queue_max;
    o.frame_max = n->frame_max;
    o.shard = n->shard;
    o.shard_count = n->shard_count;
    o.tls_server = n->tls_server;
    o.tls_client = n->tls_client;
    ck_assert_msg(links_create(base, &o, n->listen_fd, on_frame, on_state, n,
                               &n->l, err, sizeof(err)) == 0,
                  "%s", err);
}

static void
node_stop(int i)
{
    links_destroy(nodes[i].l);
    nodes[i].l = NULL;
}

static void
spin(void)
{
    link_spin(base);
}

static int
wait_up(int a, int b)
{
    for (int r = 0; r < WAIT_ROUNDS; r++) {
        if (links_up(nodes[a].l, (uint8_t)b) &&
            links_up(nodes[b].l, (uint8_t)a))
            return 1;
        spin();
    }
    return 0;
}

static void
make_frame(uint8_t *buf, size_t len, uint8_t from, uint8_t fill)
{
    struct vs_header *h = (struct vs_header *)buf;
    memset(buf, fill, len);
    memset(h, 0, sizeof(*h));
    h->f.size = (uint32_t)len;
    h->f.command = VS_CMD_PING;
    h->f.replica = from;
}

static void
setup(void)
{
    base = event_base_new();
    ck_assert_ptr_nonnull(base);
    node_defaults();
}

static void
teardown(void)
{
    for (int i = 0; i < NODES; i++) {
        if (nodes[i].l != NULL)
            node_stop(i);
        else if (nodes[i].listen_fd >= 0)
            close(nodes[i].listen_fd);
        if (nodes[i].tls_server != NULL)
            SSL_CTX_free(nodes[i].tls_server);
        if (nodes[i].tls_client != NULL)
            SSL_CTX_free(nodes[i].tls_client);
    }
    event_base_free(base);
}

START_TEST(test_mesh_and_frames)
{
    for (int i = 0; i < NODES; i++)
        node_start(i);
    ck_assert(wait_up(0, 1));
    ck_assert(wait_up(0, 2));
    ck_assert(wait_up(1, 2));
    /* every pair in both directions */
    uint8_t buf[600];
    for (int a = 0; a < NODES; a++) {
        for (int b = 0; b < NODES; b++) {
            if (a == b)
                continue;
            make_frame(buf, 300 + (size_t)a * 10 + (size_t)b, (uint8_t)a,
                       (uint8_t)(a * 16 + b));
            ck_assert_int_eq(links_send(nodes[a].l, (uint8_t)b, buf,
                                        300 + (size_t)a * 10 + (size_t)b),
                             0);
        }
    }
    for (int r = 0; r < WAIT_ROUNDS; r++) {
        int all = 1;
        for (int a = 0; a < NODES; a++)
            for (int b = 0; b < NODES; b++)
                if (a != b && nodes[b].frames[a] == 0)
                    all = 0;
        if (all)
            break;
        spin();
    }
    for (int a = 0; a < NODES; a++) {
        for (int b = 0; b < NODES; b++) {
            if (a == b)
                continue;
            size_t len = 300 + (size_t)a * 10 + (size_t)b;
            ck_assert_uint_eq(nodes[b].frames[a], 1);
            ck_assert_uint_eq(nodes[b].last_len[a], len);
            make_frame(buf, len, (uint8_t)a, (uint8_t)(a * 16 + b));
            ck_assert_int_eq(memcmp(nodes[b].last[a], buf, len), 0);
            struct links_peer_info in, out;
            links_peer(nodes[b].l, (uint8_t)a, &in);
            links_peer(nodes[a].l, (uint8_t)b, &out);
            ck_assert_int_eq(in.state, LINKS_UP);
            ck_assert_uint_eq(in.frames_in, 1);
            ck_assert_uint_eq(in.bytes_in, len);
            ck_assert_uint_eq(out.frames_out, 1);
            ck_assert_uint_eq(out.bytes_out, len);
            char want[32];
            snprintf(want, sizeof(want), "127.0.0.1:%d", 8090 + a);
            ck_assert_str_eq(in.client_addr, want);
        }
    }
    ck_assert_str_eq(links_state_name(LINKS_UP), "up");
}
END_TEST

START_TEST(test_argument_errors)
{
    node_start(0);
    node_start(1);
    uint8_t buf[300];
    make_frame(buf, sizeof(buf), 0, 1);
    ck_assert_int_eq(links_send(nodes[0].l, 0, buf, sizeof(buf)), -EINVAL);
    ck_assert_int_eq(links_send(nodes[0].l, 7, buf, sizeof(buf)), -EINVAL);
    ck_assert_int_eq(links_send(nodes[0].l, 1, buf, sizeof(buf) - 1), -EINVAL);
    /* node 2 never started: no link */
    ck_assert_int_eq(links_send(nodes[0].l, 2, buf, sizeof(buf)), -ENOTCONN);
    ck_assert(wait_up(0, 1));
    ck_assert_int_eq(links_send(nodes[0].l, 1, buf, sizeof(buf)), 0);

    struct links *l = NULL;
    struct links_opts o;
    char err[256];
    memset(&o, 0, sizeof(o));
    o.self = 3;
    o.count = 3;
    o.release_min = o.release_max = 1;
    ck_assert_int_eq(links_create(base, &o, -1, on_frame, on_state, NULL, &l,
                                  err, sizeof(err)),
                     -EINVAL);
    ck_assert_ptr_null(l);
    ck_assert_ptr_nonnull(strstr(err, "out of range"));
    o.self = 0;
    o.release_min = 3;
    o.release_max = 2;
    ck_assert_int_eq(links_create(base, &o, -1, on_frame, on_state, NULL, &l,
                                  err, sizeof(err)),
                     -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "release window"));
    o.release_min = 1;
    o.addrs[1] = "";
    ck_assert_int_eq(links_create(base, &o, -1, on_frame, on_state, NULL, &l,
                                  err, sizeof(err)),
                     -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "no usable address"));
}
END_TEST

/* Node 2 is misconfigured in one way; 0-1 still link, nothing reaches 2. */
static void
check_refused(const char *why_part)
{
    for (int i = 0; i < NODES; i++)
        node_start(i);
    ck_assert(wait_up(0, 1));
    for (int r = 0; r < 100; r++)
        spin();
    ck_assert(!links_up(nodes[0].l, 2));
    ck_assert(!links_up(nodes[2].l, 0));
    ck_assert(!links_up(nodes[1].l, 2));
    ck_assert_int_eq(nodes[2].ups[0] + nodes[2].ups[1], 0);
    ck_assert_int_eq(nodes[0].ups[2] + nodes[1].ups[2], 0);
    struct links_peer_info info;
    links_peer(nodes[0].l, 2, &info); /* 0 dials 2 */
    ck_assert_uint_gt(info.refusals, 0);
    ck_assert_msg(strstr(info.last_error, why_part) != NULL,
                  "last_error '%s' lacks '%s'", info.last_error, why_part);
    ck_assert_uint_eq(info.connects, 0);
}

START_TEST(test_wrong_secret)
{
    memset(nodes[2].secret, 0x33, sizeof(nodes[2].secret));
    check_refused("MAC");
}
END_TEST

START_TEST(test_wrong_cluster)
{
    nodes[2].cluster.lo ^= 1;
    check_refused("another cluster");
}
END_TEST

START_TEST(test_wrong_count)
{
    nodes[2].count = 4;
    /* 2 has a fourth address it dials: give it one that refuses */
    check_refused("replica count");
}
END_TEST

START_TEST(test_data_mesh_dialer_refused_by_shard0)
{
    /* a data shard's links pointed at shard 0's port (a bad plan): both
     * sides refuse, whichever dials */
    nodes[2].shard = 1;
    nodes[2].shard_count = 2;
    check_refused("shard index differs");
}
END_TEST

START_TEST(test_release_window)
{
    nodes[2].rel_min = 3;
    nodes[2].rel_max = 4;
    check_refused("incompatible release");
}
END_TEST

static int
raw_connect(const char *addr)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)atoi(strchr(addr, ':') + 1));
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* 1 once the peer closed fd (bounded wait, the loop spinning). */
static int
wait_closed(int fd, int rounds)
{
    fcntl(fd, F_SETFL, O_NONBLOCK);
    for (int r = 0; r < rounds; r++) {
        char b[512];
        ssize_t n = read(fd, b, sizeof(b));
        if (n == 0)
            return 1;
        if (n < 0 && errno != EAGAIN)
            return 1;
        spin();
    }
    return 0;
}

START_TEST(test_raw_garbage_and_impostor)
{
    node_start(2);
    /* garbage: a header whose size is out of range */
    int fd = raw_connect(nodes[2].addr);
    uint8_t junk[256];
    memset(junk, 0xff, sizeof(junk));
    ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    ck_assert(wait_closed(fd, WAIT_ROUNDS));
    close(fd);
    /* a well-formed but unsealed HELLO */
    fd = raw_connect(nodes[2].addr);
    struct vs_hdr_replica_hello h;
    memset(&h, 0, sizeof(h));
    h.f.size = sizeof(h);
    h.f.command = VS_CMD_REPLICA_HELLO;
    ck_assert_int_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
    ck_assert(wait_closed(fd, WAIT_ROUNDS));
    close(fd);
    /* a sealed HELLO claiming a higher id (only lower ids dial): refused
     * with a CHALLENGE carrying a non-zero status, then closed */
    fd = raw_connect(nodes[2].addr);
    memset(&h, 0, sizeof(h));
    h.f.size = sizeof(h);
    h.f.command = VS_CMD_REPLICA_HELLO;
    h.f.replica = 2;
    h.f.cluster = nodes[2].cluster;
    h.release_min = 1;
    h.release_max = 1;
    h.replica_count = NODES;
    vs_frame_seal((struct vs_header *)&h);
    ck_assert_int_eq(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
    fcntl(fd, F_SETFL, O_NONBLOCK);
    struct vs_hdr_replica_challenge ch;
    size_t got = 0;
    for (int r = 0; r < WAIT_ROUNDS && got < sizeof(ch); r++) {
        ssize_t n = read(fd, (uint8_t *)&ch + got, sizeof(ch) - got);
        if (n > 0)
            got += (size_t)n;
        else
            spin();
    }
    ck_assert_uint_eq(got, sizeof(ch));
    ck_assert(vs_frame_verify((struct vs_header *)&ch));
    ck_assert_int_eq(ch.f.command, VS_CMD_REPLICA_CHALLENGE);
    ck_assert_int_ne(ch.status, 0);
    ck_assert(wait_closed(fd, WAIT_ROUNDS));
    close(fd);
    /* silence: the handshake times out (5 s) and the connection closes */
    fd = raw_connect(nodes[2].addr);
    ck_assert(wait_closed(fd, 3 * WAIT_ROUNDS));
    close(fd);
}
END_TEST

START_TEST(test_queue_bound)
{
    nodes[0].queue_max = 4096;
    node_start(0);
    node_start(1);
    ck_assert(wait_up(0, 1));
    uint8_t buf[1024];
    make_frame(buf, sizeof(buf), 0, 9);
    int ok = 0, full = 0;
    /* without running the loop nothing leaves: the 5th frame is refused */
    for (int i = 0; i < 10; i++) {
        int rc = links_send(nodes[0].l, 1, buf, sizeof(buf));
        if (rc == 0)
            ok++;
        else if (rc == -ENOBUFS)
            full++;
    }
    ck_assert_int_eq(ok, 4);
    ck_assert_int_eq(full, 6);
    struct links_peer_info info;
    links_peer(nodes[0].l, 1, &info);
    ck_assert_uint_eq(info.dropped, 6);
    ck_assert_uint_eq(info.queued, 4096);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].frames[0] < 4; r++)
        spin();
    ck_assert_uint_eq(nodes[1].frames[0], 4);
    /* drained: room again */
    ck_assert_int_eq(links_send(nodes[0].l, 1, buf, sizeof(buf)), 0);
}
END_TEST

START_TEST(test_reconnect_and_restart)
{
    node_start(0);
    node_start(1);
    ck_assert(wait_up(0, 1));
    /* the dialer drops: it reconnects after its back-off */
    links_drop(nodes[0].l, 1, "test");
    ck_assert(!links_up(nodes[0].l, 1));
    ck_assert(wait_up(0, 1));
    struct links_peer_info info;
    links_peer(nodes[0].l, 1, &info);
    ck_assert_uint_eq(info.connects, 2);
    ck_assert_int_ge(nodes[0].downs[1], 1);
    /* the acceptor drops: the dialer notices the close and comes back */
    links_drop(nodes[1].l, 0, "test");
    ck_assert(wait_up(0, 1));
    /* the dialer restarts (a new process): the acceptor takes the new
     * connection in place of the old one */
    node_stop(0);
    nodes[0].listen_fd = link_listen_any(nodes[0].addr, sizeof(nodes[0].addr));
    node_start(0);
    ck_assert(wait_up(0, 1));
    uint8_t buf[400];
    make_frame(buf, sizeof(buf), 0, 4);
    ck_assert_int_eq(links_send(nodes[0].l, 1, buf, sizeof(buf)), 0);
    unsigned before = nodes[1].frames[0];
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].frames[0] == before; r++)
        spin();
    ck_assert_uint_eq(nodes[1].frames[0], before + 1);
}
END_TEST

START_TEST(test_oversized_frame_ends_link)
{
    nodes[0].frame_max = 8192; /* node 1 keeps 4096 */
    node_start(0);
    node_start(1);
    ck_assert(wait_up(0, 1));
    uint8_t *big = calloc(1, 8192);
    make_frame(big, 8192, 0, 1);
    /* the sender refuses a frame above its own frame_max... */
    ck_assert_int_eq(links_send(nodes[0].l, 1, big, 8193), -EINVAL);
    /* ...and a receiver seeing a size above its own ends the link */
    make_frame(big, 6000, 0, 1);
    ck_assert_int_eq(links_send(nodes[0].l, 1, big, 6000), 0);
    free(big);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].downs[0] == 0; r++)
        spin();
    ck_assert_int_eq(nodes[1].downs[0], 1);
    ck_assert_uint_eq(nodes[1].frames[0], 0);
    struct links_peer_info info;
    links_peer(nodes[1].l, 0, &info);
    ck_assert_msg(strstr(info.last_error, "frame size 6000") != NULL, "%s",
                  info.last_error);
    /* the dialer reconnects: a framing error costs one connection */
    ck_assert(wait_up(0, 1));
}
END_TEST

/* Frames of megabytes (a partition prepare) are read straight into the
 * input buffer, past libevent's 4 KiB socket reads: they arrive whole,
 * byte for byte, in order with the small frames around them. */
START_TEST(test_large_frames_intact)
{
    const size_t sizes[] = {(1u << 20) + 256, 300, 3u << 20, 4097, 8192};
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    nodes[0].frame_max = nodes[1].frame_max = (4u << 20) + 256;
    nodes[0].queue_max = nodes[1].queue_max = 16u << 20;
    node_start(0);
    node_start(1);
    ck_assert(wait_up(0, 1));
    uint8_t *big = malloc(3u << 20);
    ck_assert_ptr_nonnull(big);
    for (size_t k = 0; k < nsizes; k++) {
        make_frame(big, sizes[k], 0, (uint8_t)(0x30 + k));
        for (size_t i = sizeof(struct vs_header); i < sizes[k]; i++)
            big[i] = (uint8_t)(i * 31u + k); /* misplaced bytes show */
        uint64_t want = vs_xxh3_64(big, sizes[k]);
        ck_assert_int_eq(links_send(nodes[0].l, 1, big, sizes[k]), 0);
        for (int r = 0; r < WAIT_ROUNDS && nodes[1].frames[0] < k + 1; r++)
            spin();
        ck_assert_uint_eq(nodes[1].frames[0], k + 1);
        ck_assert_uint_eq(nodes[1].last_len[0], sizes[k]);
        ck_assert_msg(nodes[1].digest[0] == want,
                      "frame %zu (%zu bytes) differs", k, sizes[k]);
    }
    /* a peer gone in the middle of a frame: two 3 MiB frames are more
     * than one turn of the loop moves, so the second (or the first) is
     * cut when the sender goes; the link ends, and only whole frames are
     * delivered (the first, intact, if it all left) */
    make_frame(big, 3u << 20, 0, 0x77);
    uint64_t first = vs_xxh3_64(big, 3u << 20);
    ck_assert_int_eq(links_send(nodes[0].l, 1, big, 3u << 20), 0);
    make_frame(big, 3u << 20, 0, 0x78);
    ck_assert_int_eq(links_send(nodes[0].l, 1, big, 3u << 20), 0);
    free(big);
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK); /* part leaves */
    node_stop(0);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].downs[0] == 0; r++)
        spin();
    ck_assert_int_eq(nodes[1].downs[0], 1);
    if (nodes[1].frames[0] != nsizes) {
        ck_assert_uint_eq(nodes[1].frames[0], nsizes + 1);
        ck_assert(nodes[1].digest[0] == first);
    }
    ck_assert_int_eq(links_up(nodes[1].l, 0), 0);
}
END_TEST

/* ---- TLS underneath (certificates made by openssl here) ---- */

static char pki[64];

static void
sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* A CA and a replica certificate for 127.0.0.1 signed by it, under
 * pki/NAME*.pem (key in pki/NAME.key). */
static void
make_pki(const char *ca, const char *name)
{
    const char *q = ">/dev/null 2>&1";
    sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
       "-keyout %s/%s.key -out %s/%s.pem -days 2 -subj /CN=%s %s",
       pki, ca, pki, ca, ca, q);
    sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
       "-keyout %s/%s.key -out %s/%s.csr -subj /CN=replica %s",
       pki, name, pki, name, q);
    sh("printf 'subjectAltName=IP:127.0.0.1\n' > %s/san.ext", pki);
    sh("openssl x509 -req -in %s/%s.csr -CA %s/%s.pem -CAkey %s/%s.key "
       "-CAcreateserial -days 2 -extfile %s/san.ext -out %s/%s.pem %s",
       pki, name, pki, ca, pki, ca, pki, pki, name, q);
}

static void
tls_setup(void)
{
    setup();
    snprintf(pki, sizeof(pki), "/tmp/vs-links-pki-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(pki));
    make_pki("ca", "node");
    make_pki("otherca", "stranger");
}

static void
tls_teardown(void)
{
    teardown();
    sh("rm -rf %s", pki);
}

/* Node i inside TLS with certificate `name` trusted by CA `ca`. */
static void
node_tls(int i, const char *ca, const char *name)
{
    char cert[128], key[128], cafile[128], err[256];
    snprintf(cert, sizeof(cert), "%s/%s.pem", pki, name);
    snprintf(key, sizeof(key), "%s/%s.key", pki, name);
    snprintf(cafile, sizeof(cafile), "%s/%s.pem", pki, ca);
    struct vs_tls_opts t = {.cert_file = cert,
                            .key_file = key,
                            .ca_file = cafile,
                            .cert_what = "cert",
                            .key_what = "key",
                            .ca_what = "ca"};
    nodes[i].tls_server = vs_tls_server_ctx(&t, err, sizeof(err));
    ck_assert_msg(nodes[i].tls_server != NULL, "%s", err);
    nodes[i].tls_client = vs_tls_client_ctx(&t, err, sizeof(err));
    ck_assert_msg(nodes[i].tls_client != NULL, "%s", err);
}

START_TEST(test_tls_mesh)
{
    for (int i = 0; i < NODES; i++) {
        node_tls(i, "ca", "node");
        node_start(i);
    }
    ck_assert(wait_up(0, 1));
    ck_assert(wait_up(0, 2));
    ck_assert(wait_up(1, 2));
    uint8_t buf[700];
    make_frame(buf, sizeof(buf), 2, 0x77);
    ck_assert_int_eq(links_send(nodes[2].l, 0, buf, sizeof(buf)), 0);
    for (int r = 0; r < WAIT_ROUNDS && nodes[0].frames[2] == 0; r++)
        spin();
    ck_assert_uint_eq(nodes[0].frames[2], 1);
    ck_assert_int_eq(memcmp(nodes[0].last[2], buf, sizeof(buf)), 0);
}
END_TEST

/* A certificate from another CA, a plaintext peer, and valid
 * certificates with the wrong cluster secret: each is refused, the rest
 * of the mesh links. */
static void
check_tls_refused(const char *why_part)
{
    for (int i = 0; i < NODES; i++)
        node_start(i);
    ck_assert(wait_up(0, 1));
    for (int r = 0; r < 100; r++)
        spin();
    ck_assert(!links_up(nodes[0].l, 2));
    ck_assert(!links_up(nodes[1].l, 2));
    ck_assert_int_eq(nodes[2].ups[0] + nodes[2].ups[1], 0);
    struct links_peer_info info;
    links_peer(nodes[0].l, 2, &info);
    ck_assert_uint_eq(info.connects, 0);
    ck_assert_msg(strstr(info.last_error, why_part) != NULL,
                  "last_error '%s' lacks '%s'", info.last_error, why_part);
}

START_TEST(test_tls_wrong_ca)
{
    node_tls(0, "ca", "node");
    node_tls(1, "ca", "node");
    node_tls(2, "otherca", "stranger");
    check_tls_refused("TLS");
}
END_TEST

START_TEST(test_tls_plaintext_peer)
{
    node_tls(0, "ca", "node");
    node_tls(1, "ca", "node");
    /* node 2 speaks plain TCP: the TLS dialers' handshakes fail */
    for (int i = 0; i < NODES; i++)
        node_start(i);
    ck_assert(wait_up(0, 1));
    for (int r = 0; r < 100; r++)
        spin();
    ck_assert(!links_up(nodes[0].l, 2));
    ck_assert(!links_up(nodes[2].l, 0));
    ck_assert_int_eq(nodes[2].ups[0] + nodes[2].ups[1], 0);
    struct links_peer_info info;
    links_peer(nodes[0].l, 2, &info);
    ck_assert_uint_eq(info.connects, 0);
}
END_TEST

START_TEST(test_tls_still_needs_the_mac)
{
    for (int i = 0; i < NODES; i++)
        node_tls(i, "ca", "node");
    memset(nodes[2].secret, 0x33, sizeof(nodes[2].secret));
    check_tls_refused("MAC");
}
END_TEST

/* ---- the secret file ---- */

static void
write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
}

START_TEST(test_secret_file)
{
    char dir[] = "/tmp/vs-secret-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], err[256];
    uint8_t key[32], raw[32];
    snprintf(path, sizeof(path), "%s/secret", dir);
    for (int i = 0; i < 32; i++)
        raw[i] = (uint8_t)(i * 7 + 1);

    write_file(path, raw, 32, 0600);
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), 0);
    ck_assert_int_eq(memcmp(key, raw, 32), 0);

    char hex[66];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    hex[64] = '\n';
    write_file(path, hex, 65, 0400);
    memset(key, 0, sizeof(key));
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), 0);
    ck_assert_int_eq(memcmp(key, raw, 32), 0);
    write_file(path, hex, 64, 0600);
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), 0);

    write_file(path, raw, 32, 0640);
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), -EPERM);
    ck_assert_ptr_nonnull(strstr(err, "chmod 0600"));

    write_file(path, raw, 31, 0600);
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "31 bytes"));
    uint8_t big[200];
    memset(big, 'a', sizeof(big));
    write_file(path, big, sizeof(big), 0600);
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "200 bytes"));

    hex[10] = 'g';
    write_file(path, hex, 65, 0600);
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not hex"));

    ck_assert_int_eq(vs_secret_load(dir, key, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
    unlink(path);
    ck_assert_int_eq(vs_secret_load(path, key, err, sizeof(err)), -ENOENT);
    ck_assert_int_eq(vs_secret_load("", key, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "cluster_secret_file"));
    rmdir(dir);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("links");
    TCase *tc = tcase_create("links");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_mesh_and_frames);
    tcase_add_test(tc, test_argument_errors);
    tcase_add_test(tc, test_wrong_secret);
    tcase_add_test(tc, test_wrong_cluster);
    tcase_add_test(tc, test_wrong_count);
    tcase_add_test(tc, test_release_window);
    tcase_add_test(tc, test_data_mesh_dialer_refused_by_shard0);
    tcase_add_test(tc, test_raw_garbage_and_impostor);
    tcase_add_test(tc, test_queue_bound);
    tcase_add_test(tc, test_reconnect_and_restart);
    tcase_add_test(tc, test_oversized_frame_ends_link);
    tcase_add_test(tc, test_large_frames_intact);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("tls");
    tcase_add_checked_fixture(tt, tls_setup, tls_teardown);
    tcase_set_timeout(tt, 60);
    tcase_add_test(tt, test_tls_mesh);
    tcase_add_test(tt, test_tls_wrong_ca);
    tcase_add_test(tt, test_tls_plaintext_peer);
    tcase_add_test(tt, test_tls_still_needs_the_mac);
    suite_add_tcase(s, tt);
    TCase *ts = tcase_create("secret");
    tcase_add_test(ts, test_secret_file);
    suite_add_tcase(s, ts);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
