/*
 * common/config.h - every knob of vstreamd, its default, and how it is set.
 *
 * Role: one struct (struct vs_config) holds every setting. Sources, later
 * wins: built-in defaults (of the chosen profile) < config file (INI, read
 * with libinih) < VSTREAMD_* environment variables < command-line flags.
 * Keys are flat names (`data_dir`, `log_level`); INI sections may group
 * them but do not change their names. The environment name of a key is
 * VSTREAMD_ + the key in upper case; the flag is --key-with-dashes (or
 * --key=value). An unknown key, variable or flag, or a bad value, is
 * refused with a message naming the key and where it came from (file and
 * line, "environment" or "command line").
 *
 * Profiles: `profile = production` (default) or `test`. The test profile
 * changes the DEFAULTS only (small table capacities, few WAL slots, a
 * cheap argon2 cost) so tests select it with one switch; any key set
 * explicitly keeps its value whatever the profile.
 *
 * Invariants: after vs_config_finalize() succeeded every field is within
 * its documented range. Callers: the supervisor parses; children inherit
 * the parsed struct across fork (it holds no pointers).
 */
#ifndef VS_COMMON_CONFIG_H
#define VS_COMMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

#define VS_CONFIG_PATH_MAX  1024
#define VS_CONFIG_STR_MAX   256
#define VS_CONFIG_ADDRS_MAX 2048

enum vs_profile {
    VS_PROFILE_PRODUCTION = 0,
    VS_PROFILE_TEST = 1,
};

enum vs_fsync_policy {
    VS_FSYNC_EVERY_BATCH = 0, /* fsync before the reply (default) */
    VS_FSYNC_INTERVAL = 1,    /* every fsync_interval_ms / fsync_bytes */
};

struct vs_config {
    /* --- node --- */
    enum vs_profile profile;
    char config_file[VS_CONFIG_PATH_MAX]; /* informational: file loaded */
    char data_dir[VS_CONFIG_PATH_MAX];
    uint32_t replica_id;
    uint32_t shards; /* data shards; 0 = one per core (first boot) */
    char client_addr[VS_CONFIG_STR_MAX];     /* HOST:PORT, port 0 allowed */
    char replica_addrs[VS_CONFIG_ADDRS_MAX]; /* comma-separated; "" = 1 node */
    /* data shard s listens for its links at its node's replica port +
     * s x stride (shard/link/plan.h) */
    uint32_t data_link_port_stride;
    char ready_file[VS_CONFIG_PATH_MAX];
    char pid_file[VS_CONFIG_PATH_MAX];
    char cluster_name[VS_CONFIG_STR_MAX];
    char node_name[VS_CONFIG_STR_MAX];
    char replica_names[VS_CONFIG_ADDRS_MAX]; /* comma-separated; "" = default */
    char cluster_secret_file[VS_CONFIG_PATH_MAX]; /* "" = none */
    enum vs_log_level log_level;
    char log_file[VS_CONFIG_PATH_MAX]; /* "" = stderr */

    /* --- boot and recovery --- */
    uint32_t cut_damaged_tail; /* bool: cut a damaged WAL tail (1 replica) */

    /* --- metadata capacities (shard/meta) --- */
    uint32_t max_streams;
    uint32_t max_topics;
    uint32_t max_partitions;
    uint32_t max_consumer_groups;
    uint32_t max_group_members;
    uint32_t max_users;
    uint32_t max_pats; /* all users together; at most 100 per user */
    uint32_t clients_table_max;

    /* --- journal and checkpoints (shard/storage) --- */
    uint32_t wal_slots;
    uint32_t checkpoint_margin;

    /* --- credentials --- */
    uint64_t argon2_opslimit;
    uint64_t argon2_memlimit; /* bytes */
    char root_username[VS_CONFIG_STR_MAX];
    char root_password[VS_CONFIG_STR_MAX];
    uint32_t with_default_root_credentials; /* bool: iggy/iggy */

    /* --- runtime (server/, ipc/) --- */
    uint32_t lr_reader_deadline_ms;    /* writer's wait before it reports */
    uint32_t lr_missed_deadlines_kill; /* reports before the reader dies */
    uint32_t shutdown_timeout_ms;      /* SIGTERM -> SIGKILL of children */
    uint32_t restart_backoff_min_ms;
    uint32_t restart_backoff_max_ms;
    uint32_t ring_bytes; /* each IPC ring's data area */

    /* --- client limits --- */
    uint32_t max_connections;
    uint32_t max_metadata_body; /* bytes of a metadata request body */
    uint32_t max_message_body;  /* bytes of a send/poll request body */
    uint32_t unauth_timeout_ms; /* close connections not logged in */
    uint32_t login_attempts_per_sec;
    uint32_t conn_output_max;    /* bytes queued to one client */
    uint32_t conn_handoff_after; /* data requests in a row to another data
                                    shard's partitions before the
                                    connection moves there; 0 = never */

    /* --- TLS for clients and the HTTP endpoint (production) --- */
    uint32_t tls_enabled;                   /* bool: serve tls_addr too */
    char tls_addr[VS_CONFIG_STR_MAX];       /* HOST:PORT of the TLS port */
    char tls_cert_file[VS_CONFIG_PATH_MAX]; /* PEM chain, leaf first */
    char tls_key_file[VS_CONFIG_PATH_MAX];  /* PEM private key */
    char tls_ca_file[VS_CONFIG_PATH_MAX];   /* "" = no client certs */
    /* replica links inside mutual TLS (shard/link/links.h) */
    uint32_t replica_tls_enabled;                   /* bool */
    char replica_tls_cert_file[VS_CONFIG_PATH_MAX]; /* this node's chain */
    char replica_tls_key_file[VS_CONFIG_PATH_MAX];
    char replica_tls_ca_file[VS_CONFIG_PATH_MAX]; /* signs every replica */
    char http_addr[VS_CONFIG_STR_MAX];            /* "" = no HTTP endpoint */
    uint32_t metrics_max_partition_series;        /* per-partition series cap */

    /* --- data plane (shard/data) --- */
    uint64_t segment_size;
    enum vs_fsync_policy fsync_policy;
    uint32_t fsync_interval_ms;
    uint64_t fsync_bytes;
    uint64_t disk_watermark_bytes; /* refuse sends below this free space */
    /* bool: sends' segment writes on the sync threads (shard/serve/
     * gcommit.h), else on the loop */
    uint32_t segment_write_offload;
    /* bool, experimental: partitions of replica sets of more than one
     * node run a VSR group each (shard/serve/pgroups.h) */
    uint32_t partition_replication;
    /* consumer groups: members silent for 1.2 x this are removed; the
     * cooperative revocation fallback timeout (reference: both 30 s) */
    uint32_t group_heartbeat_interval_ms;

    /* --- client hardening (shard/serve) --- */
    uint32_t login_backoff_base_ms; /* failed-login back-off unit */
    uint32_t login_backoff_max_ms;
    uint32_t login_failure_log_interval_ms;
    uint32_t frame_timeout_ms; /* first byte of a frame -> complete */

    /* which keys were set explicitly (bit i = key i of the table) */
    uint64_t explicit_set[2];
};

enum vs_config_type {
    VS_CFG_STR,
    VS_CFG_PATH,
    VS_CFG_U32,
    VS_CFG_U64,
    VS_CFG_SIZE, /* u64 bytes, accepts K/M/G/T (KiB...) suffixes */
    VS_CFG_BOOL, /* u32 0/1: true/false/yes/no/on/off/1/0 */
    VS_CFG_LOG_LEVEL,
    VS_CFG_PROFILE,
    VS_CFG_FSYNC_POLICY,
};

struct vs_config_key {
    const char *name;
    enum vs_config_type type;
    size_t offset;
    size_t size; /* of the field */
    uint64_t min, max;
    const char *def;      /* production default, as text */
    const char *test_def; /* test-profile default, NULL = same */
    const char *help;
};

/* The key table, in documentation order. */
const struct vs_config_key *vs_config_keys(size_t *count);

/* Production defaults, nothing marked explicit. */
void vs_config_init(struct vs_config *c);

/* Sets one key from text. `where` names the source for messages
 * ("vstreamd.conf:12", "environment VSTREAMD_X", "--flag").
 * Returns 0 or -EINVAL with a message in err. */
int vs_config_set(struct vs_config *c, const char *key, const char *value,
                  const char *where, char *err, size_t errlen);

/* Loads an INI file. A missing file is an error (-ENOENT) with a message. */
int vs_config_load_file(struct vs_config *c, const char *path, char *err,
                        size_t errlen);

/* Applies every VSTREAMD_* variable of envp (NULL-terminated). Variables
 * that name no key are refused, except VSTREAMD_CONFIG (the file path). */
int vs_config_load_env(struct vs_config *c, char *const *envp, char *err,
                       size_t errlen);

/* Applies command-line flags argv[0..argc). Stops at the first argument
 * not starting with "--" (or after "--") and stores its index in
 * *first_positional. --config is accepted and skipped here (see
 * vs_config_load). Returns 0 or -EINVAL with a message. */
int vs_config_load_args(struct vs_config *c, int argc, char *const *argv,
                        int *first_positional, char *err, size_t errlen);

/* The whole sequence: defaults, file (from --config, else VSTREAMD_CONFIG,
 * else none), environment, flags, then finalize. argv[0] is skipped. */
int vs_config_load(struct vs_config *c, int argc, char *const *argv,
                   char *const *envp, int *first_positional, char *err,
                   size_t errlen);

/* Fills every key not set explicitly from the profile's defaults and
 * checks cross-key rules. Returns 0 or -EINVAL with a message. */
int vs_config_finalize(struct vs_config *c, char *err, size_t errlen);

/* 1 if the key was set explicitly (file, environment or flag). */
int vs_config_is_explicit(const struct vs_config *c, const char *key);

/* Writes "key = value" lines of the effective configuration. */
void vs_config_dump(const struct vs_config *c, int fd);
/* Writes the flag help (one line per key with default and meaning). */
void vs_config_print_help(int fd);

/* Cluster id = XXH3-128 of the cluster name (DESIGN §5). */
void vs_config_cluster_id(const struct vs_config *c, uint64_t *lo,
                          uint64_t *hi);

#endif /* VS_COMMON_CONFIG_H */
