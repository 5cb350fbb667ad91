/*
 * shard/vsr/xfer_fetch.h - the receiving side of metadata state transfer:
 * a replica behind its peers' drained WAL fetches the primary's snapshot
 * and client table (iggy-server-ng.md §5, vsr-safety.md §4).
 *
 * Stages, every transition checked (an illegal one is a bug and asserts;
 * a message that does not fit the current stage is dropped and counted
 * before any transition is attempted):
 *   Idle -> AwaitingTarget            xfer_fetch_arm (a StartView adopted
 *                                     whose gap the peers' WAL cannot fill,
 *                                     a RangeEvicted answer, recover)
 *   AwaitingTarget -> Fetching        an available Target for our nonce
 *   AwaitingTarget -> Idle            unavailable (not transient), budget
 *                                     exhausted, abandon
 *   Fetching -> AwaitingTarget        retarget (new primary) or the stall
 *                                     budget is exhausted (wants a new peer)
 *   Fetching -> Idle                  a verified artifact mismatch, abandon
 *   Fetching -> Installing            every artifact complete and verified
 *   Installing -> Idle                installed, or the install failed
 * Entering Idle drops the nonce, the manifest and the fetched bytes.
 *
 * A metadata manifest (profile XFER_PROFILE_METADATA) holds a snapshot
 * and a client table (frontiers within the Target's commit), and
 * optionally the snapshot op's prepare header (exactly 256 bytes at the
 * snapshot's frontier); anything else is refused. A partition manifest
 * (XFER_PROFILE_PARTITION) holds exactly a segment log image, a consumer
 * offsets image and the checkpoint op's prepare header (256 bytes), the
 * log's and the header's frontier equal (the checkpoint op), both
 * frontiers of the log and of the offsets within the Target's commit.
 * The "generation" of a session is the snapshot's frontier, or the
 * segment log's for a partition.
 * Fetch rules: one request in flight, artifacts in manifest order, a chunk
 * accepted only from the target peer, for our nonce, at the expected
 * (artifact, offset) and not past the artifact's end; a zero-byte chunk is
 * never accepted (the frame checker refuses it) and nothing but an
 * accepted chunk resets the idle and stall counters (the upstream empty-
 * chunk livelock). Every artifact's length and XXH3 are verified before
 * Installing; nothing is handed to the installer unverified. A second
 * Target for the same nonce while Fetching is dropped (first wins).
 * An unavailable Target for our nonce while Fetching means the server
 * dropped our offer: "unknown session" starts over (AwaitingTarget, same
 * nonce), any other reason ends the session.
 * Decode failures at install are charged to the snapshot generation (its
 * frontier); past decode_failures_max that generation is refused until the
 * peer offers a newer one.
 *
 * I/O-free and deterministic: nonces come from the caller; time is ticks.
 * Callers: shard 0's binding and the simulator (one thread).
 */
#ifndef VS_SHARD_VSR_XFER_FETCH_H
#define VS_SHARD_VSR_XFER_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/checksum.h"
#include "shard/vsr/xfer_frames.h"
#include "shard/vsr/xfer_manifest.h"

enum xfer_stage {
    XFER_IDLE = 0,
    XFER_AWAITING_TARGET = 1,
    XFER_FETCHING = 2,
    XFER_INSTALLING = 3,
};
const char *xfer_stage_name(enum xfer_stage s);

/* Why an incoming frame was not taken. */
enum xfer_fetch_drop {
    XFER_TAKEN = 0,
    XFER_DROP_STAGE,      /* not expected in this stage */
    XFER_DROP_PEER,       /* not from the target peer */
    XFER_DROP_NONCE,      /* another session */
    XFER_DROP_POSITION,   /* not at the expected (artifact, offset) */
    XFER_DROP_OVERRUN,    /* past the artifact's end */
    XFER_DROP_MANIFEST,   /* manifest unusable (kinds, frontiers, caps) */
    XFER_DROP_GENERATION, /* a snapshot generation refused earlier */
    XFER_DROP_COUNT
};
const char *xfer_fetch_drop_name(enum xfer_fetch_drop d);

enum xfer_profile {
    XFER_PROFILE_METADATA = 0,  /* shard 0's snapshot + client table */
    XFER_PROFILE_PARTITION = 1, /* a partition group's segments + offsets */
};

struct xfer_fetch_opts {
    struct xfer_sender me; /* cluster, group, replica, durable view */
    enum xfer_profile profile;
    uint32_t chunk_max;   /* bytes per request; 0 = XFER_CHUNK_MAX */
    uint32_t stall_ticks; /* no progress for this long: re-request; 0=100 */
    uint32_t stalls_max;  /* re-requests before giving up; 0 = 5 */
    uint32_t decode_failures_max; /* per generation; 0 = 5 */
    uint64_t artifact_cap;        /* 0 = XFER_ARTIFACT_CAP */
};

struct xfer_fetch_stats {
    uint64_t sessions;  /* armed */
    uint64_t completed; /* installed */
    uint64_t abandoned; /* back to Idle without install */
    uint64_t stalls;    /* re-requests after no progress */
    uint64_t retargets;
    uint64_t chunks;     /* accepted */
    uint64_t bytes;      /* accepted */
    uint64_t mismatches; /* artifacts failing their checksum */
    uint64_t decode_failures;
    uint64_t drops[XFER_DROP_COUNT];
};

struct xfer_fetch {
    struct xfer_fetch_opts o;
    enum xfer_stage stage;
    struct vs_u128 nonce;
    uint8_t peer;
    int want_peer; /* stall budget exhausted: the caller should retarget */
    int pending;   /* a request should go out (xfer_fetch_pop) */
    struct xfer_manifest m;
    uint64_t commit_op, commit_max; /* from the Target */
    uint32_t cursor;                /* artifact being fetched */
    uint64_t offset;                /* next byte of it */
    uint8_t *bytes[XFER_ARTIFACTS_MAX];
    struct vs_xxh3_stream hash;
    uint32_t idle, stalls;
    uint64_t bad_generation;
    uint32_t bad_generation_failures;
    struct xfer_fetch_stats stats;
    char reason[160]; /* why the last session ended */
};

void xfer_fetch_init(struct xfer_fetch *f, const struct xfer_fetch_opts *o);
/* Frees what a session holds (enters Idle). */
void xfer_fetch_destroy(struct xfer_fetch *f);
/* The binding's durable view changed (stamped on requests). */
void xfer_fetch_set_view(struct xfer_fetch *f, uint32_t view);

/* Idle -> AwaitingTarget with a fresh nonce, asking `peer`. -EALREADY if
 * a session is already running (its nonce and budget are kept). */
int xfer_fetch_arm(struct xfer_fetch *f, struct vs_u128 nonce, uint8_t peer);
/* AwaitingTarget|Fetching -> AwaitingTarget asking `peer` (a new primary);
 * fetched bytes are dropped, the nonce kept. -EINVAL in another stage. */
int xfer_fetch_retarget(struct xfer_fetch *f, uint8_t peer);
/* Any stage -> Idle, recording why. */
void xfer_fetch_abandon(struct xfer_fetch *f, const char *why);

/* A StateTransferTarget (already passed xfer_frame_check) from `from`. */
enum xfer_fetch_drop xfer_fetch_on_target(struct xfer_fetch *f, uint8_t from,
                                          const void *frame, size_t len);
/* A StateChunk (already passed xfer_frame_check) from `from`. */
enum xfer_fetch_drop xfer_fetch_on_chunk(struct xfer_fetch *f, uint8_t from,
                                         const void *frame, size_t len);
/* One 10 ms tick: stall detection and re-requests. */
void xfer_fetch_tick(struct xfer_fetch *f);
/* The next request to send: writes a 256-byte sealed frame to out and the
 * destination to *peer; returns 1, or 0 if nothing is due. */
int xfer_fetch_pop(struct xfer_fetch *f, void *out, uint8_t *peer);

/* Installing: the verified bytes of `kind` (NULL if absent). */
const uint8_t *xfer_fetch_artifact(const struct xfer_fetch *f,
                                   enum xfer_kind kind, uint64_t *len,
                                   uint64_t *frontier);
/* Installing -> Idle after a successful install. */
void xfer_fetch_installed(struct xfer_fetch *f);
/* Installing -> Idle after a failed install; `decode` charges the failure
 * to the snapshot generation. */
void xfer_fetch_install_failed(struct xfer_fetch *f, int decode,
                               const char *why);

#endif /* VS_SHARD_VSR_XFER_FETCH_H */
