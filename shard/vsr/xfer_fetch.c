/*
 * shard/vsr/xfer_fetch.c - the state-transfer receiver; see xfer_fetch.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/assert.h"
#include "shard/vsr/xfer_fetch.h"

#define XFER_DEFAULT_STALL_TICKS 100u
#define XFER_DEFAULT_STALLS_MAX  5u
#define XFER_DEFAULT_DECODE_MAX  5u

const char *
xfer_stage_name(enum xfer_stage s)
{
    switch (s) {
    case XFER_IDLE:
        return "idle";
    case XFER_AWAITING_TARGET:
        return "awaiting-target";
    case XFER_FETCHING:
        return "fetching";
    case XFER_INSTALLING:
        return "installing";
    }
    return "unknown";
}

const char *
xfer_fetch_drop_name(enum xfer_fetch_drop d)
{
    static const char *const names[] = {
        [XFER_TAKEN] = "taken",
        [XFER_DROP_STAGE] = "stage",
        [XFER_DROP_PEER] = "peer",
        [XFER_DROP_NONCE] = "nonce",
        [XFER_DROP_POSITION] = "position",
        [XFER_DROP_OVERRUN] = "overrun",
        [XFER_DROP_MANIFEST] = "manifest",
        [XFER_DROP_GENERATION] = "generation",
    };
    if ((unsigned)d < XFER_DROP_COUNT)
        return names[d];
    return "unknown";
}

/* The legal transitions of xfer_fetch.h. */
static int
transition_legal(enum xfer_stage from, enum xfer_stage to)
{
    switch (from) {
    case XFER_IDLE:
        return to == XFER_AWAITING_TARGET;
    case XFER_AWAITING_TARGET:
        return to == XFER_FETCHING || to == XFER_IDLE ||
               to == XFER_AWAITING_TARGET;
    case XFER_FETCHING:
        return to == XFER_AWAITING_TARGET || to == XFER_IDLE ||
               to == XFER_INSTALLING;
    case XFER_INSTALLING:
        return to == XFER_IDLE;
    }
    return 0;
}

static void
free_bytes(struct xfer_fetch *f)
{
    for (unsigned i = 0; i < XFER_ARTIFACTS_MAX; i++) {
        free(f->bytes[i]);
        f->bytes[i] = NULL;
    }
}

static void
stage_set(struct xfer_fetch *f, enum xfer_stage to)
{
    VS_ASSERT(transition_legal(f->stage, to));
    f->stage = to;
    f->idle = 0;
    if (to == XFER_IDLE) {
        free_bytes(f);
        memset(&f->nonce, 0, sizeof(f->nonce));
        memset(&f->m, 0, sizeof(f->m));
        f->pending = 0;
        f->want_peer = 0;
        f->stalls = 0;
        f->cursor = 0;
        f->offset = 0;
    }
}

void
xfer_fetch_init(struct xfer_fetch *f, const struct xfer_fetch_opts *o)
{
    memset(f, 0, sizeof(*f));
    f->o = *o;
    if (f->o.chunk_max == 0 || f->o.chunk_max > XFER_CHUNK_MAX)
        f->o.chunk_max = XFER_CHUNK_MAX;
    if (f->o.stall_ticks == 0)
        f->o.stall_ticks = XFER_DEFAULT_STALL_TICKS;
    if (f->o.stalls_max == 0)
        f->o.stalls_max = XFER_DEFAULT_STALLS_MAX;
    if (f->o.decode_failures_max == 0)
        f->o.decode_failures_max = XFER_DEFAULT_DECODE_MAX;
    if (f->o.artifact_cap == 0 || f->o.artifact_cap > XFER_ARTIFACT_CAP)
        f->o.artifact_cap = XFER_ARTIFACT_CAP;
    f->stage = XFER_IDLE;
}

void
xfer_fetch_destroy(struct xfer_fetch *f)
{
    free_bytes(f);
    f->stage = XFER_IDLE;
}

void
xfer_fetch_set_view(struct xfer_fetch *f, uint32_t view)
{
    f->o.me.view = view;
}

int
xfer_fetch_arm(struct xfer_fetch *f, struct vs_u128 nonce, uint8_t peer)
{
    if (f->stage != XFER_IDLE)
        return -EALREADY;
    stage_set(f, XFER_AWAITING_TARGET);
    f->nonce = nonce;
    f->peer = peer;
    f->pending = 1;
    f->reason[0] = '\0';
    f->stats.sessions++;
    return 0;
}

int
xfer_fetch_retarget(struct xfer_fetch *f, uint8_t peer)
{
    if (f->stage != XFER_AWAITING_TARGET && f->stage != XFER_FETCHING)
        return -EINVAL;
    free_bytes(f);
    memset(&f->m, 0, sizeof(f->m));
    f->cursor = 0;
    f->offset = 0;
    stage_set(f, XFER_AWAITING_TARGET);
    f->peer = peer;
    f->stalls = 0;
    f->want_peer = 0;
    f->pending = 1;
    f->stats.retargets++;
    return 0;
}

void
xfer_fetch_abandon(struct xfer_fetch *f, const char *why)
{
    if (f->stage == XFER_IDLE)
        return;
    snprintf(f->reason, sizeof(f->reason), "%s", why);
    f->stats.abandoned++;
    stage_set(f, XFER_IDLE);
}

static enum xfer_fetch_drop
drop(struct xfer_fetch *f, enum xfer_fetch_drop d)
{
    f->stats.drops[d]++;
    return d;
}

/* Starts artifact f->cursor (allocating its bytes), or completes the
 * fetch when every artifact is in. */
static void
start_artifact(struct xfer_fetch *f)
{
    while (f->cursor < f->m.count) {
        const struct xfer_artifact *a = &f->m.a[f->cursor];
        f->offset = 0;
        vs_xxh3_stream_init(&f->hash);
        if (a->len > 0) {
            f->bytes[f->cursor] = malloc(a->len);
            if (f->bytes[f->cursor] == NULL) {
                xfer_fetch_abandon(f, "out of memory for an artifact");
                return;
            }
            f->pending = 1;
            return;
        }
        /* an empty artifact: complete at once, if its checksum agrees */
        if (vs_xxh3_stream_digest(&f->hash) != a->checksum) {
            f->stats.mismatches++;
            xfer_fetch_abandon(f, "empty artifact with a wrong checksum");
            return;
        }
        f->cursor++;
    }
    stage_set(f, XFER_INSTALLING);
}

/* The artifact whose frontier names the session's generation, if the
 * manifest fits the profile (xfer_fetch.h), else NULL. */
static const struct xfer_artifact *
manifest_usable(const struct xfer_fetch *f, const struct xfer_manifest *m,
                const struct vs_hdr_state_transfer_target *t)
{
    const struct xfer_artifact *prep =
        xfer_manifest_find(m, XFER_KIND_CHECKPOINT_PREPARE);
    if (f->o.profile == XFER_PROFILE_PARTITION) {
        const struct xfer_artifact *log =
            xfer_manifest_find(m, XFER_KIND_SEGMENT_LOG);
        const struct xfer_artifact *offs =
            xfer_manifest_find(m, XFER_KIND_CONSUMER_OFFSETS);
        if (m->count != 3u || log == NULL || offs == NULL || prep == NULL ||
            prep->len != VS_HEADER_SIZE || prep->frontier != log->frontier ||
            log->frontier == 0 || t->commit_op < log->frontier ||
            offs->frontier > t->commit_op || log->len > f->o.artifact_cap ||
            offs->len > f->o.artifact_cap)
            return NULL;
        return log;
    }
    const struct xfer_artifact *snap =
        xfer_manifest_find(m, XFER_KIND_METADATA_SNAPSHOT);
    const struct xfer_artifact *table =
        xfer_manifest_find(m, XFER_KIND_CLIENT_TABLE);
    /* metadata transfer: a snapshot and a client table, optionally the
     * snapshot op's prepare header (exactly one header, at the snapshot's
     * op), frontiers consistent with the commit the primary advertised */
    if (m->count != (prep != NULL ? 3u : 2u) || snap == NULL || table == NULL ||
        (prep != NULL &&
         (prep->len != VS_HEADER_SIZE || prep->frontier != snap->frontier)) ||
        t->commit_op < snap->frontier || table->frontier > t->commit_op ||
        snap->len > f->o.artifact_cap || table->len > f->o.artifact_cap)
        return NULL;
    return snap;
}

enum xfer_fetch_drop
xfer_fetch_on_target(struct xfer_fetch *f, uint8_t from, const void *frame,
                     size_t len)
{
    const struct vs_hdr_state_transfer_target *t = frame;
    if (f->stage == XFER_FETCHING && !t->available && from == f->peer &&
        vs_u128_eq(t->nonce, f->nonce)) {
        /* the server no longer holds our offer (it expired, or it stopped
         * serving): start over with the same nonce, or give up */
        if (t->reason == XFER_UNKNOWN_SESSION) {
            xfer_fetch_retarget(f, from);
            return XFER_TAKEN;
        }
        char why[160];
        snprintf(why, sizeof(why), "replica %u stopped serving: %s", from,
                 xfer_unavailable_name(t->reason));
        xfer_fetch_abandon(f, why);
        return XFER_TAKEN;
    }
    if (f->stage != XFER_AWAITING_TARGET)
        return drop(f, XFER_DROP_STAGE);
    if (from != f->peer)
        return drop(f, XFER_DROP_PEER);
    if (!vs_u128_eq(t->nonce, f->nonce))
        return drop(f, XFER_DROP_NONCE);
    if (!t->available) {
        if (t->unavailable_transient) {
            /* the same peer may serve later: retry after a stall */
            f->pending = 0;
            return XFER_TAKEN;
        }
        char why[160];
        snprintf(why, sizeof(why), "replica %u cannot serve: %s", from,
                 xfer_unavailable_name(t->reason));
        xfer_fetch_abandon(f, why);
        return XFER_TAKEN;
    }
    struct xfer_manifest m;
    if (xfer_manifest_decode((const uint8_t *)frame + VS_HEADER_SIZE,
                             len - VS_HEADER_SIZE, &m) != XFER_MANIFEST_OK)
        return drop(f, XFER_DROP_MANIFEST);
    const struct xfer_artifact *snap = manifest_usable(f, &m, t);
    if (snap == NULL)
        return drop(f, XFER_DROP_MANIFEST);
    if (f->bad_generation_failures >= f->o.decode_failures_max &&
        snap->frontier == f->bad_generation) {
        char why[160];
        snprintf(why, sizeof(why),
                 "snapshot generation %llu refused after %u decode failures",
                 (unsigned long long)snap->frontier,
                 f->bad_generation_failures);
        xfer_fetch_abandon(f, why);
        return drop(f, XFER_DROP_GENERATION);
    }
    f->m = m;
    f->commit_op = t->commit_op;
    f->commit_max = t->commit_max;
    f->cursor = 0;
    f->stalls = 0;
    stage_set(f, XFER_FETCHING);
    start_artifact(f);
    return XFER_TAKEN;
}

enum xfer_fetch_drop
xfer_fetch_on_chunk(struct xfer_fetch *f, uint8_t from, const void *frame,
                    size_t len)
{
    const struct vs_hdr_state_chunk *c = frame;
    size_t n = len - VS_HEADER_SIZE;
    if (f->stage != XFER_FETCHING)
        return drop(f, XFER_DROP_STAGE);
    if (from != f->peer)
        return drop(f, XFER_DROP_PEER);
    if (!vs_u128_eq(c->nonce, f->nonce))
        return drop(f, XFER_DROP_NONCE);
    if (c->artifact != f->cursor || c->offset != f->offset || n == 0)
        return drop(f, XFER_DROP_POSITION);
    const struct xfer_artifact *a = &f->m.a[f->cursor];
    if (n > a->len - f->offset)
        return drop(f, XFER_DROP_OVERRUN);
    const uint8_t *body = (const uint8_t *)frame + VS_HEADER_SIZE;
    memcpy(f->bytes[f->cursor] + f->offset, body, n);
    vs_xxh3_stream_update(&f->hash, body, n);
    f->offset += n;
    f->idle = 0;
    f->stalls = 0;
    f->stats.chunks++;
    f->stats.bytes += n;
    f->pending = 1;
    if (f->offset == a->len) {
        if (vs_xxh3_stream_digest(&f->hash) != a->checksum) {
            char why[160];
            f->stats.mismatches++;
            snprintf(why, sizeof(why),
                     "artifact %u (kind %u) from replica %u fails its "
                     "checksum: refused",
                     f->cursor, a->kind, from);
            xfer_fetch_abandon(f, why);
            return XFER_TAKEN;
        }
        f->cursor++;
        start_artifact(f);
    }
    return XFER_TAKEN;
}

void
xfer_fetch_tick(struct xfer_fetch *f)
{
    if (f->stage != XFER_AWAITING_TARGET && f->stage != XFER_FETCHING)
        return;
    if (f->want_peer)
        return; /* waiting for the caller to retarget */
    if (++f->idle < f->o.stall_ticks)
        return;
    f->idle = 0;
    f->stalls++;
    f->stats.stalls++;
    if (f->stalls <= f->o.stalls_max) {
        f->pending = 1;
        return;
    }
    if (f->stage == XFER_FETCHING) {
        /* give up on this peer; keep the nonce for the next one */
        free_bytes(f);
        memset(&f->m, 0, sizeof(f->m));
        stage_set(f, XFER_AWAITING_TARGET);
        f->want_peer = 1;
        f->pending = 0;
        return;
    }
    xfer_fetch_abandon(f, "no answer from the serving replica");
}

int
xfer_fetch_pop(struct xfer_fetch *f, void *out, uint8_t *peer)
{
    if (!f->pending || f->want_peer)
        return 0;
    if (f->stage == XFER_AWAITING_TARGET) {
        xfer_frame_request_transfer(out, &f->o.me, f->nonce);
    } else if (f->stage == XFER_FETCHING) {
        const struct xfer_artifact *a = &f->m.a[f->cursor];
        uint64_t left = a->len - f->offset;
        uint32_t n = left < f->o.chunk_max ? (uint32_t)left : f->o.chunk_max;
        xfer_frame_request_chunk(out, &f->o.me, f->nonce, f->cursor, f->offset,
                                 n);
    } else {
        f->pending = 0;
        return 0;
    }
    f->pending = 0;
    *peer = f->peer;
    return 1;
}

const uint8_t *
xfer_fetch_artifact(const struct xfer_fetch *f, enum xfer_kind kind,
                    uint64_t *len, uint64_t *frontier)
{
    if (f->stage != XFER_INSTALLING)
        return NULL;
    for (uint32_t i = 0; i < f->m.count; i++) {
        if (f->m.a[i].kind != kind)
            continue;
        *len = f->m.a[i].len;
        *frontier = f->m.a[i].frontier;
        return f->bytes[i] != NULL ? f->bytes[i] : (const uint8_t *)"";
    }
    return NULL;
}

void
xfer_fetch_installed(struct xfer_fetch *f)
{
    if (f->stage != XFER_INSTALLING)
        return;
    f->stats.completed++;
    f->bad_generation_failures = 0;
    snprintf(f->reason, sizeof(f->reason), "installed");
    stage_set(f, XFER_IDLE);
}

void
xfer_fetch_install_failed(struct xfer_fetch *f, int decode, const char *why)
{
    if (f->stage != XFER_INSTALLING)
        return;
    if (decode) {
        const struct xfer_artifact *snap =
            xfer_manifest_find(&f->m, f->o.profile == XFER_PROFILE_PARTITION
                                          ? XFER_KIND_SEGMENT_LOG
                                          : XFER_KIND_METADATA_SNAPSHOT);
        uint64_t gen = snap != NULL ? snap->frontier : 0;
        if (gen != f->bad_generation) {
            f->bad_generation = gen;
            f->bad_generation_failures = 0;
        }
        f->bad_generation_failures++;
        f->stats.decode_failures++;
    }
    snprintf(f->reason, sizeof(f->reason), "%s", why);
    f->stats.abandoned++;
    stage_set(f, XFER_IDLE);
}
