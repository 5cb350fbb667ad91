/*
 * shard/storage/vsr_state.c - encode/decode of the 66-byte VsrState.
 * Pure functions over explicit little-endian offsets (never a struct
 * memcpy, so padding can never leak into the format). Any process.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    if (version != VSR_STATE_VERSION)
        return fail_with(VSR_STATE_UNKNOWN_VERSION, reason, reason_len,
                         "VsrState format version %u is unknown to this "
                         "release (knows %u)",
                         (unsigned)version, VSR_STATE_VERSION);
    if (len != VSR_STATE_SIZE)
        return fail_with(VSR_STATE_BAD_LENGTH, reason, reason_len,
                         "VsrState payload is %zu bytes, version 1 has "
                         "%u",
                         len, VSR_STATE_SIZE);
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
    }
    return "unknown";
}
