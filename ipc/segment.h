/*
 * ipc/segment.h - the node's shared-memory segment (one memfd).
 *
 * Role: the supervisor creates the segment before forking (memfd +
 * ftruncate + mmap MAP_SHARED) together with one eventfd doorbell per
 * process slot and one for itself, and a connection handoff channel per
 * data shard (ipc/handoff.h); children inherit the mapping (same
 * address) and the fds. Process slots: 0 = shard 0 (metadata), 1..K =
 * data shards; n_procs = K + 1.
 *
 * Layout (offsets from the segment start; every region page-aligned):
 *   [struct vs_seg_hdr_shm]                         page 0
 *   [n_procs x struct vs_proc_shm]                  procs_off
 *   [left-right region: lr.h]                       lr_off (page-aligned;
 *                                                   instances inside it
 *                                                   page-aligned too)
 *   [n_procs x n_procs rings (src, dst), src != dst] rings_off, stride
 *   [per-partition stats table: stats.h]            stats_off (page-aligned;
 *                                                   absent when the
 *                                                   capacity is 0)
 *   [failed-login throttle table: throttle.h]       seg_throttle_region
 *                                                   (page-aligned after the
 *                                                   previous regions; absent
 *                                                   when throttle_slots is 0)
 *   [client connection table: conntab.h]            seg_conntab_region
 *                                                   (likewise; absent when
 *                                                   conntab_slots is 0)
 *   [n_procs x struct vs_metrics_block_shm]         metrics_off (page-
 *                                                   aligned; ipc/metrics.h)
 * The header holds offsets and the sizes of every shared struct; a
 * mismatch refuses to attach (-EPROTO). Layout version 2 added the
 * metrics blocks (and grew the header to 192 bytes). Nothing shared
 * holds a pointer.
 *
 * Invariants: a process writes only what its role owns: its vs_proc_shm
 * (pid, ready, reason), its left-right reader slot, the producer side of
 * the rings it sends on and the consumer side of those it receives on;
 * shard 0 writes the left-right instances and control words; a data
 * shard writes the stats entries it claimed (stats.h); every process
 * writes its own metrics block (common/metrics.h); the
 * supervisor writes the header's log_level and clears a reaped
 * process's vs_proc_shm and reader slot before respawning into it.
 *
 * Callers: seg_create/seg_destroy by the supervisor (and tests); the
 * accessors by any process that inherited or attached the segment;
 * seg_attach_fd by tools and tests that got the memfd another way.
 */
#ifndef VS_IPC_SEGMENT_H
#define VS_IPC_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/lr.h"
#include "ipc/ring.h"
#include "common/metrics.h"
#include "ipc/stats.h"
#include "ipc/conntab.h"
#include "ipc/throttle.h"

#define VS_SEG_MAGIC          0x31544d4753535656ull /* "VVSSGMT1" */
#define VS_SEG_LAYOUT_VERSION 2u
#define VS_SEG_MAX_PROCS      257u /* shard 0 + 256 data shards */
#define VS_SEG_REASON_MAX     192u

/* Segment header, at offset 0. Written once by seg_create except the
 * atomics, whose writers are named. */
struct vs_seg_hdr_shm {
    uint64_t magic;
    uint32_t layout_version;
    uint32_t page_size;
    /* sizes of every shared struct, checked on attach */
    uint32_t hdr_size;      /* struct vs_seg_hdr_shm */
    uint32_t proc_size;     /* struct vs_proc_shm */
    uint32_t lr_hdr_size;   /* struct vs_lr_hdr_shm */
    uint32_t lr_slot_size;  /* struct vs_lr_slot_shm */
    uint32_t ring_hdr_size; /* struct vs_ring_shm */
    uint32_t n_procs;
    uint64_t total_size;
    uint64_t procs_off;
    uint64_t lr_off;
    uint64_t lr_size;
    uint64_t lr_instance_size;
    uint64_t rings_off;
    uint64_t ring_stride; /* bytes per ring (header + data) */
    uint32_t ring_bytes;  /* data bytes per ring */
    /* Log level for children after SIGHUP; supervisor stores (relaxed:
     * the SIGHUP it forwards afterwards orders it). */
    _Atomic uint32_t log_level;
    /* 1 once the supervisor began stopping the node (relaxed). */
    _Atomic uint32_t stopping;
    uint32_t stats_capacity; /* entries of the stats table */
    uint64_t stats_off;      /* 0 when stats_capacity is 0 */
    /* entries of the login throttle table (0: none); the region follows
     * the others, page-aligned */
    uint32_t throttle_slots;
    /* entries of the client connection table (max_connections; 0: none),
     * after the throttle table, page-aligned */
    uint32_t conntab_slots;
    uint64_t metrics_off;        /* n_procs metrics blocks */
    uint32_t metrics_block_size; /* struct vs_metrics_block_shm */
    uint8_t pad[52];
};

/* Per process slot, one cache line plus the exit reason. */
struct vs_proc_shm {
    /* Pid of the process in the slot (child stores at start; the
     * supervisor clears after reaping). */
    _Alignas(64) _Atomic int32_t pid;
    /* Child stores 1 (release) once it serves; supervisor clears. */
    _Atomic uint32_t ready;
    /* Spawn count of the slot; supervisor stores before fork. */
    _Atomic uint64_t incarnation;
    /* Data shards: open client connections (shard/serve/balance.h). */
    _Atomic uint32_t conns;
    uint8_t pad[44];
    /* One-line reason a child writes before exiting 2 (plain bytes:
     * read by the supervisor after waitpid, which orders them). */
    char reason[VS_SEG_REASON_MAX];
};

_Static_assert(sizeof(struct vs_seg_hdr_shm) == 192, "segment header");
_Static_assert(offsetof(struct vs_seg_hdr_shm, metrics_off) == 128,
               "segment header layout");
_Static_assert(offsetof(struct vs_seg_hdr_shm, log_level) == 100,
               "segment header layout");
_Static_assert(offsetof(struct vs_seg_hdr_shm, stats_off) == 112,
               "segment header layout");
_Static_assert(offsetof(struct vs_seg_hdr_shm, throttle_slots) == 120,
               "segment header layout");
_Static_assert(offsetof(struct vs_seg_hdr_shm, conntab_slots) == 124,
               "segment header layout");
_Static_assert(VS_STATS_MAX_OWNERS >= VS_SEG_MAX_PROCS, "stats owners");
_Static_assert(sizeof(struct vs_proc_shm) == 256, "proc slot layout");
_Static_assert(offsetof(struct vs_proc_shm, reason) == 64, "proc reason");
_Static_assert(offsetof(struct vs_proc_shm, conns) == 16, "proc conns");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "lock-free 32-bit atomics");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "lock-free 64-bit atomics");

struct vs_seg_params {
    uint32_t n_procs;          /* 2..VS_SEG_MAX_PROCS */
    uint64_t lr_instance_size; /* bytes of one left-right instance */
    uint32_t ring_bytes;       /* rounded up to a power of two */
    uint32_t stats_capacity;   /* stats entries (max_partitions); 0 none */
    uint32_t throttle_slots;   /* login throttle entries; 0 none */
    uint32_t conntab_slots;    /* client connection entries; 0 none */
};

/* Process-private handle (inherited across fork as a plain struct). */
struct vs_seg {
    uint8_t *base;
    size_t size;
    int memfd;
    int sup_doorbell;               /* the supervisor's eventfd */
    int doorbell[VS_SEG_MAX_PROCS]; /* one eventfd per slot */
    /* connection handoff channels of the data shards (ipc/handoff.h):
     * slot s reads handoff_rx[s], the others write handoff_tx[s]; -1 for
     * slot 0 and in attached handles */
    int handoff_rx[VS_SEG_MAX_PROCS];
    int handoff_tx[VS_SEG_MAX_PROCS];
    uint32_t n_procs;
    struct vs_seg_hdr_shm *hdr;
};

/* Total bytes for `p` (page multiple), 0 if out of range. */
size_t seg_size_for(const struct vs_seg_params *p);

/* Creates and formats the segment and the doorbells. 0 or -errno
 * (-EINVAL for bad params, -ENOMEM/-EFBIG... from the kernel). */
int seg_create(struct vs_seg *s, const struct vs_seg_params *p);

/* Maps the memfd `fd` (not taken over: dup'ed) and validates the header
 * against this build: magic, version, struct sizes, offsets inside the
 * file. 0, -EPROTO (mismatch: refuse) or -errno. Doorbells are -1. */
int seg_attach_fd(struct vs_seg *s, int fd);

/* Checks a header against this build and a mapping of `size` bytes.
 * 0 or -EPROTO. */
int seg_validate(const struct vs_seg_hdr_shm *h, size_t size);

/* Unmaps and closes everything the handle owns. Safe on a zeroed or
 * already destroyed handle. */
void seg_destroy(struct vs_seg *s);

/* offset <-> pointer */
void *seg_ptr(const struct vs_seg *s, uint64_t off);
uint64_t seg_off(const struct vs_seg *s, const void *p);

struct vs_proc_shm *seg_proc(const struct vs_seg *s, uint32_t slot);
/* The left-right region and its length. */
void *seg_lr_region(const struct vs_seg *s, size_t *len);
/* The stats region (stats.h) and its length; NULL and 0 if the segment
 * has none. */
void *seg_stats_region(const struct vs_seg *s, size_t *len);
/* The login throttle region (throttle.h) and its length; NULL and 0 if
 * the segment has none. */
void *seg_throttle_region(const struct vs_seg *s, size_t *len);
/* The client connection table region (conntab.h) and its length; NULL
 * and 0 if the segment has none. */
void *seg_conntab_region(const struct vs_seg *s, size_t *len);
/* The metrics block of process slot `slot` (< n_procs). */
struct vs_metrics_block_shm *seg_metrics_block(const struct vs_seg *s,
                                               uint32_t slot);
/* The ring from process slot src to dst (src != dst), and its length. */
void *seg_ring_region(const struct vs_seg *s, uint32_t src, uint32_t dst,
                      size_t *len);

/* Clears a reaped process's slot state: proc pid/ready/reason, the
 * left-right reader slot and its client connection entries, and zeroes
 * its metrics gauges (its counters stay: node-wide sums never go
 * backwards). Supervisor only, after waitpid. */
void seg_slot_clear(struct vs_seg *s, uint32_t slot);

#endif /* VS_IPC_SEGMENT_H */
