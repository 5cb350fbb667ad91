/*
 * tools/client/commands.c - one function per Iggy command.
 *
 * Role: encode the command's body (protocol-2 §1-§4), send it through
 * vsc_call (which applies the numbering, resend and error rules), decode
 * the reply payload into the records of vsc.h.
 * Invariants: a decode failure returns -EPROTO and leaves no allocation
 * in the caller's struct; "not found" reads (empty body) return 0 with
 * *found = 0. Callers: any process; one handle per thread.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/mem.h"
#include "tools/client/vsc.h"
#include "tools/client/vsc_int.h"

static int
vsc_bad_reply(struct vsc *c)
{
    return vsc_fail(c, -EPROTO, "undecodable reply");
}

static int
vsc_name_ok(struct vsc *c, const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > VSC_NAME_MAX)
        return vsc_fail(c, -EINVAL, "name must be 1..255 bytes");
    return 0;
}

int
vsc_ping(struct vsc *c)
{
    struct vsc_reply r;
    int rc = vsc_call(c, VSC_PING, NULL, 0, &r);
    if (rc != 0)
        return rc;
    return r.payload_len == 0 ? 0 : vsc_bad_reply(c);
}

/* [len u32][bytes] into a 256-byte buffer (truncated). */
static void
vsc_rd_str32(struct vs_rbuf *r, char out[256])
{
    uint32_t n = vs_rd_u32(r);
    const uint8_t *p = vs_rd_bytes(r, n);
    size_t k = n < 255 ? n : 255;
    out[0] = '\0';
    if (p == NULL)
        return;
    memcpy(out, p, k);
    out[k] = '\0';
}

static float
vsc_rd_f32(struct vs_rbuf *r)
{
    uint32_t v = vs_rd_u32(r);
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

int
vsc_stats(struct vsc *c, struct vsc_stats *s)
{
    struct vsc_reply rep;
    struct vs_rbuf r;
    int rc = vsc_call(c, VSC_GET_STATS, NULL, 0, &rep);
    if (rc != 0)
        return rc;
    memset(s, 0, sizeof *s);
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    s->process_id = vs_rd_u32(&r);
    s->cpu_usage = vsc_rd_f32(&r);
    s->total_cpu_usage = vsc_rd_f32(&r);
    s->memory_usage = vs_rd_u64(&r);
    s->total_memory = vs_rd_u64(&r);
    s->available_memory = vs_rd_u64(&r);
    s->run_time = vs_rd_u64(&r);
    s->start_time = vs_rd_u64(&r);
    s->read_bytes = vs_rd_u64(&r);
    s->written_bytes = vs_rd_u64(&r);
    s->messages_size_bytes = vs_rd_u64(&r);
    s->streams_count = vs_rd_u32(&r);
    s->topics_count = vs_rd_u32(&r);
    s->partitions_count = vs_rd_u32(&r);
    s->segments_count = vs_rd_u32(&r);
    s->messages_count = vs_rd_u64(&r);
    s->clients_count = vs_rd_u32(&r);
    s->consumer_groups_count = vs_rd_u32(&r);
    vsc_rd_str32(&r, s->hostname);
    vsc_rd_str32(&r, s->os_name);
    vsc_rd_str32(&r, s->os_version);
    vsc_rd_str32(&r, s->kernel_version);
    return r.err ? vsc_bad_reply(c) : 0;
}

void
vsc_cluster_fini(struct vsc_cluster *cl)
{
    if (cl == NULL)
        return;
    free(cl->nodes);
    cl->nodes = NULL;
    cl->n_nodes = 0;
}

int
vsc_cluster(struct vsc *c, struct vsc_cluster *cl)
{
    struct vsc_reply rep;
    struct vs_rbuf r;
    uint32_t n, i;
    int rc = vsc_call(c, VSC_GET_CLUSTER_METADATA, NULL, 0, &rep);
    if (rc != 0)
        return rc;
    memset(cl, 0, sizeof *cl);
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    vsc_rd_str32(&r, cl->name);
    n = vs_rd_u32(&r);
    /* A node entry is at least 18 bytes: bound the allocation. */
    if (r.err || n > vs_rbuf_left(&r) / 18)
        return vsc_bad_reply(c);
    cl->nodes = vs_xcalloc(n ? n : 1, sizeof *cl->nodes);
    for (i = 0; i < n; i++) {
        struct vsc_node *nd = &cl->nodes[i];
        vsc_rd_str32(&r, nd->name);
        vsc_rd_str32(&r, nd->ip);
        nd->tcp = vs_rd_u16(&r);
        nd->quic = vs_rd_u16(&r);
        nd->http = vs_rd_u16(&r);
        nd->websocket = vs_rd_u16(&r);
        nd->role = vs_rd_u8(&r);
        nd->status = vs_rd_u8(&r);
    }
    cl->n_nodes = n;
    if (r.err) {
        vsc_cluster_fini(cl);
        return vsc_bad_reply(c);
    }
    return 0;
}

int
vsc_session_status(struct vsc *c, struct vsc_session_status *out)
{
    struct vsc_reply rep;
    struct vs_rbuf r;
    int rc = vsc_call(c, VSC_GET_SESSION_STATUS, NULL, 0, &rep);
    if (rc != 0)
        return rc;
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    out->created_op = vs_rd_u64(&r);
    out->epoch = vs_rd_u64(&r);
    out->watermark = vs_rd_u64(&r);
    if (r.err || r.off != rep.payload_len)
        return vsc_bad_reply(c);
    return 0;
}

int
vsc_replica_status(struct vsc *c, struct vsc_replica_status *out)
{
    struct vsc_reply rep;
    struct vs_rbuf r;
    int rc = vsc_call(c, VSC_GET_REPLICA_STATUS, NULL, 0, &rep);
    if (rc != 0)
        return rc;
    memset(out, 0, sizeof *out);
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    out->count = vs_rd_u32(&r);
    out->self = vs_rd_u8(&r);
    out->status = vs_rd_u8(&r);
    out->leader = vs_rd_u8(&r);
    out->view = vs_rd_u32(&r);
    out->log_view = vs_rd_u32(&r);
    out->op = vs_rd_u64(&r);
    out->commit_min = vs_rd_u64(&r);
    out->commit_max = vs_rd_u64(&r);
    out->checkpoint_op = vs_rd_u64(&r);
    out->checkpoint_checksum = vs_rd_u128(&r);
    if (r.err || out->count > 32)
        return vsc_bad_reply(c);
    for (uint32_t i = 0; i < out->count; i++) {
        uint32_t n = vs_rd_u32(&r);
        const uint8_t *a = vs_rd_bytes(&r, n);
        if (a == NULL || n >= sizeof out->nodes[i].addr)
            return vsc_bad_reply(c);
        memcpy(out->nodes[i].addr, a, n);
        out->nodes[i].addr[n] = '\0';
        out->nodes[i].role = vs_rd_u8(&r);
        out->nodes[i].status = vs_rd_u8(&r);
        out->nodes[i].link = vs_rd_u8(&r);
        out->nodes[i].bytes_in = vs_rd_u64(&r);
        out->nodes[i].bytes_out = vs_rd_u64(&r);
    }
    if (r.err)
        return vsc_bad_reply(c);
    if (vs_rbuf_left(&r) == 0)
        return 0; /* no transfer trailer */
    /* version 1; a later version only appends to it */
    if (vs_rd_u8(&r) < 1)
        return vsc_bad_reply(c);
    out->xfer.stage = vs_rd_u8(&r);
    out->xfer.peer = vs_rd_u8(&r);
    out->xfer.fetched = vs_rd_u64(&r);
    out->xfer.total = vs_rd_u64(&r);
    out->xfer.sessions = vs_rd_u64(&r);
    out->xfer.completed = vs_rd_u64(&r);
    out->xfer.abandoned = vs_rd_u64(&r);
    out->xfer.last_bytes = vs_rd_u64(&r);
    out->xfer.last_ms = vs_rd_u64(&r);
    uint32_t n = vs_rd_u32(&r);
    const uint8_t *a = vs_rd_bytes(&r, n);
    if (r.err || a == NULL || n >= sizeof out->xfer.last)
        return vsc_bad_reply(c);
    memcpy(out->xfer.last, a, n);
    out->xfer.last[n] = '\0';
    out->has_xfer = 1;
    return 0;
}

void
vsc_topic_replicas_fini(struct vsc_topic_replicas *r)
{
    free(r->partitions);
    r->partitions = NULL;
    r->n_partitions = 0;
}

int
vsc_topic_replicas(struct vsc *c, const struct vsc_id *stream,
                   const struct vsc_id *topic, struct vsc_topic_replicas *out,
                   int *found)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    struct vs_rbuf r;
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    *found = 0;
    memset(out, 0, sizeof *out);
    int rc = vsc_call(c, VSC_GET_TOPIC_REPLICAS, b->data, b->len, &rep);
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    out->stream_id = vs_rd_u32(&r);
    out->topic_id = vs_rd_u32(&r);
    out->replication_factor = vs_rd_u8(&r);
    out->nodes = vs_rd_u8(&r);
    uint32_t n = vs_rd_u32(&r);
    /* each entry is at least 15 bytes: a count beyond the body is bad */
    if (r.err || n > vs_rbuf_left(&r) / 15)
        return vsc_bad_reply(c);
    out->partitions = calloc(n ? n : 1, sizeof *out->partitions);
    if (out->partitions == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < n && !r.err; i++) {
        struct vsc_partition_replicas *p = &out->partitions[i];
        p->id = vs_rd_u32(&r);
        p->group_id = vs_rd_u64(&r);
        p->count = vs_rd_u8(&r);
        if (p->count > 32) {
            r.err = -EPROTO;
            break;
        }
        const uint8_t *m = p->count ? vs_rd_bytes(&r, p->count) : NULL;
        if (m != NULL)
            memcpy(p->replicas, m, p->count);
        p->primary = vs_rd_u8(&r);
    }
    out->n_partitions = n;
    if (r.err) {
        vsc_topic_replicas_fini(out);
        return vsc_bad_reply(c);
    }
    *found = 1;
    return 0;
}

static void
vsc_rd_client_info(struct vs_rbuf *r, struct vsc_client_info *ci)
{
    uint32_t n;
    const uint8_t *p;
    memset(ci, 0, sizeof *ci);
    ci->client_id = vs_rd_u32(r);
    ci->user_id = vs_rd_u32(r);
    ci->transport = vs_rd_u8(r);
    n = vs_rd_u32(r);
    p = vs_rd_bytes(r, n);
    if (p != NULL) {
        size_t k = n < VSC_NAME_MAX ? n : VSC_NAME_MAX;
        memcpy(ci->address, p, k);
        ci->address[k] = '\0';
    }
    ci->groups_count = vs_rd_u32(r);
}

static int
vsc_client_details(struct vsc *c, const struct vsc_reply *rep,
                   struct vsc_client_info *ci)
{
    struct vs_rbuf r;
    vs_rbuf_init(&r, rep->payload, rep->payload_len);
    vsc_rd_client_info(&r, ci);
    if (r.err || vs_rbuf_left(&r) / 12 < ci->groups_count)
        return vsc_bad_reply(c);
    return 0;
}

int
vsc_me(struct vsc *c, struct vsc_client_info *ci)
{
    struct vsc_reply rep;
    int rc = vsc_call(c, VSC_GET_ME, NULL, 0, &rep);
    if (rc != 0)
        return rc;
    return vsc_client_details(c, &rep, ci);
}

int
vsc_client_get(struct vsc *c, uint32_t id, struct vsc_client_info *ci,
               int *found)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc;
    vs_wr_u32(b, id);
    rc = vsc_call(c, VSC_GET_CLIENT, b->data, b->len, &rep);
    *found = 0;
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    *found = 1;
    return vsc_client_details(c, &rep, ci);
}

/* Record decoders for vsc_decode_records. */
static int
rec_client(struct vs_rbuf *r, void *e)
{
    vsc_rd_client_info(r, e);
    return r->err;
}

static int
rec_stream(struct vs_rbuf *r, void *e)
{
    return vsc_decode_stream_at(r, e);
}

static int
rec_user(struct vs_rbuf *r, void *e)
{
    return vsc_decode_user_at(r, e, 0);
}

static int
rec_pat(struct vs_rbuf *r, void *e)
{
    struct vsc_pat *t = e;
    uint8_t len = vs_rd_u8(r);
    const uint8_t *p = vs_rd_bytes(r, len);
    t->expiry_at = vs_rd_u64(r);
    if (r->err || p == NULL)
        return -1;
    memcpy(t->name, p, len);
    t->name[len] = '\0';
    return 0;
}

/* A body-less list command whose reply is a run of records: *out (heap)
 * and *n, or -EPROTO with nothing allocated. */
static int
vsc_records_call(struct vsc *c, uint32_t code, size_t elem_size,
                 int (*rec)(struct vs_rbuf *, void *), void **out, size_t *n)
{
    struct vsc_reply rep;
    int rc = vsc_call(c, code, NULL, 0, &rep);
    *out = NULL;
    *n = 0;
    if (rc != 0)
        return rc;
    if (vsc_decode_records(rep.payload, rep.payload_len, elem_size, rec, out,
                           n) != 0)
        return vsc_bad_reply(c);
    return 0;
}

int
vsc_clients(struct vsc *c, struct vsc_client_info **out, size_t *n)
{
    return vsc_records_call(c, VSC_GET_CLIENTS, sizeof **out, rec_client,
                            (void **)out, n);
}

/* ---- streams ---- */

int
vsc_stream_create(struct vsc *c, const char *name, struct vsc_stream *out)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc = vsc_name_ok(c, name);
    if (rc != 0)
        return rc;
    vsc_wr_name(b, name);
    rc = vsc_call(c, VSC_CREATE_STREAM, b->data, b->len, &rep);
    if (rc != 0 || out == NULL)
        return rc;
    if (vsc_decode_stream(rep.payload, rep.payload_len, out, 0) != 0)
        return vsc_bad_reply(c);
    return 0;
}

int
vsc_stream_get(struct vsc *c, const struct vsc_id *id, struct vsc_stream *out,
               int *found)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc;
    vsc_wr_id(b, id);
    rc = vsc_call(c, VSC_GET_STREAM, b->data, b->len, &rep);
    *found = 0;
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    if (vsc_decode_stream(rep.payload, rep.payload_len, out, 1) != 0)
        return vsc_bad_reply(c);
    *found = 1;
    return 0;
}

int
vsc_stream_list(struct vsc *c, struct vsc_stream **out, size_t *n)
{
    return vsc_records_call(c, VSC_GET_STREAMS, sizeof **out, rec_stream,
                            (void **)out, n);
}

static int
vsc_id_call(struct vsc *c, uint32_t code, const struct vsc_id *a,
            const struct vsc_id *b2)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    vsc_wr_id(b, a);
    if (b2 != NULL)
        vsc_wr_id(b, b2);
    return vsc_call(c, code, b->data, b->len, &rep);
}

int
vsc_stream_update(struct vsc *c, const struct vsc_id *id, const char *name)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc = vsc_name_ok(c, name);
    if (rc != 0)
        return rc;
    vsc_wr_id(b, id);
    vsc_wr_name(b, name);
    return vsc_call(c, VSC_UPDATE_STREAM, b->data, b->len, &rep);
}

int
vsc_stream_delete(struct vsc *c, const struct vsc_id *id)
{
    return vsc_id_call(c, VSC_DELETE_STREAM, id, NULL);
}

int
vsc_stream_purge(struct vsc *c, const struct vsc_id *id)
{
    return vsc_id_call(c, VSC_PURGE_STREAM, id, NULL);
}

/* ---- topics ---- */

int
vsc_topic_create(struct vsc *c, const struct vsc_id *stream,
                 uint32_t partitions, const char *name, const uint8_t *opts,
                 size_t opts_len, struct vsc_topic *out)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc = vsc_name_ok(c, name);
    if (rc != 0)
        return rc;
    vsc_wr_id(b, stream);
    vs_wr_u32(b, partitions);
    vsc_wr_name(b, name);
    if (opts_len > 0)
        vs_wr_bytes(b, opts, opts_len);
    rc = vsc_call(c, VSC_CREATE_TOPIC, b->data, b->len, &rep);
    if (rc != 0 || out == NULL)
        return rc;
    if (vsc_decode_topic(rep.payload, rep.payload_len, out, 1) != 0)
        return vsc_bad_reply(c);
    return 0;
}

int
vsc_topic_get(struct vsc *c, const struct vsc_id *stream,
              const struct vsc_id *topic, struct vsc_topic *out, int *found)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc;
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    rc = vsc_call(c, VSC_GET_TOPIC, b->data, b->len, &rep);
    *found = 0;
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    if (vsc_decode_topic(rep.payload, rep.payload_len, out, 1) != 0)
        return vsc_bad_reply(c);
    *found = 1;
    return 0;
}

int
vsc_topic_list(struct vsc *c, const struct vsc_id *stream,
               struct vsc_topic **out, size_t *n)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    struct vs_rbuf r;
    uint32_t count, i;
    int rc;
    *out = NULL;
    *n = 0;
    vsc_wr_id(b, stream);
    rc = vsc_call(c, VSC_GET_TOPICS, b->data, b->len, &rep);
    if (rc != 0)
        return rc;
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    count = vs_rd_u32(&r);
    if (r.err || count > vs_rbuf_left(&r) / 58)
        return vsc_bad_reply(c);
    *out = vs_xcalloc(count ? count : 1, sizeof **out);
    for (i = 0; i < count; i++) {
        if (vsc_decode_topic_at(&r, &(*out)[i]) != 0) {
            size_t j;
            for (j = 0; j < i; j++)
                vsc_topic_fini(&(*out)[j]);
            free(*out);
            *out = NULL;
            return vsc_bad_reply(c);
        }
    }
    *n = count;
    return 0;
}

int
vsc_topic_update(struct vsc *c, const struct vsc_id *stream,
                 const struct vsc_id *topic, const char *name,
                 const uint8_t *opts, size_t opts_len)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc = vsc_name_ok(c, name);
    if (rc != 0)
        return rc;
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    vsc_wr_name(b, name);
    if (opts_len > 0)
        vs_wr_bytes(b, opts, opts_len);
    return vsc_call(c, VSC_UPDATE_TOPIC, b->data, b->len, &rep);
}

int
vsc_topic_delete(struct vsc *c, const struct vsc_id *stream,
                 const struct vsc_id *topic)
{
    return vsc_id_call(c, VSC_DELETE_TOPIC, stream, topic);
}

int
vsc_topic_purge(struct vsc *c, const struct vsc_id *stream,
                const struct vsc_id *topic)
{
    return vsc_id_call(c, VSC_PURGE_TOPIC, stream, topic);
}

static int
vsc_partitions_call(struct vsc *c, uint32_t code, const struct vsc_id *stream,
                    const struct vsc_id *topic, uint32_t count)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    vs_wr_u32(b, count);
    return vsc_call(c, code, b->data, b->len, &rep);
}

int
vsc_partitions_create(struct vsc *c, const struct vsc_id *stream,
                      const struct vsc_id *topic, uint32_t count)
{
    return vsc_partitions_call(c, VSC_CREATE_PARTITIONS, stream, topic, count);
}

int
vsc_partitions_delete(struct vsc *c, const struct vsc_id *stream,
                      const struct vsc_id *topic, uint32_t count)
{
    return vsc_partitions_call(c, VSC_DELETE_PARTITIONS, stream, topic, count);
}

/* ---- users ---- */

static void
vsc_wr_perms_block(struct vs_wbuf *b, const struct vsc_perms *perms)
{
    struct vs_wbuf pw;
    vs_wbuf_init(&pw);
    vsc_perms_encode(&pw, perms);
    vs_wr_u32(b, (uint32_t)pw.len);
    vs_wr_bytes(b, pw.data, pw.len);
    vs_wbuf_fini(&pw);
}

int
vsc_user_create(struct vsc *c, const char *name, const char *password,
                uint8_t status, const struct vsc_perms *perms,
                struct vsc_user *out)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc = vsc_name_ok(c, name);
    if (rc != 0 || (rc = vsc_name_ok(c, password)) != 0)
        return rc;
    vsc_wr_name(b, name);
    vsc_wr_name(b, password);
    vs_wr_u8(b, status);
    vs_wr_u8(b, perms != NULL);
    if (perms != NULL)
        vsc_wr_perms_block(b, perms);
    rc = vsc_call(c, VSC_CREATE_USER, b->data, b->len, &rep);
    explicit_bzero(b->data, b->len);
    if (rc != 0 || out == NULL)
        return rc;
    if (vsc_decode_user(rep.payload, rep.payload_len, out, 1) != 0)
        return vsc_bad_reply(c);
    return 0;
}

int
vsc_user_get(struct vsc *c, const struct vsc_id *id, struct vsc_user *out,
             int *found)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc;
    vsc_wr_id(b, id);
    rc = vsc_call(c, VSC_GET_USER, b->data, b->len, &rep);
    *found = 0;
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    if (vsc_decode_user(rep.payload, rep.payload_len, out, 1) != 0)
        return vsc_bad_reply(c);
    *found = 1;
    return 0;
}

int
vsc_user_list(struct vsc *c, struct vsc_user **out, size_t *n)
{
    return vsc_records_call(c, VSC_GET_USERS, sizeof **out, rec_user,
                            (void **)out, n);
}

int
vsc_user_update(struct vsc *c, const struct vsc_id *id, const char *name,
                uint8_t status)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    if (name != NULL && vsc_name_ok(c, name) != 0)
        return -EINVAL;
    vsc_wr_id(b, id);
    vs_wr_u8(b, name != NULL);
    if (name != NULL)
        vsc_wr_name(b, name);
    vs_wr_u8(b, status != 0);
    if (status != 0)
        vs_wr_u8(b, status);
    return vsc_call(c, VSC_UPDATE_USER, b->data, b->len, &rep);
}

int
vsc_user_delete(struct vsc *c, const struct vsc_id *id)
{
    return vsc_id_call(c, VSC_DELETE_USER, id, NULL);
}

int
vsc_user_passwd(struct vsc *c, const struct vsc_id *id, const char *current,
                const char *new_password)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc;
    if (strlen(current) > VSC_NAME_MAX || vsc_name_ok(c, new_password) != 0)
        return vsc_fail(c, -EINVAL, "password must be 1..255 bytes");
    vsc_wr_id(b, id);
    vsc_wr_name(b, current);
    vsc_wr_name(b, new_password);
    rc = vsc_call(c, VSC_CHANGE_PASSWORD, b->data, b->len, &rep);
    explicit_bzero(b->data, b->len);
    return rc;
}

int
vsc_user_permissions(struct vsc *c, const struct vsc_id *id,
                     const struct vsc_perms *perms)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    vsc_wr_id(b, id);
    vs_wr_u8(b, perms != NULL);
    if (perms != NULL)
        vsc_wr_perms_block(b, perms);
    return vsc_call(c, VSC_UPDATE_PERMISSIONS, b->data, b->len, &rep);
}

/* ---- personal access tokens ---- */

int
vsc_pat_create(struct vsc *c, const char *name, uint64_t expiry,
               char token[256])
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    struct vs_rbuf r;
    uint8_t n;
    const uint8_t *p;
    int rc = vsc_name_ok(c, name);
    if (rc != 0)
        return rc;
    vsc_wr_name(b, name);
    vs_wr_u64(b, expiry);
    rc = vsc_call(c, VSC_CREATE_PAT, b->data, b->len, &rep);
    if (rc != 0)
        return rc;
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    n = vs_rd_u8(&r);
    p = vs_rd_bytes(&r, n);
    if (p == NULL)
        return vsc_bad_reply(c);
    memcpy(token, p, n);
    token[n] = '\0';
    return 0;
}

int
vsc_pat_list(struct vsc *c, struct vsc_pat **out, size_t *n)
{
    return vsc_records_call(c, VSC_GET_PATS, sizeof **out, rec_pat,
                            (void **)out, n);
}

int
vsc_pat_delete(struct vsc *c, const char *name)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc = vsc_name_ok(c, name);
    if (rc != 0)
        return rc;
    vsc_wr_name(b, name);
    return vsc_call(c, VSC_DELETE_PAT, b->data, b->len, &rep);
}
