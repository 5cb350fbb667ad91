/*
 * ipc/ring.h - single-producer/single-consumer ring of variable-length
 * frames in shared memory, and the eventfd doorbell that wakes a process.
 *
 * Role: one ring per ordered pair of shard processes (segment.h). The
 * producer appends frames and publishes them in batches (one release
 * store of `head` per batch, then one doorbell write); the consumer reads
 * frames in place and releases them (one release store of `tail`).
 *
 * Frame format in the data area: [u32 len][u32 kind][len bytes] padded
 * to 8 bytes. kind 0 = frame, kind 1 = pad (skip to the start of the
 * data area). A frame is always contiguous, so the consumer gets one
 * pointer. Largest payload: ring_max_frame() = data_bytes / 2 - 8, which
 * guarantees an empty ring can always take one more frame.
 *
 * Invariants:
 *  - head and tail count bytes since the ring was formatted and only
 *    increase; tail <= head <= tail + data_bytes;
 *  - only the producer stores head and the data between head and tail +
 *    data_bytes; only the consumer stores tail;
 *  - bytes before the published head are complete frames: a producer
 *    that dies mid-frame leaves nothing visible;
 *  - producer_waiting is the Dekker handshake for back-pressure: the
 *    producer sets it (seq_cst) and re-reads tail; the consumer stores
 *    tail (seq_cst) and then reads it, so one of them sees the other and
 *    a producer waiting for space is always woken.
 *
 * Restart of a peer: a restarted consumer calls ring_consumer_reset
 * (drops what the previous incarnation did not read, tail = head); a
 * restarted producer calls ring_producer_reset (continues at the shared
 * head). Frames carry no incarnation here; layers above do.
 *
 * Callers: ring_shm_init by the segment creator; the producer functions
 * by the ring's one producer process, the consumer functions by its one
 * consumer process. Nothing here blocks.
 */
#ifndef VS_IPC_RING_H
#define VS_IPC_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define VS_RING_MAGIC      0x31474e52u /* "RNG1" */
#define VS_RING_FRAME_HDR  8u
#define VS_RING_KIND_FRAME 0u
#define VS_RING_KIND_PAD   1u

struct vs_ring_shm {
    /* line 0: written once by ring_shm_init */
    uint32_t magic;
    uint32_t data_bytes; /* power of two, >= 64 */
    uint64_t data_off;   /* from the start of this struct */
    uint8_t pad0[48];
    /* line 1: producer. Release store per batch; pairs with the
     * consumer's acquire load in ring_peek. */
    _Alignas(64) _Atomic uint64_t head;
    uint8_t pad1[56];
    /* line 2: consumer. seq_cst store in ring_release (Dekker with
     * producer_waiting); acquire load by the producer. */
    _Alignas(64) _Atomic uint64_t tail;
    uint8_t pad2[56];
    /* line 3: back-pressure flag (producer sets, consumer clears). */
    _Alignas(64) _Atomic uint32_t producer_waiting;
    uint8_t pad3[60];
};

_Static_assert(sizeof(struct vs_ring_shm) == 256, "ring header layout");
_Static_assert(offsetof(struct vs_ring_shm, head) == 64, "ring head line");
_Static_assert(offsetof(struct vs_ring_shm, tail) == 128, "ring tail line");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "lock-free 64-bit atomics");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "lock-free 32-bit atomics");

/* Process-private view of one ring (producer or consumer side). */
struct vs_ring {
    struct vs_ring_shm *shm;
    uint8_t *data;
    uint32_t size; /* data_bytes */
    uint32_t mask;
    /* producer: next write position (> shared head while unpublished),
     * cached tail */
    uint64_t prod_head;
    uint64_t prod_tail_cache;
    /* consumer: next read position (> shared tail while unreleased),
     * cached head, length of the peeked frame (0 none) */
    uint64_t cons_tail;
    uint64_t cons_head_cache;
    uint32_t peeked;
};

/* Bytes of a ring with `data_bytes` of data (header + data). */
size_t ring_shm_size(uint32_t data_bytes);
/* Formats a ring in memory aligned to 64 bytes. data_bytes must be a
 * power of two >= 64. 0 or -EINVAL. */
int ring_shm_init(void *mem, size_t len, uint32_t data_bytes);
/* Validates and fills the handle; starts at the shared head/tail.
 * 0, -EPROTO (bad magic or size) or -EINVAL (NULL, misaligned, short). */
int ring_attach(struct vs_ring *r, void *mem, size_t len);

/* Largest payload one frame may carry. */
uint32_t ring_max_frame(const struct vs_ring *r);

/* --- producer --- */
/* Reserves a contiguous frame of `len` payload bytes and returns where to
 * write it, or NULL with errno EMSGSIZE (len > max frame) or EAGAIN (no
 * space now; producer_waiting is set, so the consumer will ring this
 * process's doorbell when it frees space). The frame becomes part of the
 * batch by ring_commit and visible by ring_publish. */
void *ring_reserve(struct vs_ring *r, uint32_t len);
void ring_commit(struct vs_ring *r, uint32_t len);
/* ring_reserve + memcpy + ring_commit. 0, -EMSGSIZE or -EAGAIN. */
int ring_push(struct vs_ring *r, const void *frame, uint32_t len);
/* Makes committed frames visible (release store of head). Returns 1 if
 * anything new was published (then ring the consumer's doorbell), else 0. */
int ring_publish(struct vs_ring *r);
/* A restarted producer continues at the shared head. */
void ring_producer_reset(struct vs_ring *r);
/* Bytes free now (from the producer's view). */
uint32_t ring_free_bytes(struct vs_ring *r);

/* --- consumer --- */
/* Next frame, in place: 0 and (*frame, *len), -EAGAIN if none, or
 * -EPROTO if the ring is corrupt (a frame header out of bounds). The
 * frame stays valid until ring_pop. */
int ring_peek(struct vs_ring *r, const void **frame, uint32_t *len);
/* Consumes the frame returned by the last ring_peek (locally). */
void ring_pop(struct vs_ring *r);
/* Gives consumed space back to the producer (seq_cst store of tail).
 * Returns 1 if the producer was waiting for space (then ring the
 * producer's doorbell), else 0. */
int ring_release(struct vs_ring *r);
/* Drops everything published so far (restarted consumer). Same return
 * as ring_release. */
int ring_consumer_reset(struct vs_ring *r);

/* --- doorbells (eventfd, non-blocking) --- */
/* Creates an eventfd doorbell (EFD_NONBLOCK | EFD_CLOEXEC). fd or -errno. */
int ring_doorbell_create(void);
/* Wakes the owner of `fd`. Async-signal-safe. 0 or -errno. */
int ring_doorbell_ring(int fd);
/* Resets the doorbell; returns the number of rings since the last drain
 * (0 if none). */
uint64_t ring_doorbell_drain(int fd);

#endif /* VS_IPC_RING_H */
