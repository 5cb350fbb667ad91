/*
 * tests/integration/check_data_serve.c - the data plane on a real
 * vstreamd with 2 data shards, through raw frames on one connection:
 * partitions on both shards (asserted with the ownership function), sends
 * to every partition by id, balanced and by key with exact confirmations,
 * forwarding between the data shards (the connection's shard differs from
 * some owners; the shards' forward counters in the log after a clean
 * stop), polls by offset / timestamp / first / last / next with exact
 * payloads, offsets and order, auto-commit, consumer offsets (get, store,
 * delete, 4100, 3021), FlushUnsavedBuffer; bad batches refused with their
 * codes and nothing stored; a partition created after start is served.
 * Every wait is bounded; nodes are stopped by pid (harness).
 * Callers: make check (INTEG_TESTS, INTEG_FAST_TESTS).
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shard/data/batch.h"
#include "tests/integration/data_raw.h"
#include "tests/integration/harness.h"

#define START_MS 20000u
#define NPARTS   8u

static struct vs_node node;

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

static void
start(const char *const *extra)
{
    const char *args[16] = {"--shards", "2",
                            "--with-default-root-credentials=true"};
    size_t k = 3;
    while (extra && *extra && k < 15)
        args[k++] = *extra++;
    args[k] = NULL;
    int rc = vs_node_start(&node, args, START_MS);
    ck_assert_msg(rc == 0, "start: %d, status %d", rc, node.status);
}

/* Sends one batch of `count` messages "tag-i" to partition p by id. */
static uint64_t
send_to(struct dr_sess *s, uint32_t p, const char *tag, uint32_t count)
{
    size_t bl, len;
    uint8_t *batch = dr_batch(tag, count, &bl);
    uint8_t *body = dr_send_body(0, 0, 2, &p, 4, batch, bl, count, &len);
    uint32_t got = UINT32_MAX;
    uint64_t base = UINT64_MAX;
    uint32_t st = dr_send(s, body, len, &got, &base);
    ck_assert_msg(st == 0, "send to %u: status %u", p, st);
    ck_assert_uint_eq(got, p);
    free(batch);
    free(body);
    return base;
}

static void
expect_msg(const struct dr_msg *m, uint64_t offset, const char *payload)
{
    ck_assert_uint_eq(m->offset, offset);
    ck_assert_str_eq(m->payload, payload);
}

START_TEST(test_send_poll_every_strategy)
{
    start(NULL);
    struct dr_sess s;
    dr_login(&s, &node, 0x1111);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", NPARTS, NULL, 0);
    uint32_t mine = dr_my_shard(&s);
    ck_assert(mine == 1 || mine == 2);
    uint32_t owned[3] = {0, 0, 0}, other = 0;
    for (uint32_t p = 0; p < NPARTS; p++) {
        uint32_t o = dr_owner(0, 0, p, 2);
        ck_assert(o == 1 || o == 2);
        owned[o]++;
        if (o != mine)
            other++;
    }
    /* both data shards own partitions, so some sends are forwarded */
    ck_assert_uint_gt(owned[1], 0);
    ck_assert_uint_gt(owned[2], 0);
    ck_assert_uint_gt(other, 0);

    /* three batches of 5 to every partition by id */
    char tag[64];
    for (uint32_t b = 0; b < 3; b++)
        for (uint32_t p = 0; p < NPARTS; p++) {
            snprintf(tag, sizeof(tag), "p%u-b%u", p, b);
            ck_assert_uint_eq(send_to(&s, p, tag, 5), b * 5);
        }

    static struct dr_poll r;
    for (uint32_t p = 0; p < NPARTS; p++) {
        /* offset 0: everything, in order */
        dr_poll(&s, 1, 7, 0, 0, 1, p, 1, 0, 100, 0, &r);
        ck_assert_uint_eq(r.status, 0);
        ck_assert_uint_eq(r.partition, p);
        ck_assert_uint_eq(r.current, 14);
        ck_assert_uint_eq(r.n, 15);
        for (uint32_t i = 0; i < 15; i++) {
            snprintf(tag, sizeof(tag), "p%u-b%u-%u", p, i / 5, i % 5);
            expect_msg(&r.m[i], i, tag);
        }
        uint64_t ts_b2 = r.m[10].timestamp;
        ck_assert_uint_ge(r.m[10].timestamp, r.m[0].timestamp);
        /* offset 7, count 4: crosses a batch boundary (trimmed records) */
        dr_poll(&s, 1, 7, 0, 0, 1, p, 1, 7, 4, 0, &r);
        ck_assert_uint_eq(r.n, 4);
        snprintf(tag, sizeof(tag), "p%u-b1-2", p);
        expect_msg(&r.m[0], 7, tag);
        snprintf(tag, sizeof(tag), "p%u-b2-0", p);
        expect_msg(&r.m[3], 10, tag);
        /* first 3, last 2 */
        dr_poll(&s, 1, 7, 0, 0, 1, p, 3, 0, 3, 0, &r);
        ck_assert_uint_eq(r.n, 3);
        ck_assert_uint_eq(r.m[0].offset, 0);
        ck_assert_uint_eq(r.m[2].offset, 2);
        dr_poll(&s, 1, 7, 0, 0, 1, p, 4, 0, 2, 0, &r);
        ck_assert_uint_eq(r.n, 2);
        snprintf(tag, sizeof(tag), "p%u-b2-3", p);
        expect_msg(&r.m[0], 13, tag);
        ck_assert_uint_eq(r.m[1].offset, 14);
        /* timestamp of the third batch: starts there (its messages share
         * the batch's timestamp; an earlier batch may share it too) */
        dr_poll(&s, 1, 7, 0, 0, 1, p, 2, ts_b2, 100, 0, &r);
        ck_assert_uint_ge(r.n, 5);
        ck_assert_uint_eq(r.m[r.n - 1].offset, 14);
        for (uint32_t i = 0; i < r.n; i++)
            ck_assert_uint_ge(r.m[i].timestamp, ts_b2);
        /* past the end: empty, never beyond the visible end */
        dr_poll(&s, 1, 7, 0, 0, 1, p, 1, 15, 10, 0, &r);
        ck_assert_uint_eq(r.n, 0);
        ck_assert_uint_eq(r.current, 14);
        /* next with auto-commit: 0..3, then 4..7; the offset is stored */
        dr_poll(&s, 1, 9, 0, 0, 1, p, 5, 0, 4, 1, &r);
        ck_assert_uint_eq(r.n, 4);
        ck_assert_uint_eq(r.m[0].offset, 0);
        dr_poll(&s, 1, 9, 0, 0, 1, p, 5, 0, 4, 1, &r);
        ck_assert_uint_eq(r.n, 4);
        ck_assert_uint_eq(r.m[0].offset, 4);
        uint64_t stored = 0;
        ck_assert_int_eq(dr_offset_get(&s, 1, 9, 0, 0, p, &stored), 1);
        ck_assert_uint_eq(stored, 7);
    }

    /* consumer offsets on one partition of the other shard */
    uint32_t po = 0;
    while (dr_owner(0, 0, po, 2) == mine)
        po++;
    uint64_t stored = 0;
    ck_assert_int_eq(dr_offset_get(&s, 1, 42, 0, 0, po, &stored), 0);
    ck_assert_uint_eq(dr_offset_store(&s, 1, 42, 0, 0, po, 3), 0);
    ck_assert_int_eq(dr_offset_get(&s, 1, 42, 0, 0, po, &stored), 1);
    ck_assert_uint_eq(stored, 3);
    ck_assert_uint_eq(dr_offset_store(&s, 1, 42, 0, 0, po, 15), 4100);
    ck_assert_uint_eq(dr_offset_store(&s, 1, 42, 0, 0, po, 1), 0);
    ck_assert_int_eq(dr_offset_get(&s, 1, 42, 0, 0, po, &stored), 1);
    ck_assert_uint_eq(stored, 1);
    dr_poll(&s, 1, 42, 0, 0, 1, po, 5, 0, 2, 0, &r);
    ck_assert_uint_eq(r.m[0].offset, 2);
    ck_assert_uint_eq(dr_offset_delete(&s, 1, 42, 0, 0, po), 0);
    ck_assert_int_eq(dr_offset_get(&s, 1, 42, 0, 0, po, &stored), 0);
    ck_assert_uint_eq(dr_offset_delete(&s, 1, 42, 0, 0, po), 3021);
    ck_assert_int_eq(dr_offset_get(&s, 1, 42, 0, 0, 99, &stored), -3007);
    /* a group consumer that is not a member: the re-sync sentinel */
    dr_poll(&s, 2, 0, 0, 0, 1, po, 1, 0, 2, 0, &r);
    ck_assert_uint_eq(r.status, 0);
    ck_assert_uint_eq(r.partition, 0xFFFFFFFFu);
    ck_assert_uint_eq(r.n, 0);

    /* balanced: round robin over all partitions */
    uint32_t seen = 0;
    for (uint32_t i = 0; i < NPARTS; i++) {
        size_t bl, len;
        uint8_t *batch = dr_batch("bal", 1, &bl);
        uint8_t *body = dr_send_body(0, 0, 1, NULL, 0, batch, bl, 1, &len);
        uint32_t got;
        uint64_t base;
        ck_assert_uint_eq(dr_send(&s, body, len, &got, &base), 0);
        ck_assert_uint_lt(got, NPARTS);
        ck_assert_uint_eq(base, 15);
        seen |= 1u << got;
        free(batch);
        free(body);
    }
    ck_assert_uint_eq(seen, (1u << NPARTS) - 1);
    /* message key "abc": XXH32 = 0x32D153FF, % 8 = 7, every time */
    for (int i = 0; i < 2; i++) {
        size_t bl, len;
        uint8_t *batch = dr_batch("key", 2, &bl);
        uint8_t *body = dr_send_body(0, 0, 3, "abc", 3, batch, bl, 2, &len);
        uint32_t got;
        uint64_t base;
        ck_assert_uint_eq(dr_send(&s, body, len, &got, &base), 0);
        ck_assert_uint_eq(got, 0x32D153FFu % NPARTS);
        ck_assert_uint_eq(base, 16 + 2 * (uint64_t)i);
        free(batch);
        free(body);
    }
    /* FlushUnsavedBuffer: success, empty */
    uint8_t fb[] = {1, 4, 0, 0, 0, 0, 1, 4, 0, 0, 0, 0, 7, 0, 0, 0, 1};
    ck_assert_int_eq(
        rc_send(s.fd, 2, 102, fb, sizeof(fb), s.client, 1, s.session), 0);
    struct rc_frame f;
    ck_assert_int_eq(rc_read(s.fd, &f, DR_READ_MS), 1);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.body_len, 0);
    rc_frame_fini(&f);

    /* partitions added later are served at once (read your writes) */
    uint8_t cp[] = {1, 4, 0, 0, 0, 0, 1, 4, 0, 0, 0, 0, 2, 0, 0, 0};
    ck_assert_uint_eq(dr_meta(&s, 136, cp, sizeof(cp)), 0);
    ck_assert_uint_eq(send_to(&s, NPARTS + 1, "late", 2), 0);
    dr_poll(&s, 1, 7, 0, 0, 1, NPARTS + 1, 3, 0, 10, 0, &r);
    ck_assert_uint_eq(r.n, 2);
    expect_msg(&r.m[1], 1, "late-1");
    dr_close(&s);

    /* the forward counters of a clean stop */
    ck_assert_int_eq(vs_node_stop(&node, 20000), 0);
    char want[128];
    snprintf(want, sizeof(want), "data shard %u: ", mine);
    FILE *lf = fopen(node.log_file, "r");
    ck_assert_ptr_nonnull(lf);
    char line[1024];
    unsigned long long fwd = 0, remote = 0;
    int found = 0;
    while (fgets(line, sizeof(line), lf) != NULL) {
        char *p = strstr(line, "data requests forwarded");
        if (p == NULL)
            continue;
        char *q = strstr(line, "data shard ");
        unsigned sh;
        unsigned long long a, b;
        if (q && sscanf(q,
                        "data shard %u: %llu data requests forwarded to "
                        "other shards, %llu served",
                        &sh, &a, &b) == 3) {
            if (sh == mine) {
                fwd = a;
                found = 1;
            } else {
                remote = b;
            }
        }
    }
    fclose(lf);
    ck_assert_msg(found, "no counter line for shard %u in %s", mine,
                  node.log_file);
    ck_assert_uint_gt(fwd, 0);
    ck_assert_uint_eq(fwd, remote);
}
END_TEST

START_TEST(test_bad_batches)
{
    const char *extra[] = {"--max-message-body", "65536", NULL};
    start(extra);
    struct dr_sess s;
    dr_login(&s, &node, 0x2222);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", 2, NULL, 0);
    uint32_t p = 0;
    size_t bl, len;
    uint8_t *batch, *body;
    uint32_t got;
    uint64_t base;

    ck_assert_uint_eq(send_to(&s, 0, "good", 3), 0);
    ck_assert_uint_eq(send_to(&s, 1, "good", 3), 0);
    for (p = 0; p < 2; p++) {
        /* a wrong message checksum */
        batch = dr_batch("bad", 3, &bl);
        batch[256 + 48] ^= 1; /* first payload byte */
        body = dr_send_body(0, 0, 2, &p, 4, batch, bl, 3, &len);
        ck_assert_uint_eq(dr_send(&s, body, len, &got, &base),
                          batch_err_code(BATCH_E_MSG_CHECKSUM));
        free(body);
        free(batch);
        /* a wrong batch length */
        batch = dr_batch("bad", 3, &bl);
        uint64_t wrong = bl + 8;
        memcpy(batch + 32, &wrong, 8);
        body = dr_send_body(0, 0, 2, &p, 4, batch, bl, 3, &len);
        ck_assert_uint_eq(dr_send(&s, body, len, &got, &base),
                          batch_err_code(BATCH_E_LENGTH));
        free(body);
        free(batch);
        /* a wrong batch checksum */
        batch = dr_batch("bad", 3, &bl);
        batch[40] ^= 0x80;
        body = dr_send_body(0, 0, 2, &p, 4, batch, bl, 3, &len);
        ck_assert_uint_eq(dr_send(&s, body, len, &got, &base),
                          batch_err_code(BATCH_E_BATCH_CHECKSUM));
        free(body);
        free(batch);
        /* messages_count disagreeing with the batch */
        batch = dr_batch("bad", 3, &bl);
        body = dr_send_body(0, 0, 2, &p, 4, batch, bl, 4, &len);
        ck_assert_uint_eq(dr_send(&s, body, len, &got, &base),
                          VS_E_INVALID_MESSAGES_COUNT);
        free(body);
        free(batch);
    }
    /* a missing partition, a missing topic: H 20 */
    p = 5;
    batch = dr_batch("bad", 1, &bl);
    body = dr_send_body(0, 0, 2, &p, 4, batch, bl, 1, &len);
    ck_assert_uint_eq(dr_send(&s, body, len, &got, &base), 20);
    free(body);
    p = 0;
    body = dr_send_body(0, 9, 2, &p, 4, batch, bl, 1, &len);
    ck_assert_uint_eq(dr_send(&s, body, len, &got, &base), 20);
    free(body);
    free(batch);
    /* nothing stored: each partition holds the 3 good messages */
    static struct dr_poll r;
    for (p = 0; p < 2; p++) {
        dr_poll(&s, 1, 1, 0, 0, 1, p, 1, 0, 100, 0, &r);
        ck_assert_uint_eq(r.n, 3);
        expect_msg(&r.m[2], 2, "good-2");
        ck_assert_uint_eq(send_to(&s, p, "after", 1), 3);
    }
    /* polling a missing partition: 3007 */
    dr_poll(&s, 1, 1, 0, 0, 1, 7, 1, 0, 100, 0, &r);
    ck_assert_uint_eq(r.status, 3007);
    /* an oversized batch: the frame limit evicts (6) and closes */
    uint32_t big = 70000;
    uint8_t *huge = calloc(1, big);
    ck_assert_int_eq(rc_send(s.fd, 160, 0, huge, big, s.client, 1, s.session),
                     0);
    free(huge);
    struct rc_frame f;
    int rc = rc_read(s.fd, &f, DR_READ_MS);
    ck_assert_int_eq(rc, 1);
    ck_assert_uint_eq(f.command, 13);
    ck_assert_uint_eq(f.reason, 6);
    rc_frame_fini(&f);
    dr_close(&s);
    /* the node is healthy: a new session sends and polls */
    dr_login(&s, &node, 0x3333);
    ck_assert_uint_eq(send_to(&s, 0, "later", 1), 4);
    dr_poll(&s, 1, 1, 0, 0, 1, 0, 3, 0, 100, 0, &r);
    ck_assert_uint_eq(r.n, 5);
    expect_msg(&r.m[4], 4, "later-0");
    dr_close(&s);
}
END_TEST

START_TEST(test_purge)
{
    start(NULL);
    struct dr_sess s;
    dr_login(&s, &node, 0x4444);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", 4, NULL, 0);
    for (uint32_t p = 0; p < 4; p++) {
        ck_assert_uint_eq(send_to(&s, p, "old", 3), 0);
        ck_assert_uint_eq(send_to(&s, p, "old2", 3), 3);
        ck_assert_uint_eq(dr_offset_store(&s, 1, 5, 0, 0, p, 4), 0);
    }
    uint8_t pt[] = {1, 4, 0, 0, 0, 0, 1, 4, 0, 0, 0, 0};
    ck_assert_uint_eq(dr_meta(&s, 135, pt, sizeof(pt)), 0);
    static struct dr_poll r;
    for (uint32_t p = 0; p < 4; p++) {
        dr_poll(&s, 1, 5, 0, 0, 1, p, 1, 0, 100, 0, &r);
        ck_assert_uint_eq(r.status, 0);
        ck_assert_uint_eq(r.n, 0);
        uint64_t stored;
        ck_assert_int_eq(dr_offset_get(&s, 1, 5, 0, 0, p, &stored), 0);
        /* offsets restart at 0 (the reference's purge) */
        ck_assert_uint_eq(send_to(&s, p, "new", 2), 0);
        dr_poll(&s, 1, 5, 0, 0, 1, p, 3, 0, 100, 0, &r);
        ck_assert_uint_eq(r.n, 2);
        expect_msg(&r.m[0], 0, "new-0");
    }
    /* deleting the topic removes its partition directories */
    ck_assert_uint_eq(dr_meta(&s, 134, pt, sizeof(pt)), 0);
    dr_poll(&s, 1, 5, 0, 0, 1, 0, 1, 0, 100, 0, &r);
    ck_assert_uint_eq(r.status, 2010);
    dr_close(&s);
    /* each owner removes its directories when it sees the delete (its
     * 20 ms timer, or its next request): bounded wait */
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/partitions", node.data_dir);
    int left = -1;
    for (int i = 0; i < 500 && left != 0; i++) {
        if (i > 0)
            usleep(10000);
        DIR *d = opendir(dir);
        ck_assert_ptr_nonnull(d);
        struct dirent *de;
        left = 0;
        while ((de = readdir(d)) != NULL)
            if (de->d_name[0] != '.')
                left++;
        closedir(d);
    }
    ck_assert_int_eq(left, 0);
}
END_TEST

START_TEST(test_disk_watermark)
{
    /* created with no watermark, then restarted below an absurd one: free
     * space is always below it */
    start(NULL);
    struct dr_sess s;
    dr_login(&s, &node, 0x5555);
    dr_create_stream(&s, "st");
    dr_create_topic(&s, 0, "tp", 2, NULL, 0);
    dr_create_topic(&s, 0, "gone", 1, NULL, 0);
    dr_close(&s);
    ck_assert_int_eq(vs_node_stop(&node, START_MS), 0);
    const char *extra[] = {"--disk-watermark-bytes", "1000000T", NULL};
    start(extra);
    /* login works below the watermark; sends refused, reads work */
    dr_login(&s, &node, 0x5556);
    for (uint32_t p = 0; p < 2; p++) {
        size_t bl, len;
        uint8_t *batch = dr_batch("w", 2, &bl);
        uint8_t *body = dr_send_body(0, 0, 2, &p, 4, batch, bl, 2, &len);
        ck_assert_uint_eq(dr_send(&s, body, len, NULL, NULL),
                          VS_E_CANNOT_SAVE_MESSAGES);
        free(batch);
        free(body);
        static struct dr_poll r;
        dr_poll(&s, 1, 5, 0, 0, 1, p, 1, 0, 100, 0, &r);
        ck_assert_uint_eq(r.status, 0);
        ck_assert_uint_eq(r.n, 0);
    }
    /* metadata growth: the specific DiskFull; a delete still works */
    uint8_t b[8] = {2, 'n', 'o'};
    ck_assert_uint_eq(dr_meta_status(&s, 128, b, 3), VS_E_DISK_FULL);
    uint8_t del[12] = {1, 4, 0, 0, 0, 0, 1, 4, 1, 0, 0, 0}; /* 0 / 1 */
    ck_assert_uint_eq(dr_meta_status(&s, 134, del, sizeof(del)), 0);
    dr_close(&s);
}
END_TEST

static Suite *
data_serve_suite(void)
{
    Suite *s = suite_create("data_serve");
    TCase *t = tcase_create("send_poll");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_send_poll_every_strategy);
    tcase_add_test(t, test_bad_batches);
    tcase_add_test(t, test_purge);
    tcase_add_test(t, test_disk_watermark);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(data_serve_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
