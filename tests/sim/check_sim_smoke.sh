#!/bin/sh
# tests/sim/check_sim_smoke.sh - a short simulator run for the ASan leg:
# 20 swarm seeds (with two partition groups) and the supported scenarios.
set -u
sim=./tests/sim/vsr-sim
fail=0
"$sim" --scenarios >/dev/null || fail=1
out=$("$sim" --partitions 2 --seeds 1000 20) || fail=1
printf '%s\n' "$out" | grep -v '^marks'
exit $fail
