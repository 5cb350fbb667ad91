# shard/serve hardening of the client listener: the readiness gate,
# login throttling, sessions that end with their credentials, timeouts.
# Sources are appended to libvs_server.a (listed in server/local.mk).
libvs_server_a_SOURCES += \
	shard/serve/clients.c shard/serve/clients.h \
	shard/serve/frametimer.c shard/serve/frametimer.h \
	shard/serve/gate.c shard/serve/gate.h \
	shard/serve/sessend.c shard/serve/sessend.h \
	shard/serve/throttle.c shard/serve/throttle.h

if HAVE_CHECK
check_PROGRAMS += tests/integration/check_serve_harden
INTEG_TESTS += tests/integration/check_serve_harden
INTEG_FAST_TESTS += tests/integration/check_serve_harden
tests_integration_check_serve_harden_SOURCES = \
	tests/integration/check_serve_harden.c \
	tests/integration/rawclient.c tests/integration/rawclient.h \
	tests/integration/harness.c tests/integration/harness.h
tests_integration_check_serve_harden_CFLAGS = $(TEST_CFLAGS)
tests_integration_check_serve_harden_LDADD = libvs_common.a $(VS_DEP_LIBS) \
	$(CHECK_LIBS)
endif
