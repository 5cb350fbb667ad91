/*
 * ipc/lr.h - a left-right double buffer shared between processes.
 *
 * Role: one writer process (shard 0) keeps two instances of a state of
 * `instance_size` bytes; any number of reader processes (one reader slot
 * each, fixed index) read the live instance without ever blocking
 * (Ramalhete & Correia's left-right, with one cache-line reader slot per
 * process instead of a shared counter; shared/reference/c-style.md §3.2).
 * The state type is opaque here: instances are plain bytes, must be
 * position-independent (offsets, never pointers) and are zero at creation.
 *
 * Region layout (all offsets from the region start, which must be
 * page-aligned so that the instances can be mprotect()ed read-only):
 *   [struct vs_lr_hdr_shm][n_slots x struct vs_lr_slot_shm] pad to page
 *   [instance 0, rounded up to pages][instance 1, rounded up to pages]
 *
 * Invariants:
 *  - only the writer stores left_right, version_index, inst_op, published
 *    op and the instances; each reader stores only in[] of its own slot;
 *    the supervisor clears a slot only after reaping its owner (a reaped
 *    process can no longer write and its pid is not reused before that);
 *  - no reader is ever inside the standby instance while the writer
 *    writes it (the drain precedes every write of an instance);
 *  - published_op never decreases; lr_publish requires op > published,
 *    lr_restore op >= published;
 *  - a writer that died at any point leaves inst[left_right] complete:
 *    the other instance is finished before the flip. A new writer first
 *    drains both banks (lr_writer_start marks the standby "unknown"), so
 *    readers left on the old standby by a crash between flip and drain
 *    are waited for before it is overwritten.
 *
 * Callers: lr_region_init by the segment creator (supervisor) before
 * fork; lr_writer_* and lr_publish/lr_restore by the one writer process;
 * lr_reader_start/lr_read_* by readers (one read section at a time per
 * process; sections never block, never do I/O); lr_slot_clear by the
 * supervisor after waitpid() reaped the slot's process.
 */
#ifndef VS_IPC_LR_H
#define VS_IPC_LR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VS_LR_MAGIC          0x314c5256u /* "VRL1" little-endian */
#define VS_LR_LAYOUT_VERSION 1u
#define VS_LR_MAX_SLOTS      1024u

/* Region header. The first cache line is written once (by
 * lr_region_init); the second holds the writer's control words. */
struct vs_lr_hdr_shm {
    uint32_t magic;
    uint32_t layout_version;
    uint32_t hdr_size;  /* sizeof(struct vs_lr_hdr_shm) */
    uint32_t slot_size; /* sizeof(struct vs_lr_slot_shm) */
    uint32_t n_slots;
    uint32_t page_size;
    uint64_t instance_size;   /* bytes of one instance, as asked */
    uint64_t instance_stride; /* instance_size rounded up to pages */
    uint64_t slots_off;       /* first reader slot */
    uint64_t inst_off;        /* instance 0; instance 1 = + stride */
    uint64_t region_size;

    /* Which instance readers enter (0/1). Writer: seq_cst store after
     * the standby is complete. Readers: seq_cst load after signing in. */
    _Alignas(64) _Atomic uint32_t left_right;
    /* Which bank new readers sign in to (0/1); flipped by the writer
     * between the two drains of lr_toggle_and_wait (lr.c). */
    _Atomic uint32_t version_index;
    /* Op of the instance readers enter; only increases. */
    _Atomic uint64_t published_op;
    /* Op each instance holds (written before it becomes live). */
    _Atomic uint64_t inst_op[2];
    /* Completed flips, for tools and tests. */
    _Atomic uint64_t flips;
    /* Pid of the current writer, 0 before the first lr_writer_start. */
    _Atomic int32_t writer_pid;
    uint8_t pad1[20];
};

/* One reader slot per process slot, one cache line, so readers never
 * share a line. in[b] is 1 while the owner reads under bank b. */
struct vs_lr_slot_shm {
    _Alignas(64) _Atomic uint32_t in[2]; /* owner stores; sup clears */
    _Atomic int32_t pid;                 /* owner stores; sup clears */
    /* Consecutive deadlines the writer's current drain missed on this
     * slot (writer stores; back to 0 once the slot drained). The
     * supervisor SIGKILLs the owner at lr_missed_deadlines_kill. */
    _Atomic uint32_t missed;
    _Atomic uint64_t missed_total; /* writer adds; never reset */
    _Atomic uint64_t reads;        /* owner adds one per read section */
    uint8_t pad[32];
};

_Static_assert(sizeof(struct vs_lr_hdr_shm) == 128, "lr header layout");
_Static_assert(offsetof(struct vs_lr_hdr_shm, left_right) == 64,
               "lr control words on their own cache line");
_Static_assert(sizeof(struct vs_lr_slot_shm) == 64, "lr slot is one line");
_Static_assert(offsetof(struct vs_lr_slot_shm, pid) == 8, "lr slot layout");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "lock-free 32-bit atomics");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "lock-free 64-bit atomics");

/* Called by the writer when a drain passes its deadline: `slot` (owner
 * `pid`) is still inside the old instance after `missed` consecutive
 * deadlines. Runs inside lr_publish/lr_restore; must not re-enter them. */
typedef void lr_slow_fn(void *ctx, uint32_t slot, int32_t pid, uint32_t missed);

/* Writes one instance. `instance` is the standby (no reader inside). */
typedef void lr_apply_fn(void *instance, size_t size, void *ctx);

struct vs_lr_writer_opts {
    uint64_t deadline_ns; /* per drain wait before on_slow; > 0 */
    lr_slow_fn *on_slow;  /* may be NULL (then only the log line) */
    void *ctx;
};

/* Process-private handle onto a region (plain struct, may be copied
 * across fork; holds pointers valid in processes that inherited the
 * mapping at the same address). */
struct vs_lr {
    struct vs_lr_hdr_shm *hdr;
    struct vs_lr_slot_shm *slots;
    uint8_t *inst[2];
    uint32_t n_slots;
    /* reader side */
    int32_t reader_slot; /* -1 before lr_reader_start */
    uint32_t cur_bank;
    int in_read;
    /* writer side */
    int is_writer;
    int standby_clean; /* 1 once this writer drained both banks */
    struct vs_lr_writer_opts opts;
};

/* Bytes a region needs (a multiple of the page size). 0 if the
 * arguments are out of range (n_slots 1..VS_LR_MAX_SLOTS,
 * instance_size 1..2^40). */
size_t lr_region_size(uint32_t n_slots, size_t instance_size);

/* Formats a zeroed, page-aligned region of `len` bytes (it MUST be zero
 * already: only the control part is written, so the instances' pages are
 * not touched). Both instances are zero, published op 0. 0 or -EINVAL.
 * Creator only, before fork. */
int lr_region_init(void *region, size_t len, uint32_t n_slots,
                   size_t instance_size);

/* Validates the header (magic, layout version, struct sizes, offsets
 * within len) and fills the handle. 0, -EPROTO (layout mismatch: refuse
 * to attach) or -EINVAL. Any process. */
int lr_attach(struct vs_lr *lr, void *region, size_t len);

/* Makes this process the writer (records its pid). The first
 * publish/restore afterwards drains both banks before writing. */
int lr_writer_start(struct vs_lr *lr, const struct vs_lr_writer_opts *opts);

/* Publishes one op: apply(standby); flip; drain the old instance's
 * readers (deadline -> on_slow, keep waiting); apply(other). Readers see
 * `op` once the flip happened. 0, or -ESTALE if op <= published op
 * (nothing changed). Writer only. */
int lr_publish(struct vs_lr *lr, uint64_t op, lr_apply_fn *apply, void *ctx);

/* Replaces the whole state: fill(standby); flip; drain; fill(other).
 * `fill` is called once per instance and must build the same state both
 * times (a deterministic replay, or a copy from a private source); no
 * instance is copied onto the other, so pages a large, mostly empty
 * state never writes stay unallocated. 0, or -ESTALE if op < published
 * op. Writer only (recovery, state transfer). */
int lr_restore(struct vs_lr *lr, uint64_t op, lr_apply_fn *fill, void *ctx);

/* Zeroes an instance (the standby, inside a fill or apply callback) by
 * dropping its shared pages (MADV_REMOVE), so a large empty instance
 * costs no memory; falls back to memset. Writer only. */
void lr_instance_zero(void *instance, size_t size);

/* The live instance, for the writer's own reads (no read section: only
 * the writer changes instances). */
const void *lr_writer_live(const struct vs_lr *lr);

/* Claims reader slot `slot` for this process (stores its pid). Reader. */
int lr_reader_start(struct vs_lr *lr, uint32_t slot);

/* Enters a read section: returns the live instance, which stays
 * unchanged until lr_read_end. *op_out (may be NULL) gets the op it
 * holds. Wait-free: three atomic accesses, no loop. Reader only. */
const void *lr_read_begin(struct vs_lr *lr, uint64_t *op_out);
/* Leaves the read section. */
void lr_read_end(struct vs_lr *lr);

/* Latest published op. Any process. */
uint64_t lr_published_op(const struct vs_lr *lr);

/* Maps both instances PROT_READ in this process (data shards). 0 or
 * -errno. A later write to them faults. */
int lr_protect_readonly(const struct vs_lr *lr);

/* Clears a dead process's slot (in[], pid, missed). Supervisor only,
 * after waitpid() reaped that process and before respawning into the
 * slot. */
void lr_slot_clear(struct vs_lr *lr, uint32_t slot);

/* Snapshot of a slot's pid and missed counter, for the supervisor. */
void lr_slot_status(const struct vs_lr *lr, uint32_t slot, int32_t *pid,
                    uint32_t *missed);

#endif /* VS_IPC_LR_H */
