#!/bin/sh
# tests/sim/check_sim.sh - the simulator gate of make check: 500 fixed swarm
# seeds of the `gate` fault profile (every fault of the model but disk
# wipe: loss, duplication, delay, partitions, crashes of primary and
# backups with torn writes, restarts, whole-cluster restarts, WAL bit rot,
# superblock slot rot; replicas drawn 1-5, weighted to 3; two
# halves in parallel, one per core: seeds 1-250 with every metadata
# journal append fsynced, seeds 251-500 with shard 0's group commit
# (--group-commit: appends left unsynced, torn or lost whole by a crash,
# judged by the journal's durable mark) with two replicated partition groups
# beside the metadata group in every seed (--partitions 2, bound through
# the production binding shard/serve/pgroup.c; their own random stream,
# so the metadata group's runs are those without them), the named
# scenarios the product supports today (part-* among them), and the
# beyond-model suite. Fails on any failure; each failure prints the
# command that replays it.
set -u
sim=./tests/sim/vsr-sim
fail=0
start=$(date +%s)
out=$(mktemp) || exit 1
"$sim" --partitions 2 --seeds 1 250 >"$out.a" 2>&1 &
a=$!
"$sim" --partitions 2 --group-commit --seeds 251 250 >"$out.b" 2>&1 &
b=$!
sc=$("$sim" --scenarios) || fail=1
printf '%s\n' "$sc" | grep -v '^marks'
"$sim" --beyond-model 1 50 || fail=1
wait $a || fail=1
wait $b || fail=1
grep -hv '^marks' "$out.a" "$out.b"
rm -f "$out" "$out.a" "$out.b"
echo "check_sim: $(( $(date +%s) - start )) s"
exit $fail
