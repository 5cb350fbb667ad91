/*
 * common/clock.h - clocks for the I/O layers (never for the VSR engine or
 * apply(), which take time only from their inputs).
 * vs_realtime_us: microseconds since the Unix epoch (wall clock; steps).
 * vs_monotonic_ns: nanoseconds of CLOCK_MONOTONIC (never goes back).
 */
#ifndef VS_COMMON_CLOCK_H
#define VS_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
vs_realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline uint64_t
vs_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* VS_COMMON_CLOCK_H */
