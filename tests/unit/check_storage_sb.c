/*
 * tests/unit/check_storage_sb.c - VsrState layout, superblock record
 * framing, read verdicts (every bit flip, every slot combination),
 * degraded stores, write faults and crashed writes.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard/storage/superblock.h"
#include "shard/storage/vsr_state.h"
#include "storage_testutil.h"

static struct vs_vsr_state
golden_state(void)
{
    struct vs_vsr_state s = {
        .cluster = {.lo = 0x0807060504030201ull, .hi = 0x100f0e0d0c0b0a09ull},
        .replica_id = 2,
        .replica_count = 3,
        .view = 0x14131211u,
        .log_view = 0x14131210u,
        .commit_max = 0x1c1b1a1918171615ull,
        .checkpoint_op = 0x2423222120191817ull,
        .checkpoint_checksum = {.lo = 0x3130292827262524ull,
                                .hi = 0x3938373635343332ull},
        .offset_frontier = 0x4140393837363534ull,
        .faulty_op = 0x4948474645444342ull,
        .nonack_op = 0x4948474645444341ull, /* <= faulty_op */
    };
    return s;
}

START_TEST(test_vsr_state_golden)
{
    static const uint8_t want[VSR_STATE_V1_SIZE + 8] = {
        /* 0 cluster */
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
        0x0d, 0x0e, 0x0f, 0x10,
        /* 16 replica_id, 17 replica_count */
        0x02, 0x03,
        /* 18 view */
        0x11, 0x12, 0x13, 0x14,
        /* 22 log_view */
        0x10, 0x12, 0x13, 0x14,
        /* 26 commit_max */
        0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c,
        /* 34 checkpoint_op */
        0x17, 0x18, 0x19, 0x20, 0x21, 0x22, 0x23, 0x24,
        /* 42 checkpoint_checksum */
        0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35,
        0x36, 0x37, 0x38, 0x39,
        /* 58 offset_frontier */
        0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x40, 0x41,
        /* 66 faulty_op (version 2) */
        0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49};
    /* 74..330 checkpoint_prepare: zero = not recorded */
    /* 330 nonack_op (version 3) */
    static const uint8_t want_nonack[8] = {0x41, 0x43, 0x44, 0x45,
                                           0x46, 0x47, 0x48, 0x49};
    _Static_assert(VSR_STATE_SIZE == 594, "VsrState v4 is 594 bytes");
    _Static_assert(VSR_STATE_VERSION == 4, "this release writes v4");
    struct vs_vsr_state s = golden_state();
    uint8_t out[VSR_STATE_SIZE];
    vsr_state_encode(&s, out);
    ck_assert_int_eq(memcmp(out, want, sizeof(want)), 0);
    for (size_t i = sizeof(want); i < VSR_STATE_V2_SIZE; i++)
        ck_assert_uint_eq(out[i], 0);
    ck_assert_int_eq(memcmp(out + VSR_STATE_V2_SIZE, want_nonack, 8), 0);
    /* 338..594 faulty_prepare (version 4): zero = none */
    for (size_t i = VSR_STATE_V3_SIZE; i < VSR_STATE_V4_SIZE; i++)
        ck_assert_uint_eq(out[i], 0);
    struct vs_vsr_state d;
    ck_assert_int_eq(vsr_state_decode(4, out, sizeof(out), &d, NULL, 0),
                     VSR_STATE_OK);
    ck_assert_uint_eq(d.faulty_op, s.faulty_op);
    ck_assert_uint_eq(d.nonack_op, s.nonack_op);
    ck_assert(!vsr_state_has_checkpoint_prepare(&d));
    ck_assert(!vsr_state_has_faulty_prepare(&d));
    /* version 3: the first 338 bytes, no faulty prepare */
    memset(&d, 0xee, sizeof(d));
    ck_assert_int_eq(vsr_state_decode(3, out, VSR_STATE_V3_SIZE, &d, NULL, 0),
                     VSR_STATE_OK);
    ck_assert_uint_eq(d.nonack_op, s.nonack_op);
    ck_assert(!vsr_state_has_faulty_prepare(&d));
    /* version 2: the first 330 bytes; one mark for both meanings, so the
     * whole range reads as never nacked */
    memset(&d, 0xee, sizeof(d));
    ck_assert_int_eq(vsr_state_decode(2, out, VSR_STATE_V2_SIZE, &d, NULL, 0),
                     VSR_STATE_OK);
    ck_assert_uint_eq(d.faulty_op, s.faulty_op);
    ck_assert_uint_eq(d.nonack_op, s.faulty_op);
    ck_assert(!vsr_state_has_checkpoint_prepare(&d));
    ck_assert_uint_eq(d.view, s.view);
    /* version 1: the first 66 bytes, faulty_op reads as 0 */
    memset(&d, 0xee, sizeof(d));
    ck_assert_int_eq(vsr_state_decode(1, want, VSR_STATE_V1_SIZE, &d, NULL, 0),
                     VSR_STATE_OK);
    ck_assert_uint_eq(d.faulty_op, 0);
    ck_assert_uint_eq(d.nonack_op, 0);
    ck_assert(!vsr_state_has_checkpoint_prepare(&d));
    ck_assert(memcmp(&d.cluster, &s.cluster, 16) == 0);
    ck_assert_uint_eq(d.replica_id, 2);
    ck_assert_uint_eq(d.replica_count, 3);
    ck_assert_uint_eq(d.view, s.view);
    ck_assert_uint_eq(d.log_view, s.log_view);
    ck_assert_uint_eq(d.commit_max, s.commit_max);
    ck_assert_uint_eq(d.checkpoint_op, s.checkpoint_op);
    ck_assert(vs_u128_eq(d.checkpoint_checksum, s.checkpoint_checksum));
    ck_assert_uint_eq(d.offset_frontier, s.offset_frontier);

    /* a recorded checkpoint prepare: the header bytes verbatim at 74 */
    uint8_t body[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tu_prepare(&s.checkpoint_prepare, body, sizeof(body), s.checkpoint_op,
               (struct vs_u128){5, 6}, VS_WIRE_FORMAT_VERSION);
    vsr_state_encode(&s, out);
    ck_assert_int_eq(memcmp(out, want, sizeof(want)), 0);
    ck_assert_int_eq(memcmp(out + 74, &s.checkpoint_prepare, 256), 0);
    ck_assert_int_eq(vsr_state_decode(4, out, sizeof(out), &d, NULL, 0),
                     VSR_STATE_OK);
    ck_assert(vsr_state_has_checkpoint_prepare(&d));
    ck_assert_int_eq(memcmp(&d.checkpoint_prepare, &s.checkpoint_prepare, 256),
                     0);

    /* a recorded faulty prepare: the header bytes verbatim at 338, a
     * version 3 prefix of the same bytes reads without it */
    s.faulty_op = 40;
    s.nonack_op = 40;
    tu_prepare(&s.faulty_prepare, body, sizeof(body), 38,
               (struct vs_u128){7, 8}, VS_WIRE_FORMAT_VERSION);
    vsr_state_encode(&s, out);
    ck_assert_int_eq(memcmp(out + 338, &s.faulty_prepare, 256), 0);
    ck_assert_int_eq(vsr_state_decode(4, out, sizeof(out), &d, NULL, 0),
                     VSR_STATE_OK);
    ck_assert(vsr_state_has_faulty_prepare(&d));
    ck_assert_int_eq(memcmp(&d.faulty_prepare, &s.faulty_prepare, 256), 0);
    ck_assert_int_eq(vsr_state_decode(3, out, VSR_STATE_V3_SIZE, &d, NULL, 0),
                     VSR_STATE_OK);
    ck_assert(!vsr_state_has_faulty_prepare(&d));
}
END_TEST

START_TEST(test_vsr_state_refusals)
{
    struct vs_vsr_state s = golden_state(), d;
    uint8_t buf[VSR_STATE_SIZE + 1];
    char why[160];
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(5, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_UNKNOWN_VERSION);
    ck_assert_ptr_nonnull(strstr(why, "version 5"));
    ck_assert_int_eq(vsr_state_decode(1, buf, 58, &d, why, sizeof(why)),
                     VSR_STATE_BAD_LENGTH);
    ck_assert_int_eq(
        vsr_state_decode(1, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_LENGTH);
    ck_assert_int_eq(
        vsr_state_decode(2, buf, VSR_STATE_V1_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_LENGTH);
    ck_assert_int_eq(
        vsr_state_decode(2, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_LENGTH);
    ck_assert_int_eq(
        vsr_state_decode(3, buf, VSR_STATE_V2_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_LENGTH);
    ck_assert_int_eq(
        vsr_state_decode(3, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_LENGTH);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_V3_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_LENGTH);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE + 1, &d, why, sizeof(why)),
        VSR_STATE_BAD_LENGTH);
    /* version 3: the never-nacked top above the faulty range's top */
    s.nonack_op = s.faulty_op + 1;
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_FAULTY_RANGE);
    ck_assert_ptr_nonnull(strstr(why, "never-nacked"));
    s = golden_state();
    /* a recorded checkpoint prepare that does not verify, or is not the
     * checkpoint op's */
    uint8_t body[4] = {9, 9, 9, 9};
    tu_prepare(&s.checkpoint_prepare, body, sizeof(body), s.checkpoint_op,
               (struct vs_u128){1, 0}, VS_WIRE_FORMAT_VERSION);
    s.checkpoint_prepare.timestamp ^= 1;
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_CHECKPOINT_PREPARE);
    tu_prepare(&s.checkpoint_prepare, body, sizeof(body), s.checkpoint_op + 1,
               (struct vs_u128){1, 0}, VS_WIRE_FORMAT_VERSION);
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_CHECKPOINT_PREPARE);
    /* version 4: a recorded faulty prepare that does not verify, is not
     * a prepare, or lies above the faulty range's top */
    s = golden_state();
    s.faulty_op = 40;
    s.nonack_op = 40;
    tu_prepare(&s.faulty_prepare, body, sizeof(body), 40,
               (struct vs_u128){1, 0}, VS_WIRE_FORMAT_VERSION);
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_OK);
    s.faulty_prepare.timestamp ^= 1;
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_FAULTY_PREPARE);
    ck_assert_ptr_nonnull(strstr(why, "faulty prepare"));
    tu_prepare(&s.faulty_prepare, body, sizeof(body), 41,
               (struct vs_u128){1, 0}, VS_WIRE_FORMAT_VERSION);
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_FAULTY_PREPARE);
    tu_prepare(&s.faulty_prepare, body, sizeof(body), 40,
               (struct vs_u128){1, 0}, VS_WIRE_FORMAT_VERSION);
    s.faulty_prepare.f.command = VS_CMD_REPAIR_PREPARE;
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_FAULTY_PREPARE);
    s = golden_state();
    s.log_view = s.view + 1;
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_LOG_VIEW_AHEAD);
    s = golden_state();
    s.replica_id = 3;
    vsr_state_encode(&s, buf);
    ck_assert_int_eq(
        vsr_state_decode(4, buf, VSR_STATE_SIZE, &d, why, sizeof(why)),
        VSR_STATE_BAD_REPLICA);
}
END_TEST

START_TEST(test_record_golden)
{
    uint8_t rec[SB_RECORD_MAX];
    size_t n = sb_record_encode(1, 0x0102030405060708ull, "abc", 3, rec);
    ck_assert_uint_eq(n, 39);
    static const uint8_t head[31] = {
        'S', 'B', 'L', 'K', 1, 0, 0, 0, 8, 7, 6, 5, 4,   3,   2,  1,
        0,   0,   0,   0,   0, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c'};
    ck_assert_int_eq(memcmp(rec, head, sizeof(head)), 0);
    uint64_t want = vs_xxh3_64(rec, 31), got = 0;
    for (int i = 7; i >= 0; i--)
        got = (got << 8) | rec[31 + i];
    ck_assert_uint_eq(got, want);
    ck_assert_uint_eq(sb_record_encode(1, 1, rec, SB_PAYLOAD_MAX + 1, rec), 0);
}
END_TEST

static void
payload_for(uint64_t seq, uint8_t out[VSR_STATE_SIZE])
{
    struct vs_vsr_state s = tu_state((uint32_t)seq, 0, (struct vs_u128){0, 0});
    vsr_state_encode(&s, out);
}

START_TEST(test_write_alternates)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct vs_sio io;
    sio_init_real(&io);
    struct sb_store st;
    struct sb_read r;
    ck_assert_int_eq(sb_open(&st, &io, dir, &r), 0);
    ck_assert_int_eq(r.verdict, SB_EMPTY);
    ck_assert(sb_store_writable(&st));
    for (uint64_t seq = 1; seq <= 5; seq++) {
        uint8_t p[VSR_STATE_SIZE];
        payload_for(seq, p);
        ck_assert_int_eq(sb_write(&st, p, sizeof(p)), 0);
        ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
        ck_assert_int_eq(r.verdict, SB_PRESENT);
        ck_assert_uint_eq(r.sequence, seq);
        ck_assert_int_eq(r.newest, (int)((seq - 1) % 2)); /* a, b, a, ... */
        ck_assert_uint_eq(r.payload_len, VSR_STATE_SIZE);
        ck_assert_int_eq(memcmp(r.payload, p, sizeof(p)), 0);
    }
    /* reopen continues the sequence into the other slot */
    ck_assert_int_eq(sb_open(&st, &io, dir, NULL), 0);
    ck_assert_int_eq(sb_write(&st, "x", 1), 0);
    ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
    ck_assert_uint_eq(r.sequence, 6);
    ck_assert_int_eq(r.newest, 1);
    ck_assert_int_eq(sb_write(&st, r.payload, SB_PAYLOAD_MAX + 1), -EINVAL);
    tu_rm_rf(dir);
}
END_TEST

/* Writes slots a (seq sa) and b (seq sb) with sb_record_encode; 0 means
 * absent. Returns the record length of slot a. */
static size_t
put_slots(const char *dir, uint64_t sa, uint64_t sb)
{
    uint8_t rec[SB_RECORD_MAX], p[VSR_STATE_SIZE];
    size_t n = 0;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SUPERBLOCK_A);
    remove(path);
    snprintf(path, sizeof(path), "%s/%s", dir, VS_SUPERBLOCK_B);
    remove(path);
    if (sa) {
        payload_for(sa, p);
        n = sb_record_encode(SB_VERSION, sa, p, sizeof(p), rec);
        tu_write_file(dir, VS_SUPERBLOCK_A, rec, n);
    }
    if (sb) {
        payload_for(sb, p);
        size_t m = sb_record_encode(SB_VERSION, sb, p, sizeof(p), rec);
        tu_write_file(dir, VS_SUPERBLOCK_B, rec, m);
    }
    return n;
}

/* Every single-bit flip at every byte offset of a slot -> UNREADABLE,
 * the store is degraded, a write is refused and the evidence untouched.
 * Scenarios: the only slot (a at 1); the newest of two; the older one. */
START_TEST(test_every_bit_flip)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct vs_sio io;
    sio_init_real(&io);
    struct {
        uint64_t sa, sb;
        int flip_slot;
    } sc[] = {{1, 0, 0}, {3, 2, 0}, {3, 2, 1}};
    static struct sb_read r;
    unsigned flips = 0;
    for (size_t k = 0; k < sizeof(sc) / sizeof(sc[0]); k++) {
        size_t n = put_slots(dir, sc[k].sa, sc[k].sb);
        ck_assert_uint_eq(n, SB_HEADER_SIZE + VSR_STATE_SIZE + 8);
        const char *name = sb_slot_name(sc[k].flip_slot);
        size_t len;
        uint8_t *orig = tu_read_file(dir, name, &len);
        ck_assert_uint_eq(len, n);
        for (size_t byte = 0; byte < len; byte++) {
            for (int bit = 0; bit < 8; bit++) {
                orig[byte] ^= (uint8_t)(1u << bit);
                tu_write_file(dir, name, orig, len);
                orig[byte] ^= (uint8_t)(1u << bit);
                ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
                if (r.verdict != SB_UNREADABLE)
                    ck_abort_msg("scenario %zu byte %zu bit %d: verdict %s", k,
                                 byte, bit, sb_verdict_name(r.verdict));
                /* the checksum is verified before the version is read:
                 * a flip in the version field is corruption too */
                ck_assert_int_eq(r.slot[sc[k].flip_slot].state,
                                 SB_SLOT_CORRUPT);
                ck_assert_ptr_nonnull(strstr(r.reason, name));
                flips++;
            }
        }
        /* degraded: a write never stamps over the evidence */
        orig[len - 1] ^= 1;
        tu_write_file(dir, name, orig, len);
        struct sb_store st;
        ck_assert_int_eq(sb_open(&st, &io, dir, NULL), 0);
        ck_assert(!sb_store_writable(&st));
        ck_assert_int_eq(sb_write(&st, "x", 1), -EROFS);
        size_t len2;
        uint8_t *after = tu_read_file(dir, name, &len2);
        ck_assert_uint_eq(len2, len);
        ck_assert_int_eq(memcmp(after, orig, len), 0);
        free(after);
        free(orig);
    }
    ck_assert_uint_eq(flips, 3 * (36 + VSR_STATE_SIZE) * 8);
    tu_rm_rf(dir);
}
END_TEST

enum combo { C_ABSENT, C_OLD, C_NEW, C_CORRUPT, C_UNKNOWN, C_COUNT };

static void
put_combo_slot(const char *dir, int slot, enum combo c)
{
    const char *name = sb_slot_name(slot);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    remove(path);
    uint8_t rec[SB_RECORD_MAX], p[VSR_STATE_SIZE];
    size_t n;
    switch (c) {
    case C_ABSENT:
        return;
    case C_OLD:
    case C_NEW:
    case C_CORRUPT:
        payload_for(c == C_NEW ? 2 : 1, p);
        n = sb_record_encode(SB_VERSION, c == C_NEW ? 2 : 1, p, sizeof(p), rec);
        if (c == C_CORRUPT)
            rec[40] ^= 0x10;
        break;
    default: /* unknown version: a clean record of the next version */
        payload_for(2, p);
        n = sb_record_encode(SB_VERSION + 1, 2, p, sizeof(p), rec);
        break;
    }
    tu_write_file(dir, name, rec, n);
}

/* The documented verdict of every combination of the two slots. */
START_TEST(test_slot_combinations)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    struct vs_sio io;
    sio_init_real(&io);
    static struct sb_read r;
    for (int a = 0; a < C_COUNT; a++) {
        for (int b = 0; b < C_COUNT; b++) {
            put_combo_slot(dir, 0, (enum combo)a);
            put_combo_slot(dir, 1, (enum combo)b);
            ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
            enum sb_verdict want;
            int newest = -1;
            uint64_t seq = 0;
            if (a >= C_CORRUPT || b >= C_CORRUPT)
                want = SB_UNREADABLE; /* even beside a valid slot */
            else if (a == C_ABSENT && b == C_ABSENT)
                want = SB_EMPTY;
            else if (a == C_OLD && b == C_ABSENT)
                want = SB_PRESENT, newest = 0, seq = 1; /* first write */
            else if (a == C_ABSENT || b == C_ABSENT)
                want = SB_UNREADABLE; /* a lost slot file */
            else if (a == b)
                want = SB_UNREADABLE; /* same sequence: a fork */
            else
                want = SB_PRESENT, newest = a == C_NEW ? 0 : 1, seq = 2;
            if (r.verdict != want)
                ck_abort_msg("a=%d b=%d: verdict %s, want %s (%s)", a, b,
                             sb_verdict_name(r.verdict), sb_verdict_name(want),
                             r.reason);
            if (want == SB_PRESENT) {
                ck_assert_int_eq(r.newest, newest);
                ck_assert_uint_eq(r.sequence, seq);
            }
            if (a == C_UNKNOWN)
                ck_assert_int_eq(r.slot[0].state, SB_SLOT_UNKNOWN_VERSION);
            if (a == C_CORRUPT)
                ck_assert_int_eq(r.slot[0].state, SB_SLOT_CORRUPT);
            struct sb_store st;
            ck_assert_int_eq(sb_open(&st, &io, dir, NULL), 0);
            ck_assert_int_eq(sb_store_writable(&st), want != SB_UNREADABLE);
        }
    }
    /* a zero-length slot is damage, not absence */
    put_slots(dir, 0, 0);
    tu_write_file(dir, VS_SUPERBLOCK_A, "", 0);
    ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
    ck_assert_int_eq(r.verdict, SB_UNREADABLE);
    ck_assert_ptr_nonnull(strstr(r.reason, "zero-length"));
    /* non-adjacent sequences: a lost write */
    put_slots(dir, 5, 2);
    ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
    ck_assert_int_eq(r.verdict, SB_UNREADABLE);
    tu_rm_rf(dir);
}
END_TEST

/* Injected write(EIO)/fsync/rename/dir-fsync failure in sb_write: fatal,
 * the store is poisoned, and the previous durable record reads back. */
START_TEST(test_write_faults)
{
    const enum sio_kind kinds[] = {SIO_WRITE, SIO_FSYNC, SIO_RENAME,
                                   SIO_DIR_FSYNC};
    static struct sb_read r;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        char dir[256];
        tu_mkdtemp(dir, sizeof(dir), NULL, 0);
        put_slots(dir, 1, 2);
        struct sio_fault f;
        sio_fault_init(&f, 1);
        struct sb_store st;
        ck_assert_int_eq(sb_open(&st, &f.io, dir, NULL), 0);
        sio_fault_arm(&f, kinds[k], 1, EIO, kinds[k] == SIO_WRITE ? 7 : -1);
        uint8_t p[VSR_STATE_SIZE];
        payload_for(3, p);
        ck_assert_int_eq(sb_write(&st, p, sizeof(p)), -VS_EFATAL);
        ck_assert(sio_is_fatal(&f.io));
        ck_assert_int_eq(sb_write(&st, p, sizeof(p)), -VS_EFATAL);
        struct vs_sio real;
        sio_init_real(&real);
        ck_assert_int_eq(sb_read_latest(&real, dir, &r), 0);
        ck_assert_int_eq(r.verdict, SB_PRESENT);
        /* the previous durable record (seq 2, slot b) is intact */
        ck_assert_int_eq(r.slot[1].state, SB_SLOT_VALID);
        ck_assert_uint_eq(r.slot[1].sequence, 2);
        /* only a failed dir fsync comes after the rename */
        ck_assert_uint_eq(r.sequence, kinds[k] == SIO_DIR_FSYNC ? 3 : 2);
        tu_rm_rf(dir);
    }
}
END_TEST

START_TEST(test_write_enospc)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    put_slots(dir, 1, 2);
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct sb_store st;
    ck_assert_int_eq(sb_open(&st, &f.io, dir, NULL), 0);
    sio_fault_arm(&f, SIO_WRITE, 1, ENOSPC, 10);
    uint8_t p[VSR_STATE_SIZE];
    payload_for(3, p);
    ck_assert_int_eq(sb_write(&st, p, sizeof(p)), -ENOSPC);
    ck_assert(!sio_is_fatal(&f.io));
    ck_assert(!tu_exists(dir, "superblock.a.tmp"));
    static struct sb_read r;
    ck_assert_int_eq(sb_read_latest(&f.io, dir, &r), 0);
    ck_assert_int_eq(r.verdict, SB_PRESENT);
    ck_assert_uint_eq(r.sequence, 2);
    ck_assert_int_eq(sb_write(&st, p, sizeof(p)), 0);
    ck_assert_int_eq(sb_read_latest(&f.io, dir, &r), 0);
    ck_assert_uint_eq(r.sequence, 3);
    ck_assert_int_eq(r.newest, 0);
    tu_rm_rf(dir);
}
END_TEST

/* A crash between tmp-write and rename: the old record wins, the .tmp is
 * ignored by reads and removed at open. */
START_TEST(test_crash_leaves_tmp)
{
    char dir[256];
    tu_mkdtemp(dir, sizeof(dir), NULL, 0);
    put_slots(dir, 1, 2);
    uint8_t rec[SB_RECORD_MAX], p[VSR_STATE_SIZE];
    payload_for(3, p);
    size_t n = sb_record_encode(1, 3, p, sizeof(p), rec);
    tu_write_file(dir, "superblock.a.tmp", rec, n / 2); /* torn */
    struct vs_sio io;
    sio_init_real(&io);
    static struct sb_read r;
    ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
    ck_assert_int_eq(r.verdict, SB_PRESENT);
    ck_assert_uint_eq(r.sequence, 2);
    ck_assert(tu_exists(dir, "superblock.a.tmp")); /* reads modify nothing */
    struct sb_store st;
    ck_assert_int_eq(sb_open(&st, &io, dir, &r), 0);
    ck_assert(!tu_exists(dir, "superblock.a.tmp"));
    ck_assert_int_eq(r.verdict, SB_PRESENT);
    ck_assert_uint_eq(r.sequence, 2);
    ck_assert_int_eq(sb_write(&st, p, sizeof(p)), 0);
    ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
    ck_assert_uint_eq(r.sequence, 3);
    tu_rm_rf(dir);
}
END_TEST

/* Every VsrState version this release reads boots from a store that
 * holds it (DESIGN §4), and the next write upgrades it to version 4. */
START_TEST(test_boot_each_version)
{
    static const size_t size[] = {0, VSR_STATE_V1_SIZE, VSR_STATE_V2_SIZE,
                                  VSR_STATE_V3_SIZE, VSR_STATE_V4_SIZE};
    struct vs_sio io;
    sio_init_real(&io);
    static struct sb_read r;
    for (uint16_t ver = VSR_STATE_V1; ver <= VSR_STATE_V4; ver++) {
        char dir[256];
        tu_mkdtemp(dir, sizeof(dir), NULL, 0);
        struct vs_vsr_state s = golden_state(), d;
        uint8_t p[VSR_STATE_SIZE], rec[SB_RECORD_MAX];
        vsr_state_encode(&s, p); /* each version is a prefix of v4 */
        size_t n = sb_record_encode(ver, 1, p, size[ver], rec);
        tu_write_file(dir, sb_slot_name(0), rec, n);
        ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
        ck_assert_int_eq(r.verdict, SB_PRESENT);
        ck_assert_uint_eq(r.version, ver);
        ck_assert_int_eq(
            vsr_state_decode(r.version, r.payload, r.payload_len, &d, NULL, 0),
            VSR_STATE_OK);
        ck_assert_uint_eq(d.view, s.view);
        ck_assert_uint_eq(d.commit_max, s.commit_max);
        ck_assert_uint_eq(d.faulty_op, ver >= 2 ? s.faulty_op : 0);
        ck_assert_uint_eq(d.nonack_op, ver >= 3   ? s.nonack_op
                                       : ver == 2 ? s.faulty_op
                                                  : 0);
        struct sb_store st;
        ck_assert_int_eq(sb_open(&st, &io, dir, &r), 0);
        ck_assert_int_eq(sb_write(&st, p, sizeof(p)), 0);
        ck_assert_int_eq(sb_read_latest(&io, dir, &r), 0);
        ck_assert_uint_eq(r.version, VSR_STATE_VERSION);
        ck_assert_uint_eq(r.sequence, 2);
        ck_assert_int_eq(
            vsr_state_decode(r.version, r.payload, r.payload_len, &d, NULL, 0),
            VSR_STATE_OK);
        ck_assert_uint_eq(d.nonack_op, s.nonack_op);
        tu_rm_rf(dir);
    }
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("storage_sb");
    TCase *tc = tcase_create("sb");
    /* every bit flip of three records writes and reads ~9000 files: on a
     * loaded machine under ASan that is more than Check's default 4 s */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_vsr_state_golden);
    tcase_add_test(tc, test_vsr_state_refusals);
    tcase_add_test(tc, test_record_golden);
    tcase_add_test(tc, test_write_alternates);
    tcase_add_test(tc, test_every_bit_flip);
    tcase_add_test(tc, test_slot_combinations);
    tcase_add_test(tc, test_write_faults);
    tcase_add_test(tc, test_write_enospc);
    tcase_add_test(tc, test_crash_leaves_tmp);
    tcase_add_test(tc, test_boot_each_version);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
