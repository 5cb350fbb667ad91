/*
 * server/supervisor.c - the node's supervisor; see supervisor.h.
 *
 * Single-threaded. Signals (SIGCHLD, SIGTERM, SIGINT, SIGHUP) stay blocked
 * and are read from a signalfd in one poll() loop together with the
 * supervisor's doorbell (children ring it when they serve, shard 0 when
 * a left-right reader is slow); timers (restart back-off, shutdown
 * deadline) are the poll timeout. The authoritative process table lives
 * in private memory (struct sup_child), never in the segment.
 *
 * Child start, in order (sup_child_start):
 *   1. unblock signals, default dispositions (SIGPIPE and, until the
 *      shard's loop takes it, SIGHUP ignored);
 *   2. PR_SET_PDEATHSIG(SIGKILL), then getppid() == supervisor, else exit:
 *      the parent may have died between fork and prctl;
 *   3. close the supervisor's private fds (signalfd, the listener the
 *      slot does not use); the data-dir lock fd stays open on purpose;
 *   4. oom_score_adj = supervisor's + 100 (max 1000);
 *   5. record its pid in its vs_proc_shm slot, run the shard main.
 *
 * Reaping (sup_reap), for each pid waitpid(-1, WNOHANG) returns:
 *   1. log the exit (code, or signal and core flag);
 *   2. clear the slot: proc pid/ready/reason and the left-right reader
 *      slot (a reaped process cannot write any more, and its pid is not
 *      reused before this reap) - before anything can respawn into it;
 *   3. exit code 2: stop the node with the child's reason and code 2;
 *      otherwise (not stopping) respawn after min(max, min * 2^n) ms,
 *      n = crashes in a row (reset when the child lived >= max).
 *
 * Stop (sup_begin_stop): close the listeners (stop accepting), SIGTERM
 * every child, SIGKILL the survivors at shutdown_timeout_ms or on a
 * second SIGTERM/SIGINT; return once all are reaped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/readyfile.h"
#include "common/secret.h"
#include "ipc/lr.h"
#include "ipc/metrics.h"
#include "ipc/segment.h"
#include "server/datadir.h"
#include "server/datalinks.h"
#include "server/endpoints.h"
#include "server/listen.h"
#include "server/notify.h"
#include "server/supervisor.h"
#include "shard/shard.h"

struct sup_child {
    pid_t pid; /* 0 = not running */
    uint64_t incarnation;
    uint32_t crashes; /* in a row */
    uint64_t started_ns;
    uint64_t restart_at_ns; /* 0 = no respawn scheduled */
    int slow_killed;        /* SIGKILL sent for missed deadlines */
};

struct sup {
    struct vs_config cfg;
    int argc;
    char **argv;
    char **envp;
    pid_t pid;
    uint32_t k, n;
    int lock_fd, client_fd, replica_fd, sig_fd;
    char client_bound[256], replica_bound[256];
    struct vs_seg seg;
    struct vs_lr lr;
    struct sup_child child[VS_SEG_MAX_PROCS];
    int stopping;
    uint64_t stop_deadline_ns;
    int exit_code;
    char fatal_reason[VS_SEG_REASON_MAX + 64];
    pid_t ready_pids[VS_SEG_MAX_PROCS]; /* as last written, 0 = never */
    int ready_written;
    int degraded_notified;   /* STATUS= says a shard is restarting */
    struct sup_endpoints ep; /* TLS and HTTP listeners */
    struct sup_datalinks dl; /* data shards' replica-link listeners */
};

/* Static: children inherit it, and pointers into it stay reachable. */
static struct sup sup_g;

static void
sup_say_fatal(const char *reason)
{
    vs_log_error("%s", reason);
    /* The reason is always on stderr, also when the log is a file. */
    if (vs_log_fd() != STDERR_FILENO)
        dprintf(STDERR_FILENO, "vstreamd: %s\n", reason);
}

/* ---- children ---- */

static void
sup_child_oom(void)
{
    int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    if (fd == -1)
        return;
    char buf[32] = {0};
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    long v = n > 0 ? strtol(buf, NULL, 10) : 0;
    v = v + 100 > 1000 ? 1000 : v + 100;
    int m = snprintf(buf, sizeof(buf), "%ld\n", v);
    if (pwrite(fd, buf, (size_t)m, 0) != m)
        vs_log_warn("cannot raise oom_score_adj: %s", strerror(errno));
    close(fd);
}

_Noreturn static void
sup_child_start(struct sup *s, uint32_t slot)
{
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    /* A SIGHUP forwarded before the shard's loop owns it is ignored
     * rather than fatal; libevent installs its handler later. */
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != s->pid)
        _exit(VS_EXIT_RESTART);
    char role[16];
    snprintf(role, sizeof(role), "shard%u", slot);
    vs_log_set_role(role);
    close(s->sig_fd);
    struct vs_shard_ctx ctx = {
        .cfg = &s->cfg,
        .seg = &s->seg,
        .slot = slot,
        .k = s->k,
        /* shard 0 only reads the client listener's bound address (it
         * advertises it to the other replicas) and closes it. */
        .client_fd = s->client_fd,
        .replica_fd =
            slot == 0 ? s->replica_fd : sup_datalinks_fd(&s->dl, slot),
        .tls_fd = slot == 0 ? -1 : s->ep.tls_fd,
        .http_fd = slot == 0 ? -1 : s->ep.http_fd,
        .incarnation = s->child[slot].incarnation,
    };
    if (slot == 0)
        sup_endpoints_close(&s->ep);
    if (slot != 0 && s->replica_fd >= 0)
        close(s->replica_fd);
    sup_datalinks_keep_only(&s->dl, slot);
    sup_child_oom();
    atomic_store(&seg_proc(&s->seg, slot)->pid, (int32_t)getpid());
    metrics_bind(&s->seg, slot);
    int code = slot == 0 ? shard0_main(&ctx) : worker_main(&ctx);
    exit(code);
}

static void
sup_spawn(struct sup *s, uint32_t slot)
{
    struct sup_child *c = &s->child[slot];
    c->restart_at_ns = 0;
    c->slow_killed = 0;
    c->incarnation++;
    atomic_store(&seg_proc(&s->seg, slot)->incarnation, c->incarnation);
    pid_t pid = fork();
    if (pid == 0)
        sup_child_start(s, slot);
    if (pid == -1) {
        int e = errno;
        vs_log_error("cannot fork shard %u: %s", slot, strerror(e));
        c->crashes++;
        c->restart_at_ns = vs_monotonic_ns() +
                           (uint64_t)s->cfg.restart_backoff_max_ms * 1000000u;
        return;
    }
    c->pid = pid;
    c->started_ns = vs_monotonic_ns();
    vs_log_info("shard %u started: pid %d (incarnation %llu)", slot, (int)pid,
                (unsigned long long)c->incarnation);
}

static uint32_t
sup_alive(const struct sup *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n; i++)
        n += s->child[i].pid != 0;
    return n;
}

static void
sup_signal_all(struct sup *s, int sig)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->child[i].pid != 0)
            kill(s->child[i].pid, sig);
}

static void
sup_begin_stop(struct sup *s, int code)
{
    if (s->stopping)
        return;
    s->stopping = 1;
    s->exit_code = code;
    atomic_store_explicit(&s->seg.hdr->stopping, 1, memory_order_relaxed);
    if (s->client_fd >= 0) {
        close(s->client_fd);
        s->client_fd = -1;
    }
    if (s->replica_fd >= 0) {
        close(s->replica_fd);
        s->replica_fd = -1;
    }
    sup_endpoints_close(&s->ep);
    sup_datalinks_close(&s->dl);
    sup_notify_stopping();
    for (uint32_t i = 0; i < s->n; i++)
        s->child[i].restart_at_ns = 0;
    s->stop_deadline_ns =
        vs_monotonic_ns() + (uint64_t)s->cfg.shutdown_timeout_ms * 1000000u;
    vs_log_info("stopping: %u shard(s) to stop within %u ms", sup_alive(s),
                s->cfg.shutdown_timeout_ms);
    sup_signal_all(s, SIGTERM);
}

static void
sup_schedule_restart(struct sup *s, uint32_t slot, uint64_t now)
{
    struct sup_child *c = &s->child[slot];
    uint64_t max_ns = (uint64_t)s->cfg.restart_backoff_max_ms * 1000000u;
    if (now - c->started_ns >= max_ns)
        c->crashes = 0;
    uint64_t delay = (uint64_t)s->cfg.restart_backoff_min_ms * 1000000u;
    for (uint32_t i = 0; i < c->crashes && delay < max_ns; i++)
        delay *= 2;
    if (delay > max_ns)
        delay = max_ns;
    c->crashes++;
    c->restart_at_ns = now + delay;
    vs_log_info("shard %u restarts in %llu ms", slot,
                (unsigned long long)(delay / 1000000u));
}

static void
sup_reap(struct sup *s)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid == -1 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        uint32_t slot = s->n;
        for (uint32_t i = 0; i < s->n; i++)
            if (s->child[i].pid == pid)
                slot = i;
        if (slot == s->n) {
            vs_log_warn("reaped unknown child pid %d", (int)pid);
            continue;
        }
        struct sup_child *c = &s->child[slot];
        char reason[VS_SEG_REASON_MAX];
        memcpy(reason, seg_proc(&s->seg, slot)->reason, sizeof(reason));
        reason[sizeof(reason) - 1] = '\0';
        int code = -1;
        if (WIFEXITED(st)) {
            code = WEXITSTATUS(st);
            if (code == 0 && s->stopping)
                vs_log_info("shard %u (pid %d) stopped", slot, (int)pid);
            else
                vs_log_warn("shard %u (pid %d) exited with code %d%s%s", slot,
                            (int)pid, code, reason[0] ? ": " : "", reason);
        } else if (WIFSIGNALED(st)) {
            int sig = WTERMSIG(st);
            vs_log_warn("shard %u (pid %d) killed by signal %d (%s)%s", slot,
                        (int)pid, sig, strsignal(sig),
                        WCOREDUMP(st) ? ", core dumped" : "");
        }
        /* Step 2: the slot is clean before anything respawns into it. */
        seg_slot_clear(&s->seg, slot);
        c->pid = 0;
        if (code == VS_EXIT_FATAL) {
            if (!s->stopping || s->exit_code == 0) {
                snprintf(s->fatal_reason, sizeof(s->fatal_reason),
                         "shard %u refused to run: %s", slot,
                         reason[0] ? reason : "exit code 2");
                sup_say_fatal(s->fatal_reason);
            }
            if (!s->stopping)
                sup_begin_stop(s, VS_EXIT_FATAL);
            else if (s->exit_code == 0)
                s->exit_code = VS_EXIT_FATAL;
            continue;
        }
        if (!s->stopping) {
            sup_schedule_restart(s, slot, vs_monotonic_ns());
            char line[96];
            snprintf(line, sizeof(line), "degraded: shard %u restarting", slot);
            sup_notify_status(line);
            s->degraded_notified = 1;
        }
    }
}

/* SIGKILLs data shards whose left-right slot missed too many deadlines. */
static void
sup_check_slow(struct sup *s)
{
    for (uint32_t i = 1; i < s->n; i++) {
        struct sup_child *c = &s->child[i];
        int32_t pid;
        uint32_t missed;
        lr_slot_status(&s->lr, i, &pid, &missed);
        if (c->pid == 0 || c->slow_killed || pid != c->pid ||
            missed < s->cfg.lr_missed_deadlines_kill)
            continue;
        vs_log_error("shard %u (pid %d) missed %u left-right deadlines of "
                     "%u ms: killing it",
                     i, (int)pid, missed, s->cfg.lr_reader_deadline_ms);
        kill(c->pid, SIGKILL);
        c->slow_killed = 1;
    }
}

static void
sup_check_ready(struct sup *s)
{
    if (s->stopping)
        return;
    int changed = !s->ready_written;
    for (uint32_t i = 0; i < s->n; i++) {
        struct vs_proc_shm *p = seg_proc(&s->seg, i);
        if (s->child[i].pid == 0 ||
            atomic_load_explicit(&p->ready, memory_order_acquire) == 0)
            return;
        if (s->ready_pids[i] != s->child[i].pid)
            changed = 1;
    }
    if (!changed)
        return;
    struct vs_ready_info info;
    memset(&info, 0, sizeof(info));
    snprintf(info.client, sizeof(info.client), "%s", s->client_bound);
    snprintf(info.replica, sizeof(info.replica), "%s", s->replica_bound);
    snprintf(info.tls, sizeof(info.tls), "%s", s->ep.tls_bound);
    snprintf(info.http, sizeof(info.http), "%s", s->ep.http_bound);
    info.pid = s->pid;
    size_t max = sizeof(info.shard_pids) / sizeof(info.shard_pids[0]);
    for (uint32_t i = 0; i < s->n; i++) {
        s->ready_pids[i] = s->child[i].pid;
        if (i < max)
            info.shard_pids[info.n_shard_pids++] = s->child[i].pid;
    }
    char status[640];
    snprintf(status, sizeof(status), "serving: client %s%s%s, %u data shard(s)",
             s->client_bound, s->ep.tls_bound[0] ? ", tls " : "",
             s->ep.tls_bound, s->k);
    if (!s->ready_written) {
        vs_log_info("node serves: client %s%s%s%s%s%s%s, %u data shard(s)",
                    s->client_bound, s->ep.tls_bound[0] ? ", tls " : "",
                    s->ep.tls_bound, s->ep.http_bound[0] ? ", http " : "",
                    s->ep.http_bound, s->replica_bound[0] ? ", replica " : "",
                    s->replica_bound, s->k);
        sup_notify_ready(status);
    } else if (s->degraded_notified) {
        sup_notify_status(status);
    }
    s->degraded_notified = 0;
    s->ready_written = 1;
    if (s->cfg.ready_file[0] != '\0') {
        int rc = vs_ready_file_write(s->cfg.ready_file, &info);
        if (rc != 0)
            vs_log_error("ready_file %s: %s", s->cfg.ready_file, strerror(-rc));
    }
}

static void
sup_reload(struct sup *s)
{
    struct vs_config nc;
    char err[1024];
    int pos = 0;
    if (vs_config_load(&nc, s->argc, s->argv, s->envp, &pos, err,
                       sizeof(err)) != 0) {
        vs_log_warn("SIGHUP: keeping the current configuration: %s", err);
    } else if (nc.log_level != s->cfg.log_level) {
        vs_log_info("SIGHUP: log level %s -> %s",
                    vs_log_level_name(s->cfg.log_level),
                    vs_log_level_name(nc.log_level));
        s->cfg.log_level = nc.log_level;
        vs_log_set_level(nc.log_level);
    }
    atomic_store_explicit(&s->seg.hdr->log_level, (uint32_t)s->cfg.log_level,
                          memory_order_relaxed);
    int rc = vs_log_reopen();
    if (rc != 0)
        vs_log_warn("SIGHUP: cannot reopen the log: %s", strerror(-rc));
    else
        vs_log_info("SIGHUP: log reopened");
    sup_signal_all(s, SIGHUP);
}

static void
sup_on_signal(struct sup *s)
{
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(s->sig_fd, &si, sizeof(si));
        if (n == -1 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(si))
            return;
        switch (si.ssi_signo) {
        case SIGCHLD:
            sup_reap(s);
            break;
        case SIGTERM:
        case SIGINT:
            if (!s->stopping) {
                vs_log_info("signal %u: stopping the node", si.ssi_signo);
                sup_begin_stop(s, VS_EXIT_OK);
            } else {
                vs_log_warn("second signal %u: killing the shards",
                            si.ssi_signo);
                sup_signal_all(s, SIGKILL);
            }
            break;
        case SIGHUP:
            sup_reload(s);
            break;
        default:
            break;
        }
    }
}

static void
sup_timers(struct sup *s, uint64_t now)
{
    if (s->stopping) {
        if (s->stop_deadline_ns != 0 && now >= s->stop_deadline_ns) {
            for (uint32_t i = 0; i < s->n; i++)
                if (s->child[i].pid != 0)
                    vs_log_warn("shard %u (pid %d) did not stop in %u ms: "
                                "SIGKILL",
                                i, (int)s->child[i].pid,
                                s->cfg.shutdown_timeout_ms);
            sup_signal_all(s, SIGKILL);
            s->stop_deadline_ns = 0;
        }
        return;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        struct sup_child *c = &s->child[i];
        if (c->pid == 0 && c->restart_at_ns != 0 && now >= c->restart_at_ns)
            sup_spawn(s, i);
    }
}

static int
sup_poll_timeout(const struct sup *s, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    if (s->stopping && s->stop_deadline_ns != 0)
        next = s->stop_deadline_ns;
    for (uint32_t i = 0; !s->stopping && i < s->n; i++)
        if (s->child[i].pid == 0 && s->child[i].restart_at_ns != 0 &&
            s->child[i].restart_at_ns < next)
            next = s->child[i].restart_at_ns;
    if (next == UINT64_MAX)
        return 1000;
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + 999999u) / 1000000u;
    return ms > 1000 ? 1000 : (int)ms;
}

static int
sup_write_pid_file(const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd == -1)
        return -errno;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
    int rc = write(fd, buf, (size_t)n) == n ? 0 : (errno ? -errno : -EIO);
    if (close(fd) == -1 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) == -1)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/* Everything before the first fork. 0, or an exit code with the reason
 * already reported. */
static int
sup_prepare(struct sup *s)
{
    char err[1024];
    int rc = sup_datadir_lock(s->cfg.data_dir, err, sizeof(err));
    if (rc < 0) {
        sup_say_fatal(err);
        /* a dead node's processes still exiting: worth a restart */
        return rc == -ETIMEDOUT ? VS_EXIT_RESTART : VS_EXIT_FATAL;
    }
    s->lock_fd = rc;
    rc = sup_shards_resolve(s->cfg.data_dir, s->cfg.shards,
                            vs_config_is_explicit(&s->cfg, "shards"), &s->k,
                            err, sizeof(err));
    if (rc != 0) {
        sup_say_fatal(err);
        return VS_EXIT_FATAL;
    }
    s->n = s->k + 1;
    if (s->cfg.pid_file[0] != '\0') {
        rc = sup_write_pid_file(s->cfg.pid_file);
        if (rc != 0) {
            char msg[VS_CONFIG_PATH_MAX + 128];
            snprintf(msg, sizeof(msg), "pid_file %s: %s", s->cfg.pid_file,
                     strerror(-rc));
            sup_say_fatal(msg);
            return VS_EXIT_FATAL;
        }
    }
    if (s->cfg.ready_file[0] != '\0')
        unlink(s->cfg.ready_file);

    rc = sup_listen(s->cfg.client_addr, s->client_bound,
                    sizeof(s->client_bound), err, sizeof(err));
    if (rc < 0) {
        char msg[1100];
        snprintf(msg, sizeof(msg), "client_addr: %s", err);
        sup_say_fatal(msg);
        return VS_EXIT_FATAL;
    }
    s->client_fd = rc;
    rc = sup_endpoints_open(&s->ep, &s->cfg, err, sizeof(err));
    if (rc != 0) {
        sup_say_fatal(err);
        return VS_EXIT_FATAL;
    }
    uint32_t n_replicas = sup_addr_list_count(s->cfg.replica_addrs);
    if (n_replicas == 0 && s->cfg.replica_id != 0) {
        snprintf(err, sizeof(err),
                 "replica_id %u needs replica_addrs (a one-replica cluster "
                 "is replica 0)",
                 s->cfg.replica_id);
        sup_say_fatal(err);
        return VS_EXIT_FATAL;
    }
    if (n_replicas > 0) {
        char addr[256];
        if (sup_addr_list_get(s->cfg.replica_addrs, s->cfg.replica_id, addr,
                              sizeof(addr)) != 0) {
            snprintf(err, sizeof(err),
                     "replica_id %u has no entry in replica_addrs (%u "
                     "entries)",
                     s->cfg.replica_id, n_replicas);
            sup_say_fatal(err);
            return VS_EXIT_FATAL;
        }
        rc = sup_listen(addr, s->replica_bound, sizeof(s->replica_bound), err,
                        sizeof(err));
        if (rc < 0) {
            char msg[1100];
            snprintf(msg, sizeof(msg), "replica address: %s", err);
            sup_say_fatal(msg);
            return VS_EXIT_FATAL;
        }
        s->replica_fd = rc;
    }
    if (n_replicas > 1) {
        /* the links' MAC key: refused here, before any fork, so a bad or
         * missing secret is one line and exit 2 (shard 0 reads it again) */
        uint8_t key[VS_SECRET_BYTES];
        rc = vs_secret_load(s->cfg.cluster_secret_file, key, err, sizeof(err));
        sodium_memzero(key, sizeof(key));
        if (rc != 0) {
            char msg[1100];
            snprintf(msg, sizeof(msg),
                     "%s (a replica of a %u-node cluster needs "
                     "--cluster-secret-file)",
                     err, n_replicas);
            sup_say_fatal(msg);
            return VS_EXIT_FATAL;
        }
    }

    rc = sup_datalinks_open(&s->dl, &s->cfg, s->k, err, sizeof(err));
    if (rc != 0) {
        sup_say_fatal(err);
        return VS_EXIT_FATAL;
    }

    struct vs_seg_params p = {
        .n_procs = s->n,
        .lr_instance_size = shard0_instance_size(&s->cfg),
        .ring_bytes = s->cfg.ring_bytes,
        .stats_capacity = s->cfg.max_partitions,
        .throttle_slots = VS_THROTTLE_NODE_SLOTS,
        .conntab_slots = s->cfg.max_connections,
    };
    rc = seg_create(&s->seg, &p);
    if (rc != 0) {
        snprintf(err, sizeof(err),
                 "cannot create the shared-memory segment (%u processes, "
                 "%u-byte rings): %s",
                 s->n, s->cfg.ring_bytes, strerror(-rc));
        sup_say_fatal(err);
        return VS_EXIT_FATAL;
    }
    atomic_store_explicit(&s->seg.hdr->log_level, (uint32_t)s->cfg.log_level,
                          memory_order_relaxed);
    size_t len;
    void *region = seg_lr_region(&s->seg, &len);
    rc = lr_attach(&s->lr, region, len);
    if (rc != 0) {
        sup_say_fatal("left-right region does not validate");
        return VS_EXIT_RESTART;
    }
    return 0;
}

static void
sup_cleanup(struct sup *s)
{
    if (s->sig_fd >= 0)
        close(s->sig_fd);
    if (s->client_fd >= 0)
        close(s->client_fd);
    if (s->replica_fd >= 0)
        close(s->replica_fd);
    sup_endpoints_close(&s->ep);
    sup_datalinks_close(&s->dl);
    seg_destroy(&s->seg);
    if (s->cfg.pid_file[0] != '\0')
        unlink(s->cfg.pid_file);
    if (s->cfg.ready_file[0] != '\0')
        unlink(s->cfg.ready_file);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
}

int
sup_run(const struct vs_config *cfg, int argc, char **argv, char **envp)
{
    struct sup *s = &sup_g;
    memset(s, 0, sizeof(*s));
    s->cfg = *cfg;
    s->argc = argc;
    s->argv = argv;
    s->envp = envp;
    s->pid = getpid();
    s->lock_fd = s->client_fd = s->replica_fd = s->sig_fd = -1;
    sup_endpoints_init(&s->ep);
    sup_datalinks_init(&s->dl);
    sup_notify_init();
    s->seg.memfd = s->seg.sup_doorbell = -1;
    for (uint32_t i = 0; i < VS_SEG_MAX_PROCS; i++)
        s->seg.doorbell[i] = -1;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = sup_prepare(s);
    if (rc != 0) {
        sup_cleanup(s);
        return rc;
    }
    s->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->sig_fd == -1) {
        vs_log_error("signalfd: %s", strerror(errno));
        sup_cleanup(s);
        return VS_EXIT_RESTART;
    }
    vs_log_info("vstreamd %s: data_dir %s, %u data shard(s), supervisor "
                "pid %d",
                PACKAGE_VERSION, s->cfg.data_dir, s->k, (int)s->pid);
    sup_reap(s); /* once at start: nothing may be left unreaped */
    for (uint32_t i = 0; i < s->n; i++)
        sup_spawn(s, i);

    struct pollfd pfd[2] = {{.fd = s->sig_fd, .events = POLLIN},
                            {.fd = s->seg.sup_doorbell, .events = POLLIN}};
    while (!s->stopping || sup_alive(s) > 0) {
        uint64_t now = vs_monotonic_ns();
        int wait_ms = sup_poll_timeout(s, now);
        int wd_ms = sup_notify_next_ms(now);
        int pr = poll(pfd, 2, wd_ms < wait_ms ? wd_ms : wait_ms);
        if (pr == -1 && errno != EINTR) {
            vs_log_error("poll: %s", strerror(errno));
            sup_begin_stop(s, VS_EXIT_RESTART);
        }
        if (pr > 0 && (pfd[0].revents & POLLIN))
            sup_on_signal(s);
        if (pr > 0 && (pfd[1].revents & POLLIN))
            ring_doorbell_drain(s->seg.sup_doorbell);
        sup_check_slow(s);
        sup_check_ready(s);
        sup_timers(s, vs_monotonic_ns());
        sup_notify_tick(vs_monotonic_ns());
    }
    if (s->exit_code == VS_EXIT_OK)
        vs_log_info("node stopped");
    else
        vs_log_info("node stopped with exit code %d", s->exit_code);
    sup_cleanup(s);
    return s->exit_code;
}
