/*
 * tests/fuzz/fuzz_replica.c - libFuzzer target: the replica-frame
 * decoders. Every frame goes to a live engine (shard/vsr/engine.h: a
 * fresh backup, replica 1 of 3, its actions completed at once as a
 * binding would) and to the state-transfer checker and receiver
 * (shard/vsr/xfer_frames.h, xfer_fetch.h).
 *
 * Input: a sequence of [flags u8][ticks u8][len u16][frame bytes]; bit 0
 * of flags seals the frame first (vs_frame_seal, or vs_prepare_seal for a
 * prepare) so the fuzzer reaches the paths behind the checksums; bit 1
 * fixes the size field to the frame's length. Invariants checked:
 *  - every verdict is a known one; view, log_view and commit_max never
 *    decrease (R5);
 *  - every SEND is a whole frame, and one that claims a view (PrepareOk,
 *    Commit, Pong, SVC, DVC, SV) never carries a view above the durable
 *    one (persist before send, R1);
 *  - journal appends are consecutive ops (a truncation restarts them);
 *  - a StateTransferTarget the checker accepts carries a manifest that
 *    re-encodes to its exact bytes.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/wire.h"
#include "shard/vsr/engine.h"
#include "shard/vsr/xfer_fetch.h"
#include "shard/vsr/xfer_frames.h"
#include "shard/vsr/xfer_manifest.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_MAX (VS_HEADER_SIZE + 8192u)

static const struct vs_u128 cluster = {0xc105, 0x7e4};

static int
claims_view(uint8_t command)
{
    return command == VS_CMD_PREPARE_OK || command == VS_CMD_COMMIT ||
           command == VS_CMD_PONG || command == VS_CMD_START_VIEW_CHANGE ||
           command == VS_CMD_DO_VIEW_CHANGE || command == VS_CMD_START_VIEW;
}

/* Performs every queued action as a synchronous binding would. */
static void
drain(struct vs_vsr *v, uint64_t *last_append)
{
    struct vs_vsr_action a;
    static const uint8_t out[12] = {0};
    while (vsr_pop(v, &a)) {
        switch (a.kind) {
        case VSR_ACT_SEND: {
            fuzz_check(a.size >= VS_HEADER_SIZE && a.frame->f.size == a.size,
                       "send: a whole frame");
            struct vs_vsr_persist d;
            vsr_durable(v, &d);
            if (claims_view(a.frame->f.command))
                fuzz_check(a.frame->f.view <= d.view,
                           "send: view above the durable view");
            break;
        }
        case VSR_ACT_JOURNAL_APPEND: {
            fuzz_check(*last_append == 0 || a.op == *last_append + 1,
                       "journal appends are consecutive");
            *last_append = a.op;
            const struct vs_hdr_prepare *p =
                (const struct vs_hdr_prepare *)a.frame;
            fuzz_check(vsr_on_journal_durable(v, a.op, p->f.checksum) == 0,
                       "durable report of an issued append");
            break;
        }
        case VSR_ACT_JOURNAL_TRUNCATE:
            *last_append = a.op > 0 ? a.op - 1 : 0;
            break;
        case VSR_ACT_SUPERBLOCK_WRITE:
            fuzz_check(vsr_on_superblock_durable(v, &a.persist) == 0,
                       "superblock write reported with its values");
            break;
        case VSR_ACT_COMMIT:
            fuzz_check(vsr_on_commit_applied(v, a.op, out, sizeof(out)) == 0,
                       "commit of the outstanding op");
            break;
        default:
            break;
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t frame[FRAME_MAX];
    struct vs_vsr_options o;
    memset(&o, 0, sizeof(o));
    o.cluster = cluster;
    o.group = VS_METADATA_GROUP;
    o.replica = 1;
    o.replica_count = 3;
    o.journal_slots = 64;
    o.pipeline_max = 4;
    o.body_max = 4096;
    o.seed = 7;
    struct vs_vsr *v = NULL;
    char reason[256];
    if (vsr_create(&o, &v, reason, sizeof(reason)) != 0)
        fuzz_fail(reason, __FILE__, __LINE__);
    struct xfer_fetch f;
    struct xfer_fetch_opts fo = {.me = {cluster, VS_METADATA_GROUP, 1, 0}};
    xfer_fetch_init(&f, &fo);
    (void)xfer_fetch_arm(&f, (struct vs_u128){1, 0}, 0);

    uint64_t last_append = 0;
    uint32_t view = 0, log_view = 0;
    uint64_t commit_max = 0;
    struct fuzz_in in = {data, size};
    drain(v, &last_append);
    while (in.len >= 4) {
        uint8_t flags = fuzz_take_u8(&in);
        uint8_t ticks = fuzz_take_u8(&in);
        uint32_t want = fuzz_take_u8(&in);
        want |= (uint32_t)fuzz_take_u8(&in) << 8;
        size_t got;
        const uint8_t *p =
            fuzz_take(&in, want < FRAME_MAX ? want : FRAME_MAX, &got);
        memset(frame, 0, VS_HEADER_SIZE);
        memcpy(frame, p, got);
        size_t len = got < VS_HEADER_SIZE ? VS_HEADER_SIZE : got;
        struct vs_header *h = (struct vs_header *)frame;
        if (flags & 2)
            h->f.size = (uint32_t)len;
        if (flags & 1) {
            if (h->f.command == VS_CMD_PREPARE ||
                h->f.command == VS_CMD_REPAIR_PREPARE) {
                uint8_t cmd = h->f.command;
                h->f.command = VS_CMD_PREPARE;
                vs_prepare_seal((struct vs_hdr_prepare *)h,
                                frame + VS_HEADER_SIZE, len - VS_HEADER_SIZE);
                h->f.command = cmd;
            } else {
                h->f.checksum_body =
                    len > VS_HEADER_SIZE
                        ? vs_body_checksum(frame + VS_HEADER_SIZE,
                                           len - VS_HEADER_SIZE)
                        : (struct vs_u128){0, 0};
                vs_frame_seal(h);
            }
        }
        enum vsr_verdict r = vsr_on_message(v, frame, len);
        fuzz_check((unsigned)r < VSR_VERDICT_COUNT, "a known verdict");
        for (unsigned t = 0; t < (ticks & 15u); t++) {
            vsr_tick(v);
            drain(v, &last_append);
        }
        drain(v, &last_append);
        fuzz_check(vsr_view(v) >= view && vsr_log_view(v) >= log_view &&
                       vsr_commit_max(v) >= commit_max,
                   "view, log_view and commit_max never decrease");
        view = vsr_view(v);
        log_view = vsr_log_view(v);
        commit_max = vsr_commit_max(v);

        if (xfer_frame_check(frame, len, cluster, VS_METADATA_GROUP,
                             XFER_CHUNK_MAX) != XFER_FRAME_OK)
            continue;
        if (h->f.command == VS_CMD_STATE_TRANSFER_TARGET &&
            len > VS_HEADER_SIZE) {
            struct xfer_manifest m;
            uint8_t again[XFER_MANIFEST_MAX_SIZE];
            fuzz_check(xfer_manifest_decode(frame + VS_HEADER_SIZE,
                                            len - VS_HEADER_SIZE,
                                            &m) == XFER_MANIFEST_OK,
                       "an accepted Target carries a manifest");
            int n = xfer_manifest_encode(&m, again, sizeof(again));
            fuzz_check(n == (int)(len - VS_HEADER_SIZE) &&
                           memcmp(again, frame + VS_HEADER_SIZE, (size_t)n) ==
                               0,
                       "the manifest re-encodes to its bytes");
            (void)xfer_fetch_on_target(&f, 0, frame, len);
        } else if (h->f.command == VS_CMD_STATE_CHUNK) {
            (void)xfer_fetch_on_chunk(&f, 0, frame, len);
        }
        xfer_fetch_tick(&f);
        uint8_t req[VS_HEADER_SIZE], peer;
        while (xfer_fetch_pop(&f, req, &peer))
            fuzz_check(xfer_frame_check(req, VS_HEADER_SIZE, cluster,
                                        VS_METADATA_GROUP,
                                        XFER_CHUNK_MAX) == XFER_FRAME_OK,
                       "the receiver's requests pass the checker");
    }
    xfer_fetch_destroy(&f);
    vsr_destroy(v);
    return 0;
}
