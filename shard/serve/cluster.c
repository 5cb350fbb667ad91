/*
 * shard/serve/cluster.c - see cluster.h. Data shards only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "shard/serve/cluster.h"

void
serve_cluster_init(struct serve_cluster *sc, const struct vs_config *cfg)
{
    memset(sc, 0, sizeof(*sc));
    /* the config passed vs_names_resolve at load */
    (void)vs_names_resolve(cfg, &sc->names, NULL, 0);
    sc->clustered = sc->names.count > 1;
    sc->self = (uint8_t)cfg->replica_id;
}

int
serve_cluster_on_frame(struct serve_cluster *sc, const void *frame,
                       uint32_t len)
{
    struct fwd_hdr h;
    if (len != sizeof(h) + sizeof(struct fwd_cluster))
        return -EBADMSG;
    memcpy(&h, frame, sizeof(h));
    if (h.payload_len != sizeof(struct fwd_cluster))
        return -EBADMSG;
    struct fwd_cluster v;
    memcpy(&v, (const uint8_t *)frame + sizeof(h), sizeof(v));
    if (v.count < 2 || v.count > VS_REPLICAS_MAX || v.self >= v.count ||
        (v.leader != FWD_CLUSTER_NONE && v.leader >= v.count))
        return -EBADMSG;
    for (uint32_t i = 0; i < v.count; i++)
        v.nodes[i].client_addr[FWD_CLUSTER_ADDR_MAX - 1] = '\0';
    v.xfer.last[FWD_XFER_LAST_MAX - 1] = '\0';
    sc->v = v;
    sc->have = 1;
    return 0;
}

static void
wr_str32(struct vs_wbuf *w, const char *s, size_t n)
{
    vs_wr_u32(w, (uint32_t)n);
    vs_wr_bytes(w, s, n);
}

static const char *
leader_addr(const struct serve_cluster *sc)
{
    if (!sc->have || sc->v.leader == FWD_CLUSTER_NONE)
        return "";
    return sc->v.nodes[sc->v.leader].client_addr;
}

int
serve_cluster_refuses_data(const struct serve_cluster *sc, struct vs_wbuf *body)
{
    if (!sc->clustered)
        return 0;
    if (sc->have && sc->v.leader == sc->v.self)
        return 0;
    const char *a = leader_addr(sc);
    wr_str32(body, a, strlen(a));
    return 1;
}

/* "HOST:PORT" / "[V6]:PORT" -> host part and port (0 if none). */
static void
split_addr(const char *a, char *host, size_t hostlen, uint16_t *port)
{
    *port = 0;
    host[0] = '\0';
    const char *colon = strrchr(a, ':');
    if (colon == NULL) {
        snprintf(host, hostlen, "%s", a);
        return;
    }
    const char *h = a;
    size_t n = (size_t)(colon - a);
    if (n >= 2 && a[0] == '[' && a[n - 1] == ']') {
        h = a + 1;
        n -= 2;
    }
    if (n >= hostlen)
        n = hostlen - 1;
    memcpy(host, h, n);
    host[n] = '\0';
    long p = strtol(colon + 1, NULL, 10);
    if (p > 0 && p <= 65535)
        *port = (uint16_t)p;
}

static void
wr_node(struct vs_wbuf *w, const struct serve_cluster *sc, uint32_t id,
        const char *addr, uint8_t role, uint8_t status)
{
    char name[VS_NAME_MAX + 16];
    if (id < sc->names.count)
        snprintf(name, sizeof(name), "%s", sc->names.name[id]);
    else
        snprintf(name, sizeof(name), "replica-%u", id);
    wr_str32(w, name, strlen(name));
    char host[FWD_CLUSTER_ADDR_MAX];
    uint16_t port;
    split_addr(addr, host, sizeof(host), &port);
    wr_str32(w, host, strlen(host));
    vs_wr_u16(w, port);
    vs_wr_u16(w, 0); /* quic: not served */
    vs_wr_u16(w, 0); /* http: not served */
    vs_wr_u16(w, 0); /* websocket: not served */
    vs_wr_u8(w, role);
    vs_wr_u8(w, status);
}

void
serve_cluster_write_metadata(const struct serve_cluster *sc,
                             const char *cluster, struct vs_wbuf *w)
{
    wr_str32(w, cluster, strlen(cluster));
    if (!sc->have) {
        vs_wr_u32(w, 1);
        wr_node(w, sc, sc->self, "", 1, 1);
        return;
    }
    vs_wr_u32(w, sc->v.count);
    for (uint32_t i = 0; i < sc->v.count; i++)
        wr_node(w, sc, i, sc->v.nodes[i].client_addr, sc->v.nodes[i].role,
                sc->v.nodes[i].status);
}

void
serve_cluster_write_status(const struct serve_cluster *sc, struct vs_wbuf *w)
{
    const struct fwd_cluster *v = &sc->v;
    uint32_t count = sc->have ? v->count : 0;
    vs_wr_u32(w, count);
    vs_wr_u8(w, sc->self);
    vs_wr_u8(w, sc->have ? v->vsr_status : 0xff);
    vs_wr_u8(w, sc->have ? v->leader : FWD_CLUSTER_NONE);
    vs_wr_u32(w, v->view);
    vs_wr_u32(w, v->log_view);
    vs_wr_u64(w, v->op);
    vs_wr_u64(w, v->commit_min);
    vs_wr_u64(w, v->commit_max);
    vs_wr_u64(w, v->checkpoint_op);
    vs_wr_u128(w, v->checkpoint_checksum);
    for (uint32_t i = 0; i < count; i++) {
        const struct fwd_cluster_node *nd = &v->nodes[i];
        wr_str32(w, nd->client_addr, strlen(nd->client_addr));
        vs_wr_u8(w, nd->role);
        vs_wr_u8(w, nd->status);
        vs_wr_u8(w, nd->link);
        vs_wr_u64(w, nd->bytes_in);
        vs_wr_u64(w, nd->bytes_out);
    }
    /* the transfer trailer (cluster.h); absent before the first report */
    if (!sc->have)
        return;
    const struct fwd_cluster_xfer *x = &v->xfer;
    vs_wr_u8(w, SERVE_CLUSTER_XFER_VERSION);
    vs_wr_u8(w, x->stage);
    vs_wr_u8(w, x->peer);
    vs_wr_u64(w, x->fetched);
    vs_wr_u64(w, x->total);
    vs_wr_u64(w, x->sessions);
    vs_wr_u64(w, x->completed);
    vs_wr_u64(w, x->abandoned);
    vs_wr_u64(w, x->last_bytes);
    vs_wr_u64(w, x->last_ms);
    wr_str32(w, x->last, strlen(x->last));
}
