/*
 * tests/unit/check_sim_disk.c - the simulated disk's torn-write
 * provenance (tests/sim/sim_disk.h), which the liveness checker's
 * torn-copies waiver rests on: a crash that tears a write never fsynced
 * records it (sim_disk_torn_unsynced says 1 for its bytes), never for
 * bytes an fsync covered, nor once a flip touched them, nor with the
 * mutation switch torn_as_synced; sim_disk_torn_forget clears it; the
 * counterfactual's ranges (sim_disk_lose_whole) drop a write that would
 * tear whole, leave the other files of the crash as they would have
 * been (the same draws), are forgotten by an fsync of their file, and
 * refuse a registration past their capacity. Test code only.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shard/storage/io.h"
#include "tests/sim/sim_disk.h"
#include "tests/unit/data_testutil.h"

static char g_root[256];

static void
setup(void)
{
    char parts[300];
    dt_mkdtemp(g_root, sizeof(g_root), parts, sizeof(parts));
}

static void
teardown(void)
{
    dt_rm_rf(g_root);
}

/* A fresh disk over g_root/<sub> tearing every pending write. */
static void
disk_new(struct sim_disk *d, const char *sub, uint64_t seed)
{
    char dir[400];
    snprintf(dir, sizeof(dir), "%s/%s", g_root, sub);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(sim_disk_init(d, dir, seed, 1000), 0);
}

/* Writes `len` bytes of `fill` at `off` of d's file `name`, fsyncing
 * them if `sync`; the descriptor stays open (the crash closes it). */
static void
put(struct sim_disk *d, const char *name, uint64_t off, size_t len,
    uint8_t fill, int sync)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", d->dir, name);
    int fd = sio_open(&d->io, p, O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    uint8_t *b = malloc(len);
    memset(b, fill, len);
    ck_assert_int_eq(sio_pwrite_all(&d->io, fd, b, len, (off_t)off, p), 0);
    free(b);
    if (sync)
        ck_assert_int_eq(sio_fsync(&d->io, fd, p), 0);
}

/* The files live in the durable directory only after a dir fsync. */
static void
dir_sync(struct sim_disk *d)
{
    ck_assert_int_eq(d->io.dir_fsync(&d->io, d->dir), 0);
}

/* A fresh disk whose file j holds `len` durable bytes (dir fsynced). */
static void
disk_with_j(struct sim_disk *d, const char *sub, uint64_t seed, size_t len)
{
    disk_new(d, sub, seed);
    put(d, "j", 0, len, 0x11, 1);
    dir_sync(d);
}

START_TEST(torn_unsynced_recorded)
{
    struct sim_disk d;
    disk_with_j(&d, "a", 7, 1024);     /* durable: 1024 bytes */
    put(&d, "j", 1024, 2048, 0xbb, 0); /* pending, torn at the crash */
    ck_assert_int_eq(sim_disk_crash(&d), 0);
    ck_assert_uint_eq(d.torn, 1);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 1024, 3072), 1);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 2048, 2560), 1);
    /* bytes an fsync covered, a range no torn write touched, another
     * file, an empty range: not torn never-fsynced writes */
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 512, 3072), 0);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 4096, 5000), 0);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "k", 1024, 3072), 0);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 2000, 2000), 0);
    /* a flip while down touches it: no longer explained by the tear */
    long size = sim_disk_size(&d, "j");
    ck_assert_int_gt(size, 1024); /* this seed's tear lands some of it */
    ck_assert_int_eq(sim_disk_flip(&d, "j", (uint64_t)size - 1, 0x01), 1);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 1024, 3072), 0);
    sim_disk_torn_forget(&d);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 2048, 2560), 0);
    sim_disk_fini(&d);
}
END_TEST

START_TEST(fsynced_write_not_recorded)
{
    struct sim_disk d;
    disk_with_j(&d, "a", 8, 2048);
    ck_assert_int_eq(sim_disk_crash(&d), 0);
    ck_assert_uint_eq(d.torn, 0);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 0, 2048), 0);
    /* the mutation switch: a torn write recorded as fsynced */
    d.torn_as_synced = 1;
    put(&d, "j", 2048, 1024, 0xbb, 0);
    ck_assert_int_eq(sim_disk_crash(&d), 0);
    ck_assert_uint_eq(d.torn, 1);
    ck_assert_int_eq(sim_disk_torn_unsynced(&d, "j", 2048, 3072), 0);
    sim_disk_fini(&d);
}
END_TEST

START_TEST(lose_whole_keeps_the_draws)
{
    /* two disks, one seed, the same writes; the second loses file j's
     * pending write whole: j ends at its durable length there, file k
     * is byte-identical on both */
    struct sim_disk a, b;
    disk_with_j(&a, "a", 11, 512);
    disk_with_j(&b, "b", 11, 512);
    struct sim_disk *ds[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        put(ds[i], "k", 0, 512, 0x22, 1);
        dir_sync(ds[i]);
        put(ds[i], "j", 512, 4096, 0x33, 0);
        put(ds[i], "k", 512, 4096, 0x44, 0);
    }
    ck_assert_int_eq(sim_disk_lose_whole(&b, "j", 512, 4608), 0);
    ck_assert_int_eq(sim_disk_crash(&a), 0);
    ck_assert_int_eq(sim_disk_crash(&b), 0);
    ck_assert_uint_eq(a.lost_whole, 0);
    ck_assert_uint_eq(b.lost_whole, 1);
    ck_assert_int_eq(sim_disk_size(&b, "j"), 512);
    ck_assert_int_eq(sim_disk_torn_unsynced(&a, "j", 512, 4608), 1);
    ck_assert_int_eq(sim_disk_torn_unsynced(&b, "j", 512, 4608), 0);
    size_t la, lb;
    uint8_t *ka = sim_disk_read(&a, "k", &la);
    uint8_t *kb = sim_disk_read(&b, "k", &lb);
    ck_assert_ptr_nonnull(ka);
    ck_assert_ptr_nonnull(kb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(ka, kb, la), 0);
    free(ka);
    free(kb);
    ck_assert_uint_eq(b.nlose, 0); /* the crash forgot the range */
    sim_disk_fini(&a);
    sim_disk_fini(&b);
}
END_TEST

START_TEST(lose_range_forgotten_by_fsync)
{
    struct sim_disk d;
    disk_with_j(&d, "a", 12, 512);
    ck_assert_int_eq(sim_disk_lose_whole(&d, "j", 512, 1024), 0);
    put(&d, "j", 512, 512, 0x22, 1); /* completed: nothing to lose */
    ck_assert_uint_eq(d.nlose, 0);
    ck_assert_int_eq(sim_disk_crash(&d), 0);
    ck_assert_uint_eq(d.lost_whole, 0);
    ck_assert_int_eq(sim_disk_size(&d, "j"), 1024);
    /* capacity: a clean refusal past SIM_DISK_LOSE ranges */
    for (unsigned k = 0; k < SIM_DISK_LOSE; k++)
        ck_assert_int_eq(sim_disk_lose_whole(&d, "j", k * 10, k * 10 + 5), 0);
    ck_assert_int_eq(sim_disk_lose_whole(&d, "j", 0, 1), -ENOSPC);
    /* a wipe forgets ranges and torn records */
    ck_assert_int_eq(sim_disk_wipe(&d), 0);
    ck_assert_uint_eq(d.nlose, 0);
    ck_assert_uint_eq(d.ntorn, 0);
    sim_disk_fini(&d);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("sim_disk");
    TCase *t = tcase_create("torn provenance");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, torn_unsynced_recorded);
    tcase_add_test(t, fsynced_write_not_recorded);
    tcase_add_test(t, lose_whole_keeps_the_draws);
    tcase_add_test(t, lose_range_forgotten_by_fsync);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
