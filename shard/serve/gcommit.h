/*
 * shard/serve/gcommit.h - group commit of a data shard's appends: fsync
 * off the event loop, shared by the batches of many partitions.
 *
 * Role: a send is begun on the loop (part_append_begin: validated,
 * stamped, its offsets and place at the segment's end reserved) and its
 * answer is held; the batch's WRITE and the fsync both run off the loop.
 * The partitions with held answers form the NEXT group; when no group is
 * in flight the group is sealed (each partition's active log fd dup'd,
 * its unsynced bytes and next offset recorded) and handed to this
 * shard's sync threads: the thread that takes a partition writes its
 * held batch (part_write_run, from the buffer the batch was received in:
 * no copy) and then, under every-batch, fdatasyncs the file; the files
 * of a group are handled in parallel (up to four threads). The loop
 * meanwhile keeps reading sockets while the kernel copies the batches
 * into the page cache: batches to other partitions join the next group.
 * When the threads are done the loop accounts each write
 * (part_append_end: offsets, index entry, next offset), marks the
 * partitions synced (the batches become visible to polls), answers every
 * held send (every-batch: only after durability; interval: once
 * written), runs the sends that were queued, and seals the next group at
 * once. Interval-policy partitions' periodic and size-triggered fsyncs
 * go through the same threads (gcommit_note, gcommit_tick) with nothing
 * held, and so do the journal fsyncs of replicated partitions
 * (gcommit_journal_sync).
 *
 * Invariants: a partition has at most one write begun and not ended
 * (strict order per partition: its next send is queued until the end),
 * and under every-batch at most one batch appended and not yet durable
 * (the recovery rules of shard/data assume it): a send to a partition
 * whose batch is waiting is queued, and appended after it, in arrival
 * order. A send's buffer is owned by the group commit from the send to
 * its answer (taken when the caller offers it, else copied once). A
 * write that fails with ENOSPC is cut back and refused; any other write
 * error poisons the io (the shard exits 2, as on the loop). Every held or
 * queued send is answered exactly once (a refusal when its append fails). A
 * failed fdatasync ends the process (exit 2, the file and errno on one line):
 * never retried. The sync threads touch only dup'd fds, the sealed
 * group's items and its holds' writes (struct part_write and the buffer
 * it reads, which the loop leaves alone until the group is done);
 * everything else is loop-thread state.
 * Process: data shards (loop thread, plus the sync threads).
 */
#ifndef VS_SHARD_SERVE_GCOMMIT_H
#define VS_SHARD_SERVE_GCOMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "shard/fwd.h"
#include "shard/serve/data.h"
#include "shard/serve/parts.h"

struct serve;
struct pj_sync_target; /* shard/data/pjournal.h */

/* Whom to answer once a send is durable. */
struct gc_waiter {
    int remote;        /* 0: a connection of this shard; 1: forwarded */
    uint32_t src;      /* remote: the client shard's slot */
    struct fwd_hdr fh; /* remote: the request's forwarding header */
    uint64_t conn_id;  /* local: the connection */
    uint64_t seq;      /* local: its data_seq */
    /* forwarded by a peer node over the data link (pgroups.h): its
     * replica id and its nonce for the request (remote is 0) */
    int link;
    uint8_t peer;
    uint64_t nonce;
};

/* Begins cmd's append (part_append_begin into *pw); the reply body (as
 * if the write succeeded) into out. Returns the status (0 = begun).
 * pw NULL (writes not offloaded): appends without an fsync here
 * (part_append_nosync). */
typedef uint32_t gc_exec_fn(struct serve *s, struct dpart *dp,
                            const struct data_cmd *cmd, uint8_t *batch,
                            size_t len, struct vs_wbuf *out,
                            struct part_write *pw);
/* Delivers the answer of a held or queued send. */
typedef void gc_answer_fn(struct serve *s, const struct gc_waiter *w,
                          uint32_t status, const uint8_t *body, size_t len);

struct serve_gcommit;

/* NULL + errno when the thread or eventfd cannot be made. `offload` 0
 * (segment_write_offload false): every-batch sends are written on the
 * loop when they arrive and only their fsync is the threads'; the
 * caller writes interval sends itself (gcommit_note). */
struct serve_gcommit *gcommit_create(struct serve *s, struct dparts *parts,
                                     gc_exec_fn *exec, gc_answer_fn *answer,
                                     int offload);
/* Waits for an fsync in flight (its answers are dropped: the process is
 * stopping), joins the thread and frees everything. */
void gcommit_destroy(struct serve_gcommit *g);

/* A send to the (non-replicated) partition dp. Returns 0 when the answer
 * is held or queued (w is answered later, exactly once), else the status
 * to answer now (the append was refused; nothing stored). `own` (may be
 * NULL): *own is the malloc'd buffer batch lies in, or NULL; when set it
 * is taken (*own = NULL; freed here once the send is answered), else the
 * batch is copied once. */
uint32_t gcommit_send(struct serve_gcommit *g, struct dpart *dp,
                      const struct data_cmd *cmd, uint8_t *batch, size_t len,
                      const struct gc_waiter *w, void **own);
/* After an interval-policy append: schedules an fsync if one is due. */
void gcommit_note(struct serve_gcommit *g, struct dpart *dp, uint64_t now_ms);
/* The interval policy's timer: every due partition joins the next group. */
void gcommit_tick(struct serve_gcommit *g, uint64_t now_ms);

/* The fsync of a replicated partition's journal (shard/data/pjournal.h):
 * both of t's fds (a negative one is skipped: a superblock fsync passes
 * only vsr_fd, the superblock file's) are dup'd now and fdatasync'd by the sync
 * threads with the next group; then, on the loop, done(ctx, key, t) (every op
 * up to t->op is durable). A failed fdatasync ends the process, as for the
 * partitions' own. */
typedef void gc_jdone_fn(void *ctx, uint64_t key,
                         const struct pj_sync_target *t);
void gcommit_journal_sync(struct serve_gcommit *g, uint64_t key,
                          const struct pj_sync_target *t, gc_jdone_fn *done,
                          void *ctx);

/* Counters (tests, logs): groups synced, partition fsyncs, sends held,
 * sends queued behind a waiting batch. */
struct gc_counters {
    uint64_t groups, fsyncs, held, queued;
};
void gcommit_counters(const struct serve_gcommit *g, struct gc_counters *out);

#endif /* VS_SHARD_SERVE_GCOMMIT_H */
