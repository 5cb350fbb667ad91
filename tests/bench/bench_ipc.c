/*
 * tests/bench/bench_ipc.c - micro-benchmarks of the node runtime's IPC
 * (not run by make check; numbers are for the close and for
 * regressions spotted by hand):
 *   1. left-right publish latency, 4 reader processes reading all the
 *      time (yielding the CPU between read sections, then back to back);
 *   2. cost of one read section (lr_read_begin + lr_read_end), alone;
 *   3. ring throughput between two processes for 64 B and 4 KiB frames
 *      (batches of up to 256 frames per publish + eventfd doorbell; the
 *      sides sleep in poll() on their doorbell when empty/full).
 * Usage: tests/bench/bench_ipc [publishes] (default 20000)
 */
#include "config.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "ipc/lr.h"
#include "ipc/ring.h"

#define N_READERS 4u
#define INST_SIZE 4096u

static void
apply_op(void *inst, size_t size, void *ctx)
{
    uint64_t op = *(const uint64_t *)ctx;
    uint64_t *v = inst;
    v[0] = op;
    v[1 + op % (size / 8 - 1)] += op;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void
bench_lr(uint64_t n, int busy)
{
    size_t len = lr_region_size(N_READERS + 1, INST_SIZE);
    void *region = mmap(NULL, len, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    _Atomic uint64_t *started = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    _Atomic int *stop = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || stop == MAP_FAILED ||
        lr_region_init(region, len, N_READERS + 1, INST_SIZE) != 0) {
        fprintf(stderr, "bench: region\n");
        exit(1);
    }
    pid_t pids[N_READERS];
    for (uint32_t i = 0; i < N_READERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            struct vs_lr lr;
            lr_attach(&lr, region, len);
            lr_reader_start(&lr, i + 1);
            volatile uint64_t sink = 0;
            while (!atomic_load(stop)) {
                const uint64_t *v = lr_read_begin(&lr, NULL);
                sink += v[0];
                lr_read_end(&lr);
                if (!atomic_load_explicit(&started[i], memory_order_relaxed))
                    atomic_store(&started[i], 1);
                if (!busy)
                    sched_yield();
            }
            _exit(0);
        }
    }
    for (uint32_t i = 0; i < N_READERS; i++)
        while (!atomic_load(&started[i]))
            usleep(100);
    struct vs_lr w;
    lr_attach(&w, region, len);
    struct vs_lr_writer_opts o = {.deadline_ns = 1000000000u};
    lr_writer_start(&w, &o);
    uint64_t *lat = calloc(n, sizeof(uint64_t));
    uint64_t t0 = vs_monotonic_ns();
    for (uint64_t op = 1; op <= n; op++) {
        uint64_t a = vs_monotonic_ns();
        lr_publish(&w, op, apply_op, &op);
        lat[op - 1] = vs_monotonic_ns() - a;
    }
    uint64_t total = vs_monotonic_ns() - t0;
    atomic_store(stop, 1);
    for (uint32_t i = 0; i < N_READERS; i++)
        waitpid(pids[i], NULL, 0);
    qsort(lat, n, sizeof(uint64_t), cmp_u64);
    printf("left-right publish, %u readers (%s), %u-byte instance, %llu "
           "ops: mean %.2f us/op, p50 %.2f us, p99 %.2f us, max %.2f us\n",
           N_READERS, busy ? "reading back to back" : "yield between reads",
           INST_SIZE, (unsigned long long)n, (double)total / (double)n / 1000.0,
           (double)lat[n / 2] / 1000.0, (double)lat[n * 99 / 100] / 1000.0,
           (double)lat[n - 1] / 1000.0);
    free(lat);

    /* read section alone */
    struct vs_lr r;
    lr_attach(&r, region, len);
    lr_reader_start(&r, 1);
    const uint64_t reads = 20000000;
    volatile uint64_t sink = 0;
    t0 = vs_monotonic_ns();
    for (uint64_t i = 0; i < reads; i++) {
        const uint64_t *v = lr_read_begin(&r, NULL);
        sink += v[0];
        lr_read_end(&r);
    }
    total = vs_monotonic_ns() - t0;
    printf("left-right read section (begin + end, no writer): %.1f ns\n",
           (double)total / (double)reads);
    munmap(region, len);
    munmap((void *)stop, 4096);
    munmap((void *)started, 4096);
}

static void
wait_bell(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    poll(&p, 1, 100);
    ring_doorbell_drain(fd);
}

static void
bench_ring(uint32_t frame, uint64_t frames)
{
    const uint32_t bytes = 1u << 20;
    size_t len = ring_shm_size(bytes);
    void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED || ring_shm_init(mem, len, bytes) != 0) {
        fprintf(stderr, "bench: ring\n");
        exit(1);
    }
    int bell_prod = ring_doorbell_create();
    int bell_cons = ring_doorbell_create();
    uint8_t *buf = calloc(1, frame);
    pid_t pid = fork();
    if (pid == 0) {
        struct vs_ring r;
        ring_attach(&r, mem, len);
        uint64_t sent = 0;
        while (sent < frames) {
            uint32_t batch = 0;
            while (batch < 256 && sent < frames) {
                memcpy(buf, &sent, sizeof(sent));
                if (ring_push(&r, buf, frame) != 0)
                    break;
                sent++;
                batch++;
            }
            if (ring_publish(&r))
                ring_doorbell_ring(bell_cons);
            if (batch == 0)
                wait_bell(bell_prod);
        }
        _exit(0);
    }
    struct vs_ring r;
    ring_attach(&r, mem, len);
    uint64_t got = 0, bad = 0;
    uint64_t t0 = vs_monotonic_ns();
    while (got < frames) {
        const void *f;
        uint32_t l;
        uint32_t batch = 0;
        while (batch < 256 && ring_peek(&r, &f, &l) == 0) {
            uint64_t seq;
            memcpy(&seq, f, sizeof(seq));
            bad += seq != got || l != frame;
            ring_pop(&r);
            got++;
            batch++;
        }
        if (ring_release(&r))
            ring_doorbell_ring(bell_prod);
        if (batch == 0)
            wait_bell(bell_cons);
    }
    uint64_t ns = vs_monotonic_ns() - t0;
    waitpid(pid, NULL, 0);
    double s = (double)ns / 1e9;
    printf("ring, 2 processes, %u-byte frames, %llu frames: %.0f frames/s, "
           "%.1f MB/s%s\n",
           frame, (unsigned long long)frames, (double)frames / s,
           (double)frames * frame / s / 1e6, bad ? " (ORDER ERRORS)" : "");
    free(buf);
    close(bell_prod);
    close(bell_cons);
    munmap(mem, len);
}

int
main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    if (n == 0)
        n = 1;
    vs_log_set_level(VS_LOG_ERROR);
    bench_lr(n, 0);
    bench_lr(n, 1);
    bench_ring(64, 5000000);
    bench_ring(4096, 500000);
    return 0;
}
