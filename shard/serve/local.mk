# shard/serve: the client protocol on the data shards.
# Sources are appended to libvs_server.a (listed in server/local.mk).
libvs_server_a_SOURCES += \
	shard/serve/balance.c shard/serve/balance.h \
	shard/serve/cluster.c shard/serve/cluster.h \
	shard/serve/conn.c \
	shard/serve/dlinks.c shard/serve/dlinks.h \
	shard/serve/handoff.c shard/serve/handoff.h \
	shard/serve/hasher.c shard/serve/hasher.h \
	shard/serve/http.c shard/serve/http.h \
	shard/serve/liveness.c shard/serve/liveness.h \
	shard/serve/login.c \
	shard/serve/polled.c shard/serve/polled.h \
	shard/serve/options.c shard/serve/options.h \
	shard/serve/partkey.c shard/serve/partkey.h \
	shard/serve/propose.c \
	shard/serve/prom.c shard/serve/prom.h \
	shard/serve/proto.c shard/serve/proto.h \
	shard/serve/reads.c shard/serve/reads.h \
	shard/serve/rxbody.c shard/serve/rxbody.h \
	shard/serve/serve.c shard/serve/serve.h \
	shard/serve/transport.c \
	shard/serve/server.h

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_serve_golden
check_PROGRAMS += tests/unit/check_serve_golden
tests_unit_check_serve_golden_SOURCES = tests/unit/check_serve_golden.c \
	tests/unit/meta_helpers.h
tests_unit_check_serve_golden_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_serve_golden_LDADD = libvs_server.a libvs_ipc.a libvs_meta.a \
	libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_partkey
check_PROGRAMS += tests/unit/check_partkey
tests_unit_check_partkey_SOURCES = tests/unit/check_partkey.c
tests_unit_check_partkey_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_partkey_LDADD = libvs_server.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

if HAVE_CHECK
check_PROGRAMS += tests/integration/check_serve_basic
INTEG_TESTS += tests/integration/check_serve_basic
INTEG_FAST_TESTS += tests/integration/check_serve_basic
tests_integration_check_serve_basic_SOURCES = \
	tests/integration/check_serve_basic.c \
	tests/integration/rawclient.c tests/integration/rawclient.h \
	tests/integration/harness.c tests/integration/harness.h
tests_integration_check_serve_basic_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_serve_basic_LDADD = libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

# Consumer-group liveness end to end: heartbeat loss,
# reconnects, cooperative revocation completion.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_groups_liveness
INTEG_TESTS += tests/integration/check_groups_liveness
INTEG_FAST_TESTS += tests/integration/check_groups_liveness
tests_integration_check_groups_liveness_SOURCES = \
	tests/integration/check_groups_liveness.c \
	tests/integration/e2e.c tests/integration/e2e.h \
	tests/integration/harness.c tests/integration/harness.h
tests_integration_check_groups_liveness_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_groups_liveness_LDADD = libvs_client.a libvs_meta.a \
	libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# Client connections spread evenly over the data shards.
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_conn_balance
INTEG_TESTS += tests/integration/check_conn_balance
INTEG_FAST_TESTS += tests/integration/check_conn_balance
tests_integration_check_conn_balance_SOURCES = \
	tests/integration/check_conn_balance.c \
	tests/integration/harness.c tests/integration/harness.h
tests_integration_check_conn_balance_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_conn_balance_LDADD = libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif

# A replicated partition's consensus group (pgroup.h) and its in-process
# three-replica test.
libvs_server_a_SOURCES += shard/serve/pgroup.c shard/serve/pgroup.h \
	shard/serve/pgclients.c shard/serve/pgclients.h
# Its partition state transfer (pxfer.h).
libvs_server_a_SOURCES += shard/serve/pxfer.c shard/serve/pxfer.h
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_pxfer
check_PROGRAMS += tests/unit/check_pxfer
tests_unit_check_pxfer_SOURCES = tests/unit/check_pxfer.c \
	tests/unit/pgroup_net.c tests/unit/pgroup_net.h tests/unit/data_testutil.h
tests_unit_check_pxfer_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_pxfer_LDADD = libvs_server.a libvs_vsr.a libvs_data.a \
	libvs_storage.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_pgroup
check_PROGRAMS += tests/unit/check_pgroup
tests_unit_check_pgroup_SOURCES = tests/unit/check_pgroup.c \
	tests/unit/pgroup_net.c tests/unit/pgroup_net.h tests/unit/data_testutil.h
tests_unit_check_pgroup_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_pgroup_LDADD = libvs_server.a libvs_vsr.a libvs_data.a \
	libvs_storage.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif
