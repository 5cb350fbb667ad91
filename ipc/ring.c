/*
 * ipc/ring.c - SPSC frame ring and eventfd doorbells; see ring.h.
 *
 * Producer, one frame of len bytes (need = 8 + len rounded up to 8):
 *   1. if the frame does not fit before the end of the data area, a pad
 *      header covering the rest of the area goes first;
 *   2. space check against the cached tail, then the real tail (acquire);
 *      if still full: producer_waiting = 1 (seq_cst), re-read tail
 *      (seq_cst) - the consumer's seq_cst tail store and waiting load
 *      make sure one side sees the other;
 *   3. payload, then the frame header, at the private prod_head;
 *   4. ring_publish: release store of head (pairs with the consumer's
 *      acquire load in ring_peek), once per batch.
 * Consumer: acquire load of head, frames read in place, tail stored once
 * per batch by ring_release (seq_cst), then producer_waiting checked.
 * Every header the consumer reads is bounds-checked against the
 * published bytes and the data area, so a corrupt ring yields -EPROTO,
 * never an out-of-bounds read.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/assert.h"
#include "ipc/ring.h"

static inline uint32_t
ring_round8(uint32_t x)
{
    return (x + 7u) & ~7u;
}

size_t
ring_shm_size(uint32_t data_bytes)
{
    return sizeof(struct vs_ring_shm) + (size_t)data_bytes;
}

int
ring_shm_init(void *mem, size_t len, uint32_t data_bytes)
{
    if (mem == NULL || ((uintptr_t)mem % 64) != 0 || data_bytes < 64 ||
        (data_bytes & (data_bytes - 1)) != 0 || len < ring_shm_size(data_bytes))
        return -EINVAL;
    struct vs_ring_shm *s = mem;
    memset(s, 0, sizeof(*s));
    s->magic = VS_RING_MAGIC;
    s->data_bytes = data_bytes;
    s->data_off = sizeof(struct vs_ring_shm);
    atomic_init(&s->head, 0);
    atomic_init(&s->tail, 0);
    atomic_init(&s->producer_waiting, 0);
    return 0;
}

int
ring_attach(struct vs_ring *r, void *mem, size_t len)
{
    memset(r, 0, sizeof(*r));
    if (mem == NULL || ((uintptr_t)mem % 64) != 0 ||
        len < sizeof(struct vs_ring_shm))
        return -EINVAL;
    struct vs_ring_shm *s = mem;
    if (s->magic != VS_RING_MAGIC || s->data_bytes < 64 ||
        (s->data_bytes & (s->data_bytes - 1)) != 0 ||
        s->data_off != sizeof(struct vs_ring_shm) ||
        len < ring_shm_size(s->data_bytes))
        return -EPROTO;
    r->shm = s;
    r->data = (uint8_t *)mem + s->data_off;
    r->size = s->data_bytes;
    r->mask = s->data_bytes - 1;
    r->prod_head = atomic_load(&s->head);
    r->prod_tail_cache = atomic_load(&s->tail);
    r->cons_tail = atomic_load(&s->tail);
    r->cons_head_cache = atomic_load(&s->head);
    return 0;
}

uint32_t
ring_max_frame(const struct vs_ring *r)
{
    return r->size / 2 - VS_RING_FRAME_HDR;
}

/* ---- producer ---- */

static void
ring_put_hdr(struct vs_ring *r, uint32_t pos, uint32_t len, uint32_t kind)
{
    memcpy(r->data + pos, &len, 4);
    memcpy(r->data + pos + 4, &kind, 4);
}

void *
ring_reserve(struct vs_ring *r, uint32_t len)
{
    if (len > ring_max_frame(r)) {
        errno = EMSGSIZE;
        return NULL;
    }
    uint32_t need = VS_RING_FRAME_HDR + ring_round8(len);
    uint32_t pos = (uint32_t)(r->prod_head & r->mask);
    uint32_t to_end = r->size - pos;
    uint32_t pad = to_end < need ? to_end : 0;
    uint64_t total = (uint64_t)pad + need;
    if (r->prod_head + total - r->prod_tail_cache > r->size) {
        /* acquire: pairs with the consumer's tail store; the space it
         * frees is no longer read. */
        r->prod_tail_cache =
            atomic_load_explicit(&r->shm->tail, memory_order_acquire);
        if (r->prod_head + total - r->prod_tail_cache > r->size) {
            atomic_store(&r->shm->producer_waiting, 1);
            r->prod_tail_cache = atomic_load(&r->shm->tail);
            if (r->prod_head + total - r->prod_tail_cache > r->size) {
                errno = EAGAIN;
                return NULL;
            }
            atomic_store_explicit(&r->shm->producer_waiting, 0,
                                  memory_order_relaxed);
        }
    }
    if (pad != 0) {
        ring_put_hdr(r, pos, pad, VS_RING_KIND_PAD);
        r->prod_head += pad;
        pos = 0;
    }
    return r->data + pos + VS_RING_FRAME_HDR;
}

void
ring_commit(struct vs_ring *r, uint32_t len)
{
    uint32_t pos = (uint32_t)(r->prod_head & r->mask);
    uint32_t need = VS_RING_FRAME_HDR + ring_round8(len);
    VS_ASSERT(need <= r->size - pos);
    ring_put_hdr(r, pos, len, VS_RING_KIND_FRAME);
    r->prod_head += need;
}

int
ring_push(struct vs_ring *r, const void *frame, uint32_t len)
{
    void *dst = ring_reserve(r, len);
    if (dst == NULL)
        return -errno;
    if (len > 0)
        memcpy(dst, frame, len);
    ring_commit(r, len);
    return 0;
}

int
ring_publish(struct vs_ring *r)
{
    if (r->prod_head ==
        atomic_load_explicit(&r->shm->head, memory_order_relaxed))
        return 0;
    /* release: frames written before become visible with the head. */
    atomic_store_explicit(&r->shm->head, r->prod_head, memory_order_release);
    return 1;
}

void
ring_producer_reset(struct vs_ring *r)
{
    r->prod_head = atomic_load(&r->shm->head);
    r->prod_tail_cache = atomic_load(&r->shm->tail);
}

uint32_t
ring_free_bytes(struct vs_ring *r)
{
    r->prod_tail_cache =
        atomic_load_explicit(&r->shm->tail, memory_order_acquire);
    return r->size - (uint32_t)(r->prod_head - r->prod_tail_cache);
}

/* ---- consumer ---- */

int
ring_peek(struct vs_ring *r, const void **frame, uint32_t *len)
{
    if (r->peeked != 0) {
        /* the same frame again */
        uint32_t pos = (uint32_t)(r->cons_tail & r->mask);
        memcpy(len, r->data + pos, 4);
        *frame = r->data + pos + VS_RING_FRAME_HDR;
        return 0;
    }
    for (;;) {
        if (r->cons_tail == r->cons_head_cache) {
            /* acquire: pairs with ring_publish's release store. */
            r->cons_head_cache =
                atomic_load_explicit(&r->shm->head, memory_order_acquire);
            if (r->cons_tail == r->cons_head_cache)
                return -EAGAIN;
        }
        uint64_t avail = r->cons_head_cache - r->cons_tail;
        if (avail > r->size || avail < VS_RING_FRAME_HDR)
            return -EPROTO;
        uint32_t pos = (uint32_t)(r->cons_tail & r->mask);
        uint32_t to_end = r->size - pos;
        uint32_t flen, kind;
        memcpy(&flen, r->data + pos, 4);
        memcpy(&kind, r->data + pos + 4, 4);
        if (kind == VS_RING_KIND_PAD) {
            if (flen != to_end || avail < to_end)
                return -EPROTO;
            r->cons_tail += to_end;
            continue;
        }
        if (kind != VS_RING_KIND_FRAME || flen > ring_max_frame(r))
            return -EPROTO;
        uint32_t need = VS_RING_FRAME_HDR + ring_round8(flen);
        if (need > to_end || need > avail)
            return -EPROTO;
        *frame = r->data + pos + VS_RING_FRAME_HDR;
        *len = flen;
        r->peeked = need;
        return 0;
    }
}

void
ring_pop(struct vs_ring *r)
{
    VS_ASSERT(r->peeked != 0);
    r->cons_tail += r->peeked;
    r->peeked = 0;
}

int
ring_release(struct vs_ring *r)
{
    if (r->cons_tail ==
        atomic_load_explicit(&r->shm->tail, memory_order_relaxed))
        return 0;
    /* seq_cst: Dekker with the producer's producer_waiting store. */
    atomic_store(&r->shm->tail, r->cons_tail);
    if (atomic_load(&r->shm->producer_waiting) != 0 &&
        atomic_exchange(&r->shm->producer_waiting, 0) != 0)
        return 1;
    return 0;
}

int
ring_consumer_reset(struct vs_ring *r)
{
    r->peeked = 0;
    r->cons_tail = atomic_load(&r->shm->head);
    r->cons_head_cache = r->cons_tail;
    return ring_release(r);
}

/* ---- doorbells ---- */

int
ring_doorbell_create(void)
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd == -1 ? -errno : fd;
}

int
ring_doorbell_ring(int fd)
{
    uint64_t one = 1;
    for (;;) {
        ssize_t n = write(fd, &one, sizeof(one));
        if (n == (ssize_t)sizeof(one))
            return 0;
        if (n == -1 && errno == EINTR)
            continue;
        /* EAGAIN: the counter is saturated, the owner is woken anyway. */
        if (n == -1 && errno == EAGAIN)
            return 0;
        return n == -1 ? -errno : -EIO;
    }
}

uint64_t
ring_doorbell_drain(int fd)
{
    uint64_t v = 0;
    for (;;) {
        ssize_t n = read(fd, &v, sizeof(v));
        if (n == (ssize_t)sizeof(v))
            return v;
        if (n == -1 && errno == EINTR)
            continue;
        return 0;
    }
}
