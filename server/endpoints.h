/*
 * server/endpoints.h - the node's production listeners beside the plain
 * client port: the TLS client listener (tls_enabled, tls_addr) and the
 * HTTP endpoint (http_addr: /metrics, /health/live, /health/ready, /ping).
 *
 * Role: the supervisor checks the TLS files (a certificate or key that
 * does not load, or that do not match, refuses the start with one line,
 * exit 2) and binds both sockets before forking, like the client
 * listener (server/listen.h); the data shards inherit and serve them.
 * Callers: the supervisor only.
 */
#ifndef VS_SERVER_ENDPOINTS_H
#define VS_SERVER_ENDPOINTS_H

#include <stddef.h>

#include "common/config.h"

struct sup_endpoints {
    int tls_fd;  /* -1 when TLS is off */
    int http_fd; /* -1 when http_addr is "" */
    char tls_bound[256];
    char http_bound[256];
};

/* Both fds -1, names "". */
void sup_endpoints_init(struct sup_endpoints *e);
/* Validates the TLS files and binds what the config enables. 0, or
 * -errno with the one-line reason in err (the caller exits 2). */
int sup_endpoints_open(struct sup_endpoints *e, const struct vs_config *cfg,
                       char *err, size_t errlen);
/* Closes the listeners (stop accepting). Idempotent. */
void sup_endpoints_close(struct sup_endpoints *e);

#endif /* VS_SERVER_ENDPOINTS_H */
