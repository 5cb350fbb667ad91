/*
 * tests/fuzz/fuzz_config.c - libFuzzer target: the configuration file
 * parser (common/config.c over libinih).
 *
 * Input: the bytes of a config file. Invariants checked:
 *  - a refusal is -errno with a non-empty one-line message;
 *  - an accepted file (load + finalize) dumps (vs_config_dump) to text
 *    that loads and finalizes again and dumps to the same bytes: the
 *    dump is the canonical form of a configuration (the password is
 *    dumped as "(set)", so only its presence round-trips); a dump with
 *    a line longer than a file line may be (199 bytes) is refused as
 *    too long, never misread; a dumped value holding ';' after a blank
 *    (read as an inline comment) is not reloaded.
 * Callers: libFuzzer (tools/fuzz).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/config.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The longest config file line (without its newline) the parser reads. */
#define FILE_LINE_MAX 199

/* 1 if some dumped value cannot be read back as written: libinih takes
 * ';' after whitespace for an inline comment, and the dump writes a space
 * after '=' (a file may hold "key =;value", its dump "key = ;value"). */
static int
has_comment_like_value(const char *text)
{
    for (const char *p = text; (p = strstr(p, " = ")) != NULL; p += 3) {
        const char *v = p + 3;
        const char *nl = strchr(v, '\n');
        size_t n = nl ? (size_t)(nl - v) : strlen(v);
        for (size_t i = 0; i < n; i++)
            if (v[i] == ';' && (i == 0 || v[i - 1] == ' ' || v[i - 1] == '\t'))
                return 1;
    }
    return 0;
}

static size_t
longest_line(const char *text)
{
    size_t best = 0;
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        if (n > best)
            best = n;
        text += n + (nl != NULL);
    }
    return best;
}

static int
load(const char *path, struct vs_config *c, char *err, size_t errlen)
{
    vs_config_init(c);
    err[0] = '\0';
    int rc = vs_config_load_file(c, path, err, errlen);
    if (rc == 0)
        rc = vs_config_finalize(c, err, errlen);
    return rc;
}

/* The canonical text of a configuration (malloc'd, NUL-terminated). */
static char *
dump_text(const struct vs_config *c, size_t *len)
{
    int fd = memfd_create("dump", MFD_CLOEXEC);
    fuzz_check(fd >= 0, "memfd_create");
    vs_config_dump(c, fd);
    off_t n = lseek(fd, 0, SEEK_END);
    fuzz_check(n > 0, "the dump is not empty");
    char *text = malloc((size_t)n + 1);
    fuzz_check(text != NULL, "malloc");
    fuzz_check(pread(fd, text, (size_t)n, 0) == n, "read the dump");
    close(fd);
    text[n] = '\0';
    *len = (size_t)n;
    return text;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vs_config a, b;
    char err[1024];
    const char *dir = fuzz_dir();
    char path[4096], path2[4096];
    snprintf(path, sizeof(path), "%s/in.conf", dir);
    snprintf(path2, sizeof(path2), "%s/dump.conf", dir);
    fuzz_write_file(dir, "in.conf", data, size);

    int rc = load(path, &a, err, sizeof(err));
    if (rc != 0) {
        fuzz_check(rc < 0, "a refusal is -errno");
        fuzz_check(err[0] != '\0', "a refusal names its reason");
        fuzz_check(strchr(err, '\n') == NULL, "the reason is one line");
        fuzz_clear_dir(dir);
        return 0;
    }

    size_t alen, blen;
    char *atext = dump_text(&a, &alen);
    fuzz_write_file(dir, "dump.conf", atext, alen);
    if (longest_line(atext) > FILE_LINE_MAX) {
        /* a value near the line limit in the input ("key=value") can
         * dump longer ("key = value") than a file line may be: the
         * reload must refuse it by name, never misread it */
        rc = load(path2, &b, err, sizeof(err));
        fuzz_check(rc == -EINVAL && strstr(err, "line too long") != NULL,
                   "a dump line over the limit is refused as too long");
        free(atext);
        fuzz_clear_dir(dir);
        return 0;
    }
    if (has_comment_like_value(atext)) {
        free(atext);
        fuzz_clear_dir(dir);
        return 0;
    }
    rc = load(path2, &b, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "reload of the dump refused: %s\n", err);
    fuzz_check(rc == 0, "the dump of an accepted config loads again");
    char *btext = dump_text(&b, &blen);
    if (alen != blen || memcmp(atext, btext, alen) != 0)
        fprintf(stderr, "---- dump:\n%s---- dump reloaded:\n%s", atext, btext);
    fuzz_check(alen == blen && memcmp(atext, btext, alen) == 0,
               "the dump reloads into the same settings");
    free(atext);
    free(btext);
    fuzz_clear_dir(dir);
    return 0;
}
