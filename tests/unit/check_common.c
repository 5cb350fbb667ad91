/*
 * tests/unit/check_common.c - buffers, errors, logging, ready file, assert.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/assert.h"
#include "common/buf.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/readyfile.h"

START_TEST(test_rbuf_bounds)
{
    uint8_t data[] = {1, 2, 0, 3, 0, 0, 0, 9};
    struct vs_rbuf r;
    vs_rbuf_init(&r, data, sizeof(data));
    ck_assert_uint_eq(vs_rd_u8(&r), 1);
    ck_assert_uint_eq(vs_rd_u16(&r), 2);
    ck_assert_uint_eq(vs_rd_u32(&r), 3);
    ck_assert_int_eq(r.err, 0);
    ck_assert_uint_eq(vs_rbuf_left(&r), 1);
    ck_assert_uint_eq(vs_rd_u64(&r), 0); /* short: zero, error set */
    ck_assert_int_eq(r.err, -EPROTO);
    ck_assert_uint_eq(vs_rd_u8(&r), 0); /* sticky even when bytes remain */
    ck_assert_ptr_null(vs_rd_bytes(&r, 1));
    vs_rbuf_init(&r, data, sizeof(data));
    ck_assert_ptr_null(vs_rd_bytes(&r, SIZE_MAX)); /* no overflow */
    ck_assert_int_eq(r.err, -EPROTO);
}
END_TEST

START_TEST(test_wbuf_roundtrip)
{
    struct vs_wbuf w;
    vs_wbuf_init(&w);
    for (int i = 0; i < 1000; i++) {
        vs_wr_u8(&w, (uint8_t)i);
        vs_wr_u16(&w, (uint16_t)(i * 3));
        vs_wr_u32(&w, (uint32_t)i * 100003u);
        vs_wr_u64(&w, (uint64_t)i << 40);
        struct vs_u128 v = {.lo = (uint64_t)i, .hi = ~(uint64_t)i};
        vs_wr_u128(&w, v);
    }
    vs_wr_zeros(&w, 3);
    ck_assert_uint_eq(w.len, 1000 * 31 + 3);
    struct vs_rbuf r;
    vs_rbuf_init(&r, w.data, w.len);
    for (int i = 0; i < 1000; i++) {
        ck_assert_uint_eq(vs_rd_u8(&r), (uint8_t)i);
        ck_assert_uint_eq(vs_rd_u16(&r), (uint16_t)(i * 3));
        ck_assert_uint_eq(vs_rd_u32(&r), (uint32_t)i * 100003u);
        ck_assert_uint_eq(vs_rd_u64(&r), (uint64_t)i << 40);
        struct vs_u128 v = vs_rd_u128(&r);
        ck_assert_uint_eq(v.lo, (uint64_t)i);
        ck_assert_uint_eq(v.hi, ~(uint64_t)i);
    }
    ck_assert_int_eq(r.err, 0);
    ck_assert_uint_eq(vs_rbuf_left(&r), 3);
    /* little-endian on the wire */
    vs_wbuf_reset(&w);
    vs_wr_u32(&w, 0x04030201u);
    ck_assert_uint_eq(w.data[0], 1);
    ck_assert_uint_eq(w.data[3], 4);
    vs_wbuf_fini(&w);
}
END_TEST

START_TEST(test_error_names)
{
    ck_assert_str_eq(vs_iggy_error_name(1012), "StreamNameAlreadyExists");
    ck_assert_str_eq(vs_iggy_error_name(VS_E_UNSUPPORTED_OPTION_KEY),
                     "UnsupportedOptionKey");
    ck_assert_str_eq(vs_iggy_error_name(41), "Unauthorized");
    ck_assert_str_eq(vs_iggy_error_str(40), "unauthenticated");
    ck_assert_str_eq(vs_iggy_error_name(VS_E_INVALID_MESSAGE_CHECKSUM),
                     "InvalidMessageChecksum");
    ck_assert_uint_eq(VS_E_INVALID_MESSAGE_CHECKSUM, 4027);
    ck_assert_str_eq(vs_iggy_error_name(4006), "CannotSaveMessagesToSegment");
    ck_assert_str_eq(vs_iggy_error_name(77777), "Unknown");
    ck_assert_str_eq(vs_iggy_error_str(77777), "unknown error");
}
END_TEST

static char *
read_all(const char *path)
{
    static char buf[8192];
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    return buf;
}

START_TEST(test_log_format_level_and_reopen)
{
    char dir[] = "/tmp/vs_log_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256], rotated[256];
    snprintf(path, sizeof(path), "%s/v.log", dir);
    snprintf(rotated, sizeof(rotated), "%s/v.log.1", dir);
    vs_log_init("shard3", VS_LOG_INFO);
    ck_assert_int_eq(vs_log_open_file(path), 0);
    vs_log_info("hello %d", 42);
    vs_log_debug("hidden");
    char *s = read_all(path);
    char want[64];
    snprintf(want, sizeof(want), "shard3[%d] INFO hello 42\n", (int)getpid());
    ck_assert_msg(strstr(s, want) != NULL, "%s", s);
    ck_assert(strstr(s, "hidden") == NULL);
    ck_assert(s[4] == '-' && s[10] == 'T'); /* ISO timestamp first */
    /* rotation: move the file away, reopen, new lines go to a new file */
    ck_assert_int_eq(rename(path, rotated), 0);
    ck_assert_int_eq(vs_log_reopen(), 0);
    vs_log_set_level(VS_LOG_DEBUG);
    vs_log_debug("after");
    vs_log_sig("caught SIGTERM");
    s = read_all(path);
    ck_assert(strstr(s, "DEBUG after") != NULL);
    snprintf(want, sizeof(want), "shard3[%d] SIGNAL caught SIGTERM\n",
             (int)getpid());
    ck_assert_msg(strstr(s, want) != NULL, "%s", s);
    ck_assert_int_lt(vs_log_open_file("/nonexistent/dir/x.log"), 0);
    ck_assert_int_eq(vs_log_open_file(NULL), 0);
    enum vs_log_level l;
    ck_assert_int_eq(vs_log_level_parse("WARN", &l), 0);
    ck_assert_int_eq(l, VS_LOG_WARN);
    ck_assert_int_eq(vs_log_level_parse("nope", &l), -EINVAL);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_ready_file_roundtrip)
{
    char dir[] = "/tmp/vs_ready_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/ready.json", dir);
    struct vs_ready_info in, out;
    memset(&in, 0, sizeof(in));
    strcpy(in.client, "127.0.0.1:40001");
    strcpy(in.replica, "127.0.0.1:40002");
    in.pid = 1234;
    in.shard_pids[0] = 1235;
    in.shard_pids[1] = 1236;
    in.n_shard_pids = 2;
    ck_assert_int_eq(vs_ready_file_read(path, &out), -ENOENT);
    ck_assert_int_eq(vs_ready_file_write(path, &in), 0);
    ck_assert_int_eq(vs_ready_file_read(path, &out), 0);
    ck_assert_str_eq(out.client, in.client);
    ck_assert_str_eq(out.replica, in.replica);
    ck_assert_int_eq(out.pid, 1234);
    ck_assert_uint_eq(out.n_shard_pids, 2);
    ck_assert_int_eq(out.shard_pids[1], 1236);
    char *s = read_all(path);
    ck_assert_str_eq(s, "{\"client\":\"127.0.0.1:40001\",\"replica\":"
                        "\"127.0.0.1:40002\",\"pid\":1234,\"shards\":[1235,"
                        "1236]}\n");
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    ck_assert_int_eq(access(tmp, F_OK), -1); /* no leftover */
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_assert_aborts)
{
    int x = 1;
    VS_ASSERT(x == 2);
}
END_TEST

static Suite *
common_suite(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_rbuf_bounds);
    tcase_add_test(tc, test_wbuf_roundtrip);
    tcase_add_test(tc, test_error_names);
    tcase_add_test(tc, test_log_format_level_and_reopen);
    tcase_add_test(tc, test_ready_file_roundtrip);
    tcase_add_test_raise_signal(tc, test_assert_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(common_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
