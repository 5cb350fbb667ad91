/*
 * shard/link/mesh.h - one data shard's links to the same shard of every
 * peer node, with the per-tick coalesced group beats (DESIGN §9).
 *
 * Role: owns a struct links (shard/link/links.h) of mesh `shard` in
 * back-pressure mode, the pending beat tables (coalesce.h) and ONE tick
 * timer for the whole shard, however many groups it runs. At each tick,
 * for every authenticated peer, the entries the groups posted since the
 * last tick leave as one beat frame (beat.h; one more per 16,384
 * entries); a peer that got no frame for keepalive_ticks gets an empty
 * one (the keepalive). A peer whose link sent nothing for dead_ticks is
 * dropped (a hung process is not a live replica) and redialed by the
 * lower id, as every closed link is.
 *
 * Received frames: a beat frame is decoded (exact size, seal, body
 * checksum, bounds, order: beat.h), must come from the link's peer and
 * this mesh, and must carry the next sequence number of the link (a
 * repeated or skipped frame is refused); then on_beat gets its entries.
 * A refused frame ends the link (logged at most once per peer per
 * minute) and is counted; its entries are never used. Other commands go
 * to on_frame, or end the link when there is none.
 *
 * Back-pressure: mesh_post refuses with -EAGAIN when the peer's pending
 * table is full, mesh_send with -EAGAIN when the link's queue is full;
 * on_writable(peer) follows when the link drained to half (and the
 * pending table was flushed), so a producer waits instead of losing or
 * buffering without bound.
 *
 * Invariants: one timer per mesh; at most ceil(pending / 16,384) frames,
 * at least one when pending > 0, per peer per tick; entries of a link
 * that went down are discarded (the groups post their state again).
 * Callers: the data shard's loop thread (shard/serve/dlinks.c); tests.
 */
#ifndef VS_SHARD_LINK_MESH_H
#define VS_SHARD_LINK_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "shard/link/beat.h"
#include "shard/link/links.h"

struct event_base;
struct mesh;

struct mesh_opts {
    /* The links (on_writable is the mesh's own: leave it NULL). */
    struct links_opts links;
    uint32_t tick_ms;         /* 0 = 10 */
    uint32_t keepalive_ticks; /* 0 = 50: an empty beat after this idle */
    uint32_t dead_ticks;      /* 0 = 500: drop a link silent this long */
    uint32_t entries_max;     /* pending entries per peer; 0 = 65536 */
    /* A valid beat frame from peer: count entries at body (beat_entry_at). */
    void (*on_beat)(void *ctx, uint8_t peer, const struct beat_hdr *h,
                    const uint8_t *body);
    /* Any other frame of an authenticated link; NULL: such a frame ends
     * the link. */
    void (*on_frame)(void *ctx, uint8_t peer, const void *frame, size_t len);
    void (*on_state)(void *ctx, uint8_t peer, int up);
    void (*on_writable)(void *ctx, uint8_t peer);
    void (*on_tick)(void *ctx); /* after each tick's flush */
    void *ctx;
};

struct mesh_peer_info {
    struct links_peer_info link;
    uint64_t beats_out, beats_in;     /* beat frames */
    uint64_t entries_out, entries_in; /* group entries in them */
    uint64_t bad_frames;              /* refused frames (link ended) */
    uint64_t post_refused;            /* mesh_post -EAGAIN */
    uint32_t pending;                 /* entries waiting for the tick */
};

/* Starts the links (listening on listen_fd, taken over; dialing the
 * higher ids) and the tick timer. 0 or -errno with a reason in err. */
int mesh_create(struct event_base *base, const struct mesh_opts *o,
                int listen_fd, struct mesh **out, char *err, size_t errlen);
void mesh_destroy(struct mesh *m);

/* Posts one entry for peer's next beat. 0, -EINVAL (self, out of range,
 * unknown kind), -ENOTCONN (link not up), -EAGAIN (table full). */
int mesh_post(struct mesh *m, uint8_t peer, const struct beat_entry *e);

/* Queues a whole frame (links_send in back-pressure mode). */
int mesh_send(struct mesh *m, uint8_t peer, const void *frame, size_t len);

/* Sends every up peer's pending entries now (no keepalive): the groups'
 * runtime calls it after its own tick posted the heartbeats, so they
 * leave in this tick's frame rather than the next. */
void mesh_flush(struct mesh *m);

/* What the timer does once per tick_ms (public for tests). */
void mesh_tick(struct mesh *m);

int mesh_up(const struct mesh *m, uint8_t peer);
/* Authenticated links now. */
uint32_t mesh_up_count(const struct mesh *m);
void mesh_peer(const struct mesh *m, uint8_t peer, struct mesh_peer_info *out);
struct links *mesh_links(struct mesh *m);

#endif /* VS_SHARD_LINK_MESH_H */
