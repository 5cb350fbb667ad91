/*
 * tests/fuzz/fuzz_util.h - helpers shared by the libFuzzer targets.
 *
 * Role: a per-process scratch directory on tmpfs-like storage (created on
 * first use, removed at exit) for targets whose decoder reads files, a way
 * to write one input there as a named file, and fuzz_check(), the
 * invariant check that aborts (a crash libFuzzer records) with a message.
 * Invariants: every file a target writes lives under fuzz_dir(); a target
 * empties what it wrote before it returns, so runs never see each other's
 * files. Callers: the fuzz targets only (one thread).
 */
#ifndef VS_TESTS_FUZZ_UTIL_H
#define VS_TESTS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Aborts with "fuzz invariant: MSG (file:line)" when cond is false. */
#define fuzz_check(cond, msg)                                                  \
    do {                                                                       \
        if (!(cond))                                                           \
            fuzz_fail(msg, __FILE__, __LINE__);                                \
    } while (0)

__attribute__((noreturn)) void fuzz_fail(const char *msg, const char *file,
                                         int line);

/* The scratch directory of this process (created once, removed with its
 * contents at exit). Aborts if it cannot be created. */
const char *fuzz_dir(void);
/* Writes len bytes as DIR/NAME (replacing it); aborts on an I/O error. */
void fuzz_write_file(const char *dir, const char *name, const void *buf,
                     size_t len);
/* Removes every file (and empty subdirectory, recursively) under dir,
 * keeping dir itself. */
void fuzz_clear_dir(const char *dir);

/* Little-endian cursor over the fuzz input: takes return 0 past the end. */
struct fuzz_in {
    const uint8_t *p;
    size_t len;
};
uint8_t fuzz_take_u8(struct fuzz_in *in);
uint32_t fuzz_take_u32(struct fuzz_in *in);
/* Borrows up to n bytes (fewer at the end); *got is how many. */
const uint8_t *fuzz_take(struct fuzz_in *in, size_t n, size_t *got);

#endif /* VS_TESTS_FUZZ_UTIL_H */
