/*
 * shard/data/pimage.c - the file-set image of a partition state transfer;
 * see pimage.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/mem.h"
#include "shard/data/pimage.h"

static int
digits(const char *s, size_t n)
{
    if (n == 0 || n > 20)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static int
has_suffix(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n > k && memcmp(s + n - k, suf, k) == 0;
}

int
pimg_name_ok(uint32_t kind, const char *name)
{
    size_t n = strnlen(name, PIMG_NAME_MAX);
    if (n == 0 || n >= PIMG_NAME_MAX)
        return 0;
    if (kind == PIMG_SEGMENTS) {
        const char *sufs[] = {".log", ".vsr", ".index"};
        for (unsigned i = 0; i < 3; i++)
            if (has_suffix(name, n, sufs[i]) && n - strlen(sufs[i]) == 20 &&
                digits(name, 20))
                return 1;
        return 0;
    }
    if (kind != PIMG_OFFSETS)
        return 0;
    if (strcmp(name, "offsets_applied") == 0 || strcmp(name, "clients") == 0)
        return 1;
    const char *c = "offsets/consumers/", *g = "offsets/groups/";
    if (strncmp(name, c, strlen(c)) == 0)
        return digits(name + strlen(c), n - strlen(c));
    if (strncmp(name, g, strlen(g)) == 0) {
        const char *s = name + strlen(g);
        const char *dot = memchr(s, '.', n - strlen(g));
        return dot != NULL && digits(s, (size_t)(dot - s)) &&
               digits(dot + 1, n - strlen(g) - (size_t)(dot - s) - 1);
    }
    return 0;
}

int
pimg_header(struct vs_wbuf *w, uint32_t kind, const uint64_t meta[3],
            const struct pimg_file *files, uint32_t n)
{
    if ((kind != PIMG_SEGMENTS && kind != PIMG_OFFSETS) ||
        (n == 0 && kind == PIMG_SEGMENTS) || n > PIMG_FILES_MAX)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (!pimg_name_ok(kind, files[i].name))
            return -EINVAL;
    vs_wr_bytes(w, PIMG_MAGIC, 4);
    vs_wr_u32(w, PIMG_VERSION);
    vs_wr_u32(w, kind);
    vs_wr_u32(w, n);
    for (unsigned i = 0; i < 3; i++)
        vs_wr_u64(w, meta[i]);
    for (uint32_t i = 0; i < n; i++) {
        size_t k = strlen(files[i].name);
        vs_wr_u16(w, (uint16_t)k);
        vs_wr_bytes(w, files[i].name, k);
        vs_wr_u64(w, files[i].len);
    }
    return 0;
}

static int
refuse(struct pimg *m, char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "partition image refused: %s", why);
    pimg_free(m);
    return -EBADMSG;
}

static int
name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int
pimg_decode(const uint8_t *p, uint64_t len, uint32_t kind, struct pimg *m,
            char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    if (len < PIMG_FIXED)
        return refuse(m, err, errlen, "shorter than its header");
    if (memcmp(p, PIMG_MAGIC, 4) != 0)
        return refuse(m, err, errlen, "bad magic");
    if (vs_load_u32(p + 4) != PIMG_VERSION)
        return refuse(m, err, errlen, "unknown version");
    if (vs_load_u32(p + 8) != kind)
        return refuse(m, err, errlen, "another kind of image");
    uint32_t n = vs_load_u32(p + 12);
    if (n > PIMG_FILES_MAX || (n == 0 && kind == PIMG_SEGMENTS))
        return refuse(m, err, errlen, "file count out of range");
    m->kind = kind;
    m->count = n;
    for (unsigned i = 0; i < 3; i++)
        m->meta[i] = vs_load_u64(p + 16 + 8 * i);
    m->files = vs_xcalloc(n ? n : 1, sizeof(*m->files));
    uint64_t at = PIMG_FIXED;
    for (uint32_t i = 0; i < n; i++) {
        if (len - at < 2)
            return refuse(m, err, errlen, "entries cut short");
        uint16_t k = (uint16_t)(p[at] | (uint16_t)p[at + 1] << 8);
        if (k == 0 || k >= PIMG_NAME_MAX || len - at - 2 < (uint64_t)k + 8)
            return refuse(m, err, errlen, "entry name length out of range");
        memcpy(m->files[i].name, p + at + 2, k);
        m->files[i].name[k] = '\0';
        if (strlen(m->files[i].name) != k ||
            !pimg_name_ok(kind, m->files[i].name))
            return refuse(m, err, errlen, "a file name outside the image's");
        m->files[i].len = vs_load_u64(p + at + 2 + k);
        at += 2u + k + 8u;
    }
    m->header_len = at;
    for (uint32_t i = 0; i < n; i++) {
        if (m->files[i].len > len - at)
            return refuse(m, err, errlen, "a file runs past the image");
        m->files[i].off = at;
        at += m->files[i].len;
    }
    if (at != len)
        return refuse(m, err, errlen, "trailing bytes after the files");
    const char **names = vs_xcalloc(n ? n : 1, sizeof(*names));
    unsigned logs = 0, vsrs = 0;
    for (uint32_t i = 0; i < n; i++) {
        names[i] = m->files[i].name;
        size_t k = strlen(names[i]);
        logs += has_suffix(names[i], k, ".log");
        vsrs += has_suffix(names[i], k, ".vsr");
    }
    qsort(names, n, sizeof(*names), name_cmp);
    int dup = 0;
    for (uint32_t i = 1; i < n; i++)
        dup |= strcmp(names[i - 1], names[i]) == 0;
    free(names);
    if (dup)
        return refuse(m, err, errlen, "a file named twice");
    if (kind == PIMG_SEGMENTS && (logs == 0 || vsrs == 0))
        return refuse(m, err, errlen, "no segment log or no journal records");
    return 0;
}

void
pimg_free(struct pimg *m)
{
    free(m->files);
    m->files = NULL;
    m->count = 0;
}
