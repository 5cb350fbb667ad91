/*
 * tests/bench/bench_pollsend.c - what a poll reply costs the sender and
 * the receiver of a loopback TCP connection, per MiB, for the two ways a
 * server can send verified segment bytes:
 *   copy      pread of 1 MiB into a buffer, one XXH3 pass over it (the
 *             verification), write() of the buffer (the server today);
 *   zerocopy  one XXH3 pass over a read-only mapping of the file (which
 *             stays mapped), then sendfile() of the same range (what a
 *             mmap + verify + sendfile reply would cost at best: no
 *             per-poll mmap, no page faults after the first pass);
 *   mapwrite  one XXH3 pass over the standing mapping, then write() from
 *             the mapping (no pread copy, and the receiver still reads
 *             the linear socket buffers a write() fills);
 *   mapfresh  as mapwrite but the MiB mapped for the reply and unmapped
 *             after it (its pages faulted in by the XXH3 pass: what a
 *             consumer reading each range once pays).
 * A receiver thread recv()s every byte into a 1 MiB buffer, as the
 * client library does. CPU is each thread's own (RUSAGE_THREAD), so the
 * figures hold on a machine shared with other work; the sum is what the
 * two cores of a loopback benchmark pay for each MiB.
 * Usage: bench_pollsend FILE [MiB, default 256] [rounds, default 3];
 * FILE is read, never written (fill it first, e.g. from /dev/urandom, so
 * it is in the page cache). Not run by make check; the numbers are
 * reported, never asserted.
 */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checksum.h"

#define MIB (1u << 20)

struct rx {
    int fd;
    size_t total;
    double cpu_s;
    int rc;
};

static double
thread_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *
rx_main(void *arg)
{
    struct rx *r = arg;
    uint8_t *b = malloc(MIB);
    size_t got = 0;
    double c0 = thread_cpu_s();
    r->rc = b == NULL;
    while (b != NULL && got < r->total) {
        ssize_t n = recv(r->fd, b, MIB, 0);
        if (n <= 0) {
            r->rc = 1;
            break;
        }
        got += (size_t)n;
    }
    r->cpu_s = thread_cpu_s() - c0;
    free(b);
    return NULL;
}

static int
write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int
sendfile_all(int sock, int fd, off_t off, size_t len)
{
    while (len > 0) {
        ssize_t n = sendfile(sock, fd, &off, len);
        if (n <= 0)
            return -1;
        len -= (size_t)n;
    }
    return 0;
}

/* A connected loopback pair: *tx and *rx. 0 or -1. */
static int
pair(int *tx, int *rx)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t l = sizeof a;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(ls, 1) != 0 || getsockname(ls, (struct sockaddr *)&a, &l) != 0)
        goto fail;
    *tx = socket(AF_INET, SOCK_STREAM, 0);
    if (*tx < 0 || connect(*tx, (struct sockaddr *)&a, sizeof a) != 0)
        goto fail;
    *rx = accept(ls, NULL, NULL);
    close(ls);
    return *rx < 0 ? -1 : 0;
fail:
    if (ls >= 0)
        close(ls);
    return -1;
}

enum mode { M_COPY, M_ZEROCOPY, M_MAPWRITE, M_MAPFRESH, M_COUNT };
static const char *const mode_names[M_COUNT] = {"copy", "zerocopy", "mapwrite",
                                                "mapfresh"};

/* One reply of a MiB at off in mode m. 0 or -1. */
static int
reply(int tx, int fd, const uint8_t *map, uint8_t *buf, off_t off, enum mode m,
      uint64_t *sink)
{
    const uint8_t *p;
    int rc;
    switch (m) {
    case M_ZEROCOPY:
        *sink += vs_xxh3_64(map + off, MIB);
        return sendfile_all(tx, fd, off, MIB);
    case M_MAPWRITE:
        *sink += vs_xxh3_64(map + off, MIB);
        return write_all(tx, map + off, MIB);
    case M_MAPFRESH:
        p = mmap(NULL, MIB, PROT_READ, MAP_SHARED, fd, off);
        if (p == MAP_FAILED)
            return -1;
        *sink += vs_xxh3_64(p, MIB);
        rc = write_all(tx, p, MIB);
        munmap((void *)p, MIB);
        return rc;
    default:
        if (pread(fd, buf, MIB, off) != (ssize_t)MIB)
            return -1;
        *sink += vs_xxh3_64(buf, MIB);
        return write_all(tx, buf, MIB);
    }
}

/* One run of `mib` MiB in mode m: prints the sender's and the
 * receiver's CPU microseconds per MiB. 0 or -1. */
static int
run(int fd, const uint8_t *map, size_t mib, enum mode m, uint64_t *sink)
{
    int tx = -1, rxfd = -1, rc = -1;
    uint8_t *buf = malloc(MIB);
    struct rx r = {0};
    pthread_t t;
    if (buf == NULL || pair(&tx, &rxfd) != 0)
        goto out;
    r.fd = rxfd;
    r.total = mib * MIB;
    if (pthread_create(&t, NULL, rx_main, &r) != 0)
        goto out;
    double c0 = thread_cpu_s();
    for (size_t i = 0; i < mib; i++)
        if (reply(tx, fd, map, buf, (off_t)(i * MIB), m, sink) != 0)
            break;
    double tx_s = thread_cpu_s() - c0;
    shutdown(tx, SHUT_WR);
    pthread_join(t, NULL);
    if (r.rc == 0) {
        printf("%-9s sender %6.1f us/MiB  receiver %6.1f us/MiB  sum %6.1f "
               "us/MiB\n",
               mode_names[m], tx_s / (double)mib * 1e6,
               r.cpu_s / (double)mib * 1e6,
               (tx_s + r.cpu_s) / (double)mib * 1e6);
        rc = 0;
    }
out:
    if (tx >= 0)
        close(tx);
    if (rxfd >= 0)
        close(rxfd);
    free(buf);
    return rc;
}

int
main(int argc, char **argv)
{
    struct stat st;
    uint64_t sink = 0;
    size_t mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 256;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (argc < 2) {
        fprintf(stderr, "usage: bench_pollsend FILE [MiB] [rounds]\n");
        return 1;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || mib == 0 ||
        (uint64_t)st.st_size < (uint64_t)mib * MIB) {
        fprintf(stderr, "bench_pollsend: %s: needs at least %zu MiB\n", argv[1],
                mib);
        return 1;
    }
    uint8_t *map = mmap(NULL, mib * MIB, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return 1;
    for (size_t i = 0; i < mib * MIB; i += 4096) /* fault it in once */
        sink += map[i];
    for (int k = 0; k < rounds; k++)
        for (int m = 0; m < M_COUNT; m++)
            if (run(fd, map, mib, (enum mode)m, &sink) != 0)
                return 2;
    munmap(map, mib * MIB);
    close(fd);
    return sink == 42 ? 3 : 0; /* keeps the hashes */
}
