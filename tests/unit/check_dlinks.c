/*
 * tests/unit/check_dlinks.c - the data shards' links: the coalesced beat
 * frame codec (shard/link/beat.h), the pending tables (coalesce.h), the
 * address plan (plan.h) and the mesh (mesh.h) of three nodes on one
 * libevent base over 127.0.0.1 ephemeral ports.
 *
 * Covers: the frame's golden layout and round trip; refusal of every
 * truncation length, oversized and trailing-byte frames, repeated and
 * unordered entries, bad seals and body checksums, unknown kinds, entry
 * sizes, commands, clusters and non-zero reserved bytes; coalescing
 * (latest post wins, bounded tables answer -EAGAIN, a refused emit keeps
 * everything pending); 10,000 groups cost one frame per link per tick
 * (frames counted on both sides, no timer per group); the plan's
 * addresses and its refusals; a mesh refusing another shard index,
 * another shard count and a wrong secret; back-pressure (-EAGAIN, then
 * the writable callback); a bad or out-of-sequence beat and an
 * unexpected command end the link, which comes back; a silent peer is
 * dropped. Every wait is bounded (loop iterations of 10 ms).
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
#include <unistd.h>

#include <event2/event.h>

#include "common/checksum.h"
#include "common/wire.h"
#include "shard/link/beat.h"
#include "shard/link/coalesce.h"
#include "shard/link/mesh.h"
#include "shard/link/plan.h"
#include "tests/unit/link_fixture.h"

#define WAIT_ROUNDS 500 /* x 10 ms */
#define NODES       3
#define GROUPS      10000u

static const struct vs_u128 cluster = {0xc1u, 0xc2u};

static struct beat_sender
sender(uint8_t replica)
{
    return (struct beat_sender){
        .cluster = cluster, .release = 2, .replica = replica, .shard = 1};
}

/* Recomputes checksum_body and the seal after a test edited a frame. */
static void
reseal(uint8_t *frame, size_t len)
{
    struct beat_hdr *h = (struct beat_hdr *)frame;
    size_t blen = len - VS_HEADER_SIZE;
    h->f.checksum_body = blen ? vs_body_checksum(frame + VS_HEADER_SIZE, blen)
                              : (struct vs_u128){0, 0};
    vs_frame_seal((struct vs_header *)h);
}

static size_t
three(uint8_t *buf, size_t cap)
{
    struct beat_entry e[3] = {
        {.group = 5,
         .view = 1,
         .kind = BEAT_KIND_COMMIT,
         .commit = 7,
         .op = 9,
         .checksum = {0x5151, 0}},
        {.group = 5,
         .view = 1,
         .kind = BEAT_KIND_ACK,
         .member = 1,
         .commit = 6,
         .op = 8,
         .timestamp = 77},
        {.group = 1ull << 40,
         .view = 3,
         .kind = BEAT_KIND_COMMIT,
         .commit = 11,
         .op = 12},
    };
    struct beat_sender s = sender(2);
    long len = beat_encode(&s, 42, e, 3, buf, cap);
    ck_assert_int_eq(len, 256 + 3 * 64);
    return (size_t)len;
}

START_TEST(test_codec_golden_and_round_trip)
{
    uint8_t buf[512];
    size_t len = three(buf, sizeof(buf));
    uint32_t u32;
    uint64_t u64;
    memcpy(&u32, buf + 48, 4);
    ck_assert_uint_eq(u32, len);
    ck_assert_uint_eq(buf[60], VS_CMD_GROUP_BEAT);
    ck_assert_uint_eq(buf[61], 2);
    memcpy(&u64, buf + 128, 8);
    ck_assert_uint_eq(u64, 42);
    memcpy(&u32, buf + 136, 4);
    ck_assert_uint_eq(u32, 3);
    ck_assert_uint_eq(buf[140] | buf[141] << 8, 64);
    ck_assert_uint_eq(buf[142], 1);
    /* second entry: group 5, view 1, kind ACK, commit 6, op 8 */
    memcpy(&u64, buf + 256 + 64, 8);
    ck_assert_uint_eq(u64, 5);
    memcpy(&u32, buf + 256 + 64 + 8, 4);
    ck_assert_uint_eq(u32, 1);
    ck_assert_uint_eq(buf[256 + 64 + 12], BEAT_KIND_ACK);
    ck_assert_uint_eq(buf[256 + 64 + 13], 1); /* member */
    memcpy(&u64, buf + 256 + 64 + 16, 8);
    ck_assert_uint_eq(u64, 6);
    memcpy(&u64, buf + 256 + 64 + 24, 8);
    ck_assert_uint_eq(u64, 8);
    memcpy(&u64, buf + 256 + 64 + 32, 8);
    ck_assert_uint_eq(u64, 77); /* timestamp */
    memcpy(&u64, buf + 256 + 48, 8);
    ck_assert_uint_eq(u64, 0x5151); /* entry 0's checksum */

    const struct beat_hdr *h;
    const uint8_t *body;
    ck_assert_int_eq(beat_decode(buf, len, &cluster, &h, &body), 0);
    ck_assert_uint_eq(h->count, 3);
    ck_assert_uint_eq(h->seq, 42);
    struct beat_entry e;
    beat_entry_at(body, 2, &e);
    ck_assert_uint_eq(e.group, 1ull << 40);
    ck_assert_uint_eq(e.view, 3);
    ck_assert_uint_eq(e.commit, 11);
    ck_assert_uint_eq(e.op, 12);
    beat_entry_at(body, 1, &e);
    ck_assert_uint_eq(e.member, 1);
    ck_assert_uint_eq(e.timestamp, 77);
    beat_entry_at(body, 0, &e);
    ck_assert_uint_eq(e.checksum.lo, 0x5151);
    /* an empty frame (the keepalive) */
    struct beat_sender s = sender(0);
    ck_assert_int_eq(beat_encode(&s, 1, NULL, 0, buf, sizeof(buf)), 256);
    ck_assert_int_eq(beat_decode(buf, 256, &cluster, &h, &body), 0);
    ck_assert_uint_eq(h->count, 0);
    ck_assert_str_eq(beat_error_name(-BEAT_ERR_ORDER),
                     "repeated or unordered group entry");
}
END_TEST

START_TEST(test_codec_truncated_and_oversized)
{
    uint8_t buf[512];
    size_t len = three(buf, sizeof(buf));
    const struct beat_hdr *h;
    const uint8_t *body;
    /* every truncation length is refused */
    for (size_t n = 0; n < len; n++) {
        int rc = beat_decode(buf, n, &cluster, &h, &body);
        ck_assert_msg(rc == -BEAT_ERR_SHORT || rc == -BEAT_ERR_SIZE,
                      "length %zu: %d", n, rc);
    }
    /* a trailing byte, with the size field and seals made to match */
    uint8_t big[600];
    memcpy(big, buf, len);
    big[len] = 0;
    ((struct beat_hdr *)big)->f.size = (uint32_t)len + 1;
    reseal(big, len + 1);
    ck_assert_int_eq(beat_decode(big, len + 1, &cluster, &h, &body),
                     -BEAT_ERR_SIZE);
    /* a count above the bound, sealed */
    memcpy(big, buf, len);
    ((struct beat_hdr *)big)->count = BEAT_ENTRIES_MAX + 1;
    reseal(big, len);
    ck_assert_int_eq(beat_decode(big, len, &cluster, &h, &body),
                     -BEAT_ERR_COUNT);
    /* a count that disagrees with the size */
    memcpy(big, buf, len);
    ((struct beat_hdr *)big)->count = 2;
    reseal(big, len);
    ck_assert_int_eq(beat_decode(big, len, &cluster, &h, &body),
                     -BEAT_ERR_SIZE);
    /* the encoder's bounds */
    struct beat_sender s = sender(0);
    struct beat_entry e = {.group = 1, .kind = BEAT_KIND_COMMIT};
    ck_assert_int_eq(
        beat_encode(&s, 1, &e, BEAT_ENTRIES_MAX + 1, big, sizeof(big)),
        -EINVAL);
    ck_assert_int_eq(beat_encode(&s, 1, &e, 1, big, 256 + 63), -EINVAL);
    ck_assert_uint_eq(beat_frame_size(BEAT_ENTRIES_MAX), BEAT_FRAME_MAX);
}
END_TEST

START_TEST(test_codec_duplicates_and_damage)
{
    uint8_t buf[512], f[512];
    size_t len = three(buf, sizeof(buf));
    const struct beat_hdr *h;
    const uint8_t *body;
    /* entry 1 becomes a copy of entry 0: a repeated (group, kind) */
    memcpy(f, buf, len);
    memcpy(f + 256 + 64, f + 256, 64);
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body), -BEAT_ERR_ORDER);
    /* entries 1 and 2 swapped: out of order */
    memcpy(f, buf, len);
    memcpy(f + 256 + 64, buf + 256 + 128, 64);
    memcpy(f + 256 + 128, buf + 256 + 64, 64);
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body), -BEAT_ERR_ORDER);
    /* damage under the seal: one header bit, one body bit */
    memcpy(f, buf, len);
    f[130] ^= 1;
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body), -BEAT_ERR_SEAL);
    memcpy(f, buf, len);
    f[300] ^= 0x10;
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body), -BEAT_ERR_BODY);
    /* an unknown kind, a reserved byte, an entry size, a command, a
     * cluster: each resealed so only the check itself can refuse */
    memcpy(f, buf, len);
    f[256 + 12] = 9;
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body), -BEAT_ERR_KIND);
    memcpy(f, buf, len);
    f[256 + 14] = 1;
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_RESERVED);
    memcpy(f, buf, len);
    f[256 + 64 + 44] = 1; /* the second reserved field */
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_RESERVED);
    memcpy(f, buf, len);
    f[200] = 1;
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_RESERVED);
    memcpy(f, buf, len);
    f[70] = 1; /* the common header's reserved_frame */
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_RESERVED);
    memcpy(f, buf, len);
    f[52] = 1; /* view: always 0 (each entry carries its group's) */
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_RESERVED);
    memcpy(f, buf, len);
    ((struct beat_hdr *)f)->entry_size = 16;
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_ENTRY_SIZE);
    /* the previous release's entry size only without entries */
    memcpy(f, buf, len);
    ((struct beat_hdr *)f)->entry_size = BEAT_ENTRY_SIZE_V1;
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_ENTRY_SIZE);
    {
        /* a keepalive is encoded with it (the previous release checks
         * entry_size == 32 exactly) and decodes */
        struct beat_sender ks = sender(0);
        uint8_t ka[VS_HEADER_SIZE];
        long kl = beat_encode(&ks, 7, NULL, 0, ka, sizeof(ka));
        ck_assert_int_eq(kl, VS_HEADER_SIZE);
        ck_assert_uint_eq(((struct beat_hdr *)ka)->entry_size,
                          BEAT_ENTRY_SIZE_V1);
        ck_assert_int_eq(beat_decode(ka, (size_t)kl, &cluster, &h, &body), 0);
        ck_assert_uint_eq(h->count, 0);
        /* this release's size on a keepalive: refused (one encoding) */
        ((struct beat_hdr *)ka)->entry_size = BEAT_ENTRY_SIZE;
        reseal(ka, (size_t)kl);
        ck_assert_int_eq(beat_decode(ka, (size_t)kl, &cluster, &h, &body),
                         -BEAT_ERR_ENTRY_SIZE);
    }
    memcpy(f, buf, len);
    f[60] = VS_CMD_COMMIT;
    reseal(f, len);
    ck_assert_int_eq(beat_decode(f, len, &cluster, &h, &body),
                     -BEAT_ERR_COMMAND);
    struct vs_u128 other = {1, 2};
    ck_assert_int_eq(beat_decode(buf, len, &other, &h, &body),
                     -BEAT_ERR_CLUSTER);
    /* the encoder refuses what the decoder would */
    struct beat_sender s = sender(0);
    struct beat_entry dup[2] = {{.group = 3, .kind = BEAT_KIND_ACK},
                                {.group = 3, .kind = BEAT_KIND_ACK}};
    ck_assert_int_eq(beat_encode(&s, 1, dup, 2, f, sizeof(f)), -EINVAL);
    dup[1].group = 2;
    ck_assert_int_eq(beat_encode(&s, 1, dup, 2, f, sizeof(f)), -EINVAL);
    dup[0].kind = 7;
    ck_assert_int_eq(beat_encode(&s, 1, dup, 1, f, sizeof(f)), -EINVAL);
}
END_TEST

/* ---- pending tables ---- */

struct sink {
    unsigned frames;
    uint64_t entries;
    int refuse; /* emit answers -EAGAIN while set */
    uint64_t last_seq;
    struct beat_entry first, last;
};

static int
sink_emit(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct sink *k = ctx;
    (void)peer;
    if (k->refuse)
        return -EAGAIN;
    const struct beat_hdr *h;
    const uint8_t *body;
    ck_assert_int_eq(beat_decode(frame, len, &cluster, &h, &body), 0);
    ck_assert_uint_eq(h->seq, k->last_seq + 1);
    k->last_seq = h->seq;
    k->frames++;
    k->entries += h->count;
    if (h->count > 0) {
        if (k->frames == 1)
            beat_entry_at(body, 0, &k->first);
        beat_entry_at(body, h->count - 1, &k->last);
    }
    return 0;
}

START_TEST(test_coalesce_latest_wins_and_bounds)
{
    struct coal *c;
    ck_assert_int_eq(coal_create(2, 0, &c), -EINVAL);
    ck_assert_int_eq(coal_create(2, 4, &c), 0);
    struct beat_entry e = {.group = 9, .view = 1, .kind = BEAT_KIND_COMMIT};
    for (uint64_t i = 1; i <= 5; i++) {
        e.commit = i;
        e.op = i + 1;
        ck_assert_int_eq(coal_post(c, 1, &e), 0);
    }
    ck_assert_uint_eq(coal_pending(c, 1), 1);
    ck_assert_uint_eq(coal_pending(c, 0), 0);
    e.kind = 5;
    ck_assert_int_eq(coal_post(c, 1, &e), -EINVAL);
    e.kind = BEAT_KIND_COMMIT;
    ck_assert_int_eq(coal_post(c, 2, &e), -EINVAL);
    for (uint64_t g = 1; g <= 3; g++) {
        struct beat_entry x = {.group = g, .kind = BEAT_KIND_ACK, .op = g};
        ck_assert_int_eq(coal_post(c, 1, &x), 0);
    }
    ck_assert_uint_eq(coal_room(c, 1), 0);
    struct beat_entry y = {.group = 77, .kind = BEAT_KIND_ACK};
    ck_assert_int_eq(coal_post(c, 1, &y), -EAGAIN); /* full: producer told */
    e.commit = 6;
    ck_assert_int_eq(coal_post(c, 1, &e), 0); /* an existing key still fits */

    /* a refused emit keeps everything, the sequence does not move */
    struct sink k = {.refuse = 1};
    struct beat_sender s = sender(0);
    uint64_t seq = 0;
    ck_assert_int_eq(coal_flush(c, 1, &s, &seq, 0, sink_emit, &k), -EAGAIN);
    ck_assert_uint_eq(seq, 0);
    ck_assert_uint_eq(coal_pending(c, 1), 4);
    /* the posts still coalesce after the sort of the refused flush */
    e.commit = 8;
    ck_assert_int_eq(coal_post(c, 1, &e), 0);
    ck_assert_uint_eq(coal_pending(c, 1), 4);
    k.refuse = 0;
    ck_assert_int_eq(coal_flush(c, 1, &s, &seq, 0, sink_emit, &k), 1);
    ck_assert_uint_eq(seq, 1);
    ck_assert_uint_eq(k.entries, 4);
    ck_assert_uint_eq(k.first.group, 1); /* frame order */
    ck_assert_uint_eq(k.last.group, 9);
    ck_assert_uint_eq(k.last.commit, 8); /* the newest post */
    ck_assert_uint_eq(coal_pending(c, 1), 0);
    /* nothing pending: a keepalive only when asked */
    ck_assert_int_eq(coal_flush(c, 1, &s, &seq, 0, sink_emit, &k), 0);
    ck_assert_int_eq(coal_flush(c, 1, &s, &seq, 1, sink_emit, &k), 1);
    ck_assert_uint_eq(k.frames, 2);
    /* a cleared table (link down) forgets */
    ck_assert_int_eq(coal_post(c, 1, &y), 0);
    coal_clear(c, 1);
    ck_assert_uint_eq(coal_pending(c, 1), 0);
    coal_destroy(c);
}
END_TEST

START_TEST(test_coalesce_ten_thousand_groups_one_frame)
{
    struct coal *c;
    ck_assert_int_eq(coal_create(3, 65536, &c), 0);
    struct beat_sender s = sender(0);
    uint64_t seq[3] = {0};
    for (unsigned tick = 0; tick < 5; tick++) {
        /* every group posts three times a tick to each peer */
        for (uint8_t peer = 1; peer < 3; peer++)
            for (unsigned r = 0; r < 3; r++)
                for (uint64_t g = 0; g < GROUPS; g++) {
                    struct beat_entry e = {.group = g * 7919,
                                           .view = tick,
                                           .kind = BEAT_KIND_COMMIT,
                                           .commit = tick * 3 + r,
                                           .op = tick * 3 + r};
                    ck_assert_int_eq(coal_post(c, peer, &e), 0);
                }
        for (uint8_t peer = 1; peer < 3; peer++) {
            struct sink k = {.last_seq = seq[peer]};
            ck_assert_int_eq(
                coal_flush(c, peer, &s, &seq[peer], 0, sink_emit, &k), 1);
            ck_assert_uint_eq(k.frames, 1);
            ck_assert_uint_eq(k.entries, GROUPS);
            ck_assert_uint_eq(k.last.commit, tick * 3 + 2);
        }
    }
    ck_assert_uint_eq(seq[1], 5);
    /* 10,000 groups x both kinds: 20,000 entries = 2 frames (16,384 max);
     * ids spread over all 64 bits (an odd multiplier is a bijection), so
     * every byte of the sort matters: the sink's decode checks the order */
    for (uint64_t g = 0; g < GROUPS; g++) {
        struct beat_entry e = {.group = g * 0x9e3779b97f4a7c15ull,
                               .kind = BEAT_KIND_COMMIT};
        ck_assert_int_eq(coal_post(c, 1, &e), 0);
        e.kind = BEAT_KIND_ACK;
        ck_assert_int_eq(coal_post(c, 1, &e), 0);
    }
    struct sink k = {.last_seq = seq[1]};
    ck_assert_int_eq(coal_flush(c, 1, &s, &seq[1], 0, sink_emit, &k), 2);
    ck_assert_uint_eq(k.entries, 2 * GROUPS);
    coal_destroy(c);
}
END_TEST

/* ---- address plan ---- */

START_TEST(test_plan)
{
    char out[128], err[512];
    ck_assert_int_eq(link_plan_addr("127.0.0.1:9090", 2, 100, out, sizeof(out),
                                    err, sizeof(err)),
                     0);
    ck_assert_str_eq(out, "127.0.0.1:9290");
    ck_assert_int_eq(
        link_plan_addr("[::1]:9090", 1, 7, out, sizeof(out), err, sizeof(err)),
        0);
    ck_assert_str_eq(out, "[::1]:9097");
    ck_assert_int_eq(link_plan_addr("10.0.0.1:9090", 0, 100, out, sizeof(out),
                                    err, sizeof(err)),
                     0);
    ck_assert_str_eq(out, "10.0.0.1:9090");
    /* "any port" stays any port */
    ck_assert_int_eq(link_plan_addr("127.0.0.1:0", 1, 100, out, sizeof(out),
                                    err, sizeof(err)),
                     0);
    ck_assert_str_eq(out, "127.0.0.1:0");
    ck_assert_int_eq(
        link_plan_check("127.0.0.1:0,127.0.0.1:0", 4, 100, err, sizeof(err)),
        0);
    ck_assert_int_eq(link_plan_addr("127.0.0.1:65500", 1, 100, out, sizeof(out),
                                    err, sizeof(err)),
                     -ERANGE);
    ck_assert_ptr_nonnull(strstr(err, "65600"));
    ck_assert_int_eq(
        link_plan_addr("nonsense", 1, 100, out, sizeof(out), err, sizeof(err)),
        -EINVAL);
    ck_assert_int_eq(
        link_plan_addr("h:12x", 1, 100, out, sizeof(out), err, sizeof(err)),
        -EINVAL);
    ck_assert_int_eq(
        link_plan_addr("h:9090", 1, 0, out, sizeof(out), err, sizeof(err)),
        -EINVAL);

    const char *local = "127.0.0.1:9090,127.0.0.1:9091,127.0.0.1:9092";
    ck_assert_int_eq(link_plan_check(local, 2, 100, err, sizeof(err)), 0);
    ck_assert_int_eq(link_plan_check(local, 2, 1, err, sizeof(err)),
                     -EADDRINUSE);
    ck_assert_msg(strstr(err, "replica 0's data shard 1") != NULL &&
                      strstr(err, "replica 1's replica port") != NULL,
                  "%s", err);
    /* the same ports on different hosts do not collide */
    ck_assert_int_eq(
        link_plan_check("10.0.0.1:9090,10.0.0.2:9090", 8, 1, err, sizeof(err)),
        0);
    ck_assert_int_eq(link_plan_check("10.0.0.1:65000,10.0.0.2:9090", 8, 100,
                                     err, sizeof(err)),
                     -ERANGE);
    ck_assert_ptr_nonnull(strstr(err, "entry 0"));
    ck_assert_int_eq(link_plan_check("", 4, 100, err, sizeof(err)), 0);
    ck_assert_int_eq(link_plan_check(local, 2, 0, err, sizeof(err)), -EINVAL);
}
END_TEST

/* ---- meshes over real sockets ---- */

struct node {
    struct mesh *m;
    int listen_fd;
    char addr[64];
    uint8_t secret[32];
    uint8_t shard;
    uint16_t shard_count;
    size_t queue_max;
    uint32_t dead_ticks, entries_max;
    int take_frames; /* an on_frame for other commands */
    /* received */
    unsigned other[NODES];
    unsigned beats[NODES];
    uint64_t entries[NODES];
    uint64_t last_group[NODES], last_commit[NODES];
    int ordered;
    unsigned writable[NODES];
    int ups[NODES], downs[NODES];
};

static struct event_base *base;
static struct node nodes[NODES];

static void
on_beat(void *ctx, uint8_t peer, const struct beat_hdr *h, const uint8_t *body)
{
    struct node *n = ctx;
    n->beats[peer]++;
    n->entries[peer] += h->count;
    for (uint32_t i = 0; i < h->count; i++) {
        struct beat_entry e;
        beat_entry_at(body, i, &e);
        if (i > 0 && e.group <= n->last_group[peer])
            n->ordered = 0;
        n->last_group[peer] = e.group;
        n->last_commit[peer] = e.commit;
    }
}

static void
on_state(void *ctx, uint8_t peer, int up)
{
    struct node *n = ctx;
    if (up)
        n->ups[peer]++;
    else
        n->downs[peer]++;
}

static void
on_other(void *ctx, uint8_t peer, const void *frame, size_t len)
{
    struct node *n = ctx;
    (void)frame;
    (void)len;
    n->other[peer]++;
}

static void
on_writable(void *ctx, uint8_t peer)
{
    struct node *n = ctx;
    n->writable[peer]++;
}

static void
setup(void)
{
    base = event_base_new();
    ck_assert_ptr_nonnull(base);
    memset(nodes, 0, sizeof(nodes));
    for (int i = 0; i < NODES; i++) {
        struct node *n = &nodes[i];
        n->listen_fd = link_listen_any(n->addr, sizeof(n->addr));
        memset(n->secret, 0x6b, sizeof(n->secret));
        n->shard = 1;
        n->shard_count = 2;
        n->ordered = 1;
    }
}

static void
teardown(void)
{
    for (int i = 0; i < NODES; i++) {
        if (nodes[i].m != NULL)
            mesh_destroy(nodes[i].m);
        else if (nodes[i].listen_fd >= 0)
            close(nodes[i].listen_fd);
    }
    event_base_free(base);
}

static void
node_start(int i)
{
    struct node *n = &nodes[i];
    struct mesh_opts o;
    char err[256];
    memset(&o, 0, sizeof(o));
    o.links.self = (uint8_t)i;
    o.links.count = NODES;
    for (int j = 0; j < NODES; j++)
        o.links.addrs[j] = nodes[j].addr;
    o.links.cluster = cluster;
    memcpy(o.links.secret, n->secret, sizeof(o.links.secret));
    o.links.release_min = o.links.release_max = 2;
    o.links.queue_max = n->queue_max;
    o.links.shard = n->shard;
    o.links.shard_count = n->shard_count;
    o.tick_ms = 3600u * 1000u; /* the test ticks by hand */
    o.keepalive_ticks = 1000;
    o.dead_ticks = n->dead_ticks;
    o.entries_max = n->entries_max;
    o.on_beat = on_beat;
    o.on_state = on_state;
    o.on_writable = on_writable;
    o.on_frame = n->take_frames ? on_other : NULL;
    o.ctx = n;
    ck_assert_msg(
        mesh_create(base, &o, n->listen_fd, &n->m, err, sizeof(err)) == 0, "%s",
        err);
}

static void
spin(void)
{
    link_spin(base);
}

static int
wait_up(int a, int b)
{
    for (int r = 0; r < WAIT_ROUNDS; r++) {
        if (mesh_up(nodes[a].m, (uint8_t)b) && mesh_up(nodes[b].m, (uint8_t)a))
            return 1;
        spin();
    }
    return 0;
}

START_TEST(test_mesh_ten_thousand_groups_one_frame_per_tick)
{
    for (int i = 0; i < NODES; i++)
        node_start(i);
    ck_assert(wait_up(0, 1));
    ck_assert(wait_up(0, 2));
    ck_assert(wait_up(1, 2));
    ck_assert_uint_eq(mesh_up_count(nodes[0].m), 2);
    for (unsigned tick = 1; tick <= 5; tick++) {
        for (uint8_t peer = 1; peer < NODES; peer++)
            for (unsigned r = 0; r < 2; r++)
                for (uint64_t g = 0; g < GROUPS; g++) {
                    struct beat_entry e = {.group = GROUPS - g,
                                           .view = 1,
                                           .kind = BEAT_KIND_COMMIT,
                                           .commit = tick * 10 + r,
                                           .op = tick * 10 + r};
                    ck_assert_int_eq(mesh_post(nodes[0].m, peer, &e), 0);
                }
        mesh_tick(nodes[0].m);
        for (int r = 0; r < WAIT_ROUNDS &&
                        (nodes[1].beats[0] < tick || nodes[2].beats[0] < tick);
             r++)
            spin();
        for (int p = 1; p < NODES; p++) {
            ck_assert_uint_eq(nodes[p].beats[0], tick); /* one per tick */
            ck_assert_uint_eq(nodes[p].entries[0], (uint64_t)tick * GROUPS);
            ck_assert_uint_eq(nodes[p].last_group[0], GROUPS);
            ck_assert_uint_eq(nodes[p].last_commit[0], tick * 10 + 1);
        }
    }
    for (uint8_t p = 1; p < NODES; p++) {
        struct mesh_peer_info in;
        mesh_peer(nodes[0].m, p, &in);
        ck_assert_uint_eq(in.beats_out, 5);
        ck_assert_uint_eq(in.entries_out, 5 * GROUPS);
        ck_assert_uint_eq(in.pending, 0);
        ck_assert_uint_eq(in.link.frames_out, 5);
        mesh_peer(nodes[p].m, 0, &in);
        ck_assert_uint_eq(in.beats_in, 5);
        ck_assert_uint_eq(in.link.frames_in, 5);
        ck_assert_uint_eq(in.bad_frames, 0);
    }
    ck_assert(nodes[1].ordered && nodes[2].ordered);
    /* argument errors */
    struct beat_entry e = {.group = 1, .kind = BEAT_KIND_ACK};
    ck_assert_int_eq(mesh_post(nodes[0].m, 0, &e), -EINVAL);
    ck_assert_int_eq(mesh_post(nodes[0].m, 9, &e), -EINVAL);
}
END_TEST

/* mesh_flush sends what is pending now, between ticks, and nothing
 * when nothing is (no keepalive of its own) */
START_TEST(test_mesh_flush_between_ticks)
{
    for (int i = 0; i < NODES; i++)
        node_start(i);
    ck_assert(wait_up(0, 1));
    ck_assert(wait_up(0, 2));
    mesh_flush(nodes[0].m);
    for (int r = 0; r < 20; r++)
        spin();
    ck_assert_uint_eq(nodes[1].beats[0], 0);
    struct beat_entry e = {.group = 9,
                           .view = 2,
                           .kind = BEAT_KIND_COMMIT,
                           .member = 1,
                           .commit = 5,
                           .timestamp = 3};
    ck_assert_int_eq(mesh_post(nodes[0].m, 1, &e), 0);
    mesh_flush(nodes[0].m);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].beats[0] < 1; r++)
        spin();
    ck_assert_uint_eq(nodes[1].beats[0], 1);
    ck_assert_uint_eq(nodes[1].entries[0], 1);
    ck_assert_uint_eq(nodes[1].last_commit[0], 5);
    ck_assert_uint_eq(nodes[2].beats[0], 0); /* nothing was pending */
    struct mesh_peer_info in;
    mesh_peer(nodes[0].m, 1, &in);
    ck_assert_uint_eq(in.pending, 0);
}
END_TEST

/* node 2 differs in one way: 0-1 link, 2 links with nobody */
static void
check_refused(void)
{
    for (int i = 0; i < NODES; i++)
        node_start(i);
    ck_assert(wait_up(0, 1));
    for (int r = 0; r < 100; r++)
        spin();
    ck_assert(!mesh_up(nodes[0].m, 2));
    ck_assert(!mesh_up(nodes[1].m, 2));
    ck_assert_int_eq(nodes[2].ups[0] + nodes[2].ups[1], 0);
    struct beat_entry e = {.group = 1, .kind = BEAT_KIND_ACK};
    ck_assert_int_eq(mesh_post(nodes[0].m, 2, &e), -ENOTCONN);
}

static void
check_reason(const char *why_part)
{
    struct mesh_peer_info in;
    mesh_peer(nodes[0].m, 2, &in); /* 0 dials 2 */
    ck_assert_uint_gt(in.link.refusals, 0);
    ck_assert_msg(strstr(in.link.last_error, why_part) != NULL,
                  "last_error '%s' lacks '%s'", in.link.last_error, why_part);
}

START_TEST(test_mesh_refuses_another_shard)
{
    nodes[2].shard = 2;
    check_refused();
    check_reason("shard index differs");
}
END_TEST

START_TEST(test_mesh_refuses_another_shard_count)
{
    nodes[2].shard_count = 3;
    check_refused();
    check_reason("data shard count");
}
END_TEST

START_TEST(test_mesh_refuses_wrong_secret)
{
    memset(nodes[2].secret, 0x11, sizeof(nodes[2].secret));
    check_refused();
    check_reason("MAC");
}
END_TEST

START_TEST(test_mesh_argument_errors)
{
    struct mesh_opts o;
    struct mesh *m = NULL;
    char err[256];
    memset(&o, 0, sizeof(o));
    o.links.self = 0;
    o.links.count = 2;
    o.links.release_min = o.links.release_max = 2;
    ck_assert_int_eq(mesh_create(base, &o, -1, &m, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not a data mesh"));
    o.links.shard = 3;
    o.links.shard_count = 2;
    o.links.addrs[1] = nodes[1].addr;
    ck_assert_int_eq(mesh_create(base, &o, -1, &m, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "out of range"));
    o.links.shard = 1;
    o.links.frame_max = 4096;
    ck_assert_int_eq(mesh_create(base, &o, -1, &m, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "frame_max"));
    ck_assert_ptr_null(m);
}
END_TEST

static void
ping_frame(uint8_t *buf, size_t len, uint8_t from)
{
    memset(buf, 0x5c, len);
    struct vs_header *h = (struct vs_header *)buf;
    memset(h, 0, sizeof(*h));
    h->f.size = (uint32_t)len;
    h->f.command = VS_CMD_PING;
    h->f.replica = from;
}

START_TEST(test_mesh_back_pressure)
{
    nodes[0].queue_max = 4096;
    nodes[0].entries_max = 4;
    nodes[1].take_frames = 1;
    node_start(0);
    node_start(1);
    ck_assert(wait_up(0, 1));
    uint8_t buf[1024];
    ping_frame(buf, sizeof(buf), 0);
    int ok = 0, again = 0;
    /* the loop does not run: nothing leaves, the fifth frame waits */
    for (int i = 0; i < 8; i++) {
        int rc = mesh_send(nodes[0].m, 1, buf, sizeof(buf));
        if (rc == 0)
            ok++;
        else if (rc == -EAGAIN)
            again++;
    }
    ck_assert_int_eq(ok, 4);
    ck_assert_int_eq(again, 4);
    struct mesh_peer_info in;
    mesh_peer(nodes[0].m, 1, &in);
    ck_assert_uint_eq(in.link.blocked, 4);
    ck_assert_uint_eq(in.link.dropped, 0);
    ck_assert(!links_can_send(mesh_links(nodes[0].m), 1, sizeof(buf)));
    /* the pending table is bounded too */
    for (uint64_t g = 0; g < 4; g++) {
        struct beat_entry e = {.group = g, .kind = BEAT_KIND_COMMIT};
        ck_assert_int_eq(mesh_post(nodes[0].m, 1, &e), 0);
    }
    struct beat_entry e = {.group = 99, .kind = BEAT_KIND_COMMIT};
    ck_assert_int_eq(mesh_post(nodes[0].m, 1, &e), -EAGAIN);
    /* a tick while the queue is full: the beat stays pending */
    mesh_tick(nodes[0].m);
    mesh_peer(nodes[0].m, 1, &in);
    ck_assert_uint_eq(in.pending, 4);
    ck_assert_uint_eq(in.beats_out, 0);
    ck_assert_uint_eq(in.post_refused, 1);
    /* the link drains: the waiting beat leaves, the producer is told */
    for (int r = 0; r < WAIT_ROUNDS && nodes[0].writable[1] == 0; r++)
        spin();
    ck_assert_uint_eq(nodes[0].writable[1], 1);
    mesh_peer(nodes[0].m, 1, &in);
    ck_assert_uint_eq(in.pending, 0);
    ck_assert_uint_eq(in.beats_out, 1);
    ck_assert(links_can_send(mesh_links(nodes[0].m), 1, sizeof(buf)));
    ck_assert_int_eq(mesh_post(nodes[0].m, 1, &e), 0);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].beats[0] == 0; r++)
        spin();
    ck_assert_uint_eq(nodes[1].other[0], 4); /* nothing lost, in order */
    ck_assert_uint_eq(nodes[1].beats[0], 1);
    ck_assert_uint_eq(nodes[1].entries[0], 4);
}
END_TEST

START_TEST(test_mesh_bad_beats_end_the_link)
{
    node_start(0);
    node_start(1);
    ck_assert(wait_up(0, 1));
    /* a beat out of sequence (seq 7 on a new link) */
    uint8_t buf[512];
    struct beat_sender s = sender(0);
    struct beat_entry e = {.group = 4, .kind = BEAT_KIND_ACK, .op = 1};
    long len = beat_encode(&s, 7, &e, 1, buf, sizeof(buf));
    ck_assert_int_gt(len, 0);
    ck_assert_int_eq(mesh_send(nodes[0].m, 1, buf, (size_t)len), 0);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].downs[0] == 0; r++)
        spin();
    struct mesh_peer_info in;
    mesh_peer(nodes[1].m, 0, &in);
    ck_assert_uint_eq(in.bad_frames, 1);
    ck_assert_uint_eq(nodes[1].beats[0], 0);
    ck_assert_msg(strstr(in.link.last_error, "out of sequence") != NULL, "%s",
                  in.link.last_error);
    ck_assert(wait_up(0, 1));
    /* a damaged beat: body bit flipped after sealing */
    len = beat_encode(&s, 1, &e, 1, buf, sizeof(buf));
    buf[260] ^= 1;
    ck_assert_int_eq(mesh_send(nodes[0].m, 1, buf, (size_t)len), 0);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].downs[0] < 2; r++)
        spin();
    mesh_peer(nodes[1].m, 0, &in);
    ck_assert_uint_eq(in.bad_frames, 2);
    ck_assert_msg(strstr(in.link.last_error, "body checksum") != NULL, "%s",
                  in.link.last_error);
    ck_assert(wait_up(0, 1));
    /* another command, and node 1 has no on_frame: the link ends */
    ping_frame(buf, 300, 0);
    ck_assert_int_eq(mesh_send(nodes[0].m, 1, buf, 300), 0);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].downs[0] < 3; r++)
        spin();
    mesh_peer(nodes[1].m, 0, &in);
    ck_assert_uint_eq(in.bad_frames, 3);
    ck_assert_msg(strstr(in.link.last_error, "unexpected command") != NULL,
                  "%s", in.link.last_error);
    ck_assert(wait_up(0, 1));
    /* a good one after the reconnect: sequence 1 again */
    ck_assert_int_eq(mesh_post(nodes[0].m, 1, &e), 0);
    mesh_tick(nodes[0].m);
    for (int r = 0; r < WAIT_ROUNDS && nodes[1].beats[0] == 0; r++)
        spin();
    ck_assert_uint_eq(nodes[1].beats[0], 1);
    ck_assert_uint_eq(nodes[1].entries[0], 1);
}
END_TEST

START_TEST(test_mesh_silent_peer_dropped)
{
    nodes[1].dead_ticks = 3;
    node_start(0);
    node_start(1);
    ck_assert(wait_up(0, 1));
    /* node 0 never ticks, so it sends nothing: after 3 of node 1's ticks
     * node 1 drops the link */
    mesh_tick(nodes[1].m);
    mesh_tick(nodes[1].m);
    ck_assert(mesh_up(nodes[1].m, 0));
    mesh_tick(nodes[1].m);
    ck_assert(!mesh_up(nodes[1].m, 0));
    struct mesh_peer_info in;
    mesh_peer(nodes[1].m, 0, &in);
    ck_assert_msg(strstr(in.link.last_error, "no frame from the peer") != NULL,
                  "%s", in.link.last_error);
    /* the dialer comes back */
    ck_assert(wait_up(0, 1));
}
END_TEST

static Suite *
dlinks_suite(void)
{
    Suite *s = suite_create("dlinks");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, test_codec_golden_and_round_trip);
    tcase_add_test(tc, test_codec_truncated_and_oversized);
    tcase_add_test(tc, test_codec_duplicates_and_damage);
    tcase_add_test(tc, test_coalesce_latest_wins_and_bounds);
    tcase_add_test(tc, test_coalesce_ten_thousand_groups_one_frame);
    tcase_add_test(tc, test_plan);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("mesh");
    tcase_add_checked_fixture(tm, setup, teardown);
    tcase_set_timeout(tm, 60);
    tcase_add_test(tm, test_mesh_ten_thousand_groups_one_frame_per_tick);
    tcase_add_test(tm, test_mesh_flush_between_ticks);
    tcase_add_test(tm, test_mesh_refuses_another_shard);
    tcase_add_test(tm, test_mesh_refuses_another_shard_count);
    tcase_add_test(tm, test_mesh_refuses_wrong_secret);
    tcase_add_test(tm, test_mesh_argument_errors);
    tcase_add_test(tm, test_mesh_back_pressure);
    tcase_add_test(tm, test_mesh_bad_beats_end_the_link);
    tcase_add_test(tm, test_mesh_silent_peer_dropped);
    suite_add_tcase(s, tm);
    return s;
}

int
main(void)
{
    SRunner *r = srunner_create(dlinks_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
