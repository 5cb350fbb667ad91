/*
 * shard/data/segment.h - one segment of a partition: its .log of stamped
 * batches and its sparse .index (layouts in partition.h).
 *
 * Role: the partition engine keeps an array of struct dseg, sorted by
 * start offset, the last one active. This module opens a segment (sealed:
 * index checked and the header walk after its last entry; last: every batch
 * verified, torn tail cut), appends a batch with its index entry, reads
 * batches, and finds where to start a read by offset or timestamp.
 *
 * Index entries are kept in memory for every segment (24 bytes per
 * index_interval bytes of log: ~6 KiB per MiB at the 4 KiB default). The
 * file is an accelerator that is rewritten (atomic replace) whenever it
 * disagrees with the log, so it never needs an fsync of its own before the
 * log's.
 *
 * Invariants: a sealed segment has no open fds (reads open it on demand);
 * the active one keeps its log and index fds. Positions and sizes never
 * exceed the file. Callers: shard/data/partition.c only.
 */
#ifndef VS_SHARD_DATA_SEGMENT_H
#define VS_SHARD_DATA_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "shard/data/partition.h"
#include "shard/storage/io.h"

#define DSEG_PATH_MAX 600
/* The most bytes an unsynced group tail scan reads (whatever the window). */
#define DSEG_UNSYNCED_SCAN_MAX (64u * 1024u * 1024u)

struct pidx_entry {
    uint64_t offset;    /* base_offset of the batch at position */
    uint64_t timestamp; /* its base_timestamp */
    uint64_t position;  /* byte position in the .log */
};

struct dseg {
    uint64_t start;                     /* from the file name */
    uint64_t size;                      /* bytes of valid batches in the .log */
    int empty;                          /* no batch */
    uint64_t first_offset, last_offset; /* of messages (if !empty) */
    uint64_t first_ts, last_ts;         /* base timestamps (if !empty) */
    uint64_t last_batch_pos;            /* position of the last batch */
    struct pidx_entry *idx;
    size_t nidx, capidx;
    uint64_t idx_file_len; /* bytes of the .index file that match idx */
    int idx_stale;         /* file lacks entries: rewrite at seal/close */
    int fd, idx_fd;        /* active segment only, else -1 */
    int read_only;         /* inspection: loads never modify a file (the
                              active log is opened read-only, no cut, no
                              index rewrite); set before loading */
    /* set before loading the active segment: bytes at its end the writer
     * can have written and not yet fsynced (0: each batch fsynced before
     * the next is written); see dseg_load_active */
    uint64_t unsynced_max;
    /* dseg_load_active cut an unsynced group tail: never-written damage
     * followed by whole batches, from this position on (else 0) */
    int unsynced_cut;
    uint64_t unsynced_cut_pos;
    char dir[DSEG_PATH_MAX];
    char log_path[DSEG_PATH_MAX];
    char idx_path[DSEG_PATH_MAX];
    char log_name[32], idx_name[32];
};

/* "<start:020>.log" / ".index" names and paths in dir. */
int dseg_init(struct dseg *s, const char *dir, uint64_t start);
/* Parses "<20 digits>.log"; 1 and *start if it is one, else 0. */
int dseg_parse_name(const char *name, uint64_t *start);

/* Creates an empty segment (both files, O_EXCL; an existing EMPTY file is
 * reused) and keeps them open. The caller fsyncs the directory.
 * 0, -ENOSPC, -VS_EFATAL, -errno. */
int dseg_create(struct vs_sio *io, struct dseg *s);

/* Loads a sealed segment: index file (if consistent with the log) and a
 * header walk after its last entry (or of the whole log). Any structural
 * damage is interior damage: -EBADMSG with *v filled. `expect_min` is the
 * smallest offset its first batch may carry. Modifies no file: a wrong
 * index is rebuilt in memory and marked stale (idx_stale), for dseg_seal
 * to rewrite once the caller accepts the segment. 0, -EBADMSG, -errno,
 * -VS_EFATAL. */
int dseg_load_sealed(struct vs_sio *io, struct dseg *s, uint32_t interval,
                     uint64_t expect_min, struct part_verdict *v);

/* Loads the last (active) segment: every batch verified (batch_validate);
 * torn tail cut (ftruncate + fsync) per partition.h's rules; with
 * s->unsynced_max > 0 also an UNSYNCED GROUP TAIL: damage of the
 * never-written shape (unwritten.h) followed by whole batches (their
 * offsets above the damaged one's, each later damaged stretch of the same
 * shape), all of it within the last s->unsynced_max bytes of the file
 * (and at most DSEG_UNSYNCED_SCAN_MAX): a lost write means no fsync
 * completed after it, so nothing from it on was made durable -- cut
 * there (s->unsynced_cut). Non-zero damage, or damage further from the
 * end, stays interior (refused). Index rebuilt
 * and rewritten if it differs; files left open for appends. Under
 * every-batch (unless cut_damaged_tail) refuses PART_R_TRUNCATED, before
 * modifying anything, when the valid end lies before an old index entry
 * other than the last, or its end offset is below `written_floor` (the
 * partition's floor: what a clean close recorded as written).
 * 0, -EBADMSG (*v), -errno, -VS_EFATAL. */
int dseg_load_active(struct vs_sio *io, struct dseg *s, uint32_t interval,
                     uint64_t expect_min, enum part_durability policy,
                     int cut_damaged_tail, uint64_t written_floor,
                     struct part_verdict *v);

/* Appends one stamped batch at s->size and its index entry if due.
 * ENOSPC: the log is cut back to its old size, -ENOSPC. Does not fsync.
 * 0, -ENOSPC, -VS_EFATAL. */
int dseg_append(struct vs_sio *io, struct dseg *s, const uint8_t *batch,
                size_t len, uint32_t interval);

/* The batch [batch, len) was written at s->size by the caller (an
 * append whose pwrite ran on another thread): accounts it and appends its
 * index entry if due, as dseg_append does after its write. 0, -VS_EFATAL
 * (an index write failure other than ENOSPC). */
int dseg_append_written(struct vs_sio *io, struct dseg *s, const uint8_t *batch,
                        size_t len, uint32_t interval);

/* fsync of the log (and index if `with_index`). 0 or -VS_EFATAL. */
int dseg_sync(struct vs_sio *io, struct dseg *s, int with_index);
/* Rewrites a stale index, closes the fds: the segment becomes sealed.
 * 0, -ENOSPC (index left stale: rebuilt at next open), -VS_EFATAL. */
int dseg_seal(struct vs_sio *io, struct dseg *s);
/* Closes fds, frees the index. */
void dseg_fini(struct vs_sio *io, struct dseg *s);
/* Unlinks .log then .index (a leftover .index without .log is removed at
 * open). 0 or -errno. */
int dseg_unlink(struct vs_sio *io, struct dseg *s);

/* Position of the last index entry with offset <= `offset` (0 if none). */
uint64_t dseg_pos_for_offset(const struct dseg *s, uint64_t offset);
/* Position of the last index entry with timestamp < `ts` (0 if none). */
uint64_t dseg_pos_for_timestamp(const struct dseg *s, uint64_t ts);

/* Reads exactly len bytes at pos of the log (opens a sealed one on demand
 * through *fdc, a cached fd the caller closes with dseg_fd_release).
 * 0 or -errno. */
int dseg_read(struct vs_sio *io, const struct dseg *s, uint64_t pos, void *buf,
              size_t len, int *fdc);
void dseg_fd_release(struct vs_sio *io, const struct dseg *s, int *fdc);

#endif /* VS_SHARD_DATA_SEGMENT_H */
