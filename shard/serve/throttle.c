/*
 * shard/serve/throttle.c - failed-login throttling of a data shard over
 * the node's shared throttle table; see throttle.h (policy) and
 * ipc/throttle.h (table, locking).
 * Process: data shards, loop thread.
 */
#include "config.h"

#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "ipc/segment.h"
#include "ipc/throttle.h"
#include "shard/serve/server.h"
#include "shard/serve/throttle.h"

#define KEY_USER 'u'
#define KEY_ADDR 'a'

/* The shared table, attached on first use (NULL if the segment has
 * none: logins then go unthrottled, which is logged once). */
static struct vs_throttle *
th_table(struct serve *s)
{
    if (s->cfg->login_backoff_base_ms == 0) /* throttling off */
        return NULL;
    if (s->throttle.hdr != NULL)
        return &s->throttle;
    if (s->throttle_failed)
        return NULL;
    size_t len = 0;
    void *r = seg_throttle_region(s->ctx->seg, &len);
    if (r == NULL || throttle_attach(&s->throttle, r, len) != 0) {
        s->throttle_failed = 1;
        vs_log_error("data shard %u: no login throttle table in the shared "
                     "segment: failed logins are not throttled",
                     s->ctx->slot);
        return NULL;
    }
    return &s->throttle;
}

/* The address part of c->peer ("ip:port"). */
static size_t
th_addr(const struct serve_conn *c, const char **out)
{
    const char *colon = strrchr(c->peer, ':');
    *out = c->peer;
    return colon != NULL ? (size_t)(colon - c->peer) : strlen(c->peer);
}

static uint64_t
th_now_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

uint64_t
serve_throttle_check(struct serve_conn *c, const char *user, size_t ulen)
{
    struct vs_throttle *t = th_table(c->srv);
    if (t == NULL)
        return 0;
    const struct vs_config *cfg = c->srv->cfg;
    uint64_t now = th_now_ms();
    const char *a;
    size_t alen = th_addr(c, &a);
    uint64_t w = throttle_wait_ms(t, throttle_key(KEY_ADDR, a, alen), now,
                                  cfg->login_backoff_max_ms);
    if (user != NULL) {
        uint64_t wu = throttle_wait_ms(t, throttle_key(KEY_USER, user, ulen),
                                       now, cfg->login_backoff_max_ms);
        if (wu > w)
            w = wu;
    }
    if (w > 0)
        c->srv->login_throttled++;
    return w;
}

void
serve_throttle_failed(struct serve_conn *c, const char *user, size_t ulen,
                      uint8_t reason)
{
    struct vs_throttle *t = th_table(c->srv);
    if (t == NULL)
        return;
    const struct vs_config *cfg = c->srv->cfg;
    struct throttle_policy p = {
        .base_ms = cfg->login_backoff_base_ms,
        .max_ms = cfg->login_backoff_max_ms,
        .log_interval_ms = cfg->login_failure_log_interval_ms,
    };
    uint64_t now = th_now_ms();
    const char *a;
    size_t alen = th_addr(c, &a);
    struct throttle_fail fa, fu;
    memset(&fu, 0, sizeof(fu));
    throttle_failed(t, throttle_key(KEY_ADDR, a, alen), now, &p, &fa);
    if (user != NULL)
        throttle_failed(t, throttle_key(KEY_USER, user, ulen), now, &p, &fu);
    if (fa.report)
        vs_log_warn("failed logins from %.*s: %u in a row (%u since the last "
                    "report), the latest %s; its next attempt waits %llu ms",
                    (int)alen, a, fa.failures, fa.unlogged,
                    vs_eviction_reason_name(reason),
                    (unsigned long long)fa.delay_ms);
    if (fu.report)
        vs_log_warn("failed logins as user '%.*s': %u in a row (%u since the "
                    "last report), the latest from %.*s; its next attempt "
                    "waits %llu ms",
                    (int)ulen, user, fu.failures, fu.unlogged, (int)alen, a,
                    (unsigned long long)fu.delay_ms);
}

void
serve_throttle_succeeded(struct serve_conn *c, const char *user, size_t ulen)
{
    struct vs_throttle *t = th_table(c->srv);
    if (t == NULL || user == NULL)
        return;
    throttle_succeeded(t, throttle_key(KEY_USER, user, ulen));
}
