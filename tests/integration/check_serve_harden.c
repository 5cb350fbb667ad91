/*
 * tests/integration/check_serve_harden.c - hardening of the data shards'
 * client listener on real vstreamd nodes (127.0.0.1, --profile test):
 * logins on a node that has just started (answered 58 until the
 * published metadata can judge them, never refused as final).
 * Every wait is bounded; nodes are stopped by pid (harness).
 * Callers: make check (INTEG_TESTS, INTEG_FAST_TESTS).
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/harness.h"
#include "tests/integration/rawclient.h"

#define START_MS 20000u
#define READ_MS  10000u

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
sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t
now_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

/* A port that was free a moment ago on 127.0.0.1. */
static unsigned
free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t l = sizeof(a);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A fresh node each round; the client connects the instant the port
 * answers and logs in at once, resending on 58 as the SDKs do: the
 * login succeeds and is never refused. */
START_TEST(test_login_the_instant_the_port_answers)
{
    int retried_rounds = 0;
    for (int round = 0; round < 5; round++) {
        struct vs_node n;
        ck_assert_int_eq(vs_node_init(&n), 0);
        char addr[64];
        snprintf(addr, sizeof(addr), "127.0.0.1:%u", free_port());
        const char *args[] = {"--shards",
                              "2",
                              "--client-addr",
                              addr,
                              "--with-default-root-credentials=true",
                              NULL};
        ck_assert_int_eq(vs_node_spawn(&n, args), 0);
        int fd = -1;
        uint64_t t0 = now_ms();
        while (fd < 0 && now_ms() - t0 < START_MS) {
            fd = vs_connect(addr);
            if (fd < 0)
                sleep_ms(1);
        }
        ck_assert_msg(fd >= 0, "round %d: %s never answered", round, addr);
        size_t len;
        uint8_t *b = rc_login_body(11264, "iggy", "iggy", &len);
        int retries = 0;
        struct rc_frame f;
        for (;;) {
            ck_assert_int_eq(rc_send(fd, 1, 0, b, (uint32_t)len,
                                     0x5150u + (uint64_t)round, 0, 0),
                             0);
            ck_assert_int_eq(rc_read(fd, &f, READ_MS), 1);
            ck_assert_msg(f.command == 8,
                          "round %d: login refused as final: command %u "
                          "reason %u after %d retries",
                          round, f.command, f.reason, retries);
            if (f.status != 58)
                break;
            rc_frame_fini(&f);
            retries++;
            ck_assert_int_lt(retries, 10000);
            sleep_ms(1);
        }
        free(b);
        ck_assert_uint_eq(f.operation, 1);
        ck_assert_uint_eq(f.status, 0);
        rc_frame_fini(&f);
        if (retries > 0)
            retried_rounds++;
        close(fd);
        /* the ready file still means "serves" */
        t0 = now_ms();
        while (vs_node_read_ready(&n) != 0 && now_ms() - t0 < START_MS)
            sleep_ms(5);
        ck_assert_str_eq(n.ready.client, addr);
        int st = vs_node_stop(&n, START_MS);
        ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        vs_node_cleanup(&n);
    }
    printf("check_serve_harden: %d of 5 fresh nodes answered 58 first\n",
           retried_rounds);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("serve_harden");
    TCase *tc = tcase_create("serve_harden");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_login_the_instant_the_port_answers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
