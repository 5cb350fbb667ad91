/*
 * tests/unit/check_ipc_handoff.c - the connection handoff message and
 * channel (ipc/handoff.h): golden bytes of the head, a round trip with
 * pending bytes, every truncation and every bad field refused, a socket
 * passed over a real channel (and a message without one refused), a
 * full channel reported as -EAGAIN, and the connection table entry
 * adopted by the receiving shard (conntab_adopt).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "ipc/conntab.h"
#include "ipc/handoff.h"
#include "ipc/segment.h"

static uint8_t buf[HANDOFF_MSG_MAX];

static void
sample(struct handoff_msg *m, const uint8_t *pending, uint32_t plen)
{
    memset(m, 0, sizeof(*m));
    m->flags = HANDOFF_F_BOUND | HANDOFF_F_PAT;
    m->from_slot = 2;
    m->from_incarnation = 7;
    m->conn_id = (5u << 9) | 2u;
    m->ct_idx = 11;
    m->user_id = 3;
    m->session = 0x1122334455667788ull;
    m->client = (struct vs_u128){0xaabb, 0xccdd};
    m->cred_user_created_op = 9;
    m->cred_checked_op = 40;
    m->cred_expiry_us = 123456789;
    m->last_active_ms = 555;
    for (unsigned i = 0; i < HANDOFF_DIGEST_LEN; i++)
        m->cred_digest[i] = (uint8_t)(i + 1);
    strcpy(m->peer, "127.0.0.1:40000");
    m->frames = 17;
    m->part_request = 21;
    m->part_subseq = 4;
    m->part_base = (struct vs_u128){0x1234, 0x5678};
    m->part_status = 57;
    m->part_seen = 1;
    m->pending = pending;
    m->pending_len = plen;
}

START_TEST(test_golden_head)
{
    struct handoff_msg m;
    sample(&m, NULL, 0);
    int n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(n, HANDOFF_HEAD_SIZE);
    ck_assert_mem_eq(buf, "VSHO", 4);
    ck_assert_uint_eq(buf[4], 2); /* version */
    ck_assert_uint_eq(buf[5], 0);
    ck_assert_uint_eq(buf[6], 3); /* flags */
    ck_assert_uint_eq(vs_load_u32(buf + 8), 2);
    ck_assert_uint_eq(vs_load_u32(buf + 12), 0);
    ck_assert_uint_eq(vs_load_u64(buf + 16), 7);
    ck_assert_uint_eq(vs_load_u64(buf + 24), (5u << 9) | 2u);
    ck_assert_uint_eq(vs_load_u32(buf + 32), 11);
    ck_assert_uint_eq(vs_load_u32(buf + 36), 3);
    ck_assert_uint_eq(vs_load_u64(buf + 40), 0x1122334455667788ull);
    ck_assert_uint_eq(vs_load_u64(buf + 48), 0xaabb);
    ck_assert_uint_eq(vs_load_u64(buf + 56), 0xccdd);
    ck_assert_uint_eq(vs_load_u64(buf + 64), 9);
    ck_assert_uint_eq(vs_load_u64(buf + 72), 40);
    ck_assert_uint_eq(vs_load_u64(buf + 80), 123456789);
    ck_assert_uint_eq(vs_load_u64(buf + 88), 555);
    ck_assert_uint_eq(buf[96], 1);
    ck_assert_uint_eq(buf[127], 32);
    ck_assert_str_eq((const char *)buf + 128, "127.0.0.1:40000");
    ck_assert_uint_eq(vs_load_u64(buf + 192), 17);
    ck_assert_uint_eq(vs_load_u64(buf + 200), 21);
    ck_assert_uint_eq(vs_load_u64(buf + 208), 4);
    ck_assert_uint_eq(vs_load_u64(buf + 216), 0x1234);
    ck_assert_uint_eq(vs_load_u64(buf + 224), 0x5678);
    ck_assert_uint_eq(vs_load_u32(buf + 232), 57);
    ck_assert_uint_eq(vs_load_u32(buf + 236), 1);
    for (unsigned i = 240; i < HANDOFF_HEAD_SIZE; i++)
        ck_assert_uint_eq(buf[i], 0);
}
END_TEST

START_TEST(test_round_trip)
{
    uint8_t pending[300];
    for (unsigned i = 0; i < sizeof(pending); i++)
        pending[i] = (uint8_t)(i * 7);
    struct handoff_msg m, d;
    sample(&m, pending, sizeof(pending));
    int n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(n, HANDOFF_HEAD_SIZE + sizeof(pending));
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), 0);
    ck_assert_uint_eq(d.flags, m.flags);
    ck_assert_uint_eq(d.from_slot, 2);
    ck_assert_uint_eq(d.from_incarnation, 7);
    ck_assert_uint_eq(d.conn_id, m.conn_id);
    ck_assert_int_eq(d.ct_idx, 11);
    ck_assert_uint_eq(d.user_id, 3);
    ck_assert_uint_eq(d.session, m.session);
    ck_assert(vs_u128_eq(d.client, m.client));
    ck_assert_uint_eq(d.cred_user_created_op, 9);
    ck_assert_uint_eq(d.cred_checked_op, 40);
    ck_assert_uint_eq(d.cred_expiry_us, 123456789);
    ck_assert_uint_eq(d.last_active_ms, 555);
    ck_assert_mem_eq(d.cred_digest, m.cred_digest, HANDOFF_DIGEST_LEN);
    ck_assert_str_eq(d.peer, "127.0.0.1:40000");
    ck_assert_uint_eq(d.frames, 17);
    ck_assert_uint_eq(d.part_request, 21);
    ck_assert_uint_eq(d.part_subseq, 4);
    ck_assert(vs_u128_eq(d.part_base, m.part_base));
    ck_assert_uint_eq(d.part_status, 57);
    ck_assert_uint_eq(d.part_seen, 1);
    ck_assert_uint_eq(d.pending_len, sizeof(pending));
    ck_assert_mem_eq(d.pending, pending, sizeof(pending));
    /* an unbound connection (no session) with no ct entry */
    memset(&m, 0, sizeof(m));
    m.ct_idx = -1;
    m.user_id = UINT32_MAX;
    strcpy(m.peer, "[::1]:9");
    n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), 0);
    ck_assert_int_eq(d.ct_idx, -1);
    ck_assert_ptr_null(d.pending);
    /* too small an output, too many pending bytes */
    sample(&m, pending, sizeof(pending));
    ck_assert_int_eq(handoff_encode(&m, buf, HANDOFF_HEAD_SIZE), -EMSGSIZE);
    m.pending_len = HANDOFF_PENDING_MAX + 1;
    ck_assert_int_eq(handoff_encode(&m, buf, sizeof(buf)), -EMSGSIZE);
}
END_TEST

START_TEST(test_truncations_refused)
{
    uint8_t pending[40] = {1, 2, 3};
    struct handoff_msg m, d;
    sample(&m, pending, sizeof(pending));
    int n = handoff_encode(&m, buf, sizeof(buf));
    for (int len = 0; len < n; len++)
        ck_assert_int_eq(handoff_decode(buf, (size_t)len, &d), -EBADMSG);
    buf[n] = 0;
    ck_assert_int_eq(handoff_decode(buf, (size_t)n + 1, &d), -EBADMSG);
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), 0);
}
END_TEST

/* Encodes the sample, applies `edit` at offset off, expects rc. */
static void
expect_bad(size_t off, uint8_t value, int rc)
{
    struct handoff_msg m, d;
    sample(&m, NULL, 0);
    int n = handoff_encode(&m, buf, sizeof(buf));
    buf[off] = value;
    ck_assert_msg(handoff_decode(buf, (size_t)n, &d) == rc,
                  "byte %zu = %u: want %d", off, value, rc);
}

START_TEST(test_bad_fields_refused)
{
    expect_bad(0, 'X', -EBADMSG);   /* magic */
    expect_bad(4, 3, -EPROTO);      /* a later version */
    expect_bad(4, 1, -EPROTO);      /* version 1: no partition-op key */
    expect_bad(4, 0, -EPROTO);      /* version 0 */
    expect_bad(6, 0x07, -EBADMSG);  /* unknown flag */
    expect_bad(7, 0x80, -EBADMSG);  /* unknown flag, high byte */
    expect_bad(12, 1, -EBADMSG);    /* pending_len past the end */
    expect_bad(35, 0x80, -EBADMSG); /* ct_idx < -1 */
    expect_bad(240, 1, -EBADMSG);   /* reserved */
    expect_bad(236, 2, -EBADMSG);   /* part_seen neither 0 nor 1 */
    expect_bad(236, 0, -EBADMSG);   /* part fields without part_seen */
    expect_bad(HANDOFF_HEAD_SIZE - 1, 9, -EBADMSG);
    /* an unterminated peer */
    struct handoff_msg m, d;
    sample(&m, NULL, 0);
    int n = handoff_encode(&m, buf, sizeof(buf));
    memset(buf + 128, 'a', HANDOFF_PEER_MAX);
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), -EBADMSG);
    /* bound without a session or client */
    sample(&m, NULL, 0);
    m.session = 0;
    n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), -EBADMSG);
    sample(&m, NULL, 0);
    m.client = (struct vs_u128){0, 0};
    n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), -EBADMSG);
    /* session fields without the bound flag */
    sample(&m, NULL, 0);
    m.flags = 0;
    n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), -EBADMSG);
    sample(&m, NULL, 0);
    m.flags = HANDOFF_F_PAT; /* a token session that is not bound */
    n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(handoff_decode(buf, (size_t)n, &d), -EBADMSG);
    /* a pending length over the maximum, however long the message */
    sample(&m, NULL, 0);
    n = handoff_encode(&m, buf, sizeof(buf));
    vs_store_u32(buf + 12, HANDOFF_PENDING_MAX + 1);
    ck_assert_int_eq(handoff_decode(buf, sizeof(buf), &d), -EBADMSG);
}
END_TEST

START_TEST(test_channel_passes_socket)
{
    int rx, tx;
    ck_assert_int_eq(handoff_pair_create(&rx, &tx), 0);
    int sp[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
    uint8_t pending[5] = "abcd";
    struct handoff_msg m, d;
    sample(&m, pending, sizeof(pending));
    int n = handoff_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(handoff_send(tx, sp[0], buf, (size_t)n), 0);
    close(sp[0]); /* the message holds its own reference */
    static uint8_t in[HANDOFF_MSG_MAX];
    size_t len = 0;
    int fd = -1;
    ck_assert_int_eq(handoff_recv(rx, in, sizeof(in), &len, &fd), 0);
    ck_assert_uint_eq(len, (size_t)n);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(handoff_decode(in, len, &d), 0);
    ck_assert_mem_eq(d.pending, "abcd", 5);
    /* the passed socket is the same connection */
    ck_assert_int_eq(write(fd, "ping", 4), 4);
    char got[4];
    ck_assert_int_eq(read(sp[1], got, 4), 4);
    ck_assert_mem_eq(got, "ping", 4);
    close(fd);
    /* nothing more waits */
    ck_assert_int_eq(handoff_recv(rx, in, sizeof(in), &len, &fd), -EAGAIN);
    /* a message without a socket is refused */
    ck_assert_int_eq(send(tx, buf, (size_t)n, 0), n);
    ck_assert_int_eq(handoff_recv(rx, in, sizeof(in), &len, &fd), -EBADMSG);
    ck_assert_int_eq(fd, -1);
    /* a message larger than the receiver's buffer is refused (and its
     * socket closed) */
    ck_assert_int_eq(handoff_send(tx, sp[1], buf, (size_t)n), 0);
    ck_assert_int_eq(handoff_recv(rx, in, 16, &len, &fd), -EBADMSG);
    ck_assert_int_eq(fd, -1);
    /* a full channel: -EAGAIN, never a partial message */
    int sent = 0, rc = 0;
    while (sent < 10000 && (rc = handoff_send(tx, sp[1], in, 60000)) == 0)
        sent++;
    ck_assert_int_eq(rc, -EAGAIN);
    ck_assert_int_gt(sent, 0);
    int got_n = 0;
    while (handoff_recv(rx, in, sizeof(in), &len, &fd) == 0) {
        ck_assert_uint_eq(len, 60000);
        close(fd);
        got_n++;
    }
    ck_assert_int_eq(got_n, sent);
    close(sp[1]);
    close(rx);
    close(tx);
}
END_TEST

START_TEST(test_segment_channels)
{
    struct vs_seg seg;
    struct vs_seg_params p = {
        .n_procs = 3, .lr_instance_size = 4096, .ring_bytes = 4096};
    ck_assert_int_eq(seg_create(&seg, &p), 0);
    ck_assert_int_eq(seg.handoff_rx[0], -1); /* shard 0 has none */
    ck_assert_int_ge(seg.handoff_rx[1], 0);
    ck_assert_int_ge(seg.handoff_tx[2], 0);
    ck_assert_int_eq(seg.handoff_rx[3], -1);
    seg_destroy(&seg);
    ck_assert_int_eq(seg.handoff_rx[1], -1);
}
END_TEST

START_TEST(test_conntab_adopt)
{
    size_t len = conntab_region_size(2);
    void *r = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r, MAP_FAILED);
    ck_assert_int_eq(conntab_region_init(r, len, 2), 0);
    struct vs_conntab t;
    ck_assert_int_eq(conntab_attach(&t, r, len), 0);
    int a = conntab_claim(&t, 1, 0x201, "127.0.0.1:5000");
    ck_assert_int_ge(a, 0);
    conntab_set_session(&t, a, 4, (struct vs_u128){8, 9});
    /* only the named owner's entry moves */
    ck_assert_int_eq(conntab_adopt(&t, a, 3, 2, 0x402), -ESTALE);
    ck_assert_int_eq(conntab_adopt(&t, a, 1, 2, 0x402), 0);
    ck_assert_uint_eq(conntab_used(&t), 1);
    struct conntab_info e;
    ck_assert_int_eq(conntab_read(&t, (uint32_t)a, &e), 1);
    ck_assert_uint_eq(e.owner, 2);
    ck_assert_uint_eq(e.conn_id, 0x402);
    ck_assert_uint_eq(e.user_id, 4);
    ck_assert_str_eq(e.addr, "127.0.0.1:5000");
    /* adopted twice (a stale message): refused */
    ck_assert_int_eq(conntab_adopt(&t, a, 1, 2, 0x602), -ESTALE);
    /* the sender died and its entries were released: refused */
    int b = conntab_claim(&t, 1, 0x801, "x");
    ck_assert_uint_eq(conntab_release_owner(&t, 1), 1);
    ck_assert_int_eq(conntab_adopt(&t, b, 1, 2, 0xa02), -ESTALE);
    ck_assert_int_eq(conntab_adopt(&t, -1, 1, 2, 0xa02), -ESTALE);
    ck_assert_int_eq(conntab_adopt(&t, 2, 1, 2, 0xa02), -ESTALE);
    ck_assert_uint_eq(conntab_used(&t), 1);
    munmap(r, len);
}
END_TEST

static Suite *
handoff_suite(void)
{
    Suite *s = suite_create("ipc_handoff");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_golden_head);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_truncations_refused);
    tcase_add_test(tc, test_bad_fields_refused);
    tcase_add_test(tc, test_channel_passes_socket);
    tcase_add_test(tc, test_segment_channels);
    tcase_add_test(tc, test_conntab_adopt);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(handoff_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
