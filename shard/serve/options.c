/*
 * shard/serve/options.c - options TLV block checks and topic option
 * resolution; see options.h. Pure functions, any thread.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/buf.h"
#include "common/errors.h"
#include "shard/serve/options.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

enum { /* value kinds (protocol §5.5) */
       K_STRING = 2,
       K_BOOL = 3,
       K_UINT8 = 9,
       K_UINT32 = 11,
       K_UINT64 = 12,
};

struct tlv {
    uint8_t kind;
    uint32_t len;
    const uint8_t *p;
};

void
serve_topic_opts_default(struct meta_topic_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->message_expiry = UINT64_MAX;
    o->max_topic_size = UINT64_MAX;
    o->segment_size = GIB;
    o->size_of_messages_required_to_save = MIB;
    o->messages_required_to_save = 1024;
    o->compression = 1;
}

static int
ieq(const uint8_t *p, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    if (n != m)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t a = p[i], b = (uint8_t)lit[i];
        if (a >= 'A' && a <= 'Z')
            a = (uint8_t)(a - 'A' + 'a');
        if (a != b)
            return 0;
    }
    return 1;
}

static int
mul_add(uint64_t *acc, uint64_t mul, uint64_t add)
{
    if (*acc > (UINT64_MAX - add) / mul)
        return -EINVAL;
    *acc = *acc * mul + add;
    return 0;
}

/* [digits][spaces][unit]: returns chars consumed of the unit in *ulen. */
static int
rd_number(const char *s, size_t len, size_t *i, uint64_t *v)
{
    size_t start = *i;
    *v = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
        if (mul_add(v, 10, (uint64_t)(s[*i] - '0')) != 0)
            return -EINVAL;
        (*i)++;
    }
    return *i > start ? 0 : -EINVAL;
}

static void
skip_spaces(const char *s, size_t len, size_t *i)
{
    while (*i < len && s[*i] == ' ')
        (*i)++;
}

struct unit {
    const char *name;
    uint64_t mul;
};

int
serve_parse_duration_us(const char *s, size_t len, uint64_t *out)
{
    static const struct unit units[] = {
        {"us", 1},
        {"usec", 1},
        {"\xc2\xb5s", 1},
        {"ms", 1000},
        {"msec", 1000},
        {"s", 1000000},
        {"sec", 1000000},
        {"secs", 1000000},
        {"second", 1000000},
        {"seconds", 1000000},
        {"m", 60000000},
        {"min", 60000000},
        {"mins", 60000000},
        {"minute", 60000000},
        {"minutes", 60000000},
        {"h", UINT64_C(3600000000)},
        {"hr", UINT64_C(3600000000)},
        {"hrs", UINT64_C(3600000000)},
        {"hour", UINT64_C(3600000000)},
        {"hours", UINT64_C(3600000000)},
        {"d", UINT64_C(86400000000)},
        {"day", UINT64_C(86400000000)},
        {"days", UINT64_C(86400000000)},
        {"w", UINT64_C(604800000000)},
        {"week", UINT64_C(604800000000)},
        {"weeks", UINT64_C(604800000000)},
    };
    size_t i = 0;
    uint64_t total = 0;
    int parts = 0;
    skip_spaces(s, len, &i);
    while (i < len) {
        uint64_t v;
        if (rd_number(s, len, &i, &v) != 0)
            return -EINVAL;
        skip_spaces(s, len, &i);
        size_t u0 = i;
        while (i < len && s[i] != ' ' && !(s[i] >= '0' && s[i] <= '9'))
            i++;
        size_t ul = i - u0;
        uint64_t mul = 0;
        for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
            if (strlen(units[k].name) == ul &&
                memcmp(units[k].name, s + u0, ul) == 0)
                mul = units[k].mul;
        if (mul == 0)
            return -EINVAL;
        if (v > UINT64_MAX / mul || total > UINT64_MAX - v * mul)
            return -EINVAL;
        total += v * mul;
        parts++;
        skip_spaces(s, len, &i);
    }
    if (parts == 0)
        return -EINVAL;
    *out = total;
    return 0;
}

int
serve_parse_size(const char *s, size_t len, uint64_t *out)
{
    static const struct unit units[] = {
        {"", 1},
        {"b", 1},
        {"kb", 1000},
        {"mb", 1000000},
        {"gb", UINT64_C(1000000000)},
        {"tb", UINT64_C(1000000000000)},
        {"kib", KIB},
        {"mib", MIB},
        {"gib", GIB},
        {"tib", GIB * 1024},
        {"k", 1000},
        {"m", 1000000},
        {"g", UINT64_C(1000000000)},
    };
    size_t i = 0;
    uint64_t v;
    skip_spaces(s, len, &i);
    if (rd_number(s, len, &i, &v) != 0)
        return -EINVAL;
    skip_spaces(s, len, &i);
    size_t u0 = i;
    while (i < len && s[i] != ' ')
        i++;
    size_t ul = i - u0;
    skip_spaces(s, len, &i);
    if (i != len)
        return -EINVAL;
    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
        if (ieq((const uint8_t *)s + u0, ul, units[k].name)) {
            if (v > UINT64_MAX / units[k].mul)
                return -EINVAL;
            *out = v * units[k].mul;
            return 0;
        }
    }
    return -EINVAL;
}

static int
all_digits(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return n > 0;
}

static int
rd_tlv(struct vs_rbuf *r, struct tlv *t)
{
    t->kind = vs_rd_u8(r);
    t->len = vs_rd_u32(r);
    if (r->err || t->kind == 0 || t->len < 1 || t->len > 255)
        return -EPROTO;
    t->p = vs_rd_bytes(r, t->len);
    return t->p == NULL ? -EPROTO : 0;
}

static int
val_u64(const struct tlv *v, uint64_t *out, int allow_size, int allow_dur)
{
    if (v->kind == K_UINT64 && v->len == 8) {
        *out = vs_load_u64(v->p);
        return 0;
    }
    if (v->kind != K_STRING)
        return -EINVAL;
    if (ieq(v->p, v->len, "unlimited") || ieq(v->p, v->len, "none")) {
        if (!allow_dur && !allow_size)
            return -EINVAL;
        *out = UINT64_MAX;
        return 0;
    }
    if (allow_dur)
        return serve_parse_duration_us((const char *)v->p, v->len, out);
    return serve_parse_size((const char *)v->p, v->len, out);
}

static int
val_bool(const struct tlv *v, uint8_t *out)
{
    if (v->kind == K_BOOL && v->len == 1 && v->p[0] <= 1) {
        *out = v->p[0];
        return 0;
    }
    if (v->kind == K_STRING && ieq(v->p, v->len, "true")) {
        *out = 1;
        return 0;
    }
    if (v->kind == K_STRING && ieq(v->p, v->len, "false")) {
        *out = 0;
        return 0;
    }
    return -EINVAL;
}

enum key_id {
    KEY_COMPRESSION = 0,
    KEY_EXPIRY,
    KEY_MAX_SIZE,
    KEY_SEGMENT,
    KEY_FSYNC,
    KEY_MSGS,
    KEY_SIZE_SAVE,
    KEY_PREALLOC,
    KEY_REPLICATION, /* vstream's: not an Iggy catalog key, never echoed */
    KEY_COUNT
};

static const char *const key_names[KEY_COUNT] = {
    "compression_algorithm",
    "message_expiry",
    "max_topic_size",
    "segment_size",
    "enforce_fsync",
    "messages_required_to_save",
    "size_of_messages_required_to_save",
    "preallocate_segments",
    "replication_factor",
};

static const uint8_t key_bits[KEY_COUNT] = {
    META_TOPT_COMPRESSION,  META_TOPT_MESSAGE_EXPIRY, META_TOPT_MAX_TOPIC_SIZE,
    META_TOPT_SEGMENT_SIZE, META_TOPT_ENFORCE_FSYNC,  META_TOPT_MSGS_TO_SAVE,
    META_TOPT_SIZE_TO_SAVE, META_TOPT_PREALLOCATE,    0,
};

static int
key_lookup(const struct tlv *k)
{
    for (int i = 0; i < KEY_COUNT; i++)
        if (strlen(key_names[i]) == k->len &&
            memcmp(key_names[i], k->p, k->len) == 0)
            return i;
    return -1;
}

/* Applies one key's value; 0 or 4042; sets the key's bit in *mask when
 * it is explicit. */
static uint32_t
apply_key(int key, const struct tlv *v, int update, struct meta_topic_opts *o,
          uint8_t *mask)
{
    uint64_t u = 0;
    uint8_t b = 0;
    int is_default = 0;
    switch (key) {
    case KEY_COMPRESSION:
        if (v->kind == K_STRING && ieq(v->p, v->len, "none"))
            o->compression = 1;
        else if (v->kind == K_STRING && ieq(v->p, v->len, "gzip"))
            o->compression = 2;
        else if (v->kind == K_UINT8 && v->len == 1 &&
                 (v->p[0] == 1 || v->p[0] == 2))
            o->compression = v->p[0];
        else
            return VS_E_INVALID_OPTION_VALUE;
        is_default = o->compression == 1;
        break;
    case KEY_EXPIRY:
        if (val_u64(v, &u, 0, 1) != 0)
            return VS_E_INVALID_OPTION_VALUE;
        o->message_expiry = (u == 0 && !update) ? UINT64_MAX : u;
        is_default = u == 0 || u == UINT64_MAX;
        break;
    case KEY_MAX_SIZE:
        if (val_u64(v, &u, 1, 0) != 0)
            return VS_E_INVALID_OPTION_VALUE;
        o->max_topic_size = (u == 0 && !update) ? UINT64_MAX : u;
        is_default = u == 0 || u == UINT64_MAX;
        break;
    case KEY_SEGMENT:
        if (val_u64(v, &u, 1, 0) != 0 || u == UINT64_MAX)
            return VS_E_INVALID_OPTION_VALUE;
        if (u == 0)
            u = GIB;
        else if (u % 512 != 0 || u < MIB || u > GIB)
            return VS_E_INVALID_OPTION_VALUE;
        o->segment_size = u;
        is_default = u == GIB;
        break;
    case KEY_FSYNC:
        if (val_bool(v, &b) != 0)
            return VS_E_INVALID_OPTION_VALUE;
        o->enforce_fsync = b;
        is_default = b == 0;
        break;
    case KEY_MSGS:
        if (v->kind == K_UINT32 && v->len == 4)
            u = vs_load_u32(v->p);
        else if (v->kind != K_STRING ||
                 serve_parse_size((const char *)v->p, v->len, &u) != 0)
            return VS_E_INVALID_OPTION_VALUE;
        if (u < 1 || u > 16777216)
            return VS_E_INVALID_OPTION_VALUE;
        o->messages_required_to_save = (uint32_t)u;
        is_default = u == 1024;
        break;
    case KEY_SIZE_SAVE:
        if (val_u64(v, &u, 1, 0) != 0 || u == UINT64_MAX)
            return VS_E_INVALID_OPTION_VALUE;
        if (u == 0)
            u = MIB;
        if (u > GIB)
            return VS_E_INVALID_OPTION_VALUE;
        o->size_of_messages_required_to_save = u;
        is_default = u == MIB;
        break;
    case KEY_PREALLOC:
        if (val_bool(v, &b) != 0)
            return VS_E_INVALID_OPTION_VALUE;
        o->preallocate_segments = b;
        is_default = b == 0;
        break;
    case KEY_REPLICATION:
        if (v->kind == K_UINT8 && v->len == 1)
            u = v->p[0];
        else if (v->kind == K_UINT32 && v->len == 4)
            u = vs_load_u32(v->p);
        else if (v->kind == K_UINT64 && v->len == 8)
            u = vs_load_u64(v->p);
        else if (v->kind != K_STRING || !all_digits(v->p, v->len) ||
                 serve_parse_size((const char *)v->p, v->len, &u) != 0)
            return VS_E_INVALID_OPTION_VALUE;
        /* more than any cluster can hold; apply checks the node count */
        if (u > VS_REPLICAS_MAX)
            return VS_E_INVALID_REPLICATION_FACTOR;
        o->replication_factor = (uint8_t)u;
        is_default = 1; /* not part of Iggy's explicit options */
        break;
    default:
        return VS_E_UNSUPPORTED_OPTION_KEY;
    }
    if (update || !is_default)
        *mask |= key_bits[key];
    return 0;
}

uint32_t
serve_options_parse(const uint8_t *p, size_t len, enum serve_opt_scope scope,
                    uint32_t partitions, struct meta_topic_opts *out)
{
    serve_topic_opts_default(out);
    if (len > SERVE_OPT_MAX_BYTES)
        return VS_E_INVALID_COMMAND;
    /* pass 1: structure, unique keys, catalog membership */
    struct vs_rbuf r;
    vs_rbuf_init(&r, p, len);
    uint32_t pairs = 0;
    uint32_t seen = 0;
    uint32_t unknown = 0;
    while (vs_rbuf_left(&r) > 0) {
        struct tlv k, v;
        size_t kstart = r.off;
        if (rd_tlv(&r, &k) != 0 || rd_tlv(&r, &v) != 0 || k.kind != K_STRING)
            return VS_E_INVALID_COMMAND;
        if (++pairs > SERVE_OPT_MAX_PAIRS)
            return VS_E_INVALID_COMMAND;
        /* uniqueness: compare with every earlier key */
        struct vs_rbuf r2;
        vs_rbuf_init(&r2, p, len);
        while (r2.off < kstart) {
            struct tlv k2, v2;
            if (rd_tlv(&r2, &k2) != 0 || rd_tlv(&r2, &v2) != 0)
                return VS_E_INVALID_COMMAND;
            if (k2.len == k.len && memcmp(k2.p, k.p, k.len) == 0)
                return VS_E_INVALID_COMMAND;
        }
        int key = key_lookup(&k);
        int ok = 0;
        if (scope == SERVE_OPT_TOPIC_CREATE)
            ok = key >= 0;
        else if (scope == SERVE_OPT_TOPIC_UPDATE)
            ok = key == KEY_COMPRESSION || key == KEY_EXPIRY ||
                 key == KEY_MAX_SIZE;
        if (!ok)
            unknown++;
        else
            seen |= 1u << key;
    }
    if (unknown > 0)
        return VS_E_UNSUPPORTED_OPTION_KEY;
    if (scope == SERVE_OPT_EMPTY)
        return 0;
    /* pass 2: values */
    uint8_t mask = 0;
    int update = scope == SERVE_OPT_TOPIC_UPDATE;
    vs_rbuf_init(&r, p, len);
    while (vs_rbuf_left(&r) > 0) {
        struct tlv k, v;
        (void)rd_tlv(&r, &k);
        (void)rd_tlv(&r, &v);
        uint32_t e = apply_key(key_lookup(&k), &v, update, out, &mask);
        if (e != 0)
            return e;
    }
    (void)seen;
    out->explicit_mask = mask;
    if (!update) {
        uint64_t mts = out->max_topic_size;
        if (mts != UINT64_MAX && mts != 0 && mts < out->segment_size)
            return VS_E_INVALID_TOPIC_SIZE;
        if (out->preallocate_segments &&
            (partitions != 0 &&
             out->segment_size > (64 * GIB) / (uint64_t)partitions))
            return VS_E_INVALID_OPTION_VALUE;
    }
    return 0;
}
