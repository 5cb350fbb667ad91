/*
 * tests/unit/check_ipc_conntab.c - the node's shared client connection
 * table (ipc/conntab.h): claims up to the capacity and -EMFILE past it,
 * sessions read back, releases, a dead owner's entries reclaimed (also
 * by seg_slot_clear), a torn entry never read, the attach checks, and
 * processes claiming concurrently without a double claim.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/conntab.h"
#include "ipc/segment.h"

static void *
shared_region(uint32_t slots, size_t *len)
{
    *len = conntab_region_size(slots);
    ck_assert_uint_gt(*len, 0);
    void *r = mmap(NULL, *len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r, MAP_FAILED);
    ck_assert_int_eq(conntab_region_init(r, *len, slots), 0);
    return r;
}

START_TEST(test_claim_session_release)
{
    size_t len;
    void *r = shared_region(3, &len);
    struct vs_conntab t;
    ck_assert_int_eq(conntab_attach(&t, r, len), 0);
    int a = conntab_claim(&t, 1, 0x201, "127.0.0.1:5000");
    int b = conntab_claim(&t, 2, 0x402, "127.0.0.1:5001");
    int c = conntab_claim(&t, 1, 0x601, "10.0.0.9:7");
    ck_assert(a >= 0 && b >= 0 && c >= 0 && a != b && b != c && a != c);
    ck_assert_uint_eq(conntab_used(&t), 3);
    ck_assert_int_eq(conntab_claim(&t, 2, 0x802, "x"), -EMFILE);
    struct conntab_info e;
    ck_assert_int_eq(conntab_read(&t, (uint32_t)b, &e), 1);
    ck_assert_uint_eq(e.owner, 2);
    ck_assert_uint_eq(e.conn_id, 0x402);
    ck_assert_uint_eq(e.user_id, UINT32_MAX);
    ck_assert_str_eq(e.addr, "127.0.0.1:5001");
    struct vs_u128 cl = {77, 5};
    conntab_set_session(&t, b, 4, cl);
    ck_assert_int_eq(conntab_read(&t, (uint32_t)b, &e), 1);
    ck_assert_uint_eq(e.user_id, 4);
    ck_assert(e.client.lo == 77 && e.client.hi == 5);
    /* another process's view sees the same */
    struct vs_conntab t2;
    ck_assert_int_eq(conntab_attach(&t2, r, len), 0);
    ck_assert_int_eq(conntab_read(&t2, (uint32_t)b, &e), 1);
    ck_assert_uint_eq(e.user_id, 4);
    conntab_release(&t, b);
    ck_assert_uint_eq(conntab_used(&t), 2);
    ck_assert_int_eq(conntab_read(&t, (uint32_t)b, &e), 0);
    int d = conntab_claim(&t2, 2, 0xa02, "127.0.0.1:6000");
    ck_assert_int_eq(d, b);
    /* a torn entry (its writer died mid-write) is never read; reclaiming
     * the owner's entries frees it */
    atomic_fetch_add(&((struct vs_conntab_entry_shm *)(t.e))[d].seq, 1);
    ck_assert_int_eq(conntab_read(&t, (uint32_t)d, &e), 0);
    ck_assert_uint_eq(conntab_release_owner(&t, 1), 2);
    ck_assert_uint_eq(conntab_release_owner(&t, 2), 1);
    ck_assert_uint_eq(conntab_used(&t), 0);
    d = conntab_claim(&t, 3, 0xc03, "127.0.0.1:1");
    ck_assert_int_ge(d, 0);
    ck_assert_int_eq(conntab_read(&t, (uint32_t)d, &e), 1);
    ck_assert_uint_eq(e.owner, 3);
    /* an over-long address is cut, NUL-terminated */
    char longaddr[100];
    memset(longaddr, 'a', sizeof(longaddr) - 1);
    longaddr[99] = '\0';
    int f = conntab_claim(&t, 3, 0xe03, longaddr);
    ck_assert_int_ge(f, 0);
    ck_assert_int_eq(conntab_read(&t, (uint32_t)f, &e), 1);
    ck_assert_uint_eq(strlen(e.addr), VS_CONNTAB_ADDR_MAX);
    /* attach refuses what is not a table of this build */
    ck_assert_int_eq(conntab_attach(&t2, r, 32), -EPROTO);
    ((struct vs_conntab_hdr_shm *)r)->entry_size = 64;
    ck_assert_int_eq(conntab_attach(&t2, r, len), -EPROTO);
    ck_assert_uint_eq(conntab_region_size(0), 0);
    ck_assert_int_eq(conntab_region_init(r, 8, 3), -EINVAL);
    munmap(r, len);
}
END_TEST

START_TEST(test_concurrent_claims)
{
    enum { SLOTS = 400, PROCS = 4 };
    size_t len;
    void *r = shared_region(SLOTS, &len);
    pid_t kids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        kids[p] = fork();
        ck_assert_int_ge(kids[p], 0);
        if (kids[p] == 0) {
            struct vs_conntab t;
            if (conntab_attach(&t, r, len) != 0)
                _exit(2);
            for (int i = 0; i < SLOTS; i++)
                (void)conntab_claim(&t, (uint32_t)p + 1,
                                    ((uint64_t)i << 9) | (uint64_t)(p + 1),
                                    "127.0.0.1:1");
            _exit(0);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int st;
        ck_assert_int_eq(waitpid(kids[p], &st, 0), kids[p]);
        ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    struct vs_conntab t;
    ck_assert_int_eq(conntab_attach(&t, r, len), 0);
    ck_assert_uint_eq(conntab_used(&t), SLOTS);
    /* every entry claimed exactly once: owners' counts add up */
    uint32_t per[PROCS + 1] = {0};
    for (uint32_t i = 0; i < SLOTS; i++) {
        struct conntab_info e;
        ck_assert_int_eq(conntab_read(&t, i, &e), 1);
        ck_assert(e.owner >= 1 && e.owner <= PROCS);
        ck_assert_uint_eq(e.conn_id & 0x1ff, e.owner);
        per[e.owner]++;
    }
    uint32_t sum = 0;
    for (int p = 1; p <= PROCS; p++)
        sum += per[p];
    ck_assert_uint_eq(sum, SLOTS);
    munmap(r, len);
}
END_TEST

START_TEST(test_in_segment_and_slot_clear)
{
    struct vs_seg s;
    struct vs_seg_params p = {.n_procs = 3,
                              .lr_instance_size = 4096,
                              .ring_bytes = 4096,
                              .throttle_slots = 16,
                              .conntab_slots = 8};
    ck_assert_int_eq(seg_create(&s, &p), 0);
    size_t len;
    void *r = seg_conntab_region(&s, &len);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(len, conntab_region_size(8));
    ck_assert((uint8_t *)r + len <= s.base + s.size);
    /* distinct from the throttle table */
    size_t tl;
    void *tr = seg_throttle_region(&s, &tl);
    ck_assert((uint8_t *)tr + tl <= (uint8_t *)r);
    struct vs_conntab t;
    ck_assert_int_eq(conntab_attach(&t, r, len), 0);
    ck_assert_int_ge(conntab_claim(&t, 1, 1, "a"), 0);
    ck_assert_int_ge(conntab_claim(&t, 2, 2, "b"), 0);
    ck_assert_int_ge(conntab_claim(&t, 1, 3, "c"), 0);
    struct vs_seg s2;
    ck_assert_int_eq(seg_attach_fd(&s2, s.memfd), 0);
    /* the supervisor reaped slot 1: its entries go */
    seg_slot_clear(&s, 1);
    ck_assert_uint_eq(conntab_used(&t), 1);
    seg_destroy(&s2);
    seg_destroy(&s);
    p.conntab_slots = 0;
    ck_assert_int_eq(seg_create(&s, &p), 0);
    ck_assert_ptr_null(seg_conntab_region(&s, &len));
    seg_slot_clear(&s, 1); /* no table: nothing to do */
    seg_destroy(&s);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("ipc_conntab");
    TCase *tc = tcase_create("ipc_conntab");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_claim_session_release);
    tcase_add_test(tc, test_concurrent_claims);
    tcase_add_test(tc, test_in_segment_and_slot_clear);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
