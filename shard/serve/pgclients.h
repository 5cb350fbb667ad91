/*
 * shard/serve/pgclients.h - a partition group's client table: what every
 * replica of the group remembers of each client's committed proposals, so
 * that a retried or late copy of a send or a consumer-offset op is
 * answered again instead of being committed twice (pgroup.h, Replies).
 *
 * Role: per Register'd client id (never a transport or connection id),
 * its highest committed request number and its last PGC_KEEP committed
 * proposals (request number, request checksum, op, base offset,
 * operation, result code); at most `capacity` clients, the least
 * recently committed one evicted when a new client commits into a full
 * table. The table is a function of the committed ops alone (recorded in
 * op order by the COMMIT of each op) plus the eviction order, so every
 * replica holds the same one at the same op.
 * Persistence: pgc_save writes it (as of an applied op) to
 * <partition>/clients atomically and durably; the group saves it before
 * every checkpoint of its engine, so the table survives a restart even
 * for the ops the recovered journal window no longer holds (pgc_load,
 * then the ops above the saved op are recorded again by their replay).
 * File "VSPC": magic | version u32 | op u64 | commits u64 | count u32 |
 * per client: client u128, max_request u64, used u64, next u8, n u8
 * (entries used, 0..PGC_KEEP), 2 zero bytes, then PGC_KEEP entries of
 * request u64, request_checksum u128, op u64, base_offset u64,
 * operation u8, 3 zero bytes, code u32 | XXH3-64 of everything before,
 * u64 (all little endian). The decoder refuses a bad magic, version,
 * checksum, size, zero or duplicate client ids, count over the capacity,
 * ring fields out of range and non-zero padding.
 * Invariants: an entry's op is unique in the table; max_request is the
 * highest request number the client ever committed (kept across the
 * eviction of its ring entries, lost only with the whole client).
 * Process: data shards (loop thread of the owning shard); tests.
 */
#ifndef VS_SHARD_SERVE_PGCLIENTS_H
#define VS_SHARD_SERVE_PGCLIENTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/wire.h"
#include "shard/storage/io.h"

#define PGC_KEEP       4u /* committed proposals kept per client */
#define PGC_FILE       "clients"
#define PGC_VERSION    1u
#define PGC_ENTRY_LEN  48u
#define PGC_CLIENT_LEN (40u + PGC_KEEP * PGC_ENTRY_LEN)

struct pgc_done {
    uint64_t request;
    struct vs_u128 request_checksum;
    uint64_t op;
    uint64_t base_offset; /* sends */
    uint8_t operation;
    uint32_t code; /* apply result */
    int used;
};

struct pgc_client {
    struct vs_u128 client;
    struct pgc_done done[PGC_KEEP]; /* ring, newest at next - 1 */
    unsigned next;
    uint64_t max_request; /* highest request number committed */
    uint64_t used;        /* commit counter when last updated (LRU) */
};

struct pgc_table {
    struct pgc_client *c;
    size_t n, cap, capacity; /* cap allocated, capacity the bound */
    uint64_t commits;        /* the LRU counter */
};

/* An empty table of at most `capacity` (>= 1) clients. */
void pgc_init(struct pgc_table *t, size_t capacity);
void pgc_fini(struct pgc_table *t);
void pgc_clear(struct pgc_table *t);

const struct pgc_client *pgc_find(const struct pgc_table *t,
                                  struct vs_u128 client);
/* The committed proposal (client, request, checksum), or NULL. */
const struct pgc_done *pgc_done_find(const struct pgc_table *t,
                                     struct vs_u128 client, uint64_t request,
                                     struct vs_u128 request_checksum);
/* Records a committed op of a client (a zero client is not recorded; an
 * op already in the client's ring is not recorded twice). */
void pgc_record(struct pgc_table *t, const struct vs_hdr_prepare *h,
                uint64_t base_offset, uint32_t code);

/* The "VSPC" form (see above) as of applied op `op`. */
void pgc_encode(const struct pgc_table *t, uint64_t op, struct vs_wbuf *out);
/* Replaces t's content with a decoded one. 0 and *op, or -EBADMSG (t
 * unchanged). */
int pgc_decode(struct pgc_table *t, const uint8_t *b, size_t len, uint64_t *op);

/* Writes DIR/clients atomically and durably. 0 or -errno / -ENOSPC /
 * -VS_EFATAL. */
int pgc_save(const struct pgc_table *t, uint64_t op, struct vs_sio *io,
             const char *dir);
/* Reads DIR/clients into t: 0 and *op (0 and *op = 0 when absent), or
 * -EBADMSG (damaged) or another -errno. */
int pgc_load(struct pgc_table *t, struct vs_sio *io, const char *dir,
             uint64_t *op);

#endif /* VS_SHARD_SERVE_PGCLIENTS_H */
