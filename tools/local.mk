# tools/: vstream (CLI), vstream-bench, the C client library (libvs_client.a)
# and the end-to-end tests that drive a real vstreamd through them.
noinst_LIBRARIES += libvs_client.a
libvs_client_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_client_a_SOURCES = \
	tools/client/vsc.h tools/client/vsc_int.h \
	tools/client/codec.c tools/client/conn.c tools/client/commands.c \
	tools/client/batch.c tools/client/data.c tools/client/tls.c

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_client_golden
check_PROGRAMS += tests/unit/check_client_golden
tests_unit_check_client_golden_SOURCES = tests/unit/check_client_golden.c
tests_unit_check_client_golden_CFLAGS = $(TEST_CFLAGS) -pthread
tests_unit_check_client_golden_LDFLAGS = -pthread
tests_unit_check_client_golden_LDADD = libvs_client.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_client_messages
check_PROGRAMS += tests/unit/check_client_messages
tests_unit_check_client_messages_SOURCES = tests/unit/check_client_messages.c
tests_unit_check_client_messages_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_client_messages_LDADD = libvs_client.a libvs_data.a \
	libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

bin_PROGRAMS += vstream
vstream_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
vstream_SOURCES = tools/vstream.c tools/cli_metrics.c tools/cli_metrics.h
vstream_LDADD = libvs_client.a libvs_common.a $(VS_DEP_LIBS)

bin_PROGRAMS += vstream-bench
vstream_bench_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS) -pthread
vstream_bench_LDFLAGS = -pthread
vstream_bench_SOURCES = tools/vstream-bench.c \
	tools/bench/procstat.c tools/bench/procstat.h
vstream_bench_LDADD = libvs_client.a libvs_common.a $(VS_DEP_LIBS)

# End-to-end tests: a real vstreamd (port 0, --with-default-root-credentials)
# driven by the library, the CLI and raw sockets.
if HAVE_CHECK
E2E_TESTS = tests/integration/check_e2e_lib tests/integration/check_e2e_cli \
	tests/integration/check_e2e_badinput tests/integration/check_e2e_durable
check_PROGRAMS += $(E2E_TESTS)
INTEG_TESTS += $(E2E_TESTS)
INTEG_FAST_TESTS += tests/integration/check_e2e_lib \
	tests/integration/check_e2e_cli tests/integration/check_e2e_badinput
E2E_COMMON = tests/integration/e2e.c tests/integration/e2e.h \
	tests/integration/harness.c tests/integration/harness.h
E2E_LDADD = libvs_client.a libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)

tests_integration_check_e2e_lib_SOURCES = tests/integration/check_e2e_lib.c \
	$(E2E_COMMON)
tests_integration_check_e2e_lib_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_e2e_lib_LDADD = $(E2E_LDADD)

tests_integration_check_e2e_cli_SOURCES = tests/integration/check_e2e_cli.c \
	$(E2E_COMMON)
tests_integration_check_e2e_cli_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_e2e_cli_LDADD = $(E2E_LDADD)

tests_integration_check_e2e_badinput_SOURCES = \
	tests/integration/check_e2e_badinput.c $(E2E_COMMON)
tests_integration_check_e2e_badinput_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_e2e_badinput_LDADD = $(E2E_LDADD)

tests_integration_check_e2e_durable_SOURCES = \
	tests/integration/check_e2e_durable.c $(E2E_COMMON)
tests_integration_check_e2e_durable_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_e2e_durable_LDADD = $(E2E_LDADD)

# At-most-once across a session eviction (GetSessionStatus, -ESTALE).
INTEG_TESTS += tests/integration/check_session_evicted
INTEG_FAST_TESTS += tests/integration/check_session_evicted
check_PROGRAMS += tests/integration/check_session_evicted
tests_integration_check_session_evicted_SOURCES = \
	tests/integration/check_session_evicted.c \
	tests/integration/proxy.c tests/integration/proxy.h $(E2E_COMMON)
tests_integration_check_session_evicted_CFLAGS = $(TEST_CFLAGS) -pthread
tests_integration_check_session_evicted_LDFLAGS = -pthread
tests_integration_check_session_evicted_LDADD = $(E2E_LDADD)
endif

# Messages and consumer groups end to end (two data shards).
if HAVE_CHECK
E2E_DATA_TESTS = tests/integration/check_e2e_messages \
	tests/integration/check_e2e_groups \
	tests/integration/check_e2e_send_durable
check_PROGRAMS += $(E2E_DATA_TESTS)
INTEG_TESTS += $(E2E_DATA_TESTS)
INTEG_FAST_TESTS += tests/integration/check_e2e_groups
E2E_DATA_LDADD = libvs_client.a libvs_meta.a libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)

tests_integration_check_e2e_messages_SOURCES = \
	tests/integration/check_e2e_messages.c $(E2E_COMMON)
tests_integration_check_e2e_messages_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_e2e_messages_LDADD = $(E2E_DATA_LDADD)

tests_integration_check_e2e_send_durable_SOURCES = \
	tests/integration/check_e2e_send_durable.c $(E2E_COMMON)
tests_integration_check_e2e_send_durable_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_e2e_send_durable_LDADD = $(E2E_DATA_LDADD)

tests_integration_check_e2e_groups_SOURCES = \
	tests/integration/check_e2e_groups.c $(E2E_COMMON)
tests_integration_check_e2e_groups_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_e2e_groups_LDADD = $(E2E_DATA_LDADD)
endif

# vstream-bench: a smoke run of every mode (completion and non-zero
# figures, never a timed threshold).
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_bench_smoke
INTEG_TESTS += tests/integration/check_bench_smoke
INTEG_FAST_TESTS += tests/integration/check_bench_smoke
tests_integration_check_bench_smoke_SOURCES = \
	tests/integration/check_bench_smoke.c $(E2E_COMMON)
tests_integration_check_bench_smoke_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_bench_smoke_LDADD = $(E2E_LDADD)
endif

# The side-by-side benchmark against Redis Streams and a raw loop, and its
# documentation.
EXTRA_DIST += tools/bench-compare docs/benchmarks.md

# Group commit of the data shards end to end (concurrent fsync'd sends,
# kill -9, restart).
if HAVE_CHECK
check_PROGRAMS += tests/integration/check_data_gcommit
INTEG_TESTS += tests/integration/check_data_gcommit
INTEG_FAST_TESTS += tests/integration/check_data_gcommit
tests_integration_check_data_gcommit_SOURCES = \
	tests/integration/check_data_gcommit.c $(E2E_COMMON)
tests_integration_check_data_gcommit_CFLAGS = $(TEST_CFLAGS) -pthread
tests_integration_check_data_gcommit_LDFLAGS = -pthread
tests_integration_check_data_gcommit_LDADD = $(E2E_LDADD)
endif

# TLS on the client listener and the HTTP endpoint (metrics, health).
if HAVE_CHECK
PROD_TESTS = tests/integration/check_tls tests/integration/check_http \
	tests/integration/check_notify
check_PROGRAMS += $(PROD_TESTS)
INTEG_TESTS += $(PROD_TESTS)
INTEG_FAST_TESTS += $(PROD_TESTS)
tests_integration_check_tls_SOURCES = tests/integration/check_tls.c \
	$(E2E_COMMON)
tests_integration_check_tls_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_tls_LDADD = $(E2E_LDADD)
tests_integration_check_http_SOURCES = tests/integration/check_http.c \
	$(E2E_COMMON)
tests_integration_check_http_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_http_LDADD = $(E2E_LDADD)
tests_integration_check_notify_SOURCES = tests/integration/check_notify.c \
	$(E2E_COMMON)
tests_integration_check_notify_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_notify_LDADD = $(E2E_LDADD)
endif
