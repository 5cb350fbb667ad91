/*
 * shard/serve/pgroups.h - a data shard's runtime of replicated
 * partitions: the partition groups (pgroup.h) of the partitions it owns,
 * their links, ticks and fsyncs, and where each data command runs.
 *
 * Role (only with partition_replication on a cluster node): after every
 * sync of the owned partitions (parts.h), each owned partition whose
 * replica set (meta_partition.replicas) has more than one member and
 * contains this node gets its group (pgroup_open, replica index = this
 * node's position in the set); a partition the metadata no longer lists
 * has its group closed before its files go (dparts' close hook).
 *   - Link frames (the data mesh of this shard index, shard/link/mesh.h)
 *     go to the group their header's group id names, and only when the
 *     link's peer is the group member the frame claims to come from.
 *   - One tick for every group: the mesh's 10 ms tick calls pgroup_tick
 *     on each group (never a timer per group).
 *   - env->sync: the group's journal files are fsynced on the shard's
 *     sync threads (gcommit_journal_sync); pgroup_on_synced follows on the
 *     loop (unless that group was closed meanwhile: the completion names
 *     the group's generation). env->state_sync: the same for its
 *     superblock file (view changes, checkpoints): the engine hears the
 *     write is durable, and lets what waited for it leave, only in
 *     pgroup_on_state_synced after the fsync.
 *   - A group that stopped (pgroup_fatal: its journal out of space, an
 *     I/O error) is closed, its waiters answered 57, and reopened from
 *     its files PGROUPS_REOPEN_MS later (again while it fails).
 *   - Partition state transfers: at most two groups of the shard fetch
 *     at once (each holds its artifacts in memory until installed);
 *     another waits (its repair asks again).
 *   - env->files_sync: a partition state transfer's staged files and
 *     directories are fsynced on the sync threads too (two fds per
 *     request); pxfer_fsynced continues the install on the loop.
 *   - A group whose partition state transfer staged a fetched partition
 *     (pgroup_install_pending, pxfer.h) is closed, its waiters answered
 *     57, the partition closed, the directories swapped and both opened
 *     again (dparts_reinstall); the engine recovers at the installed
 *     checkpoint and repairs above it.
 *   - env->send: the frame is queued on the link to that member's node
 *     (-EAGAIN when the link's queue is full: the engine retransmits);
 *     but a Commit heartbeat or its Pong answer becomes an entry of the
 *     link's coalesced beat (pbeat.h, shard/link/mesh.h): the tick's
 *     heartbeats of every group leave in one frame per link (posted
 *     again as a frame of its own when the link's pending table is
 *     full). A received beat's entries are rebuilt into the exact frames
 *     and routed as those frames are (below).
 *
 * Routing (pgroups_exec, on the owning shard, for a command of this
 * node's clients or one forwarded by a peer node):
 *   - a member of a set of more than one: a send is proposed when this
 *     node is the group's primary (answered after the commit through the
 *     answer function), else forwarded to the primary's node, and so is
 *     a consumer-offset store or delete (an op of the group:
 *     pgroup_on_offset); polls and flush run on the local partition
 *     (polls never see past the group's commit); GetOffset too on the
 *     settled primary, else it is forwarded to the primary's node (a
 *     store acknowledged by the primary is read back on any node; the
 *     local replica answers when the primary is unknown or its link
 *     down); a poll's
 *     auto-commit is a raising store op of the group (pgroups_autocommit),
 *     forwarded to the primary without a waiter when this node is not;
 *   - a one-member set on this node: today's path (PGROUPS_PASS);
 *   - a set without this node (or a one-member set on another node):
 *     the command is forwarded to the set's first member.
 * A command goes at most PGROUPS_HOPS_MAX links far; a forward that is
 * not answered within PGROUPS_FWD_TIMEOUT_MS, or whose link goes down, is
 * answered 57 (the client resends; the group deduplicates by client id
 * and request number). A proposed send not answered within
 * PGROUPS_WAIT_TIMEOUT_MS is answered 57 too.
 * Read your writes: the primary's result of a committed op names the op,
 * and the primary sends its commit to the backups at once
 * (pgroup_heartbeat_now); a node that forwarded it and holds a replica
 * of the group answers its client only once that replica applied the
 * op, so the client's next poll on that node sees what it sent (waiting
 * at most PHELD_WAIT_MS, pheld.h: a replica still repairing or fetching
 * answers then, the op being committed).
 *
 * Link frames of this module (above VS_CMD_MAX, data meshes only; header
 * sealed, body under checksum_body):
 *   PGROUPS_CMD_REQUEST: [vs_frame][nonce u64 @128][hops u32 @136]
 *                        [reserved u32][data_cmd @144, 64 bytes]
 *                        [reserved 48]; body = the client's 256-byte
 *                        request header, then the command's data (a
 *                        send's batch).
 *   PGROUPS_CMD_RESULT:  [vs_frame][nonce u64 @128][status u32 @136]
 *                        [reserved u32][op u64 @144: the answering
 *                        group op, 0 none][reserved 104]; body = the
 *                        reply body.
 *
 * Invariants: a send for a replicated partition is never appended
 * outside its group; every waiter is answered exactly once (reply,
 * refusal, time-out, link loss, or the partition's deletion).
 * Process: data shards, loop thread.
 */
#ifndef VS_SHARD_SERVE_PGROUPS_H
#define VS_SHARD_SERVE_PGROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/serve/data.h"
#include "shard/serve/gcommit.h"
#include "shard/serve/parts.h"

#define PGROUPS_CMD_REQUEST     VS_CMD_PART_FORWARD
#define PGROUPS_CMD_RESULT      VS_CMD_PART_FORWARD_RESULT
#define PGROUPS_HOPS_MAX        2u
#define PGROUPS_FWD_TIMEOUT_MS  10000u
#define PGROUPS_WAIT_TIMEOUT_MS 10000u
#define PGROUPS_REOPEN_MS       1000u
/* pgroups_exec: the command takes today's (unreplicated) path. */
#define PGROUPS_PASS (UINT32_MAX - 2u)
/* pgroups_exec: the answer comes later through the answer function. */
#define PGROUPS_DEFERRED (UINT32_MAX - 1u)

struct serve;
struct mesh;
struct serve_pgroups;

/* Runs a command forwarded by a peer node on this shard (data.c's
 * executor): PGROUPS_DEFERRED when w is answered later, else the status
 * with the reply body in out. */
typedef uint32_t pgroups_exec_fn(struct serve *s, const struct data_cmd *cmd,
                                 const struct vs_hdr_request *req,
                                 uint8_t *data, size_t dlen,
                                 struct vs_wbuf *out, const struct gc_waiter *w,
                                 uint32_t hops);

/* NULL when replication is off or the node is alone. */
struct serve_pgroups *pgroups_create(struct serve *s, struct dparts *parts,
                                     struct serve_gcommit *gc,
                                     pgroups_exec_fn *exec,
                                     gc_answer_fn *answer);
/* Closes every group (before the partitions close); answers nothing
 * (the process is stopping). NULL is accepted. */
void pgroups_destroy(struct serve_pgroups *pg);

/* The shard's mesh (NULL: detached; call before the mesh is freed). */
void pgroups_attach(struct serve_pgroups *pg, struct mesh *m);
/* Link events (dlinks' hooks). */
void pgroups_on_frame(void *pg, uint8_t peer, const void *frame, size_t len);
void pgroups_on_tick(void *pg);
struct beat_hdr;
void pgroups_on_beat(void *pg, uint8_t peer, const struct beat_hdr *h,
                     const uint8_t *body);
void pgroups_on_state(void *pg, uint8_t peer, int up);

/* Opens the groups of newly listed replicated partitions (after
 * dparts_sync). */
void pgroups_sync(struct serve_pgroups *pg);

/* Where cmd runs (see above): PGROUPS_PASS, PGROUPS_DEFERRED or a
 * status. `req` is the client's request header, `hops` the links it came
 * over. */
uint32_t pgroups_exec(struct serve_pgroups *pg, struct dpart *dp,
                      const struct data_cmd *cmd,
                      const struct vs_hdr_request *req, uint8_t *data,
                      size_t dlen, const struct gc_waiter *w, uint32_t hops);

/* A poll's auto-commit of `offset` (the last polled one) for the
 * consumer of `poll`: on a member of a set of more than one it becomes a
 * raising consumer-offset op of the group (proposed here when this node
 * is its primary, else forwarded to the primary; the poll's reply does
 * not wait for it) and 1 is returned; 0 for any other partition (the
 * caller stores it locally). */
int pgroups_autocommit(struct serve_pgroups *pg, struct dpart *dp,
                       const struct data_cmd *poll, uint64_t offset);

/* The retention tick of the replicated partitions (after
 * dparts_tick_retention, which leaves them alone): for each group whose
 * settled primary is this node, what retention (message expiry, size
 * cap) and the metadata's DeleteSegments watermark would delete is
 * proposed as one trim op (pgroup_on_trim); every replica deletes the
 * same segments when it commits. NULL is accepted. */
void pgroups_tick_retention(struct serve_pgroups *pg, uint64_t now_us);

/* The answer of a command a peer node forwarded here (w->link). */
void pgroups_answer_link(struct serve_pgroups *pg, const struct gc_waiter *w,
                         uint32_t status, const uint8_t *body, size_t len);

/* Counters (logs, tests). */
struct pgroups_counters {
    uint64_t groups, opened, refused, closed;
    uint64_t proposed, replied, forwarded, forward_failed, timed_out;
    uint64_t frames_in, frames_dropped, syncs;
    /* heartbeats (Commit / Pong) posted as beat entries, and those of
     * received beat frames taken by a group or dropped */
    uint64_t beat_out, beat_in, beat_dropped;
    uint64_t state_syncs; /* superblock fsyncs handed to the sync threads */
    /* forwarded results held until this node applied their op, and those
     * answered when the wait ran out */
    uint64_t held, held_late;
    uint64_t files_syncs; /* state transfer installs' fds fsynced there */
};
void pgroups_counters(const struct serve_pgroups *pg,
                      struct pgroups_counters *out);

#endif /* VS_SHARD_SERVE_PGROUPS_H */
