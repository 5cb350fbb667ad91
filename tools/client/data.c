/*
 * tools/client/data.c - the data-plane commands of the client library:
 * SendMessages, PollMessages, consumer offsets, consumer groups and
 * FlushUnsavedBuffer (iggy-client-protocol.md §5.6-5.7, -2.md §5-§7).
 *
 * Role: encode the body (tools/client/batch.c), send it through vsc_call
 * (numbering: SendMessages 160 and Store/DeleteOffset 161/162 and the
 * NonReplicated reads keep the current request number; Create/Delete/
 * Join/LeaveGroup are metadata ops and advance it), decode the reply.
 * Sends are at-least-once (see vsc.h): a send whose reply was lost is
 * resent by vsc_call after a reconnect and may then be stored twice.
 * Invariants: a decode failure returns -EPROTO and leaves no allocation
 * in the caller's struct; "not found" reads (empty body) return 0 with
 * *found = 0. Callers: any process; one handle per thread.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "common/clock.h"
#include "common/mem.h"
#include "tools/client/vsc.h"
#include "tools/client/vsc_int.h"

static int
vsc_data_bad(struct vsc *c)
{
    return vsc_fail(c, -EPROTO, "undecodable reply");
}

/* The SendMessages call of a frame begun by vsc_frame_begin (body head
 * appended, the batch there or in `batch`). */
static int
vsc_send_frame(struct vsc *c, const uint8_t *batch, size_t batch_len,
               struct vsc_sent *out)
{
    struct vsc_reply rep;
    struct vsc_sent tmp;
    int rc = vsc_call_frame(c, VSC_SEND_MESSAGES, batch, batch_len, &rep);
    if (rc != 0)
        return rc;
    if (vsc_decode_sent(rep.payload, rep.payload_len, out ? out : &tmp) != 0)
        return vsc_data_bad(c);
    return 0;
}

int
vsc_send_batch(struct vsc *c, const struct vsc_id *stream,
               const struct vsc_id *topic, const struct vsc_partitioning *p,
               uint32_t count, const uint8_t *batch, size_t batch_len,
               struct vsc_sent *out)
{
    /* the batch goes to the socket from the caller's buffer */
    vsc_body_send(vsc_frame_begin(c), stream, topic, p, count, NULL, 0);
    return vsc_send_frame(c, batch, batch_len, out);
}

int
vsc_send(struct vsc *c, const struct vsc_id *stream, const struct vsc_id *topic,
         const struct vsc_partitioning *p, struct vsc_msg *msgs, uint32_t n,
         struct vsc_sent *out)
{
    struct vs_wbuf *b;
    if (n == 0)
        return vsc_fail(c, -EINVAL, "no messages to send");
    if (p->kind == VSC_PART_KEY && p->key_len == 0)
        return vsc_fail(c, -EINVAL, "message key must be 1..255 bytes");
    /* the batch is built in the frame, after its header and body head */
    b = vsc_frame_begin(c);
    vsc_body_send(b, stream, topic, p, n, NULL, 0);
    if (vsc_batch_build(b, msgs, n, vs_realtime_us()) == 0 ||
        b->len > VS_FRAME_MAX)
        return vsc_fail(c, -E2BIG, "batch larger than a frame");
    return vsc_send_frame(c, NULL, 0, out);
}

int
vsc_poll(struct vsc *c, const struct vsc_id *stream, const struct vsc_id *topic,
         const struct vsc_poll_args *a, struct vsc_polled *out)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc;
    memset(out, 0, sizeof *out);
    vsc_body_poll(b, stream, topic, a);
    rc = vsc_call(c, VSC_POLL_MESSAGES, b->data, b->len, &rep);
    if (rc != 0)
        return rc;
    /* decoded where it was received: the frame's buffer becomes the
     * result's (no copy of the body) */
    size_t flen;
    uint8_t *frame = vsc_reply_take(c, &flen);
    size_t off = (size_t)(rep.payload - frame);
    VS_ASSERT(rep.payload >= frame && off + rep.payload_len <= flen);
    rc = vsc_poll_decode_owned(frame, off, rep.payload_len, !a->skip_checksums,
                               out);
    if (rc == -EBADMSG)
        return vsc_fail(c, rc, "a polled message failed its checksum");
    if (rc != 0)
        return vsc_data_bad(c);
    return 0;
}

/* ---- consumer offsets ---- */

static void
vsc_wr_offset_key(struct vs_wbuf *b, const struct vsc_consumer *consumer,
                  const struct vsc_id *stream, const struct vsc_id *topic,
                  int has_partition, uint32_t partition_id)
{
    vs_wr_u8(b, consumer->kind);
    vsc_wr_id(b, &consumer->id);
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    vs_wr_u8(b, has_partition ? 1 : 0);
    vs_wr_u32(b, has_partition ? partition_id : 0);
}

int
vsc_offset_get(struct vsc *c, const struct vsc_consumer *consumer,
               const struct vsc_id *stream, const struct vsc_id *topic,
               int has_partition, uint32_t partition_id, struct vsc_offset *out,
               int *found)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    struct vs_rbuf r;
    int rc;
    *found = 0;
    memset(out, 0, sizeof *out);
    vsc_wr_offset_key(b, consumer, stream, topic, has_partition, partition_id);
    rc = vsc_call(c, VSC_GET_CONSUMER_OFFSET, b->data, b->len, &rep);
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    out->partition_id = vs_rd_u32(&r);
    out->current_offset = vs_rd_u64(&r);
    out->stored_offset = vs_rd_u64(&r);
    if (r.err)
        return vsc_data_bad(c);
    *found = 1;
    return 0;
}

int
vsc_offset_store(struct vsc *c, const struct vsc_consumer *consumer,
                 const struct vsc_id *stream, const struct vsc_id *topic,
                 int has_partition, uint32_t partition_id, uint64_t offset)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    vsc_wr_offset_key(b, consumer, stream, topic, has_partition, partition_id);
    vs_wr_u64(b, offset);
    vs_wr_u8(b, 1); /* ack: Quorum, as the SDK sends */
    return vsc_call(c, VSC_STORE_CONSUMER_OFFSET, b->data, b->len, &rep);
}

int
vsc_offset_delete(struct vsc *c, const struct vsc_consumer *consumer,
                  const struct vsc_id *stream, const struct vsc_id *topic,
                  int has_partition, uint32_t partition_id)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    vsc_wr_offset_key(b, consumer, stream, topic, has_partition, partition_id);
    vs_wr_u8(b, 1);
    return vsc_call(c, VSC_DELETE_CONSUMER_OFFSET, b->data, b->len, &rep);
}

/* ---- consumer groups ---- */

static int
vsc_group_call(struct vsc *c, uint32_t code, const struct vsc_id *stream,
               const struct vsc_id *topic, const struct vsc_id *group,
               struct vsc_reply *rep)
{
    struct vs_wbuf *b = vsc_body(c);
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    vsc_wr_id(b, group);
    return vsc_call(c, code, b->data, b->len, rep);
}

int
vsc_group_create(struct vsc *c, const struct vsc_id *stream,
                 const struct vsc_id *topic, const char *name,
                 struct vsc_group *out)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    size_t nl = strlen(name);
    int rc;
    if (nl == 0 || nl > VSC_NAME_MAX)
        return vsc_fail(c, -EINVAL, "name must be 1..255 bytes");
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    vsc_wr_name(b, name);
    rc = vsc_call(c, VSC_CREATE_CONSUMER_GROUP, b->data, b->len, &rep);
    if (rc != 0 || out == NULL)
        return rc;
    if (vsc_decode_group(rep.payload, rep.payload_len, out, 1) != 0)
        return vsc_data_bad(c);
    return 0;
}

int
vsc_group_get(struct vsc *c, const struct vsc_id *stream,
              const struct vsc_id *topic, const struct vsc_id *group,
              struct vsc_group *out, int *found)
{
    struct vsc_reply rep;
    int rc =
        vsc_group_call(c, VSC_GET_CONSUMER_GROUP, stream, topic, group, &rep);
    *found = 0;
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    if (vsc_decode_group(rep.payload, rep.payload_len, out, 1) != 0)
        return vsc_data_bad(c);
    *found = 1;
    return 0;
}

static int
rec_group(struct vs_rbuf *r, void *e)
{
    return vsc_decode_group_at(r, e, 0);
}

int
vsc_group_list(struct vsc *c, const struct vsc_id *stream,
               const struct vsc_id *topic, struct vsc_group **out, size_t *n)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    int rc;
    *out = NULL;
    *n = 0;
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    rc = vsc_call(c, VSC_GET_CONSUMER_GROUPS, b->data, b->len, &rep);
    if (rc != 0)
        return rc;
    if (vsc_decode_records(rep.payload, rep.payload_len, sizeof **out,
                           rec_group, (void **)out, n) != 0)
        return vsc_data_bad(c);
    return 0;
}

int
vsc_group_delete(struct vsc *c, const struct vsc_id *stream,
                 const struct vsc_id *topic, const struct vsc_id *group)
{
    struct vsc_reply rep;
    return vsc_group_call(c, VSC_DELETE_CONSUMER_GROUP, stream, topic, group,
                          &rep);
}

int
vsc_group_join(struct vsc *c, const struct vsc_id *stream,
               const struct vsc_id *topic, const struct vsc_id *group)
{
    struct vsc_reply rep;
    return vsc_group_call(c, VSC_JOIN_CONSUMER_GROUP, stream, topic, group,
                          &rep);
}

int
vsc_group_leave(struct vsc *c, const struct vsc_id *stream,
                const struct vsc_id *topic, const struct vsc_id *group)
{
    struct vsc_reply rep;
    return vsc_group_call(c, VSC_LEAVE_CONSUMER_GROUP, stream, topic, group,
                          &rep);
}

int
vsc_group_sync(struct vsc *c, const struct vsc_id *stream,
               const struct vsc_id *topic, const struct vsc_id *group,
               uint64_t *generation, uint32_t **parts, size_t *n, int *member)
{
    struct vsc_reply rep;
    struct vs_rbuf r;
    uint32_t count, i;
    int rc =
        vsc_group_call(c, VSC_SYNC_CONSUMER_GROUP, stream, topic, group, &rep);
    *parts = NULL;
    *n = 0;
    *member = 0;
    *generation = 0;
    if (rc != 0 || rep.payload_len == 0)
        return rc;
    vs_rbuf_init(&r, rep.payload, rep.payload_len);
    *generation = vs_rd_u64(&r);
    count = vs_rd_u32(&r);
    if (r.err || vs_rbuf_left(&r) != (size_t)count * 4u)
        return vsc_data_bad(c);
    if (count > 0) {
        *parts = vs_xmalloc((size_t)count * sizeof **parts);
        for (i = 0; i < count; i++)
            (*parts)[i] = vs_rd_u32(&r);
    }
    *n = count;
    *member = 1;
    return 0;
}

int
vsc_flush(struct vsc *c, const struct vsc_id *stream,
          const struct vsc_id *topic, uint32_t partition_id, int fsync)
{
    struct vsc_reply rep;
    struct vs_wbuf *b = vsc_body(c);
    vsc_wr_id(b, stream);
    vsc_wr_id(b, topic);
    vs_wr_u32(b, partition_id);
    vs_wr_u8(b, fsync ? 1 : 0);
    return vsc_call(c, VSC_FLUSH_UNSAVED_BUFFER, b->data, b->len, &rep);
}
