# shard/vsr: the I/O-free VSR engine (DESIGN §3), its deterministic test
# harness (tests/sim) and its Check suites (tests/unit/check_vsr_*).
noinst_LIBRARIES += libvs_vsr.a
libvs_vsr_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_vsr_a_SOURCES = \
	shard/vsr/engine.c shard/vsr/engine.h shard/vsr/internal.h \
	shard/vsr/view.c shard/vsr/repair.c shard/vsr/install.c \
	shard/vsr/frame_group.c

# State transfer's I/O-free core: manifest, frames, receiver, offers.
libvs_vsr_a_SOURCES += \
	shard/vsr/xfer_manifest.c shard/vsr/xfer_manifest.h \
	shard/vsr/xfer_frames.c shard/vsr/xfer_frames.h \
	shard/vsr/xfer_fetch.c shard/vsr/xfer_fetch.h \
	shard/vsr/xfer_serve.c shard/vsr/xfer_serve.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_vsr_xfer
check_PROGRAMS += tests/unit/check_vsr_xfer
tests_unit_check_vsr_xfer_SOURCES = tests/unit/check_vsr_xfer.c
tests_unit_check_vsr_xfer_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_vsr_xfer_LDADD = libvs_vsr.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# The deterministic harness is compiled into each suite that drives it.
VSR_SIM_SOURCES = tests/sim/sim_net.c tests/sim/sim_net.h

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_vsr_engine tests/unit/check_vsr_cluster \
	tests/unit/check_vsr_view tests/unit/check_vsr_merge \
	tests/unit/check_vsr_transfer
check_PROGRAMS += tests/unit/check_vsr_engine tests/unit/check_vsr_cluster \
	tests/unit/check_vsr_view tests/unit/check_vsr_merge \
	tests/unit/check_vsr_transfer

tests_unit_check_vsr_transfer_SOURCES = tests/unit/check_vsr_transfer.c \
	$(VSR_SIM_SOURCES)
tests_unit_check_vsr_transfer_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_vsr_transfer_LDADD = libvs_vsr.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_vsr_engine_SOURCES = tests/unit/check_vsr_engine.c \
	$(VSR_SIM_SOURCES)
tests_unit_check_vsr_engine_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_vsr_engine_LDADD = libvs_vsr.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_vsr_cluster_SOURCES = tests/unit/check_vsr_cluster.c \
	$(VSR_SIM_SOURCES)
tests_unit_check_vsr_cluster_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_vsr_cluster_LDADD = libvs_vsr.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif

tests_unit_check_vsr_view_SOURCES = tests/unit/check_vsr_view.c \
	$(VSR_SIM_SOURCES)
tests_unit_check_vsr_view_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_vsr_view_LDADD = libvs_vsr.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_vsr_merge_SOURCES = tests/unit/check_vsr_merge.c
tests_unit_check_vsr_merge_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_vsr_merge_LDADD = libvs_vsr.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

# Micro-benchmark of the engine alone (not run by make check).
noinst_PROGRAMS += tests/sim/bench_vsr
tests_sim_bench_vsr_SOURCES = tests/sim/bench_vsr.c $(VSR_SIM_SOURCES)
tests_sim_bench_vsr_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_sim_bench_vsr_LDADD = libvs_vsr.a libvs_common.a $(VS_DEP_LIBS)
