/*
 * shard/data/pjournal.h - the journal of a replicated partition: its log
 * of stamped batches read as a VSR group's journal, plus the partition's
 * own superblock (DESIGN §9).
 *
 * Role: a partition whose replica set has more than one node is a VSR
 * group (shard/vsr/engine.h); its prepares are the group's ops. This
 * module stores them so that recovery can rebuild the engine's journal and
 * verify the group's hash chain, while the segments keep the batch layout
 * of batch.h unchanged (polls still read segment bytes as they are):
 *
 *   <start:020>.log      stamped batches, as for an unreplicated partition
 *   <start:020>.vsr      one record per op appended while this segment
 *                        was the active one, in op order: a 16-byte prefix
 *                        (op u64 | record length u32 | low 32 bits of
 *                        XXH3-64 of those 12 bytes), the prepare's 256-byte
 *                        header (op, parent, view, release, operation, the
 *                        identity checksum over the header and the body
 *                        checksum over the stored body), then, for an op
 *                        that is not a batch (a consumer-offset or
 *                        retention op, at most PJ_INLINE_MAX bytes), its
 *                        body inline, padded to 8. A batch op's body is
 *                        the next batch of this segment's .log (batch ops'
 *                        batches lie in the .log in op order).
 *   vsr_state            the partition superblock (two slots, each with a
 *                        sequence number and XXH3; the newer valid one
 *                        wins): view, log_view, commit_max, the offset
 *                        frontier (next offset of the committed log),
 *                        faulty_op and nonack_op, checkpoint op and checksum,
 * format version (128-byte slots; slot = sequence & 1).
 *
 * Invariants:
 *  - Records are consecutive ops, each chained to the one before
 *    (parent == identity checksum of op - 1): a hole or a break is damage.
 *  - A batch op's record and its batch are written together; the append
 *    is durable only when both are fsynced (pj_sync_target covers both
 *    files).
 *  - Recovery (pj_open): the last record torn (the file ends inside it)
 *    -> cut (it was never acknowledged: PrepareOk follows the fsync); the
 *    last record full length with a failing checksum -> cut, and reported
 *    as faulty (rec->faulty_op, rec->bad_header when its header verified
 *    and only an inline body failed) so the engine repairs it and never
 *    nacks it; a record whose batch is absent or fails (the partition's
 *    open cuts a damaged last batch: it is opened with cut_damaged_tail =
 *    1) -> that record and every later one cut, reported faulty up to the
 *    last one, with bad_header = the first one's header (a torn batch is
 *    treated like a flipped one: the two files have no write order, so a
 *    record without its batch may have been acknowledged); an UNSYNCED
 *    GROUP TAIL in the last .vsr file -- a damaged record followed by
 *    whole ones, where every damaged stretch is records that did not land
 *    whole (zeros from the header's last byte on, which is never zero in
 *    a whole record, or a lost record / a prefix cut short: zeros after
 *    the prefix's bytes; unwritten.h), each stretch ends at a whole
 *    record of a higher op, the runs chain, the damaged op lies above the
 *    superblock's durable checkpoint and every op within `window` ops of
 *    it (the bound is derived, not persisted: the engine never holds more
 *    than journal_slots ops above its durable checkpoint) -> cut from the
 *    damaged record with every later record and batch: under every-batch
 *    a lost write means no fsync completed after it, so none of them was
 *    acknowledged (no faulty range); under interval they were
 *    acknowledged once written and are reported faulty up to the last op
 *    the file held (repaired, never nacked); a batch op with its batch
 *    present after such a record, a hole, a chain break, or any other
 *    damaged record followed by others -> refuse with a part_verdict
 *    naming the file, byte and op and why the group-tail rule did not
 *    apply (nothing modified). Batches the partition holds past
 *    the last kept record (its record torn) are cut, all of them when no
 *    record is kept (the log restarts at its first segment's start: a
 *    replicated partition has no batch outside its journal). Body
 *    checksums are
 *    verified for the ops above the superblock's commit_max and the last
 *    op (the partition's open verified every batch of the active
 *    segment; older records are checked against their batch's header,
 *    structure, base offset and length). A batch's message count is
 *    covered only by its body checksum: where the offsets stop agreeing
 *    (a batch not starting where the ones before it end, or the kept
 *    records' batches not ending where the log does) the newest batch
 *    before that point is verified too; one that fails is cut with every
 *    later op (faulty, as a batch that is gone), so the visible frontier
 *    never runs past the journal's head; kept records whose batches end
 *    past the log -> refuse.
 *  - Appending a repaired op never rewrites an existing record: the
 *    record of op N is written only after the records of every op < N,
 *    and truncation (pj_truncate_from) removes whole records from the top
 *    (the batch bytes of the removed ops with them), durably, before the
 *    next append.
 *  - vsr_state is written with persist-before-send semantics by the
 *    binding (pj_state_write returns once durable).
 * Every write goes through the partition's vs_sio (tests inject faults).
 * Process: data shards (the loop thread of the owning shard); tests.
 */
#ifndef VS_SHARD_DATA_PJOURNAL_H
#define VS_SHARD_DATA_PJOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/data/partition.h"

#define PJ_STATE_VERSION 1u
#define PJ_RECORD_PREFIX 16u
#define PJ_INLINE_MAX    4096u /* largest body of a non-batch op */

/* The partition superblock. */
struct pj_state {
    uint32_t view;
    uint32_t log_view;
    uint64_t commit_max;
    uint64_t offset_frontier; /* next offset after the committed batches */
    uint64_t faulty_op;       /* engine's faulty-range top (0 = none) */
    uint64_t nonack_op;       /* its never-nacked top (<= faulty_op) */
    /* The engine's checkpoint: every op <= it is applied (its batch
     * visible); the journal window starts there after a restart. */
    uint64_t checkpoint_op;
    struct vs_u128 checkpoint_checksum;
};

/* 1 for operations whose body is a stamped batch stored in the .log
 * (VS_OP_SEND_MESSAGES); every other body is stored inline. */
int pj_is_batch_op(uint8_t operation);

/* What pj_open recovered, for vsr_create's options. */
struct pj_recovered {
    struct pj_state state; /* zeros for a fresh partition */
    int fresh;             /* 1: no record and no state yet */
    /* 1: no record, and the state is still the one pj_state_format
     * wrote when the partition was created (no run wrote one since) */
    int formatted;
    /* Headers of the retained ops first..head, ascending (heap, freed by
     * pj_recovered_free); at most `window` of them. */
    struct vs_hdr_prepare *headers;
    size_t count;
    uint64_t faulty_op; /* damaged tail cut at this open */
    int has_bad_header; /* only the body of that op failed */
    struct vs_hdr_prepare bad_header;
};
void pj_recovered_free(struct pj_recovered *r);

struct vs_pjournal;

/* Writes the superblock file of a partition being created into `dir`
 * (its directory, not yet renamed into place): the empty state, as the
 * first pj_state_write of a zero state would. Plain create, write and
 * fsync: the creator's directory fsync and rename publish it with the
 * partition's other files, so a crash leaves the whole partition or
 * none (part_open's create path with part_opts.replicated). 0 or
 * -errno (-EEXIST: the file is there already). */
int pj_state_format(struct vs_sio *io, const char *dir);

/* pj_state_write without its fsync, for a caller that fsyncs off the
 * loop: 1 with *fd the superblock file to fsync (the state counts as
 * durable only after that fsync: nothing that relies on it may leave
 * before, and no other state write may start before), or 0 when the
 * write was already durable (the file's first write creates it whole),
 * or -errno as pj_state_write. */
int pj_state_write_nosync(struct vs_pjournal *j, const struct pj_state *s,
                          int *fd);

/* Opens the journal side of partition `p` (already opened by part_open
 * with cut_damaged_tail = 1): reads vsr_state and every .vsr record,
 * verifies the chain and the batches the records name, applies the
 * recovery rules above. Records of segments deleted by a trim (their
 * .vsr files gone with the batches) are not needed: when the first
 * retained record lies above the superblock's checkpoint + 1 and older
 * segments were deleted, the recovered state's checkpoint becomes the op
 * right below it (a trim commits after every op it deletes, so they
 * were applied). `window` bounds the headers returned (the
 * engine's journal_slots): those of the ops from state.checkpoint_op up,
 * at most window + 1. Visibility is capped at the checkpoint op (the
 * engine's replay raises it). 0, or -EBADMSG with `verdict` filled
 * (nothing modified), or another -errno. */
int pj_open(struct vs_part *p, uint32_t window, struct vs_pjournal **out,
            struct pj_recovered *rec, struct part_verdict *verdict);
void pj_close(struct vs_pjournal *j);

/* Appends op `h->op` (= the last op + 1) with its body (a stamped batch
 * for VS_OP_SEND_MESSAGES-class operations, whose base_offset must be the
 * partition's next offset; any other operation's body is stored inline).
 * Not synced. 0, -ENOSPC (nothing appended), -EINVAL (not the next op,
 * or a batch at the wrong offset), -VS_EFATAL. */
int pj_append(struct vs_pjournal *j, const struct vs_hdr_prepare *h,
              const uint8_t *body, uint32_t body_len);
/* What an fsync off the loop must cover now (both files), and its
 * completion (the ops up to `t->op` become durable). */
struct pj_sync_target {
    int log_fd, vsr_fd;
    uint64_t op;  /* highest op the sync makes durable */
    uint64_t seq; /* pj_appends() when the target was taken: the appends
                     numbered <= seq become durable (an op number alone
                     is ambiguous after a truncation re-appends it) */
    uint64_t log_unsynced, log_next; /* the partition's part_sync_target */
};
int pj_sync_target(const struct vs_pjournal *j, struct pj_sync_target *t);
void pj_sync_done(struct vs_pjournal *j, const struct pj_sync_target *t);
/* Synchronous fsync of both files (tests, shutdown). */
int pj_sync(struct vs_pjournal *j);

/* Appends op's stored prepare (header + body) to out. 0, -ENOENT (not
 * in the journal's in-memory window: the newest window + 1 ops and
 * every op above the commit), -EBADMSG (fails its checksums). */
int pj_read(struct vs_pjournal *j, uint64_t op, struct vs_wbuf *out);
/* Removes the .vsr file of the sealed segment starting at `start`, once
 * its batches were deleted (a replicated trim: every replica drops the
 * same segments at the same op). Its ops then read as gone (pj_read
 * -ENOENT: a peer asking for them is answered by others or by a state
 * transfer). 0 (also when absent), -EINVAL (the active segment or a later
 * one), -VS_EFATAL. */
int pj_drop_segment(struct vs_pjournal *j, uint64_t start);
/* Removes every op >= op (records and their batches), durably. Never at
 * or below the committed op. */
int pj_truncate_from(struct vs_pjournal *j, uint64_t op);
/* The committed op: polls see only batches of ops <= it
 * (part_visible_next of the partition is capped accordingly). */
void pj_set_commit(struct vs_pjournal *j, uint64_t op);
/* Writes vsr_state durably (both slots alternate; the first write
 * creates the whole file atomically: temp, fsync, rename, directory
 * fsync). 0 or -VS_EFATAL (out of space is fatal too: the superblock
 * cannot lag). */
int pj_state_write(struct vs_pjournal *j, const struct pj_state *s);

/* ---- partition state transfer (shard/serve/pxfer.h) ----
 * Where the journal of the ops up to `op` ends on disk, so a serving
 * replica can offer its files cut there: op's record is the last of the
 * .vsr of segment vsr_start, ending at byte vsr_end; the last batch at or
 * below op lies in the .log of segment log_start and ends at byte
 * log_end (has_log = 0: no batch op at or below op in the window, the
 * cut is then unknown and not offered); offset_after is the next offset
 * after op's batches; header is op's stored prepare header. op must be
 * committed and in the in-memory window. 0, -ENOENT, -EBADMSG, -errno. */
struct pj_cut {
    uint64_t vsr_start, vsr_end;
    uint64_t log_start, log_end;
    int has_log;
    uint64_t offset_after;
    struct vs_hdr_prepare header;
};
int pj_cut_at(struct vs_pjournal *j, uint64_t op, struct pj_cut *c);
/* The whole vsr_state file holding `s` in one slot (sequence 1), as
 * pj_state_write's first write creates it: what an installer writes. */
#define PJ_STATE_IMAGE_SIZE 256u
void pj_state_image(const struct pj_state *s, uint8_t out[PJ_STATE_IMAGE_SIZE]);
/* The name of the superblock file inside the partition directory. */
#define PJ_STATE_NAME "vsr_state"
/* The current superblock values (what the last pj_state_write wrote, or
 * what pj_open recovered). */
int pj_state_read(struct vs_pjournal *j, struct pj_state *s);

uint64_t pj_head(const struct vs_pjournal *j);   /* last op appended */
uint64_t pj_commit(const struct vs_pjournal *j); /* set by pj_set_commit */
/* Appends made since pj_open (each pj_append returning 0 counts one:
 * the append's number is the value right after it). */
uint64_t pj_appends(const struct vs_pjournal *j);
/* Highest op a completed sync covered. */
uint64_t pj_durable(const struct vs_pjournal *j);
/* Identity checksum of the head op (zero for an empty journal). */
struct vs_u128 pj_head_checksum(const struct vs_pjournal *j);

#endif /* VS_SHARD_DATA_PJOURNAL_H */
