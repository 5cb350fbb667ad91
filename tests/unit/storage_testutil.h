/*
 * tests/unit/storage_testutil.h - fixtures shared by the storage tests:
 * temporary dirs, whole-file read/write, sealed prepares, VsrStates,
 * the journal's durable mark (set to an op, or removed as by an older
 * release).
 * Test code only (static functions; each test program includes it once).
 */
#ifndef VS_TESTS_STORAGE_TESTUTIL_H
#define VS_TESTS_STORAGE_TESTUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/layout.h"
#include "common/mem.h"
#include "common/wire.h"
#include "shard/storage/vsr_state.h"
#include "shard/storage/wal_mark.h"

static inline int
tu_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a directory tree (test dirs only). */
static inline void
tu_rm_rf(const char *path)
{
    nftw(path, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Creates /tmp/vs-storage-XXXXXX and its metadata/ subdir. */
static inline void
tu_mkdtemp(char *out, size_t cap, char *meta, size_t meta_cap)
{
    snprintf(out, cap, "/tmp/vs-storage-XXXXXX");
    if (!mkdtemp(out))
        abort();
    if (meta) {
        snprintf(meta, meta_cap, "%s/%s", out, VS_METADATA_DIR);
        if (mkdir(meta, 0700) == -1)
            abort();
    }
}

static inline void
tu_write_file(const char *dir, const char *name, const void *buf, size_t len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (len && fwrite(buf, 1, len, f) != len)
        abort();
    fclose(f);
}

/* Reads a whole file (malloc'd, caller frees); NULL if absent. */
static inline uint8_t *
tu_read_file(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = vs_xmalloc(n > 0 ? (size_t)n : 1);
    if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)
        abort();
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static inline int
tu_exists(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

/* The journal of META as an older release left it: no durable mark. */
static inline void
tu_mark_remove(const char *meta)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", meta, WAL_MARK_FILE);
    if (unlink(path) == -1 && errno != ENOENT)
        abort();
}

/* META's durable mark says every entry up to `op` completed an fsync. */
static inline void
tu_mark_set(const char *meta, uint64_t op)
{
    uint8_t b[WAL_MARK_SLOT_GAP + WAL_MARK_SLOT_SIZE];
    memset(b, 0, sizeof(b));
    wal_mark_encode(1, op, b + WAL_MARK_SLOT_GAP);
    tu_write_file(meta, WAL_MARK_FILE, b, sizeof(b));
}

static inline struct vs_u128
tu_cluster(void)
{
    struct vs_u128 c = {.lo = 0x1122334455667788ull,
                        .hi = 0x99aabbccddeeff00ull};
    return c;
}

/* A sealed prepare with a deterministic body of body_len bytes. */
static inline void
tu_prepare(struct vs_hdr_prepare *h, uint8_t *body, size_t body_len,
           uint64_t op, struct vs_u128 parent, uint32_t release)
{
    memset(h, 0, sizeof(*h));
    for (size_t i = 0; i < body_len; i++)
        body[i] = (uint8_t)(op * 31 + i * 7);
    h->f.cluster = tu_cluster();
    h->f.size = (uint32_t)(VS_HEADER_SIZE + body_len);
    h->f.view = 1;
    h->f.release = release;
    h->f.command = VS_CMD_PREPARE;
    h->op = op;
    h->commit = op ? op - 1 : 0;
    h->parent = parent;
    h->operation = VS_OP_CREATE_STREAM;
    h->group = VS_METADATA_GROUP;
    vs_prepare_seal(h, body, body_len);
}

static inline struct vs_vsr_state
tu_state(uint32_t view, uint64_t cp_op, struct vs_u128 cp_cs)
{
    struct vs_vsr_state s;
    memset(&s, 0, sizeof(s));
    s.cluster = tu_cluster();
    s.replica_id = 0;
    s.replica_count = 1;
    s.view = view;
    s.log_view = view;
    s.commit_max = cp_op;
    s.checkpoint_op = cp_op;
    s.checkpoint_checksum = cp_cs;
    return s;
}

#endif /* VS_TESTS_STORAGE_TESTUTIL_H */
