# tools/: vstream (CLI), vstream-bench, the C client library (libvs_client.a)
# and the end-to-end tests that drive a real vstreamd through them.
noinst_LIBRARIES += libvs_client.a
libvs_client_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_client_a_SOURCES = \
	tools/client/vsc.h tools/client/vsc_int.h \
	tools/client/codec.c tools/client/conn.c tools/client/commands.c

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_client_golden
check_PROGRAMS += tests/unit/check_client_golden
tests_unit_check_client_golden_SOURCES = tests/unit/check_client_golden.c
tests_unit_check_client_golden_CFLAGS = $(TEST_CFLAGS) -pthread
tests_unit_check_client_golden_LDFLAGS = -pthread
tests_unit_check_client_golden_LDADD = libvs_client.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)
endif

bin_PROGRAMS += vstream
vstream_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
vstream_SOURCES = tools/vstream.c
vstream_LDADD = libvs_client.a libvs_common.a $(VS_DEP_LIBS)

bin_PROGRAMS += vstream-bench
vstream_bench_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS) -pthread
vstream_bench_LDFLAGS = -pthread
vstream_bench_SOURCES = tools/vstream-bench.c
vstream_bench_LDADD = libvs_client.a libvs_common.a $(VS_DEP_LIBS)
