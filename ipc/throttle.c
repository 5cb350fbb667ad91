/*
 * ipc/throttle.c - the shared failed-login throttle table; see
 * throttle.h for the layout, the locking and who calls what.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <xxhash.h>

#include "common/log.h"
#include "ipc/throttle.h"

size_t
throttle_region_size(uint32_t slots)
{
    if (slots == 0 || slots > (1u << 24))
        return 0;
    return sizeof(struct vs_throttle_hdr_shm) +
           (size_t)slots * sizeof(struct vs_throttle_entry_shm);
}

int
throttle_region_init(void *region, size_t len, uint32_t slots)
{
    size_t need = throttle_region_size(slots);
    if (need == 0 || len < need)
        return -EINVAL;
    memset(region, 0, need);
    struct vs_throttle_hdr_shm *h = region;
    h->magic = VS_THROTTLE_MAGIC;
    h->slots = slots;
    h->entry_size = sizeof(struct vs_throttle_entry_shm);
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc != 0)
        return -rc;
    rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (rc == 0)
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (rc == 0)
        rc = pthread_mutex_init(&h->lock.m, &a);
    pthread_mutexattr_destroy(&a);
    return -rc;
}

int
throttle_attach(struct vs_throttle *t, void *region, size_t len)
{
    memset(t, 0, sizeof(*t));
    struct vs_throttle_hdr_shm *h = region;
    if (region == NULL || len < sizeof(*h) || h->magic != VS_THROTTLE_MAGIC ||
        h->entry_size != sizeof(struct vs_throttle_entry_shm) ||
        throttle_region_size(h->slots) == 0 ||
        throttle_region_size(h->slots) > len)
        return -EPROTO;
    t->hdr = h;
    t->e = (struct vs_throttle_entry_shm *)(h + 1);
    t->slots = h->slots;
    return 0;
}

uint64_t
throttle_key(uint8_t kind, const void *id, size_t len)
{
    uint8_t buf[1 + THROTTLE_ID_MAX];
    if (len > THROTTLE_ID_MAX)
        len = THROTTLE_ID_MAX;
    buf[0] = kind;
    memcpy(buf + 1, id, len);
    uint64_t k = XXH3_64bits(buf, len + 1);
    return k != 0 ? k : 1;
}

/* 0 with the lock held, or -1 (unusable: the caller goes on unthrottled,
 * which the log says once). */
static int
th_lock(struct vs_throttle *t)
{
    int rc = pthread_mutex_lock(&t->hdr->lock.m);
    if (rc == EOWNERDEAD) {
        /* a data shard died holding it: entries are plain counters, at
         * worst one of them missed an update */
        vs_log_warn("login throttle: a process died holding the table "
                    "lock: recovered");
        pthread_mutex_consistent(&t->hdr->lock.m);
        return 0;
    }
    if (rc != 0) {
        static int said;
        if (!said) {
            said = 1;
            vs_log_error("login throttle: table lock unusable (%s): logins "
                         "go unthrottled",
                         strerror(rc));
        }
        return -1;
    }
    return 0;
}

static void
th_unlock(struct vs_throttle *t)
{
    pthread_mutex_unlock(&t->hdr->lock.m);
}

/* Lock held. The entry of key, or NULL (not present, create == 0). With
 * create, a never-used entry of the window, else the one whose last
 * failure is oldest, reset to key. */
static struct vs_throttle_entry_shm *
th_find(struct vs_throttle *t, uint64_t key, int create)
{
    uint32_t n = t->slots < THROTTLE_PROBE ? t->slots : THROTTLE_PROBE;
    uint32_t at = (uint32_t)(key % t->slots);
    struct vs_throttle_entry_shm *oldest = NULL;
    for (uint32_t i = 0; i < n; i++) {
        struct vs_throttle_entry_shm *e = &t->e[(at + i) % t->slots];
        if (e->key == key)
            return e;
        if (e->key == 0) {
            if (!create)
                return NULL;
            oldest = e;
            break;
        }
        if (oldest == NULL || e->last_fail_ms < oldest->last_fail_ms)
            oldest = e;
    }
    if (!create)
        return NULL;
    memset(oldest, 0, sizeof(*oldest));
    oldest->key = key;
    return oldest;
}

uint64_t
throttle_wait_ms(struct vs_throttle *t, uint64_t key, uint64_t now_ms,
                 uint64_t forget_ms)
{
    if (t->hdr == NULL || th_lock(t) != 0)
        return 0;
    uint64_t wait = 0;
    const struct vs_throttle_entry_shm *e = th_find(t, key, 0);
    if (e != NULL && e->failures > 0 && now_ms - e->last_fail_ms <= forget_ms &&
        e->until_ms > now_ms)
        wait = e->until_ms - now_ms;
    th_unlock(t);
    return wait;
}

void
throttle_failed(struct vs_throttle *t, uint64_t key, uint64_t now_ms,
                const struct throttle_policy *p, struct throttle_fail *out)
{
    memset(out, 0, sizeof(*out));
    if (t->hdr == NULL || th_lock(t) != 0)
        return;
    struct vs_throttle_entry_shm *e = th_find(t, key, 1);
    if (e->failures > 0 && now_ms - e->last_fail_ms > p->max_ms)
        e->failures = 0; /* a long pause: start over */
    if (e->failures < UINT32_MAX)
        e->failures++;
    uint64_t d = p->base_ms;
    for (uint32_t i = 1; i < e->failures && d < p->max_ms; i++)
        d *= 2;
    if (d > p->max_ms)
        d = p->max_ms;
    e->last_fail_ms = now_ms;
    e->until_ms = now_ms + d;
    e->unlogged++;
    out->failures = e->failures;
    out->delay_ms = d;
    if (e->logged_ms == 0 || now_ms - e->logged_ms >= p->log_interval_ms) {
        out->report = 1;
        out->unlogged = e->unlogged;
        e->unlogged = 0;
        e->logged_ms = now_ms;
    }
    th_unlock(t);
}

void
throttle_succeeded(struct vs_throttle *t, uint64_t key)
{
    if (t->hdr == NULL || th_lock(t) != 0)
        return;
    struct vs_throttle_entry_shm *e = th_find(t, key, 0);
    if (e != NULL) {
        e->failures = 0;
        e->until_ms = 0;
        e->unlogged = 0;
        e->logged_ms = 0;
    }
    th_unlock(t);
}
