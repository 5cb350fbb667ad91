/*
 * tests/unit/check_ipc_segment.c - the shared-memory segment (layout,
 * header validation, offsets, slot clearing) and the partition -> data
 * shard map.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "ipc/segment.h"
#include "ipc/shardmap.h"

static struct vs_seg_params
params(uint32_t n)
{
    struct vs_seg_params p = {
        .n_procs = n, .lr_instance_size = 5000, .ring_bytes = 3000};
    return p;
}

START_TEST(test_create_layout)
{
    struct vs_seg s;
    struct vs_seg_params p = params(3);
    ck_assert_int_eq(seg_create(&s, &p), 0);
    long page = sysconf(_SC_PAGESIZE);
    ck_assert_uint_eq(s.size, seg_size_for(&p));
    ck_assert_uint_eq(s.size % (size_t)page, 0);
    ck_assert_uint_eq(s.hdr->magic, VS_SEG_MAGIC);
    ck_assert_uint_eq(s.hdr->ring_bytes, 4096); /* rounded to 2^n */
    ck_assert_uint_eq(s.hdr->lr_off % (uint64_t)page, 0);
    ck_assert_uint_eq(s.hdr->rings_off % (uint64_t)page, 0);
    ck_assert_int_eq(seg_validate(s.hdr, s.size), 0);
    /* every region inside the segment, rings disjoint */
    size_t len;
    uint8_t *lr = seg_lr_region(&s, &len);
    ck_assert_ptr_eq(lr, s.base + s.hdr->lr_off);
    ck_assert_uint_le(s.hdr->lr_off + len, s.hdr->rings_off);
    uint8_t *prev = NULL;
    for (uint32_t a = 0; a < 3; a++)
        for (uint32_t b = 0; b < 3; b++) {
            if (a == b)
                continue;
            uint8_t *r = seg_ring_region(&s, a, b, &len);
            ck_assert(r + len <= s.base + s.size);
            ck_assert(prev == NULL || r >= prev + len);
            prev = r;
            struct vs_ring ring;
            ck_assert_int_eq(ring_attach(&ring, r, len), 0);
        }
    struct vs_lr l;
    void *reg = seg_lr_region(&s, &len);
    ck_assert_int_eq(lr_attach(&l, reg, len), 0);
    ck_assert_uint_eq(l.n_slots, 3);
    /* offsets <-> pointers */
    ck_assert_ptr_eq(seg_ptr(&s, seg_off(&s, lr)), lr);
    ck_assert_uint_eq(seg_off(&s, seg_proc(&s, 2)),
                      s.hdr->procs_off + 2 * sizeof(struct vs_proc_shm));
    /* doorbells */
    ck_assert_int_ge(s.sup_doorbell, 0);
    for (uint32_t i = 0; i < 3; i++)
        ck_assert_int_ge(s.doorbell[i], 0);
    ck_assert_int_eq(s.doorbell[3], -1);
    ck_assert_int_eq(ring_doorbell_ring(s.doorbell[1]), 0);
    ck_assert_int_eq(ring_doorbell_ring(s.doorbell[1]), 0);
    ck_assert_uint_eq(ring_doorbell_drain(s.doorbell[1]), 2);
    ck_assert_uint_eq(ring_doorbell_drain(s.doorbell[1]), 0);
    seg_destroy(&s);
    seg_destroy(&s); /* twice is fine */
}
END_TEST

START_TEST(test_bad_params)
{
    struct vs_seg s;
    struct vs_seg_params p = params(1);
    ck_assert_int_eq(seg_create(&s, &p), -EINVAL);
    p = params(VS_SEG_MAX_PROCS + 1);
    ck_assert_int_eq(seg_create(&s, &p), -EINVAL);
    p = params(2);
    p.lr_instance_size = 0;
    ck_assert_int_eq(seg_create(&s, &p), -EINVAL);
    ck_assert_uint_eq(seg_size_for(&p), 0);
    p = params(2);
    p.ring_bytes = 0;
    ck_assert_int_eq(seg_create(&s, &p), -EINVAL);
}
END_TEST

/* A header that does not match this build refuses to attach. */
START_TEST(test_attach_validates)
{
    struct vs_seg s, a;
    struct vs_seg_params p = params(2);
    ck_assert_int_eq(seg_create(&s, &p), 0);
    ck_assert_int_eq(seg_attach_fd(&a, s.memfd), 0);
    ck_assert_uint_eq(a.n_procs, 2);
    ck_assert_int_eq(a.doorbell[0], -1);
    /* same memory through the second mapping */
    atomic_store(&seg_proc(&s, 1)->ready, 7);
    ck_assert_uint_eq(atomic_load(&seg_proc(&a, 1)->ready), 7);
    seg_destroy(&a);

    struct {
        size_t off;
        uint32_t val;
    } bad[] = {
        /* version 1 (no metrics blocks) is refused */
        {offsetof(struct vs_seg_hdr_shm, layout_version), 1},
        {offsetof(struct vs_seg_hdr_shm, metrics_block_size), 4096},
        {offsetof(struct vs_seg_hdr_shm, hdr_size), 64},
        {offsetof(struct vs_seg_hdr_shm, proc_size), 128},
        {offsetof(struct vs_seg_hdr_shm, lr_hdr_size), 64},
        {offsetof(struct vs_seg_hdr_shm, lr_slot_size), 128},
        {offsetof(struct vs_seg_hdr_shm, ring_hdr_size), 128},
        {offsetof(struct vs_seg_hdr_shm, n_procs), 3},
        {offsetof(struct vs_seg_hdr_shm, ring_bytes), 8192},
        {offsetof(struct vs_seg_hdr_shm, page_size), 65536},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint32_t *f = (uint32_t *)((uint8_t *)s.hdr + bad[i].off);
        uint32_t keep = *f;
        *f = bad[i].val;
        ck_assert_int_eq(seg_validate(s.hdr, s.size), -EPROTO);
        ck_assert_int_eq(seg_attach_fd(&a, s.memfd), -EPROTO);
        *f = keep;
    }
    uint64_t keep = s.hdr->magic;
    s.hdr->magic = 0;
    ck_assert_int_eq(seg_attach_fd(&a, s.memfd), -EPROTO);
    s.hdr->magic = keep;
    keep = s.hdr->rings_off;
    s.hdr->rings_off += 4096;
    ck_assert_int_eq(seg_validate(s.hdr, s.size), -EPROTO);
    s.hdr->rings_off = keep;
    /* a mapping shorter than the segment */
    ck_assert_int_eq(seg_validate(s.hdr, s.size - 1), -EPROTO);
    ck_assert_int_eq(seg_validate(s.hdr, 16), -EPROTO);
    ck_assert_int_eq(seg_attach_fd(&a, s.memfd), 0);
    seg_destroy(&a);
    ck_assert_int_eq(seg_attach_fd(&a, -1), -EBADF);
    seg_destroy(&s);
}
END_TEST

START_TEST(test_slot_clear)
{
    struct vs_seg s;
    struct vs_seg_params p = params(3);
    ck_assert_int_eq(seg_create(&s, &p), 0);
    size_t len;
    struct vs_lr l;
    void *reg = seg_lr_region(&s, &len);
    ck_assert_int_eq(lr_attach(&l, reg, len), 0);
    ck_assert_int_eq(lr_reader_start(&l, 2), 0);
    (void)lr_read_begin(&l, NULL); /* "dies" inside */
    struct vs_proc_shm *pr = seg_proc(&s, 2);
    atomic_store(&pr->pid, 1234);
    atomic_store(&pr->ready, 1);
    strcpy(pr->reason, "boom");
    seg_slot_clear(&s, 2);
    ck_assert_int_eq(atomic_load(&pr->pid), 0);
    ck_assert_uint_eq(atomic_load(&pr->ready), 0);
    ck_assert_str_eq(pr->reason, "");
    int32_t pid;
    lr_slot_status(&l, 2, &pid, NULL);
    ck_assert_int_eq(pid, 0);
    ck_assert_uint_eq(atomic_load(&l.slots[2].in[0]), 0);
    ck_assert_uint_eq(atomic_load(&l.slots[2].in[1]), 0);
    seg_destroy(&s);
}
END_TEST

START_TEST(test_shard_for_group)
{
    ck_assert_uint_eq(vs_shard_for_group(42, 0), 0);
    for (uint64_t g = 0; g < 1000; g++)
        ck_assert_uint_eq(vs_shard_for_group(g, 1), 1);
    /* the formula, computed independently over LE bytes */
    for (uint64_t g = 0; g < 2000; g += 7) {
        uint8_t le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)(g >> (8 * i));
        uint32_t want = 1u + (uint32_t)(XXH3_64bits(le, 8) % 5u);
        ck_assert_uint_eq(vs_shard_for_group(g, 5), want);
    }
    /* pinned values: the mapping is part of the cluster contract */
    ck_assert_uint_eq(vs_shard_for_group(0, 4),
                      1u + (uint32_t)(0xc77b3abb6f87acd9ull % 4u));
    ck_assert_uint_eq(vs_shard_for_group(1, 7),
                      1u + (uint32_t)(0x2fbc593564db792eull % 7u));
    /* spread: every shard owns some of 4000 groups */
    uint32_t count[9] = {0};
    for (uint64_t g = 1; g <= 4000; g++) {
        uint32_t s = vs_shard_for_group(g, 8);
        ck_assert_uint_ge(s, 1);
        ck_assert_uint_le(s, 8);
        count[s]++;
    }
    for (int s = 1; s <= 8; s++)
        ck_assert_uint_gt(count[s], 300);
}
END_TEST

static Suite *
seg_suite(void)
{
    Suite *s = suite_create("ipc_segment");
    TCase *tc = tcase_create("segment");
    tcase_add_test(tc, test_create_layout);
    tcase_add_test(tc, test_bad_params);
    tcase_add_test(tc, test_attach_validates);
    tcase_add_test(tc, test_slot_clear);
    tcase_add_test(tc, test_shard_for_group);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(seg_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
