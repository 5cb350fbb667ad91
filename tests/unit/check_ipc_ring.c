/*
 * tests/unit/check_ipc_ring.c - SPSC rings and the libevent port:
 * ordering and no loss with random frame sizes across wrap-around, a
 * full ring (back-pressure), corrupt headers, and two processes with a
 * consumer or producer killed mid-stream. Every wait is bounded.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/log.h"
#include "ipc/port.h"
#include "ipc/ring.h"
#include "ipc/segment.h"

#define WAIT_MS 30000u

static uint64_t
now_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

static void
sleep_us(unsigned us)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)us * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t
rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Frame: [u64 seq][u32 gen][u32 len][payload][u64 xxh3 of the rest]. */
#define FRAME_MIN 24u

static uint32_t
frame_make(uint8_t *buf, uint64_t seq, uint32_t gen, uint32_t len)
{
    if (len < FRAME_MIN)
        len = FRAME_MIN;
    memcpy(buf, &seq, 8);
    memcpy(buf + 8, &gen, 4);
    memcpy(buf + 12, &len, 4);
    for (uint32_t i = 16; i < len - 8; i++)
        buf[i] = (uint8_t)(seq * 31u + i);
    uint64_t h = vs_xxh3_64(buf, len - 8);
    memcpy(buf + len - 8, &h, 8);
    return len;
}

/* 0 if intact; fills seq and gen. */
static int
frame_check(const uint8_t *f, uint32_t len, uint64_t *seq, uint32_t *gen)
{
    uint32_t l;
    if (len < FRAME_MIN)
        return -1;
    memcpy(seq, f, 8);
    memcpy(gen, f + 8, 4);
    memcpy(&l, f + 12, 4);
    uint64_t h;
    memcpy(&h, f + len - 8, 8);
    return l == len && h == vs_xxh3_64(f, len - 8) ? 0 : -1;
}

struct mem_ring {
    void *mem;
    size_t len;
    struct vs_ring prod, cons;
};

static void
mem_ring_init(struct mem_ring *m, uint32_t bytes)
{
    m->len = ring_shm_size(bytes);
    m->mem = aligned_alloc(64, (m->len + 63) / 64 * 64);
    ck_assert_ptr_nonnull(m->mem);
    memset(m->mem, 0, m->len);
    ck_assert_int_eq(ring_shm_init(m->mem, m->len, bytes), 0);
    ck_assert_int_eq(ring_attach(&m->prod, m->mem, m->len), 0);
    ck_assert_int_eq(ring_attach(&m->cons, m->mem, m->len), 0);
}

START_TEST(test_init_errors)
{
    _Alignas(64) uint8_t buf[512] = {0};
    ck_assert_int_eq(ring_shm_init(buf, sizeof(buf), 100), -EINVAL);
    ck_assert_int_eq(ring_shm_init(buf + 8, sizeof(buf) - 8, 64), -EINVAL);
    ck_assert_int_eq(ring_shm_init(buf, sizeof(buf), 32), -EINVAL);
    ck_assert_int_eq(ring_shm_init(buf, 320, 64), 0);
    ck_assert_int_eq(ring_shm_init(buf, 256 + 63, 64), -EINVAL);
    struct vs_ring r;
    ck_assert_int_eq(ring_attach(&r, buf, 320), 0);
    ck_assert_uint_eq(ring_max_frame(&r), 24);
    ck_assert_int_eq(ring_attach(&r, buf, 256 + 63), -EPROTO);
    ((struct vs_ring_shm *)buf)->magic = 0;
    ck_assert_int_eq(ring_attach(&r, buf, 320), -EPROTO);
    ck_assert_int_eq(ring_attach(&r, buf, 10), -EINVAL);
    ck_assert_int_eq(ring_attach(&r, buf + 8, 300), -EINVAL);
}
END_TEST

/* Random frame sizes (0..max), random producer bursts and consumer
 * drains, many times around a 4 KiB ring: FIFO, intact, nothing lost. */
START_TEST(test_random_wraparound)
{
    struct mem_ring m;
    mem_ring_init(&m, 4096);
    uint32_t max = ring_max_frame(&m.prod);
    ck_assert_uint_eq(max, 2040);
    uint8_t buf[4096];
    uint64_t rs = 0x1234567u, sent = 0, got = 0, bytes = 0;
    int saw_full = 0;
    while (got < 20000) {
        uint32_t burst = (uint32_t)(rng_next(&rs) % 12);
        for (uint32_t i = 0; i < burst; i++) {
            uint32_t len = (uint32_t)(rng_next(&rs) % (max + 1));
            len = frame_make(buf, sent, 0, len);
            int rc = ring_push(&m.prod, buf, len);
            if (rc == -EAGAIN) {
                saw_full = 1;
                break;
            }
            ck_assert_int_eq(rc, 0);
            sent++;
            bytes += len;
        }
        ring_publish(&m.prod);
        uint32_t drain = (uint32_t)(rng_next(&rs) % 12);
        for (uint32_t i = 0; i < drain; i++) {
            const void *f;
            uint32_t len;
            int rc = ring_peek(&m.cons, &f, &len);
            if (rc == -EAGAIN)
                break;
            ck_assert_int_eq(rc, 0);
            uint64_t seq;
            uint32_t gen;
            ck_assert_int_eq(frame_check(f, len, &seq, &gen), 0);
            ck_assert_uint_eq(seq, got);
            ring_pop(&m.cons);
            got++;
        }
        ring_release(&m.cons);
    }
    ck_assert(saw_full);
    ck_assert_uint_gt(bytes, 100u * 4096u); /* wrapped many times */
    free(m.mem);
}
END_TEST

START_TEST(test_full_and_backpressure)
{
    struct mem_ring m;
    mem_ring_init(&m, 1024);
    uint8_t buf[1024] = {0};
    ck_assert_int_eq(ring_push(&m.prod, buf, ring_max_frame(&m.prod) + 1),
                     -EMSGSIZE);
    ck_assert_int_eq(ring_push(&m.prod, buf, 0), 0); /* empty frames */
    int n = 1;
    while (ring_push(&m.prod, buf, 100) == 0)
        n++;
    ck_assert_int_eq(n, 1 + 1016 / 112);
    ck_assert_uint_eq(atomic_load(&m.prod.shm->producer_waiting), 1);
    /* nothing visible before publish */
    const void *f;
    uint32_t len;
    ck_assert_int_eq(ring_peek(&m.cons, &f, &len), -EAGAIN);
    ck_assert_int_eq(ring_publish(&m.prod), 1);
    ck_assert_int_eq(ring_publish(&m.prod), 0);
    ck_assert_int_eq(ring_peek(&m.cons, &f, &len), 0);
    ck_assert_uint_eq(len, 0);
    ring_pop(&m.cons);
    /* the producer was waiting: release says "ring its doorbell" */
    ck_assert_int_eq(ring_release(&m.cons), 1);
    ck_assert_int_eq(ring_release(&m.cons), 0);
    ck_assert_int_eq(ring_push(&m.prod, buf, 100), -EAGAIN); /* 8 freed */
    ck_assert_int_eq(ring_peek(&m.cons, &f, &len), 0);
    ck_assert_uint_eq(len, 100);
    ring_pop(&m.cons);
    ck_assert_int_eq(ring_release(&m.cons), 1);
    ck_assert_int_eq(ring_push(&m.prod, buf, 100), 0);
    ck_assert_uint_eq(ring_free_bytes(&m.prod), 8);
    /* a restarted consumer drops everything published */
    ring_publish(&m.prod);
    ck_assert_int_eq(ring_consumer_reset(&m.cons), 0);
    ck_assert_int_eq(ring_peek(&m.cons, &f, &len), -EAGAIN);
    ck_assert_uint_eq(ring_free_bytes(&m.prod), 1024);
    free(m.mem);
}
END_TEST

/* Corrupt headers are refused with -EPROTO, never read out of bounds. */
START_TEST(test_corrupt)
{
    struct mem_ring m;
    mem_ring_init(&m, 256);
    uint8_t buf[64] = {0};
    uint8_t *data = (uint8_t *)m.mem + sizeof(struct vs_ring_shm);
    const void *f;
    uint32_t len;
    struct {
        uint32_t len, kind;
    } cases[] = {{5000, 0}, {121, 0}, {8, 7}, {100, 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(ring_push(&m.prod, buf, 16), 0);
        ring_publish(&m.prod);
        uint32_t pos = (uint32_t)(m.cons.cons_tail & 255u);
        memcpy(data + pos, &cases[i].len, 4);
        memcpy(data + pos + 4, &cases[i].kind, 4);
        ck_assert_int_eq(ring_peek(&m.cons, &f, &len), -EPROTO);
        ring_consumer_reset(&m.cons);
    }
    /* head beyond what the data area can hold */
    atomic_store(&m.prod.shm->head, m.cons.cons_tail + 1000);
    ck_assert_int_eq(ring_peek(&m.cons, &f, &len), -EPROTO);
    free(m.mem);
}
END_TEST

/* ---- two processes through ports on libevent ---- */

struct shared {
    _Atomic uint64_t sent;       /* frames the producer handed over */
    _Atomic uint64_t got;        /* frames the consumer accepted */
    _Atomic uint64_t bad;        /* corrupt or out of order */
    _Atomic uint64_t last_seq;   /* consumer's last seq + 1 */
    _Atomic uint32_t congested;  /* producer saw port_send return 1 */
    _Atomic uint32_t drained;    /* producer's on_drain calls */
    _Atomic uint64_t ticks;      /* producer loop timer ticks */
    _Atomic uint32_t go;         /* consumer may run its loop */
    _Atomic uint32_t cons_ready; /* consumer's port exists (rings reset) */
    _Atomic uint64_t gen_got[4];
};

static struct shared *sh;

struct prod {
    struct event_base *base;
    struct vs_port *port;
    struct event *tick;
    uint64_t next, total;
    uint32_t gen;
    int paused;
    uint64_t rs;
};

static void
prod_burst(struct prod *p)
{
    uint8_t buf[2048];
    for (int i = 0; i < 64 && !p->paused && p->next < p->total; i++) {
        uint32_t len = frame_make(buf, p->next, p->gen,
                                  (uint32_t)(rng_next(&p->rs) % 1500));
        int rc = port_send(p->port, 1, buf, len);
        if (rc < 0)
            _exit(7);
        p->next++;
        atomic_store(&sh->sent, p->next);
        if (rc == 1) {
            p->paused = 1;
            atomic_store(&sh->congested, 1);
        }
    }
}

static void
prod_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct prod *p = arg;
    atomic_fetch_add(&sh->ticks, 1);
    prod_burst(p);
    if (p->next >= p->total && port_queued(p->port, 1) == 0) {
        port_flush(p->port);
        event_base_loopbreak(p->base);
    }
}

static void
prod_drain(void *ctx, uint32_t dst)
{
    struct prod *p = ctx;
    (void)dst;
    p->paused = 0;
    atomic_fetch_add(&sh->drained, 1);
}

static void
noop_frame(void *ctx, uint32_t src, const void *f, uint32_t len)
{
    (void)ctx;
    (void)src;
    (void)f;
    (void)len;
}

_Noreturn static void
producer_main(const struct vs_seg *seg, uint64_t first, uint64_t total,
              uint32_t gen)
{
    struct prod p = {.next = first, .total = total, .gen = gen, .rs = 99};
    p.base = event_base_new();
    struct vs_port_ops ops = {.on_frame = noop_frame,
                              .on_drain = prod_drain,
                              .ctx = &p,
                              .queue_high = 8192};
    p.port = port_create(p.base, seg, 0, &ops);
    if (p.port == NULL)
        _exit(3);
    p.tick = event_new(p.base, -1, EV_PERSIST, prod_tick, &p);
    struct timeval tv = {0, 200};
    event_add(p.tick, &tv);
    event_base_dispatch(p.base);
    event_free(p.tick);
    port_destroy(p.port);
    event_base_free(p.base);
    _exit(0);
}

static void
cons_frame(void *ctx, uint32_t src, const void *f, uint32_t len)
{
    (void)ctx;
    uint64_t seq;
    uint32_t gen;
    if (src != 0 || frame_check(f, len, &seq, &gen) != 0 || gen > 3 ||
        seq < atomic_load(&sh->last_seq)) {
        atomic_fetch_add(&sh->bad, 1);
        return;
    }
    atomic_store(&sh->last_seq, seq + 1);
    atomic_fetch_add(&sh->got, 1);
    atomic_fetch_add(&sh->gen_got[gen], 1);
}

static void
cons_stop_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

_Noreturn static void
consumer_main(const struct vs_seg *seg, int wait_go)
{
    struct event_base *base = event_base_new();
    struct vs_port_ops ops = {.on_frame = cons_frame, .queue_high = 8192};
    struct vs_port *port = port_create(base, seg, 1, &ops);
    if (port == NULL)
        _exit(3);
    atomic_store(&sh->cons_ready, 1);
    uint64_t end = now_ms() + WAIT_MS;
    while (wait_go && !atomic_load(&sh->go) && now_ms() < end)
        sleep_us(200);
    struct event *t = event_new(base, -1, EV_PERSIST, cons_stop_check, NULL);
    struct timeval tv = {0, 100000};
    event_add(t, &tv);
    event_base_dispatch(base); /* until killed */
    _exit(0);
}

static struct vs_seg seg;

static void
two_setup(void)
{
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    struct vs_seg_params p = {
        .n_procs = 2, .lr_instance_size = 64, .ring_bytes = 4096};
    ck_assert_int_eq(seg_create(&seg, &p), 0);
    vs_log_set_level(VS_LOG_ERROR);
}

static pid_t
spawn_producer(uint64_t first, uint64_t total, uint32_t gen)
{
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0)
        producer_main(&seg, first, total, gen);
    return pid;
}

static pid_t
spawn_consumer(int wait_go)
{
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0)
        consumer_main(&seg, wait_go);
    return pid;
}

static int
wait_exit(pid_t pid)
{
    uint64_t end = now_ms() + WAIT_MS;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        ck_assert_msg(r == 0, "waitpid: %s", strerror(errno));
        ck_assert_msg(now_ms() < end, "pid %d did not exit", (int)pid);
        sleep_us(1000);
    }
}

static void
wait_gt(_Atomic uint64_t *v, uint64_t than, const char *what)
{
    uint64_t end = now_ms() + WAIT_MS;
    while (atomic_load(v) <= than) {
        ck_assert_msg(now_ms() < end, "timed out waiting for %s", what);
        sleep_us(500);
    }
}

/* All frames arrive in order and intact, the consumer starting only
 * once the producer is congested (a full ring and a queue over its high
 * water mark), so back-pressure and its release are exercised. */
START_TEST(test_two_processes_backpressure)
{
    two_setup();
    const uint64_t total = 20000;
    pid_t c = spawn_consumer(1);
    /* A process drops what its incoming rings hold when it creates its
     * port (frames of a previous incarnation): start the producer only
     * once the consumer's port exists, or early frames would be lost. */
    uint64_t ready_end = now_ms() + WAIT_MS;
    while (!atomic_load(&sh->cons_ready)) {
        ck_assert_msg(now_ms() < ready_end, "consumer never attached");
        sleep_us(200);
    }
    pid_t p = spawn_producer(0, total, 0);
    uint64_t end = now_ms() + WAIT_MS;
    while (!atomic_load(&sh->congested)) {
        ck_assert_msg(now_ms() < end, "producer never congested");
        sleep_us(500);
    }
    /* The producer's loop keeps running while congested. */
    uint64_t t0 = atomic_load(&sh->ticks);
    wait_gt(&sh->ticks, t0 + 5, "producer loop alive while congested");
    ck_assert_uint_eq(atomic_load(&sh->got), 0);
    atomic_store(&sh->go, 1);
    int st = wait_exit(p);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "producer %d", st);
    wait_gt(&sh->got, total - 1, "all frames");
    ck_assert_uint_eq(atomic_load(&sh->got), total);
    ck_assert_uint_eq(atomic_load(&sh->bad), 0);
    ck_assert_uint_ge(atomic_load(&sh->drained), 1);
    kill(c, SIGKILL);
    wait_exit(c);
    seg_destroy(&seg);
}
END_TEST

/* The consumer is SIGKILLed mid-stream: the producer neither blocks nor
 * drops (it queues); a new consumer starts on a reset ring and gets the
 * rest in order. Then the producer is killed mid-stream: the consumer
 * sees only whole frames, and a new producer continues. */
START_TEST(test_killed_peer)
{
    two_setup();
    const uint64_t total = 1000000;
    pid_t c = spawn_consumer(0);
    pid_t p = spawn_producer(0, total, 1);
    wait_gt(&sh->got, 2000, "first consumer receives");
    kill(c, SIGKILL);
    wait_exit(c);
    /* producer keeps its loop running, congested, no frame dropped */
    uint64_t end = now_ms() + WAIT_MS;
    while (!atomic_load(&sh->congested)) {
        ck_assert_msg(now_ms() < end, "producer never congested");
        sleep_us(500);
    }
    uint64_t t0 = atomic_load(&sh->ticks);
    wait_gt(&sh->ticks, t0 + 5, "producer loop alive");
    uint64_t got1 = atomic_load(&sh->got);
    c = spawn_consumer(0);
    wait_gt(&sh->got, got1 + 2000, "second consumer receives");
    ck_assert_uint_eq(atomic_load(&sh->bad), 0);
    /* now kill the producer mid-stream */
    kill(p, SIGKILL);
    wait_exit(p);
    sleep_us(20000);
    uint64_t got2 = atomic_load(&sh->got);
    p = spawn_producer(atomic_load(&sh->last_seq) + 1000000, 2000000 + 3000, 2);
    wait_gt(&sh->gen_got[2], 2000, "frames of the new producer");
    ck_assert_uint_gt(atomic_load(&sh->got), got2);
    ck_assert_uint_eq(atomic_load(&sh->bad), 0);
    kill(p, SIGKILL);
    wait_exit(p);
    kill(c, SIGKILL);
    wait_exit(c);
    seg_destroy(&seg);
}
END_TEST

START_TEST(test_port_errors)
{
    two_setup();
    struct event_base *base = event_base_new();
    struct vs_port_ops ops = {.on_frame = noop_frame, .queue_high = 2010};
    ck_assert_ptr_null(port_create(base, &seg, 2, &ops));
    ck_assert_int_eq(errno, EINVAL);
    struct vs_port_ops bad = {.on_frame = NULL};
    ck_assert_ptr_null(port_create(base, &seg, 0, &bad));
    struct vs_port *p = port_create(base, &seg, 0, &ops);
    ck_assert_ptr_nonnull(p);
    uint8_t buf[4096] = {0};
    ck_assert_int_eq(port_send(p, 0, buf, 8), -EINVAL);
    ck_assert_int_eq(port_send(p, 5, buf, 8), -EINVAL);
    ck_assert_int_eq(port_send(p, 1, buf, 4000), -EMSGSIZE);
    ck_assert_int_eq(port_send(p, 1, buf, 2000), 0);
    ck_assert_int_eq(port_send(p, 1, buf, 2000), 0);
    ck_assert_uint_eq(port_queued(p, 1), 0);
    ck_assert_int_eq(port_send(p, 1, buf, 2000), 0);
    ck_assert_uint_eq(port_queued(p, 1), 2004);    /* ring full: queued */
    ck_assert_int_eq(port_send(p, 1, buf, 10), 1); /* over high water */
    port_flush(p);
    ck_assert_uint_eq(port_poll(p), 0);
    port_destroy(p);
    port_destroy(NULL);
    event_base_free(base);
    seg_destroy(&seg);
}
END_TEST

/* port_sendv: the pieces gathered into one frame, straight into the
 * ring or, once it is full, into the queue (order kept); the errors of
 * port_send. */
struct gathered {
    uint32_t n;
    uint32_t len[16];
    uint8_t first[16], last[16];
};

static void
gathered_frame(void *ctx, uint32_t src, const void *f, uint32_t len)
{
    struct gathered *g = ctx;
    ck_assert_uint_eq(src, 0);
    ck_assert_uint_lt(g->n, 16);
    const uint8_t *b = f;
    g->len[g->n] = len;
    g->first[g->n] = len ? b[0] : 0;
    g->last[g->n] = len ? b[len - 1] : 0;
    /* every byte i of frame k is (k + i) & 0xff: pieces in order */
    for (uint32_t i = 0; i < len; i++)
        ck_assert_uint_eq(b[i], (uint8_t)(g->n + i));
    g->n++;
}

START_TEST(test_port_sendv)
{
    two_setup();
    struct event_base *base = event_base_new();
    struct gathered g;
    memset(&g, 0, sizeof(g));
    struct vs_port_ops ops0 = {.on_frame = noop_frame, .queue_high = 1u << 20};
    struct vs_port_ops ops1 = {.on_frame = gathered_frame, .ctx = &g};
    struct vs_port *p0 = port_create(base, &seg, 0, &ops0);
    struct vs_port *p1 = port_create(base, &seg, 1, &ops1);
    ck_assert_ptr_nonnull(p0);
    ck_assert_ptr_nonnull(p1);
    uint8_t src[3][1500];
    struct iovec iov[3];
    /* frame k: three pieces of 100, 0 and 1400 bytes */
    for (uint32_t k = 0; k < 4; k++) {
        for (uint32_t i = 0; i < 1500; i++)
            src[0][i] = (uint8_t)(k + i);
        for (uint32_t i = 0; i < 1400; i++)
            src[2][i] = (uint8_t)(k + 100 + i);
        iov[0] = (struct iovec){.iov_base = src[0], .iov_len = 100};
        iov[1] = (struct iovec){.iov_base = src[1], .iov_len = 0};
        iov[2] = (struct iovec){.iov_base = src[2], .iov_len = 1400};
        ck_assert_int_eq(port_sendv(p0, 1, iov, 3), 0);
    }
    /* the 4096-byte ring takes two 1500-byte frames; the rest queued */
    ck_assert_uint_eq(port_queued(p0, 1), 2 * (4 + 1500));
    for (int round = 0; round < 50 && g.n < 4; round++) {
        port_flush(p0);
        (void)port_poll(p1);
    }
    ck_assert_uint_eq(g.n, 4);
    for (uint32_t k = 0; k < 4; k++)
        ck_assert_uint_eq(g.len[k], 1500);
    ck_assert_uint_eq(port_queued(p0, 1), 0);
    /* errors: a bad destination, a frame over the ring's largest */
    ck_assert_int_eq(port_sendv(p0, 0, iov, 3), -EINVAL);
    ck_assert_int_eq(port_sendv(p0, 7, iov, 3), -EINVAL);
    ck_assert_int_eq(port_sendv(p0, 1, iov, -1), -EINVAL);
    iov[0].iov_len = 1500;
    iov[1] = (struct iovec){.iov_base = src[0], .iov_len = 1500};
    ck_assert_int_eq(port_sendv(p0, 1, iov, 3), -EMSGSIZE);
    port_destroy(p1);
    port_destroy(p0);
    event_base_free(base);
    seg_destroy(&seg);
}
END_TEST

/* ---- request / reply on the reverse ring ---- */

struct rr {
    struct event_base *base;
    struct vs_port *port;
    uint32_t self;
    uint64_t next, total, replies;
    int bad;
};

static void
rr_server_frame(void *ctx, uint32_t src, const void *f, uint32_t len)
{
    struct rr *r = ctx;
    /* answer on the reverse ring, same bytes */
    if (port_send(r->port, src, f, len) < 0)
        _exit(8);
}

static void
rr_client_frame(void *ctx, uint32_t src, const void *f, uint32_t len)
{
    struct rr *r = ctx;
    uint64_t seq;
    uint32_t gen;
    if (src != 1 || frame_check(f, len, &seq, &gen) != 0 || seq != r->replies)
        r->bad = 1;
    r->replies++;
    atomic_store(&sh->got, r->replies);
    if (r->replies == r->total)
        event_base_loopbreak(r->base);
}

static void
rr_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct rr *r = arg;
    uint8_t buf[600];
    /* at most 32 requests in flight */
    while (r->next < r->total && r->next - r->replies < 32) {
        uint32_t len = frame_make(buf, r->next, 0, (uint32_t)(r->next % 500));
        if (port_send(r->port, 1, buf, len) < 0)
            _exit(9);
        r->next++;
    }
}

_Noreturn static void
rr_main(uint32_t self, uint64_t total)
{
    struct rr r = {.self = self, .total = total};
    r.base = event_base_new();
    struct vs_port_ops ops = {.on_frame =
                                  self == 0 ? rr_client_frame : rr_server_frame,
                              .ctx = &r,
                              .queue_high = 1 << 20};
    r.port = port_create(r.base, &seg, self, &ops);
    if (r.port == NULL)
        _exit(3);
    if (self == 1)
        atomic_store(&sh->go, 1); /* rings reset: requests may come */
    struct event *t = event_new(r.base, -1, EV_PERSIST, rr_tick, &r);
    struct timeval tv = {0, 500};
    if (self == 0)
        event_add(t, &tv);
    event_base_dispatch(r.base);
    _exit(r.bad ? 10 : 0);
}

START_TEST(test_request_reply)
{
    two_setup();
    const uint64_t total = 20000;
    pid_t srv = fork();
    ck_assert_int_ne(srv, -1);
    if (srv == 0)
        rr_main(1, total);
    /* the server's port resets its incoming rings before any request */
    uint64_t end = now_ms() + WAIT_MS;
    while (!atomic_load(&sh->go)) {
        ck_assert_msg(now_ms() < end, "server did not start");
        sleep_us(200);
    }
    pid_t cli = fork();
    ck_assert_int_ne(cli, -1);
    if (cli == 0)
        rr_main(0, total);
    int st = wait_exit(cli);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d", st);
    ck_assert_uint_eq(atomic_load(&sh->got), total);
    kill(srv, SIGKILL);
    wait_exit(srv);
    seg_destroy(&seg);
}
END_TEST

static Suite *
ring_suite(void)
{
    Suite *s = suite_create("ipc_ring");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_init_errors);
    tcase_add_test(tc, test_random_wraparound);
    tcase_add_test(tc, test_full_and_backpressure);
    tcase_add_test(tc, test_corrupt);
    tcase_add_test(tc, test_port_errors);
    tcase_add_test(tc, test_port_sendv);
    tcase_add_test(tc, test_two_processes_backpressure);
    tcase_add_test(tc, test_killed_peer);
    tcase_add_test(tc, test_request_reply);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(ring_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
