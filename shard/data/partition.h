/*
 * shard/data/partition.h - the storage engine of one partition: append,
 * reads, consumer offsets, retention, purge, crash recovery.
 *
 * Role: the data shard that owns a partition (DESIGN §1) opens it once and
 * calls this API from its event loop for send, poll, offsets, stats and
 * retention. Nothing here reads a clock: the caller passes wall times.
 *
 * On disk (DESIGN §4; one directory per partition, see pdir.h):
 *   DATA/partitions/<stream>.<topic>.<partition>.<created_op>/
 *     format                 "VSPD" | version u32 | stream u32 | topic u32 |
 *                            partition u32 | created_op u64 | XXH3 u64
 *                            (written once at create; an unknown version or
 *                            other ids are a typed refusal)
 *     state                  "VSPS" | version u32 | purge_generation u64 |
 *                            offset_floor u64 | XXH3 u64   (atomic replace)
 *     <start:020>.log        stamped batches back to back (batch.h layout)
 *     <start:020>.index      sparse entries: offset u64 | timestamp u64 |
 *                            position u64 (one for a segment's first batch,
 *                            then one whenever >= index_interval bytes were
 *                            appended since the previous entry). The index
 *                            is an accelerator: it is rebuilt from the log
 *                            when it is missing or disagrees with it.
 *     offsets/consumers/<key>            offset u64 | XXH3-64(offset) u64
 *     offsets/groups/<group>.<created_op> same
 *   (all multi-byte fields little endian; every replaced file goes through
 *   afile_*, every write through sio_*, so tests inject EIO/ENOSPC/tears).
 *
 * Offsets: each batch gets base_offset = next offset; offsets are strictly
 * increasing through the log but may have GAPS after a crash under the
 * interval policy (see "offset floor"). A read of an offset inside a gap
 * starts at the next existing message.
 *
 * Durability (part_opts.durability):
 *   PART_FSYNC_EVERY_BATCH (default): part_append writes the batch and
 *     fsyncs the log before returning; an acknowledged batch is durable.
 *   PART_FSYNC_INTERVAL: part_append returns after the write; the log is
 *     fsynced by part_tick() when fsync_interval_ms have passed since the
 *     last fsync or fsync_bytes are unsynced (checked by part_append too).
 *     A crash may lose acknowledged batches; it never reuses their offsets.
 * Offset floor ("frontier"): the `state` file holds a floor; at open,
 *   next_offset = max(end of the log, floor). Under the interval policy the
 *   floor is persisted AHEAD of use (frontier_step offsets at a time, atomic
 *   replace) before any offset at or above the old floor is handed out, so
 *   an offset acknowledged and then lost in a crash is never handed out
 *   again. A clean part_close() writes floor = next offset (no gap).
 *
 * Recovery (part_open): sealed segments are checked through their index
 * and a walk of the batch headers after its last entry (ends contiguous and
 * increasing); the LAST segment is scanned batch by batch with every
 * checksum verified:
 *   - the file ends inside a batch (short header or short body), or a
 *     batch header is structurally invalid with no valid batch after it:
 *     a torn tail -> cut back to the end of the last complete valid batch
 *     (ftruncate + fsync), the index tail rebuilt;
 *   - a full-length batch whose checksums fail and that is followed by a
 *     valid batch (or by any bytes, under every-batch: a later append means
 *     its fsync completed): interior damage -> refuse
 *     PART_R_INTERIOR_DAMAGE;
 *   - the LAST batch is full length with a valid header but a failing
 *     checksum: under every-batch it may have been acknowledged -> refuse
 *     PART_R_TAIL_CHECKSUM (unless opts.cut_damaged_tail, the operator's
 *     explicit choice); under interval it was never promised durable -> cut.
 *   - damage of the never-written shape (zeros where a write did not
 *     land, unwritten.h) followed by whole batches, all within the bytes
 *     the writer can have left unsynced (part_opts.unsynced_max: under
 *     interval, or a replicated partition whose group writes several
 *     ops before one fsync): an unsynced group tail -> cut at the damage
 *     (a lost write means no fsync completed after it: nothing from it
 *     on was durable); non-zero damage, or damage further from the end,
 *     stays interior damage (refused, the message says which rule did
 *     not fit);
 *   Acknowledged data missing (every-batch, where every acknowledged batch
 *   was fsynced before the next append began): refuse
 *     PART_R_TRUNCATED when the valid end of the last segment is below an
 *     old index entry other than the last one (that one may be the torn
 *     batch's), or below the offset floor a clean close recorded;
 *     PART_R_SEGMENT_GAP when a sealed segment is empty or does not end
 *     exactly where the next segment starts (a sealed segment missing in
 *     the middle, emptied or cut short). The first segment may start
 *     above 0 (retention and DeleteSegments remove the oldest ones).
 *     opts.cut_damaged_tail overrides these too (the operator accepts the
 *     loss); a cluster replica repairs instead (replication).
 *   A refusal returns -EBADMSG and fills struct part_verdict (reason, file,
 *   position, a one-line message). Nothing is modified before a refusal.
 *
 * Out of space: part_append failing with -ENOSPC cuts the partial write
 *   back (ftruncate), leaves the partition exactly as before, and reads keep
 *   working. Any other I/O failure is -VS_EFATAL (io poisoned, the shard
 *   exits 2 with sio_fatal_msg()).
 *
 * Reads return whole stamped batches (the poll reply layout: records walked
 *   by batch_length), TRIMMED AT MESSAGE GRANULARITY to the requested range:
 *   a batch that straddles the range is re-emitted with only the frames in
 *   range, its base_offset and base_timestamp kept (offset = base_offset +
 *   offset_delta stays right), batch_length / message_count adjusted and the
 *   batch checksum recomputed. Reads never go past the visible end (every
 *   appended batch once part_append returned 0; under every-batch that is
 *   the durable end).
 *
 * Invariants: a struct vs_part is owned by one data shard's event loop
 * thread; not thread-safe; at most one open handle per directory (the
 * owning shard). Callers: data shards (serve layer), tests, benches.
 */
#ifndef VS_SHARD_DATA_PARTITION_H
#define VS_SHARD_DATA_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "shard/data/batch.h"
#include "shard/storage/io.h"

#define PART_FORMAT_VERSION 1u

/* Identity of a partition: ids AND the op that created it. */
struct part_id {
    uint32_t stream_id;
    uint32_t topic_id;
    uint32_t partition_id;
    uint64_t created_op;
};

enum part_durability {
    PART_FSYNC_EVERY_BATCH = 0,
    PART_FSYNC_INTERVAL = 1,
};

struct part_opts {
    uint64_t segment_size;   /* roll before a batch would cross it */
    uint32_t index_interval; /* bytes between index entries (0 = each batch) */
    enum part_durability durability;
    uint32_t fsync_interval_ms; /* interval policy */
    uint64_t fsync_bytes;       /* interval policy */
    uint64_t frontier_step;     /* offsets reserved per floor write */
    int cut_damaged_tail;       /* operator flag: cut a bad last batch */
    /* Bytes at the end of the active segment the writer can have written
     * and not yet fsynced, the window of the unsynced group tail rule
     * (segment.h dseg_load_active). 0: derived from the policy --
     * every-batch: none (each batch is fsynced before the next is
     * written); interval: 2 * (fsync_bytes + limits.max_batch_bytes)
     * (the writer fsyncs once fsync_bytes are unsynced, and one more
     * append or group commit's writes may land while that fsync runs):
     * derived, not persisted. A replicated
     * partition's binding sets its journal's window (its engine never
     * holds more than journal_slots ops above the durable checkpoint,
     * and none of them is reported durable before its fsync); the larger
     * of it and the policy's is used. */
    uint64_t unsynced_max;
    int purge_keep_offsets; /* 0: a purge restarts offsets at 0 (Iggy) */
    int verify_reads;       /* 1 (default): verify every batch read for a poll;
                               0 only to measure what verification costs */
    /* A member of a replica set of more than one (its consensus group
     * runs on this node): the create path also writes the group's first
     * superblock (pjournal.h pj_state_format) with the partition's files,
     * so the group's first open writes nothing. */
    int replicated;
    /* the caller made the directory just now (part_create_many): the
     * open counts as the one that created it (part_take_created) */
    int created_now;
    int read_only; /* vstream-inspect: open runs the boot verdict and
                      modifies nothing (create = 0, purge_generation 0;
                      release with part_abandon, never append) */
    struct batch_limits limits;
};

/* segment_size 1 GiB, index_interval 4 KiB, every-batch, 100 ms, 4 MiB,
 * frontier_step 1,000,000, batch_limits_default, purge restarts at 0,
 * reads verified. */
void part_opts_default(struct part_opts *o);

/* Why an open refused. */
enum part_reason {
    PART_R_NONE = 0,
    PART_R_NO_FORMAT,       /* directory exists, format file absent */
    PART_R_BAD_FORMAT,      /* format file unreadable or checksum wrong */
    PART_R_UNKNOWN_VERSION, /* format version this release does not know */
    PART_R_ID_MISMATCH,     /* format file names another partition */
    PART_R_BAD_STATE,       /* state file corrupt */
    PART_R_NO_SEGMENT,      /* no .log file in an existing partition */
    PART_R_SEGMENT_ORDER,   /* sealed segments overlap or are out of order */
    PART_R_INTERIOR_DAMAGE, /* a damaged batch before valid data */
    PART_R_TAIL_CHECKSUM,   /* last batch full length, checksum fails,
                               every-batch policy: maybe acknowledged */
    PART_R_TRUNCATED,       /* every-batch: the log ends before what its
                               index or the state records as written */
    PART_R_SEGMENT_GAP,     /* every-batch: a sealed segment is empty, or
                               consecutive segments leave an offset gap
                               (a segment missing or cut short) */
};

struct part_verdict {
    enum part_reason reason;
    char file[256];    /* the file concerned, relative to the partition */
    uint64_t position; /* byte position in it */
    char msg[512];     /* one line: "partition 1.2.3@7: ... " */
};

const char *part_reason_str(enum part_reason r);

struct vs_part;

/* Opens (create = 0) or creates-and-opens (create = 1) the partition whose
 * directory is `partitions_dir`/<name of id>. create = 1 on an existing
 * directory just opens it (idempotent: the caller creates on every publish
 * it sees). create = 0 on a missing directory -> -ENOENT.
 * `purge_generation` is the metadata's value: if it is above the one the
 * state file holds, an interrupted purge is completed before anything else
 * (see part_purge).
 * Returns 0, -EBADMSG (refused: *verdict filled; verdict may be NULL),
 * -ENOSPC, -VS_EFATAL, -ENOMEM or another -errno. */
int part_open(struct vs_sio *io, const char *partitions_dir,
              const struct part_id *id, const struct part_opts *opts,
              int create, uint64_t purge_generation, struct vs_part **out,
              struct part_verdict *verdict);

/* One partition of part_create_many. */
struct part_create {
    struct part_id id;
    uint64_t purge_generation;
    int replicated; /* part_opts.replicated of its open */
    int made;       /* out: its directory was made (0: it was there) */
};

/* Creates the missing directories of v[0, n) (those that exist are left
 * to part_open's checks) as part_open's create path would, with their
 * fsyncs shared: each directory is built under a temporary name, then
 * all are made durable, then each is renamed into place, then the
 * partitions directory is fsynced once for all. A crash at any point
 * leaves each partition whole or absent (a temporary leftover is removed
 * by its next creation). Then open each with create = 1 and
 * part_opts.created_now = made. Returns 0 (v[i].made set) or -errno
 * (every made 0: the directories published before the error are opened
 * as existing ones). */
int part_create_many(struct vs_sio *io, const char *partitions_dir,
                     struct part_create *v, size_t n);

/* 1 the first time it is called on a handle whose part_open created the
 * partition's directory (a replicated partition's group tells its first
 * run after creation from a later one: its superblock was written at
 * create); 0 after that, and for a partition that already existed. */
int part_take_created(struct vs_part *p);

/* Flushes (fsync of the active log and index), writes floor = next offset,
 * closes and frees. Returns the first error (the handle is freed anyway). */
int part_close(struct vs_part *p);
/* Frees without writing anything (crash simulation, fatal paths). */
void part_abandon(struct vs_part *p);

/* ---- send ---- */

struct part_append_result {
    uint64_t base_offset;
    uint64_t base_timestamp;
    uint32_t message_count;
};

/* Validates batch[0..len) (a client batch: batch_validate(client = 1)),
 * stamps it IN PLACE (partition_id, base_offset = next offset,
 * base_timestamp = max(last, wall_us)), appends it (rolling the segment
 * first if it would cross segment_size), fsyncs under every-batch.
 * Returns 0; -EINVAL with *berr set for a refused batch (nothing stored;
 * berr may be NULL); -ENOSPC (nothing stored, partial write cut back);
 * -VS_EFATAL. */
int part_append(struct vs_part *p, uint8_t *batch, size_t len, uint64_t wall_us,
                struct part_append_result *res, enum batch_err *berr);

/* Group commit (the serve layer fsyncs off its event loop): appends like
 * part_append but never fsyncs, whatever the policy. Under every-batch
 * the batch stays invisible to reads (part_visible_next) until a
 * part_sync_done whose target covers it. The caller acknowledges only
 * after that fsync, and keeps at most one such batch pending per
 * partition: the recovery rules above assume at most one unsynced batch
 * under every-batch. */
int part_append_nosync(struct vs_part *p, uint8_t *batch, size_t len,
                       uint64_t wall_us, struct part_append_result *res,
                       enum batch_err *berr);
/* An append whose write runs on another thread (the serve layer's
 * group commit writes and fsyncs off its event loop):
 *   part_append_begin (loop) validates, persists the floor, rolls and
 *     stamps like part_append and reserves the active segment's end; the
 *     offsets are taken but nothing is accounted yet (reads, stats and
 *     the next offset do not move) and no other append may begin
 *     (-EBUSY) until part_append_end;
 *   part_write_run (ANY thread) writes the batch through the io's raw
 *     pwrite into its own dup of the log fd; it touches nothing but *w,
 *     so the loop may read the partition meanwhile (the io's pwrite must
 *     be callable from that thread: sio_init_real's is; the fault
 *     injector's only while the loop makes no io call);
 *   part_append_end (loop) classifies the result as sio_pwrite_all does:
 *     -ENOSPC (the partial write cut back, the partition as before),
 *     -VS_EFATAL (any other write error: io poisoned), or accounts the
 *     batch as part_append_nosync would have (under every-batch hidden
 *     until a part_sync_done covers it). -ECANCELED when a part_purge
 *     came between (nothing accounted; the bytes, if they landed, are in
 *     the file the purge removed: the writer's fd is its own).
 *     part_truncate_tail refuses (-EBUSY) while a write is begun.
 * The caller keeps the batch's buffer alive and unchanged from begin to
 * end (the write reads it, end reads its header). When the handle goes
 * before end (partition deleted, shard stopping): part_write_release. */
struct part_write {
    struct vs_sio *io;
    int fd; /* the writer's dup of the active log */
    const uint8_t *buf;
    size_t len;
    uint64_t pos;            /* where in the active log */
    uint64_t base, next, ts; /* offsets and timestamp it was given */
    uint64_t token;          /* the handle's pending write */
    int err;                 /* part_write_run: 0 or -errno */
    size_t written;          /* part_write_run: bytes that landed */
};
int part_append_begin(struct vs_part *p, uint8_t *batch, size_t len,
                      uint64_t wall_us, struct part_append_result *res,
                      enum batch_err *berr, struct part_write *w);
void part_write_run(struct part_write *w);
/* 0, -ENOSPC, -VS_EFATAL, -ECANCELED (see above); releases w's fd. */
int part_append_end(struct vs_part *p, struct part_write *w);
/* Closes w's fd (idempotent). */
void part_write_release(struct part_write *w);
/* 1 between part_append_begin and part_append_end. */
int part_write_pending(const struct vs_part *p);

/* What an fsync on another thread must cover now: the active log's fd
 * (owned by the handle: dup it, the handle may close it meanwhile) and
 * path, and the unsynced bytes and next offset at this moment. */
struct part_sync_target {
    int fd;
    const char *path;
    uint64_t unsynced_bytes;
    uint64_t next_offset;
};
/* 0, or -EIO when the handle has no active segment or its io is fatal. */
int part_sync_target(const struct vs_part *p, struct part_sync_target *t);
/* The fsync of a target taken by part_sync_target completed: those bytes
 * are durable, batches below t->next_offset become visible. */
void part_sync_done(struct vs_part *p, const struct part_sync_target *t,
                    uint64_t now_ms);
/* 1 if an fsync is due: under every-batch whenever bytes are unsynced,
 * under interval as part_tick decides. */
int part_sync_due(const struct vs_part *p, uint64_t now_ms);
/* 1 under the every-batch policy. */
int part_every_batch(const struct vs_part *p);
/* Reads end before this offset (next offset, or the first batch still
 * waiting for its fsync under every-batch). */
uint64_t part_visible_next(const struct vs_part *p);

/* Interval policy: fsyncs if fsync_interval_ms passed since the last fsync
 * (now_ms is any monotonic clock the caller keeps) or fsync_bytes are
 * unsynced. Every-batch: no-op. 0 or -VS_EFATAL. */
int part_tick(struct vs_part *p, uint64_t now_ms);
/* Fsyncs now whatever the policy (FlushUnsavedBuffer). 0 or -VS_EFATAL. */
int part_flush(struct vs_part *p);

/* ---- replicated partitions (shard/data/pjournal.c) ----
 * A partition that is a VSR group's journal stores batches the group's
 * primary already stamped (the same bytes on every replica), shows polls
 * only the committed ones, and may cut its uncommitted tail when a view
 * change discards it. Such a partition is opened with cut_damaged_tail = 1
 * (a damaged tail is repaired from the peers, never refused) and never
 * uses part_append / part_append_nosync. Loop thread of the owning shard. */

/* Where a stored batch lies: its segment (by start offset) and byte
 * position in that segment's .log. */
struct part_log_pos {
    uint64_t seg_start;
    uint64_t position;
};
/* Appends an ALREADY STAMPED batch unchanged: validated fully
 * (batch_validate(client = 0)), partition_id must be this partition's,
 * base_offset the next offset, base_timestamp not below the last one.
 * Rolls the segment like part_append; never fsyncs and leaves the batch
 * visible (the caller caps visibility with part_set_visible_cap); does
 * not move the offset floor (offsets come from the group's log). *pos
 * (may be NULL) gets where it landed. 0; -EINVAL (*berr says why, or
 * BATCH_OK when only the offset or timestamp is wrong; nothing stored);
 * -ENOSPC (nothing stored, partial write cut back); -VS_EFATAL. */
int part_append_stamped(struct vs_part *p, const uint8_t *batch, size_t len,
                        struct part_log_pos *pos, enum batch_err *berr);
/* Reads end before `next` (UINT64_MAX: no cap, the default). */
void part_set_visible_cap(struct vs_part *p, uint64_t next);
/* Start offset of the active segment. */
uint64_t part_active_start(const struct vs_part *p);
/* The i-th segment, oldest first: 0, or -ENOENT past the last. */
int part_segment_at(const struct vs_part *p, size_t i, uint64_t *start,
                    uint64_t *size);
/* Reads exactly len raw bytes at pos of segment seg_start's .log (no
 * visibility cap: a journal reads its uncommitted batches too). 0,
 * -ENOENT (no such segment), -ERANGE (past its end), -errno. */
int part_read_log(struct vs_part *p, uint64_t seg_start, uint64_t pos,
                  void *buf, size_t len);
/* Removes every batch with base_offset >= offset (offset must start a
 * batch or be the next offset; -EBUSY while a part_append_begin is not
 * ended), durably: the floor is lowered first, then
 * later segments unlinked, the index and the log cut and fsynced, and the
 * segment holding the cut reloaded as the active one. next_offset becomes
 * `offset`. 0, -EINVAL (not a batch boundary of the retained log; nothing
 * changed), -VS_EFATAL (the handle must be abandoned). */
int part_truncate_tail(struct vs_part *p, uint64_t offset);

/* ---- reads ---- */

enum part_strategy {
    PART_POLL_OFFSET = 1,
    PART_POLL_TIMESTAMP = 2,
    PART_POLL_FIRST = 3,
    PART_POLL_LAST = 4,
    PART_POLL_NEXT = 5, /* value = the consumer's stored offset + 1, or 0 */
};

struct part_poll_result {
    uint32_t count;        /* messages appended to out */
    uint32_t batches;      /* batch records appended to out */
    uint64_t first_offset; /* of the first message (if count > 0) */
    uint64_t last_offset;  /* of the last message (if count > 0) */
};

/* Appends to `out` the batch records holding up to `count` messages from
 * the start the strategy selects:
 *   OFFSET value: messages with offset >= value;
 *   TIMESTAMP value: from the first batch whose base_timestamp >= value
 *     (a message's timestamp is its batch's base_timestamp);
 *   FIRST: from the first retained message; LAST: the last `count`
 *     messages (start = current - count + 1, clamped to the first);
 *   NEXT value: as OFFSET (the caller resolves the consumer's offset).
 * Stops early once `max_bytes` of records were appended (at least one
 * record is always returned when any message matches). An empty result is
 * count 0 with nothing appended. Every batch read from disk is verified
 * (batch_validate: every message checksum, the batch checksum, the frame
 * walk) before anything of it is emitted; a batch that fails is logged
 * with partition, offset, segment and position and the poll fails with
 * -EBADMSG (nothing appended: damage is never served). 0, -EINVAL (bad
 * strategy), -EBADMSG, -EIO-like -errno on a read failure. */
int part_poll(struct vs_part *p, enum part_strategy strategy, uint64_t value,
              uint32_t count, size_t max_bytes, struct vs_wbuf *out,
              struct part_poll_result *res);

/* ---- state and stats ---- */

struct part_stats {
    uint64_t next_offset;    /* the offset the next message will get */
    uint64_t first_offset;   /* first retained message (== next if empty) */
    uint64_t current_offset; /* last message's offset; 0 if none */
    int empty;               /* no retained message */
    uint64_t size_bytes;     /* sum of .log sizes */
    uint64_t messages;       /* offsets spanned by retained segments */
    uint32_t segments;       /* >= 1 */
    uint64_t unsynced_bytes; /* interval policy */
    uint64_t last_timestamp; /* base_timestamp of the last batch, 0 if none */
    uint64_t read_errors;    /* batches refused on read (damage) */
};
void part_stats(const struct vs_part *p, struct part_stats *out);
const struct part_id *part_ident(const struct vs_part *p);
/* Path of the partition directory. */
const char *part_dir(const struct vs_part *p);
/* The I/O layer the partition was opened with. */
struct vs_sio *part_io(struct vs_part *p);

/* ---- retention, DeleteSegments, purge ---- */

struct part_retention_result {
    uint32_t segments_deleted;
    uint64_t bytes_deleted;
};

/* Deletes whole SEALED segments, oldest first (never the active one):
 * a segment whose last batch's base_timestamp + message_expiry_us <= now_us
 * (message_expiry_us 0 or UINT64_MAX = never expire), then oldest ones
 * while the partition's size exceeds max_bytes (0 or UINT64_MAX = no cap;
 * the caller gives each partition its share of max_topic_size).
 * 0 or -VS_EFATAL; res may be NULL. */
int part_retention(struct vs_part *p, uint64_t now_us,
                   uint64_t message_expiry_us, uint64_t max_bytes,
                   struct part_retention_result *res);

/* What part_retention and then part_apply_watermark(watermark) would
 * delete, as one watermark (pure; no I/O): the start offset of the first
 * segment that would survive, 0 when nothing would go. A replicated
 * partition's primary proposes it to its group (every replica then
 * applies it with part_apply_watermark, deleting the same segments). */
uint64_t part_retention_watermark(const struct vs_part *p, uint64_t now_us,
                                  uint64_t message_expiry_us,
                                  uint64_t max_bytes, uint64_t watermark);

/* DeleteSegments (iggy-client-protocol-2 §1.2: the `n` oldest SEALED
 * segments). Computes the offset watermark the metadata op records: the
 * start offset of the first segment that survives (nothing sealed -> the
 * current first offset, a no-op). Pure; no I/O. */
uint64_t part_watermark_for_segments(const struct vs_part *p, uint32_t n);
/* Applies a watermark (idempotent; call after open with the metadata's
 * deleted_up_to_offset too): deletes every sealed segment all of whose
 * messages are below `watermark`. 0 or -VS_EFATAL. */
int part_apply_watermark(struct vs_part *p, uint64_t watermark,
                         struct part_retention_result *res);

/* Purge (iggy-client-protocol-2 §1.2): every segment and every consumer
 * offset is removed and the partition restarts as one empty segment.
 * opts.purge_keep_offsets = 0 (the reference's semantics, the default): the
 * offset counter restarts at 0. 1: it continues from the next offset (the
 * floor is persisted first, so no offset is ever reused).
 * Idempotent by generation: does nothing if `purge_generation` is not
 * above the stored one; the generation is written to `state` LAST, so a
 * crash mid-purge is completed by the next part_open (which is given the
 * metadata's generation). 0, -ENOSPC, -VS_EFATAL. */
int part_purge(struct vs_part *p, uint64_t purge_generation);

/* ---- partition state transfer (shard/serve/pxfer.h) ---- */

/* The `state` file's bytes holding (purge_generation, floor), as
 * state_write writes them: what an installer writes beside an image. */
#define PART_STATE_IMAGE_SIZE 32u
void part_state_image(uint64_t purge_generation, uint64_t floor,
                      uint8_t out[PART_STATE_IMAGE_SIZE]);
/* The options the partition was opened with. */
const struct part_opts *part_options(const struct vs_part *p);
/* The purge generation the partition's `state` file holds (also for a
 * replicated partition's purge below). */
uint64_t part_purge_generation(const struct vs_part *p);

/* A replicated partition's purge is an op of its group (shard/serve/
 * pgroup.h): when a replica appends it, it seals its active segment
 * (part_seal_active: a new empty active segment at the next offset;
 * nothing when the active one is empty), so every replica has a segment
 * boundary at the purge's offset; when it commits, the segments below go
 * (part_apply_watermark), the consumer offsets too, and the generation is
 * recorded (part_set_purge_generation: the state file, durably; never
 * lowered), so part_open never purges it again locally. 0 or -errno /
 * -VS_EFATAL. */
int part_seal_active(struct vs_part *p);
int part_set_purge_generation(struct vs_part *p, uint64_t purge_generation);

/* ---- consumer offsets (implemented in offsets.c) ---- */

enum part_consumer_kind {
    PART_CONSUMER = 1, /* key = numeric id, or XXH32(name) */
    PART_GROUP = 2,    /* key = group id; group_created_op disambiguates */
};

struct part_consumer {
    enum part_consumer_kind kind;
    uint32_t id;
    uint64_t group_created_op; /* PART_GROUP only */
};

/* The offset key of a named consumer: XXH32(name, seed 0). */
uint32_t part_consumer_name_key(const void *name, size_t len);

/* The stored offset: 0, -ENOENT (nothing stored), -EBADMSG (the file is
 * damaged beyond its fallback record: the caller reports the offsets
 * damaged, never "nothing stored"), -errno. A damaged current record
 * falls back to the previous durable value (0 is returned). */
int part_offset_get(struct vs_part *p, const struct part_consumer *c,
                    uint64_t *offset);
/* Explicit store (may move backwards). The partition must hold a message
 * at or after `offset`: offset > current or empty partition -> -ERANGE
 * (Iggy 4100 InvalidOffset). 0, -ERANGE, -ENOSPC, -VS_EFATAL. */
int part_offset_store(struct vs_part *p, const struct part_consumer *c,
                      uint64_t offset);
/* Auto-commit: stores max(stored, offset); never decreases. *stored (may
 * be NULL) gets the value now stored. 0, -EBADMSG (damaged file: left
 * alone, an explicit store repairs it), -ENOSPC, -VS_EFATAL. */
int part_offset_commit(struct vs_part *p, const struct part_consumer *c,
                       uint64_t offset, uint64_t *stored);
/* 0, -ENOENT (nothing stored: Iggy 3021), -VS_EFATAL. */
int part_offset_delete(struct vs_part *p, const struct part_consumer *c);
/* Removes every consumer and group offset (purge). 0 or -VS_EFATAL. */
int part_offsets_clear(struct vs_part *p);

#endif /* VS_SHARD_DATA_PARTITION_H */
