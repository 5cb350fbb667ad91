/*
 * ipc/conntab.h - the node's client connection table in the shared
 * segment: one entry per open client connection of any data shard, so
 * max_connections holds node-wide (a connection is admitted only if it
 * gets an entry) and GetClients / GetClient see every data shard's
 * connections.
 *
 * Layout (pointer-free, position-independent; sizes pinned by
 * _Static_assert and checked at attach):
 *   [struct vs_conntab_hdr_shm]            magic, slots, entry size, the
 *                                          count of entries in use
 *   [slots x struct vs_conntab_entry_shm]  two cache lines each
 * slots = max_connections.
 *
 * Writers: an entry is claimed by one compare-and-swap of `state` (0 free
 * -> 1 + owner slot), then written ONLY by that data shard until it
 * releases it (state back to 0, release order) or the data shard it
 * handed the connection to adopts it (state 1 + old -> 1 + new, one
 * compare-and-swap; the old owner no longer writes it once it sent the
 * connection). Its fields are relaxed
 * atomics written under a per-entry sequence count (odd while writing,
 * fences order them), so a reader in any process never uses a torn entry:
 * it retries a bounded number of times and else skips the entry (only
 * while its writer is stalled or died mid-write). The supervisor releases
 * every entry of a data shard it reaped, before restarting it
 * (conntab_release_owner); a starting data shard does the same for its
 * slot, so a crashed shard's connections never count against the limit.
 *
 * Callers: the supervisor creates the region (seg_create) and reclaims a
 * reaped shard's entries (seg_slot_clear); data shards claim, update and
 * release their connections' entries and read any entry
 * (shard/serve/clients.c); tests.
 */
#ifndef VS_IPC_CONNTAB_H
#define VS_IPC_CONNTAB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

#define VS_CONNTAB_MAGIC    0x31544e4e4f435356ull /* "VSCONNT1" */
#define VS_CONNTAB_ADDR_MAX 64u

struct vs_conntab_hdr_shm {
    uint64_t magic;
    uint32_t slots;
    uint32_t entry_size;
    /* entries in use (claims minus releases; relaxed: a gauge) */
    _Atomic uint32_t used;
    uint8_t pad[44];
};

struct vs_conntab_entry_shm {
    _Atomic uint32_t state; /* 0 free, 1 + owner process slot */
    _Atomic uint32_t seq;   /* odd while the owner writes */
    _Atomic uint64_t conn_id;
    _Atomic uint64_t client_lo, client_hi; /* registered client, or 0 */
    _Atomic uint32_t user_id;              /* 0xFFFFFFFF: not logged in */
    _Atomic uint32_t addr_len;
    _Atomic uint64_t addr[VS_CONNTAB_ADDR_MAX / 8]; /* "ip:port" bytes */
    uint8_t pad[24];
};

_Static_assert(sizeof(struct vs_conntab_hdr_shm) == 64, "conntab header");
_Static_assert(sizeof(struct vs_conntab_entry_shm) == 128, "conntab entry");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "lock-free 64-bit atomics");

/* Bytes of a region of `slots` entries (0 if out of range). */
size_t conntab_region_size(uint32_t slots);
/* Formats the region. Supervisor, before fork. 0 or -EINVAL. */
int conntab_region_init(void *region, size_t len, uint32_t slots);

/* Process-private view. */
struct vs_conntab {
    struct vs_conntab_hdr_shm *hdr;
    struct vs_conntab_entry_shm *e;
    uint32_t slots;
    uint32_t hint; /* where this process's next claim starts looking */
};
/* 0, or -EPROTO if the region is not a table of this build. */
int conntab_attach(struct vs_conntab *t, void *region, size_t len);

/* Claims a free entry for connection conn_id of process slot `owner`
 * with its peer address, not logged in. The entry index, or -EMFILE
 * when every entry is in use (the node is at max_connections). */
int conntab_claim(struct vs_conntab *t, uint32_t owner, uint64_t conn_id,
                  const char *addr);
/* The session of entry idx (owner only): user and client, or
 * 0xFFFFFFFF and 0 when logged out. */
void conntab_set_session(struct vs_conntab *t, int idx, uint32_t user_id,
                         struct vs_u128 client);
/* Takes over entry idx from process slot `from` (a connection handed to
 * `owner`, ipc/handoff.h) under the new connection id, keeping its
 * address and session: one compare-and-swap of the owner, so the node's
 * count never drops and rises around a handoff. 0, or -ESTALE if the
 * entry is no longer `from`'s (the sender died and its entries were
 * released: claim a new one). */
int conntab_adopt(struct vs_conntab *t, int idx, uint32_t from, uint32_t owner,
                  uint64_t conn_id);
/* Frees entry idx (owner only). */
void conntab_release(struct vs_conntab *t, int idx);
/* Frees every entry of process slot `owner` (the supervisor after
 * reaping it, or the shard as it starts). Returns how many. */
uint32_t conntab_release_owner(struct vs_conntab *t, uint32_t owner);
/* Entries in use. */
uint32_t conntab_used(const struct vs_conntab *t);

struct conntab_info {
    uint32_t owner;
    uint64_t conn_id;
    uint32_t user_id;
    struct vs_u128 client;
    char addr[VS_CONNTAB_ADDR_MAX + 1];
};
/* A consistent copy of entry idx: 1 if in use, 0 if free or not readable
 * now (a writer mid-update). Any process. */
int conntab_read(const struct vs_conntab *t, uint32_t idx,
                 struct conntab_info *out);

#endif /* VS_IPC_CONNTAB_H */
