# tests/sim: the deterministic simulator (vsr-sim): the real engine, storage
# and state machine as 1-5 replicas over a simulated network and disk.
# The engine's own harness (sim_net, bench_vsr) is listed in shard/vsr/local.mk.
VSR_WORLD_SOURCES = tests/sim/vsr_sim.c \
	tests/sim/sim_world.c tests/sim/sim_world.h \
	tests/sim/sim_node.c tests/sim/sim_node.h \
	tests/sim/sim_xfer.c tests/sim/sim_xfer.h \
	tests/sim/sim_disk.c tests/sim/sim_disk.h \
	tests/sim/sim_sio.c tests/sim/sim_sio.h \
	tests/sim/sim_parts.c tests/sim/sim_parts.h \
	tests/sim/sim_model.c tests/sim/sim_model.h \
	tests/model/meta_model.c tests/model/meta_model.h

check_PROGRAMS += tests/sim/vsr-sim
tests_sim_vsr_sim_SOURCES = $(VSR_WORLD_SOURCES)
tests_sim_vsr_sim_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_sim_vsr_sim_LDADD = libvs_server.a libvs_ipc.a libvs_meta.a \
	libvs_data.a libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

# The gate: a fixed set of swarm seeds and the named scenarios (normal
# leg); a short smoke of both in the ASan leg.
TESTS += tests/sim/check_sim.sh
# The smoke (20 seeds) is the ASan leg's share of the simulator; it is
# listed in TESTS too so automake makes its log rule (the normal leg runs
# it beside the gate: seconds).
TESTS += tests/sim/check_sim_smoke.sh
INTEG_FAST_TESTS += tests/sim/check_sim_smoke.sh
EXTRA_DIST += tests/sim/check_sim.sh tests/sim/check_sim_smoke.sh \
	tests/sim/soak

# The simulated file system with directories (sim_sio.h) on its own.
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_sim_sio
check_PROGRAMS += tests/unit/check_sim_sio
tests_unit_check_sim_sio_SOURCES = tests/unit/check_sim_sio.c \
	tests/sim/sim_sio.c tests/sim/sim_sio.h tests/unit/data_testutil.h
tests_unit_check_sim_sio_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_sim_sio_LDADD = $(DATA_LDADD) $(CHECK_LIBS)
# The simulated disk's torn-write provenance (sim_disk.h) on its own.
UNIT_TESTS += tests/unit/check_sim_disk
check_PROGRAMS += tests/unit/check_sim_disk
tests_unit_check_sim_disk_SOURCES = tests/unit/check_sim_disk.c \
	tests/sim/sim_disk.c tests/sim/sim_disk.h tests/unit/data_testutil.h
tests_unit_check_sim_disk_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_sim_disk_LDADD = $(DATA_LDADD) $(CHECK_LIBS)
endif
