/*
 * common/config.c - the key table and the loaders of struct vs_config.
 * See config.h for precedence and profiles. Called by the supervisor
 * (and tools) before any fork; not thread-safe, no need.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>
#include <xxhash.h>

#include "common/config.h"
#include "common/names.h"

#define F(field)                                                               \
    offsetof(struct vs_config, field), sizeof(((struct vs_config *)0)->field)
#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* clang-format off */
static const struct vs_config_key config_keys[] = {
    /* node */
    {"profile", VS_CFG_PROFILE, F(profile), 0, 1, "production", NULL,
     "defaults profile: production, or test (small capacities, cheap argon2)"},
    {"data_dir", VS_CFG_PATH, F(data_dir), 1, 0, "/var/lib/vstream", NULL,
     "data directory (created mode 0700, locked while the node runs)"},
    {"replica_id", VS_CFG_U32, F(replica_id), 0, 31, "0", NULL,
     "this node's index in replica_addrs"},
    {"shards", VS_CFG_U32, F(shards), 0, 256, "0", NULL,
     "data shards; 0 = one per core at first boot, then the recorded count"},
    {"client_addr", VS_CFG_STR, F(client_addr), 1, 0, "127.0.0.1:8090", NULL,
     "client listener HOST:PORT (port 0 = any free port)"},
    {"replica_addrs", VS_CFG_STR, F(replica_addrs), 0, 0, "", NULL,
     "comma-separated HOST:PORT of every replica; empty = one-replica cluster"},
    {"data_link_port_stride", VS_CFG_U32, F(data_link_port_stride), 1, 65535, "100", NULL,
     "data shard s of a node links to shard s of its peers at their replica port + s x this (same on every node)"},
    {"ready_file", VS_CFG_PATH, F(ready_file), 0, 0, "", NULL,
     "write {\"client\",\"replica\",\"pid\"} JSON here once the node serves"},
    {"pid_file", VS_CFG_PATH, F(pid_file), 0, 0, "", NULL,
     "write the supervisor's pid here"},
    {"cluster_name", VS_CFG_STR, F(cluster_name), 1, 0, "vstream", NULL,
     "cluster name; the cluster id is its XXH3-128"},
    {"cluster_secret_file", VS_CFG_PATH, F(cluster_secret_file), 0, 0, "", NULL,
     "file with the 32-byte cluster secret (mode 0600); required with replica_addrs"},
    {"node_name", VS_CFG_STR, F(node_name), 1, 0, "vstream-node", NULL,
     "this node's name (1..64 of [A-Za-z0-9._-]); on a cluster without replica_names, default replica-<id>"},
    {"replica_names", VS_CFG_STR, F(replica_names), 0, 0, "", NULL,
     "comma-separated unique node names in replica_addrs order (same on every node); empty = replica-<id>"},
    {"log_level", VS_CFG_LOG_LEVEL, F(log_level), 0, 3, "info", NULL,
     "error, warn, info or debug (reloaded on SIGHUP)"},
    {"log_file", VS_CFG_PATH, F(log_file), 0, 0, "", NULL,
     "append logs here instead of stderr (reopened on SIGHUP)"},
    /* boot */
    {"cut_damaged_tail", VS_CFG_BOOL, F(cut_damaged_tail), 0, 1, "false", NULL,
     "one-replica node: cut a damaged last WAL entry instead of refusing to boot"},
    /* metadata capacities */
    {"max_streams", VS_CFG_U32, F(max_streams), 1, 1048576, "10000", "64",
     "capacity of the streams table"},
    {"max_topics", VS_CFG_U32, F(max_topics), 1, 16777216, "100000", "256",
     "capacity of the topics table (all streams)"},
    {"max_partitions", VS_CFG_U32, F(max_partitions), 1, 16777216, "1000000", "1024",
     "capacity of the partitions table (all topics)"},
    {"max_consumer_groups", VS_CFG_U32, F(max_consumer_groups), 1, 16777216, "10000", "64",
     "capacity of the consumer groups table"},
    {"max_group_members", VS_CFG_U32, F(max_group_members), 1, 16777216, "100000", "256",
     "capacity of the consumer group members table"},
    {"max_users", VS_CFG_U32, F(max_users), 1, 1048576, "1000", "32",
     "capacity of the users table (root included)"},
    {"max_pats", VS_CFG_U32, F(max_pats), 1, 16777216, "10000", "128",
     "capacity of the personal access tokens table (at most 100 per user)"},
    {"clients_table_max", VS_CFG_U32, F(clients_table_max), 2, 65536, "8192", "64",
     "client table capacity (sessions with at-most-once replies)"},
    /* journal */
    {"wal_slots", VS_CFG_U32, F(wal_slots), 16, 1048576, "1024", "64",
     "prepares kept in the metadata WAL between checkpoints"},
    {"checkpoint_margin", VS_CFG_U32, F(checkpoint_margin), 1, 1048575, "64", "8",
     "checkpoint when fewer WAL slots than this are free"},
    /* credentials */
    {"argon2_opslimit", VS_CFG_U64, F(argon2_opslimit), 1, 64, "2", "1",
     "argon2id passes for password hashes"},
    {"argon2_memlimit", VS_CFG_SIZE, F(argon2_memlimit), 8192, 4 * GIB, "64M", "8K",
     "argon2id memory per password hash"},
    {"root_username", VS_CFG_STR, F(root_username), 0, 0, "iggy", NULL,
     "root user created by the cluster's first op"},
    {"root_password", VS_CFG_STR, F(root_password), 0, 0, "", NULL,
     "root password; empty = generated and printed once at first boot"},
    {"with_default_root_credentials", VS_CFG_BOOL, F(with_default_root_credentials), 0, 1, "false", NULL,
     "create root as iggy/iggy (development and SDK test suites)"},
    /* runtime */
    {"lr_reader_deadline_ms", VS_CFG_U32, F(lr_reader_deadline_ms), 1, 600000, "200", NULL,
     "metadata publish: how long to wait for a slow reader before reporting it"},
    {"lr_missed_deadlines_kill", VS_CFG_U32, F(lr_missed_deadlines_kill), 1, 1000, "5", NULL,
     "reports of one reader before the supervisor kills it"},
    {"shutdown_timeout_ms", VS_CFG_U32, F(shutdown_timeout_ms), 1, 3600000, "10000", "5000",
     "after SIGTERM, SIGKILL children still running after this long"},
    {"restart_backoff_min_ms", VS_CFG_U32, F(restart_backoff_min_ms), 1, 3600000, "100", "20",
     "first delay before restarting a crashed shard"},
    {"restart_backoff_max_ms", VS_CFG_U32, F(restart_backoff_max_ms), 1, 3600000, "30000", "1000",
     "longest delay before restarting a crashed shard"},
    {"ring_bytes", VS_CFG_SIZE, F(ring_bytes), 4096, 1 * GIB, "1M", NULL,
     "data area of each inter-shard IPC ring"},
    /* clients */
    {"max_connections", VS_CFG_U32, F(max_connections), 1, 1000000, "10000", "256",
     "client connections per node (all data shards together)"},
    {"max_metadata_body", VS_CFG_SIZE, F(max_metadata_body), 256, 1 * MIB, "1M", NULL,
     "largest metadata request body"},
    {"max_message_body", VS_CFG_SIZE, F(max_message_body), 4096, 64 * MIB - 256, "64M-256", NULL,
     "largest send/poll request body"},
    {"unauth_timeout_ms", VS_CFG_U32, F(unauth_timeout_ms), 1, 3600000, "10000", NULL,
     "close a connection that has not logged in after this long"},
    {"login_attempts_per_sec", VS_CFG_U32, F(login_attempts_per_sec), 1, 1000000, "20", "1000",
     "login attempts per second per connection"},
    {"conn_output_max", VS_CFG_SIZE, F(conn_output_max), 4096, 1 * GIB, "16M", NULL,
     "bytes queued to one client before its reads pause"},
    {"conn_handoff_after", VS_CFG_U32, F(conn_handoff_after), 0, 1000000, "8", "0",
     "hand a plain-TCP connection to the data shard that owns its partitions after this many data requests in a row for them (0 = never; TLS connections are never handed)"},
    /* TLS and the HTTP endpoint */
    {"tls_enabled", VS_CFG_BOOL, F(tls_enabled), 0, 1, "false", NULL,
     "serve TLS clients on tls_addr (plain TCP stays on client_addr)"},
    {"tls_addr", VS_CFG_STR, F(tls_addr), 1, 0, "127.0.0.1:8091", NULL,
     "TLS client listener HOST:PORT (port 0 = any free port)"},
    {"tls_cert_file", VS_CFG_PATH, F(tls_cert_file), 0, 0, "", NULL,
     "TLS: PEM certificate chain of this node, leaf first"},
    {"tls_key_file", VS_CFG_PATH, F(tls_key_file), 0, 0, "", NULL,
     "TLS: PEM private key of tls_cert_file"},
    {"tls_ca_file", VS_CFG_PATH, F(tls_ca_file), 0, 0, "", NULL,
     "TLS: PEM CAs of client certificates; set = clients must present one"},
    {"replica_tls_enabled", VS_CFG_BOOL, F(replica_tls_enabled), 0, 1, "false", NULL,
     "replica links inside mutual TLS (the cluster secret's MAC still required)"},
    {"replica_tls_cert_file", VS_CFG_PATH, F(replica_tls_cert_file), 0, 0, "", NULL,
     "replica TLS: this node's PEM certificate chain (server and client)"},
    {"replica_tls_key_file", VS_CFG_PATH, F(replica_tls_key_file), 0, 0, "", NULL,
     "replica TLS: the PEM private key of replica_tls_cert_file"},
    {"replica_tls_ca_file", VS_CFG_PATH, F(replica_tls_ca_file), 0, 0, "", NULL,
     "replica TLS: PEM CA that signs every replica's certificate"},
    {"http_addr", VS_CFG_STR, F(http_addr), 0, 0, "", NULL,
     "HTTP endpoint HOST:PORT for /metrics, /health/live, /health/ready, /ping; empty = off"},
    {"metrics_max_partition_series", VS_CFG_U32, F(metrics_max_partition_series), 0, 16777216, "10000", NULL,
     "/metrics: per-partition series for at most this many partitions (a scrape stays cheap)"},
    /* data plane */
    {"segment_size", VS_CFG_SIZE, F(segment_size), MIB, GIB, "1G", "1M",
     "segment roll size"},
    {"fsync_policy", VS_CFG_FSYNC_POLICY, F(fsync_policy), 0, 1, "every_batch", NULL,
     "every_batch (fsync before the reply) or interval (fsync_interval_ms / fsync_bytes)"},
    {"fsync_interval_ms", VS_CFG_U32, F(fsync_interval_ms), 1, 3600000, "100", NULL,
     "interval policy: fsync at least this often"},
    {"fsync_bytes", VS_CFG_SIZE, F(fsync_bytes), 1, 64 * GIB, "4M", NULL,
     "interval policy: fsync after this many unsynced bytes"},
    {"segment_write_offload", VS_CFG_BOOL, F(segment_write_offload), 0, 1, "true", NULL,
     "write each send's batch into its segment on the data shard's sync threads (the loop keeps reading sockets meanwhile); false: on the loop itself, as before"},
    {"disk_watermark_bytes", VS_CFG_SIZE, F(disk_watermark_bytes), 0, UINT64_MAX, "256M", "0",
     "refuse new sends while the data dir's filesystem has less free space"},
    {"partition_replication", VS_CFG_BOOL, F(partition_replication), 0, 1, "true", NULL,
     "on a cluster, every partition whose replica set has more than one node is its own VSR group on its data shard of each member; any node serves sends and polls for any partition (off: the leader's node serves them all)"},
    {"group_heartbeat_interval_ms", VS_CFG_U32, F(group_heartbeat_interval_ms), 100, 3600000, "30000", NULL,
     "consumer groups: a member silent for 1.2 x this is removed; also the cooperative revocation timeout"},
    /* client hardening */
    {"login_backoff_base_ms", VS_CFG_U32, F(login_backoff_base_ms), 0, 3600000, "100", "0",
     "failed logins per user name and per source address (all data shards): after n in a row the next attempt waits base x 2^(n-1) ms (answered 58); 0 = off"},
    {"login_backoff_max_ms", VS_CFG_U32, F(login_backoff_max_ms), 1, 86400000, "30000", NULL,
     "longest login back-off; failures older than this are forgotten"},
    {"login_failure_log_interval_ms", VS_CFG_U32, F(login_failure_log_interval_ms), 1, 86400000, "10000", NULL,
     "repeated failed logins of one user or address are logged once per interval"},
    {"frame_timeout_ms", VS_CFG_U32, F(frame_timeout_ms), 1, 3600000, "30000", NULL,
     "a request frame whose first byte arrived must be complete within this long, else the connection is closed"},
};
/* clang-format on */
#define N_KEYS (sizeof(config_keys) / sizeof(config_keys[0]))
_Static_assert(N_KEYS <= 128, "explicit_set holds 128 bits");

const struct vs_config_key *
vs_config_keys(size_t *count)
{
    *count = N_KEYS;
    return config_keys;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const struct vs_config_key *
find_key(const char *name, size_t *index)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        if (strcmp(config_keys[i].name, name) == 0) {
            if (index)
                *index = i;
            return &config_keys[i];
        }
    }
    return NULL;
}

static int
parse_u64(const char *s, int allow_suffix, uint64_t *out)
{
    if (*s == '\0' || *s == '-' || isspace((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -EINVAL;
    uint64_t mult = 1;
    if (*end != '\0') {
        if (!allow_suffix)
            return -EINVAL;
        const char *suf = end;
        switch (toupper((unsigned char)*suf)) {
        case 'K':
            mult = KIB;
            break;
        case 'M':
            mult = MIB;
            break;
        case 'G':
            mult = GIB;
            break;
        case 'T':
            mult = GIB * 1024;
            break;
        default:
            return -EINVAL;
        }
        suf++;
        if (strcasecmp(suf, "iB") == 0 || strcasecmp(suf, "B") == 0)
            suf += strlen(suf);
        /* "64M-256": a size minus a byte count, for limits below a power */
        uint64_t minus = 0;
        if (*suf == '-') {
            char *end2;
            errno = 0;
            minus = strtoull(suf + 1, &end2, 10);
            if (errno != 0 || end2 == suf + 1 || *end2 != '\0')
                return -EINVAL;
            suf = end2;
        }
        if (*suf != '\0')
            return -EINVAL;
        if (v > UINT64_MAX / mult)
            return -ERANGE;
        v *= mult;
        if (minus > v)
            return -ERANGE;
        *out = v - minus;
        return 0;
    }
    *out = v;
    return 0;
}

static int
parse_bool(const char *s, uint32_t *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -EINVAL;
}

/* Stores `value` into the field of `k`; no explicit-bit bookkeeping. */
static int
store_value(struct vs_config *c, const struct vs_config_key *k,
            const char *value, const char *where, char *err, size_t errlen)
{
    void *field = (char *)c + k->offset;
    uint64_t v = 0;
    uint32_t b = 0;
    int rc;

    switch (k->type) {
    case VS_CFG_STR:
    case VS_CFG_PATH:
        if (strlen(value) >= k->size) {
            set_err(err, errlen, "%s: %s: value too long (at most %zu bytes)",
                    where, k->name, k->size - 1);
            return -EINVAL;
        }
        if (k->min > 0 && value[0] == '\0') {
            set_err(err, errlen, "%s: %s: must not be empty", where, k->name);
            return -EINVAL;
        }
        for (const char *p = value; *p; p++) {
            if ((unsigned char)*p < 0x20) {
                set_err(err, errlen, "%s: %s: control character in value",
                        where, k->name);
                return -EINVAL;
            }
        }
        memcpy(field, value, strlen(value) + 1);
        return 0;
    case VS_CFG_U32:
    case VS_CFG_U64:
    case VS_CFG_SIZE:
        rc = parse_u64(value, k->type == VS_CFG_SIZE, &v);
        if (rc != 0) {
            set_err(err, errlen, "%s: %s: '%s' is not a%s number", where,
                    k->name, value,
                    k->type == VS_CFG_SIZE ? " size (e.g. 4096, 64K, 1M, 2G):"
                                           : " non-negative");
            return -EINVAL;
        }
        if (v < k->min || (k->max != 0 && v > k->max)) {
            set_err(err, errlen,
                    "%s: %s: %" PRIu64 " is out of range [%" PRIu64 ", %" PRIu64
                    "]",
                    where, k->name, v, k->min, k->max);
            return -EINVAL;
        }
        if (k->size == sizeof(uint32_t))
            *(uint32_t *)field = (uint32_t)v;
        else
            *(uint64_t *)field = v;
        return 0;
    case VS_CFG_BOOL:
        if (parse_bool(value, &b) != 0) {
            set_err(err, errlen, "%s: %s: '%s' is not a boolean (true/false)",
                    where, k->name, value);
            return -EINVAL;
        }
        *(uint32_t *)field = b;
        return 0;
    case VS_CFG_LOG_LEVEL: {
        enum vs_log_level lvl;
        if (vs_log_level_parse(value, &lvl) != 0) {
            set_err(err, errlen,
                    "%s: %s: '%s' is not a log level (error, warn, info, "
                    "debug)",
                    where, k->name, value);
            return -EINVAL;
        }
        *(enum vs_log_level *)field = lvl;
        return 0;
    }
    case VS_CFG_PROFILE:
        if (strcasecmp(value, "production") == 0)
            *(enum vs_profile *)field = VS_PROFILE_PRODUCTION;
        else if (strcasecmp(value, "test") == 0)
            *(enum vs_profile *)field = VS_PROFILE_TEST;
        else {
            set_err(err, errlen,
                    "%s: %s: '%s' is not a profile (production, test)", where,
                    k->name, value);
            return -EINVAL;
        }
        return 0;
    case VS_CFG_FSYNC_POLICY:
        if (strcasecmp(value, "every_batch") == 0)
            *(enum vs_fsync_policy *)field = VS_FSYNC_EVERY_BATCH;
        else if (strcasecmp(value, "interval") == 0)
            *(enum vs_fsync_policy *)field = VS_FSYNC_INTERVAL;
        else {
            set_err(err, errlen,
                    "%s: %s: '%s' is not a policy (every_batch, interval)",
                    where, k->name, value);
            return -EINVAL;
        }
        return 0;
    }
    set_err(err, errlen, "%s: %s: internal: unknown key type", where, k->name);
    return -EINVAL;
}

static void
apply_defaults(struct vs_config *c, int only_unset)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct vs_config_key *k = &config_keys[i];
        if (only_unset && (c->explicit_set[i / 64] >> (i % 64)) & 1)
            continue;
        const char *def = k->def;
        if (c->profile == VS_PROFILE_TEST && k->test_def != NULL)
            def = k->test_def;
        char err[256];
        int rc = store_value(c, k, def, "default", err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "vstream: bad built-in default: %s\n", err);
            abort();
        }
    }
}

void
vs_config_init(struct vs_config *c)
{
    memset(c, 0, sizeof(*c));
    apply_defaults(c, 0);
}

int
vs_config_set(struct vs_config *c, const char *key, const char *value,
              const char *where, char *err, size_t errlen)
{
    size_t idx;
    const struct vs_config_key *k = find_key(key, &idx);
    if (k == NULL) {
        set_err(err, errlen, "%s: unknown key '%s'", where, key);
        return -EINVAL;
    }
    int rc = store_value(c, k, value, where, err, errlen);
    if (rc != 0)
        return rc;
    c->explicit_set[idx / 64] |= UINT64_C(1) << (idx % 64);
    return 0;
}

int
vs_config_is_explicit(const struct vs_config *c, const char *key)
{
    size_t idx;
    if (find_key(key, &idx) == NULL)
        return 0;
    return (int)((c->explicit_set[idx / 64] >> (idx % 64)) & 1);
}

struct ini_ctx {
    struct vs_config *c;
    const char *path;
    int line;
    char err[512];
    int failed;
};

/* libinih reads lines into a fixed buffer and parses the rest of a longer
 * line as a line of its own: a long value would be cut short silently and
 * its tail taken for another key. This reader hands libinih whole lines
 * only and stops the parse at the first line that does not fit. */
struct ini_reader_ctx {
    FILE *f;
    int line;     /* lines read so far */
    int too_long; /* the line `line` did not fit */
    int max;      /* the longest line that fits, in bytes */
};

static char *
config_ini_reader(char *str, int num, void *stream)
{
    struct ini_reader_ctx *r = stream;
    if (r->too_long || num < 2)
        return NULL;
    if (fgets(str, num, r->f) == NULL)
        return NULL;
    r->line++;
    size_t n = strlen(str);
    if (n == (size_t)num - 1 && str[n - 1] != '\n') {
        int ch = fgetc(r->f);
        if (ch != EOF && ch != '\n') {
            r->too_long = 1;
            r->max = num - 1;
            return NULL;
        }
    }
    return str;
}

static int
config_ini_handler(void *user, const char *section, const char *name,
                   const char *value)
{
    (void)section; /* sections group keys; names are flat */
    struct ini_ctx *ctx = user;
    if (ctx->failed)
        return 0;
    /* libinih reports the line of the first failing handler call through
     * its return value; remember our message and fail. */
    char where[VS_CONFIG_PATH_MAX + 32];
    snprintf(where, sizeof(where), "%s", ctx->path);
    if (vs_config_set(ctx->c, name, value, where, ctx->err, sizeof(ctx->err)) !=
        0) {
        ctx->failed = 1;
        return 0;
    }
    return 1;
}

int
vs_config_load_file(struct vs_config *c, const char *path, char *err,
                    size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        int e = errno;
        set_err(err, errlen, "config file %s: %s", path, strerror(e));
        return -e;
    }
    struct ini_ctx ctx = {.c = c, .path = path};
    struct ini_reader_ctx rd = {.f = f};
    int line =
        ini_parse_stream(config_ini_reader, &rd, config_ini_handler, &ctx);
    int read_error = ferror(f);
    fclose(f);
    if (line == 0 && rd.too_long) {
        set_err(err, errlen, "%s:%d: line too long (at most %d bytes)", path,
                rd.line, rd.max);
        return -EINVAL;
    }
    if (line == 0 && read_error) {
        set_err(err, errlen, "config file %s: cannot read", path);
        return -EIO;
    }
    if (line == 0) {
        snprintf(c->config_file, sizeof(c->config_file), "%s", path);
        return 0;
    }
    if (line < 0) {
        set_err(err, errlen, "config file %s: cannot read", path);
        return -EIO;
    }
    if (ctx.failed) {
        /* ctx.err starts with "path: "; insert the line number */
        size_t plen = strlen(path);
        const char *rest = ctx.err;
        if (strncmp(ctx.err, path, plen) == 0 && ctx.err[plen] == ':')
            rest = ctx.err + plen + 1;
        set_err(err, errlen, "%s:%d:%s", path, line, rest);
    } else {
        set_err(err, errlen, "%s:%d: syntax error (expected 'key = value')",
                path, line);
    }
    return -EINVAL;
}

int
vs_config_load_env(struct vs_config *c, char *const *envp, char *err,
                   size_t errlen)
{
    static const char prefix[] = "VSTREAMD_";
    if (envp == NULL)
        return 0;
    for (char *const *e = envp; *e != NULL; e++) {
        if (strncmp(*e, prefix, sizeof(prefix) - 1) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (eq == NULL)
            continue;
        const char *name = *e + sizeof(prefix) - 1;
        size_t nlen = (size_t)(eq - name);
        char key[64];
        char where[96];
        snprintf(where, sizeof(where), "environment %.*s", (int)(eq - *e), *e);
        if (nlen == 0 || nlen >= sizeof(key)) {
            set_err(err, errlen, "%s: unknown variable", where);
            return -EINVAL;
        }
        for (size_t i = 0; i < nlen; i++)
            key[i] = (char)tolower((unsigned char)name[i]);
        key[nlen] = '\0';
        if (strcmp(key, "config") == 0)
            continue; /* the file path, read by vs_config_load */
        if (find_key(key, NULL) == NULL) {
            set_err(err, errlen, "%s: unknown variable (no key '%s')", where,
                    key);
            return -EINVAL;
        }
        int rc = vs_config_set(c, key, eq + 1, where, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* "--data-dir" -> "data_dir" into key; returns 0 or -EINVAL. */
static int
flag_to_key(const char *flag, size_t len, char *key, size_t keylen)
{
    if (len == 0 || len >= keylen)
        return -EINVAL;
    for (size_t i = 0; i < len; i++)
        key[i] = flag[i] == '-' ? '_' : flag[i];
    key[len] = '\0';
    return 0;
}

int
vs_config_load_args(struct vs_config *c, int argc, char *const *argv,
                    int *first_positional, char *err, size_t errlen)
{
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strncmp(a, "--", 2) != 0)
            break;
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        char key[64];
        if (flag_to_key(name, nlen, key, sizeof(key)) != 0) {
            set_err(err, errlen, "unknown option '%s' (see --help)", a);
            return -EINVAL;
        }
        char where[96];
        snprintf(where, sizeof(where), "option --%.*s", (int)nlen, name);
        const char *value;
        if (strcmp(key, "config") == 0) {
            if (eq == NULL) {
                if (i + 1 >= argc) {
                    set_err(err, errlen, "%s: needs a value", where);
                    return -EINVAL;
                }
                i++;
            }
            continue;
        }
        const struct vs_config_key *k = find_key(key, NULL);
        if (k == NULL) {
            set_err(err, errlen, "unknown option '%s' (see --help)", a);
            return -EINVAL;
        }
        if (eq != NULL) {
            value = eq + 1;
        } else if (k->type == VS_CFG_BOOL) {
            /* a bare boolean flag turns it on; a boolean word right after
             * it is its value ("--tls-enabled false" turns it off rather
             * than on, with "false" left over as a stray argument) */
            uint32_t b;
            if (i + 1 < argc && parse_bool(argv[i + 1], &b) == 0)
                value = argv[++i];
            else
                value = "true";
        } else {
            if (i + 1 >= argc) {
                set_err(err, errlen, "%s: needs a value", where);
                return -EINVAL;
            }
            value = argv[++i];
        }
        int rc = vs_config_set(c, key, value, where, err, errlen);
        if (rc != 0)
            return rc;
    }
    if (first_positional)
        *first_positional = i;
    return 0;
}

/* Finds the config file path: --config/--config=, else VSTREAMD_CONFIG. */
static const char *
find_config_path(int argc, char *const *argv, char *const *envp)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0 || strncmp(argv[i], "--", 2) != 0)
            break;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], "--config=", 9) == 0)
            return argv[i] + 9;
    }
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "VSTREAMD_CONFIG=", 16) == 0)
            return *e + 16;
    return NULL;
}

int
vs_config_load(struct vs_config *c, int argc, char *const *argv,
               char *const *envp, int *first_positional, char *err,
               size_t errlen)
{
    vs_config_init(c);
    int rc;
    const char *path = find_config_path(argc - 1, argv + 1, envp);
    if (path != NULL) {
        if (path[0] == '\0') {
            set_err(err, errlen, "--config: needs a file path");
            return -EINVAL;
        }
        rc = vs_config_load_file(c, path, err, errlen);
        if (rc != 0)
            return rc;
    }
    rc = vs_config_load_env(c, envp, err, errlen);
    if (rc != 0)
        return rc;
    int pos = 0;
    rc = vs_config_load_args(c, argc - 1, argv + 1, &pos, err, errlen);
    if (rc != 0)
        return rc;
    if (first_positional)
        *first_positional = pos + 1;
    return vs_config_finalize(c, err, errlen);
}

int
vs_config_finalize(struct vs_config *c, char *err, size_t errlen)
{
    apply_defaults(c, 1);
    if (c->checkpoint_margin >= c->wal_slots) {
        set_err(err, errlen,
                "checkpoint_margin (%u) must be below wal_slots (%u)",
                c->checkpoint_margin, c->wal_slots);
        return -EINVAL;
    }
    if (c->restart_backoff_min_ms > c->restart_backoff_max_ms) {
        set_err(err, errlen,
                "restart_backoff_min_ms (%u) exceeds restart_backoff_max_ms "
                "(%u)",
                c->restart_backoff_min_ms, c->restart_backoff_max_ms);
        return -EINVAL;
    }
    if (strchr(c->client_addr, ':') == NULL) {
        set_err(err, errlen, "client_addr: '%s' is not HOST:PORT",
                c->client_addr);
        return -EINVAL;
    }
    if (c->tls_enabled &&
        (c->tls_cert_file[0] == '\0' || c->tls_key_file[0] == '\0')) {
        set_err(err, errlen,
                "tls_enabled: needs tls_cert_file and tls_key_file");
        return -EINVAL;
    }
    if (c->replica_tls_enabled && (c->replica_tls_cert_file[0] == '\0' ||
                                   c->replica_tls_key_file[0] == '\0' ||
                                   c->replica_tls_ca_file[0] == '\0')) {
        set_err(err, errlen,
                "replica_tls_enabled: needs replica_tls_cert_file, "
                "replica_tls_key_file and replica_tls_ca_file");
        return -EINVAL;
    }
    if (c->tls_enabled && strchr(c->tls_addr, ':') == NULL) {
        set_err(err, errlen, "tls_addr: '%s' is not HOST:PORT", c->tls_addr);
        return -EINVAL;
    }
    if (c->http_addr[0] != '\0' && strchr(c->http_addr, ':') == NULL) {
        set_err(err, errlen, "http_addr: '%s' is not HOST:PORT", c->http_addr);
        return -EINVAL;
    }
    if (c->root_username[0] != '\0') {
        size_t n = strlen(c->root_username);
        if (n < 3 || n > 50) {
            set_err(err, errlen, "root_username: must be 3..50 bytes");
            return -EINVAL;
        }
    }
    struct vs_names names;
    char why[512];
    if (vs_names_resolve(c, &names, why, sizeof(why)) != 0) {
        set_err(err, errlen, "%s", why);
        return -EINVAL;
    }
    return 0;
}

static void
format_value(const struct vs_config *c, const struct vs_config_key *k,
             char *buf, size_t len)
{
    const void *field = (const char *)c + k->offset;
    switch (k->type) {
    case VS_CFG_STR:
    case VS_CFG_PATH:
        snprintf(buf, len, "%s", (const char *)field);
        return;
    case VS_CFG_U32:
    case VS_CFG_BOOL:
        if (k->type == VS_CFG_BOOL)
            snprintf(buf, len, "%s",
                     *(const uint32_t *)field ? "true" : "false");
        else
            snprintf(buf, len, "%u", *(const uint32_t *)field);
        return;
    case VS_CFG_U64:
    case VS_CFG_SIZE:
        if (k->size == sizeof(uint32_t))
            snprintf(buf, len, "%u", *(const uint32_t *)field);
        else
            snprintf(buf, len, "%" PRIu64, *(const uint64_t *)field);
        return;
    case VS_CFG_LOG_LEVEL:
        snprintf(buf, len, "%s",
                 vs_log_level_name(*(const enum vs_log_level *)field));
        return;
    case VS_CFG_PROFILE:
        snprintf(buf, len, "%s",
                 *(const enum vs_profile *)field == VS_PROFILE_TEST
                     ? "test"
                     : "production");
        return;
    case VS_CFG_FSYNC_POLICY:
        snprintf(buf, len, "%s",
                 *(const enum vs_fsync_policy *)field == VS_FSYNC_INTERVAL
                     ? "interval"
                     : "every_batch");
        return;
    }
    snprintf(buf, len, "?");
}

void
vs_config_dump(const struct vs_config *c, int fd)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct vs_config_key *k = &config_keys[i];
        char v[VS_CONFIG_ADDRS_MAX];
        if (strcmp(k->name, "root_password") == 0)
            snprintf(v, sizeof(v), "%s", c->root_password[0] ? "(set)" : "");
        else
            format_value(c, k, v, sizeof(v));
        dprintf(fd, "%s = %s\n", k->name, v);
    }
}

void
vs_config_print_help(int fd)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct vs_config_key *k = &config_keys[i];
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s", k->name);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        dprintf(fd, "  %-32s %s", flag, k->help);
        if (k->def[0] != '\0')
            dprintf(fd, " [%s]", k->def);
        dprintf(fd, "\n");
    }
}

void
vs_config_cluster_id(const struct vs_config *c, uint64_t *lo, uint64_t *hi)
{
    XXH128_hash_t h = XXH3_128bits(c->cluster_name, strlen(c->cluster_name));
    *lo = h.low64;
    *hi = h.high64;
}
