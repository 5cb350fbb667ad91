#!/bin/sh
# tests/sim/check_sim.sh - the simulator gate of make check: 1000 fixed swarm
# seeds (replicas drawn 1-5, weighted to 3), the named scenarios that the
# engine supports today, and the beyond-model suite. Fails on any failure;
# each failure prints the command that replays it.
set -u
sim=./tests/sim/vsr-sim
fail=0
start=$(date +%s)
"$sim" --scenarios | grep -v '^marks' || true
"$sim" --scenarios >/dev/null || fail=1
out=$("$sim" --seeds 1 1000) || fail=1
printf '%s\n' "$out" | grep -v '^marks'
"$sim" --beyond-model 1 50 || fail=1
echo "check_sim: $(( $(date +%s) - start )) s"
exit $fail
