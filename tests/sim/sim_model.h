/*
 * tests/sim/sim_model.h - the simulator's independent check of committed
 * metadata operations: every op of the committed history, in op order,
 * is applied to the reference model (tests/model/meta_model.h, which
 * shares no code with shard/meta/) and the model's result code is held
 * against the one the state machine produced. Only the operations the
 * simulated clients send are modelled; anything else (genesis, register,
 * logout, an op whose session ended before it committed) leaves the model
 * untouched, as it leaves the state machine's tables untouched.
 * Callers: tests/sim/sim_world.c (one thread).
 */
#ifndef VS_TESTS_SIM_SIM_MODEL_H
#define VS_TESTS_SIM_SIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "shard/meta/state.h"

struct sim_model;

struct sim_model *sim_model_create(const struct meta_caps *caps);
void sim_model_destroy(struct sim_model *m);

/* The committed op `operation` of root with request body `body` got result
 * code `got` from the state machine. Returns 0 when the model agrees (or
 * does not model the op), else -1 with the model's code in *want and a
 * description of the op in why. */
int sim_model_check(struct sim_model *m, uint32_t operation,
                    const uint8_t *body, size_t len, uint32_t got,
                    uint32_t *want, char *why, size_t whylen);

/* Ops the model judged (0 when nothing was modelled: a test can fail a
 * run that never exercised it). */
uint64_t sim_model_checked(const struct sim_model *m);

#endif /* VS_TESTS_SIM_SIM_MODEL_H */
