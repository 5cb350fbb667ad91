/*
 * shard/zero/forward.c - see forward.h. Shard 0 only.
 *
 * The table is a fixed array scanned linearly: it holds at most one
 * request per client connection of this node that is waiting for the
 * primary, so scans stay short in practice and bounded by FORWARD0_MAX.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/errors.h"
#include "common/mem.h"
#include "shard/zero/forward.h"

enum forward0_state {
    FORWARD0_FREE = 0,
    FORWARD0_WAIT_PRIMARY, /* sent, no result yet */
    FORWARD0_WAIT_APPLY,   /* result parked until commit_min >= op */
};

struct forward0_entry {
    enum forward0_state state;
    uint8_t primary;
    uint64_t nonce;
    uint32_t age; /* ticks in the current state */
    struct forward0_origin origin;
    uint64_t op;
    uint32_t flags;
    uint64_t session;
    uint32_t user_id;
    uint8_t *frame;
    uint32_t frame_len;
};

void
forward0_init(struct forward0 *f, uint64_t nonce_base)
{
    memset(f, 0, sizeof(*f));
    f->e = vs_xcalloc(FORWARD0_MAX, sizeof(*f->e));
    f->nonce_next = nonce_base | 1u; /* never 0 */
    f->incarnation = f->nonce_next;
}

void
forward0_fini(struct forward0 *f)
{
    if (f->e != NULL)
        for (size_t i = 0; i < FORWARD0_MAX; i++)
            free(f->e[i].frame);
    free(f->e);
    memset(f, 0, sizeof(*f));
}

static void
forward0_free(struct forward0 *f, struct forward0_entry *e)
{
    free(e->frame);
    memset(e, 0, sizeof(*e));
    f->used--;
}

int
forward0_request(struct forward0 *f, const struct forward0_origin *o,
                 const uint8_t *payload, uint32_t len, struct vs_u128 cluster,
                 uint8_t self, uint32_t view, uint8_t primary,
                 struct vs_wbuf *out)
{
    if (len < VS_HEADER_SIZE || f->used >= FORWARD0_MAX)
        return len < VS_HEADER_SIZE ? -EINVAL : -ENOBUFS;
    struct forward0_entry *e = NULL;
    for (size_t i = 0; i < FORWARD0_MAX; i++)
        if (f->e[i].state == FORWARD0_FREE) {
            e = &f->e[i];
            break;
        }
    if (e == NULL)
        return -ENOBUFS;
    e->state = FORWARD0_WAIT_PRIMARY;
    e->primary = primary;
    e->nonce = f->nonce_next++;
    if (f->nonce_next == 0)
        f->nonce_next = 1;
    e->origin = *o;
    f->used++;
    f->forwarded++;

    struct vs_hdr_forward_request h;
    memset(&h, 0, sizeof(h));
    h.f.cluster = cluster;
    h.f.size = VS_HEADER_SIZE + len;
    h.f.view = view;
    h.f.release = VS_WIRE_FORMAT_VERSION;
    h.f.command = VS_CMD_FORWARD_REQUEST;
    h.f.replica = self;
    h.nonce = e->nonce;
    h.client = o->req.client;
    h.request = o->req.request;
    h.operation = o->req.operation;
    h.incarnation = f->incarnation;
    h.f.checksum_body = vs_body_checksum(payload, len);
    vs_frame_seal((struct vs_header *)&h);
    vs_wr_bytes(out, &h, sizeof(h));
    vs_wr_bytes(out, payload, len);
    return 0;
}

/* Size, seal, body checksum, cluster and command of a sealed frame. */
static int
forward0_verify(const void *frame, size_t len, struct vs_u128 cluster,
                uint8_t command, struct vs_header *h)
{
    if (len < VS_HEADER_SIZE || len > VS_FRAME_MAX)
        return -EBADMSG;
    memcpy(h, frame, sizeof(*h));
    if (h->f.size != len || !vs_frame_verify(h) || h->f.command != command ||
        !vs_u128_eq(h->f.cluster, cluster) ||
        !vs_wire_format_known(h->f.release))
        return -EBADMSG;
    struct vs_u128 sum = vs_body_checksum(
        (const uint8_t *)frame + VS_HEADER_SIZE, len - VS_HEADER_SIZE);
    return vs_u128_eq(sum, h->f.checksum_body) ? 0 : -EBADMSG;
}

int
forward0_on_result(struct forward0 *f, uint8_t from, const void *frame,
                   size_t len, struct vs_u128 cluster)
{
    struct vs_hdr_forward_result h;
    if (forward0_verify(frame, len, cluster, VS_CMD_FORWARD_RESULT,
                        (struct vs_header *)&h) != 0 ||
        len < 2u * VS_HEADER_SIZE) { /* the body is a whole client frame */
        f->dropped++;
        return -EBADMSG;
    }
    for (size_t i = 0; i < FORWARD0_MAX; i++) {
        struct forward0_entry *e = &f->e[i];
        if (e->state != FORWARD0_WAIT_PRIMARY || e->nonce != h.nonce)
            continue;
        if (e->primary != from || h.f.replica != from) {
            f->dropped++;
            return -EBADMSG;
        }
        uint32_t flen = (uint32_t)(len - VS_HEADER_SIZE);
        e->frame = vs_xmalloc(flen);
        memcpy(e->frame, (const uint8_t *)frame + VS_HEADER_SIZE, flen);
        e->frame_len = flen;
        e->op = h.op;
        e->flags = h.flags;
        e->session = h.session;
        e->user_id = h.user_id;
        e->state = FORWARD0_WAIT_APPLY;
        e->age = 0;
        f->results++;
        return 0;
    }
    f->dropped++;
    return -ENOENT;
}

static void
forward0_answer(struct forward0 *f, struct forward0_entry *e, uint32_t status,
                forward0_answer_fn *fn, void *ctx)
{
    struct forward0_answer a;
    memset(&a, 0, sizeof(a));
    a.origin = e->origin;
    a.status = status;
    if (status == 0) {
        a.flags = e->flags;
        a.session = e->session;
        a.user_id = e->user_id;
        a.frame = e->frame;
        a.frame_len = e->frame_len;
        f->relayed++;
    } else if (e->state == FORWARD0_WAIT_APPLY) {
        f->expired++;
    } else {
        f->failed++;
    }
    fn(ctx, &a);
    forward0_free(f, e);
}

void
forward0_release(struct forward0 *f, uint64_t commit_min,
                 forward0_answer_fn *fn, void *ctx)
{
    if (f->used == 0)
        return;
    for (size_t i = 0; i < FORWARD0_MAX; i++) {
        struct forward0_entry *e = &f->e[i];
        if (e->state == FORWARD0_WAIT_APPLY && e->op <= commit_min)
            forward0_answer(f, e, 0, fn, ctx);
    }
}

void
forward0_tick(struct forward0 *f, int primary_ok, uint8_t primary,
              forward0_answer_fn *fn, void *ctx)
{
    if (f->used == 0)
        return;
    for (size_t i = 0; i < FORWARD0_MAX; i++) {
        struct forward0_entry *e = &f->e[i];
        if (e->state == FORWARD0_FREE)
            continue;
        e->age++;
        if (e->state == FORWARD0_WAIT_PRIMARY &&
            (!primary_ok || e->primary != primary ||
             e->age > FORWARD0_PRIMARY_TICKS))
            forward0_answer(f, e, VS_E_TRANSIENT_NOT_COMMITTED, fn, ctx);
        else if (e->state == FORWARD0_WAIT_APPLY &&
                 e->age > FORWARD0_APPLY_TICKS)
            forward0_answer(f, e, VS_E_TRANSIENT_NOT_COMMITTED, fn, ctx);
    }
}

int
forward0_decode_request(const void *frame, size_t len, struct vs_u128 cluster,
                        uint64_t *nonce, struct vs_hdr_request *req,
                        const uint8_t **body, uint32_t *body_len)
{
    return forward0_decode_request_inc(frame, len, cluster, nonce, NULL, req,
                                       body, body_len);
}

int
forward0_decode_request_inc(const void *frame, size_t len,
                            struct vs_u128 cluster, uint64_t *nonce,
                            uint64_t *incarnation, struct vs_hdr_request *req,
                            const uint8_t **body, uint32_t *body_len)
{
    struct vs_hdr_forward_request h;
    if (forward0_verify(frame, len, cluster, VS_CMD_FORWARD_REQUEST,
                        (struct vs_header *)&h) != 0 ||
        len < 2u * VS_HEADER_SIZE)
        return -EBADMSG;
    const uint8_t *p = (const uint8_t *)frame + VS_HEADER_SIZE;
    memcpy(req, p, sizeof(*req));
    if (!vs_u128_eq(req->client, h.client) || req->request != h.request ||
        req->operation != h.operation)
        return -EBADMSG;
    *nonce = h.nonce;
    if (incarnation != NULL)
        *incarnation = h.incarnation;
    *body = p + VS_HEADER_SIZE;
    *body_len = (uint32_t)(len - 2u * VS_HEADER_SIZE);
    return 0;
}

void
forward0_result_frame(struct vs_u128 cluster, uint8_t self, uint32_t view,
                      uint64_t nonce, uint64_t op, uint32_t flags,
                      uint64_t session, uint32_t user_id, struct vs_u128 client,
                      const void *frame, uint32_t frame_len,
                      struct vs_wbuf *out)
{
    struct vs_hdr_forward_result h;
    memset(&h, 0, sizeof(h));
    h.f.cluster = cluster;
    h.f.size = VS_HEADER_SIZE + frame_len;
    h.f.view = view;
    h.f.release = VS_WIRE_FORMAT_VERSION;
    h.f.command = VS_CMD_FORWARD_RESULT;
    h.f.replica = self;
    h.nonce = nonce;
    h.op = op;
    h.session = session;
    h.user_id = user_id;
    h.flags = flags;
    h.client = client;
    h.f.checksum_body = vs_body_checksum(frame, frame_len);
    vs_frame_seal((struct vs_header *)&h);
    vs_wr_bytes(out, &h, sizeof(h));
    vs_wr_bytes(out, frame, frame_len);
}

void
forward0_report_frame(struct vs_u128 cluster, uint8_t self, uint32_t view,
                      uint64_t incarnation, uint64_t seq, uint32_t flags,
                      const struct fwd_member *c, size_t nc,
                      const struct fwd_member *e, size_t ne,
                      struct vs_wbuf *out)
{
    size_t start = out->len;
    struct vs_hdr_member_report h;
    memset(&h, 0, sizeof(h));
    vs_wr_bytes(out, &h, sizeof(h)); /* patched below */
    const struct fwd_member *lists[2] = {c, e};
    size_t counts[2] = {nc, ne};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            struct fwd_member m = lists[l][i];
            m.conn_id = 0;
            vs_wr_bytes(out, &m, sizeof(m));
        }
    size_t body_len = out->len - start - VS_HEADER_SIZE;
    h.f.cluster = cluster;
    h.f.size = (uint32_t)(VS_HEADER_SIZE + body_len);
    h.f.view = view;
    h.f.release = VS_WIRE_FORMAT_VERSION;
    h.f.command = VS_CMD_MEMBER_REPORT;
    h.f.replica = self;
    h.incarnation = incarnation;
    h.seq = seq;
    h.claims = (uint32_t)nc;
    h.events = (uint32_t)ne;
    h.flags = flags;
    h.f.checksum_body =
        vs_body_checksum(out->data + start + VS_HEADER_SIZE, body_len);
    vs_frame_seal((struct vs_header *)&h);
    memcpy(out->data + start, &h, sizeof(h));
}

int
forward0_decode_report(const void *frame, size_t len, uint8_t from,
                       struct vs_u128 cluster, struct vs_hdr_member_report *h,
                       const struct fwd_member **entries)
{
    if (forward0_verify(frame, len, cluster, VS_CMD_MEMBER_REPORT,
                        (struct vs_header *)h) != 0 ||
        h->f.replica != from)
        return -EBADMSG;
    uint64_t n = (uint64_t)h->claims + h->events;
    if (n * VS_MEMBER_ENTRY_SIZE != len - VS_HEADER_SIZE ||
        (h->flags & ~VS_MEMBER_REPORT_COMPLETE) != 0)
        return -EBADMSG;
    *entries =
        (const struct fwd_member *)((const uint8_t *)frame + VS_HEADER_SIZE);
    return 0;
}
