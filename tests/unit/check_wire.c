/*
 * tests/unit/check_wire.c - header layouts against the reference.
 *
 * The table below is written from shared/reference/iggy-server-ng.md §2 and
 * iggy-client-protocol*.md, independently of the _Static_asserts in
 * common/wire.h: each row is (struct, field, offset, size in bytes).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h"

struct field_row {
    const char *name;
    size_t got_off, got_size;
    size_t want_off, want_size;
};

#define ROW(type, field, off, size)                                            \
    {                                                                          \
#type "." #field, offsetof(type, field), sizeof(((type *)0)->field),   \
            off, size                                                          \
    }

static const struct field_row rows[] = {
    ROW(struct vs_frame, checksum, 0, 16),
    ROW(struct vs_frame, checksum_body, 16, 16),
    ROW(struct vs_frame, cluster, 32, 16),
    ROW(struct vs_frame, size, 48, 4),
    ROW(struct vs_frame, view, 52, 4),
    ROW(struct vs_frame, release, 56, 4),
    ROW(struct vs_frame, command, 60, 1),
    ROW(struct vs_frame, replica, 61, 1),
    ROW(struct vs_frame, reserved_frame, 62, 66),
    /* Request */
    ROW(struct vs_hdr_request, client, 128, 16),
    ROW(struct vs_hdr_request, request_checksum, 144, 16),
    ROW(struct vs_hdr_request, timestamp, 160, 8),
    ROW(struct vs_hdr_request, request, 168, 8),
    ROW(struct vs_hdr_request, operation, 176, 1),
    ROW(struct vs_hdr_request, session, 184, 8),
    ROW(struct vs_hdr_request, user_id, 192, 4),
    ROW(struct vs_hdr_request, command_code, 196, 4),
    /* Reply */
    ROW(struct vs_hdr_reply, request_checksum, 128, 16),
    ROW(struct vs_hdr_reply, context, 144, 16),
    ROW(struct vs_hdr_reply, client, 160, 16),
    ROW(struct vs_hdr_reply, op, 176, 8),
    ROW(struct vs_hdr_reply, commit, 184, 8),
    ROW(struct vs_hdr_reply, timestamp, 192, 8),
    ROW(struct vs_hdr_reply, request, 200, 8),
    ROW(struct vs_hdr_reply, operation, 208, 1),
    ROW(struct vs_hdr_reply, status, 216, 4),
    /* Eviction */
    ROW(struct vs_hdr_eviction, client, 128, 16),
    ROW(struct vs_hdr_eviction, server_protocol_version, 144, 4),
    ROW(struct vs_hdr_eviction, server_protocol_version_min, 148, 4),
    ROW(struct vs_hdr_eviction, reason, 255, 1),
    /* Prepare */
    ROW(struct vs_hdr_prepare, client, 128, 16),
    ROW(struct vs_hdr_prepare, parent, 144, 16),
    ROW(struct vs_hdr_prepare, request_checksum, 160, 16),
    ROW(struct vs_hdr_prepare, op, 176, 8),
    ROW(struct vs_hdr_prepare, commit, 184, 8),
    ROW(struct vs_hdr_prepare, timestamp, 192, 8),
    ROW(struct vs_hdr_prepare, request, 200, 8),
    ROW(struct vs_hdr_prepare, operation, 208, 1),
    ROW(struct vs_hdr_prepare, group, 216, 8),
    ROW(struct vs_hdr_prepare, user_id, 224, 4),
    /* PrepareOk */
    ROW(struct vs_hdr_prepare_ok, parent, 128, 16),
    ROW(struct vs_hdr_prepare_ok, prepare_checksum, 144, 16),
    ROW(struct vs_hdr_prepare_ok, op, 160, 8),
    ROW(struct vs_hdr_prepare_ok, commit, 168, 8),
    ROW(struct vs_hdr_prepare_ok, timestamp, 176, 8),
    ROW(struct vs_hdr_prepare_ok, request, 184, 8),
    ROW(struct vs_hdr_prepare_ok, operation, 192, 1),
    ROW(struct vs_hdr_prepare_ok, group, 200, 8),
    /* Commit */
    ROW(struct vs_hdr_commit, commit_checksum, 128, 16),
    ROW(struct vs_hdr_commit, timestamp_monotonic, 144, 8),
    ROW(struct vs_hdr_commit, commit, 152, 8),
    ROW(struct vs_hdr_commit, checkpoint_op, 160, 8),
    ROW(struct vs_hdr_commit, group, 168, 8),
    /* SVC */
    ROW(struct vs_hdr_start_view_change, group, 128, 8),
    /* DVC */
    ROW(struct vs_hdr_do_view_change, op, 128, 8),
    ROW(struct vs_hdr_do_view_change, commit, 136, 8),
    ROW(struct vs_hdr_do_view_change, group, 144, 8),
    ROW(struct vs_hdr_do_view_change, log_view, 152, 4),
    ROW(struct vs_hdr_do_view_change, nack_bitset, 224, 16),
    ROW(struct vs_hdr_do_view_change, present_bitset, 240, 16),
    /* StartView */
    ROW(struct vs_hdr_start_view, op, 128, 8),
    ROW(struct vs_hdr_start_view, commit, 136, 8),
    ROW(struct vs_hdr_start_view, group, 144, 8),
    ROW(struct vs_hdr_start_view, incarnation, 240, 16),
    /* RequestStartView */
    ROW(struct vs_hdr_request_start_view, group, 128, 8),
    ROW(struct vs_hdr_request_start_view, incarnation, 240, 16),
    /* RequestPrepares */
    ROW(struct vs_hdr_request_prepares, nonce, 128, 16),
    ROW(struct vs_hdr_request_prepares, from_op, 144, 8),
    ROW(struct vs_hdr_request_prepares, to_op, 152, 8),
    ROW(struct vs_hdr_request_prepares, group, 160, 8),
    /* RepairDone / RangeEvicted */
    ROW(struct vs_hdr_repair_done, nonce, 128, 16),
    ROW(struct vs_hdr_repair_done, op, 144, 8),
    ROW(struct vs_hdr_repair_done, group, 152, 8),
    /* state transfer */
    ROW(struct vs_hdr_request_state_transfer, nonce, 128, 16),
    ROW(struct vs_hdr_request_state_transfer, group, 144, 8),
    ROW(struct vs_hdr_state_transfer_target, nonce, 128, 16),
    ROW(struct vs_hdr_state_transfer_target, commit_op, 144, 8),
    ROW(struct vs_hdr_state_transfer_target, group, 152, 8),
    ROW(struct vs_hdr_state_transfer_target, available, 160, 1),
    ROW(struct vs_hdr_state_transfer_target, unavailable_transient, 161, 1),
    ROW(struct vs_hdr_state_transfer_target, commit_max, 168, 8),
    ROW(struct vs_hdr_state_transfer_target, reason, 176, 1),
    ROW(struct vs_hdr_request_state_chunk, nonce, 128, 16),
    ROW(struct vs_hdr_request_state_chunk, offset, 144, 8),
    ROW(struct vs_hdr_request_state_chunk, group, 152, 8),
    ROW(struct vs_hdr_request_state_chunk, len, 160, 4),
    ROW(struct vs_hdr_request_state_chunk, artifact, 164, 4),
    ROW(struct vs_hdr_state_chunk, nonce, 128, 16),
    ROW(struct vs_hdr_state_chunk, offset, 144, 8),
    ROW(struct vs_hdr_state_chunk, group, 152, 8),
    ROW(struct vs_hdr_state_chunk, artifact, 160, 4),
    /* replica handshake */
    ROW(struct vs_hdr_replica_hello, nonce_d, 128, 32),
    ROW(struct vs_hdr_replica_hello, release_min, 160, 4),
    ROW(struct vs_hdr_replica_hello, release_max, 164, 4),
    ROW(struct vs_hdr_replica_hello, replica_count, 168, 1),
    ROW(struct vs_hdr_replica_challenge, nonce_a, 128, 32),
    ROW(struct vs_hdr_replica_challenge, mac_a, 160, 32),
    ROW(struct vs_hdr_replica_challenge, status, 192, 1),
    ROW(struct vs_hdr_replica_finish, mac_d, 160, 32),
    /* forwards */
    ROW(struct vs_hdr_forward_register, client, 128, 16),
    ROW(struct vs_hdr_forward_register, nonce, 144, 16),
    ROW(struct vs_hdr_forward_register, user_id, 160, 4),
    ROW(struct vs_hdr_forward_register_result, nonce, 128, 16),
    ROW(struct vs_hdr_forward_register_result, client, 144, 16),
    ROW(struct vs_hdr_forward_register_result, epoch, 160, 8),
    ROW(struct vs_hdr_forward_register_result, watermark, 168, 8),
    ROW(struct vs_hdr_forward_register_result, outcome, 255, 1),
    ROW(struct vs_hdr_forward_logout, client, 128, 16),
    ROW(struct vs_hdr_forward_logout, nonce, 144, 16),
    ROW(struct vs_hdr_forward_logout, session, 160, 8),
    ROW(struct vs_hdr_forward_logout, request, 168, 8),
    ROW(struct vs_hdr_forward_logout_result, commit, 160, 8),
    ROW(struct vs_hdr_forward_logout_result, outcome, 255, 1),
};

START_TEST(test_field_offsets)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ck_assert_msg(rows[i].got_off == rows[i].want_off,
                      "%s at %zu, reference says %zu", rows[i].name,
                      rows[i].got_off, rows[i].want_off);
        ck_assert_msg(rows[i].got_size == rows[i].want_size,
                      "%s is %zu bytes, reference says %zu", rows[i].name,
                      rows[i].got_size, rows[i].want_size);
    }
}
END_TEST

START_TEST(test_struct_sizes)
{
    size_t sizes[] = {
        sizeof(struct vs_header),
        sizeof(struct vs_hdr_request),
        sizeof(struct vs_hdr_reply),
        sizeof(struct vs_hdr_eviction),
        sizeof(struct vs_hdr_prepare),
        sizeof(struct vs_hdr_prepare_ok),
        sizeof(struct vs_hdr_commit),
        sizeof(struct vs_hdr_start_view_change),
        sizeof(struct vs_hdr_do_view_change),
        sizeof(struct vs_hdr_start_view),
        sizeof(struct vs_hdr_request_start_view),
        sizeof(struct vs_hdr_request_prepares),
        sizeof(struct vs_hdr_repair_done),
        sizeof(struct vs_hdr_request_state_transfer),
        sizeof(struct vs_hdr_state_transfer_target),
        sizeof(struct vs_hdr_request_state_chunk),
        sizeof(struct vs_hdr_state_chunk),
        sizeof(struct vs_hdr_replica_hello),
        sizeof(struct vs_hdr_replica_challenge),
        sizeof(struct vs_hdr_replica_finish),
        sizeof(struct vs_hdr_forward_register),
        sizeof(struct vs_hdr_forward_register_result),
        sizeof(struct vs_hdr_forward_logout),
        sizeof(struct vs_hdr_forward_logout_result),
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        ck_assert_uint_eq(sizes[i], 256);
}
END_TEST

/* iggy-client-protocol.md §2: "The only non-zero header bytes ever seen
 * were at offsets 48-51, 60, 128-143, 168-175, 176, 184-191 and 196-199."
 * Filling exactly those fields must touch exactly those bytes. */
START_TEST(test_request_nonzero_bytes_match_example)
{
    struct vs_hdr_request r;
    memset(&r, 0, sizeof(r));
    r.f.size = 0x01010101u;
    r.f.command = VS_CMD_REQUEST;
    r.client.lo = UINT64_MAX;
    r.client.hi = UINT64_MAX;
    r.request = UINT64_MAX;
    r.operation = VS_OP_NON_REPLICATED;
    r.session = UINT64_MAX;
    r.command_code = UINT32_MAX;
    const uint8_t *b = (const uint8_t *)&r;
    for (int i = 0; i < 256; i++) {
        int expect = (i >= 48 && i <= 51) || i == 60 ||
                     (i >= 128 && i <= 143) || (i >= 168 && i <= 175) ||
                     i == 176 || (i >= 184 && i <= 191) ||
                     (i >= 196 && i <= 199);
        ck_assert_msg((b[i] != 0) == expect, "byte %d", i);
    }
}
END_TEST

/* The little-endian encoding of a u128 is low half first. */
START_TEST(test_u128_is_low_half_first)
{
    struct vs_u128 v = {.lo = 0x0807060504030201ull,
                        .hi = 0x100f0e0d0c0b0a09ull};
    const uint8_t *b = (const uint8_t *)&v;
    for (int i = 0; i < 16; i++)
        ck_assert_uint_eq(b[i], i + 1);
}
END_TEST

START_TEST(test_operation_classes)
{
    /* iggy-client-protocol.md §3 step 5: declared operations */
    for (unsigned op = 0; op < 256; op++) {
        int declared = op <= 3 || (op >= 64 && op <= 68) ||
                       (op >= 128 && op <= 149) || (op >= 160 && op <= 162);
        ck_assert_msg(vs_operation_is_declared(op) == declared, "op %u", op);
        /* §3.1: result-framed: 64..137, 139..149, 161, 162, Register */
        int framed = op == 1 || (op >= 64 && op <= 68) ||
                     (op >= 128 && op <= 137) || (op >= 139 && op <= 149) ||
                     op == 161 || op == 162;
        ck_assert_msg(vs_operation_is_result_framed(op) == framed, "op %u", op);
    }
}
END_TEST

START_TEST(test_names)
{
    ck_assert_str_eq(vs_command_name(VS_CMD_PREPARE), "Prepare");
    ck_assert_str_eq(vs_command_name(VS_CMD_FORWARD_LOGOUT_RESULT),
                     "ForwardLogoutResult");
    ck_assert_str_eq(vs_command_name(VS_CMD_FORWARD_REQUEST), "ForwardRequest");
    ck_assert_str_eq(vs_command_name(VS_CMD_FORWARD_RESULT), "ForwardResult");
    ck_assert_str_eq(vs_command_name(32), "unknown");
    ck_assert_str_eq(vs_operation_name(VS_OP_CREATE_STREAM), "CreateStream");
    ck_assert_str_eq(vs_operation_name(VS_OP_LEAVE_CONSUMER_GROUP),
                     "LeaveConsumerGroup");
    ck_assert_str_eq(vs_operation_name(VS_OP_DELETE_SEGMENTS),
                     "DeleteSegments");
    ck_assert_str_eq(vs_operation_name(150), "unknown");
    ck_assert_str_eq(vs_eviction_reason_name(15), "MalformedLogin");
    ck_assert_str_eq(vs_eviction_reason_name(16), "unknown");
}
END_TEST

START_TEST(test_structure_check)
{
    struct vs_header h;
    memset(&h, 0, sizeof(h));
    h.f.command = VS_CMD_REQUEST;
    h.f.size = 255;
    ck_assert_int_eq(vs_header_check_structure(&h, 1024), -EPROTO);
    h.f.size = 256;
    ck_assert_int_eq(vs_header_check_structure(&h, 1024), 0);
    h.f.size = 1024;
    ck_assert_int_eq(vs_header_check_structure(&h, 1024), 0);
    h.f.size = 1025;
    ck_assert_int_eq(vs_header_check_structure(&h, 1024), -EPROTO);
    h.f.size = 300;
    h.f.command = 32;
    ck_assert_int_eq(vs_header_check_structure(&h, 1024), -EPROTO);
    h.f.command = VS_CMD_FORWARD_RESULT;
    ck_assert_int_eq(vs_header_check_structure(&h, 1024), 0);
    ck_assert(vs_wire_format_known(VS_WIRE_FORMAT_VERSION));
    ck_assert(!vs_wire_format_known(0));
    ck_assert(!vs_wire_format_known(VS_WIRE_FORMAT_VERSION + 1));
}
END_TEST

static Suite *
wire_suite(void)
{
    Suite *s = suite_create("wire");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, test_field_offsets);
    tcase_add_test(tc, test_struct_sizes);
    tcase_add_test(tc, test_request_nonzero_bytes_match_example);
    tcase_add_test(tc, test_u128_is_low_half_first);
    tcase_add_test(tc, test_operation_classes);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_structure_check);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(wire_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
