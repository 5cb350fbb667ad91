/*
 * shard/serve/http.c - the HTTP endpoint on libevent's evhttp; see
 * http.h. Data shards, loop thread.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "common/log.h"
#include "common/mem.h"
#include "shard/serve/http.h"
#include "shard/serve/prom.h"

struct serve_http {
    struct evhttp *http;
    const struct vs_shard_ctx *ctx;
    struct vs_lr *lr;
};

static void
http_reply(struct evhttp_request *req, int code, const char *reason,
           const char *type, struct evbuffer *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_send_reply(req, code, reason, body);
}

static void
http_text(struct evhttp_request *req, int code, const char *reason,
          const char *text)
{
    struct evbuffer *b = evbuffer_new();
    if (b == NULL) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    evbuffer_add_printf(b, "%s\n", text);
    http_reply(req, code, reason, "text/plain; charset=utf-8", b);
    evbuffer_free(b);
}

static void
http_on_request(struct evhttp_request *req, void *arg)
{
    struct serve_http *h = arg;
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    if (path == NULL) {
        evhttp_send_error(req, HTTP_BADREQUEST, NULL);
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        struct evbuffer *b = evbuffer_new();
        if (b == NULL) {
            evhttp_send_error(req, HTTP_INTERNAL, NULL);
            return;
        }
        serve_prom_render(h->ctx, h->lr, b);
        http_reply(req, HTTP_OK, "OK",
                   "text/plain; version=0.0.4; "
                   "charset=utf-8",
                   b);
        evbuffer_free(b);
    } else if (strcmp(path, "/health/live") == 0) {
        http_text(req, HTTP_OK, "OK", "live");
    } else if (strcmp(path, "/health/ready") == 0) {
        char why[160];
        if (serve_node_ready(h->ctx, why, sizeof(why)))
            http_text(req, HTTP_OK, "OK", "ready");
        else
            http_text(req, 503, "Service Unavailable", why);
    } else if (strcmp(path, "/ping") == 0) {
        http_text(req, HTTP_OK, "OK", "pong");
    } else {
        http_text(req, HTTP_NOTFOUND, "Not Found", "not found");
    }
}

struct serve_http *
serve_http_create(struct event_base *base, const struct vs_shard_ctx *ctx,
                  struct vs_lr *lr, int listen_fd)
{
    struct serve_http *h = vs_xcalloc(1, sizeof(*h));
    h->ctx = ctx;
    h->lr = lr;
    h->http = evhttp_new(base);
    if (h->http == NULL) {
        close(listen_fd);
        free(h);
        errno = ENOMEM;
        return NULL;
    }
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_max_headers_size(h->http, 8192);
    evhttp_set_max_body_size(h->http, 0);
    evhttp_set_timeout(h->http, 5);
    evhttp_set_gencb(h->http, http_on_request, h);
    if (evhttp_accept_socket(h->http, listen_fd) != 0) {
        close(listen_fd);
        evhttp_free(h->http);
        free(h);
        errno = ENOMEM;
        return NULL;
    }
    return h;
}

void
serve_http_destroy(struct serve_http *h)
{
    if (h == NULL)
        return;
    evhttp_free(h->http);
    free(h);
}
