/*
 * shard/storage/vsr_state.c - encode/decode of the VsrState payload
 * (version 1: 66 bytes, version 2: 330 bytes and version 3: 338 bytes,
 * read only; version 4: 594 bytes).
 * Pure functions over explicit little-endian offsets (never a struct
 * memcpy, so padding can never leak into the format). Any process.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/checksum.h"
#include "shard/storage/vsr_state.h"

static void
put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t
get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void
vsr_state_encode(const struct vs_vsr_state *s, uint8_t out[VSR_STATE_SIZE])
{
    put_u64(out + 0, s->cluster.lo);
    put_u64(out + 8, s->cluster.hi);
    out[16] = s->replica_id;
    out[17] = s->replica_count;
    put_u32(out + 18, s->view);
    put_u32(out + 22, s->log_view);
    put_u64(out + 26, s->commit_max);
    put_u64(out + 34, s->checkpoint_op);
    put_u64(out + 42, s->checkpoint_checksum.lo);
    put_u64(out + 50, s->checkpoint_checksum.hi);
    put_u64(out + 58, s->offset_frontier);
    put_u64(out + 66, s->faulty_op);
    /* the header is itself a little-endian wire struct (common/wire.h) */
    memcpy(out + 74, &s->checkpoint_prepare, VS_HEADER_SIZE);
    put_u64(out + 330, s->nonack_op);
    memcpy(out + 338, &s->faulty_prepare, VS_HEADER_SIZE);
}

int
vsr_state_has_checkpoint_prepare(const struct vs_vsr_state *s)
{
    return !vs_u128_is_zero(s->checkpoint_prepare.f.checksum);
}

int
vsr_state_has_faulty_prepare(const struct vs_vsr_state *s)
{
    return !vs_u128_is_zero(s->faulty_prepare.f.checksum);
}

static enum vsr_state_error fail_with(enum vsr_state_error e, char *reason,
                                      size_t reason_len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum vsr_state_error
fail_with(enum vsr_state_error e, char *reason, size_t reason_len,
          const char *fmt, ...)
{
    if (reason && reason_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, reason_len, fmt, ap);
        va_end(ap);
    }
    return e;
}

enum vsr_state_error
vsr_state_decode(uint16_t version, const void *payload, size_t len,
                 struct vs_vsr_state *out, char *reason, size_t reason_len)
{
    const uint8_t *p = payload;
    size_t want;
    if (version == VSR_STATE_V1)
        want = VSR_STATE_V1_SIZE;
    else if (version == VSR_STATE_V2)
        want = VSR_STATE_V2_SIZE;
    else if (version == VSR_STATE_V3)
        want = VSR_STATE_V3_SIZE;
    else if (version == VSR_STATE_V4)
        want = VSR_STATE_V4_SIZE;
    else
        return fail_with(VSR_STATE_UNKNOWN_VERSION, reason, reason_len,
                         "VsrState format version %u is unknown to this "
                         "release (knows %u to %u)",
                         (unsigned)version, VSR_STATE_V1, VSR_STATE_V4);
    if (len != want)
        return fail_with(VSR_STATE_BAD_LENGTH, reason, reason_len,
                         "VsrState payload is %zu bytes, version %u has "
                         "%zu",
                         len, (unsigned)version, want);
    struct vs_vsr_state s;
    memset(&s, 0, sizeof(s));
    s.cluster.lo = get_u64(p + 0);
    s.cluster.hi = get_u64(p + 8);
    s.replica_id = p[16];
    s.replica_count = p[17];
    s.view = get_u32(p + 18);
    s.log_view = get_u32(p + 22);
    s.commit_max = get_u64(p + 26);
    s.checkpoint_op = get_u64(p + 34);
    s.checkpoint_checksum.lo = get_u64(p + 42);
    s.checkpoint_checksum.hi = get_u64(p + 50);
    s.offset_frontier = get_u64(p + 58);
    if (version >= VSR_STATE_V2) {
        s.faulty_op = get_u64(p + 66);
        memcpy(&s.checkpoint_prepare, p + 74, VS_HEADER_SIZE);
        /* version 2 had one mark for both meanings: never nacked */
        s.nonack_op = s.faulty_op;
    }
    if (version >= VSR_STATE_V3)
        s.nonack_op = get_u64(p + 330);
    if (version >= VSR_STATE_V4)
        memcpy(&s.faulty_prepare, p + 338, VS_HEADER_SIZE);
    if (s.log_view > s.view)
        return fail_with(VSR_STATE_LOG_VIEW_AHEAD, reason, reason_len,
                         "VsrState log_view %u is ahead of view %u", s.log_view,
                         s.view);
    if (s.replica_count == 0 || s.replica_count > VS_REPLICAS_MAX ||
        s.replica_id >= s.replica_count)
        return fail_with(VSR_STATE_BAD_REPLICA, reason, reason_len,
                         "VsrState replica id %u / replica count %u is "
                         "impossible",
                         (unsigned)s.replica_id, (unsigned)s.replica_count);
    if (vsr_state_has_checkpoint_prepare(&s) &&
        (s.checkpoint_prepare.f.command != VS_CMD_PREPARE ||
         s.checkpoint_prepare.op != s.checkpoint_op ||
         !vs_prepare_verify_identity(&s.checkpoint_prepare)))
        return fail_with(VSR_STATE_BAD_CHECKPOINT_PREPARE, reason, reason_len,
                         "VsrState checkpoint prepare (op %llu) does not "
                         "verify as the prepare of checkpoint op %llu",
                         (unsigned long long)s.checkpoint_prepare.op,
                         (unsigned long long)s.checkpoint_op);
    if (s.nonack_op > s.faulty_op)
        return fail_with(VSR_STATE_BAD_FAULTY_RANGE, reason, reason_len,
                         "VsrState never-nacked op %llu is above the faulty "
                         "range's top %llu",
                         (unsigned long long)s.nonack_op,
                         (unsigned long long)s.faulty_op);
    if (vsr_state_has_faulty_prepare(&s) &&
        (s.faulty_prepare.f.command != VS_CMD_PREPARE ||
         s.faulty_prepare.op == 0 || s.faulty_prepare.op > s.faulty_op ||
         !vs_prepare_verify_identity(&s.faulty_prepare)))
        return fail_with(VSR_STATE_BAD_FAULTY_PREPARE, reason, reason_len,
                         "VsrState faulty prepare (op %llu) does not verify "
                         "as a prepare within the faulty range (top %llu)",
                         (unsigned long long)s.faulty_prepare.op,
                         (unsigned long long)s.faulty_op);
    *out = s;
    if (reason && reason_len)
        reason[0] = '\0';
    return VSR_STATE_OK;
}

const char *
vsr_state_error_name(enum vsr_state_error e)
{
    switch (e) {
    case VSR_STATE_OK:
        return "ok";
    case VSR_STATE_UNKNOWN_VERSION:
        return "unknown version";
    case VSR_STATE_BAD_LENGTH:
        return "bad length";
    case VSR_STATE_LOG_VIEW_AHEAD:
        return "log_view ahead of view";
    case VSR_STATE_BAD_REPLICA:
        return "bad replica id/count";
    case VSR_STATE_BAD_CHECKPOINT_PREPARE:
        return "bad checkpoint prepare";
    case VSR_STATE_BAD_FAULTY_RANGE:
        return "bad faulty range";
    case VSR_STATE_BAD_FAULTY_PREPARE:
        return "bad faulty prepare";
    }
    return "unknown";
}
