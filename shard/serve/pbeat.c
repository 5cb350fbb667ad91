/*
 * shard/serve/pbeat.c - Commit / Pong frames to beat entries and back;
 * the rules are in pbeat.h.
 * Process: any (pure code).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/checksum.h"
#include "shard/serve/pbeat.h"

int
pbeat_to_frame(const struct beat_entry *e, const struct vs_u128 *cluster,
               uint32_t release, struct vs_header *out)
{
    memset(out, 0, sizeof(*out));
    out->f.cluster = *cluster;
    out->f.size = VS_HEADER_SIZE;
    out->f.view = e->view;
    out->f.release = release;
    out->f.replica = e->member;
    if (e->kind == BEAT_KIND_COMMIT) {
        struct vs_hdr_commit *c = (struct vs_hdr_commit *)out;
        out->f.command = VS_CMD_COMMIT;
        c->commit_checksum = e->checksum;
        c->timestamp_monotonic = e->timestamp;
        c->commit = e->commit;
        c->checkpoint_op = e->op;
        c->group = e->group;
    } else if (e->kind == BEAT_KIND_ACK && e->op == 0 &&
               vs_u128_is_zero(e->checksum)) {
        struct vs_hdr_pong *p = (struct vs_hdr_pong *)out;
        out->f.command = VS_CMD_PONG;
        p->timestamp_monotonic = e->timestamp;
        p->commit_min = e->commit;
        p->group = e->group;
    } else {
        return -EINVAL;
    }
    vs_frame_seal(out);
    return 0;
}

int
pbeat_from_frame(const void *frame, size_t len, const struct vs_u128 *cluster,
                 uint32_t release, struct beat_entry *out)
{
    if (len != VS_HEADER_SIZE)
        return -ENOTSUP;
    struct vs_header h;
    memcpy(&h, frame, sizeof(h)); /* the frame may be unaligned */
    struct beat_entry e;
    memset(&e, 0, sizeof(e));
    e.view = h.f.view;
    e.member = h.f.replica;
    if (h.f.command == VS_CMD_COMMIT) {
        const struct vs_hdr_commit *c = (const struct vs_hdr_commit *)&h;
        e.kind = BEAT_KIND_COMMIT;
        e.group = c->group;
        e.commit = c->commit;
        e.op = c->checkpoint_op;
        e.timestamp = c->timestamp_monotonic;
        e.checksum = c->commit_checksum;
    } else if (h.f.command == VS_CMD_PONG) {
        const struct vs_hdr_pong *p = (const struct vs_hdr_pong *)&h;
        e.kind = BEAT_KIND_ACK;
        e.group = p->group;
        e.commit = p->commit_min;
        e.timestamp = p->timestamp_monotonic;
    } else {
        return -ENOTSUP;
    }
    /* exactly what the receiver will rebuild, or the frame goes as is */
    struct vs_header back;
    if (pbeat_to_frame(&e, cluster, release, &back) != 0 ||
        memcmp(&back, &h, sizeof(h)) != 0)
        return -ENOTSUP;
    *out = e;
    return 0;
}
