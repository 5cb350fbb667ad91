/*
 * tests/unit/check_ipc_lr.c - the left-right buffer with real processes.
 *
 * A writer process publishes ops into a small test state (an array and a
 * checksum over it stored inside); 2-4 reader processes check inside
 * every read section that the checksum matches, that the instance holds
 * the op lr_read_begin reported and that ops never go back. The test
 * process plays the supervisor: it reaps, clears reader slots
 * (lr_slot_clear) and respawns, kills readers mid-read, SIGSTOPs one,
 * kills the writer mid-drain. Every wait is bounded; nothing asserts on
 * time.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/log.h"
#include "ipc/lr.h"

#if defined(__SANITIZE_ADDRESS__)
#define OPS_STRESS 2000u
#else
#define OPS_STRESS 10000u
#endif

#define TS_N      500u
#define MAX_SLOTS 6u
#define WAIT_MS   30000u

struct ts_state {
    uint64_t op;
    uint64_t vals[TS_N];
    uint64_t check;
};

/* Shared between the test process and its children. */
struct shared {
    _Atomic uint64_t published; /* writer: last op published */
    _Atomic uint64_t limit;     /* writer publishes no op above it */
    _Atomic uint32_t writer_done;
    _Atomic uint32_t stop;
    _Atomic uint64_t slow[MAX_SLOTS]; /* writer's on_slow per slot */
    _Atomic uint64_t reads[MAX_SLOTS];
    _Atomic uint64_t violations[MAX_SLOTS];
    _Atomic uint32_t hold[MAX_SLOTS];       /* stay in the section */
    _Atomic uint32_t in_section[MAX_SLOTS]; /* holding now */
};

static struct shared *sh;
static void *region;
static size_t region_len;

static uint64_t
ts_check(const struct ts_state *s)
{
    return vs_xxh3_64(s, offsetof(struct ts_state, check));
}

static void
ts_apply(void *inst, size_t size, void *ctx)
{
    (void)size;
    struct ts_state *s = inst;
    uint64_t op = *(const uint64_t *)ctx;
    s->op = op;
    s->vals[(op * 7u) % TS_N] += op;
    s->vals[(op * 13u + 1u) % TS_N] ^= op * 0x9e3779b97f4a7c15ull;
    s->vals[op % TS_N] = op;
    s->check = ts_check(s);
}

static void
ts_init(void *inst, size_t size, void *ctx)
{
    (void)ctx;
    struct ts_state *s = inst;
    memset(inst, 0, size);
    s->check = ts_check(s);
}

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

static void
setup(uint32_t n_slots)
{
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    atomic_store(&sh->limit, UINT64_MAX);
    region_len = lr_region_size(n_slots, sizeof(struct ts_state));
    ck_assert_uint_gt(region_len, 0);
    region = mmap(NULL, region_len, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(region, MAP_FAILED);
    ck_assert_int_eq(
        lr_region_init(region, region_len, n_slots, sizeof(struct ts_state)),
        0);
    vs_log_set_level(VS_LOG_ERROR);
    /* The initial state (op 0) satisfies the invariant too. */
    struct vs_lr w;
    ck_assert_int_eq(lr_attach(&w, region, region_len), 0);
    struct vs_lr_writer_opts o = {.deadline_ns = 1000000u};
    ck_assert_int_eq(lr_writer_start(&w, &o), 0);
    ck_assert_int_eq(lr_restore(&w, 0, ts_init, NULL), 0);
}

static void
teardown(void)
{
    munmap(region, region_len);
    munmap(sh, sizeof(*sh));
}

/* ---- children ---- */

static int
verify(const struct ts_state *s, uint64_t op, uint64_t *last)
{
    int bad = ts_check(s) != s->check || s->op != op || op < *last;
    return bad;
}

_Noreturn static void
reader_main(uint32_t slot)
{
    struct vs_lr lr;
    if (lr_attach(&lr, region, region_len) != 0 ||
        lr_reader_start(&lr, slot) != 0 || lr_protect_readonly(&lr) != 0)
        _exit(3);
    uint64_t last = 0;
    unsigned iter = 0;
    while (!atomic_load(&sh->stop)) {
        uint64_t op;
        const struct ts_state *s = lr_read_begin(&lr, &op);
        if (verify(s, op, &last))
            atomic_fetch_add(&sh->violations[slot], 1);
        if (atomic_load(&sh->hold[slot])) {
            atomic_store(&sh->in_section[slot], 1);
            uint64_t end = now_ms() + WAIT_MS;
            while (atomic_load(&sh->hold[slot]) && now_ms() < end) {
                /* The instance must stay intact while we are inside. */
                if (verify(s, op, &last))
                    atomic_fetch_add(&sh->violations[slot], 1);
                sleep_us(200);
            }
            atomic_store(&sh->in_section[slot], 0);
        }
        lr_read_end(&lr);
        last = op;
        atomic_fetch_add(&sh->reads[slot], 1);
        if ((++iter & 3u) == 0)
            sleep_us(20);
    }
    _exit(0);
}

static void
on_slow(void *ctx, uint32_t slot, int32_t pid, uint32_t missed)
{
    (void)ctx;
    (void)pid;
    (void)missed;
    if (slot < MAX_SLOTS)
        atomic_fetch_add(&sh->slow[slot], 1);
}

_Noreturn static void
writer_main(uint64_t from, uint64_t to, uint64_t deadline_ms)
{
    struct vs_lr lr;
    if (lr_attach(&lr, region, region_len) != 0)
        _exit(3);
    struct vs_lr_writer_opts o = {.deadline_ns = deadline_ms * 1000000u,
                                  .on_slow = on_slow};
    if (lr_writer_start(&lr, &o) != 0)
        _exit(4);
    for (uint64_t op = from; op <= to; op++) {
        uint64_t end = now_ms() + WAIT_MS;
        while (op > atomic_load(&sh->limit))
            if (now_ms() > end)
                _exit(6);
            else
                sleep_us(100);
        if (lr_publish(&lr, op, ts_apply, &op) != 0)
            _exit(5);
        atomic_store(&sh->published, op);
    }
    atomic_store(&sh->writer_done, 1);
    _exit(0);
}

static pid_t
spawn_reader(uint32_t slot)
{
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0)
        reader_main(slot);
    return pid;
}

static pid_t
spawn_writer(uint64_t from, uint64_t to, uint64_t deadline_ms)
{
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0)
        writer_main(from, to, deadline_ms);
    return pid;
}

/* Waits (bounded) for pid to exit; returns its status. */
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
        ck_assert_msg(now_ms() < end, "pid %d did not exit in time", (int)pid);
        sleep_us(1000);
    }
}

static void
wait_until_u32(_Atomic uint32_t *v, uint32_t want, const char *what)
{
    uint64_t end = now_ms() + WAIT_MS;
    while (atomic_load(v) != want) {
        ck_assert_msg(now_ms() < end, "timed out waiting for %s", what);
        sleep_us(200);
    }
}

static void
wait_until_gt(_Atomic uint64_t *v, uint64_t than, const char *what)
{
    uint64_t end = now_ms() + WAIT_MS;
    while (atomic_load(v) <= than) {
        ck_assert_msg(now_ms() < end, "timed out waiting for %s", what);
        sleep_us(200);
    }
}

/* Stops the readers and checks their counters. */
static void
stop_readers(pid_t *pids, uint32_t first, uint32_t last)
{
    /* a reader the scheduler has not run yet must still read once (the
     * wait is bounded: a reader that never reads fails the test) */
    for (uint32_t i = first; i <= last; i++) {
        atomic_store(&sh->hold[i], 0);
        wait_until_gt(&sh->reads[i], 0, "a reader's first read");
    }
    atomic_store(&sh->stop, 1);
    for (uint32_t i = first; i <= last; i++) {
        int st = wait_exit(pids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                      "reader %u status %d", i, st);
        ck_assert_uint_eq(atomic_load(&sh->violations[i]), 0);
        ck_assert_uint_gt(atomic_load(&sh->reads[i]), 0);
    }
}

/* Lets the writer publish up to published + n, waits for it to park
 * there (between publishes), kills it and returns the last op. */
static uint64_t
park_and_kill_writer(pid_t w, uint64_t n)
{
    uint64_t target = atomic_load(&sh->published) + n;
    atomic_store(&sh->limit, target);
    wait_until_gt(&sh->published, target - 1, "writer parks");
    ck_assert_uint_eq(atomic_load(&sh->published), target);
    kill(w, SIGKILL);
    wait_exit(w);
    return target;
}

/* Both instances equal the state after ops 1..n applied to zero. */
static void
check_final(uint64_t n)
{
    struct ts_state *want = calloc(1, sizeof(*want));
    ts_init(want, sizeof(*want), NULL);
    for (uint64_t op = 1; op <= n; op++)
        ts_apply(want, sizeof(*want), &op);
    struct vs_lr lr;
    ck_assert_int_eq(lr_attach(&lr, region, region_len), 0);
    ck_assert_uint_eq(lr_published_op(&lr), n);
    ck_assert_int_eq(memcmp(lr.inst[0], want, sizeof(*want)), 0);
    ck_assert_int_eq(memcmp(lr.inst[1], want, sizeof(*want)), 0);
    free(want);
}

static void
fill_copy(void *inst, size_t size, void *ctx)
{
    memcpy(inst, ctx, size);
}

/* ---- tests ---- */

START_TEST(test_region_and_errors)
{
    ck_assert_uint_eq(lr_region_size(0, 100), 0);
    ck_assert_uint_eq(lr_region_size(VS_LR_MAX_SLOTS + 1, 100), 0);
    ck_assert_uint_eq(lr_region_size(2, 0), 0);
    size_t len = lr_region_size(3, 10000);
    long page = sysconf(_SC_PAGESIZE);
    ck_assert_uint_eq(len % (size_t)page, 0);
    void *r = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_int_eq(lr_region_init(r, len - 1, 3, 10000), -EINVAL);
    ck_assert_int_eq(lr_region_init((char *)r + 8, len - 8, 3, 10000), -EINVAL);
    ck_assert_int_eq(lr_region_init(r, len, 3, 10000), 0);
    struct vs_lr lr;
    ck_assert_int_eq(lr_attach(&lr, r, len), 0);
    ck_assert_uint_eq((uintptr_t)lr.inst[0] % (uintptr_t)page, 0);
    ck_assert_uint_eq((uintptr_t)lr.inst[1] % (uintptr_t)page, 0);
    ck_assert_int_eq(lr_attach(&lr, r, len - 1), -EPROTO);
    ck_assert_int_eq(lr_attach(&lr, r, 10), -EINVAL);
    struct vs_lr_hdr_shm *h = r;
    h->magic ^= 1;
    ck_assert_int_eq(lr_attach(&lr, r, len), -EPROTO);
    h->magic ^= 1;
    h->slot_size = 128;
    ck_assert_int_eq(lr_attach(&lr, r, len), -EPROTO);
    h->slot_size = sizeof(struct vs_lr_slot_shm);
    h->layout_version = 99;
    ck_assert_int_eq(lr_attach(&lr, r, len), -EPROTO);
    h->layout_version = VS_LR_LAYOUT_VERSION;
    h->instance_size = 1u << 30;
    ck_assert_int_eq(lr_attach(&lr, r, len), -EPROTO);
    h->instance_size = 10000;
    ck_assert_int_eq(lr_attach(&lr, r, len), 0);
    ck_assert_int_eq(lr_reader_start(&lr, 3), -EINVAL);
    struct vs_lr_writer_opts o = {.deadline_ns = 0};
    ck_assert_int_eq(lr_writer_start(&lr, &o), -EINVAL);
    munmap(r, len);
}
END_TEST

START_TEST(test_single_process_ops)
{
    setup(2);
    struct vs_lr w, rd;
    ck_assert_int_eq(lr_attach(&w, region, region_len), 0);
    ck_assert_int_eq(lr_attach(&rd, region, region_len), 0);
    struct vs_lr_writer_opts o = {.deadline_ns = 1000000u};
    ck_assert_int_eq(lr_writer_start(&w, &o), 0);
    ck_assert_int_eq(lr_reader_start(&rd, 1), 0);
    uint64_t op = 0;
    const struct ts_state *s = lr_read_begin(&rd, &op);
    ck_assert_uint_eq(op, 0);
    ck_assert_uint_eq(s->op, 0);
    lr_read_end(&rd);
    for (uint64_t i = 1; i <= 100; i++)
        ck_assert_int_eq(lr_publish(&w, i, ts_apply, &i), 0);
    /* ops never go back */
    uint64_t stale = 100;
    ck_assert_int_eq(lr_publish(&w, stale, ts_apply, &stale), -ESTALE);
    stale = 50;
    ck_assert_int_eq(lr_publish(&w, stale, ts_apply, &stale), -ESTALE);
    ck_assert_int_eq(lr_restore(&w, 99, ts_apply, &stale), -ESTALE);
    ck_assert_uint_eq(lr_published_op(&w), 100);
    s = lr_read_begin(&rd, &op);
    ck_assert_uint_eq(op, 100);
    ck_assert_uint_eq(s->op, 100);
    ck_assert_uint_eq(ts_check(s), s->check);
    lr_read_end(&rd);
    ck_assert_ptr_eq(lr_writer_live(&w), s);
    check_final(100);
    /* restore: replace everything at the same op, then publish on top */
    struct ts_state *fresh = calloc(1, sizeof(*fresh));
    ts_init(fresh, sizeof(*fresh), NULL);
    for (uint64_t i = 1; i <= 100; i++)
        ts_apply(fresh, sizeof(*fresh), &i);
    ck_assert_int_eq(lr_restore(&w, 100, fill_copy, fresh), 0);
    uint64_t nx = 101;
    ck_assert_int_eq(lr_publish(&w, nx, ts_apply, &nx), 0);
    ts_apply(fresh, sizeof(*fresh), &nx);
    s = lr_read_begin(&rd, &op);
    ck_assert_uint_eq(op, 101);
    ck_assert_uint_eq(ts_check(s), s->check);
    lr_read_end(&rd);
    free(fresh);
    teardown();
}
END_TEST

/* 10k (2k under ASan) ops while 3 readers check every section. */
START_TEST(test_stress_readers)
{
    const uint32_t R = 3;
    setup(R + 1);
    pid_t pids[MAX_SLOTS] = {0};
    for (uint32_t i = 1; i <= R; i++)
        pids[i] = spawn_reader(i);
    /* every reader is reading before the writer starts, so the run
     * overlaps reads with publishes even on a loaded machine */
    for (uint32_t i = 1; i <= R; i++)
        wait_until_gt(&sh->reads[i], 0, "reader running");
    pid_t w = spawn_writer(1, OPS_STRESS, 200);
    int st = wait_exit(w);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d", st);
    ck_assert_uint_eq(atomic_load(&sh->published), OPS_STRESS);
    stop_readers(pids, 1, R);
    check_final(OPS_STRESS);
    teardown();
}
END_TEST

/* A reader SIGKILLed inside a read section blocks the writer's drain
 * until the "supervisor" reaps it and clears its slot; repeated. */
START_TEST(test_reader_killed_mid_read)
{
    const uint32_t R = 2;
    setup(R + 1);
    pid_t pids[MAX_SLOTS] = {0};
    for (uint32_t i = 1; i <= R; i++)
        pids[i] = spawn_reader(i);
    pid_t w = spawn_writer(1, UINT64_MAX - 1, 5);
    for (int round = 0; round < 4; round++) {
        uint32_t slot = 1 + (uint32_t)(round % (int)R);
        uint64_t slow0 = atomic_load(&sh->slow[slot]);
        atomic_store(&sh->hold[slot], 1);
        wait_until_u32(&sh->in_section[slot], 1, "reader inside");
        kill(pids[slot], SIGKILL);
        int st = wait_exit(pids[slot]);
        ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        atomic_store(&sh->hold[slot], 0);
        atomic_store(&sh->in_section[slot], 0);
        /* The dead reader's sign-in is still there: the writer, once it
         * next drains, misses its deadline on exactly this slot. */
        wait_until_gt(&sh->slow[slot], slow0, "writer reports slot");
        uint64_t before = atomic_load(&sh->published);
        struct vs_lr sup;
        ck_assert_int_eq(lr_attach(&sup, region, region_len), 0);
        int32_t spid;
        uint32_t missed;
        lr_slot_status(&sup, slot, &spid, &missed);
        ck_assert_int_eq(spid, pids[slot]);
        lr_slot_clear(&sup, slot);
        lr_slot_status(&sup, slot, &spid, &missed);
        ck_assert_int_eq(spid, 0);
        ck_assert_uint_eq(missed, 0);
        pids[slot] = spawn_reader(slot);
        wait_until_gt(&sh->published, before, "writer resumes");
    }
    uint64_t last = park_and_kill_writer(w, 100);
    stop_readers(pids, 1, R);
    check_final(last);
    teardown();
}
END_TEST

/* A SIGSTOPped reader: the writer reports the deadline and resumes once
 * the reader continues; nobody is killed. */
START_TEST(test_reader_stopped)
{
    const uint32_t R = 2;
    setup(R + 1);
    pid_t pids[MAX_SLOTS] = {0};
    for (uint32_t i = 1; i <= R; i++)
        pids[i] = spawn_reader(i);
    pid_t w = spawn_writer(1, UINT64_MAX - 1, 5);
    wait_until_gt(&sh->published, 10, "writer started");
    atomic_store(&sh->hold[1], 1);
    wait_until_u32(&sh->in_section[1], 1, "reader inside");
    kill(pids[1], SIGSTOP);
    atomic_store(&sh->hold[1], 0);
    wait_until_gt(&sh->slow[1], 0, "deadline report");
    struct vs_lr sup;
    ck_assert_int_eq(lr_attach(&sup, region, region_len), 0);
    uint32_t missed;
    lr_slot_status(&sup, 1, NULL, &missed);
    ck_assert_uint_ge(missed, 1);
    uint64_t stalled = atomic_load(&sh->published);
    kill(pids[1], SIGCONT);
    wait_until_gt(&sh->published, stalled + 100, "writer resumes");
    uint64_t last = park_and_kill_writer(w, 10);
    stop_readers(pids, 1, R);
    check_final(last);
    teardown();
}
END_TEST

/* The writer dies between a flip and its drain (a reader holds the old
 * instance); the next writer must not write that instance before the
 * reader leaves (it drains first). The reader re-verifies its instance
 * all the time it holds it. */
START_TEST(test_writer_killed_mid_drain)
{
    setup(2);
    pid_t pids[MAX_SLOTS] = {0};
    pids[1] = spawn_reader(1);
    atomic_store(&sh->limit, 1);
    pid_t w = spawn_writer(1, 1000, 5);
    wait_until_gt(&sh->published, 0, "op 1 published");
    atomic_store(&sh->hold[1], 1);
    wait_until_u32(&sh->in_section[1], 1, "reader inside");
    atomic_store(&sh->limit, 2);
    wait_until_gt(&sh->slow[1], 0, "first writer blocked after its flip");
    kill(w, SIGKILL);
    wait_exit(w);
    struct vs_lr sup;
    ck_assert_int_eq(lr_attach(&sup, region, region_len), 0);
    ck_assert_uint_eq(lr_published_op(&sup), 2);
    atomic_store(&sh->limit, UINT64_MAX);
    uint64_t slow1 = atomic_load(&sh->slow[1]);
    pid_t w2 = spawn_writer(3, 200, 5);
    wait_until_gt(&sh->slow[1], slow1, "second writer drains first");
    ck_assert_uint_eq(lr_published_op(&sup), 2);
    ck_assert_uint_eq(atomic_load(&sh->violations[1]), 0);
    atomic_store(&sh->hold[1], 0);
    int st = wait_exit(w2);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d", st);
    stop_readers(pids, 1, 1);
    check_final(200);
    teardown();
}
END_TEST

/* A reader that never leaves: the supervisor's rule (SIGKILL at N missed
 * deadlines, reap, clear, respawn) bounds the writer's stall. */
START_TEST(test_hung_reader_killed_by_missed_count)
{
    const uint32_t kill_at = 3;
    setup(3);
    pid_t pids[MAX_SLOTS] = {0};
    pids[1] = spawn_reader(1);
    pids[2] = spawn_reader(2);
    atomic_store(&sh->limit, 0);
    pid_t w = spawn_writer(1, 300, 5);
    atomic_store(&sh->hold[2], 1);
    wait_until_u32(&sh->in_section[2], 1, "reader inside");
    atomic_store(&sh->limit, UINT64_MAX);
    struct vs_lr sup;
    ck_assert_int_eq(lr_attach(&sup, region, region_len), 0);
    uint64_t end = now_ms() + WAIT_MS;
    int killed = 0;
    while (!atomic_load(&sh->writer_done)) {
        ck_assert_msg(now_ms() < end, "writer stalled");
        int32_t pid;
        uint32_t missed;
        lr_slot_status(&sup, 2, &pid, &missed);
        if (!killed && pid == pids[2] && missed >= kill_at) {
            kill(pids[2], SIGKILL);
            wait_exit(pids[2]);
            lr_slot_clear(&sup, 2);
            atomic_store(&sh->hold[2], 0);
            atomic_store(&sh->in_section[2], 0);
            pids[2] = spawn_reader(2);
            killed = 1;
        }
        sleep_us(500);
    }
    ck_assert(killed);
    ck_assert_uint_ge(atomic_load(&sh->slow[2]), kill_at);
    int st = wait_exit(w);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    stop_readers(pids, 1, 2);
    check_final(300);
    teardown();
}
END_TEST

static void
segv_exit(int sig)
{
    (void)sig;
    _exit(42);
}

/* Readers map the instances read-only: a write faults. */
START_TEST(test_reader_mapping_readonly)
{
    setup(2);
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = segv_exit;
        sigaction(SIGSEGV, &sa, NULL);
        struct vs_lr lr;
        if (lr_attach(&lr, region, region_len) != 0 ||
            lr_reader_start(&lr, 1) != 0 || lr_protect_readonly(&lr) != 0)
            _exit(3);
        uint64_t op;
        const struct ts_state *s = lr_read_begin(&lr, &op);
        /* reading works */
        if (ts_check(s) != s->check)
            _exit(4);
        lr_read_end(&lr);
        *(volatile uint64_t *)lr.inst[1] = 7; /* must fault */
        _exit(0);
    }
    int st = wait_exit(pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 42, "status %d", st);
    teardown();
}
END_TEST

static Suite *
lr_suite(void)
{
    Suite *s = suite_create("ipc_lr");
    TCase *tc = tcase_create("lr");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_region_and_errors);
    tcase_add_test(tc, test_single_process_ops);
    tcase_add_test(tc, test_stress_readers);
    tcase_add_test(tc, test_reader_killed_mid_read);
    tcase_add_test(tc, test_reader_stopped);
    tcase_add_test(tc, test_writer_killed_mid_drain);
    tcase_add_test(tc, test_hung_reader_killed_by_missed_count);
    tcase_add_test(tc, test_reader_mapping_readonly);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(lr_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
