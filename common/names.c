/*
 * common/names.c - node names of a cluster; see names.h. Any process.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/checksum.h"
#include "common/config.h"
#include "common/names.h"

static void names_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
names_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int
name_char(char ch, int first)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
        (ch >= '0' && ch <= '9'))
        return 1;
    return !first && (ch == '.' || ch == '_' || ch == '-');
}

int
vs_name_check(const char *s, char *err, size_t errlen)
{
    size_t n = strlen(s);
    if (n == 0) {
        names_err(err, errlen, "a node name may not be empty");
        return -EINVAL;
    }
    if (n > VS_NAME_MAX) {
        names_err(err, errlen, "node name '%.*s...' is %zu bytes (at most %u)",
                  16, s, n, VS_NAME_MAX);
        return -EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!name_char(s[i], i == 0)) {
            names_err(err, errlen,
                      "node name '%s': byte %zu is not allowed (letters, "
                      "digits, '.', '_' and '-', starting with a letter or "
                      "digit)",
                      s, i);
            return -EINVAL;
        }
    }
    return 0;
}

/* Copies a name that passed vs_name_check (at most VS_NAME_MAX bytes). */
static void
copy_name(char dst[VS_NAME_MAX + 1], const char *src)
{
    size_t n = strnlen(src, VS_NAME_MAX);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Replicas listed in replica_addrs (0 when empty). */
static uint32_t
replica_count(const char *addrs)
{
    if (addrs[0] == '\0')
        return 0;
    uint32_t n = 1;
    for (const char *p = addrs; *p; p++)
        n += *p == ',';
    return n;
}

int
vs_names_resolve(const struct vs_config *c, struct vs_names *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof(*out));
    uint32_t n = replica_count(c->replica_addrs);
    int explicit_name = vs_config_is_explicit(c, "node_name");
    if (n <= 1) {
        out->count = 1;
        if (vs_name_check(c->node_name, err, errlen) != 0)
            return -EINVAL;
        copy_name(out->name[0], c->node_name);
        if (c->replica_names[0] != '\0' &&
            strcmp(c->replica_names, c->node_name) != 0 && explicit_name) {
            names_err(err, errlen,
                      "node_name '%s' differs from replica_names '%s'",
                      c->node_name, c->replica_names);
            return -EINVAL;
        }
        if (c->replica_names[0] != '\0') {
            if (vs_name_check(c->replica_names, err, errlen) != 0)
                return -EINVAL;
            copy_name(out->name[0], c->replica_names);
        }
        return 0;
    }
    if (n > VS_REPLICAS_MAX) {
        names_err(err, errlen, "replica_addrs lists %u replicas (at most %u)",
                  n, VS_REPLICAS_MAX);
        return -EINVAL;
    }
    out->count = n;
    if (c->replica_names[0] != '\0') {
        const char *p = c->replica_names;
        uint32_t i = 0;
        for (;;) {
            const char *end = strchr(p, ',');
            size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
            if (i >= n) {
                names_err(err, errlen,
                          "replica_names lists more names than the %u "
                          "replicas of replica_addrs",
                          n);
                return -EINVAL;
            }
            if (len > VS_NAME_MAX) {
                names_err(err, errlen,
                          "replica_names: entry %u is %zu bytes (at most %u)",
                          i, len, VS_NAME_MAX);
                return -EINVAL;
            }
            memcpy(out->name[i], p, len);
            out->name[i][len] = '\0';
            i++;
            if (end == NULL)
                break;
            p = end + 1;
        }
        if (i != n) {
            names_err(err, errlen,
                      "replica_names lists %u names for the %u replicas of "
                      "replica_addrs",
                      i, n);
            return -EINVAL;
        }
    } else {
        for (uint32_t i = 0; i < n; i++)
            snprintf(out->name[i], sizeof(out->name[i]), "replica-%u", i);
        if (explicit_name && c->replica_id < n) {
            char why[256];
            if (vs_name_check(c->node_name, why, sizeof(why)) != 0) {
                names_err(err, errlen, "node_name: %s", why);
                return -EINVAL;
            }
            copy_name(out->name[c->replica_id], c->node_name);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        char why[256];
        if (vs_name_check(out->name[i], why, sizeof(why)) != 0) {
            names_err(err, errlen, "name of replica %u: %s", i, why);
            return -EINVAL;
        }
        for (uint32_t j = 0; j < i; j++) {
            if (strcmp(out->name[i], out->name[j]) == 0) {
                names_err(err, errlen,
                          "replicas %u and %u are both named '%s': node "
                          "names must be unique in a cluster",
                          j, i, out->name[i]);
                return -EINVAL;
            }
        }
    }
    if (explicit_name && c->replica_names[0] != '\0' && c->replica_id < n &&
        strcmp(c->node_name, out->name[c->replica_id]) != 0) {
        names_err(err, errlen,
                  "node_name '%s' differs from this replica's entry '%s' in "
                  "replica_names",
                  c->node_name, out->name[c->replica_id]);
        return -EINVAL;
    }
    return 0;
}

const char *
vs_names_self(const struct vs_config *c, const struct vs_names *names)
{
    uint32_t i = names->count > 1 ? c->replica_id : 0;
    return i < names->count ? names->name[i] : c->node_name;
}

uint64_t
vs_names_digest(const struct vs_names *names)
{
    uint8_t buf[4 + VS_REPLICAS_MAX * (1 + VS_NAME_MAX)];
    size_t k = 0;
    memcpy(buf, &names->count, 4);
    k = 4;
    for (uint32_t i = 0; i < names->count && i < VS_REPLICAS_MAX; i++) {
        size_t n = strlen(names->name[i]);
        buf[k++] = (uint8_t)n;
        memcpy(buf + k, names->name[i], n);
        k += n;
    }
    return vs_xxh3_64(buf, k);
}
