/*
 * tests/unit/check_pheld.c - read your writes on every node
 * (shard/serve/pheld.h) with an injected clock and a fake local replica:
 *   - a result is held while the local commit is below its op and answered
 *     (status 0, the primary's body, once) as soon as the replica applies
 *     it;
 *   - a replica that lags: the acknowledged result is answered when the
 *     5 s wait runs out (never before, never lost, never a refusal),
 *     counted late and logged (one warning a second at most, naming the
 *     partition and the op);
 *   - answered at once: op 0 (a peer of an older release), a refusal, no
 *     local replica, a replica that applied the op already;
 *   - a group gone here releases its held results; clear drops them.
 * Every loop is bounded in count.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "shard/serve/pheld.h"

#define ANSWERS_MAX 16

/* The fake local replica and the answers the list gave. */
struct fake {
    int local;       /* this node runs a group of the partition */
    uint64_t commit; /* its commit */
    int n;
    struct {
        uint64_t nonce;
        size_t len;
        uint8_t body[32];
    } a[ANSWERS_MAX];
};

static int
fake_commit(void *ctx, const struct part_id *id, uint64_t *commit)
{
    struct fake *f = ctx;
    ck_assert_uint_eq(id->partition_id, 3);
    if (!f->local)
        return 0;
    *commit = f->commit;
    return 1;
}

static void
fake_answer(void *ctx, const struct gc_waiter *w, const uint8_t *body,
            size_t len)
{
    struct fake *f = ctx;
    ck_assert_int_lt(f->n, ANSWERS_MAX);
    ck_assert_uint_le(len, sizeof(f->a[0].body));
    f->a[f->n].nonce = w->nonce;
    f->a[f->n].len = len;
    if (len > 0)
        memcpy(f->a[f->n].body, body, len);
    f->n++;
}

static const struct part_id pid = {1, 2, 3, 77};

static struct gc_waiter
waiter(uint64_t nonce)
{
    struct gc_waiter w;
    memset(&w, 0, sizeof(w));
    w.conn_id = 5;
    w.nonce = nonce;
    return w;
}

static void
setup(struct pheld_list *l, struct fake *f)
{
    memset(f, 0, sizeof(*f));
    f->local = 1;
    f->commit = 10;
    pheld_init(l, fake_commit, fake_answer, f);
}

START_TEST(test_released_when_applied)
{
    struct pheld_list l;
    struct fake f;
    setup(&l, &f);
    struct gc_waiter w = waiter(1);
    uint8_t buf[4] = {9, 8, 7, 6};
    const uint8_t body[4] = {9, 8, 7, 6};
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 12, &w, buf, 4, 1000), 1);
    ck_assert(pheld_any(&l));
    memset(buf, 0, sizeof(buf)); /* the caller's buffer is reused */
    ck_assert_uint_eq(pheld_release(&l, 1010), 0);
    f.commit = 11; /* still below */
    ck_assert_uint_eq(pheld_release(&l, 2000), 0);
    ck_assert_int_eq(f.n, 0);
    f.commit = 12;
    ck_assert_uint_eq(pheld_release(&l, 2010), 1);
    ck_assert_int_eq(f.n, 1);
    ck_assert_uint_eq(f.a[0].nonce, 1);
    ck_assert_uint_eq(f.a[0].len, 4);
    ck_assert_int_eq(memcmp(f.a[0].body, body, 4), 0);
    ck_assert(!pheld_any(&l));
    ck_assert_uint_eq(l.held, 1);
    ck_assert_uint_eq(l.late, 0);
    /* answered exactly once */
    ck_assert_uint_eq(pheld_release(&l, 99999), 0);
    ck_assert_int_eq(f.n, 1);
}
END_TEST

/* The local replica never catches up (repairing, fetching, cut off): the
 * acknowledged result leaves when the wait runs out, not a millisecond
 * before, and the give-up is counted and logged. */
START_TEST(test_lagging_replica_answered_after_wait)
{
    char path[] = "/tmp/check_pheld_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(vs_log_open_file(path), 0);

    struct pheld_list l;
    struct fake f;
    setup(&l, &f);
    const uint8_t body[3] = {1, 2, 3};
    struct gc_waiter w1 = waiter(1), w2 = waiter(2), w3 = waiter(3);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 40, &w1, body, 3, 1000), 1);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 41, &w2, body, 2, 1000), 1);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 42, &w3, NULL, 0, 1500), 1);
    /* ticks of 10 ms up to one short of the deadline: nothing leaves */
    for (uint64_t now = 1000; now < 1000 + PHELD_WAIT_MS; now += 10)
        ck_assert_uint_eq(pheld_release(&l, now), 0);
    ck_assert_uint_eq(pheld_release(&l, 1000 + PHELD_WAIT_MS - 1), 0);
    ck_assert_int_eq(f.n, 0);
    /* the first two at their deadline, in the order held */
    ck_assert_uint_eq(pheld_release(&l, 1000 + PHELD_WAIT_MS), 2);
    ck_assert_int_eq(f.n, 2);
    ck_assert_uint_eq(f.a[0].nonce, 1);
    ck_assert_uint_eq(f.a[0].len, 3);
    ck_assert_int_eq(memcmp(f.a[0].body, body, 3), 0);
    ck_assert_uint_eq(f.a[1].nonce, 2);
    ck_assert_uint_eq(f.a[1].len, 2);
    ck_assert_uint_eq(l.late, 2);
    /* the third 500 ms later (its own deadline), within the second of
     * the first warning: counted, not logged again yet */
    ck_assert_uint_eq(pheld_release(&l, 1500 + PHELD_WAIT_MS), 1);
    ck_assert_int_eq(f.n, 3);
    ck_assert_uint_eq(f.a[2].nonce, 3);
    ck_assert_uint_eq(f.a[2].len, 0);
    ck_assert_uint_eq(l.late, 3);
    ck_assert(!pheld_any(&l));
    /* a later late answer, more than a second on, is warned about with
     * the count since the last warning */
    struct gc_waiter w4 = waiter(4);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 43, &w4, body, 1, 3000), 1);
    ck_assert_uint_eq(pheld_release(&l, 3000 + PHELD_WAIT_MS), 1);
    ck_assert_uint_eq(l.late, 4);

    ck_assert_int_eq(vs_log_open_file(NULL), 0);
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    char line[1024];
    int warns = 0, first_ok = 0, second_ok = 0;
    for (int i = 0; i < 100 && fgets(line, sizeof(line), fp) != NULL; i++) {
        if (strstr(line, "before this node's replica applied") == NULL)
            continue;
        warns++;
        if (warns == 1)
            first_ok = strstr(line, "partition 1.2.3") != NULL &&
                       strstr(line, "(op 40)") != NULL &&
                       strstr(line, "its commit is 10") != NULL &&
                       strstr(line, "; 1 such answer") != NULL;
        if (warns == 2)
            second_ok = strstr(line, "(op 43)") != NULL &&
                        strstr(line, "; 3 such answer") != NULL;
    }
    fclose(fp);
    unlink(path);
    ck_assert_int_eq(warns, 2);
    ck_assert(first_ok);
    ck_assert(second_ok);
}
END_TEST

/* What is answered at once, without a hold. */
START_TEST(test_answered_at_once)
{
    struct pheld_list l;
    struct fake f;
    setup(&l, &f);
    struct gc_waiter w = waiter(1);
    const uint8_t body[1] = {1};
    /* op 0: a peer of an older release names no op */
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 0, &w, body, 1, 1000), 0);
    /* a refusal (57) names none to wait for either, even with an op */
    ck_assert_int_eq(pheld_offer(&l, &pid, 57, 99, &w, NULL, 0, 1000), 0);
    /* the replica applied it already */
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 10, &w, body, 1, 1000), 0);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 9, &w, body, 1, 1000), 0);
    /* no local replica (not a member, closed, stopped) */
    f.local = 0;
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 99, &w, body, 1, 1000), 0);
    ck_assert(!pheld_any(&l));
    ck_assert_uint_eq(l.held, 0);
    ck_assert_int_eq(f.n, 0); /* the caller answers these */
}
END_TEST

/* The group closes here (deleted, stopped, reinstalled) while a result
 * is held: it leaves at the next release, not after the wait. */
START_TEST(test_group_gone_releases)
{
    struct pheld_list l;
    struct fake f;
    setup(&l, &f);
    struct gc_waiter w = waiter(8);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 50, &w, NULL, 0, 1000), 1);
    ck_assert_uint_eq(pheld_release(&l, 1010), 0);
    f.local = 0;
    ck_assert_uint_eq(pheld_release(&l, 1020), 1);
    ck_assert_int_eq(f.n, 1);
    ck_assert_uint_eq(f.a[0].nonce, 8);
    ck_assert_uint_eq(l.late, 0);
    /* clear drops without answering; the list is usable afterwards */
    f.local = 1;
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 51, &w, NULL, 0, 1000), 1);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 52, &w, NULL, 0, 1000), 1);
    pheld_clear(&l);
    ck_assert(!pheld_any(&l));
    ck_assert_uint_eq(pheld_release(&l, 999999), 0);
    ck_assert_int_eq(f.n, 1);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 53, &w, NULL, 0, 1000), 1);
    f.commit = 53;
    ck_assert_uint_eq(pheld_release(&l, 1001), 1);
    ck_assert_int_eq(f.n, 2);
}
END_TEST

/* Results of several partitions' groups interleave: each leaves when its
 * own op is applied, the rest keep their order. */
START_TEST(test_release_middle_keeps_order)
{
    struct pheld_list l;
    struct fake f;
    setup(&l, &f);
    for (uint64_t i = 0; i < 5; i++) {
        struct gc_waiter w = waiter(100 + i);
        ck_assert_int_eq(pheld_offer(&l, &pid, 0, 20 - 2 * i, &w, NULL, 0, 1),
                         1);
    }
    /* ops 20 18 16 14 12: commit 15 lets 14 and 12 (the last two) go */
    f.commit = 15;
    ck_assert_uint_eq(pheld_release(&l, 2), 2);
    ck_assert_uint_eq(f.a[0].nonce, 103);
    ck_assert_uint_eq(f.a[1].nonce, 104);
    /* one held after the release of the tail is answered after the rest */
    struct gc_waiter w = waiter(200);
    ck_assert_int_eq(pheld_offer(&l, &pid, 0, 30, &w, NULL, 0, 3), 1);
    f.commit = 30;
    ck_assert_uint_eq(pheld_release(&l, 4), 4);
    ck_assert_uint_eq(f.a[2].nonce, 100);
    ck_assert_uint_eq(f.a[3].nonce, 101);
    ck_assert_uint_eq(f.a[4].nonce, 102);
    ck_assert_uint_eq(f.a[5].nonce, 200);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("pheld");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_released_when_applied);
    tcase_add_test(tc, test_lagging_replica_answered_after_wait);
    tcase_add_test(tc, test_answered_at_once);
    tcase_add_test(tc, test_group_gone_releases);
    tcase_add_test(tc, test_release_middle_keeps_order);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
