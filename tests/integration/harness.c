/*
 * tests/integration/harness.c - see harness.h. Test processes only.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/integration/harness.h"

#define HARNESS_MAX_ARGS 64

static uint64_t
h_now_ms(void)
{
    return vs_monotonic_ns() / 1000000u;
}

static void
h_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int
vs_harness_init(void)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
        return -errno;
    return 0;
}

int
vs_node_init(struct vs_node *n)
{
    memset(n, 0, sizeof(*n));
    n->status = -1;
    snprintf(n->dir, sizeof(n->dir), "/tmp/vs_node_XXXXXX");
    if (mkdtemp(n->dir) == NULL)
        return -errno;
    snprintf(n->data_dir, sizeof(n->data_dir), "%s/data", n->dir);
    snprintf(n->ready_file, sizeof(n->ready_file), "%s/ready", n->dir);
    snprintf(n->log_file, sizeof(n->log_file), "%s/vstreamd.log", n->dir);
    snprintf(n->stderr_file, sizeof(n->stderr_file), "%s/stderr.log", n->dir);
    return 0;
}

static int
h_has_arg(const char *const *args, const char *flag)
{
    size_t fl = strlen(flag);
    for (size_t i = 0; args != NULL && args[i] != NULL; i++)
        if (strncmp(args[i], flag, fl) == 0 &&
            (args[i][fl] == '\0' || args[i][fl] == '='))
            return 1;
    return 0;
}

int
vs_node_spawn(struct vs_node *n, const char *const *args)
{
    const char *bin = getenv("VSTREAMD");
    if (bin == NULL || bin[0] == '\0')
        bin = "./vstreamd";
    const char *argv[HARNESS_MAX_ARGS + 16];
    size_t k = 0;
    argv[k++] = bin;
    argv[k++] = "--profile";
    argv[k++] = "test";
    if (!h_has_arg(args, "--data-dir")) {
        argv[k++] = "--data-dir";
        argv[k++] = n->data_dir;
    }
    argv[k++] = "--ready-file";
    argv[k++] = n->ready_file;
    argv[k++] = "--log-file";
    argv[k++] = n->log_file;
    if (!h_has_arg(args, "--client-addr")) {
        argv[k++] = "--client-addr";
        argv[k++] = "127.0.0.1:0";
    }
    for (size_t i = 0; args != NULL && args[i] != NULL; i++) {
        if (i >= HARNESS_MAX_ARGS)
            return -E2BIG;
        argv[k++] = args[i];
    }
    argv[k] = NULL;
    unlink(n->ready_file);
    memset(&n->ready, 0, sizeof(n->ready));
    n->status = -1;
    pid_t pid = fork();
    if (pid == -1)
        return -errno;
    if (pid == 0) {
        int fd = open(n->stderr_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDERR_FILENO);
            dup2(fd, STDOUT_FILENO);
            close(fd);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    n->pid = pid;
    return 0;
}

int
vs_node_read_ready(struct vs_node *n)
{
    return vs_ready_file_read(n->ready_file, &n->ready);
}

static int
h_reap(struct vs_node *n)
{
    int st;
    pid_t r = waitpid(n->pid, &st, WNOHANG);
    if (r == n->pid) {
        n->status = st;
        n->pid = 0;
        return 1;
    }
    return 0;
}

/* A node that exited before it was ready: its status and the end of its
 * log on stderr, so a failed start says why (the test's output keeps it
 * after the data dir is removed). */
static void
h_report_early_exit(const struct vs_node *n)
{
    fprintf(stderr, "vstreamd exited before it was ready (%s %d); %s ends:\n",
            WIFEXITED(n->status) ? "exit" : "signal",
            WIFEXITED(n->status) ? WEXITSTATUS(n->status) : WTERMSIG(n->status),
            n->log_file);
    FILE *f = fopen(n->log_file, "re");
    if (f == NULL)
        return;
    char tail[2048];
    long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    long from = end > (long)sizeof(tail) - 1 ? end - (long)sizeof(tail) + 1 : 0;
    size_t got = 0;
    if (fseek(f, from, SEEK_SET) == 0)
        got = fread(tail, 1, sizeof(tail) - 1, f);
    tail[got] = '\0';
    fclose(f);
    fprintf(stderr, "%s\n", tail);
}

int
vs_node_start(struct vs_node *n, const char *const *args, uint32_t timeout_ms)
{
    int rc = vs_node_spawn(n, args);
    if (rc != 0)
        return rc;
    uint64_t end = h_now_ms() + timeout_ms;
    for (;;) {
        if (vs_node_read_ready(n) == 0)
            return 0;
        if (h_reap(n)) {
            h_report_early_exit(n);
            return -ECHILD;
        }
        if (h_now_ms() >= end)
            return -ETIMEDOUT;
        h_sleep_ms(5);
    }
}

int
vs_node_wait_exit(struct vs_node *n, uint32_t timeout_ms)
{
    if (n->pid == 0)
        return n->status;
    uint64_t end = h_now_ms() + timeout_ms;
    for (;;) {
        if (h_reap(n))
            return n->status;
        if (h_now_ms() >= end)
            return -ETIMEDOUT;
        h_sleep_ms(2);
    }
}

int
vs_node_stop(struct vs_node *n, uint32_t timeout_ms)
{
    if (n->pid == 0)
        return n->status;
    kill(n->pid, SIGTERM);
    return vs_node_wait_exit(n, timeout_ms);
}

int
vs_node_kill(struct vs_node *n)
{
    if (n->pid == 0)
        return n->status;
    kill(n->pid, SIGKILL);
    int st = 0;
    while (waitpid(n->pid, &st, 0) == -1 && errno == EINTR)
        ;
    n->status = st;
    n->pid = 0;
    return st;
}

int
vs_node_wait_respawn(struct vs_node *n, size_t slot, pid_t old,
                     uint32_t timeout_ms)
{
    uint64_t end = h_now_ms() + timeout_ms;
    for (;;) {
        if (vs_node_read_ready(n) == 0 && slot < n->ready.n_shard_pids &&
            n->ready.shard_pids[slot] != old &&
            vs_proc_alive(n->ready.shard_pids[slot]))
            return 0;
        if (h_now_ms() >= end)
            return -ETIMEDOUT;
        h_sleep_ms(5);
    }
}

int
vs_connect(const char *addr)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || (size_t)(colon - addr) >= sizeof(host))
        return -EINVAL;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = '\0';
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
        return -EINVAL;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd;
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == -1) {
        rc = -errno;
        close(fd);
    } else if (fd == -1) {
        rc = -errno;
    }
    freeaddrinfo(res);
    return rc;
}

/* Reads /proc/pid/stat: state and ppid. 0 or -1. */
static int
h_stat(pid_t pid, char *state, pid_t *ppid)
{
    char p[64], buf[1024];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd == -1)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *rp = strrchr(buf, ')'); /* comm may contain spaces */
    int pp;
    if (rp == NULL || sscanf(rp + 1, " %c %d", state, &pp) != 2)
        return -1;
    *ppid = (pid_t)pp;
    return 0;
}

pid_t
vs_proc_ppid(pid_t pid)
{
    char st;
    pid_t pp;
    return h_stat(pid, &st, &pp) == 0 ? pp : -1;
}

int
vs_proc_alive(pid_t pid)
{
    char st;
    pid_t pp;
    return pid > 0 && h_stat(pid, &st, &pp) == 0 && st != 'Z' && st != 'X';
}

size_t
vs_proc_children(pid_t ppid, pid_t *out, size_t max)
{
    DIR *d = opendir("/proc");
    if (d == NULL)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0)
            continue;
        char st;
        pid_t pp;
        if (h_stat((pid_t)pid, &st, &pp) == 0 && pp == ppid) {
            if (n < max)
                out[n] = (pid_t)pid;
            n++;
        }
    }
    closedir(d);
    return n;
}

size_t
vs_harness_orphans(const struct vs_node *const *nodes, size_t nn, pid_t *out,
                   size_t max)
{
    /* Reap zombies that are not running node supervisors. */
    pid_t kids[256];
    size_t k = vs_proc_children(getpid(), kids, 256);
    size_t count = 0;
    for (size_t i = 0; i < k && i < 256; i++) {
        int is_node = 0;
        for (size_t j = 0; j < nn; j++)
            if (nodes[j] != NULL && nodes[j]->pid == kids[i])
                is_node = 1;
        if (is_node)
            continue;
        int st;
        if (!vs_proc_alive(kids[i]) && waitpid(kids[i], &st, WNOHANG) > 0)
            continue;
        if (count < max)
            out[count] = kids[i];
        count++;
    }
    return count;
}

size_t
vs_harness_orphans_wait(const struct vs_node *const *nodes, size_t nn,
                        pid_t *out, size_t max, uint32_t timeout_ms)
{
    uint64_t end = h_now_ms() + timeout_ms;
    for (;;) {
        size_t n = vs_harness_orphans(nodes, nn, out, max);
        if (n == 0 || h_now_ms() >= end)
            return n;
        h_sleep_ms(10);
    }
}

int
vs_wait_gone(const pid_t *pids, size_t n, uint32_t timeout_ms)
{
    uint64_t end = h_now_ms() + timeout_ms;
    for (;;) {
        size_t alive = 0;
        for (size_t i = 0; i < n; i++) {
            if (!vs_proc_alive(pids[i])) {
                int st;
                /* an orphan re-parented to us: reap it */
                waitpid(pids[i], &st, WNOHANG);
                continue;
            }
            alive++;
        }
        if (alive == 0)
            return 0;
        if (h_now_ms() >= end)
            return -ETIMEDOUT;
        h_sleep_ms(5);
    }
}

int
vs_file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

int
vs_wait_file_contains(const char *path, const char *needle, uint32_t timeout_ms)
{
    uint64_t end = h_now_ms() + timeout_ms;
    while (!vs_file_contains(path, needle)) {
        if (h_now_ms() >= end)
            return -ETIMEDOUT;
        h_sleep_ms(5);
    }
    return 0;
}

void
vs_node_cleanup(struct vs_node *n)
{
    if (n->pid != 0)
        vs_node_kill(n);
    if (n->dir[0] != '\0') {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", n->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "harness: cannot remove %s\n", n->dir);
        n->dir[0] = '\0';
    }
}
