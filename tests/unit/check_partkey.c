/*
 * tests/unit/check_partkey.c - the deduplication key of a connection's
 * partition ops (shard/serve/partkey.h): Iggy SDK numbering (one request
 * number for many sends, request checksum 0), identical bodies, a
 * resend after a transient answer, a resend on a new connection.
 */
#include "config.h"

#include <check.h>
#include <string.h>

#include "common/errors.h"
#include "shard/serve/partkey.h"

static const struct vs_u128 body_a = {0x1111, 0x2222};
static const struct vs_u128 body_b = {0x3333, 0x4444};

START_TEST(test_first_op_keeps_body_checksum)
{
    struct part_key k;
    memset(&k, 0, sizeof(k));
    struct vs_u128 key = part_key_next(&k, 7, body_a);
    ck_assert(vs_u128_eq(key, body_a));
    ck_assert_uint_eq(k.subseq, 0);
    ck_assert_uint_eq(k.status, PART_KEY_PENDING);
}
END_TEST

/* The SDK's numbering: every send between two metadata ops carries the
 * same request number; the same bytes twice must be two keys. */
START_TEST(test_same_number_same_bytes_differ)
{
    struct part_key k;
    memset(&k, 0, sizeof(k));
    struct vs_u128 keys[4];
    for (int i = 0; i < 4; i++) {
        keys[i] = part_key_next(&k, 3, body_a);
        part_key_answered(&k, 0);
    }
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            ck_assert_msg(!vs_u128_eq(keys[i], keys[j]),
                          "sends %d and %d share a key", i, j);
    ck_assert_uint_eq(k.subseq, 3);
    /* the next metadata op moved the number on: counting starts again */
    struct vs_u128 key = part_key_next(&k, 4, body_a);
    ck_assert(vs_u128_eq(key, body_a));
    ck_assert_uint_eq(k.subseq, 0);
}
END_TEST

/* A refused op (a permanent error) followed by the same frame is a new
 * op; after a transient answer (57/58) the same frame is its retry. */
START_TEST(test_transient_retry_keeps_key)
{
    struct part_key k;
    memset(&k, 0, sizeof(k));
    (void)part_key_next(&k, 5, body_a);
    part_key_answered(&k, 0);
    struct vs_u128 second = part_key_next(&k, 5, body_a);
    part_key_answered(&k, VS_E_TRANSIENT_NOT_COMMITTED);
    struct vs_u128 retry = part_key_next(&k, 5, body_a);
    ck_assert(vs_u128_eq(second, retry));
    part_key_answered(&k, VS_E_NOT_ACCEPTED);
    retry = part_key_next(&k, 5, body_a);
    ck_assert(vs_u128_eq(second, retry));
    /* answered for good: the same frame again is the next send */
    part_key_answered(&k, 0);
    struct vs_u128 third = part_key_next(&k, 5, body_a);
    ck_assert(!vs_u128_eq(third, second));
    /* a different body after a transient answer is a new op too */
    part_key_answered(&k, VS_E_TRANSIENT_NOT_COMMITTED);
    struct vs_u128 other = part_key_next(&k, 5, body_b);
    ck_assert(!vs_u128_eq(other, third));
    ck_assert(!vs_u128_eq(other, body_b));
    /* an error status other than the transient ones */
    part_key_answered(&k, VS_E_INVALID_COMMAND);
    struct vs_u128 again = part_key_next(&k, 5, body_b);
    ck_assert(!vs_u128_eq(again, other));
}
END_TEST

/* Only the answer of the op keyed last counts: a later answer (a poll's)
 * does not turn a committed send into a retriable one. */
START_TEST(test_later_answers_ignored)
{
    struct part_key k;
    memset(&k, 0, sizeof(k));
    struct vs_u128 first = part_key_next(&k, 9, body_a);
    part_key_answered(&k, 0);
    part_key_answered(&k, VS_E_TRANSIENT_NOT_COMMITTED); /* a poll's */
    ck_assert_uint_eq(k.status, 0);
    struct vs_u128 next = part_key_next(&k, 9, body_a);
    ck_assert(!vs_u128_eq(next, first));
    /* nothing keyed yet: an answer is ignored */
    memset(&k, 0, sizeof(k));
    part_key_answered(&k, 0);
    ck_assert_uint_eq(k.seen, 0);
}
END_TEST

/* A client that resends its frame on a new connection (a new key state)
 * is recognised when the frame was the first with its number. */
START_TEST(test_new_connection_resend)
{
    struct part_key old, fresh;
    memset(&old, 0, sizeof(old));
    memset(&fresh, 0, sizeof(fresh));
    struct vs_u128 sent = part_key_next(&old, 12, body_b);
    struct vs_u128 resent = part_key_next(&fresh, 12, body_b);
    ck_assert(vs_u128_eq(sent, resent));
}
END_TEST

static Suite *
partkey_suite(void)
{
    Suite *s = suite_create("partkey");
    TCase *t = tcase_create("core");
    tcase_add_test(t, test_first_op_keeps_body_checksum);
    tcase_add_test(t, test_same_number_same_bytes_differ);
    tcase_add_test(t, test_transient_retry_keeps_key);
    tcase_add_test(t, test_later_answers_ignored);
    tcase_add_test(t, test_new_connection_resend);
    suite_add_tcase(s, t);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(partkey_suite());
    srunner_run_all(r, CK_ENV);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
