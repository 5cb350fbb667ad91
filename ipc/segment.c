/*
 * ipc/segment.c - creation, validation and accessors of the node's
 * shared-memory segment; see segment.h for the layout and who writes
 * what.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/assert.h"
#include "ipc/handoff.h"
#include "ipc/segment.h"

static uint64_t
seg_round_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

static uint64_t
seg_page(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uint64_t)p : 4096u;
}

static uint32_t
seg_pow2(uint32_t x)
{
    uint32_t p = 64;
    while (p < x && p < (1u << 30))
        p <<= 1;
    return p;
}

struct seg_layout {
    uint64_t procs_off, lr_off, lr_size, rings_off, ring_stride, total;
    uint64_t stats_off, metrics_off;
    uint64_t throttle_off;
    uint64_t conntab_off;
    uint32_t ring_bytes;
};

static int
seg_compute(const struct vs_seg_params *p, struct seg_layout *l)
{
    if (p->n_procs < 2 || p->n_procs > VS_SEG_MAX_PROCS ||
        p->lr_instance_size == 0 || p->ring_bytes == 0 ||
        p->ring_bytes > (1u << 30) || p->stats_capacity > (1u << 24) ||
        p->throttle_slots > (1u << 24) || p->conntab_slots > (1u << 24))
        return -EINVAL;
    uint64_t page = seg_page();
    l->ring_bytes = seg_pow2(p->ring_bytes);
    l->procs_off = seg_round_up(sizeof(struct vs_seg_hdr_shm), 64);
    l->lr_off = seg_round_up(
        l->procs_off + (uint64_t)p->n_procs * sizeof(struct vs_proc_shm), page);
    l->lr_size = lr_region_size(p->n_procs, (size_t)p->lr_instance_size);
    if (l->lr_size == 0)
        return -EINVAL;
    l->rings_off = l->lr_off + l->lr_size;
    l->ring_stride = seg_round_up(ring_shm_size(l->ring_bytes), page);
    uint64_t n_rings = (uint64_t)p->n_procs * p->n_procs;
    l->total = l->rings_off + n_rings * l->ring_stride;
    l->stats_off = 0;
    if (p->stats_capacity > 0) {
        l->stats_off = seg_round_up(l->total, page);
        l->total = seg_round_up(
            l->stats_off + stats_region_size(p->stats_capacity), page);
    }
    l->throttle_off = 0;
    if (p->throttle_slots > 0) {
        l->throttle_off = seg_round_up(l->total, page);
        l->total = seg_round_up(
            l->throttle_off + throttle_region_size(p->throttle_slots), page);
    }
    l->conntab_off = 0;
    if (p->conntab_slots > 0) {
        l->conntab_off = seg_round_up(l->total, page);
        l->total = seg_round_up(
            l->conntab_off + conntab_region_size(p->conntab_slots), page);
    }
    l->metrics_off = seg_round_up(l->total, page);
    l->total =
        seg_round_up(l->metrics_off + (uint64_t)p->n_procs *
                                          sizeof(struct vs_metrics_block_shm),
                     page);
    return 0;
}

size_t
seg_size_for(const struct vs_seg_params *p)
{
    struct seg_layout l;
    return seg_compute(p, &l) == 0 ? (size_t)l.total : 0;
}

int
seg_validate(const struct vs_seg_hdr_shm *h, size_t size)
{
    if (size < sizeof(*h) || h->magic != VS_SEG_MAGIC ||
        h->layout_version != VS_SEG_LAYOUT_VERSION ||
        h->hdr_size != sizeof(struct vs_seg_hdr_shm) ||
        h->proc_size != sizeof(struct vs_proc_shm) ||
        h->lr_hdr_size != sizeof(struct vs_lr_hdr_shm) ||
        h->lr_slot_size != sizeof(struct vs_lr_slot_shm) ||
        h->ring_hdr_size != sizeof(struct vs_ring_shm) ||
        h->metrics_block_size != sizeof(struct vs_metrics_block_shm) ||
        h->page_size != seg_page())
        return -EPROTO;
    struct vs_seg_params p = {.n_procs = h->n_procs,
                              .lr_instance_size = h->lr_instance_size,
                              .ring_bytes = h->ring_bytes,
                              .stats_capacity = h->stats_capacity,
                              .throttle_slots = h->throttle_slots,
                              .conntab_slots = h->conntab_slots};
    struct seg_layout l;
    if (seg_compute(&p, &l) != 0 || l.ring_bytes != h->ring_bytes ||
        l.stats_off != h->stats_off || l.procs_off != h->procs_off ||
        l.metrics_off != h->metrics_off || l.lr_off != h->lr_off ||
        l.lr_size != h->lr_size || l.rings_off != h->rings_off ||
        l.ring_stride != h->ring_stride || l.total != h->total_size ||
        h->total_size > size)
        return -EPROTO;
    return 0;
}

static void
seg_handle_reset(struct vs_seg *s)
{
    memset(s, 0, sizeof(*s));
    s->memfd = -1;
    s->sup_doorbell = -1;
    for (uint32_t i = 0; i < VS_SEG_MAX_PROCS; i++)
        s->doorbell[i] = s->handoff_rx[i] = s->handoff_tx[i] = -1;
}

int
seg_create(struct vs_seg *s, const struct vs_seg_params *p)
{
    seg_handle_reset(s);
    struct seg_layout l;
    int rc = seg_compute(p, &l);
    if (rc != 0)
        return rc;
    s->memfd = memfd_create("vstream-segment", MFD_CLOEXEC);
    if (s->memfd == -1) {
        rc = -errno;
        goto fail;
    }
    if (ftruncate(s->memfd, (off_t)l.total) == -1) {
        rc = -errno;
        goto fail;
    }
    void *base = mmap(NULL, (size_t)l.total, PROT_READ | PROT_WRITE, MAP_SHARED,
                      s->memfd, 0);
    if (base == MAP_FAILED) {
        rc = -errno;
        goto fail;
    }
    s->base = base;
    s->size = (size_t)l.total;
    s->n_procs = p->n_procs;
    s->hdr = base;

    struct vs_seg_hdr_shm *h = s->hdr;
    h->magic = VS_SEG_MAGIC;
    h->layout_version = VS_SEG_LAYOUT_VERSION;
    h->page_size = (uint32_t)seg_page();
    h->hdr_size = sizeof(struct vs_seg_hdr_shm);
    h->proc_size = sizeof(struct vs_proc_shm);
    h->lr_hdr_size = sizeof(struct vs_lr_hdr_shm);
    h->lr_slot_size = sizeof(struct vs_lr_slot_shm);
    h->ring_hdr_size = sizeof(struct vs_ring_shm);
    h->n_procs = p->n_procs;
    h->total_size = l.total;
    h->procs_off = l.procs_off;
    h->lr_off = l.lr_off;
    h->lr_size = l.lr_size;
    h->lr_instance_size = p->lr_instance_size;
    h->rings_off = l.rings_off;
    h->ring_stride = l.ring_stride;
    h->ring_bytes = l.ring_bytes;
    atomic_init(&h->log_level, 0);
    atomic_init(&h->stopping, 0);
    h->stats_off = l.stats_off;
    h->stats_capacity = p->stats_capacity;
    h->throttle_slots = p->throttle_slots;
    h->conntab_slots = p->conntab_slots;
    h->metrics_off = l.metrics_off;
    h->metrics_block_size = sizeof(struct vs_metrics_block_shm);

    rc = lr_region_init(s->base + l.lr_off, (size_t)l.lr_size, p->n_procs,
                        (size_t)p->lr_instance_size);
    if (rc != 0)
        goto fail;
    for (uint32_t src = 0; src < p->n_procs; src++)
        for (uint32_t dst = 0; dst < p->n_procs; dst++) {
            if (src == dst)
                continue;
            size_t len;
            void *r = seg_ring_region(s, src, dst, &len);
            rc = ring_shm_init(r, len, l.ring_bytes);
            if (rc != 0)
                goto fail;
        }
    if (p->stats_capacity > 0) {
        rc = stats_region_init(s->base + l.stats_off,
                               stats_region_size(p->stats_capacity),
                               p->stats_capacity);
        if (rc != 0)
            goto fail;
    }
    if (p->throttle_slots > 0) {
        rc = throttle_region_init(s->base + l.throttle_off,
                                  throttle_region_size(p->throttle_slots),
                                  p->throttle_slots);
        if (rc != 0)
            goto fail;
    }
    if (p->conntab_slots > 0) {
        rc = conntab_region_init(s->base + l.conntab_off,
                                 conntab_region_size(p->conntab_slots),
                                 p->conntab_slots);
        if (rc != 0)
            goto fail;
    }
    rc = ring_doorbell_create();
    if (rc < 0)
        goto fail;
    s->sup_doorbell = rc;
    for (uint32_t i = 0; i < p->n_procs; i++) {
        rc = ring_doorbell_create();
        if (rc < 0)
            goto fail;
        s->doorbell[i] = rc;
        /* data shards: a connection handoff channel each (handoff.h) */
        if (i > 0) {
            rc = handoff_pair_create(&s->handoff_rx[i], &s->handoff_tx[i]);
            if (rc < 0)
                goto fail;
        }
    }
    return 0;
fail:
    seg_destroy(s);
    return rc;
}

int
seg_attach_fd(struct vs_seg *s, int fd)
{
    seg_handle_reset(s);
    struct stat st;
    int rc;
    if (fstat(fd, &st) == -1)
        return -errno;
    if (st.st_size < (off_t)sizeof(struct vs_seg_hdr_shm))
        return -EPROTO;
    s->memfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (s->memfd == -1)
        return -errno;
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
                      MAP_SHARED, s->memfd, 0);
    if (base == MAP_FAILED) {
        rc = -errno;
        goto fail;
    }
    s->base = base;
    s->size = (size_t)st.st_size;
    s->hdr = base;
    rc = seg_validate(s->hdr, s->size);
    if (rc != 0)
        goto fail;
    s->n_procs = s->hdr->n_procs;
    return 0;
fail:
    seg_destroy(s);
    return rc;
}

void
seg_destroy(struct vs_seg *s)
{
    if (s->base != NULL)
        munmap(s->base, s->size);
    if (s->memfd >= 0)
        close(s->memfd);
    if (s->sup_doorbell >= 0)
        close(s->sup_doorbell);
    for (uint32_t i = 0; i < VS_SEG_MAX_PROCS; i++) {
        if (s->doorbell[i] >= 0)
            close(s->doorbell[i]);
        if (s->handoff_rx[i] >= 0)
            close(s->handoff_rx[i]);
        if (s->handoff_tx[i] >= 0)
            close(s->handoff_tx[i]);
    }
    seg_handle_reset(s);
}

void *
seg_ptr(const struct vs_seg *s, uint64_t off)
{
    VS_ASSERT(off <= s->size);
    return s->base + off;
}

uint64_t
seg_off(const struct vs_seg *s, const void *p)
{
    const uint8_t *b = p;
    VS_ASSERT(b >= s->base && b <= s->base + s->size);
    return (uint64_t)(b - s->base);
}

struct vs_proc_shm *
seg_proc(const struct vs_seg *s, uint32_t slot)
{
    VS_ASSERT(slot < s->n_procs);
    return (struct vs_proc_shm *)(s->base + s->hdr->procs_off) + slot;
}

void *
seg_lr_region(const struct vs_seg *s, size_t *len)
{
    if (len != NULL)
        *len = (size_t)s->hdr->lr_size;
    return s->base + s->hdr->lr_off;
}

void *
seg_stats_region(const struct vs_seg *s, size_t *len)
{
    if (s->hdr->stats_capacity == 0) {
        if (len != NULL)
            *len = 0;
        return NULL;
    }
    if (len != NULL)
        *len = stats_region_size(s->hdr->stats_capacity);
    return s->base + s->hdr->stats_off;
}

/* The layout of an attached segment (validated at create/attach). */
static int
seg_layout_of(const struct vs_seg *s, struct seg_layout *l)
{
    struct vs_seg_params p = {.n_procs = s->hdr->n_procs,
                              .lr_instance_size = s->hdr->lr_instance_size,
                              .ring_bytes = s->hdr->ring_bytes,
                              .stats_capacity = s->hdr->stats_capacity,
                              .throttle_slots = s->hdr->throttle_slots,
                              .conntab_slots = s->hdr->conntab_slots};
    return seg_compute(&p, l);
}

void *
seg_conntab_region(const struct vs_seg *s, size_t *len)
{
    struct seg_layout l;
    if (s->hdr->conntab_slots == 0 || seg_layout_of(s, &l) != 0) {
        if (len != NULL)
            *len = 0;
        return NULL;
    }
    if (len != NULL)
        *len = conntab_region_size(s->hdr->conntab_slots);
    return s->base + l.conntab_off;
}

void *
seg_throttle_region(const struct vs_seg *s, size_t *len)
{
    struct seg_layout l;
    if (s->hdr->throttle_slots == 0 || seg_layout_of(s, &l) != 0) {
        if (len != NULL)
            *len = 0;
        return NULL;
    }
    if (len != NULL)
        *len = throttle_region_size(s->hdr->throttle_slots);
    return s->base + l.throttle_off;
}

void *
seg_ring_region(const struct vs_seg *s, uint32_t src, uint32_t dst, size_t *len)
{
    VS_ASSERT(src < s->n_procs && dst < s->n_procs && src != dst);
    if (len != NULL)
        *len = (size_t)s->hdr->ring_stride;
    return s->base + s->hdr->rings_off +
           ((uint64_t)src * s->n_procs + dst) * s->hdr->ring_stride;
}

void
seg_slot_clear(struct vs_seg *s, uint32_t slot)
{
    struct vs_proc_shm *p = seg_proc(s, slot);
    atomic_store(&p->pid, 0);
    atomic_store(&p->ready, 0);
    memset(p->reason, 0, sizeof(p->reason));
    struct vs_lr lr;
    size_t len;
    void *region = seg_lr_region(s, &len);
    int rc = lr_attach(&lr, region, len);
    VS_ASSERT(rc == 0);
    lr_slot_clear(&lr, slot);
    /* the reaped process's client connections are gone with it */
    region = seg_conntab_region(s, &len);
    struct vs_conntab ct;
    if (region != NULL && conntab_attach(&ct, region, len) == 0)
        (void)conntab_release_owner(&ct, slot);
    vs_metrics_clear_gauges(seg_metrics_block(s, slot));
}

struct vs_metrics_block_shm *
seg_metrics_block(const struct vs_seg *s, uint32_t slot)
{
    VS_ASSERT(slot < s->hdr->n_procs);
    return (struct vs_metrics_block_shm *)(s->base + s->hdr->metrics_off) +
           slot;
}
