/*
 * tests/fuzz/fuzz_util.c - the scratch directory, file writing, invariant
 * failure and input cursor of the fuzz targets (see fuzz_util.h).
 * Callers: the fuzz targets only (one thread).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_util.h"

static char scratch[PATH_MAX];

void
fuzz_fail(const char *msg, const char *file, int line)
{
    fprintf(stderr, "fuzz invariant: %s (%s:%d)\n", msg, file, line);
    abort();
}

static void
remove_tree(const char *dir, int keep_top)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(p, 0);
        else
            unlink(p);
    }
    closedir(d);
    if (!keep_top)
        rmdir(dir);
}

static void
scratch_remove(void)
{
    if (scratch[0] != '\0')
        remove_tree(scratch, 0);
}

const char *
fuzz_dir(void)
{
    if (scratch[0] != '\0')
        return scratch;
    /* /dev/shm keeps file-backed targets off the disk when it exists */
    const char *base = getenv("VS_FUZZ_TMPDIR");
    if (base == NULL)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(scratch, sizeof(scratch), "%s/vs-fuzz-%ld-XXXXXX", base,
             (long)getpid());
    if (mkdtemp(scratch) == NULL) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(scratch_remove);
    return scratch;
}

void
fuzz_write_file(const char *dir, const char *name, const void *buf, size_t len)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(p);
        abort();
    }
    const uint8_t *b = buf;
    while (len > 0) {
        ssize_t n = write(fd, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            perror(p);
            abort();
        }
        b += n;
        len -= (size_t)n;
    }
    close(fd);
}

void
fuzz_clear_dir(const char *dir)
{
    remove_tree(dir, 1);
}

uint8_t
fuzz_take_u8(struct fuzz_in *in)
{
    if (in->len == 0)
        return 0;
    uint8_t v = in->p[0];
    in->p++;
    in->len--;
    return v;
}

uint32_t
fuzz_take_u32(struct fuzz_in *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)fuzz_take_u8(in) << (8 * i);
    return v;
}

const uint8_t *
fuzz_take(struct fuzz_in *in, size_t n, size_t *got)
{
    if (n > in->len)
        n = in->len;
    const uint8_t *p = in->p;
    in->p += n;
    in->len -= n;
    *got = n;
    return p;
}
