/*
 * tests/unit/check_ipc_stats.c - the per-partition stats table in shared
 * memory (ipc/stats.h): format and attach checks, claim / publish /
 * lookup / release keyed by (group id, created_op), a reused id never
 * inheriting counters, probing with colliding keys, a full table, reclaim
 * after a restart, the region inside a segment, and writer / reader
 * PROCESSES running at once where no reader ever sees a torn entry
 * (bounded loops: the writers do a fixed number of stores).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/segment.h"
#include "ipc/stats.h"

static void *
shared_zeroed(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    return m;
}

static struct vs_stats_values
vals(uint64_t x)
{
    struct vs_stats_values v = {
        .messages_count = x,
        .size_bytes = x * 3 + 1,
        .current_offset = x ? x - 1 : 0,
        .segments_count = (uint32_t)(x % 1000) + 1,
    };
    return v;
}

/* 1 if v is vals(x) for some x (the torn-read detector). */
static int
consistent(const struct vs_stats_values *v)
{
    struct vs_stats_values w = vals(v->messages_count);
    return w.size_bytes == v->size_bytes &&
           w.current_offset == v->current_offset &&
           w.segments_count == v->segments_count;
}

START_TEST(test_format_attach)
{
    ck_assert_uint_eq(stats_region_size(0), 0);
    size_t len = stats_region_size(16);
    ck_assert_uint_eq(len, sizeof(struct vs_stats_hdr_shm) + 16 * 64);
    void *m = shared_zeroed(len);
    ck_assert_int_eq(stats_region_init(m, len - 1, 16), -EINVAL);
    ck_assert_int_eq(stats_region_init(m, len, 0), -EINVAL);
    ck_assert_int_eq(stats_region_init(m, len, 16), 0);
    struct vs_stats t;
    ck_assert_int_eq(stats_attach(&t, m, len), 0);
    ck_assert_uint_eq(t.capacity, 16);
    ck_assert_int_eq(stats_attach(&t, m, len - 64), -EPROTO);
    ck_assert_int_eq(stats_attach(&t, m, 100), -EPROTO);
    struct vs_stats_hdr_shm *h = m;
    h->entry_size = 32;
    ck_assert_int_eq(stats_attach(&t, m, len), -EPROTO);
    h->entry_size = 64;
    h->magic ^= 1;
    ck_assert_int_eq(stats_attach(&t, m, len), -EPROTO);
    h->magic ^= 1;
    /* no table: lookups miss, claims fail */
    ck_assert_int_eq(stats_attach(&t, NULL, 0), 0);
    struct vs_stats_values v = vals(5), out;
    uint32_t ix;
    ck_assert_int_eq(stats_claim(&t, 1, 7, 3, &v, &ix), -EINVAL);
    ck_assert_int_eq(stats_lookup(&t, 7, 3, &out), 0);
    ck_assert_int_eq(stats_lookup(NULL, 7, 3, &out), 0);
    ck_assert_uint_eq(out.messages_count, 0);
    munmap(m, len);
}
END_TEST

START_TEST(test_claim_lookup_release)
{
    size_t len = stats_region_size(8);
    void *m = shared_zeroed(len);
    ck_assert_int_eq(stats_region_init(m, len, 8), 0);
    struct vs_stats t;
    ck_assert_int_eq(stats_attach(&t, m, len), 0);
    struct vs_stats_values v = vals(10), out;
    uint32_t ix;
    ck_assert_int_eq(stats_claim(&t, 0, 7, 3, &v, &ix), -EINVAL); /* shard 0 */
    ck_assert_int_eq(stats_claim(&t, 1, 7, 0, &v, &ix), -EINVAL); /* op 0 */
    ck_assert_int_eq(stats_claim(&t, 1, 7, 3, &v, &ix), 0);
    ck_assert_uint_lt(ix, 8);
    ck_assert_uint_eq(atomic_load(&t.hdr->claimed[1]), 1);
    ck_assert_int_eq(stats_lookup(&t, 7, 3, &out), 1);
    ck_assert_uint_eq(out.messages_count, 10);
    ck_assert_uint_eq(out.size_bytes, 31);
    ck_assert_uint_eq(out.current_offset, 9);
    ck_assert_uint_eq(out.segments_count, 11);
    /* the same id created by another op is another partition */
    ck_assert_int_eq(stats_lookup(&t, 7, 4, &out), 0);
    ck_assert_uint_eq(out.messages_count, 0);
    ck_assert_int_eq(stats_lookup(&t, 8, 3, &out), 0);
    struct vs_stats_values v2 = vals(99);
    stats_publish(&t, ix, &v2);
    ck_assert_int_eq(stats_lookup(&t, 7, 3, &out), 1);
    ck_assert_uint_eq(out.messages_count, 99);
    ck_assert(consistent(&out));
    /* deleted, then recreated with the same ids: starts from its own
     * counters, never the old ones */
    stats_release(&t, 1, ix);
    ck_assert_uint_eq(atomic_load(&t.hdr->claimed[1]), 0);
    ck_assert_int_eq(stats_lookup(&t, 7, 3, &out), 0);
    struct vs_stats_values z = vals(0);
    uint32_t ix2;
    ck_assert_int_eq(stats_claim(&t, 2, 7, 9, &z, &ix2), 0);
    ck_assert_int_eq(stats_lookup(&t, 7, 9, &out), 1);
    ck_assert_uint_eq(out.messages_count, 0);
    ck_assert_uint_eq(out.size_bytes, 1);
    ck_assert_int_eq(stats_lookup(&t, 7, 3, &out), 0);
    munmap(m, len);
}
END_TEST

START_TEST(test_collisions_full_reclaim)
{
    const uint32_t cap = 5;
    size_t len = stats_region_size(cap);
    void *m = shared_zeroed(len);
    ck_assert_int_eq(stats_region_init(m, len, cap), 0);
    struct vs_stats t;
    ck_assert_int_eq(stats_attach(&t, m, len), 0);
    uint32_t ix[5];
    /* one group id, five created_ops: every key probes the same chain */
    for (uint32_t i = 0; i < cap; i++) {
        struct vs_stats_values v = vals(100 + i);
        ck_assert_int_eq(stats_claim(&t, 1 + (i % 2), 42, 1 + i, &v, &ix[i]),
                         0);
    }
    struct vs_stats_values v = vals(1), out;
    uint32_t extra;
    ck_assert_int_eq(stats_claim(&t, 1, 43, 1, &v, &extra), -ENOSPC);
    ck_assert_uint_eq(atomic_load(&t.hdr->claimed[1]), 3);
    for (uint32_t i = 0; i < cap; i++) {
        ck_assert_int_eq(stats_lookup(&t, 42, 1 + i, &out), 1);
        ck_assert_uint_eq(out.messages_count, 100 + i);
    }
    /* a miss on a full table is bounded by the capacity */
    ck_assert_int_eq(stats_lookup(&t, 42, 77, &out), 0);
    /* releasing the head of the chain keeps the others reachable */
    stats_release(&t, 1, ix[0]);
    for (uint32_t i = 1; i < cap; i++)
        ck_assert_int_eq(stats_lookup(&t, 42, 1 + i, &out), 1);
    ck_assert_int_eq(stats_claim(&t, 1, 43, 1, &v, &extra), 0);
    ck_assert_int_eq(stats_lookup(&t, 43, 1, &out), 1);
    /* shard 1 restarts: its previous entries go, shard 2's stay */
    ck_assert_uint_eq(atomic_load(&t.hdr->claimed[1]), 3);
    ck_assert_uint_eq(stats_reclaim(&t, 1), 3);
    ck_assert_uint_eq(atomic_load(&t.hdr->claimed[1]), 0);
    ck_assert_int_eq(stats_lookup(&t, 43, 1, &out), 0);
    ck_assert_int_eq(stats_lookup(&t, 42, 3, &out), 0);
    ck_assert_int_eq(stats_lookup(&t, 42, 2, &out), 1); /* shard 2 */
    ck_assert_int_eq(stats_lookup(&t, 42, 4, &out), 1);
    ck_assert_uint_eq(stats_reclaim(&t, 1), 0); /* nothing: no scan */
    /* an entry left mid-write (odd sequence) by a dead incarnation */
    uint32_t i3;
    ck_assert_int_eq(stats_claim(&t, 1, 50, 1, &v, &i3), 0);
    atomic_fetch_add(&t.e[i3].seq, 1);
    ck_assert_int_eq(stats_lookup(&t, 50, 1, &out), 0); /* bounded miss */
    ck_assert_uint_eq(stats_reclaim(&t, 1), 1);
    ck_assert_uint_eq(atomic_load(&t.e[i3].seq) % 2, 0);
    ck_assert_int_eq(stats_claim(&t, 1, 50, 2, &v, &i3), 0);
    ck_assert_int_eq(stats_lookup(&t, 50, 2, &out), 1);
    munmap(m, len);
}
END_TEST

START_TEST(test_in_segment)
{
    struct vs_seg_params p = {.n_procs = 3,
                              .lr_instance_size = 5000,
                              .ring_bytes = 3000,
                              .stats_capacity = 100};
    struct vs_seg s;
    ck_assert_int_eq(seg_create(&s, &p), 0);
    ck_assert_uint_eq(s.size, seg_size_for(&p));
    size_t len;
    void *r = seg_stats_region(&s, &len);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(len, stats_region_size(100));
    ck_assert_uint_eq(s.hdr->stats_off % (uint64_t)sysconf(_SC_PAGESIZE), 0);
    ck_assert((uint8_t *)r + len <= s.base + s.size);
    ck_assert_uint_ge(s.hdr->stats_off,
                      s.hdr->rings_off + 6 * s.hdr->ring_stride);
    struct vs_stats t;
    ck_assert_int_eq(stats_attach(&t, r, len), 0);
    ck_assert_uint_eq(t.capacity, 100);
    struct vs_stats_values v = vals(3), out;
    uint32_t ix;
    ck_assert_int_eq(stats_claim(&t, 2, 11, 5, &v, &ix), 0);
    /* another mapping of the same memfd sees it */
    struct vs_seg s2;
    ck_assert_int_eq(seg_attach_fd(&s2, s.memfd), 0);
    struct vs_stats t2;
    r = seg_stats_region(&s2, &len);
    ck_assert_int_eq(stats_attach(&t2, r, len), 0);
    ck_assert_int_eq(stats_lookup(&t2, 11, 5, &out), 1);
    ck_assert_uint_eq(out.messages_count, 3);
    seg_destroy(&s2);
    /* a header claiming another stats layout is refused */
    s.hdr->stats_off += 4096;
    ck_assert_int_eq(seg_validate(s.hdr, s.size), -EPROTO);
    s.hdr->stats_off -= 4096;
    ck_assert_int_eq(seg_validate(s.hdr, s.size), 0);
    seg_destroy(&s);
    /* no capacity: no region */
    p.stats_capacity = 0;
    ck_assert_int_eq(seg_create(&s, &p), 0);
    ck_assert_ptr_null(seg_stats_region(&s, &len));
    ck_assert_uint_eq(len, 0);
    seg_destroy(&s);
    p.stats_capacity = (1u << 24) + 1;
    ck_assert_int_eq(seg_create(&s, &p), -EINVAL);
}
END_TEST

#define MAX_WRITES 20000000u
#define WRITERS    2u
#define WANT_READS 100000u

/* Shared control words of the concurrency test. */
struct race {
    _Atomic uint32_t go, stop, done;
    _Atomic uint64_t last_x[WRITERS + 1], last_gen[WRITERS + 1];
};

/* Writer process: owner `w` claims its key and publishes vals(x) for
 * x = 1, 2, ... until the reader says stop (at most MAX_WRITES),
 * releasing and claiming a new generation every 1000 stores (churn of
 * the probe chain). Returns 0. */
static int
writer(struct vs_stats *t, struct race *rc, uint32_t w)
{
    for (uint32_t i = 0; i < 100000000u && !atomic_load(&rc->go); i++)
        if (i % 64 == 0)
            sched_yield();
    uint32_t ix;
    uint64_t gen = 1, x;
    struct vs_stats_values v = vals(0);
    if (stats_claim(t, w, 1000, w * 1000000 + gen, &v, &ix) != 0)
        return 1;
    for (x = 1; x <= MAX_WRITES && !atomic_load(&rc->stop); x++) {
        v = vals(x);
        stats_publish(t, ix, &v);
        if (x % 1000 == 0) {
            stats_release(t, w, ix);
            gen++;
            if (stats_claim(t, w, 1000, w * 1000000 + gen, &v, &ix) != 0)
                return 1;
        }
    }
    atomic_store(&rc->last_x[w], x - 1);
    atomic_store(&rc->last_gen[w], gen);
    return 0;
}

START_TEST(test_processes_never_torn)
{
    const uint32_t cap = 4; /* writers collide on one probe chain */
    size_t len = stats_region_size(cap);
    void *m = shared_zeroed(len + sizeof(struct race));
    ck_assert_int_eq(stats_region_init(m, len, cap), 0);
    struct race *rc = (struct race *)((uint8_t *)m + len);
    struct vs_stats t;
    ck_assert_int_eq(stats_attach(&t, m, len), 0);
    pid_t pids[WRITERS];
    for (uint32_t w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            int r = writer(&t, rc, w + 1);
            atomic_fetch_add(&rc->done, 1);
            _exit(r);
        }
    }
    atomic_store(&rc->go, 1);
    /* reader: this process, until it saw WANT_READS entries (or a bounded
     * number of rounds, or both writers ended) */
    uint64_t reads = 0, found = 0, torn = 0, backwards = 0;
    uint64_t last_cop[WRITERS + 1] = {0}, last_msgs[WRITERS + 1] = {0};
    for (uint64_t i = 0; i < 20000000u && found < WANT_READS &&
                         atomic_load(&rc->done) < WRITERS;
         i++) {
        for (uint32_t e = 0; e < cap; e++) {
            /* the current generation is unknown to the reader: take the
             * key an entry shows, then look it up the normal way */
            uint32_t st = atomic_load(&t.e[e].state);
            if (st < VS_STATS_OWNED)
                continue;
            uint32_t w = st - VS_STATS_OWNED;
            ck_assert(w >= 1 && w <= WRITERS);
            uint64_t cop = atomic_load(&t.e[e].created_op);
            struct vs_stats_values out;
            reads++;
            if (!stats_lookup(&t, 1000, cop, &out))
                continue; /* released meanwhile */
            found++;
            if (!consistent(&out))
                torn++;
            /* one generation's counters never go backwards */
            if (cop == last_cop[w] && out.messages_count < last_msgs[w])
                backwards++;
            last_cop[w] = cop;
            last_msgs[w] = out.messages_count;
        }
    }
    atomic_store(&rc->stop, 1);
    for (uint32_t w = 0; w < WRITERS; w++) {
        int status;
        ck_assert_int_eq(waitpid(pids[w], &status, 0), pids[w]);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
    }
    ck_assert_uint_eq(atomic_load(&rc->done), WRITERS);
    ck_assert_uint_eq(torn, 0);
    ck_assert_uint_gt(found, 0);
    ck_assert_uint_ge(reads, found);
    ck_assert_uint_eq(backwards, 0);
    /* final state: each writer's last generation holds its last value,
     * the previous generation is gone */
    for (uint32_t w = 1; w <= WRITERS; w++) {
        struct vs_stats_values out;
        uint64_t gen = atomic_load(&rc->last_gen[w]);
        ck_assert_int_eq(stats_lookup(&t, 1000, w * 1000000 + gen, &out), 1);
        ck_assert_uint_eq(out.messages_count, atomic_load(&rc->last_x[w]));
        ck_assert(consistent(&out));
        ck_assert_int_eq(stats_lookup(&t, 1000, w * 1000000 + gen - 1, &out),
                         0);
    }
    ck_assert_uint_eq(atomic_load(&t.hdr->claimed[1]), 1);
    ck_assert_uint_eq(atomic_load(&t.hdr->claimed[2]), 1);
    munmap(m, len + sizeof(struct race));
}
END_TEST

static Suite *
stats_suite(void)
{
    Suite *s = suite_create("ipc_stats");
    TCase *t = tcase_create("table");
    tcase_add_test(t, test_format_attach);
    tcase_add_test(t, test_claim_lookup_release);
    tcase_add_test(t, test_collisions_full_reclaim);
    tcase_add_test(t, test_in_segment);
    tcase_add_test(t, test_processes_never_torn);
    tcase_set_timeout(t, 120);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(stats_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
