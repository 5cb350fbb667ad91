/*
 * server/endpoints.c - TLS check and the TLS / HTTP listeners; see
 * endpoints.h. Supervisor only (before fork).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "common/tls.h"
#include "server/endpoints.h"
#include "server/listen.h"

void
sup_endpoints_init(struct sup_endpoints *e)
{
    e->tls_fd = -1;
    e->http_fd = -1;
    e->tls_bound[0] = '\0';
    e->http_bound[0] = '\0';
}

int
sup_endpoints_open(struct sup_endpoints *e, const struct vs_config *cfg,
                   char *err, size_t errlen)
{
    char why[768];
    int rc;
    if (cfg->tls_enabled) {
        struct vs_tls_opts o = {
            .cert_file = cfg->tls_cert_file,
            .key_file = cfg->tls_key_file,
            .ca_file = cfg->tls_ca_file,
            .cert_what = "tls_cert_file",
            .key_what = "tls_key_file",
            .ca_what = "tls_ca_file",
        };
        SSL_CTX *ctx = vs_tls_server_ctx(&o, err, errlen);
        if (ctx == NULL)
            return -EINVAL;
        SSL_CTX_free(ctx);
        rc = sup_listen(cfg->tls_addr, e->tls_bound, sizeof(e->tls_bound), why,
                        sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "tls_addr: %s", why);
            goto fail;
        }
        e->tls_fd = rc;
    }
    if (cfg->http_addr[0] != '\0') {
        rc = sup_listen(cfg->http_addr, e->http_bound, sizeof(e->http_bound),
                        why, sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "http_addr: %s", why);
            goto fail;
        }
        e->http_fd = rc;
    }
    return 0;
fail:
    sup_endpoints_close(e);
    return rc;
}

void
sup_endpoints_close(struct sup_endpoints *e)
{
    if (e->tls_fd >= 0)
        close(e->tls_fd);
    if (e->http_fd >= 0)
        close(e->http_fd);
    e->tls_fd = e->http_fd = -1;
}
