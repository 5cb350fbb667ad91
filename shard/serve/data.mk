# shard/serve data plane: the owned partitions of a data shard
# and send / poll / offsets / flush with forwarding between data shards.
# Sources are appended to libvs_server.a (listed in server/local.mk); the
# partition engine is libvs_data.a (shard/data/local.mk).
libvs_server_a_SOURCES += \
	shard/serve/data.c shard/serve/data.h \
	shard/serve/gcommit.c shard/serve/gcommit.h \
	shard/serve/parts.c shard/serve/parts.h \
	shard/serve/pbeat.c shard/serve/pbeat.h \
	shard/serve/pgroups.c shard/serve/pgroups.h \
	shard/serve/pheld.c shard/serve/pheld.h \
	shard/serve/segments.c shard/serve/segments.h

if HAVE_CHECK
DATA_SERVE_ITEST_LDADD = libvs_data.a libvs_meta.a libvs_storage.a \
	libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
DATA_SERVE_ITEST_SRC = tests/integration/harness.c tests/integration/harness.h \
	tests/integration/rawclient.c tests/integration/rawclient.h \
	tests/integration/data_raw.c tests/integration/data_raw.h

check_PROGRAMS += tests/integration/check_data_serve
INTEG_TESTS += tests/integration/check_data_serve
INTEG_FAST_TESTS += tests/integration/check_data_serve
tests_integration_check_data_serve_SOURCES = \
	tests/integration/check_data_serve.c $(DATA_SERVE_ITEST_SRC)
tests_integration_check_data_serve_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_data_serve_LDADD = $(DATA_SERVE_ITEST_LDADD)
endif

# Large frames read straight into place, large poll replies without a
# copy, and their error paths.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_data_bigframes
INTEG_TESTS += tests/integration/check_data_bigframes
INTEG_FAST_TESTS += tests/integration/check_data_bigframes
tests_integration_check_data_bigframes_SOURCES = \
	tests/integration/check_data_bigframes.c $(DATA_SERVE_ITEST_SRC)
tests_integration_check_data_bigframes_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_data_bigframes_LDADD = $(DATA_SERVE_ITEST_LDADD)
endif

if HAVE_CHECK
check_PROGRAMS += tests/integration/check_data_stats
INTEG_TESTS += tests/integration/check_data_stats
INTEG_FAST_TESTS += tests/integration/check_data_stats
tests_integration_check_data_stats_SOURCES = \
	tests/integration/check_data_stats.c $(DATA_SERVE_ITEST_SRC)
tests_integration_check_data_stats_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_data_stats_LDADD = $(DATA_SERVE_ITEST_LDADD)
endif

if HAVE_CHECK
check_PROGRAMS += tests/integration/check_data_durable
INTEG_TESTS += tests/integration/check_data_durable
tests_integration_check_data_durable_SOURCES = \
	tests/integration/check_data_durable.c $(DATA_SERVE_ITEST_SRC)
tests_integration_check_data_durable_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_data_durable_LDADD = $(DATA_SERVE_ITEST_LDADD)

# connections handed to the shard that owns their partitions (handoff.h)
check_PROGRAMS += tests/integration/check_conn_handoff
INTEG_TESTS += tests/integration/check_conn_handoff
tests_integration_check_conn_handoff_SOURCES = \
	tests/integration/check_conn_handoff.c $(DATA_SERVE_ITEST_SRC)
tests_integration_check_conn_handoff_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_conn_handoff_LDADD = $(DATA_SERVE_ITEST_LDADD)
endif

# End-to-end send / poll throughput of a real node (not run by make check).
noinst_PROGRAMS += tests/bench/bench_dataserve
tests_bench_bench_dataserve_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_dataserve_SOURCES = tests/bench/bench_dataserve.c \
	tests/integration/harness.c tests/integration/harness.h \
	tests/integration/rawclient.c tests/integration/rawclient.h
tests_bench_bench_dataserve_LDADD = libvs_data.a libvs_storage.a \
	libvs_common.a $(VS_DEP_LIBS)

# What the replicated-partition integration tests share (preplica.h).
PREPLICA_COMMON = $(CLUSTER_COMMON) tests/integration/preplica.c \
	tests/integration/preplica.h

# Replicated partitions on a real 3-node cluster (partition_replication):
# sends through every node, identical polls, the group primary killed.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_cluster_preplica
INTEG_TESTS += tests/integration/check_cluster_preplica
tests_integration_check_cluster_preplica_SOURCES = \
	tests/integration/check_cluster_preplica.c $(PREPLICA_COMMON)
tests_integration_check_cluster_preplica_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_preplica_LDADD = $(CLUSTER_LDADD)
endif

# The partition groups' coalesced heartbeats (pbeat.h) with real engines
# on three in-process nodes, and its bench.
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_pgroups_beat
check_PROGRAMS += tests/unit/check_pgroups_beat
tests_unit_check_pgroups_beat_SOURCES = tests/unit/check_pgroups_beat.c \
	tests/unit/beatnet.c tests/unit/beatnet.h
tests_unit_check_pgroups_beat_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_pgroups_beat_LDADD = libvs_server.a libvs_vsr.a \
	libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif
# Read your writes: forwarded results held until the local replica
# applied their op, with an injected clock.
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_pheld
check_PROGRAMS += tests/unit/check_pheld
tests_unit_check_pheld_SOURCES = tests/unit/check_pheld.c
tests_unit_check_pheld_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_pheld_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif
noinst_PROGRAMS += tests/bench/bench_pgroups_beat
tests_bench_bench_pgroups_beat_SOURCES = tests/bench/bench_pgroups_beat.c \
	tests/unit/beatnet.c tests/unit/beatnet.h
tests_bench_bench_pgroups_beat_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_pgroups_beat_LDADD = libvs_server.a libvs_vsr.a \
	libvs_common.a $(VS_DEP_LIBS)

# CreateTopic of many replicated partitions on a real 3-node cluster.
if HAVE_CHECK
noinst_PROGRAMS += tests/bench/bench_cluster_create
tests_bench_bench_cluster_create_SOURCES = \
	tests/bench/bench_cluster_create.c $(CLUSTER_COMMON)
tests_bench_bench_cluster_create_CFLAGS = $(TEST_CFLAGS)
tests_bench_bench_cluster_create_LDADD = $(CLUSTER_LDADD)
endif

# Partition state transfer: a node stopped past its peers' partition
# journal window fetches the partition, then serves the same history.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_cluster_pxfer
INTEG_TESTS += tests/integration/check_cluster_pxfer
tests_integration_check_cluster_pxfer_SOURCES = \
	tests/integration/check_cluster_pxfer.c $(PREPLICA_COMMON)
tests_integration_check_cluster_pxfer_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_pxfer_LDADD = $(CLUSTER_LDADD)
endif

# A backup node stopped while a million messages are sent catches up and
# serves the identical history.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_cluster_pcatchup
INTEG_TESTS += tests/integration/check_cluster_pcatchup
tests_integration_check_cluster_pcatchup_SOURCES = \
	tests/integration/check_cluster_pcatchup.c $(PREPLICA_COMMON)
tests_integration_check_cluster_pcatchup_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_pcatchup_LDADD = $(CLUSTER_LDADD)
endif

# The partition group's trims and auto-commits on a real 3-node cluster:
# DeleteSegments leaves identical files everywhere, auto-committed offsets
# are the group's and survive the loss of its primary node.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_cluster_ptrim
INTEG_TESTS += tests/integration/check_cluster_ptrim
tests_integration_check_cluster_ptrim_SOURCES = \
	tests/integration/check_cluster_ptrim.c $(PREPLICA_COMMON)
tests_integration_check_cluster_ptrim_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_ptrim_LDADD = $(CLUSTER_LDADD)
endif
