/*
 * tools/bench/procstat.c - /proc sampling of a node's processes; see
 * procstat.h. Callers: vstream-bench.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/bench/procstat.h"

int
bench_proc_read(pid_t pid, uint64_t *cpu_ticks, uint64_t *hwm_kb, pid_t *ppid)
{
    char path[64], buf[4096], *p;
    FILE *f;
    size_t n;
    unsigned long long ut = 0, st = 0;
    int pp = 0;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return -errno;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: fields follow the last ')' */
    p = strrchr(buf, ')');
    if (p == NULL ||
        sscanf(p + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &pp, &ut, &st) != 3)
        return -EPROTO;
    *cpu_ticks = ut + st;
    if (ppid != NULL)
        *ppid = pp;

    *hwm_kb = 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return -errno;
    while (fgets(buf, sizeof buf, f) != NULL) {
        unsigned long long kb;
        if (sscanf(buf, "VmHWM: %llu kB", &kb) == 1) {
            *hwm_kb = kb;
            break;
        }
    }
    fclose(f);
    return 0;
}

static int
procs_has(const struct bench_procs *ps, pid_t pid)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->p[i].pid == pid)
            return 1;
    return 0;
}

int
bench_procs_sample(pid_t root, struct bench_procs *ps)
{
    DIR *d;
    struct dirent *e;
    int rc, grew;

    ps->n = 0;
    rc = bench_proc_read(root, &ps->p[0].cpu_ticks, &ps->p[0].hwm_kb, NULL);
    if (rc != 0)
        return rc == -ENOENT ? -ESRCH : rc;
    ps->p[0].pid = root;
    ps->n = 1;
    /* descendants: repeat the scan while it finds new children (the
     * process tree of a node is two levels deep; bounded by MAX) */
    for (int pass = 0; pass < 4; pass++) {
        d = opendir("/proc");
        if (d == NULL)
            return -errno;
        grew = 0;
        while ((e = readdir(d)) != NULL && ps->n < BENCH_PROC_MAX) {
            uint64_t ticks, hwm;
            pid_t pid, ppid;
            if (!isdigit((unsigned char)e->d_name[0]))
                continue;
            pid = (pid_t)strtol(e->d_name, NULL, 10);
            if (procs_has(ps, pid))
                continue;
            if (bench_proc_read(pid, &ticks, &hwm, &ppid) != 0)
                continue; /* exited meanwhile */
            if (!procs_has(ps, ppid))
                continue;
            ps->p[ps->n].pid = pid;
            ps->p[ps->n].cpu_ticks = ticks;
            ps->p[ps->n].hwm_kb = hwm;
            ps->n++;
            grew = 1;
        }
        closedir(d);
        if (!grew)
            break;
    }
    return 0;
}

double
bench_procs_cpu_delta(const struct bench_procs *before,
                      const struct bench_procs *after)
{
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t ticks = 0;
    if (hz <= 0)
        hz = 100;
    for (size_t i = 0; i < after->n; i++)
        for (size_t k = 0; k < before->n; k++)
            if (before->p[k].pid == after->p[i].pid &&
                after->p[i].cpu_ticks >= before->p[k].cpu_ticks)
                ticks += after->p[i].cpu_ticks - before->p[k].cpu_ticks;
    return (double)ticks / (double)hz;
}

uint64_t
bench_procs_hwm_kb(const struct bench_procs *ps)
{
    uint64_t kb = 0;
    for (size_t i = 0; i < ps->n; i++)
        kb += ps->p[i].hwm_kb;
    return kb;
}
