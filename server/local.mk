# server/: vstreamd, the supervisor; shard/zero/main.c, shard/serve/main.c and
# shard/loop.c (the shard process mains it forks into) live in the same
# library because the supervisor calls them after fork.
noinst_LIBRARIES += libvs_server.a
libvs_server_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_server_a_SOURCES = \
	server/datadir.c server/datadir.h \
	server/datalinks.c server/datalinks.h \
	server/endpoints.c server/endpoints.h \
	server/listen.c server/listen.h \
	server/notify.c server/notify.h \
	server/supervisor.c server/supervisor.h \
	shard/loop.c shard/loop.h \
	shard/fwd.h \
	shard/shard.h \
	shard/zero/main.c \
	shard/zero/boot.c shard/zero/boot.h \
	shard/serve/main.c

sbin_PROGRAMS += vstreamd
vstreamd_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
vstreamd_SOURCES = server/vstreamd.c
vstreamd_LDADD = libvs_server.a libvs_data.a libvs_ipc.a libvs_meta.a libvs_vsr.a libvs_storage.a libvs_common.a $(VS_DEP_LIBS) \
	$(JEMALLOC_LIBS)

if HAVE_CHECK
UNIT_TESTS += tests/unit/check_server
check_PROGRAMS += tests/unit/check_server tests/integration/check_supervisor
INTEG_TESTS += tests/integration/check_supervisor
# a whole node SIGKILLed and restarted at once, 30 times
check_PROGRAMS += tests/integration/check_restart_crash
INTEG_TESTS += tests/integration/check_restart_crash
INTEG_FAST_TESTS += tests/integration/check_supervisor

tests_unit_check_server_SOURCES = tests/unit/check_server.c
tests_unit_check_server_CFLAGS = $(TEST_CFLAGS)
tests_unit_check_server_LDADD = libvs_server.a libvs_data.a libvs_ipc.a libvs_meta.a libvs_vsr.a libvs_storage.a libvs_common.a \
	$(VS_DEP_LIBS) $(CHECK_LIBS)

# The integration harness (tests/integration/harness.h): every
# integration test lists harness.c and harness.h in its own _SOURCES.
tests_integration_check_supervisor_SOURCES = \
	tests/integration/check_supervisor.c \
	tests/integration/harness.c tests/integration/harness.h
tests_integration_check_supervisor_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_supervisor_LDADD = libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)

tests_integration_check_restart_crash_SOURCES = \
	tests/integration/check_restart_crash.c \
	tests/integration/harness.c tests/integration/harness.h
tests_integration_check_restart_crash_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_restart_crash_LDADD = libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif
