/*
 * common/secret.c - see secret.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secret.h"

static int
hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
vs_secret_load(const char *path, uint8_t key[VS_SECRET_BYTES], char *err,
               size_t errlen)
{
    uint8_t buf[2 * VS_SECRET_BYTES + 2];
    struct stat st;
    ssize_t n;
    int rc, fd = -1;

    if (path == NULL || path[0] == '\0') {
        snprintf(err, errlen, "cluster secret: no cluster_secret_file set");
        return -EINVAL;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "cluster secret %s: %s", path, strerror(errno));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        snprintf(err, errlen, "cluster secret %s: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        snprintf(err, errlen, "cluster secret %s: not a regular file", path);
        goto fail;
    }
    if ((st.st_mode & 077) != 0) {
        rc = -EPERM;
        snprintf(
            err, errlen,
            "cluster secret %s: mode %04o lets others read it (chmod 0600)",
            path, (unsigned)(st.st_mode & 07777));
        goto fail;
    }
    if (st.st_size > (off_t)sizeof(buf)) {
        rc = -EINVAL;
        snprintf(err, errlen,
                 "cluster secret %s: %lld bytes; want 32 raw bytes or 64 hex "
                 "digits",
                 path, (long long)st.st_size);
        goto fail;
    }
    n = read(fd, buf, sizeof(buf));
    if (n < 0) {
        rc = -errno;
        snprintf(err, errlen, "cluster secret %s: %s", path, strerror(errno));
        goto fail;
    }
    if (n == (ssize_t)VS_SECRET_BYTES) {
        memcpy(key, buf, VS_SECRET_BYTES);
    } else if (n == (ssize_t)(2 * VS_SECRET_BYTES) ||
               (n == (ssize_t)(2 * VS_SECRET_BYTES + 1) &&
                buf[2 * VS_SECRET_BYTES] == '\n')) {
        for (size_t i = 0; i < VS_SECRET_BYTES; i++) {
            int hi = hex_value(buf[2 * i]), lo = hex_value(buf[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                rc = -EINVAL;
                snprintf(err, errlen,
                         "cluster secret %s: 64 characters but not hex", path);
                goto fail;
            }
            key[i] = (uint8_t)(hi << 4 | lo);
        }
    } else {
        rc = -EINVAL;
        snprintf(err, errlen,
                 "cluster secret %s: %zd bytes; want 32 raw bytes or 64 hex "
                 "digits",
                 path, n);
        goto fail;
    }
    close(fd);
    return 0;
fail:
    close(fd);
    return rc;
}
