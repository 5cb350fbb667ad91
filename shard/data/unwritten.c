/*
 * shard/data/unwritten.c - the never-written shape of damage left by a
 * power loss (unwritten.h).
 *
 * Invariants: reads only its arguments. Any process.
 */
#include "config.h"

#include "shard/data/unwritten.h"

int
unwritten_shape(const uint8_t *b, size_t len)
{
    if (len == 0 || b[len - 1] == 0)
        return 1;
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        run = b[i] == 0 ? run + 1 : 0;
        if (run >= UNWRITTEN_SECTOR)
            return 1;
    }
    return 0;
}

int
unwritten_zero_from(const uint8_t *b, size_t len, size_t from)
{
    for (size_t i = from; i < len; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}
