/*
 * tests/integration/check_e2e_messages.c - send and poll through a real
 * vstreamd with two data shards, by the client library and the CLI.
 *
 * Round trip: a topic with 8 partitions, at least one owned by each data
 * shard (asserted from the placement rule meta_partition_shard, so a
 * connection on either shard reaches partitions it must forward to the
 * other); 10,000 messages of random sizes from 0 B to 100 KB (most small,
 * so the test stays fast: about 1 in 16 is 8..100 KB, and both 0 B and
 * 100 KB occur) with user headers on every third message, sent by
 * partition id, balanced and message key; the confirmations say where
 * each batch went. Every partition is then polled back by offset, first,
 * last, next (consumer with auto-commit) and timestamp: payloads,
 * headers, ids and order exact, offsets dense from 0, timestamps
 * non-decreasing per partition.
 * CLI: send from arguments and stdin, poll --json (text payload and
 * payload_base64 for bytes that are not UTF-8), offset store/get.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "shard/meta/state.h"
#include "tests/integration/e2e.h"

#define NPART 8u
#define NMSG  10000u

static struct vs_node node;

static void
setup(void)
{
    ck_assert_int_eq(vs_harness_init(), 0);
    ck_assert_int_eq(vs_node_init(&node), 0);
    e2e_start(&node, 2, NULL);
}

static void
teardown(void)
{
    vs_node_cleanup(&node);
}

#define OK(c, call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        ck_assert_msg(rc_ == 0, "%s -> %d: %s", #call, rc_,                    \
                      vsc_last_error(c));                                      \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct want {
    uint32_t plen;
    uint32_t hlen;
    uint8_t *payload;
    uint8_t *headers;
    struct vs_u128 id;
};

/* Per partition: the message indexes in offset order. */
struct plist {
    uint32_t *idx;
    size_t n, cap;
};

static void
plist_add(struct plist *l, uint32_t i)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->idx = realloc(l->idx, l->cap * sizeof *l->idx);
        ck_assert_ptr_nonnull(l->idx);
    }
    l->idx[l->n++] = i;
}

static void
check_msg(const struct vsc_message *m, const struct want *w)
{
    ck_assert(vs_u128_eq(m->id, w->id));
    ck_assert_uint_eq(m->payload_len, w->plen);
    if (w->plen)
        ck_assert_mem_eq(m->payload, w->payload, w->plen);
    ck_assert_uint_eq(m->headers_len, w->hlen);
    if (w->hlen)
        ck_assert_mem_eq(m->headers, w->headers, w->hlen);
}

START_TEST(test_roundtrip_every_strategy)
{
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_id sid = vsc_id_name("msgs"), tid = vsc_id_name("t");
    struct want *w = calloc(NMSG, sizeof *w);
    struct plist pl[NPART];
    struct vsc_topic top;
    unsigned owners[3] = {0, 0, 0};
    uint32_t i;
    memset(pl, 0, sizeof pl);
    OK(c, vsc_stream_create(c, "msgs", NULL));
    OK(c, vsc_topic_create(c, &sid, NPART, "t", NULL, 0, &top));
    for (uint32_t p = 0; p < NPART; p++)
        owners[meta_partition_shard(meta_group_id(0, top.id, p), 2)]++;
    /* stream 0 / topic 0 on a fresh node */
    ck_assert_uint_eq(top.id, 0);
    ck_assert_uint_gt(owners[1], 0);
    ck_assert_uint_gt(owners[2], 0);
    vsc_topic_fini(&top);

    for (i = 0; i < NMSG; i++) {
        uint64_t r = rnd();
        uint32_t len =
            (uint32_t)(r % 16 == 0 ? 8192 + (r >> 8) % (100000 - 8191)
                                   : (r >> 8) % 1024);
        if (i == 17)
            len = 0;
        if (i == 4242)
            len = 100000;
        w[i].plen = len;
        w[i].payload = malloc(len + 1);
        for (uint32_t k = 0; k < len; k++)
            w[i].payload[k] = (uint8_t)(i * 7 + k * 13);
        if (i % 3 == 0) {
            struct vs_wbuf hb;
            char v[32];
            vs_wbuf_init(&hb);
            snprintf(v, sizeof v, "m-%u", i);
            vsc_uhdr_str(&hb, "name", v);
            vsc_uhdr_add(&hb, "index", 11, &i, 4);
            w[i].hlen = (uint32_t)hb.len;
            w[i].headers = hb.data;
        }
    }
    /* batches of 1..64 messages; partitioning rotates */
    for (i = 0; i < NMSG;) {
        uint32_t n = 1 + (uint32_t)(rnd() % 64), k;
        struct vsc_msg m[64];
        struct vsc_partitioning part;
        struct vsc_sent sent;
        char key[16];
        if (n > NMSG - i)
            n = NMSG - i;
        memset(m, 0, sizeof m);
        for (k = 0; k < n; k++) {
            m[k].payload = w[i + k].payload;
            m[k].payload_len = w[i + k].plen;
            m[k].headers = w[i + k].headers;
            m[k].headers_len = w[i + k].hlen;
        }
        switch (i % 3) {
        case 0:
            part = vsc_part_id((uint32_t)(rnd() % NPART));
            break;
        case 1:
            part = vsc_part_balanced();
            break;
        default:
            snprintf(key, sizeof key, "k%u", i);
            part = vsc_part_key(key, strlen(key));
            break;
        }
        OK(c, vsc_send(c, &sid, &tid, &part, m, n, &sent));
        ck_assert_int_eq(sent.confirmed, 1);
        ck_assert_uint_lt(sent.partition_id, NPART);
        if (part.kind == VSC_PART_ID)
            ck_assert_uint_eq(sent.partition_id, part.partition_id);
        if (part.kind == VSC_PART_KEY)
            ck_assert_uint_eq(sent.partition_id,
                              vsc_key_partition(key, strlen(key), NPART));
        ck_assert_uint_eq(sent.base_offset, pl[sent.partition_id].n);
        for (k = 0; k < n; k++) {
            w[i + k].id = m[k].id;
            plist_add(&pl[sent.partition_id], i + k);
        }
        i += n;
    }

    for (uint32_t p = 0; p < NPART; p++) {
        struct vsc_poll_args a;
        struct vsc_polled r;
        struct vsc_id cons = vsc_id_name("reader");
        uint64_t off = 0, prev_ts = 0, mid_ts = 0;
        uint32_t polls = 0;
        if (pl[p].n == 0)
            continue;
        /* by offset, 500 at a time */
        memset(&a, 0, sizeof a);
        a.consumer = vsc_consumer_single(&cons);
        a.has_partition = 1;
        a.partition_id = p;
        a.strategy = VSC_POLL_OFFSET;
        a.count = 500;
        while (off < pl[p].n && polls++ < 10000) {
            a.value = off;
            OK(c, vsc_poll(c, &sid, &tid, &a, &r));
            ck_assert_uint_eq(r.partition_id, p);
            ck_assert_uint_eq(r.current_offset, pl[p].n - 1);
            ck_assert_uint_gt(r.n, 0);
            ck_assert_uint_eq(r.count, r.n);
            for (size_t k = 0; k < r.n; k++, off++) {
                ck_assert_uint_eq(r.msgs[k].offset, off);
                ck_assert_uint_ge(r.msgs[k].timestamp, prev_ts);
                prev_ts = r.msgs[k].timestamp;
                if (off == pl[p].n / 2)
                    mid_ts = prev_ts;
                check_msg(&r.msgs[k], &w[pl[p].idx[off]]);
            }
            vsc_polled_fini(&r);
        }
        ck_assert_uint_eq(off, pl[p].n);
        /* first */
        a.strategy = VSC_POLL_FIRST;
        a.count = 3;
        OK(c, vsc_poll(c, &sid, &tid, &a, &r));
        ck_assert_uint_ge(r.n, 1);
        ck_assert_uint_eq(r.msgs[0].offset, 0);
        check_msg(&r.msgs[0], &w[pl[p].idx[0]]);
        vsc_polled_fini(&r);
        /* last: the final `count` messages */
        a.strategy = VSC_POLL_LAST;
        a.count = 2;
        OK(c, vsc_poll(c, &sid, &tid, &a, &r));
        ck_assert_uint_ge(r.n, 1);
        ck_assert_uint_eq(r.msgs[r.n - 1].offset, pl[p].n - 1);
        check_msg(&r.msgs[r.n - 1], &w[pl[p].idx[pl[p].n - 1]]);
        vsc_polled_fini(&r);
        /* timestamp: nothing before mid_ts, starts at or before mid */
        a.strategy = VSC_POLL_TIMESTAMP;
        a.value = mid_ts;
        a.count = 5;
        OK(c, vsc_poll(c, &sid, &tid, &a, &r));
        ck_assert_uint_ge(r.n, 1);
        ck_assert_uint_le(r.msgs[0].offset, pl[p].n / 2);
        for (size_t k = 0; k < r.n; k++) {
            ck_assert_uint_ge(r.msgs[k].timestamp, mid_ts);
            check_msg(&r.msgs[k], &w[pl[p].idx[r.msgs[k].offset]]);
        }
        vsc_polled_fini(&r);
        /* next + auto-commit walks the partition exactly once */
        a.strategy = VSC_POLL_NEXT;
        a.value = 0;
        a.count = 700;
        a.auto_commit = 1;
        off = 0;
        polls = 0;
        while (polls++ < 10000) {
            OK(c, vsc_poll(c, &sid, &tid, &a, &r));
            if (r.n == 0) {
                vsc_polled_fini(&r);
                break;
            }
            for (size_t k = 0; k < r.n; k++, off++) {
                ck_assert_uint_eq(r.msgs[k].offset, off);
                check_msg(&r.msgs[k], &w[pl[p].idx[off]]);
            }
            vsc_polled_fini(&r);
        }
        ck_assert_uint_eq(off, pl[p].n);
        {
            struct vsc_offset o;
            int found;
            OK(c, vsc_offset_get(c, &a.consumer, &sid, &tid, 1, p, &o, &found));
            ck_assert_int_eq(found, 1);
            ck_assert_uint_eq(o.stored_offset, pl[p].n - 1);
            ck_assert_uint_eq(o.current_offset, pl[p].n - 1);
        }
    }
    for (i = 0; i < NMSG; i++) {
        free(w[i].payload);
        free(w[i].headers);
    }
    for (uint32_t p = 0; p < NPART; p++)
        free(pl[p].idx);
    free(w);
    vsc_destroy(c);
}
END_TEST

static int
cli(char *out, size_t cap, const char *input, const char *const *args)
{
    static char err[4096];
    int rc = e2e_cli(&node, "iggy", input, out, cap, err, sizeof err, args);
    if (rc != 0)
        fprintf(stderr, "cli rc %d: %s\n", rc, err);
    return rc;
}

START_TEST(test_cli_send_poll)
{
    static char out[65536];
    struct vsc *c = e2e_login(&node, "iggy", "iggy");
    struct vsc_id sid = vsc_id_name("cli"), tid = vsc_id_name("t");
    struct vsc_partitioning p1 = vsc_part_id(1);
    struct vsc_msg m;
    OK(c, vsc_stream_create(c, "cli", NULL));
    OK(c, vsc_topic_create(c, &sid, 2, "t", NULL, 0, NULL));

    const char *send_args[] = {"send", "cli",   "t",     "--partition",
                               "0",    "hello", "wörld", "--header",
                               "k=v",  NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, send_args), 0);
    ck_assert_ptr_nonnull(strstr(out, "sent 2 messages"));
    const char *stdin_args[] = {"send", "cli",    "t", "--partition",
                                "0",    "--json", NULL};
    ck_assert_int_eq(
        cli(out, sizeof out, "line one\n\nline three\n", stdin_args), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"sent\":3"));
    ck_assert_ptr_nonnull(strstr(out, "\"base_offset\":2"));
    /* bytes that are not UTF-8, by the library, to partition 1 */
    memset(&m, 0, sizeof m);
    m.payload = "\xff\xfe\x00\x01";
    m.payload_len = 4;
    OK(c, vsc_send(c, &sid, &tid, &p1, &m, 1, NULL));

    const char *poll_args[] = {"poll", "cli",      "t", "--partition",
                               "0",    "--offset", "0", "--count",
                               "10",   "--json",   NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, poll_args), 0);
    ck_assert_ptr_nonnull(strstr(out, "{\"messages\":["));
    ck_assert_ptr_nonnull(strstr(out, "\"offset\":0,"));
    ck_assert_ptr_nonnull(strstr(out, "\"payload\":\"hello\""));
    ck_assert_ptr_nonnull(strstr(out, "\"payload\":\"wörld\""));
    ck_assert_ptr_nonnull(strstr(out, "\"payload\":\"\""));
    ck_assert_ptr_nonnull(strstr(out, "\"payload\":\"line three\""));
    ck_assert_ptr_nonnull(strstr(out, "\"key\":\"k\",\"kind\":2,"
                                      "\"value\":\"v\""));
    ck_assert_ptr_nonnull(strstr(out, "\"offset\":4,"));
    ck_assert_ptr_null(strstr(out, "\"offset\":5,"));
    ck_assert_ptr_nonnull(strstr(out, "\"timestamp\":"));
    ck_assert_ptr_nonnull(strstr(out, "\"id\":\""));

    const char *poll1[] = {"poll", "cli",     "t",      "--partition",
                           "1",    "--first", "--json", NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, poll1), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"payload_base64\":\"//4AAQ==\""));

    /* text mode, consumer offsets through the CLI */
    const char *poll_last[] = {"poll",   "cli",     "t", "--partition", "0",
                               "--last", "--count", "1", NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, poll_last), 0);
    ck_assert_str_eq(out, "4\tline three\n");
    const char *store[] = {"offset",      "store", "cli",        "t",  "3",
                           "--partition", "0",     "--consumer", "c1", NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, store), 0);
    const char *get[] = {"offset", "get",        "cli", "t",      "--partition",
                         "0",      "--consumer", "c1",  "--json", NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, get), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"stored_offset\":3"));
    ck_assert_ptr_nonnull(strstr(out, "\"current_offset\":4"));
    const char *next[] = {"poll",       "cli", "t",      "--partition", "0",
                          "--consumer", "c1",  "--next", NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, next), 0);
    ck_assert_str_eq(out, "4\tline three\n");
    const char *del[] = {"offset", "delete",     "cli", "t", "--partition",
                         "0",      "--consumer", "c1",  NULL};
    ck_assert_int_eq(cli(out, sizeof out, NULL, del), 0);
    ck_assert_int_eq(cli(out, sizeof out, NULL, get), 2);
    vsc_destroy(c);
}
END_TEST

static Suite *
e2e_messages_suite(void)
{
    Suite *s = suite_create("e2e_messages");
    TCase *tc = tcase_create("messages");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_roundtrip_every_strategy);
    tcase_add_test(tc, test_cli_send_poll);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(e2e_messages_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
