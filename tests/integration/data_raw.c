/*
 * tests/integration/data_raw.c - raw-frame helpers of the data-plane
 * integration tests; see data_raw.h.
 * Callers: the Check-forked test process of check_data_* tests.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shard/data/batch.h"
#include "shard/meta/state.h"
#include "tests/integration/data_raw.h"

static uint32_t
ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t
ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void
rt(struct dr_sess *s, uint8_t op, uint32_t code, const void *body, size_t len,
   uint64_t request, struct rc_frame *f)
{
    ck_assert_int_eq(rc_send(s->fd, op, code, body, (uint32_t)len, s->client,
                             request, s->session),
                     0);
    int rc = rc_read(s->fd, f, DR_READ_MS);
    ck_assert_msg(rc == 1, "read: %d", rc);
    ck_assert_uint_eq(f->command, 8);
}

void
dr_login(struct dr_sess *s, const struct vs_node *n, uint64_t client)
{
    memset(s, 0, sizeof(*s));
    s->fd = vs_connect(n->ready.client);
    ck_assert_msg(s->fd >= 0, "connect: %d", s->fd);
    s->client = client;
    size_t len;
    uint8_t *b = rc_login_body(11264, "iggy", "iggy", &len);
    struct rc_frame f;
    rt(s, 1, 0, b, len, 0, &f);
    free(b);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_ge(f.body_len, 16);
    memcpy(&s->session, f.body + 8, 8);
    ck_assert_uint_gt(s->session, 0);
    rc_frame_fini(&f);
}

void
dr_close(struct dr_sess *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

uint32_t
dr_my_shard(struct dr_sess *s)
{
    struct rc_frame f;
    rt(s, 2, 20, NULL, 0, s->request + 1, &f);
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_ge(f.body_len, 4);
    uint32_t id = ld32(f.body);
    rc_frame_fini(&f);
    return id & 0x1ffu;
}

uint32_t
dr_meta(struct dr_sess *s, uint8_t op, const void *body, size_t len)
{
    struct rc_frame f;
    s->request++;
    rt(s, op, 0, body, len, s->request, &f);
    ck_assert_msg(f.status == 0, "op %u: status %u", op, f.status);
    ck_assert_uint_ge(f.body_len, 4);
    uint32_t code = 0;
    if (ld32(f.body) > 0) {
        ck_assert_uint_ge(f.body_len, 12);
        code = ld32(f.body + 8);
    }
    rc_frame_fini(&f);
    return code;
}

uint32_t
dr_meta_status(struct dr_sess *s, uint8_t op, const void *body, size_t len)
{
    struct rc_frame f;
    s->request++;
    rt(s, op, 0, body, len, s->request, &f);
    uint32_t code = f.status;
    if (code == 0 && f.body_len >= 12 && ld32(f.body) > 0)
        code = ld32(f.body + 8);
    rc_frame_fini(&f);
    return code;
}

void
dr_create_stream(struct dr_sess *s, const char *name)
{
    uint8_t b[260];
    size_t n = strlen(name);
    b[0] = (uint8_t)n;
    memcpy(b + 1, name, n);
    ck_assert_uint_eq(dr_meta(s, 128, b, n + 1), 0);
}

void
dr_create_topic(struct dr_sess *s, uint32_t stream, const char *name,
                uint32_t parts, const uint8_t *opts, size_t olen)
{
    uint8_t b[4096];
    size_t n = 0;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &stream, 4);
    n += 4;
    memcpy(b + n, &parts, 4);
    n += 4;
    b[n++] = (uint8_t)strlen(name);
    memcpy(b + n, name, strlen(name));
    n += strlen(name);
    if (olen > 0) {
        memcpy(b + n, opts, olen);
        n += olen;
    }
    ck_assert_uint_eq(dr_meta(s, 132, b, n), 0);
}

void
dr_opt_u64(uint8_t *buf, size_t *len, const char *key, uint64_t v)
{
    size_t n = *len;
    uint32_t kl = (uint32_t)strlen(key), vl = 8;
    buf[n++] = 2;
    memcpy(buf + n, &kl, 4);
    n += 4;
    memcpy(buf + n, key, kl);
    n += kl;
    buf[n++] = 12;
    memcpy(buf + n, &vl, 4);
    n += 4;
    memcpy(buf + n, &v, 8);
    n += 8;
    *len = n;
}

uint8_t *
dr_send_body(uint32_t stream, uint32_t topic, uint8_t pkind, const void *pval,
             uint8_t plen, const uint8_t *batch, size_t blen, uint32_t msgs,
             size_t *len)
{
    uint32_t mlen = 6 + 6 + 2 + plen + 4;
    uint8_t *b = malloc(4 + mlen + blen);
    ck_assert_ptr_nonnull(b);
    size_t n = 0;
    memcpy(b + n, &mlen, 4);
    n += 4;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &stream, 4);
    n += 4;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &topic, 4);
    n += 4;
    b[n++] = pkind;
    b[n++] = plen;
    if (plen)
        memcpy(b + n, pval, plen);
    n += plen;
    memcpy(b + n, &msgs, 4);
    n += 4;
    memcpy(b + n, batch, blen);
    n += blen;
    *len = n;
    return b;
}

uint8_t *
dr_batch(const char *tag, uint32_t count, size_t *len)
{
    return dr_batch_sized(tag, count, 0, len);
}

uint8_t *
dr_batch_sized(const char *tag, uint32_t count, uint32_t size, size_t *len)
{
    const uint8_t **pl = calloc(count, sizeof(*pl));
    uint32_t *plen = calloc(count, sizeof(*plen));
    char **txt = calloc(count, sizeof(*txt));
    size_t cap = 256;
    for (uint32_t i = 0; i < count; i++) {
        size_t cap_i = size > 300 ? size + 1 : 301;
        txt[i] = malloc(cap_i);
        snprintf(txt[i], 300, "%s-%u", tag, i);
        size_t l = strlen(txt[i]);
        if (size > l) {
            memset(txt[i] + l, 'x', size - l);
            l = size;
        }
        pl[i] = (const uint8_t *)txt[i];
        plen[i] = (uint32_t)l;
        cap += 48 + plen[i];
    }
    uint8_t *out = malloc(cap);
    size_t n = batch_build(out, cap, 1000, count, pl, plen, NULL, NULL, NULL);
    ck_assert_uint_eq(n, cap);
    for (uint32_t i = 0; i < count; i++)
        free(txt[i]);
    free(txt);
    free(pl);
    free(plen);
    *len = n;
    return out;
}

uint32_t
dr_send(struct dr_sess *s, const uint8_t *body, size_t len, uint32_t *partition,
        uint64_t *base)
{
    struct rc_frame f;
    rt(s, 160, 0, body, len, s->request + 1, &f);
    ck_assert_uint_eq(f.operation, 160);
    uint32_t st = f.status;
    if (st == 0) {
        ck_assert_uint_eq(f.body_len, 4 + 12 + 8);
        ck_assert_uint_eq(ld32(f.body), 1);
        if (partition)
            *partition = ld32(f.body + 12);
        if (base)
            *base = ld64(f.body + 16);
    } else {
        ck_assert_uint_eq(f.body_len, 0);
    }
    rc_frame_fini(&f);
    return st;
}

static size_t
wr_target(uint8_t *b, uint8_t ckind, uint32_t cid, uint32_t stream,
          uint32_t topic, int has_part, uint32_t part)
{
    size_t n = 0;
    b[n++] = ckind;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &cid, 4);
    n += 4;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &stream, 4);
    n += 4;
    b[n++] = 1;
    b[n++] = 4;
    memcpy(b + n, &topic, 4);
    n += 4;
    b[n++] = has_part ? 1 : 0;
    memcpy(b + n, &part, 4);
    n += 4;
    return n;
}

void
dr_poll(struct dr_sess *s, uint8_t ckind, uint32_t cid, uint32_t stream,
        uint32_t topic, int has_part, uint32_t part, uint8_t strategy,
        uint64_t value, uint32_t count, uint8_t autocommit, struct dr_poll *out)
{
    uint8_t b[64];
    size_t n = wr_target(b, ckind, cid, stream, topic, has_part, part);
    b[n++] = strategy;
    memcpy(b + n, &value, 8);
    n += 8;
    memcpy(b + n, &count, 4);
    n += 4;
    b[n++] = autocommit;
    struct rc_frame f;
    rt(s, 2, 100, b, n, s->request + 1, &f);
    ck_assert_uint_eq(f.operation, 2);
    memset(out, 0, sizeof(*out));
    out->status = f.status;
    if (f.status != 0) {
        rc_frame_fini(&f);
        return;
    }
    ck_assert_uint_ge(f.body_len, 16);
    out->partition = ld32(f.body);
    out->current = ld64(f.body + 4);
    out->count = ld32(f.body + 12);
    size_t pos = 16;
    while (pos < f.body_len) {
        ck_assert_uint_ge(f.body_len - pos, 256);
        const uint8_t *h = f.body + pos;
        uint64_t blen = ld64(h + 32);
        ck_assert_uint_ge(blen, 256);
        ck_assert_uint_le(blen, f.body_len - pos);
        uint64_t base = ld64(h + 8), ts = ld64(h + 16);
        size_t fp = pos + 256, end = pos + blen;
        while (fp < end) {
            ck_assert_uint_ge(end - fp, 48);
            const uint8_t *fr = f.body + fp;
            ck_assert_uint_eq(ld64(fr + 40), 0); /* reserved */
            uint32_t hl = ld32(fr + 32), pl = ld32(fr + 36);
            ck_assert_uint_le(48 + (uint64_t)pl + hl, end - fp);
            ck_assert_uint_lt(out->n, 512);
            struct dr_msg *m = &out->m[out->n++];
            m->offset = base + ld32(fr + 24);
            m->timestamp = ts;
            m->len = pl;
            size_t c =
                pl < sizeof(m->payload) - 1 ? pl : sizeof(m->payload) - 1;
            memcpy(m->payload, fr + 48, c);
            m->payload[c] = '\0';
            fp += 48 + pl + hl;
        }
        pos = end;
    }
    ck_assert_uint_eq(out->count, out->n);
    rc_frame_fini(&f);
}

int
dr_offset_get(struct dr_sess *s, uint8_t ckind, uint32_t cid, uint32_t stream,
              uint32_t topic, uint32_t part, uint64_t *stored)
{
    uint8_t b[64];
    size_t n = wr_target(b, ckind, cid, stream, topic, 1, part);
    struct rc_frame f;
    rt(s, 2, 120, b, n, s->request + 1, &f);
    int r;
    if (f.status != 0) {
        r = -(int)f.status;
    } else if (f.body_len == 0) {
        r = 0;
    } else {
        ck_assert_uint_eq(f.body_len, 20);
        ck_assert_uint_eq(ld32(f.body), part);
        *stored = ld64(f.body + 12);
        r = 1;
    }
    rc_frame_fini(&f);
    return r;
}

static uint32_t
offset_op(struct dr_sess *s, uint8_t op, const uint8_t *b, size_t n)
{
    struct rc_frame f;
    rt(s, op, 0, b, n, s->request + 1, &f);
    ck_assert_uint_eq(f.operation, op);
    uint32_t st = f.status;
    if (st == 0) {
        ck_assert_uint_eq(f.body_len, 4);
        ck_assert_uint_eq(ld32(f.body), 0);
    }
    rc_frame_fini(&f);
    return st;
}

uint32_t
dr_offset_store(struct dr_sess *s, uint8_t ckind, uint32_t cid, uint32_t stream,
                uint32_t topic, uint32_t part, uint64_t offset)
{
    uint8_t b[64];
    size_t n = wr_target(b, ckind, cid, stream, topic, 1, part);
    memcpy(b + n, &offset, 8);
    n += 8;
    b[n++] = 1;
    return offset_op(s, 161, b, n);
}

uint32_t
dr_offset_delete(struct dr_sess *s, uint8_t ckind, uint32_t cid,
                 uint32_t stream, uint32_t topic, uint32_t part)
{
    uint8_t b[64];
    size_t n = wr_target(b, ckind, cid, stream, topic, 1, part);
    b[n++] = 1;
    return offset_op(s, 162, b, n);
}

uint32_t
dr_owner(uint32_t stream, uint32_t topic, uint32_t part, uint32_t k)
{
    return meta_partition_shard(meta_group_id(stream, topic, part), k);
}

void
dr_kill_node(struct vs_node *n)
{
    pid_t pids[65];
    size_t np = 0;
    for (size_t i = 0; i < n->ready.n_shard_pids && np < 64; i++)
        if (n->ready.shard_pids[i] > 0)
            pids[np++] = n->ready.shard_pids[i];
    /* the current shards (respawned ones are children of the supervisor) */
    if (n->pid > 0) {
        pid_t kids[64];
        size_t k = vs_proc_children(n->pid, kids, 64);
        for (size_t i = 0; i < k && i < 64 && np < 64; i++)
            pids[np++] = kids[i];
        (void)kill(n->pid, SIGKILL);
    }
    for (size_t i = 0; i < np; i++)
        (void)kill(pids[i], SIGKILL);
    if (n->pid > 0)
        (void)vs_node_wait_exit(n, 10000);
    vs_harness_orphans(NULL, 0, NULL, 0);
    ck_assert_int_eq(vs_wait_gone(pids, np, 10000), 0);
    vs_harness_orphans(NULL, 0, NULL, 0);
}
