# ipc/: shared-memory segment, left-right buffer, rings and doorbells, the
# per-process port on libevent, and the partition -> shard map.
noinst_LIBRARIES += libvs_ipc.a
libvs_ipc_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_ipc_a_SOURCES = \
	ipc/lr.c ipc/lr.h \
	ipc/metrics.c ipc/metrics.h \
	ipc/port.c ipc/port.h \
	ipc/ring.c ipc/ring.h \
	ipc/segment.c ipc/segment.h \
	ipc/shardmap.c ipc/shardmap.h \
	ipc/stats.c ipc/stats.h \
	ipc/throttle.c ipc/throttle.h \
	ipc/conntab.c ipc/conntab.h \
	ipc/handoff.c ipc/handoff.h

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_ipc_lr tests/unit/check_ipc_ring \
	tests/unit/check_ipc_segment tests/unit/check_ipc_lr_threads \
	tests/unit/check_ipc_stats tests/unit/check_ipc_metrics
check_PROGRAMS += tests/unit/check_ipc_lr tests/unit/check_ipc_ring \
	tests/unit/check_ipc_segment tests/unit/check_ipc_lr_threads \
	tests/unit/check_ipc_stats tests/unit/check_ipc_metrics

tests_unit_check_ipc_metrics_SOURCES = tests/unit/check_ipc_metrics.c
tests_unit_check_ipc_metrics_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_metrics_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_ipc_lr_SOURCES = tests/unit/check_ipc_lr.c
tests_unit_check_ipc_lr_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_lr_LDADD = libvs_server.a libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_ipc_lr_threads_SOURCES = tests/unit/check_ipc_lr_threads.c
tests_unit_check_ipc_lr_threads_CFLAGS = $(TEST_CFLAGS) -pthread
tests_unit_check_ipc_lr_threads_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS) -lpthread

tests_unit_check_ipc_ring_SOURCES = tests/unit/check_ipc_ring.c
tests_unit_check_ipc_ring_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_ring_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_ipc_segment_SOURCES = tests/unit/check_ipc_segment.c
tests_unit_check_ipc_segment_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_segment_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

UNIT_TESTS += tests/unit/check_ipc_throttle tests/unit/check_ipc_conntab \
	tests/unit/check_ipc_handoff
check_PROGRAMS += tests/unit/check_ipc_throttle tests/unit/check_ipc_conntab \
	tests/unit/check_ipc_handoff
tests_unit_check_ipc_handoff_SOURCES = tests/unit/check_ipc_handoff.c
tests_unit_check_ipc_handoff_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_handoff_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
tests_unit_check_ipc_conntab_SOURCES = tests/unit/check_ipc_conntab.c
tests_unit_check_ipc_conntab_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_conntab_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
tests_unit_check_ipc_throttle_SOURCES = tests/unit/check_ipc_throttle.c
tests_unit_check_ipc_throttle_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_throttle_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_ipc_stats_SOURCES = tests/unit/check_ipc_stats.c
tests_unit_check_ipc_stats_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_ipc_stats_LDADD = libvs_ipc.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif

noinst_PROGRAMS += tests/bench/bench_ipc
tests_bench_bench_ipc_SOURCES = tests/bench/bench_ipc.c
tests_bench_bench_ipc_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_ipc_LDADD = libvs_ipc.a libvs_common.a $(VS_DEP_LIBS)

noinst_PROGRAMS += tests/bench/bench_metrics
tests_bench_bench_metrics_SOURCES = tests/bench/bench_metrics.c
tests_bench_bench_metrics_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_metrics_LDADD = libvs_ipc.a libvs_common.a $(VS_DEP_LIBS)
