/*
 * ipc/conntab.c - the node's shared client connection table; see
 * conntab.h for the layout, the writer rules and the callers.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "ipc/conntab.h"

#define CT_READ_TRIES 16

size_t
conntab_region_size(uint32_t slots)
{
    if (slots == 0 || slots > (1u << 24))
        return 0;
    return sizeof(struct vs_conntab_hdr_shm) +
           (size_t)slots * sizeof(struct vs_conntab_entry_shm);
}

int
conntab_region_init(void *region, size_t len, uint32_t slots)
{
    size_t need = conntab_region_size(slots);
    if (need == 0 || len < need)
        return -EINVAL;
    memset(region, 0, need);
    struct vs_conntab_hdr_shm *h = region;
    h->magic = VS_CONNTAB_MAGIC;
    h->slots = slots;
    h->entry_size = sizeof(struct vs_conntab_entry_shm);
    atomic_init(&h->used, 0);
    return 0;
}

int
conntab_attach(struct vs_conntab *t, void *region, size_t len)
{
    memset(t, 0, sizeof(*t));
    struct vs_conntab_hdr_shm *h = region;
    if (region == NULL || len < sizeof(*h) || h->magic != VS_CONNTAB_MAGIC ||
        h->entry_size != sizeof(struct vs_conntab_entry_shm) ||
        conntab_region_size(h->slots) == 0 ||
        conntab_region_size(h->slots) > len)
        return -EPROTO;
    t->hdr = h;
    t->e = (struct vs_conntab_entry_shm *)(h + 1);
    t->slots = h->slots;
    return 0;
}

/* Owner only: the write section of one entry. */
static void
ct_write_begin(struct vs_conntab_entry_shm *e)
{
    uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
    atomic_store_explicit(&e->seq, s + 1, memory_order_relaxed);
    /* pairs with the acquire fence in conntab_read: the odd seq is
     * visible before any field written after it */
    atomic_thread_fence(memory_order_release);
}

static void
ct_write_end(struct vs_conntab_entry_shm *e)
{
    uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
    /* pairs with the acquire load of seq in conntab_read */
    atomic_store_explicit(&e->seq, s + 1, memory_order_release);
}

int
conntab_claim(struct vs_conntab *t, uint32_t owner, uint64_t conn_id,
              const char *addr)
{
    if (t->hdr == NULL)
        return -EMFILE;
    for (uint32_t i = 0; i < t->slots; i++) {
        uint32_t idx = (t->hint + i) % t->slots;
        struct vs_conntab_entry_shm *e = &t->e[idx];
        uint32_t free_state = 0;
        if (atomic_load_explicit(&e->state, memory_order_relaxed) != 0 ||
            !atomic_compare_exchange_strong_explicit(
                &e->state, &free_state, owner + 1, memory_order_acq_rel,
                memory_order_relaxed))
            continue;
        t->hint = idx + 1;
        atomic_fetch_add_explicit(&t->hdr->used, 1, memory_order_relaxed);
        size_t n = strnlen(addr, VS_CONNTAB_ADDR_MAX);
        uint8_t a[VS_CONNTAB_ADDR_MAX] = {0};
        memcpy(a, addr, n);
        ct_write_begin(e);
        atomic_store_explicit(&e->conn_id, conn_id, memory_order_relaxed);
        atomic_store_explicit(&e->client_lo, 0, memory_order_relaxed);
        atomic_store_explicit(&e->client_hi, 0, memory_order_relaxed);
        atomic_store_explicit(&e->user_id, UINT32_MAX, memory_order_relaxed);
        atomic_store_explicit(&e->addr_len, (uint32_t)n, memory_order_relaxed);
        for (size_t k = 0; k < VS_CONNTAB_ADDR_MAX / 8; k++) {
            uint64_t w;
            memcpy(&w, a + 8 * k, 8);
            atomic_store_explicit(&e->addr[k], w, memory_order_relaxed);
        }
        ct_write_end(e);
        return (int)idx;
    }
    return -EMFILE;
}

void
conntab_set_session(struct vs_conntab *t, int idx, uint32_t user_id,
                    struct vs_u128 client)
{
    if (t->hdr == NULL || idx < 0 || (uint32_t)idx >= t->slots)
        return;
    struct vs_conntab_entry_shm *e = &t->e[idx];
    ct_write_begin(e);
    atomic_store_explicit(&e->user_id, user_id, memory_order_relaxed);
    atomic_store_explicit(&e->client_lo, client.lo, memory_order_relaxed);
    atomic_store_explicit(&e->client_hi, client.hi, memory_order_relaxed);
    ct_write_end(e);
}

int
conntab_adopt(struct vs_conntab *t, int idx, uint32_t from, uint32_t owner,
              uint64_t conn_id)
{
    if (t->hdr == NULL || idx < 0 || (uint32_t)idx >= t->slots)
        return -ESTALE;
    struct vs_conntab_entry_shm *e = &t->e[idx];
    uint32_t want = from + 1;
    if (!atomic_compare_exchange_strong_explicit(&e->state, &want, owner + 1,
                                                 memory_order_acq_rel,
                                                 memory_order_relaxed))
        return -ESTALE;
    ct_write_begin(e);
    atomic_store_explicit(&e->conn_id, conn_id, memory_order_relaxed);
    ct_write_end(e);
    return 0;
}

static void
ct_free(struct vs_conntab *t, struct vs_conntab_entry_shm *e)
{
    /* release: a later claimer sees the entry's last writes done */
    atomic_store_explicit(&e->state, 0, memory_order_release);
    atomic_fetch_sub_explicit(&t->hdr->used, 1, memory_order_relaxed);
}

void
conntab_release(struct vs_conntab *t, int idx)
{
    if (t->hdr == NULL || idx < 0 || (uint32_t)idx >= t->slots)
        return;
    struct vs_conntab_entry_shm *e = &t->e[idx];
    if (atomic_load_explicit(&e->state, memory_order_relaxed) != 0)
        ct_free(t, e);
}

uint32_t
conntab_release_owner(struct vs_conntab *t, uint32_t owner)
{
    uint32_t n = 0;
    if (t->hdr == NULL)
        return 0;
    for (uint32_t i = 0; i < t->slots; i++) {
        struct vs_conntab_entry_shm *e = &t->e[i];
        if (atomic_load_explicit(&e->state, memory_order_acquire) != owner + 1)
            continue;
        /* a reaped owner died mid-write: make the seq even again */
        uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
        if (s & 1u)
            atomic_store_explicit(&e->seq, s + 1, memory_order_relaxed);
        ct_free(t, e);
        n++;
    }
    return n;
}

uint32_t
conntab_used(const struct vs_conntab *t)
{
    return t->hdr == NULL
               ? 0
               : atomic_load_explicit(&t->hdr->used, memory_order_relaxed);
}

int
conntab_read(const struct vs_conntab *t, uint32_t idx, struct conntab_info *out)
{
    if (t->hdr == NULL || idx >= t->slots)
        return 0;
    struct vs_conntab_entry_shm *e = &t->e[idx];
    for (int tries = 0; tries < CT_READ_TRIES; tries++) {
        uint32_t st = atomic_load_explicit(&e->state, memory_order_acquire);
        if (st == 0)
            return 0;
        uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
        if (s1 & 1u)
            continue;
        out->owner = st - 1;
        out->conn_id = atomic_load_explicit(&e->conn_id, memory_order_relaxed);
        out->client.lo =
            atomic_load_explicit(&e->client_lo, memory_order_relaxed);
        out->client.hi =
            atomic_load_explicit(&e->client_hi, memory_order_relaxed);
        out->user_id = atomic_load_explicit(&e->user_id, memory_order_relaxed);
        uint32_t n = atomic_load_explicit(&e->addr_len, memory_order_relaxed);
        uint8_t a[VS_CONNTAB_ADDR_MAX];
        for (size_t k = 0; k < VS_CONNTAB_ADDR_MAX / 8; k++) {
            uint64_t w =
                atomic_load_explicit(&e->addr[k], memory_order_relaxed);
            memcpy(a + 8 * k, &w, 8);
        }
        /* pairs with the release fence in ct_write_begin: if a write
         * section overlapped the loads above, seq differs now */
        atomic_thread_fence(memory_order_acquire);
        uint32_t s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
        if (s1 != s2 ||
            atomic_load_explicit(&e->state, memory_order_relaxed) != st)
            continue;
        if (n > VS_CONNTAB_ADDR_MAX)
            n = VS_CONNTAB_ADDR_MAX;
        memcpy(out->addr, a, n);
        out->addr[n] = '\0';
        return 1;
    }
    return 0;
}
