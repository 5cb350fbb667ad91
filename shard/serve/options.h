/*
 * shard/serve/options.h - the options TLV block of CreateStream,
 * UpdateStream, CreateTopic, UpdateTopic, CreateUser and UpdateUser
 * (iggy-client-protocol-2.md §10): structural checks and the resolution
 * of the topic catalog keys into struct meta_topic_opts.
 *
 * Structure: fields [kind u8 != 0][len u32 1..255][bytes], alternating a
 * key (kind 2 String, unique) and a typed value; at most 1024 pairs and
 * 100,000 bytes; anything else -> 3. Catalog: stream/user scopes accept
 * no key (4041); topic create accepts the 8 keys of §10, topic update
 * only compression_algorithm, message_expiry, max_topic_size; another
 * key -> 4041; a bad value -> 4042; max_topic_size below the resolved
 * segment size -> 1019. vstream adds one create-only key,
 * `replication_factor` (Uint8, Uint32, Uint64 or a decimal String; 0 =
 * default min(3, nodes)): above VS_REPLICAS_MAX -> 2018, and apply
 * refuses one above the cluster's node count (R 2018). Iggy's SDKs never
 * send it; it is not echoed in the topic record's option blocks.
 *
 * Resolution (create): keys not sent take their defaults (expiry and
 * max size u64::MAX, segment 1 GiB, 1024 messages, 1 MiB, no fsync, no
 * preallocation, compression none); a key sent as 0 means "default" and
 * is left out of explicit_mask, as is a value equal to the default.
 * Update: a literal 0 is stored as 0 ("server default") and the key is
 * explicit.
 *
 * Callers: data shards (pure), tests.
 */
#ifndef VS_SHARD_SERVE_OPTIONS_H
#define VS_SHARD_SERVE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "shard/meta/state.h"

#define SERVE_OPT_MAX_PAIRS 1024u
#define SERVE_OPT_MAX_BYTES 100000u

enum serve_opt_scope {
    SERVE_OPT_EMPTY = 0,    /* streams and users: no key accepted */
    SERVE_OPT_TOPIC_CREATE, /* the whole catalog */
    SERVE_OPT_TOPIC_UPDATE, /* compression, expiry, max size */
};

/* Catalog defaults. */
void serve_topic_opts_default(struct meta_topic_opts *o);

/* Parses a block of `len` bytes (may be 0). `partitions` is the topic's
 * partitions_count (preallocation rule). Fills *out (create: defaults +
 * the keys given; update: only the keys given, explicit_mask says
 * which). Returns 0 or the header status (3, 4041, 4042, 1019). */
uint32_t serve_options_parse(const uint8_t *p, size_t len,
                             enum serve_opt_scope scope, uint32_t partitions,
                             struct meta_topic_opts *out);

/* Human-readable parsers used for String values (exported for tests):
 * durations like "1h 30m", "15s", "100ms" -> µs; sizes like "1 GB",
 * "512MiB", "4096" -> bytes. 0 or -EINVAL (also on overflow). */
int serve_parse_duration_us(const char *s, size_t len, uint64_t *out);
int serve_parse_size(const char *s, size_t len, uint64_t *out);

#endif /* VS_SHARD_SERVE_OPTIONS_H */
