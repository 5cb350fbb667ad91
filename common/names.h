/*
 * common/names.h - the names of the nodes of a cluster (config keys
 * node_name and replica_names).
 *
 * Rules: a name is 1..VS_NAME_MAX bytes of [A-Za-z0-9._-] starting with a
 * letter or digit (safe in logs, JSON and Prometheus label values without
 * escaping). On a cluster (replica_addrs lists n > 1 replicas) every node
 * is configured with the same replica_names, one name per replica in
 * replica-id order; when it is empty, replica j is named "replica-<j>"
 * and this node takes node_name if that was set explicitly. If both are
 * set, node_name must equal this node's entry. The names of a cluster
 * are unique. On a one-replica node the name is node_name. Whatever is
 * refused here is refused at config load, before anything starts (one
 * line, exit 2). vs_names_digest() summarises the resolved list so two
 * nodes can compare theirs (a replica link refuses a peer whose list
 * differs).
 * Invariants: pure functions of the config, no I/O. Callers: any process.
 */
#ifndef VS_COMMON_NAMES_H
#define VS_COMMON_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

struct vs_config;

#define VS_NAME_MAX 64u /* bytes, without the NUL */

struct vs_names {
    uint32_t count; /* replicas (1 on a one-replica node) */
    char name[VS_REPLICAS_MAX][VS_NAME_MAX + 1];
};

/* 0 if s is a valid node name, else -EINVAL and the reason in err. */
int vs_name_check(const char *s, char *err, size_t errlen);

/* Resolves and checks the names of every replica of c's cluster. 0, or
 * -EINVAL with a one-line reason in err. */
int vs_names_resolve(const struct vs_config *c, struct vs_names *out, char *err,
                     size_t errlen);

/* This node's name (names->name[replica_id], or node_name on one node);
 * c must have passed vs_names_resolve. */
const char *vs_names_self(const struct vs_config *c,
                          const struct vs_names *names);

/* XXH3-64 of the resolved list (count, then each name with its length). */
uint64_t vs_names_digest(const struct vs_names *names);

#endif /* VS_COMMON_NAMES_H */
