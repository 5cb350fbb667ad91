# shard/zero: shard 0's process: commit path, VSR engine binding,
# client table, replies, checkpoints. Sources append to libvs_server.a.
libvs_server_a_SOURCES += \
	shard/zero/commit.c shard/zero/commit.h \
	shard/zero/commit_frames.c shard/zero/commit_frames.h \
	shard/zero/gauges.c shard/zero/gauges.h \
	shard/zero/groups0.c shard/zero/groups0.h \
	shard/zero/forward.c shard/zero/forward.h \
	shard/zero/cluster_view.c shard/zero/cluster_view.h

# In-process bench of the commit path (not run by make check).
noinst_PROGRAMS += tests/bench/bench_commit
tests_bench_bench_commit_SOURCES = tests/bench/bench_commit.c \
	tests/unit/commit_fixture.h
tests_bench_bench_commit_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_commit_LDADD = libvs_server.a libvs_ipc.a libvs_meta.a \
	libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS)

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_commit
check_PROGRAMS += tests/unit/check_commit
tests_unit_check_commit_SOURCES = tests/unit/check_commit.c \
	tests/unit/commit_fixture.h
tests_unit_check_commit_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_commit_LDADD = libvs_server.a libvs_ipc.a libvs_meta.a \
	libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# Group commit on shard 0 (one fsync for the proposals of a pass).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_commit_group
check_PROGRAMS += tests/unit/check_commit_group
tests_unit_check_commit_group_SOURCES = tests/unit/check_commit_group.c \
	tests/unit/commit_fixture.h
tests_unit_check_commit_group_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_commit_group_LDADD = libvs_server.a libvs_ipc.a libvs_meta.a \
	libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# A backup's group commit of journal appends (one fsync, then PrepareOks).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_journal_held
check_PROGRAMS += tests/unit/check_journal_held
tests_unit_check_journal_held_SOURCES = tests/unit/check_journal_held.c \
	tests/unit/commit_fixture.h
tests_unit_check_journal_held_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_journal_held_LDADD = libvs_server.a libvs_ipc.a libvs_meta.a \
	libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# Consumer-group membership on shard 0.
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_groups0
check_PROGRAMS += tests/unit/check_groups0
tests_unit_check_groups0_SOURCES = tests/unit/check_groups0.c \
	tests/unit/commit_fixture.h tests/unit/groups_fixture.h
tests_unit_check_groups0_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_groups0_LDADD = libvs_server.a libvs_data.a libvs_ipc.a \
	libvs_meta.a libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

# Consumer-group liveness across the nodes of a cluster (groups0.h's
# cluster rules, the MemberReport frame).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_groups0_cluster
check_PROGRAMS += tests/unit/check_groups0_cluster
tests_unit_check_groups0_cluster_SOURCES = \
	tests/unit/check_groups0_cluster.c tests/unit/commit_fixture.h \
	tests/unit/groups_fixture.h
tests_unit_check_groups0_cluster_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_groups0_cluster_LDADD = libvs_server.a libvs_data.a \
	libvs_ipc.a libvs_meta.a libvs_vsr.a libvs_storage.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# Consumer-group liveness reports on shard 0 (heartbeat loss, early
# revocation completion, JoinGroup in-flight list) and their pure parts.
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_groups_liveness
check_PROGRAMS += tests/unit/check_groups_liveness
tests_unit_check_groups_liveness_SOURCES = \
	tests/unit/check_groups_liveness.c tests/unit/commit_fixture.h \
	tests/unit/groups_fixture.h
tests_unit_check_groups_liveness_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_groups_liveness_LDADD = libvs_server.a libvs_data.a \
	libvs_ipc.a libvs_meta.a libvs_vsr.a libvs_storage.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# A backup's table of requests forwarded to the primary.
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_forward0
check_PROGRAMS += tests/unit/check_forward0
tests_unit_check_forward0_SOURCES = tests/unit/check_forward0.c
tests_unit_check_forward0_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_forward0_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

# Real 3-node clusters on loopback (tests/integration/cluster.h).
if HAVE_CHECK
CLUSTER_TESTS = tests/integration/check_cluster_basic \
	tests/integration/check_cluster_failover \
	tests/integration/check_cluster_partition \
	tests/integration/check_cluster_restart \
	tests/integration/check_cluster_cli \
	tests/integration/check_cluster_admit \
	tests/integration/check_cluster_groups \
	tests/integration/check_cluster_repsets
check_PROGRAMS += $(CLUSTER_TESTS)
INTEG_TESTS += $(CLUSTER_TESTS)
INTEG_FAST_TESTS += tests/integration/check_cluster_basic \
	tests/integration/check_cluster_partition \
	tests/integration/check_cluster_cli
CLUSTER_COMMON = tests/integration/cluster.c tests/integration/cluster.h \
	tests/integration/e2e.c tests/integration/e2e.h \
	tests/integration/harness.c tests/integration/harness.h
CLUSTER_LDADD = libvs_client.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
tests_integration_check_cluster_basic_SOURCES = \
	tests/integration/check_cluster_basic.c $(CLUSTER_COMMON)
tests_integration_check_cluster_basic_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_basic_LDADD = $(CLUSTER_LDADD)
tests_integration_check_cluster_failover_SOURCES = \
	tests/integration/check_cluster_failover.c $(CLUSTER_COMMON)
tests_integration_check_cluster_failover_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_failover_LDADD = $(CLUSTER_LDADD)
tests_integration_check_cluster_partition_SOURCES = \
	tests/integration/check_cluster_partition.c \
	tests/integration/proxy.c tests/integration/proxy.h $(CLUSTER_COMMON)
tests_integration_check_cluster_partition_CFLAGS = $(TEST_CFLAGS) -pthread
tests_integration_check_cluster_partition_LDFLAGS = -pthread
tests_integration_check_cluster_partition_LDADD = $(CLUSTER_LDADD)
tests_integration_check_cluster_restart_SOURCES = \
	tests/integration/check_cluster_restart.c $(CLUSTER_COMMON)
tests_integration_check_cluster_restart_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_restart_LDADD = libvs_storage.a $(CLUSTER_LDADD)
tests_integration_check_cluster_cli_SOURCES = \
	tests/integration/check_cluster_cli.c $(CLUSTER_COMMON)
tests_integration_check_cluster_cli_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_cli_LDADD = $(CLUSTER_LDADD)
tests_integration_check_cluster_admit_SOURCES = \
	tests/integration/check_cluster_admit.c $(CLUSTER_COMMON)
tests_integration_check_cluster_admit_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_admit_LDADD = $(CLUSTER_LDADD)
tests_integration_check_cluster_groups_SOURCES = \
	tests/integration/check_cluster_groups.c $(CLUSTER_COMMON)
tests_integration_check_cluster_groups_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_groups_LDADD = $(CLUSTER_LDADD)
tests_integration_check_cluster_repsets_SOURCES = \
	tests/integration/check_cluster_repsets.c $(CLUSTER_COMMON)
tests_integration_check_cluster_repsets_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_repsets_LDADD = $(CLUSTER_LDADD)
endif

# Metadata state transfer on shard 0 (serve offers, fetch, install hook).
libvs_server_a_SOURCES += shard/zero/transfer.c shard/zero/transfer.h \
	shard/zero/install_state.c shard/zero/install_state.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_zero_transfer
check_PROGRAMS += tests/unit/check_zero_transfer
tests_unit_check_zero_transfer_SOURCES = tests/unit/check_zero_transfer.c
tests_unit_check_zero_transfer_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_zero_transfer_LDADD = libvs_server.a libvs_vsr.a \
	libvs_storage.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# Installing a fetched state on shard 0 (checks, write, client table).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_zero_install
check_PROGRAMS += tests/unit/check_zero_install
tests_unit_check_zero_install_SOURCES = tests/unit/check_zero_install.c \
	tests/unit/meta_fixture.h tests/unit/meta_helpers.h \
	tests/unit/storage_testutil.h
tests_unit_check_zero_install_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_zero_install_LDADD = libvs_server.a libvs_ipc.a \
	libvs_meta.a libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

# Metadata state transfer between real nodes (3-node cluster, small WAL).
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_cluster_transfer
INTEG_TESTS += tests/integration/check_cluster_transfer
INTEG_FAST_TESTS += tests/integration/check_cluster_transfer
tests_integration_check_cluster_transfer_SOURCES = \
	tests/integration/check_cluster_transfer.c $(CLUSTER_COMMON)
tests_integration_check_cluster_transfer_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_cluster_transfer_LDADD = $(CLUSTER_LDADD)
endif

# State-transfer throughput, fetch + install in-process (not run by make
# check).
noinst_PROGRAMS += tests/bench/bench_transfer
tests_bench_bench_transfer_SOURCES = tests/bench/bench_transfer.c
tests_bench_bench_transfer_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_transfer_LDADD = libvs_server.a libvs_ipc.a libvs_meta.a \
	libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS)
