/*
 * shard/vsr/frame_group.c - which consensus group a replica frame
 * belongs to: the one decoder of the header's group field, shared by the
 * engine (it drops a frame of another group) and the bindings that route
 * frames to one of many groups (shard/serve/pgroups.c).
 *
 * Invariants: pure, no I/O; reads only the header (the caller checked
 * that 256 bytes are there; the group field is not trusted before the
 * frame's seal, which the engine checks).
 * Callers: any process.
 */
#include "config.h"

#include "shard/vsr/engine.h"

enum vsr_frame_kind
vsr_frame_group(const struct vs_header *h, uint64_t *group)
{
    switch (h->f.command) {
    case VS_CMD_PREPARE:
    case VS_CMD_REPAIR_PREPARE:
        *group = ((const struct vs_hdr_prepare *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_PREPARE_OK:
        *group = ((const struct vs_hdr_prepare_ok *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_COMMIT:
        *group = ((const struct vs_hdr_commit *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_PONG:
        *group = ((const struct vs_hdr_pong *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_START_VIEW_CHANGE:
        *group = ((const struct vs_hdr_start_view_change *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_DO_VIEW_CHANGE:
        *group = ((const struct vs_hdr_do_view_change *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_START_VIEW:
        *group = ((const struct vs_hdr_start_view *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_REQUEST_START_VIEW:
        *group = ((const struct vs_hdr_request_start_view *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_REQUEST_PREPARES:
        *group = ((const struct vs_hdr_request_prepares *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_REPAIR_DONE:
    case VS_CMD_RANGE_EVICTED:
        *group = ((const struct vs_hdr_repair_done *)h)->group;
        return VSR_FRAME_ENGINE;
    case VS_CMD_REQUEST_STATE_TRANSFER:
        *group = ((const struct vs_hdr_request_state_transfer *)h)->group;
        return VSR_FRAME_TRANSFER;
    case VS_CMD_STATE_TRANSFER_TARGET:
        *group = ((const struct vs_hdr_state_transfer_target *)h)->group;
        return VSR_FRAME_TRANSFER;
    case VS_CMD_REQUEST_STATE_CHUNK:
        *group = ((const struct vs_hdr_request_state_chunk *)h)->group;
        return VSR_FRAME_TRANSFER;
    case VS_CMD_STATE_CHUNK:
        *group = ((const struct vs_hdr_state_chunk *)h)->group;
        return VSR_FRAME_TRANSFER;
    default:
        return VSR_FRAME_NONE;
    }
}
