/*
 * tests/fuzz/fuzz_wal.c - libFuzzer target: the WAL scan and recovery over
 * arbitrary file contents (shard/storage/journal.c: wal_scan_file,
 * wal_open with its tail cut, wal_header, wal_read_body).
 *
 * Input: [ctl u8][journal.wal bytes]. ctl bit 0: reseal every entry the
 * walk reaches (body and identity checksums) so mutations get past them;
 * bit 1: with bit 0, also chain each entry to the one before (parent =
 * the previous identity checksum); bit 2: open with cut_damaged_tail.
 * Invariants checked (recovery never reports an op or offset that is not
 * in the file):
 *  - valid_end <= file size; CLEAN exactly when valid_end is the size;
 *  - an independent walk of [0, valid_end) finds `entries` prepares whose
 *    structure, identity, body checksum, op sequence and parent chain all
 *    hold, first_op/last_op among them, ending exactly at valid_end;
 *  - a bad position is valid_end, inside the file, with a reason;
 *  - a torn tail is only what DESIGN §4 calls torn: fewer bytes than a
 *    header, a header that is zero (or zero from a 4 KiB boundary on), or
 *    a header that verifies but declares a size past the end; anything
 *    else in the last entry is damage;
 *  - wal_open refuses (-EBADMSG) exactly the refusing verdicts (and an
 *    uncut damaged tail); once open the file is cut to valid_end, every
 *    op from first to last has its own header and a body that reads back.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/checksum.h"
#include "common/layout.h"
#include "common/wire.h"
#include "shard/storage/io.h"
#include "shard/storage/journal.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
reseal(uint8_t *b, size_t len, int chain)
{
    size_t pos = 0;
    struct vs_u128 prev = {0, 0};
    int have_prev = 0;
    while (len - pos >= VS_HEADER_SIZE) {
        struct vs_hdr_prepare h;
        memcpy(&h, b + pos, sizeof(h));
        if (h.f.size < VS_HEADER_SIZE || h.f.size > len - pos)
            break;
        if (chain && have_prev)
            h.parent = prev;
        vs_prepare_seal(&h, b + pos + VS_HEADER_SIZE,
                        h.f.size - VS_HEADER_SIZE);
        memcpy(b + pos, &h, sizeof(h));
        prev = h.f.checksum;
        have_prev = 1;
        pos += h.f.size;
    }
}

static int
all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

/* DESIGN §4's torn tail, for the bytes [pos, len). */
static int
design_torn(const uint8_t *b, size_t len, size_t pos)
{
    size_t rest = len - pos;
    if (rest < VS_HEADER_SIZE)
        return 1;
    if (all_zero(b + pos, VS_HEADER_SIZE))
        return 1;
    /* zero from a 4 KiB boundary inside the header on */
    size_t boundary = (pos + 4095) & ~(size_t)4095;
    if (boundary < pos + VS_HEADER_SIZE &&
        all_zero(b + boundary, pos + VS_HEADER_SIZE - boundary))
        return 1;
    struct vs_hdr_prepare h;
    memcpy(&h, b + pos, sizeof(h));
    return !vs_u128_is_zero(h.f.checksum) && vs_prepare_verify_identity(&h) &&
           h.f.size > rest;
}

static void
check_scan(const struct wal_scan *s, const uint8_t *b, size_t len)
{
    fuzz_check(s->file_size == len, "file_size is the file's");
    fuzz_check(s->valid_end <= len, "valid_end inside the file");
    fuzz_check((s->verdict == WAL_CLEAN) == (s->valid_end == len),
               "CLEAN exactly when every byte is valid");
    size_t pos = 0;
    uint64_t n = 0;
    struct vs_hdr_prepare prev, h;
    while (pos < s->valid_end) {
        fuzz_check(s->valid_end - pos >= VS_HEADER_SIZE, "header in range");
        memcpy(&h, b + pos, sizeof(h));
        fuzz_check(h.f.command == VS_CMD_PREPARE, "a valid entry is a prepare");
        fuzz_check(h.f.size >= VS_HEADER_SIZE && h.f.size <= s->valid_end - pos,
                   "a valid entry lies inside the valid range");
        fuzz_check(!vs_u128_is_zero(h.f.checksum) &&
                       vs_prepare_verify_identity(&h),
                   "a valid entry's identity verifies");
        fuzz_check(vs_u128_eq(vs_body_checksum(b + pos + VS_HEADER_SIZE,
                                               h.f.size - VS_HEADER_SIZE),
                              h.f.checksum_body),
                   "a valid entry's body verifies");
        fuzz_check(vs_wire_format_known(h.f.release),
                   "a valid entry's format is known");
        if (n == 0)
            fuzz_check(h.op == s->first_op, "first_op is the first entry's");
        else
            fuzz_check(h.op == prev.op + 1 &&
                           vs_u128_eq(h.parent, prev.f.checksum),
                       "valid entries chain");
        prev = h;
        n++;
        pos += h.f.size;
    }
    fuzz_check(pos == s->valid_end, "the entries end at valid_end");
    fuzz_check(n == s->entries, "entries counts the valid entries");
    if (n > 0)
        fuzz_check(prev.op == s->last_op, "last_op is the last entry's");
    if (s->verdict != WAL_CLEAN) {
        fuzz_check(s->reason[0] != '\0', "a verdict says why");
        fuzz_check(s->bad_offset == s->valid_end && s->bad_offset < len,
                   "the bad position is where the valid entries end");
    }
    if (s->verdict == WAL_TORN_TAIL && !design_torn(b, len, s->valid_end))
        fprintf(stderr, "scan: %s\n", s->reason);
    if (s->verdict == WAL_TORN_TAIL)
        fuzz_check(design_torn(b, len, s->valid_end),
                   "a torn tail is only a short, zero or overlong header");
    if (s->verdict == WAL_DAMAGED_TAIL)
        fuzz_check(!design_torn(b, len, s->valid_end),
                   "damage is not a torn tail");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sio_fault f;
    static int init;
    if (!init) {
        sio_fault_init(&f, 1);
        init = 1;
    }
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    size_t len = size - 1;
    uint8_t *b = malloc(len + 1);
    fuzz_check(b != NULL, "malloc");
    memcpy(b, data + 1, len);
    if (ctl & 1)
        reseal(b, len, ctl & 2);

    const char *dir = fuzz_dir();
    fuzz_write_file(dir, VS_JOURNAL_FILE, b, len);
    struct wal_options ro = {.read_only = 1};
    struct wal_scan s;
    int rc = wal_scan_file(&f.io, dir, &ro, &s);
    fuzz_check(rc == 0, "scanning a regular file succeeds");
    check_scan(&s, b, len);

    struct wal_options rw = {.cut_damaged_tail = (ctl & 4) != 0};
    struct wal w;
    struct wal_scan s2;
    rc = wal_open(&w, &f.io, dir, &rw, &s2);
    fuzz_check(s2.verdict == s.verdict && s2.valid_end == s.valid_end &&
                   s2.entries == s.entries,
               "open scans like the read-only scan");
    int refuse = wal_verdict_refuses(s.verdict) ||
                 (s.verdict == WAL_DAMAGED_TAIL && !rw.cut_damaged_tail);
    if (refuse) {
        fuzz_check(rc == -EBADMSG, "a refusing verdict refuses the open");
    } else {
        fuzz_check(rc == 0, "a booting verdict opens");
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, VS_JOURNAL_FILE);
        struct stat st;
        fuzz_check(stat(path, &st) == 0 && (uint64_t)st.st_size == s.valid_end,
                   "the open file is cut to valid_end");
        fuzz_check(wal_empty(&w) == (s.entries == 0), "empty iff no entry");
        if (!wal_empty(&w)) {
            fuzz_check(wal_first_op(&w) == s.first_op &&
                           wal_last_op(&w) == s.last_op,
                       "the open journal holds the scanned ops");
            static uint8_t body[65536];
            size_t pos = 0;
            for (uint64_t op = s.first_op;; op++) {
                const struct vs_hdr_prepare *h = wal_header(&w, op);
                fuzz_check(h != NULL && h->op == op, "each op has its header");
                fuzz_check(memcmp(h, b + pos, VS_HEADER_SIZE) == 0,
                           "the header is the file's bytes");
                long bl = wal_read_body(&w, op, body, sizeof(body));
                size_t want = h->f.size - VS_HEADER_SIZE;
                if (want <= sizeof(body))
                    fuzz_check(
                        bl == (long)want &&
                            memcmp(body, b + pos + VS_HEADER_SIZE, want) == 0,
                        "the body reads back");
                pos += h->f.size;
                if (op == s.last_op)
                    break;
            }
            fuzz_check(
                wal_header(&w, s.last_op + 1) == NULL &&
                    (s.first_op == 0 || wal_header(&w, s.first_op - 1) == NULL),
                "no op outside the file");
        }
        wal_close(&w);
    }
    free(b);
    fuzz_clear_dir(dir);
    return 0;
}
