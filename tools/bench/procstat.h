/*
 * tools/bench/procstat.h - CPU time and peak RSS of a node's processes,
 * read from /proc (Linux).
 *
 * Role: vstream-bench samples the supervisor and every descendant (the
 * shards) before and after its timed phase; the CPU difference divided
 * by the payload moved gives server CPU seconds per GB. Peak RSS is the
 * sum of the processes' VmHWM (lifetime peaks; pages of the shared
 * metadata segment count once per process that touched them, so the sum
 * is an upper bound).
 * Invariants: a process that exits between two samples is dropped from
 * both (its CPU is not counted); at most BENCH_PROC_MAX processes.
 * Callers: vstream-bench (any thread; no shared state).
 */
#ifndef VS_TOOLS_BENCH_PROCSTAT_H
#define VS_TOOLS_BENCH_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_PROC_MAX 128u

struct bench_proc {
    pid_t pid;
    uint64_t cpu_ticks; /* utime + stime, clock ticks */
    uint64_t hwm_kb;    /* VmHWM */
};

struct bench_procs {
    struct bench_proc p[BENCH_PROC_MAX];
    size_t n;
};

/* Fills ps with `root` and all its descendants and samples each. 0,
 * -ESRCH when root does not exist, -errno on a /proc error. */
int bench_procs_sample(pid_t root, struct bench_procs *ps);
/* CPU seconds used between two samples by the processes present in
 * both, and the sum of VmHWM (KiB) of `after`. */
double bench_procs_cpu_delta(const struct bench_procs *before,
                             const struct bench_procs *after);
uint64_t bench_procs_hwm_kb(const struct bench_procs *ps);

/* One process: utime+stime from /proc/PID/stat and VmHWM from
 * /proc/PID/status, and its parent pid. 0 or -errno. */
int bench_proc_read(pid_t pid, uint64_t *cpu_ticks, uint64_t *hwm_kb,
                    pid_t *ppid);

#endif /* VS_TOOLS_BENCH_PROCSTAT_H */
