/*
 * ipc/lr.c - left-right across processes; see lr.h for the invariants.
 *
 * The protocols, written once:
 *
 * Reader (wait-free, three atomics and two plain stores):
 *   1. vi = load(version_index)                        seq_cst
 *   2. store(slot.in[vi], 1)                           seq_cst: the store
 *      must be visible before the load of step 3 (store->load order)
 *   3. idx = load(left_right)                          seq_cst
 *   4. read inst[idx] (stable: the writer drains before writing it)
 *   5. store(slot.in[vi], 0)                           release: pairs with
 *      the writer's seq_cst loads in bank_wait
 *
 * Writer, lr_publish(op):
 *   0. if this writer has not drained since it started (a previous
 *      writer may have died between a flip and its drain, or mid-apply):
 *      toggle_and_wait, then copy live -> standby
 *   1. apply(inst[!lr]); inst_op[!lr] = op        no reader is on !lr
 *   2. store(left_right, !lr)                     seq_cst: new readers go
 *      to the fresh instance; published_op = op
 *   3. toggle_and_wait:
 *        wait until bank[!vi] is empty (readers that signed in before the
 *        previous toggle), store(version_index, !vi), wait until bank[vi]
 *        is empty. Afterwards every reader that could have loaded the old
 *        left_right has left.
 *   4. apply(inst[lr]); inst_op[lr] = op          the old instance
 * lr_restore is the same with fill() in step 1 and a copy of the new
 * live instance in step 4.
 *
 * bank_wait spins briefly, then sleeps with a doubling back-off (up to
 * 1 ms). Every opts.deadline_ns it reports each slot still inside:
 * missed += 1 in the slot, a log line with slot and pid, on_slow(). It
 * never gives up: a hung reader is SIGKILLed by the supervisor after
 * lr_missed_deadlines_kill reports, reaped, and its slot cleared, which
 * ends the wait (bounded stall = kill threshold x deadline + reap).
 *
 * Callers: see lr.h.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/metrics.h"
#include "ipc/lr.h"

#define LR_SPINS        256u
#define LR_SLEEP_MIN_NS 2000u
#define LR_SLEEP_MAX_NS 1000000u

static inline void
lr_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static uint64_t
lr_round_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

static uint64_t
lr_page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uint64_t)p : 4096u;
}

size_t
lr_region_size(uint32_t n_slots, size_t instance_size)
{
    if (n_slots == 0 || n_slots > VS_LR_MAX_SLOTS || instance_size == 0 ||
        (uint64_t)instance_size > (1ull << 40))
        return 0;
    uint64_t page = lr_page_size();
    uint64_t ctl = sizeof(struct vs_lr_hdr_shm) +
                   (uint64_t)n_slots * sizeof(struct vs_lr_slot_shm);
    uint64_t stride = lr_round_up(instance_size, page);
    return (size_t)(lr_round_up(ctl, page) + 2 * stride);
}

int
lr_region_init(void *region, size_t len, uint32_t n_slots, size_t instance_size)
{
    size_t need = lr_region_size(n_slots, instance_size);
    uint64_t page = lr_page_size();
    if (need == 0 || region == NULL || len < need ||
        ((uintptr_t)region % page) != 0)
        return -EINVAL;
    struct vs_lr_hdr_shm *h = region;
    /* The region is zero already (a fresh memfd or anonymous mapping):
     * clear only the control part, so the instances' pages stay untouched
     * (a large metadata capacity costs no memory until used). */
    memset(region, 0,
           (size_t)lr_round_up(sizeof(struct vs_lr_hdr_shm) +
                                   (uint64_t)n_slots *
                                       sizeof(struct vs_lr_slot_shm),
                               page));
    h->magic = VS_LR_MAGIC;
    h->layout_version = VS_LR_LAYOUT_VERSION;
    h->hdr_size = sizeof(struct vs_lr_hdr_shm);
    h->slot_size = sizeof(struct vs_lr_slot_shm);
    h->n_slots = n_slots;
    h->page_size = (uint32_t)page;
    h->instance_size = instance_size;
    h->instance_stride = lr_round_up(instance_size, page);
    h->slots_off = sizeof(struct vs_lr_hdr_shm);
    h->inst_off = lr_round_up(
        h->slots_off + (uint64_t)n_slots * sizeof(struct vs_lr_slot_shm), page);
    h->region_size = need;
    atomic_init(&h->left_right, 0);
    atomic_init(&h->version_index, 0);
    atomic_init(&h->published_op, 0);
    atomic_init(&h->inst_op[0], 0);
    atomic_init(&h->inst_op[1], 0);
    atomic_init(&h->flips, 0);
    atomic_init(&h->writer_pid, 0);
    return 0;
}

int
lr_attach(struct vs_lr *lr, void *region, size_t len)
{
    memset(lr, 0, sizeof(*lr));
    lr->reader_slot = -1;
    if (region == NULL || len < sizeof(struct vs_lr_hdr_shm))
        return -EINVAL;
    struct vs_lr_hdr_shm *h = region;
    if (h->magic != VS_LR_MAGIC || h->layout_version != VS_LR_LAYOUT_VERSION ||
        h->hdr_size != sizeof(struct vs_lr_hdr_shm) ||
        h->slot_size != sizeof(struct vs_lr_slot_shm))
        return -EPROTO;
    if (h->n_slots == 0 || h->n_slots > VS_LR_MAX_SLOTS ||
        h->instance_size == 0 || h->instance_stride < h->instance_size ||
        h->region_size > len ||
        h->region_size != lr_region_size(h->n_slots, h->instance_size) ||
        h->slots_off != sizeof(struct vs_lr_hdr_shm) ||
        h->inst_off + 2 * h->instance_stride != h->region_size)
        return -EPROTO;
    lr->hdr = h;
    lr->slots = (struct vs_lr_slot_shm *)((uint8_t *)region + h->slots_off);
    lr->inst[0] = (uint8_t *)region + h->inst_off;
    lr->inst[1] = lr->inst[0] + h->instance_stride;
    lr->n_slots = h->n_slots;
    return 0;
}

/* ---- writer ---- */

int
lr_writer_start(struct vs_lr *lr, const struct vs_lr_writer_opts *opts)
{
    if (lr->hdr == NULL || opts == NULL || opts->deadline_ns == 0)
        return -EINVAL;
    lr->opts = *opts;
    lr->is_writer = 1;
    lr->standby_clean = 0;
    atomic_store(&lr->hdr->writer_pid, (int32_t)getpid());
    return 0;
}

static void
lr_sleep(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* First slot with in[bank] set, from `from`; n_slots if none. */
static uint32_t
lr_bank_busy(const struct vs_lr *lr, uint32_t bank, uint32_t from)
{
    for (uint32_t i = from; i < lr->n_slots; i++)
        /* seq_cst: pairs with the reader's seq_cst sign-in store and
         * release sign-out store. */
        if (atomic_load(&lr->slots[i].in[bank]) != 0)
            return i;
    return lr->n_slots;
}

/* Waits until no reader is signed in to `bank`; see the header comment
 * for the deadline handling. */
static void
lr_bank_wait(struct vs_lr *lr, uint32_t bank)
{
    uint32_t busy = lr_bank_busy(lr, bank, 0);
    if (busy == lr->n_slots)
        return;
    for (uint32_t s = 0; s < LR_SPINS; s++) {
        lr_cpu_relax();
        busy = lr_bank_busy(lr, bank, busy);
        if (busy == lr->n_slots)
            return;
    }
    uint64_t sleep_ns = LR_SLEEP_MIN_NS;
    uint64_t deadline = vs_monotonic_ns() + lr->opts.deadline_ns;
    vs_metrics_add(VS_M_LR_READER_WAITS, 1);
    int reported = 0;
    for (;;) {
        busy = lr_bank_busy(lr, bank, busy);
        if (busy == lr->n_slots)
            break;
        uint64_t now = vs_monotonic_ns();
        if (now >= deadline) {
            for (uint32_t i = busy; i < lr->n_slots; i++) {
                struct vs_lr_slot_shm *sl = &lr->slots[i];
                if (atomic_load(&sl->in[bank]) == 0)
                    continue;
                uint32_t missed = atomic_fetch_add(&sl->missed, 1) + 1;
                vs_metrics_add(VS_M_LR_SLOW_READERS, 1);
                atomic_fetch_add_explicit(&sl->missed_total, 1,
                                          memory_order_relaxed);
                int32_t pid = atomic_load(&sl->pid);
                vs_log_warn(
                    "left-right: reader slot %u (pid %d) still in "
                    "the old instance after %u deadline(s) of %llu "
                    "ms",
                    i, (int)pid, missed,
                    (unsigned long long)(lr->opts.deadline_ns / 1000000u));
                if (lr->opts.on_slow != NULL)
                    lr->opts.on_slow(lr->opts.ctx, i, pid, missed);
            }
            reported = 1;
            deadline = now + lr->opts.deadline_ns;
        }
        lr_sleep(sleep_ns);
        if (sleep_ns < LR_SLEEP_MAX_NS)
            sleep_ns *= 2;
    }
    if (reported)
        for (uint32_t i = 0; i < lr->n_slots; i++)
            if (atomic_load_explicit(&lr->slots[i].missed,
                                     memory_order_relaxed) != 0)
                atomic_store(&lr->slots[i].missed, 0);
}

static void
lr_toggle_and_wait(struct vs_lr *lr)
{
    uint32_t vi = atomic_load(&lr->hdr->version_index);
    lr_bank_wait(lr, !vi);
    atomic_store(&lr->hdr->version_index, !vi);
    lr_bank_wait(lr, vi);
}

/* Step 0 of the protocol: make sure nobody is on the standby. */
static void
lr_make_standby_clean(struct vs_lr *lr, int copy)
{
    if (lr->standby_clean)
        return;
    lr_toggle_and_wait(lr);
    if (copy) {
        uint32_t live = atomic_load(&lr->hdr->left_right);
        memcpy(lr->inst[!live], lr->inst[live], lr->hdr->instance_size);
        atomic_store(&lr->hdr->inst_op[!live],
                     atomic_load(&lr->hdr->inst_op[live]));
    }
    lr->standby_clean = 1;
}

static int
lr_switch(struct vs_lr *lr, uint64_t op, lr_apply_fn *fn, void *ctx,
          int restore)
{
    VS_ASSERT(lr->is_writer);
    uint64_t published = atomic_load(&lr->hdr->published_op);
    if (restore ? op < published : op <= published)
        return -ESTALE;
    lr_make_standby_clean(lr, !restore);
    size_t size = lr->hdr->instance_size;
    uint32_t live = atomic_load(&lr->hdr->left_right);
    uint32_t sb = !live;
    fn(lr->inst[sb], size, ctx);
    atomic_store(&lr->hdr->inst_op[sb], op);
    /* seq_cst: pairs with the reader's seq_cst load of left_right. */
    atomic_store(&lr->hdr->left_right, sb);
    atomic_store(&lr->hdr->published_op, op);
    lr_toggle_and_wait(lr);
    fn(lr->inst[live], size, ctx);
    atomic_store(&lr->hdr->inst_op[live], op);
    atomic_fetch_add_explicit(&lr->hdr->flips, 1, memory_order_relaxed);
    vs_metrics_add(VS_M_LR_PUBLISHES, 1);
    return 0;
}

int
lr_publish(struct vs_lr *lr, uint64_t op, lr_apply_fn *apply, void *ctx)
{
    return lr_switch(lr, op, apply, ctx, 0);
}

int
lr_restore(struct vs_lr *lr, uint64_t op, lr_apply_fn *fill, void *ctx)
{
    return lr_switch(lr, op, fill, ctx, 1);
}

const void *
lr_writer_live(const struct vs_lr *lr)
{
    return lr->inst[atomic_load(&lr->hdr->left_right)];
}

/* ---- readers ---- */

int
lr_reader_start(struct vs_lr *lr, uint32_t slot)
{
    if (lr->hdr == NULL || slot >= lr->n_slots)
        return -EINVAL;
    lr->reader_slot = (int32_t)slot;
    lr->in_read = 0;
    atomic_store(&lr->slots[slot].pid, (int32_t)getpid());
    return 0;
}

const void *
lr_read_begin(struct vs_lr *lr, uint64_t *op_out)
{
    VS_ASSERT(lr->reader_slot >= 0 && !lr->in_read);
    struct vs_lr_slot_shm *sl = &lr->slots[lr->reader_slot];
    uint32_t vi = atomic_load(&lr->hdr->version_index);
    atomic_store(&sl->in[vi], 1);
    uint32_t idx = atomic_load(&lr->hdr->left_right);
    lr->cur_bank = vi;
    lr->in_read = 1;
    if (op_out != NULL)
        *op_out =
            atomic_load_explicit(&lr->hdr->inst_op[idx], memory_order_acquire);
    /* Owner-only counter: relaxed load + store, no locked instruction. */
    atomic_store_explicit(
        &sl->reads, atomic_load_explicit(&sl->reads, memory_order_relaxed) + 1,
        memory_order_relaxed);
    return lr->inst[idx];
}

void
lr_read_end(struct vs_lr *lr)
{
    VS_ASSERT(lr->in_read);
    /* release: the reads of the instance happen before the sign-out the
     * writer's seq_cst load observes. */
    atomic_store_explicit(&lr->slots[lr->reader_slot].in[lr->cur_bank], 0,
                          memory_order_release);
    lr->in_read = 0;
}

uint64_t
lr_published_op(const struct vs_lr *lr)
{
    return atomic_load(&lr->hdr->published_op);
}

int
lr_protect_readonly(const struct vs_lr *lr)
{
    if (mprotect(lr->inst[0], 2 * lr->hdr->instance_stride, PROT_READ) == -1)
        return -errno;
    return 0;
}

/* ---- supervisor ---- */

void
lr_slot_clear(struct vs_lr *lr, uint32_t slot)
{
    VS_ASSERT(slot < lr->n_slots);
    struct vs_lr_slot_shm *sl = &lr->slots[slot];
    atomic_store(&sl->in[0], 0);
    atomic_store(&sl->in[1], 0);
    atomic_store(&sl->missed, 0);
    atomic_store(&sl->pid, 0);
}

void
lr_slot_status(const struct vs_lr *lr, uint32_t slot, int32_t *pid,
               uint32_t *missed)
{
    VS_ASSERT(slot < lr->n_slots);
    if (pid != NULL)
        *pid = atomic_load(&lr->slots[slot].pid);
    if (missed != NULL)
        *missed = atomic_load(&lr->slots[slot].missed);
}

void
lr_instance_zero(void *instance, size_t size)
{
    uint64_t page = lr_page_size();
    size_t len = (size_t)lr_round_up(size, page);
    /* Shared memory (memfd/shmem): drop the pages, which read back as
     * zeros and cost nothing until written again. Elsewhere: memset. */
    if (((uintptr_t)instance % page) != 0 ||
        madvise(instance, len, MADV_REMOVE) != 0)
        memset(instance, 0, size);
}
