/*
 * tests/integration/cluster.c - see cluster.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "common/buf.h"
#include "tests/integration/cluster.h"
#include "tools/client/vsc.h"

int
vs_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(a);
    int rc = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &sl) != 0)
        rc = -errno;
    close(fd);
    return rc != 0 ? rc : ntohs(a.sin_port);
}

/* 1 if 127.0.0.1:port can be bound now. */
static int
port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

/* A replica port for node i whose data-shard link ports (port + s x the
 * default data_link_port_stride, s = 1..VS_CLUSTER_SHARDS_MAX) are free
 * too, and whose residue modulo the stride differs from every earlier
 * node's, so no node's data-link port is another node's port. */
static int
cluster_replica_port(const int *taken, unsigned i)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        int rp = vs_free_port();
        if (rp < 0)
            return rp;
        int ok = rp + VS_CLUSTER_SHARDS_MAX * VS_CLUSTER_STRIDE <= 65535;
        for (unsigned j = 0; ok && j < i; j++)
            ok = taken[j] % VS_CLUSTER_STRIDE != rp % VS_CLUSTER_STRIDE;
        for (int s = 1; ok && s <= VS_CLUSTER_SHARDS_MAX; s++)
            ok = port_free(rp + s * VS_CLUSTER_STRIDE);
        if (ok)
            return rp;
    }
    return -EADDRINUSE;
}

/* 1 if `port` is one of the n replica ports in taken or one of their
 * data-shard link ports. */
static int
port_clashes(int port, const int *taken, unsigned n)
{
    for (unsigned j = 0; j < n; j++)
        for (int s = 0; s <= VS_CLUSTER_SHARDS_MAX; s++)
            if (port == taken[j] + s * VS_CLUSTER_STRIDE)
                return 1;
    return 0;
}

/* A client port that is none of the replica ports or their data-link
 * ports and no earlier node's client port (bind(0) may hand a closed
 * port out again). */
static int
cluster_client_port(const int *taken, unsigned n, const int *clients,
                    unsigned i)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        int cp = vs_free_port();
        if (cp < 0)
            return cp;
        int ok = !port_clashes(cp, taken, n);
        for (unsigned j = 0; ok && j < i; j++)
            ok = clients[j] != cp;
        if (ok)
            return cp;
    }
    return -EADDRINUSE;
}

static int
cluster_write_secret(struct vs_cluster *cl)
{
    uint8_t key[32];
    randombytes_buf(key, sizeof(key));
    int fd = open(cl->secret_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, key, sizeof(key));
    close(fd);
    return w == (ssize_t)sizeof(key) ? 0 : -EIO;
}

size_t
vs_cluster_args(struct vs_cluster *cl, unsigned i, const char **argv,
                size_t max, char *addrs, size_t addrs_len)
{
    size_t k = 0, off = 0;
    addrs[0] = '\0';
    for (unsigned j = 0; j < cl->n; j++) {
        int w = snprintf(addrs + off, addrs_len - off, "%s%s", j ? "," : "",
                         cl->peer[i][j]);
        if (w > 0 && (size_t)w < addrs_len - off)
            off += (size_t)w;
    }
    static char ids[VS_CLUSTER_MAX][4];
    snprintf(ids[i], sizeof(ids[i]), "%u", i);
    const char *fixed[] = {"--replica-id",
                           ids[i],
                           "--replica-addrs",
                           addrs,
                           "--cluster-secret-file",
                           cl->secret_file,
                           "--client-addr",
                           cl->client[i],
                           "--with-default-root-credentials",
                           NULL};
    for (size_t f = 0; fixed[f] != NULL && k + 1 < max; f++)
        argv[k++] = fixed[f];
    for (size_t e = 0; cl->extra != NULL && cl->extra[e] != NULL && k + 1 < max;
         e++)
        argv[k++] = cl->extra[e];
    argv[k] = NULL;
    return k;
}

int
vs_cluster_init(struct vs_cluster *cl, unsigned n)
{
    memset(cl, 0, sizeof(*cl));
    if (n < 2 || n > VS_CLUSTER_MAX)
        return -EINVAL;
    if (sodium_init() < 0)
        return -EIO;
    cl->n = n;
    snprintf(cl->dir, sizeof(cl->dir), "/tmp/vs_cluster_XXXXXX");
    if (mkdtemp(cl->dir) == NULL)
        return -errno;
    snprintf(cl->secret_file, sizeof(cl->secret_file), "%s/secret", cl->dir);
    int rc = cluster_write_secret(cl);
    if (rc != 0)
        return rc;
    int taken[VS_CLUSTER_MAX], clients[VS_CLUSTER_MAX];
    for (unsigned i = 0; i < n; i++) {
        rc = vs_node_init(&cl->node[i]);
        if (rc != 0)
            return rc;
        int rp = cluster_replica_port(taken, i);
        if (rp < 0)
            return rp;
        taken[i] = rp;
        snprintf(cl->replica[i], sizeof(cl->replica[i]), "127.0.0.1:%d", rp);
    }
    /* client ports last, so none is a replica or data-link port */
    for (unsigned i = 0; i < n; i++) {
        int cp = cluster_client_port(taken, n, clients, i);
        if (cp < 0)
            return cp;
        clients[i] = cp;
        snprintf(cl->client[i], sizeof(cl->client[i]), "127.0.0.1:%d", cp);
    }
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < n; j++)
            memcpy(cl->peer[i][j], cl->replica[j], sizeof(cl->peer[i][j]));
    for (unsigned i = 0; i < n; i++) {
        const char *argv[64];
        char addrs[VS_CLUSTER_MAX * 34];
        argv[0] = "format";
        vs_cluster_args(cl, i, argv + 1, 63, addrs, sizeof(addrs));
        rc = vs_node_spawn(&cl->node[i], argv);
        if (rc != 0)
            return rc;
        int st = vs_node_wait_exit(&cl->node[i], 20000);
        if (st < 0)
            return st;
        if (st != 0)
            return -EIO;
    }
    return 0;
}

void
vs_cluster_set_peer(struct vs_cluster *cl, unsigned i, unsigned j,
                    const char *addr)
{
    snprintf(cl->peer[i][j], sizeof(cl->peer[i][j]), "%s", addr);
}

int
vs_cluster_start_node(struct vs_cluster *cl, unsigned i, uint32_t timeout_ms)
{
    const char *argv[64];
    char addrs[VS_CLUSTER_MAX * 34];
    vs_cluster_args(cl, i, argv, 64, addrs, sizeof(addrs));
    return vs_node_start(&cl->node[i], argv, timeout_ms);
}

int
vs_cluster_start(struct vs_cluster *cl, uint32_t timeout_ms)
{
    for (unsigned i = 0; i < cl->n; i++) {
        int rc = vs_cluster_start_node(cl, i, timeout_ms);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void
vs_cluster_cleanup(struct vs_cluster *cl)
{
    if (getenv("VS_KEEP_CLUSTER") != NULL) {
        /* debugging: stop the nodes, keep every dir and log */
        for (unsigned i = 0; i < cl->n; i++)
            if (cl->node[i].pid > 0)
                vs_node_kill(&cl->node[i]);
        fprintf(stderr, "cluster kept: %s", cl->dir);
        for (unsigned i = 0; i < cl->n; i++)
            fprintf(stderr, " %s", cl->node[i].dir);
        fprintf(stderr, "\n");
        return;
    }
    for (unsigned i = 0; i < cl->n; i++)
        vs_node_cleanup(&cl->node[i]);
    if (cl->dir[0] != '\0') {
        unlink(cl->secret_file);
        rmdir(cl->dir);
    }
}

struct vsc *
vs_cluster_connect(struct vs_cluster *cl, unsigned i, uint32_t io_ms)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof(o));
    o.addr = cl->client[i];
    o.io_timeout_ms = io_ms;
    o.connect_timeout_ms = 2000;
    o.no_follow = 1; /* stay on node i: the tests address nodes */
    struct vsc *c = vsc_create(&o);
    if (c != NULL && vsc_connect(c) != 0) {
        vsc_destroy(c);
        c = NULL;
    }
    return c;
}

static uint64_t
cl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct vsc *
vs_cluster_login(struct vs_cluster *cl, unsigned i, uint32_t timeout_ms)
{
    uint64_t end = cl_now_ms() + timeout_ms;
    while (cl_now_ms() < end) {
        struct vsc *c = vs_cluster_connect(cl, i, 3000);
        if (c != NULL && vsc_login(c, "iggy", "iggy", NULL) == 0)
            return c;
        if (c != NULL)
            vsc_destroy(c);
        usleep(100 * 1000);
    }
    return NULL;
}

int
vs_replica_status(struct vsc *c, struct vs_replica_status *out)
{
    memset(out, 0, sizeof(*out));
    struct vsc_reply r;
    int rc = vsc_call(c, 9100, NULL, 0, &r);
    if (rc != 0)
        return rc;
    struct vs_rbuf b;
    vs_rbuf_init(&b, r.payload, r.payload_len);
    out->count = vs_rd_u32(&b);
    out->self = vs_rd_u8(&b);
    out->status = vs_rd_u8(&b);
    out->leader = vs_rd_u8(&b);
    out->view = vs_rd_u32(&b);
    out->log_view = vs_rd_u32(&b);
    out->op = vs_rd_u64(&b);
    out->commit_min = vs_rd_u64(&b);
    out->commit_max = vs_rd_u64(&b);
    out->checkpoint_op = vs_rd_u64(&b);
    struct vs_u128 sum = vs_rd_u128(&b);
    out->checkpoint_lo = sum.lo;
    out->checkpoint_hi = sum.hi;
    for (uint32_t i = 0; i < out->count && i < VS_CLUSTER_MAX; i++) {
        uint32_t n = vs_rd_u32(&b);
        const uint8_t *a = vs_rd_bytes(&b, n);
        if (a != NULL && n < sizeof(out->nodes[i].addr)) {
            memcpy(out->nodes[i].addr, a, n);
            out->nodes[i].addr[n] = '\0';
        }
        out->nodes[i].role = vs_rd_u8(&b);
        out->nodes[i].status = vs_rd_u8(&b);
        out->nodes[i].link = vs_rd_u8(&b);
        (void)vs_rd_u64(&b);
        (void)vs_rd_u64(&b);
    }
    return b.err ? -EPROTO : 0;
}
