/*
 * common/readyfile.c - see readyfile.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/readyfile.h"

int
vs_ready_file_write(const char *path, const struct vs_ready_info *info)
{
    char tmp[4096];
    char buf[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    int n = snprintf(buf, sizeof(buf), "{\"client\":\"%s\"", info->client);
    if (info->replica[0] != '\0')
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, ",\"replica\":\"%s\"",
                      info->replica);
    if (info->tls[0] != '\0')
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, ",\"tls\":\"%s\"",
                      info->tls);
    if (info->http[0] != '\0')
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, ",\"http\":\"%s\"",
                      info->http);
    n += snprintf(buf + n, sizeof(buf) - (size_t)n, ",\"pid\":%d",
                  (int)info->pid);
    if (info->n_shard_pids > 0) {
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, ",\"shards\":[");
        for (size_t i = 0; i < info->n_shard_pids; i++)
            n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%d",
                          i ? "," : "", (int)info->shard_pids[i]);
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "]");
    }
    n += snprintf(buf + n, sizeof(buf) - (size_t)n, "}\n");
    if (n >= (int)sizeof(buf))
        return -EOVERFLOW;

    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd == -1)
        return -errno;
    int rc = 0;
    if (write(fd, buf, (size_t)n) != n)
        rc = errno ? -errno : -EIO;
    if (rc == 0 && fsync(fd) == -1)
        rc = -errno;
    close(fd);
    if (rc == 0 && rename(tmp, path) == -1)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/* Copies the string value of "key" into out. 0 or -EPROTO. */
static int
json_string(const char *s, const char *key, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\":\"", key);
    const char *p = strstr(s, pat);
    if (p == NULL)
        return -EPROTO;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (e == NULL || (size_t)(e - p) >= len)
        return -EPROTO;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
    return 0;
}

int
vs_ready_file_read(const char *path, struct vs_ready_info *info)
{
    memset(info, 0, sizeof(*info));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd == -1)
        return -errno;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -EPROTO;
    buf[n] = '\0';
    if (json_string(buf, "client", info->client, sizeof(info->client)) != 0)
        return -EPROTO;
    (void)json_string(buf, "replica", info->replica, sizeof(info->replica));
    (void)json_string(buf, "tls", info->tls, sizeof(info->tls));
    (void)json_string(buf, "http", info->http, sizeof(info->http));
    const char *p = strstr(buf, "\"pid\":");
    if (p == NULL)
        return -EPROTO;
    info->pid = (pid_t)strtol(p + 6, NULL, 10);
    p = strstr(buf, "\"shards\":[");
    if (p != NULL) {
        p += 10;
        while (*p && *p != ']' &&
               info->n_shard_pids <
                   sizeof(info->shard_pids) / sizeof(info->shard_pids[0])) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p)
                return -EPROTO;
            info->shard_pids[info->n_shard_pids++] = (pid_t)v;
            p = end;
            if (*p == ',')
                p++;
        }
    }
    return info->pid > 0 ? 0 : -EPROTO;
}
