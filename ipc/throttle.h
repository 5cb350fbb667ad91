/*
 * ipc/throttle.h - the failed-login throttle table in the node's shared
 * segment: consecutive failures and the back-off deadline per key (a user
 * name or a source address), shared by every data shard.
 *
 * Why shared memory and not one owner: a client may open each attempt on
 * a new connection, and connections land on any data shard, so the count
 * must be node-wide. Routing every decision through shard 0 would put an
 * IPC round trip (and shard 0's liveness) in front of every login and
 * make throttling stop while shard 0 restarts; the table here is read and
 * updated in a few hundred nanoseconds by the shard that holds the
 * connection, with no I/O, and survives any shard's restart.
 *
 * Layout (pointer-free, position-independent; sizes pinned by
 * _Static_assert and checked at attach):
 *   [struct vs_throttle_hdr_shm]            magic, slots, entry size and
 *                                           one robust process-shared mutex
 *   [slots x struct vs_throttle_entry_shm]  one cache line each
 * Keys are 64-bit hashes (never 0: 0 marks a never-used entry). Open
 * addressing with linear probing over at most THROTTLE_PROBE entries from
 * key % slots; entries are never emptied (a key's counters are reset in
 * place), so a probe stops at the first never-used entry. A key that finds
 * no room takes the entry in its window whose last failure is oldest.
 *
 * Concurrency: every access holds the mutex (critical sections are a
 * probe of a few cache lines, never I/O, never blocking). It is robust:
 * a data shard that dies holding it leaves it EOWNERDEAD, and the next
 * locker marks it consistent (an entry half-updated by the dead shard is
 * at worst a count off by one). Time is CLOCK_MONOTONIC milliseconds,
 * which is one clock for every process of the machine.
 *
 * Callers: the supervisor initialises the region before fork (seg_create
 * via throttle_region_init); data shards use it (shard/serve/throttle.c);
 * tests.
 */
#ifndef VS_IPC_THROTTLE_H
#define VS_IPC_THROTTLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define VS_THROTTLE_MAGIC 0x31544f5248545356ull /* "VSTHROT1" */
#define THROTTLE_PROBE    32u
/* A node's table: 8192 user names and addresses with recent failures
 * (512 KiB); past that the oldest failure in a probe window gives way. */
#define VS_THROTTLE_NODE_SLOTS 8192u

struct vs_throttle_hdr_shm {
    uint64_t magic;
    uint32_t slots;
    uint32_t entry_size;
    uint8_t pad[48];
    union {
        pthread_mutex_t m; /* robust, PTHREAD_PROCESS_SHARED */
        uint8_t bytes[64];
    } lock;
};

struct vs_throttle_entry_shm {
    uint64_t key;          /* 0: never used */
    uint64_t until_ms;     /* attempts before this are refused */
    uint64_t last_fail_ms; /* last failure (0: none) */
    uint64_t logged_ms;    /* last failure report logged (0: never) */
    uint32_t failures;     /* consecutive failures */
    uint32_t unlogged;     /* failures since the last report */
    uint8_t pad[24];
};

_Static_assert(sizeof(pthread_mutex_t) <= 64, "mutex fits its slot");
_Static_assert(sizeof(struct vs_throttle_hdr_shm) == 128, "throttle header");
_Static_assert(sizeof(struct vs_throttle_entry_shm) == 64, "throttle entry");

/* Bytes of a region of `slots` entries (0 if slots is 0 or too large). */
size_t throttle_region_size(uint32_t slots);
/* Formats the region (header, mutex, zero entries). Supervisor, before
 * fork. 0 or -errno. */
int throttle_region_init(void *region, size_t len, uint32_t slots);

/* Process-private view of an initialised region. */
struct vs_throttle {
    struct vs_throttle_hdr_shm *hdr;
    struct vs_throttle_entry_shm *e;
    uint32_t slots;
};
/* 0, or -EPROTO if the region does not hold a table of this build. */
int throttle_attach(struct vs_throttle *t, void *region, size_t len);

#define THROTTLE_ID_MAX 255u
/* The key of an identity: XXH3-64 of kind (one byte) + its first
 * THROTTLE_ID_MAX bytes, never 0. */
uint64_t throttle_key(uint8_t kind, const void *id, size_t len);

/* 0 if an attempt for key is allowed at now_ms, else the ms until it is.
 * Failures older than forget_ms are forgotten. */
uint64_t throttle_wait_ms(struct vs_throttle *t, uint64_t key, uint64_t now_ms,
                          uint64_t forget_ms);

struct throttle_policy {
    uint64_t base_ms;         /* delay after the first failure */
    uint64_t max_ms;          /* longest delay; also the forget window */
    uint64_t log_interval_ms; /* one report per key per interval */
};

/* What a recorded failure did. */
struct throttle_fail {
    uint32_t failures; /* consecutive, this one included */
    uint64_t delay_ms; /* the back-off it set */
    int report;        /* 1: log it now (first, or interval passed) */
    uint32_t unlogged; /* failures the report covers */
};
/* Records a failure of key at now_ms: failures + 1 (restarting from 1
 * when the last failure is older than max_ms), the next attempt waits
 * min(base x 2^(failures-1), max). */
void throttle_failed(struct vs_throttle *t, uint64_t key, uint64_t now_ms,
                     const struct throttle_policy *p,
                     struct throttle_fail *out);
/* A success for key: its failures are forgotten. */
void throttle_succeeded(struct vs_throttle *t, uint64_t key);

#endif /* VS_IPC_THROTTLE_H */
