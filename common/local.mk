# common/: wire headers, checksums, log, assert, errors, buffers, config.
noinst_LIBRARIES += libvs_common.a
libvs_common_a_CFLAGS = $(AM_CFLAGS) $(VS_DEP_CFLAGS)
libvs_common_a_SOURCES = \
	common/assert.c common/assert.h \
	common/buf.c common/buf.h \
	common/checksum.c common/checksum.h \
	common/names.c common/names.h \
	common/xxh3_simd.c common/xxh3_simd512.c common/xxh3_simd.h \
	common/clock.h \
	common/config.c common/config.h \
	common/secret.c common/secret.h \
	common/errors.c common/errors.h \
	common/hist.c common/hist.h \
	common/layout.h \
	common/log.c common/log.h \
	common/mem.c common/mem.h \
	common/metrics.c common/metrics.h \
	common/readyfile.c common/readyfile.h \
	common/tls.c common/tls.h \
	common/wire.c common/wire.h
