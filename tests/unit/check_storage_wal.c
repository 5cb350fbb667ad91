/*
 * tests/unit/check_storage_wal.c - the prepare WAL: append, index, scan
 * verdicts (every truncation of the last two entries, bit flips in an
 * interior and in the last entry), the format gate with a synthetic
 * second version, chain breaks, drain/truncate_from, ENOSPC and fatal
 * faults, crashed rewrites, a damaged prefix dropped (drop_damaged_upto).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard/storage/journal.h"
#include "storage_testutil.h"

#define N_ENTRIES 6

/* entry i (op i + 1) has a body of 40 + 13 * i bytes */
static size_t
body_len_of(uint64_t op)
{
    return 40 + 13 * (size_t)(op - 1);
}

struct fixture {
    char dir[256];
    char meta[300];
    uint64_t offset[N_ENTRIES + 1]; /* offset[i] = start of op i + 1 */
    struct vs_hdr_prepare hdr[N_ENTRIES];
};

/* Builds N_ENTRIES ops (1..N) with the release given per op. */
static void
build(struct fixture *fx, struct vs_sio *io, const uint32_t *release,
      wal_format_known_fn *gate)
{
    tu_mkdtemp(fx->dir, sizeof(fx->dir), fx->meta, sizeof(fx->meta));
    struct wal w;
    struct wal_options opt = {.format_known = gate};
    ck_assert_int_eq(wal_open(&w, io, fx->meta, &opt, NULL), 0);
    struct vs_u128 parent = {0, 0};
    uint8_t body[256];
    fx->offset[0] = 0;
    for (uint64_t op = 1; op <= N_ENTRIES; op++) {
        size_t bl = body_len_of(op);
        tu_prepare(&fx->hdr[op - 1], body, bl, op, parent,
                   release ? release[op - 1] : VS_WIRE_FORMAT_VERSION);
        ck_assert_int_eq(wal_append(&w, &fx->hdr[op - 1], body, bl), 0);
        parent = fx->hdr[op - 1].f.checksum;
        fx->offset[op] = fx->offset[op - 1] + VS_HEADER_SIZE + bl;
    }
    wal_close(&w);
}

static uint8_t *
wal_bytes(struct fixture *fx, size_t *len)
{
    return tu_read_file(fx->meta, VS_JOURNAL_FILE, len);
}

static void
put_wal(struct fixture *fx, const uint8_t *b, size_t len)
{
    tu_write_file(fx->meta, VS_JOURNAL_FILE, b, len);
}

START_TEST(test_append_index_roundtrip)
{
    struct vs_sio io;
    sio_init_real(&io);
    struct fixture fx;
    build(&fx, &io, NULL, NULL);
    struct wal w;
    struct wal_scan s;
    ck_assert_int_eq(wal_open(&w, &io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.entries, N_ENTRIES);
    ck_assert_uint_eq(s.per_version[VS_WIRE_FORMAT_VERSION], N_ENTRIES);
    ck_assert_uint_eq(wal_first_op(&w), 1);
    ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES);
    ck_assert_uint_eq(s.file_size, fx.offset[N_ENTRIES]);
    for (uint64_t op = 1; op <= N_ENTRIES; op++) {
        const struct vs_hdr_prepare *h = wal_header(&w, op);
        ck_assert_ptr_nonnull(h);
        ck_assert_int_eq(memcmp(h, &fx.hdr[op - 1], sizeof(*h)), 0);
        uint8_t buf[256], want[256];
        struct vs_hdr_prepare tmp;
        tu_prepare(&tmp, want, body_len_of(op), op, h->parent,
                   VS_WIRE_FORMAT_VERSION);
        ck_assert_int_eq(wal_read_body(&w, op, buf, sizeof(buf)),
                         (long)body_len_of(op));
        ck_assert_int_eq(memcmp(buf, want, body_len_of(op)), 0);
        ck_assert_int_eq(wal_read_body(&w, op, buf, 3), -ENOBUFS);
    }
    ck_assert_ptr_null(wal_header(&w, 0));
    ck_assert_ptr_null(wal_header(&w, N_ENTRIES + 1));
    uint8_t buf[8];
    ck_assert_int_eq(wal_read_body(&w, 99, buf, sizeof(buf)), -ENOENT);

    /* append checks: wrong op, wrong parent, bad seal, unknown format */
    uint8_t body[64];
    struct vs_hdr_prepare h;
    struct vs_u128 last = fx.hdr[N_ENTRIES - 1].f.checksum;
    tu_prepare(&h, body, 10, N_ENTRIES + 2, last, 1);
    ck_assert_int_eq(wal_append(&w, &h, body, 10), -EINVAL);
    tu_prepare(&h, body, 10, N_ENTRIES + 1, fx.hdr[0].f.checksum, 1);
    ck_assert_int_eq(wal_append(&w, &h, body, 10), -EINVAL);
    tu_prepare(&h, body, 10, N_ENTRIES + 1, last, 1);
    body[3] ^= 1;
    ck_assert_int_eq(wal_append(&w, &h, body, 10), -EINVAL);
    tu_prepare(&h, body, 10, N_ENTRIES + 1, last, 3);
    ck_assert_int_eq(wal_append(&w, &h, body, 10), -EINVAL);
    /* a re-stamped view without a re-stamped checksum_view is sealed by
     * the journal itself: the stored entry verifies */
    tu_prepare(&h, body, 10, N_ENTRIES + 1, last, VS_WIRE_FORMAT_V2);
    h.f.view = 9;
    ck_assert(!vs_prepare_verify_view(&h));
    ck_assert_int_eq(wal_append(&w, &h, body, 9), -EINVAL);
    tu_prepare(&h, body, 10, N_ENTRIES + 1, last, 1);
    ck_assert_int_eq(wal_append(&w, &h, body, 9), -EINVAL);
    ck_assert_int_eq(wal_append(&w, &h, body, 10), 0);
    ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES + 1);
    /* the bytes on disk are re-verified when read */
    size_t len;
    uint8_t *b = wal_bytes(&fx, &len);
    b[fx.offset[2] + VS_HEADER_SIZE + 1] ^= 4;
    put_wal(&fx, b, len);
    uint8_t big[256];
    ck_assert_int_eq(wal_read_body(&w, 3, big, sizeof(big)), -EIO);
    free(b);
    wal_close(&w);
    tu_rm_rf(fx.dir);
}
END_TEST

/* Every byte length inside the last two entries: a torn tail that is cut
 * (or a clean file on an entry boundary), never a lost complete entry. */
START_TEST(test_truncate_every_length)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    size_t full;
    uint8_t *orig = wal_bytes(&fx, &full);
    ck_assert_uint_eq(full, fx.offset[N_ENTRIES]);
    unsigned lengths = 0;
    for (uint64_t len = fx.offset[N_ENTRIES - 2]; len <= full; len++) {
        put_wal(&fx, orig, len);
        uint64_t complete = 0;
        while (complete < N_ENTRIES && fx.offset[complete + 1] <= len)
            complete++;
        int boundary = fx.offset[complete] == len;
        struct wal_scan s;
        struct wal_options ro = {.read_only = 1};
        ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
        if (s.entries != complete || s.valid_end != fx.offset[complete])
            ck_abort_msg("len %llu: %llu entries, want %llu (%s)",
                         (unsigned long long)len, (unsigned long long)s.entries,
                         (unsigned long long)complete, s.reason);
        ck_assert_int_eq(s.verdict, boundary ? WAL_CLEAN : WAL_TORN_TAIL);
        if (!boundary) {
            ck_assert_uint_eq(s.bad_offset, fx.offset[complete]);
            ck_assert_uint_eq(s.bad_op, complete + 1);
        }
        /* read-only never modifies */
        size_t now;
        free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
        ck_assert_uint_eq(now, len);
        /* a writable open cuts the torn tail and fsyncs */
        struct wal w;
        ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
        ck_assert_int_eq(s.cut, !boundary);
        ck_assert_uint_eq(w.count, complete);
        wal_close(&w);
        free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
        ck_assert_uint_eq(now, fx.offset[complete]);
        lengths++;
    }
    ck_assert_uint_eq(lengths, full - fx.offset[N_ENTRIES - 2] + 1);
    free(orig);
    tu_rm_rf(fx.dir);
}
END_TEST

/* A flip of any bit in an interior entry -> interior corruption naming
 * that op and offset. In format 1 the view field is outside every
 * checksum (retransmits re-stamp it), so flips there stay invisible; in
 * format 2 checksum_view covers it. Run for both formats. */
START_TEST(test_interior_flip)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    const uint32_t v1[N_ENTRIES] = {1, 1, 1, 1, 1, 1};
    const uint32_t v2[N_ENTRIES] = {2, 2, 2, 2, 2, 2};
    const int legacy = _i == 0;
    build(&fx, &f.io, legacy ? v1 : v2, NULL);
    size_t full;
    uint8_t *orig = wal_bytes(&fx, &full);
    const uint64_t op = 3; /* interior */
    uint64_t start = fx.offset[op - 1], end = fx.offset[op];
    for (uint64_t i = start; i < end; i++) {
        int bit = (int)(i % 8);
        orig[i] ^= (uint8_t)(1u << bit);
        put_wal(&fx, orig, full);
        orig[i] ^= (uint8_t)(1u << bit);
        struct wal_scan s;
        struct wal_options ro = {.read_only = 1};
        ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
        uint64_t rel = i - start;
        if (legacy && rel >= 52 && rel < 56) {
            ck_assert_int_eq(s.verdict, WAL_CLEAN);
            continue;
        }
        if (s.verdict != WAL_INTERIOR_CORRUPT)
            ck_abort_msg("byte %llu: verdict %s", (unsigned long long)rel,
                         wal_verdict_name(s.verdict));
        ck_assert_uint_eq(s.bad_op, op);
        ck_assert_uint_eq(s.bad_offset, start);
        ck_assert_ptr_nonnull(strstr(s.reason, "op 3"));
        struct wal w;
        ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
        size_t now;
        free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
        ck_assert_uint_eq(now, full); /* refused: nothing cut */
    }
    free(orig);
    tu_rm_rf(fx.dir);
}
END_TEST

/* The journal bytes `b` as an older release left them (no durable mark:
 * the scan's rules are that release's). */
static void
put_legacy(struct fixture *fx, const uint8_t *b, size_t len)
{
    put_wal(fx, b, len);
    tu_mark_remove(fx->meta);
}

/* Group commit (wal_options.unsynced_max > 1) in a journal without a
 * durable mark: a power loss may keep a
 * later unsynced entry and lose an earlier one. A never-written entry
 * (zero header) followed by valid entries inside the window is a torn
 * tail, cut; non-zero damage there, or anything beyond the window, or the
 * classic rules, are interior corruption. */
START_TEST(test_unsynced_group_tail)
{
    struct vs_sio io;
    sio_init_real(&io);
    struct fixture fx;
    build(&fx, &io, NULL, NULL);
    size_t full;
    uint8_t *orig = wal_bytes(&fx, &full);
    uint8_t *b = vs_xmalloc(full);
    struct wal_options g = {.read_only = 1, .unsynced_max = 33};
    struct wal_options classic = {.read_only = 1};
    struct wal_scan s;
    struct wal w;

    /* ops 3 and 4 lost (their pages read as zeros), 5 and 6 kept */
    memcpy(b, orig, full);
    memset(b + fx.offset[2], 0, fx.offset[4] - fx.offset[2]);
    put_legacy(&fx, b, full);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &classic, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert_uint_eq(s.bad_op, 3);
    ck_assert_uint_eq(s.valid_end, fx.offset[2]);
    ck_assert_uint_eq(s.group_last_op, 6);
    ck_assert_ptr_nonnull(strstr(s.reason, "entries up to op 6 follow"));
    struct wal_options gw = {.unsynced_max = 33};
    ck_assert_int_eq(wal_open(&w, &io, fx.meta, &gw, &s), 0);
    ck_assert(s.cut);
    ck_assert_int_eq(s.mark_status, WAL_MARK_ABSENT);
    ck_assert_int_eq(w.mark.status, WAL_MARK_OK); /* created: op 2 */
    ck_assert_uint_eq(w.mark.op, 2);
    ck_assert_uint_eq(wal_last_op(&w), 2);
    wal_close(&w);
    size_t now;
    free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
    ck_assert_uint_eq(now, fx.offset[2]);

    /* op 3's body or header flipped (written, maybe fsynced, damaged
     * since: acknowledged entries may follow): interior, nothing cut */
    for (int hdr = 0; hdr < 2; hdr++) {
        memcpy(b, orig, full);
        b[fx.offset[2] + (hdr ? 20 : VS_HEADER_SIZE + 5)] ^= 0x10;
        put_legacy(&fx, b, full);
        ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
        ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
        ck_assert_uint_eq(s.bad_op, 3);
        ck_assert_uint_eq(s.group_last_op, 0);
        ck_assert_int_eq(wal_open(&w, &io, fx.meta, &gw, &s), -EBADMSG);
        free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
        ck_assert_uint_eq(now, full);
    }

    /* the window bounds it: op 3 lost with ops up to 6 after it needs a
     * window of 4 */
    memcpy(b, orig, full);
    memset(b + fx.offset[2], 0, VS_HEADER_SIZE);
    put_legacy(&fx, b, full);
    struct wal_options g3 = {.read_only = 1, .unsynced_max = 3};
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g3, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    struct wal_options g4 = {.read_only = 1, .unsynced_max = 4};
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g4, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert_uint_eq(s.group_last_op, 6);

    /* more damage after the first valid run (op 5's body flipped, op 6's
     * bytes after a lost op 3): still one torn tail from op 3, since
     * nothing written after a lost write was acknowledged */
    memcpy(b, orig, full);
    memset(b + fx.offset[2], 0, VS_HEADER_SIZE);
    b[fx.offset[4] + VS_HEADER_SIZE + 1] ^= 0x01;
    put_legacy(&fx, b, full);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert_uint_eq(s.group_last_op, 6);
    memcpy(b, orig, full);
    memset(b + fx.offset[2], 0, VS_HEADER_SIZE);
    b[fx.offset[5] + VS_HEADER_SIZE + 1] ^= 0x01; /* the last entry */
    put_legacy(&fx, b, full);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert_uint_eq(s.group_last_op, 5);

    /* valid entries after the lost one that do not chain: interior */
    memcpy(b, orig, full);
    memset(b + fx.offset[2], 0, VS_HEADER_SIZE);
    size_t l4 = fx.offset[4] - fx.offset[3];
    uint8_t *t = vs_xmalloc(fx.offset[4] + l4);
    memcpy(t, b, fx.offset[4]);
    memcpy(t + fx.offset[4], b + fx.offset[3], l4); /* op 4 twice */
    put_wal(&fx, t, fx.offset[4] + l4);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    free(t);

    free(b);
    free(orig);
    tu_rm_rf(fx.dir);
}
END_TEST

/* The last entry at full length with a bad checksum: the distinct
 * damaged-tail verdict; refused unless cutting was asked for. */
START_TEST(test_damaged_tail)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    size_t full;
    uint8_t *orig = wal_bytes(&fx, &full);
    uint64_t start = fx.offset[N_ENTRIES - 1];
    for (uint64_t i = start; i < full; i++) {
        uint64_t rel = i - start;
        orig[i] ^= 0x20;
        put_wal(&fx, orig, full);
        orig[i] ^= 0x20;
        struct wal_scan s;
        struct wal_options ro = {.read_only = 1};
        ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
        ck_assert_uint_eq(s.entries, N_ENTRIES - 1);
        if (rel >= VS_HEADER_SIZE) { /* body flip */
            ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
            ck_assert_uint_eq(s.bad_op, N_ENTRIES);
            ck_assert_ptr_nonnull(strstr(s.reason, "body checksum"));
        } else { /* header: damaged (DESIGN §4: a non-zero header) */
            ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
            ck_assert_uint_eq(s.bad_op, N_ENTRIES);
        }
    }
    /* body flip: refused without the flag, cut with it */
    orig[full - 1] ^= 1;
    put_wal(&fx, orig, full);
    struct wal w;
    struct wal_scan s;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
    struct wal_options cut = {.cut_damaged_tail = 1};
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, &cut, &s), 0);
    ck_assert(s.cut);
    ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES - 1);
    wal_close(&w);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    wal_close(&w);
    free(orig);
    tu_rm_rf(fx.dir);
}
END_TEST

/* A latent sector error (a read failing with EIO) in the scan is damage,
 * judged as a checksum mismatch is: the last entry unreadable is a damaged
 * tail (its op known when its header read), an earlier one interior
 * corruption; the scan never fails with the read's error. */
START_TEST(test_unreadable_entry_is_damage)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    struct wal_options ro = {.read_only = 1};
    struct wal_scan s;
    sio_fault_reset(&f);
    ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    uint64_t reads = f.calls[SIO_READ];
    ck_assert_uint_ge(reads, 2 * N_ENTRIES);
    int tails = 0, interiors = 0;
    for (uint64_t nth = 1; nth <= reads; nth++) {
        sio_fault_reset(&f);
        sio_fault_arm(&f, SIO_READ, nth, EIO, -1);
        ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
        if (s.verdict == WAL_CLEAN)
            continue; /* a read outside the entries */
        ck_assert_ptr_nonnull(strstr(s.reason, "I/O error"));
        if (s.verdict == WAL_DAMAGED_TAIL) {
            ck_assert_uint_eq(s.bad_op, N_ENTRIES);
            ck_assert_uint_eq(s.bad_offset, fx.offset[N_ENTRIES - 1]);
            tails++;
        } else {
            ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
            ck_assert_uint_lt(s.bad_offset, fx.offset[N_ENTRIES - 1]);
            interiors++;
        }
    }
    ck_assert_int_eq(tails, 2); /* the last entry's header and body reads */
    ck_assert_int_ge(interiors, 2 * (N_ENTRIES - 1));
    /* a one-replica open refuses the unreadable last entry, and cuts it
     * with cut_damaged_tail */
    struct wal w;
    sio_fault_reset(&f);
    /* the two mark slots are read first */
    sio_fault_arm(&f, SIO_READ, 2 + 2 * N_ENTRIES, EIO, -1);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
    sio_fault_reset(&f);
    tu_rm_rf(fx.dir);
}
END_TEST

/* The durable mark (wal_mark.h) decides what damage in a group write
 * was: above the mark never acknowledged (cut, whatever the damage
 * looks like), at or below it fsynced and perhaps acknowledged (never
 * cut as torn; the older rules without the group guess). */
START_TEST(test_durable_mark)
{
    struct vs_sio io;
    sio_init_real(&io);
    struct fixture fx;
    build(&fx, &io, NULL, NULL);
    size_t full, now;
    uint8_t *orig = wal_bytes(&fx, &full);
    uint8_t *b = vs_xmalloc(full);
    struct wal_options g = {.read_only = 1, .unsynced_max = 33};
    struct wal_options gw = {.unsynced_max = 33};
    struct wal_scan s;
    struct wal w;
    struct wal_mark m;

    /* every wal_append fsynced and marked its op */
    ck_assert_int_eq(wal_mark_read(&m, &io, fx.meta), 0);
    ck_assert_int_eq(m.status, WAL_MARK_OK);
    ck_assert_uint_eq(m.op, N_ENTRIES);

    /* op 3's header torn across two sectors (its first 100 bytes of the
     * new write, the rest an older write's), ops 4..6 of the same write
     * whole: the write of ops 3..6 never completed its fsync (mark 2) */
    memcpy(b, orig, full);
    memset(b + fx.offset[2] + 100, 0xa5, VS_HEADER_SIZE - 100);
    put_wal(&fx, b, full);
    tu_mark_set(fx.meta, 2);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert(s.mark_cut);
    ck_assert_uint_eq(s.bad_op, 3);
    ck_assert_uint_eq(s.valid_end, fx.offset[2]);
    ck_assert_ptr_nonnull(strstr(s.reason, "above the durable mark, op 2"));
    ck_assert_int_eq(wal_open(&w, &io, fx.meta, &gw, &s), 0);
    ck_assert(s.cut);
    ck_assert_uint_eq(wal_last_op(&w), 2);
    ck_assert_uint_eq(w.mark.op, 2);
    wal_close(&w);
    free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
    ck_assert_uint_eq(now, fx.offset[2]);
    /* the same bytes with the mark at 6: fsynced, damaged since, with
     * acknowledged entries after it: interior, refused, nothing cut */
    put_wal(&fx, b, full);
    tu_mark_set(fx.meta, 6);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    ck_assert_uint_eq(s.bad_op, 3);
    ck_assert(!s.mark_cut);
    ck_assert_int_eq(wal_open(&w, &io, fx.meta, &gw, &s), -EBADMSG);
    free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
    ck_assert_uint_eq(now, full);
    /* without a mark (an older release's journal): its rules, interior */
    tu_mark_remove(fx.meta);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    ck_assert_int_eq(s.mark_status, WAL_MARK_ABSENT);

    /* a zero header followed by valid entries: above the mark torn; at
     * or below it (fsynced, zeroed since) never cut, whatever the group
     * window; the older release's group rule cut it */
    memcpy(b, orig, full);
    memset(b + fx.offset[2], 0, VS_HEADER_SIZE);
    put_wal(&fx, b, full);
    tu_mark_set(fx.meta, 3);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    tu_mark_set(fx.meta, 2);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert(s.mark_cut);
    tu_mark_remove(fx.meta);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert(!s.mark_cut);
    ck_assert_uint_eq(s.group_last_op, 6);

    /* the last entry's header whole, its body damaged: at or below the
     * mark it may have been acknowledged (a damaged tail: a cluster
     * replica's faulty op, a one-replica refusal); above it never
     * acknowledged (torn: cut, nackable) */
    memcpy(b, orig, full);
    b[fx.offset[5] + VS_HEADER_SIZE + 3] ^= 0x01;
    put_wal(&fx, b, full);
    tu_mark_set(fx.meta, 6);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
    ck_assert(s.bad_header_valid);
    ck_assert_uint_eq(s.bad_op, 6);
    ck_assert_int_eq(wal_open(&w, &io, fx.meta, NULL, &s), -EBADMSG);
    tu_mark_set(fx.meta, 5);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert(s.mark_cut);
    ck_assert_uint_eq(s.bad_op, 6);
    ck_assert_int_eq(wal_open(&w, &io, fx.meta, NULL, &s), 0);
    ck_assert_uint_eq(wal_last_op(&w), 5);
    wal_close(&w);

    /* a chain break where the unsynced write should be (op 4 again after
     * op 4): above the mark torn, at or below it refused */
    size_t l4 = fx.offset[4] - fx.offset[3];
    memcpy(b, orig, fx.offset[4]);
    memcpy(b + fx.offset[4], orig + fx.offset[3], l4);
    put_wal(&fx, b, fx.offset[4] + l4);
    tu_mark_set(fx.meta, 4);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert(s.mark_cut);
    ck_assert_uint_eq(s.bad_op, 5);
    tu_mark_set(fx.meta, 5);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CHAIN_BREAK);

    /* the slots: the newest valid wins; a damaged one beside a valid one
     * is a newer write torn before its fsync; both damaged: unknown, the
     * older rules (here the zero header's group cut, not the mark's) */
    uint8_t mk[WAL_MARK_SLOT_GAP + WAL_MARK_SLOT_SIZE];
    memset(mk, 0, sizeof(mk));
    wal_mark_encode(2, 2, mk);
    wal_mark_encode(3, 6, mk + WAL_MARK_SLOT_GAP);
    tu_write_file(fx.meta, WAL_MARK_FILE, mk, sizeof(mk));
    ck_assert_int_eq(wal_mark_read(&m, &io, fx.meta), 0);
    ck_assert_int_eq(m.status, WAL_MARK_OK);
    ck_assert_uint_eq(m.op, 6);
    mk[WAL_MARK_SLOT_GAP + 17] ^= 0x01;
    tu_write_file(fx.meta, WAL_MARK_FILE, mk, sizeof(mk));
    ck_assert_int_eq(wal_mark_read(&m, &io, fx.meta), 0);
    ck_assert_int_eq(m.status, WAL_MARK_OK);
    ck_assert_uint_eq(m.op, 2);
    ck_assert_int_eq(m.damaged_slots, 1);
    mk[17] ^= 0x01;
    tu_write_file(fx.meta, WAL_MARK_FILE, mk, sizeof(mk));
    ck_assert_int_eq(wal_mark_read(&m, &io, fx.meta), 0);
    ck_assert_int_eq(m.status, WAL_MARK_DAMAGED);
    memcpy(b, orig, full);
    memset(b + fx.offset[2], 0, VS_HEADER_SIZE);
    put_wal(&fx, b, full);
    ck_assert_int_eq(wal_scan_file(&io, fx.meta, &g, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert(!s.mark_cut);
    ck_assert_int_eq(s.mark_status, WAL_MARK_DAMAGED);
    /* the golden bytes of one slot */
    uint8_t one[WAL_MARK_SLOT_SIZE];
    wal_mark_encode(1, 0x0102, one);
    static const uint8_t head[24] = {'I', 'W', 'M', 'K', 1, 0, 0, 0,
                                     1,   0,   0,   0,   0, 0, 0, 0,
                                     2,   1,   0,   0,   0, 0, 0, 0};
    ck_assert_int_eq(memcmp(one, head, sizeof(head)), 0);
    uint64_t seq = 0, op = 0;
    ck_assert_int_eq(wal_mark_decode(one, &seq, &op), 1);
    ck_assert_uint_eq(op, 0x0102);

    /* the journal keeps it: an open with an unknown mark starts it at the
     * last op, nosync appends leave it, wal_sync raises it, truncate_from
     * lowers it */
    put_wal(&fx, orig, full);
    ck_assert_int_eq(wal_open(&w, &io, fx.meta, &gw, &s), 0);
    ck_assert_uint_eq(w.mark.op, 6);
    ck_assert_int_eq(wal_truncate_from(&w, 4), 0);
    ck_assert_uint_eq(w.mark.op, 3);
    for (uint64_t op4 = 4; op4 <= 5; op4++)
        ck_assert_int_eq(
            wal_append_nosync(&w, &fx.hdr[op4 - 1],
                              orig + fx.offset[op4 - 1] + VS_HEADER_SIZE,
                              body_len_of(op4)),
            0);
    ck_assert_int_eq(wal_mark_read(&m, &io, fx.meta), 0);
    ck_assert_uint_eq(m.op, 3);
    ck_assert_int_eq(wal_sync(&w), 0);
    ck_assert_int_eq(wal_mark_read(&m, &io, fx.meta), 0);
    ck_assert_uint_eq(m.op, 5);
    wal_close(&w);
    free(b);
    free(orig);
    tu_rm_rf(fx.dir);
}
END_TEST

/* The one entry of a journal with its command byte flipped (found by
 * fuzzing: it scanned as a torn tail and the open cut the whole file, an
 * acknowledged op lost without a refusal): damage, refused; a header
 * zero from a 4 KiB boundary on is still a torn write and cut. */
START_TEST(test_garbled_header_is_damage)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    size_t full;
    uint8_t *orig = wal_bytes(&fx, &full);
    size_t one = fx.offset[1];
    orig[offsetof(struct vs_frame, command)] ^= 0x40;
    put_wal(&fx, orig, one);
    struct wal_scan s;
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
    ck_assert_uint_eq(s.bad_offset, 0);
    size_t now;
    free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
    ck_assert_uint_eq(now, one); /* refused: nothing cut */
    free(orig);

    /* one entry ending 100 bytes before a 4 KiB boundary, then a second
     * header written only up to that boundary (the rest zero): a torn
     * sector write, cut, whether or not the written part still parses */
    size_t pos = 4096 - 100;
    size_t bl = pos - VS_HEADER_SIZE;
    uint8_t *b = vs_xcalloc(1, pos + VS_HEADER_SIZE);
    struct vs_hdr_prepare h1, h2;
    struct vs_u128 zero = {0, 0};
    tu_prepare(&h1, b + VS_HEADER_SIZE, bl, 1, zero, VS_WIRE_FORMAT_VERSION);
    memcpy(b, &h1, sizeof(h1));
    uint8_t b2[16] = {0};
    tu_prepare(&h2, b2, sizeof(b2), 2, h1.f.checksum, VS_WIRE_FORMAT_VERSION);
    memcpy(b + pos, &h2, 100);
    for (int garble = 0; garble < 2; garble++) {
        if (garble)
            b[pos + offsetof(struct vs_frame, command)] ^= 0x40;
        put_wal(&fx, b, pos + VS_HEADER_SIZE);
        ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
        ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
        ck_assert_uint_eq(s.valid_end, pos);
        ck_assert_uint_eq(w.count, 1);
        wal_close(&w);
    }
    /* the same header with one byte after the boundary set: damage in a
     * journal without a mark; above the mark (the cut above lowered it
     * to op 1) never acknowledged, a torn tail */
    b[pos + 200] = 1;
    put_wal(&fx, b, pos + VS_HEADER_SIZE);
    struct wal_options ro = {.read_only = 1};
    ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert(s.mark_cut);
    ck_assert_uint_eq(s.mark_op, 1);
    tu_mark_remove(fx.meta);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
    free(b);
    tu_rm_rf(fx.dir);
}
END_TEST

/* Two sealed, chained entries whose ops wrap, UINT64_MAX then 0 (found by
 * fuzzing: the scan accepted them and the open journal could not find
 * either op): a chain break, refused. */
START_TEST(test_op_wrap_is_chain_break)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    uint8_t b[2 * (VS_HEADER_SIZE + 8)] = {0};
    struct vs_hdr_prepare h1, h2;
    struct vs_u128 zero = {0, 0};
    tu_prepare(&h1, b + VS_HEADER_SIZE, 8, UINT64_MAX, zero,
               VS_WIRE_FORMAT_VERSION);
    memcpy(b, &h1, sizeof(h1));
    uint8_t *e2 = b + VS_HEADER_SIZE + 8;
    tu_prepare(&h2, e2 + VS_HEADER_SIZE, 8, 0, h1.f.checksum,
               VS_WIRE_FORMAT_VERSION);
    memcpy(e2, &h2, sizeof(h2));
    put_wal(&fx, b, sizeof(b));
    struct wal_scan s;
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_CHAIN_BREAK);
    ck_assert_uint_eq(s.entries, 1);
    ck_assert_uint_eq(s.bad_offset, VS_HEADER_SIZE + 8);
    tu_rm_rf(fx.dir);
}
END_TEST

START_TEST(test_zero_tail_is_torn)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    size_t full;
    uint8_t *orig = wal_bytes(&fx, &full);
    uint8_t *b = vs_xcalloc(1, full + 600);
    memcpy(b, orig, full);
    put_wal(&fx, b, full + 600);
    struct wal_scan s;
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_TORN_TAIL);
    ck_assert_uint_eq(w.count, N_ENTRIES);
    wal_close(&w);
    /* zeros in the middle with valid entries after them: interior */
    memcpy(b, orig, full);
    memset(b + fx.offset[1], 0, VS_HEADER_SIZE);
    put_wal(&fx, b, full);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    ck_assert_uint_eq(s.bad_op, 2);
    free(b);
    free(orig);
    tu_rm_rf(fx.dir);
}
END_TEST

static int
gate_v1_v2(uint32_t release)
{
    return release == 1 || release == 2;
}

static int
gate_v1(uint32_t release)
{
    return release == 1;
}

/* The format gate: a v1-only decoder refuses version-2 entries (typed),
 * this release (knowing {1, 2}) reads a WAL mixing both, appends to it
 * and boots it again. */
START_TEST(test_format_gate)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    const uint32_t mixed[N_ENTRIES] = {1, 1, 2, 1, 2, 2};
    struct fixture fx;
    build(&fx, &f.io, mixed, gate_v1_v2);
    struct wal_scan s;
    struct wal_options v12 = {.format_known = gate_v1_v2};
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, &v12, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.per_version[1], 3);
    ck_assert_uint_eq(s.per_version[2], 3);
    wal_close(&w);
    /* the default gate is this release's: {1, 2} */
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.entries, N_ENTRIES);
    {
        uint8_t nb[16];
        struct vs_hdr_prepare nh;
        tu_prepare(&nh, nb, sizeof(nb), N_ENTRIES + 1,
                   fx.hdr[N_ENTRIES - 1].f.checksum, VS_WIRE_FORMAT_V1);
        ck_assert_int_eq(wal_append(&w, &nh, nb, sizeof(nb)), 0);
        tu_prepare(&nh, nb, sizeof(nb), N_ENTRIES + 2, nh.f.checksum,
                   VS_WIRE_FORMAT_V2);
        ck_assert_int_eq(wal_append(&w, &nh, nb, sizeof(nb)), 0);
    }
    wal_close(&w);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.per_version[1], 4);
    ck_assert_uint_eq(s.per_version[2], 4);
    ck_assert_int_eq(wal_truncate_from(&w, N_ENTRIES + 1), 0);
    wal_close(&w);
    /* a v1-only decoder */
    struct wal_options only1 = {.format_known = gate_v1};
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, &only1, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_UNKNOWN_FORMAT);
    ck_assert_uint_eq(s.bad_op, 3);
    ck_assert_uint_eq(s.bad_release, 2);
    ck_assert_uint_eq(s.bad_offset, fx.offset[2]);
    ck_assert_ptr_nonnull(strstr(s.reason, "format version 2"));
    ck_assert(wal_verdict_refuses(s.verdict));
    /* an unknown version as the LAST entry is refused too, never cut */
    size_t full;
    uint8_t *b = wal_bytes(&fx, &full);
    tu_rm_rf(fx.dir);
    build(&fx, &f.io, NULL, NULL);
    uint8_t body[256];
    struct vs_hdr_prepare h;
    tu_prepare(&h, body, 30, N_ENTRIES + 1, fx.hdr[N_ENTRIES - 1].f.checksum,
               7);
    size_t len;
    uint8_t *c = wal_bytes(&fx, &len);
    c = vs_xrealloc(c, len + VS_HEADER_SIZE + 30);
    memcpy(c + len, &h, VS_HEADER_SIZE);
    memcpy(c + len + VS_HEADER_SIZE, body, 30);
    put_wal(&fx, c, len + VS_HEADER_SIZE + 30);
    struct wal_options cut = {.cut_damaged_tail = 1};
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, &cut, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_UNKNOWN_FORMAT);
    ck_assert_uint_eq(s.bad_release, 7);
    free(c);
    free(b);
    tu_rm_rf(fx.dir);
}
END_TEST

START_TEST(test_chain_break)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    /* replace op 4 by a validly sealed entry with the wrong parent */
    size_t full;
    uint8_t *b = wal_bytes(&fx, &full);
    struct vs_hdr_prepare h;
    uint8_t body[256];
    struct vs_u128 wrong = {0xdead, 0xbeef};
    tu_prepare(&h, body, body_len_of(4), 4, wrong, 1);
    memcpy(b + fx.offset[3], &h, VS_HEADER_SIZE);
    put_wal(&fx, b, full);
    struct wal_scan s;
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_CHAIN_BREAK);
    ck_assert_uint_eq(s.bad_op, 4);
    ck_assert_uint_eq(s.bad_offset, fx.offset[3]);
    /* a skipped op is a chain break too */
    tu_prepare(&h, body, body_len_of(4), 5, fx.hdr[2].f.checksum, 1);
    memcpy(b + fx.offset[3], &h, VS_HEADER_SIZE);
    memcpy(b + fx.offset[3] + VS_HEADER_SIZE, body, body_len_of(4));
    put_wal(&fx, b, full);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_CHAIN_BREAK);
    free(b);
    tu_rm_rf(fx.dir);
}
END_TEST

START_TEST(test_drain_and_truncate)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    struct wal w;
    struct wal_scan s;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(wal_drain(&w, 1), 0); /* nothing to drop */
    ck_assert_uint_eq(wal_first_op(&w), 1);
    ck_assert_int_eq(wal_drain(&w, 3), 0); /* keeps op 3 itself */
    ck_assert_uint_eq(wal_first_op(&w), 3);
    ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES);
    ck_assert_ptr_null(wal_header(&w, 2));
    ck_assert_ptr_nonnull(wal_header(&w, 3));
    uint8_t buf[256];
    ck_assert_int_eq(wal_read_body(&w, 4, buf, sizeof(buf)),
                     (long)body_len_of(4));
    /* the next append still chains to the kept entries */
    struct vs_hdr_prepare h;
    uint8_t body[64];
    tu_prepare(&h, body, 20, N_ENTRIES + 1, fx.hdr[N_ENTRIES - 1].f.checksum,
               1);
    ck_assert_int_eq(wal_append(&w, &h, body, 20), 0);
    wal_close(&w);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.first_op, 3);
    ck_assert_uint_eq(s.last_op, N_ENTRIES + 1);
    ck_assert(!tu_exists(fx.meta, "journal.wal.tmp"));
    /* truncate_from(5) drops 5.. and a different op 5 can follow */
    ck_assert_int_eq(wal_truncate_from(&w, 5), 0);
    ck_assert_uint_eq(wal_last_op(&w), 4);
    tu_prepare(&h, body, 33, 5, fx.hdr[3].f.checksum, 1);
    ck_assert_int_eq(wal_append(&w, &h, body, 33), 0);
    wal_close(&w);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.entries, 3);
    ck_assert_int_eq(memcmp(wal_header(&w, 5), &h, sizeof(h)), 0);
    /* drain past the end empties the journal */
    ck_assert_int_eq(wal_drain(&w, 100), 0);
    ck_assert(wal_empty(&w));
    wal_close(&w);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_uint_eq(s.file_size, 0);
    wal_close(&w);
    tu_rm_rf(fx.dir);
}
END_TEST

/* The checkpoint drain keeps the repair margin below the checkpoint op
 * (bounded by what is held), across a reopen; a checkpoint past the last
 * op empties the journal as wal_drain does. */
START_TEST(test_drain_keeps_margin)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    struct wal w;
    struct wal_scan s;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_uint_ge(N_ENTRIES, 6);
    /* a margin reaching below the first op keeps everything */
    ck_assert_int_eq(wal_drain_margin(&w, 3, 5), 0);
    ck_assert_uint_eq(wal_first_op(&w), 1);
    /* checkpoint 5, margin 2: ops 3.. kept, 1 and 2 dropped */
    ck_assert_int_eq(wal_drain_margin(&w, 5, 2), 0);
    ck_assert_uint_eq(wal_first_op(&w), 3);
    ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES);
    ck_assert_ptr_null(wal_header(&w, 2));
    ck_assert_ptr_nonnull(wal_header(&w, 3));
    uint8_t buf[256];
    ck_assert_int_eq(wal_read_body(&w, 3, buf, sizeof(buf)),
                     (long)body_len_of(3));
    wal_close(&w);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.first_op, 3);
    /* a later checkpoint moves the margin with it; margin 0 is wal_drain */
    ck_assert_int_eq(wal_drain_margin(&w, 6, 1), 0);
    ck_assert_uint_eq(wal_first_op(&w), 5);
    ck_assert_int_eq(wal_drain_margin(&w, 6, 0), 0);
    ck_assert_uint_eq(wal_first_op(&w), 6);
    /* an older checkpoint never brings anything back nor drops more */
    ck_assert_int_eq(wal_drain_margin(&w, 4, 1), 0);
    ck_assert_uint_eq(wal_first_op(&w), 6);
    /* a checkpoint past the last op empties the journal */
    ck_assert_int_eq(wal_drain_margin(&w, N_ENTRIES + 1, 3), 0);
    ck_assert(wal_empty(&w));
    wal_close(&w);
    tu_rm_rf(fx.dir);
}
END_TEST

/* ENOSPC on an append: clean failure, partial append cut back, the file
 * still scans clean and the next append works. */
START_TEST(test_append_enospc)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, NULL), 0);
    struct vs_hdr_prepare h;
    uint8_t body[200];
    tu_prepare(&h, body, 200, N_ENTRIES + 1, fx.hdr[N_ENTRIES - 1].f.checksum,
               1);
    /* torn inside the header, and inside the body (second write) */
    const struct {
        uint64_t nth;
        long tear;
    } cases[] = {{1, 100}, {1, 0}, {2, 50}};
    for (size_t k = 0; k < 3; k++) {
        sio_fault_arm(&f, SIO_WRITE, cases[k].nth, ENOSPC, cases[k].tear);
        ck_assert_int_eq(wal_append(&w, &h, body, 200), -ENOSPC);
        ck_assert(!sio_is_fatal(&f.io));
        size_t now;
        free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &now));
        ck_assert_uint_eq(now, fx.offset[N_ENTRIES]);
        ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES);
        struct wal_scan s;
        struct wal_options ro = {.read_only = 1};
        ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
        ck_assert_int_eq(s.verdict, WAL_CLEAN);
        ck_assert_uint_eq(s.entries, N_ENTRIES);
    }
    ck_assert_int_eq(wal_append(&w, &h, body, 200), 0);
    ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES + 1);
    wal_close(&w);
    tu_rm_rf(fx.dir);
}
END_TEST

/* write(EIO), fsync, or a failed cut-back -> fatal, journal poisoned;
 * earlier entries intact. */
START_TEST(test_append_fatal)
{
    const struct {
        enum sio_kind kind;
        int err;
    } cases[] = {{SIO_WRITE, EIO}, {SIO_FSYNC, EIO}, {SIO_FTRUNCATE, EIO}};
    for (size_t k = 0; k < 3; k++) {
        struct sio_fault f;
        sio_fault_init(&f, 1);
        struct fixture fx;
        build(&fx, &f.io, NULL, NULL);
        struct wal w;
        ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, NULL), 0);
        struct vs_hdr_prepare h;
        uint8_t body[100];
        tu_prepare(&h, body, 100, N_ENTRIES + 1,
                   fx.hdr[N_ENTRIES - 1].f.checksum, 1);
        if (cases[k].kind == SIO_FTRUNCATE)
            sio_fault_arm(&f, SIO_WRITE, 1, ENOSPC, 10);
        sio_fault_arm(&f, cases[k].kind, 1, cases[k].err, -1);
        ck_assert_int_eq(wal_append(&w, &h, body, 100), -VS_EFATAL);
        ck_assert(sio_is_fatal(&f.io));
        ck_assert_int_eq(f.io.fatal.kind, cases[k].kind);
        sio_fault_reset(&f);
        ck_assert_int_eq(wal_append(&w, &h, body, 100), -VS_EFATAL);
        ck_assert_int_eq(wal_drain(&w, 3), -VS_EFATAL);
        wal_close(&w);
        struct wal_scan s;
        struct wal_options ro = {.read_only = 1};
        ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
        ck_assert_uint_ge(s.entries, N_ENTRIES);
        ck_assert(!wal_verdict_refuses(s.verdict));
        tu_rm_rf(fx.dir);
    }
}
END_TEST

/* drop_damaged_upto: damage whose ops all lie at or below it drops the
 * prefix (rewritten away); damage above it is interior corruption; a
 * rewrite without space leaves the prefix on disk, never served. */
START_TEST(test_drop_damaged_prefix)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    size_t len;
    uint8_t *b = wal_bytes(&fx, &len);
    b[fx.offset[1] + 100] ^= 2; /* op 2's header */
    put_wal(&fx, b, len);
    struct wal w;
    struct wal_scan s;
    /* op 2 is above the limit: refused as before */
    struct wal_options one = {.drop_damaged_upto = 1};
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, &one, &s), -EBADMSG);
    ck_assert_int_eq(s.verdict, WAL_INTERIOR_CORRUPT);
    ck_assert_uint_eq(s.bad_op, 2);
    ck_assert_uint_eq(s.dropped, 0);
    /* at the limit: ops 1..2 dropped, the file rewritten from op 3 */
    struct wal_options two = {.drop_damaged_upto = 2};
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, &two, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(s.dropped, 1);
    ck_assert_uint_eq(s.dropped_first_op, 1);
    ck_assert_uint_eq(s.dropped_last_op, 2);
    ck_assert_uint_eq(s.dropped_damage_op, 2);
    ck_assert_uint_eq(s.dropped_damage_offset, fx.offset[1]);
    ck_assert_uint_eq(s.retained_offset, fx.offset[2]);
    ck_assert_uint_eq(s.entries, N_ENTRIES - 2);
    ck_assert_uint_eq(wal_first_op(&w), 3);
    ck_assert_ptr_null(wal_header(&w, 2));
    uint8_t body[256];
    ck_assert_int_eq(wal_read_body(&w, 3, body, sizeof(body)),
                     (long)body_len_of(3));
    wal_close(&w);
    size_t now;
    free(wal_bytes(&fx, &now));
    ck_assert_uint_eq(now, fx.offset[N_ENTRIES] - fx.offset[2]);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(wal_first_op(&w), 3);
    wal_close(&w);

    /* no space for the rewrite: boots, the prefix stays unserved */
    put_wal(&fx, b, len);
    sio_fault_arm(&f, SIO_WRITE, 1, ENOSPC, -1);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, &two, &s), 0);
    sio_fault_reset(&f);
    ck_assert_uint_eq(wal_first_op(&w), 3);
    ck_assert_ptr_null(wal_header(&w, 1));
    free(wal_bytes(&fx, &now));
    ck_assert_uint_eq(now, len);
    ck_assert_int_eq(wal_read_body(&w, N_ENTRIES, body, sizeof(body)),
                     (long)body_len_of(N_ENTRIES));
    struct vs_hdr_prepare h;
    tu_prepare(&h, body, 30, N_ENTRIES + 1, fx.hdr[N_ENTRIES - 1].f.checksum,
               VS_WIRE_FORMAT_VERSION);
    ck_assert_int_eq(wal_append(&w, &h, body, 30), 0);
    /* the next rewrite (a drain) removes the prefix */
    ck_assert_int_eq(wal_drain(&w, 4), 0);
    wal_close(&w);
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
    ck_assert_int_eq(s.verdict, WAL_CLEAN);
    ck_assert_uint_eq(wal_first_op(&w), 4);
    ck_assert_uint_eq(wal_last_op(&w), N_ENTRIES + 1);
    wal_close(&w);
    free(b);
    tu_rm_rf(fx.dir);
}
END_TEST

/* A drain whose rename (or fsync, write) fails: fatal; the old journal
 * still reads back whole, and a leftover .tmp is removed at open. */
START_TEST(test_drain_faults)
{
    const enum sio_kind kinds[] = {SIO_WRITE, SIO_FSYNC, SIO_RENAME};
    for (size_t k = 0; k < 3; k++) {
        struct sio_fault f;
        sio_fault_init(&f, 1);
        struct fixture fx;
        build(&fx, &f.io, NULL, NULL);
        struct wal w;
        ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, NULL), 0);
        sio_fault_arm(&f, kinds[k], 1, EIO, -1);
        ck_assert_int_eq(wal_drain(&w, 4), -VS_EFATAL);
        wal_close(&w);
        struct vs_sio real;
        sio_init_real(&real);
        struct wal_scan s;
        ck_assert_int_eq(wal_open(&w, &real, fx.meta, NULL, &s), 0);
        ck_assert_int_eq(s.verdict, WAL_CLEAN);
        ck_assert_uint_eq(s.first_op, 1);
        ck_assert_uint_eq(s.entries, N_ENTRIES);
        ck_assert(!tu_exists(fx.meta, "journal.wal.tmp"));
        wal_close(&w);
        tu_rm_rf(fx.dir);
    }
    /* ENOSPC during the rewrite: clean, journal unchanged and usable */
    struct sio_fault f;
    sio_fault_init(&f, 1);
    struct fixture fx;
    build(&fx, &f.io, NULL, NULL);
    struct wal w;
    ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, NULL), 0);
    sio_fault_arm(&f, SIO_WRITE, 1, ENOSPC, 3);
    ck_assert_int_eq(wal_drain(&w, 4), -ENOSPC);
    ck_assert_uint_eq(wal_first_op(&w), 1);
    ck_assert(!tu_exists(fx.meta, "journal.wal.tmp"));
    ck_assert_int_eq(wal_drain(&w, 4), 0);
    ck_assert_uint_eq(wal_first_op(&w), 4);
    wal_close(&w);
    tu_rm_rf(fx.dir);
}
END_TEST

/* A WAL of two entries: op 1 sized so op 2 (the last, with a body of
 * last_body bytes) starts k bytes before a 4 KiB boundary (k = 0: on
 * it). Returns the file length; *at gets op 2's offset. */
static size_t
build_at_boundary(struct fixture *fx, struct vs_sio *io, unsigned k,
                  size_t last_body, uint64_t *at)
{
    tu_mkdtemp(fx->dir, sizeof(fx->dir), fx->meta, sizeof(fx->meta));
    struct wal w;
    ck_assert_int_eq(wal_open(&w, io, fx->meta, NULL, NULL), 0);
    size_t first_body = 4096 - VS_HEADER_SIZE - k;
    uint8_t *body = vs_xmalloc(first_body + last_body + 1);
    struct vs_u128 zero = {0, 0};
    tu_prepare(&fx->hdr[0], body, first_body, 1, zero, VS_WIRE_FORMAT_VERSION);
    ck_assert_int_eq(wal_append(&w, &fx->hdr[0], body, first_body), 0);
    tu_prepare(&fx->hdr[1], body, last_body, 2, fx->hdr[0].f.checksum,
               VS_WIRE_FORMAT_VERSION);
    ck_assert_int_eq(wal_append(&w, &fx->hdr[1], body, last_body), 0);
    wal_close(&w);
    free(body);
    *at = VS_HEADER_SIZE + first_body;
    return (size_t)(*at + VS_HEADER_SIZE + last_body);
}

/* Placements of the last entry's header against a 4 KiB boundary: on
 * it, and a boundary after header byte k for each k below. */
static const unsigned k_cases[] = {0, 1, 60, 200, 248, 255};
#define K_CASES (sizeof(k_cases) / sizeof(k_cases[0]))

/* DESIGN §4: for the last entry of a WAL whose entries were all
 * acknowledged, no single-bit flip of any byte is silently cut -- every
 * one is a damaged tail (refused by a one-replica node, nothing cut),
 * whatever the entry's placement against a 4 KiB boundary, with and
 * without a body. */
START_TEST(test_last_entry_every_flip)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    unsigned flips = 0;
    for (unsigned kc = 0; kc < K_CASES; kc++) {
        for (size_t bl = 0; bl <= 24; bl += 24) {
            struct fixture fx;
            uint64_t at;
            size_t full = build_at_boundary(&fx, &f.io, k_cases[kc], bl, &at);
            size_t len;
            uint8_t *orig = wal_bytes(&fx, &len);
            ck_assert_uint_eq(len, full);
            ck_assert_uint_eq((at + k_cases[kc]) % 4096, 0);
            char path[400];
            snprintf(path, sizeof(path), "%s/%s", fx.meta, VS_JOURNAL_FILE);
            int fd = open(path, O_WRONLY);
            ck_assert_int_ge(fd, 0);
            for (uint64_t i = at; i < full; i++) {
                for (int bit = 0; bit < 8; bit++) {
                    uint8_t x = orig[i] ^ (uint8_t)(1u << bit);
                    ck_assert_int_eq(pwrite(fd, &x, 1, (off_t)i), 1);
                    struct wal_scan s;
                    struct wal_options ro = {.read_only = 1};
                    ck_assert_int_eq(wal_scan_file(&f.io, fx.meta, &ro, &s), 0);
                    if (s.verdict != WAL_DAMAGED_TAIL || s.bad_op != 2 ||
                        s.entries != 1)
                        ck_abort_msg("k %u body %zu byte %llu bit %d: %s "
                                     "(%s)",
                                     k_cases[kc], bl,
                                     (unsigned long long)(i - at), bit,
                                     wal_verdict_name(s.verdict), s.reason);
                    flips++;
                }
                ck_assert_int_eq(pwrite(fd, &orig[i], 1, (off_t)i), 1);
            }
            close(fd);
            /* the writable open refuses and cuts nothing */
            orig[at + 60] ^= 1; /* the command byte */
            put_wal(&fx, orig, full);
            struct wal w;
            struct wal_scan s;
            ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
            ck_assert_ptr_nonnull(strstr(s.reason, "op 2"));
            free(tu_read_file(fx.meta, VS_JOURNAL_FILE, &len));
            ck_assert_uint_eq(len, full);
            orig[at + 60] ^= 1;
            orig[at + 51] ^= 0x80; /* the high byte of size */
            put_wal(&fx, orig, full);
            ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), -EBADMSG);
            ck_assert_int_eq(s.verdict, WAL_DAMAGED_TAIL);
            free(orig);
            tu_rm_rf(fx.dir);
        }
    }
    ck_assert_uint_eq(flips, K_CASES * (256 + 280) * 8);
}
END_TEST

/* A crash while appending a new entry after acknowledged ones: every
 * prefix of the new entry, and every prefix up to a 4 KiB boundary
 * inside its header followed by zeros (page granularity), boots with the
 * acknowledged entries intact and the new one cut. */
START_TEST(test_partial_write_boots)
{
    struct sio_fault f;
    sio_fault_init(&f, 1);
    unsigned cases = 0;
    for (unsigned kc = 0; kc < K_CASES; kc++) {
        struct fixture fx;
        uint64_t at;
        size_t full = build_at_boundary(&fx, &f.io, k_cases[kc], 24, &at);
        size_t len;
        uint8_t *orig = wal_bytes(&fx, &len);
        uint8_t *b = vs_xmalloc(full);
        for (size_t p = at; p < full; p++) { /* the file ends at p */
            put_wal(&fx, orig, p);
            struct wal w;
            struct wal_scan s;
            ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
            ck_assert_uint_eq(w.count, 1);
            ck_assert_int_eq(s.cut, p != at);
            wal_close(&w);
            cases++;
        }
        /* pages: bytes before the boundary landed, zeros after, the file
         * extended to the header's end or to the entry's */
        size_t ends[] = {(size_t)at + VS_HEADER_SIZE, full};
        for (size_t e = 0; e < 2; e++) {
            memcpy(b, orig, full);
            memset(b + at + k_cases[kc], 0, full - at - k_cases[kc]);
            put_wal(&fx, b, ends[e]);
            struct wal w;
            struct wal_scan s;
            ck_assert_int_eq(wal_open(&w, &f.io, fx.meta, NULL, &s), 0);
            if (s.verdict != WAL_TORN_TAIL)
                ck_abort_msg("k %u: %s", k_cases[kc], s.reason);
            ck_assert_uint_eq(w.count, 1);
            wal_close(&w);
            cases++;
        }
        free(b);
        free(orig);
        tu_rm_rf(fx.dir);
    }
    ck_assert_uint_eq(cases, K_CASES * (280 + 2));
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("storage_wal");
    TCase *tc = tcase_create("wal");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_append_index_roundtrip);
    tcase_add_test(tc, test_truncate_every_length);
    tcase_add_loop_test(tc, test_interior_flip, 0, 2);
    tcase_add_test(tc, test_last_entry_every_flip);
    tcase_add_test(tc, test_partial_write_boots);
    tcase_add_test(tc, test_damaged_tail);
    tcase_add_test(tc, test_unsynced_group_tail);
    tcase_add_test(tc, test_durable_mark);
    tcase_add_test(tc, test_garbled_header_is_damage);
    tcase_add_test(tc, test_unreadable_entry_is_damage);
    tcase_add_test(tc, test_op_wrap_is_chain_break);
    tcase_add_test(tc, test_zero_tail_is_torn);
    tcase_add_test(tc, test_format_gate);
    tcase_add_test(tc, test_chain_break);
    tcase_add_test(tc, test_drain_and_truncate);
    tcase_add_test(tc, test_drain_keeps_margin);
    tcase_add_test(tc, test_append_enospc);
    tcase_add_test(tc, test_append_fatal);
    tcase_add_test(tc, test_drain_faults);
    tcase_add_test(tc, test_drop_damaged_prefix);
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
