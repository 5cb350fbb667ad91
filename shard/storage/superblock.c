/*
 * shard/storage/superblock.c - ping-pong superblock records.
 *
 * Invariants (see superblock.h for the format):
 *  - a slot is ABSENT only when its file does not exist; anything else
 *    that is not a clean record of a known version is CORRUPT or
 *    UNKNOWN_VERSION, and either makes the read UNREADABLE and the store
 *    degraded (read-only), so a later write can never overwrite the
 *    evidence of a possibly newer record (seed #3767 review);
 *  - the two slots of a healthy store hold adjacent sequences, or exactly
 *    superblock.a at sequence 1 beside an absent superblock.b (the first
 *    write goes to slot a). Anything else -- equal sequences (a fork), a
 *    gap, or a valid slot beyond sequence 1 beside an absent one (a lost
 *    slot file) -- is UNREADABLE: the newest record may be the lost one.
 * Callers: see superblock.h.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checksum.h"
#include "common/layout.h"
#include "shard/storage/superblock.h"

static void
put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

const char *
sb_slot_name(int slot)
{
    return slot == 0 ? VS_SUPERBLOCK_A : VS_SUPERBLOCK_B;
}

size_t
sb_record_encode(uint16_t version, uint64_t sequence, const void *payload,
                 size_t payload_len, uint8_t *out)
{
    if (payload_len > SB_PAYLOAD_MAX)
        return 0;
    memcpy(out, SB_MAGIC, 4);
    put_le(out + 4, version, 2);
    put_le(out + 6, 0, 2);
    put_le(out + 8, sequence, 8);
    put_le(out + 16, 0, 8); /* parent_checksum: 0 until used */
    put_le(out + 24, payload_len, 4);
    if (payload_len)
        memcpy(out + SB_HEADER_SIZE, payload, payload_len);
    size_t body = SB_HEADER_SIZE + payload_len;
    put_le(out + body, vs_xxh3_64(out, body), 8);
    return body + SB_TRAILER_SIZE;
}

static void slot_set(struct sb_slot *out, enum sb_slot_state st,
                     const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
slot_set(struct sb_slot *out, enum sb_slot_state st, const char *fmt, ...)
{
    out->state = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
    va_end(ap);
}

void
sb_slot_classify(const uint8_t *buf, size_t len, int present,
                 struct sb_slot *out)
{
    memset(out, 0, sizeof(*out));
    if (!present) {
        slot_set(out, SB_SLOT_ABSENT, "absent");
        return;
    }
    if (len == 0) {
        slot_set(out, SB_SLOT_CORRUPT, "zero-length file");
        return;
    }
    if (len < 4 || memcmp(buf, SB_MAGIC, 4) != 0) {
        slot_set(out, SB_SLOT_CORRUPT, "bad magic");
        return;
    }
    if (len < SB_HEADER_SIZE + SB_TRAILER_SIZE) {
        slot_set(out, SB_SLOT_CORRUPT, "truncated record (%zu bytes)", len);
        return;
    }
    /* The framing and its checksum first: no field, the version
     * included, is trusted before the record verifies. */
    uint32_t plen = (uint32_t)get_le(buf + 24, 4);
    if (plen > SB_PAYLOAD_MAX) {
        slot_set(out, SB_SLOT_CORRUPT, "payload length %u exceeds %u", plen,
                 SB_PAYLOAD_MAX);
        return;
    }
    size_t body = SB_HEADER_SIZE + plen;
    if (len != body + SB_TRAILER_SIZE) {
        slot_set(out, SB_SLOT_CORRUPT,
                 "file is %zu bytes, the record needs %zu", len,
                 body + SB_TRAILER_SIZE);
        return;
    }
    if (get_le(buf + body, 8) != vs_xxh3_64(buf, body)) {
        slot_set(out, SB_SLOT_CORRUPT, "checksum mismatch");
        return;
    }
    uint16_t version = (uint16_t)get_le(buf + 4, 2);
    out->version = version;
    if (version < SB_VERSION_MIN || version > SB_VERSION) {
        slot_set(out, SB_SLOT_UNKNOWN_VERSION,
                 "record format version %u is unknown to this release "
                 "(knows %u..%u)",
                 (unsigned)version, SB_VERSION_MIN, SB_VERSION);
        return;
    }
    if (get_le(buf + 6, 2) != 0) {
        slot_set(out, SB_SLOT_CORRUPT, "nonzero padding");
        return;
    }
    uint64_t seq = get_le(buf + 8, 8);
    if (seq == 0) {
        slot_set(out, SB_SLOT_CORRUPT, "sequence 0");
        return;
    }
    out->state = SB_SLOT_VALID;
    out->sequence = seq;
    out->payload_len = plen;
    memcpy(out->payload, buf + SB_HEADER_SIZE, plen);
    snprintf(out->reason, sizeof(out->reason), "valid");
}

static int
read_slot(struct vs_sio *io, const char *dir, int slot, struct sb_slot *out)
{
    char path[AFILE_PATH_MAX];
    int rc = afile_join(path, sizeof(path), dir, sb_slot_name(slot));
    if (rc < 0)
        return rc;
    uint8_t *buf = NULL;
    size_t len = 0;
    rc = afile_read_all(io, path, SB_RECORD_MAX, &buf, &len);
    if (rc == -ENOENT) {
        sb_slot_classify(NULL, 0, 0, out);
        return 0;
    }
    if (rc == -EFBIG) {
        memset(out, 0, sizeof(*out));
        slot_set(out, SB_SLOT_CORRUPT, "file larger than any record");
        return 0;
    }
    if (rc < 0)
        return rc;
    sb_slot_classify(buf, len, 1, out);
    free(buf);
    return 0;
}

static int
slot_bad(const struct sb_slot *s)
{
    return s->state == SB_SLOT_CORRUPT || s->state == SB_SLOT_UNKNOWN_VERSION;
}

/* Combines two classified slots into the read verdict. */
static void
combine(struct sb_read *r)
{
    const struct sb_slot *a = &r->slot[0], *b = &r->slot[1];
    r->newest = -1;
    r->payload = NULL;
    r->reason[0] = '\0';
    if (slot_bad(a) || slot_bad(b)) {
        r->verdict = SB_UNREADABLE;
        if (slot_bad(a) && slot_bad(b))
            snprintf(r->reason, sizeof(r->reason), "%s: %s; %s: %s",
                     sb_slot_name(0), a->reason, sb_slot_name(1), b->reason);
        else {
            int i = slot_bad(a) ? 0 : 1;
            snprintf(r->reason, sizeof(r->reason),
                     "%s: %s (beside %s %s: the damaged slot may hold the "
                     "newer record)",
                     sb_slot_name(i), r->slot[i].reason, sb_slot_name(!i),
                     sb_slot_state_name(r->slot[!i].state));
        }
        return;
    }
    if (a->state == SB_SLOT_ABSENT && b->state == SB_SLOT_ABSENT) {
        r->verdict = SB_EMPTY;
        return;
    }
    int newest;
    if (a->state == SB_SLOT_VALID && b->state == SB_SLOT_VALID) {
        if (a->sequence == b->sequence) {
            r->verdict = SB_UNREADABLE;
            snprintf(r->reason, sizeof(r->reason),
                     "both slots carry sequence %llu (a fork)",
                     (unsigned long long)a->sequence);
            return;
        }
        newest = a->sequence > b->sequence ? 0 : 1;
        uint64_t hi = r->slot[newest].sequence, lo = r->slot[!newest].sequence;
        if (hi - lo != 1) {
            r->verdict = SB_UNREADABLE;
            snprintf(r->reason, sizeof(r->reason),
                     "slot sequences %llu and %llu are not adjacent (a "
                     "superblock write was lost)",
                     (unsigned long long)hi, (unsigned long long)lo);
            return;
        }
    } else {
        newest = a->state == SB_SLOT_VALID ? 0 : 1;
        /* Only the very first write leaves one slot absent, and it goes
         * to slot a with sequence 1. */
        if (newest != 0 || r->slot[0].sequence != 1) {
            r->verdict = SB_UNREADABLE;
            snprintf(r->reason, sizeof(r->reason),
                     "%s is absent beside %s at sequence %llu (a slot file "
                     "was lost; it may have held the newer record)",
                     sb_slot_name(!newest), sb_slot_name(newest),
                     (unsigned long long)r->slot[newest].sequence);
            return;
        }
    }
    r->verdict = SB_PRESENT;
    r->newest = newest;
    r->version = r->slot[newest].version;
    r->sequence = r->slot[newest].sequence;
    r->payload_len = r->slot[newest].payload_len;
    r->payload = r->slot[newest].payload;
}

int
sb_read_latest(struct vs_sio *io, const char *dir, struct sb_read *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < 2; i++) {
        int rc = read_slot(io, dir, i, &out->slot[i]);
        if (rc < 0)
            return rc;
    }
    combine(out);
    return 0;
}

int
sb_open(struct sb_store *s, struct vs_sio *io, const char *dir,
        struct sb_read *out)
{
    memset(s, 0, sizeof(*s));
    s->io = io;
    s->newest = -1;
    if (snprintf(s->dir, sizeof(s->dir), "%s", dir) >= (int)sizeof(s->dir))
        return -ENAMETOOLONG;
    /* A crash between tmp-write and rename leaves a .tmp: the old record
     * wins; the .tmp is ignored by reads and removed here. */
    for (int i = 0; i < 2; i++) {
        int rc = afile_cleanup_tmp(io, dir, sb_slot_name(i));
        if (rc < 0)
            return rc;
    }
    struct sb_read local;
    struct sb_read *r = out ? out : &local;
    int rc = sb_read_latest(io, dir, r);
    if (rc < 0)
        return rc;
    if (r->verdict == SB_UNREADABLE) {
        s->degraded = 1;
        return 0;
    }
    if (r->verdict == SB_PRESENT) {
        s->newest = r->newest;
        s->sequence = r->sequence;
    }
    return 0;
}

int
sb_store_writable(const struct sb_store *s)
{
    return !s->degraded && !s->poisoned;
}

int
sb_write(struct sb_store *s, const void *payload, size_t len)
{
    if (s->poisoned)
        return -VS_EFATAL;
    if (s->degraded)
        return -EROFS;
    if (len > SB_PAYLOAD_MAX)
        return -EINVAL;
    uint8_t rec[SB_RECORD_MAX];
    int target = s->newest == 0 ? 1 : 0;
    uint64_t seq = s->sequence + 1;
    size_t n = sb_record_encode(SB_VERSION, seq, payload, len, rec);
    int rc = afile_replace(s->io, s->dir, sb_slot_name(target), rec, n);
    if (rc == -VS_EFATAL)
        s->poisoned = 1;
    if (rc < 0)
        return rc;
    s->newest = target;
    s->sequence = seq;
    return 0;
}

const char *
sb_verdict_name(enum sb_verdict v)
{
    switch (v) {
    case SB_EMPTY:
        return "empty";
    case SB_PRESENT:
        return "present";
    case SB_UNREADABLE:
        return "unreadable";
    }
    return "unknown";
}

const char *
sb_slot_state_name(enum sb_slot_state st)
{
    switch (st) {
    case SB_SLOT_ABSENT:
        return "absent";
    case SB_SLOT_VALID:
        return "valid";
    case SB_SLOT_CORRUPT:
        return "corrupt";
    case SB_SLOT_UNKNOWN_VERSION:
        return "unknown-version";
    }
    return "unknown";
}
