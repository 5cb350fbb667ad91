/*
 * tests/integration/e2e.c - helpers of the end-to-end tests (see e2e.h).
 *
 * Callers: the Check-forked test process of the e2e tests.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/e2e.h"

void
e2e_start(struct vs_node *n, unsigned shards, const char *const *extra)
{
    const char *args[32];
    char nshards[16];
    size_t k = 0;
    int rc;
    args[k++] = "--with-default-root-credentials";
    if (shards != 0) {
        snprintf(nshards, sizeof nshards, "%u", shards);
        args[k++] = "--shards";
        args[k++] = nshards;
    }
    while (extra != NULL && *extra != NULL && k < 31)
        args[k++] = *extra++;
    args[k] = NULL;
    rc = vs_node_start(n, args, E2E_START_MS);
    ck_assert_msg(rc == 0, "vstreamd start: %d (%s), status %d; see %s", rc,
                  strerror(rc < 0 ? -rc : rc), n->status, n->stderr_file);
}

struct vsc *
e2e_connect(const struct vs_node *n)
{
    struct vsc_opts o;
    struct vsc *c;
    int rc;
    memset(&o, 0, sizeof o);
    o.addr = n->ready.client;
    o.io_timeout_ms = 20000;
    c = vsc_create(&o);
    ck_assert_ptr_nonnull(c);
    rc = vsc_connect(c);
    ck_assert_msg(rc == 0, "connect %s: %s", n->ready.client,
                  vsc_last_error(c));
    return c;
}

struct vsc *
e2e_login(const struct vs_node *n, const char *user, const char *password)
{
    struct vsc *c = e2e_connect(n);
    int rc = vsc_login(c, user, password, NULL);
    ck_assert_msg(rc == 0, "login %s: %d %s", user, rc, vsc_last_error(c));
    return c;
}

/* Reads what is available from fd into buf (bounded); 0 at EOF. */
static int
e2e_drain(int fd, char *buf, size_t cap, size_t *len)
{
    ssize_t k;
    char tmp[4096];
    k = read(fd, tmp, sizeof tmp);
    if (k <= 0)
        return 0;
    if (*len + (size_t)k >= cap)
        k = (ssize_t)(cap - 1 - *len);
    memcpy(buf + *len, tmp, (size_t)k);
    *len += (size_t)k;
    buf[*len] = '\0';
    return 1;
}

int
e2e_cli(const struct vs_node *n, const char *env_password, const char *input,
        char *out, size_t cap, char *err, size_t ecap, const char *const *args)
{
    const char *cli = getenv("VSTREAM_CLI");
    int pin[2], pout[2], perr[2];
    size_t olen = 0, elen = 0;
    uint64_t deadline = vs_monotonic_ns() + 30ull * 1000000000ull;
    int open_out = 1, open_err = 1, st;
    pid_t pid;
    ck_assert_msg(cli != NULL && cli[0] != '\0', "VSTREAM_CLI not set");
    ck_assert_int_eq(pipe(pin), 0);
    ck_assert_int_eq(pipe(pout), 0);
    ck_assert_int_eq(pipe(perr), 0);
    out[0] = '\0';
    err[0] = '\0';
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const char *argv[40];
        size_t k = 0;
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        dup2(perr[1], 2);
        close(pin[1]);
        close(pout[0]);
        close(perr[0]);
        setenv("VSTREAM_ADDR", n->ready.client, 1);
        unsetenv("VSTREAM_USER");
        if (env_password != NULL)
            setenv("VSTREAM_PASSWORD", env_password, 1);
        else
            unsetenv("VSTREAM_PASSWORD");
        argv[k++] = cli;
        while (*args != NULL && k < 39)
            argv[k++] = *args++;
        argv[k] = NULL;
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    if (input != NULL)
        ck_assert(write(pin[1], input, strlen(input)) ==
                  (ssize_t)strlen(input));
    close(pin[1]);
    while ((open_out || open_err) && vs_monotonic_ns() < deadline) {
        struct pollfd p[2] = {
            {.fd = open_out ? pout[0] : -1, .events = POLLIN},
            {.fd = open_err ? perr[0] : -1, .events = POLLIN}};
        if (poll(p, 2, 200) <= 0)
            continue;
        if (p[0].revents && !e2e_drain(pout[0], out, cap, &olen))
            open_out = 0;
        if (p[1].revents && !e2e_drain(perr[0], err, ecap, &elen))
            open_err = 0;
    }
    close(pout[0]);
    close(perr[0]);
    while (vs_monotonic_ns() < deadline) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

void
e2e_kill_node(struct vs_node *n)
{
    pid_t kids[64];
    size_t nk, i;
    pid_t orphans[16];
    ck_assert_int_eq(vs_node_read_ready(n), 0);
    nk = n->ready.n_shard_pids;
    memcpy(kids, n->ready.shard_pids, nk * sizeof(pid_t));
    /* All at once: the shards first, then the supervisor, back to back. */
    for (i = 0; i < nk; i++)
        kill(kids[i], SIGKILL);
    (void)vs_node_kill(n);
    ck_assert_int_eq(vs_wait_gone(kids, nk, 20000), 0);
    (void)vs_harness_orphans(NULL, 0, orphans, 16);
}

int
e2e_send(int fd, const void *p, size_t len)
{
    const uint8_t *b = p;
    while (len > 0) {
        ssize_t k = send(fd, b, len, MSG_NOSIGNAL);
        if (k == -1) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        b += k;
        len -= (size_t)k;
    }
    return 0;
}

static int
e2e_read_exact(int fd, uint8_t *p, size_t len, uint64_t deadline)
{
    while (len > 0) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        uint64_t now = vs_monotonic_ns();
        ssize_t k;
        if (now >= deadline)
            return -ETIMEDOUT;
        if (poll(&pf, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
            continue;
        k = recv(fd, p, len, 0);
        if (k == 0)
            return 0;
        if (k == -1) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        p += k;
        len -= (size_t)k;
    }
    return 1;
}

int
e2e_recv_frame(int fd, uint8_t *buf, size_t cap, uint32_t timeout_ms)
{
    uint64_t deadline = vs_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
    uint32_t size;
    int rc = e2e_read_exact(fd, buf, 256, deadline);
    if (rc <= 0)
        return rc == -ECONNRESET ? 0 : rc;
    memcpy(&size, buf + 48, 4);
    if (size < 256 || size > cap)
        return -EPROTO;
    rc = e2e_read_exact(fd, buf + 256, size - 256, deadline);
    if (rc < 0)
        return rc;
    if (rc == 0 && size > 256)
        return 0;
    return (int)size;
}

int
e2e_closed(int fd, uint32_t timeout_ms)
{
    uint64_t deadline = vs_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        uint64_t now = vs_monotonic_ns();
        char b[512];
        ssize_t k;
        if (now >= deadline)
            return 0;
        if (poll(&pf, 1, (int)((deadline - now) / 1000000u) + 1) <= 0)
            continue;
        k = recv(fd, b, sizeof b, 0);
        if (k == 0 || (k == -1 && errno == ECONNRESET))
            return 1;
        /* Bytes (e.g. an eviction frame) before the close: keep reading. */
    }
}

size_t
e2e_stream_names(struct vsc *c, char *out, size_t cap)
{
    struct vsc_stream *v;
    size_t n, i, len = 0;
    int rc = vsc_stream_list(c, &v, &n);
    ck_assert_msg(rc == 0, "list streams: %s", vsc_last_error(c));
    out[0] = '\0';
    for (i = 0; i < n; i++) {
        int k = snprintf(out + len, cap - len, "%s\n", v[i].name);
        ck_assert(k > 0 && (size_t)k < cap - len);
        len += (size_t)k;
    }
    free(v);
    return n;
}
