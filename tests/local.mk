# tests/: Check unit suites (tests/unit), integration tests (tests/integration).
if HAVE_CHECK
UNIT_TESTS += tests/unit/check_wire tests/unit/check_checksum \
	tests/unit/check_config tests/unit/check_common tests/unit/check_hist \
	tests/unit/check_names
check_PROGRAMS += tests/unit/check_wire tests/unit/check_checksum \
	tests/unit/check_config tests/unit/check_common tests/unit/check_hist \
	tests/unit/check_names

tests_unit_check_names_SOURCES = tests/unit/check_names.c
tests_unit_check_names_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_names_LDADD = libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_hist_SOURCES = tests/unit/check_hist.c
tests_unit_check_hist_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_hist_LDADD = libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_wire_SOURCES = tests/unit/check_wire.c
tests_unit_check_wire_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_wire_LDADD = libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_checksum_SOURCES = tests/unit/check_checksum.c
tests_unit_check_checksum_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_checksum_LDADD = libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_config_SOURCES = tests/unit/check_config.c
tests_unit_check_config_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_config_LDADD = libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)

tests_unit_check_common_SOURCES = tests/unit/check_common.c
tests_unit_check_common_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_common_LDADD = libvs_common.a $(VS_DEP_LIBS) $(CHECK_LIBS)
endif

# XXH3 variant throughput (not run by make check).
noinst_PROGRAMS += tests/bench/bench_xxh3
tests_bench_bench_xxh3_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
tests_bench_bench_xxh3_SOURCES = tests/bench/bench_xxh3.c
tests_bench_bench_xxh3_LDADD = libvs_common.a $(VS_DEP_LIBS)

# A poll reply's sender and receiver CPU per MiB: pread + verify + write
# against mmap + verify + sendfile over loopback (not run by make check).
noinst_PROGRAMS += tests/bench/bench_pollsend
tests_bench_bench_pollsend_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS) -pthread
tests_bench_bench_pollsend_SOURCES = tests/bench/bench_pollsend.c
tests_bench_bench_pollsend_LDADD = libvs_common.a $(VS_DEP_LIBS) -lpthread
