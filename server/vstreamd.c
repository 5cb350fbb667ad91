/*
 * server/vstreamd.c - the vstreamd entry point.
 *
 * Role: parses the configuration (file < environment < flags), handles
 * --help and --version, and hands over to the supervisor.
 * Exit codes (DESIGN §1): 0 clean stop, 1 unexpected failure, 2 do not
 * restart (bad flag or config, refused boot).
 *
 * `vstreamd [OPTIONS] format` formats an empty data dir for a replica
 * of a multi-node cluster (which otherwise refuses an empty dir: it may
 * be a lost disk, DESIGN §4) and exits; a one-replica node formats
 * itself at first boot. `vstreamd [OPTIONS] recover` formats the empty
 * data dir of a cluster replica that lost its disk, marked rebuilt: it
 * rejoins through repair and neither votes nor acknowledges until it
 * caught up (R8).
 *
 * Everything after the configuration is the supervisor's
 * (server/supervisor.c): data-dir lock, shard count, segment,
 * listeners, shards. vstreamd runs in the foreground (systemd Type=exec).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem.h"
#include "server/datadir.h"
#include "server/supervisor.h"
#include "shard/zero/boot.h"

extern char **environ;

static void
usage(int fd)
{
    dprintf(fd, "usage: vstreamd [OPTIONS]         run a node\n"
                "       vstreamd [OPTIONS] format  format an empty data dir "
                "for a cluster replica\n"
                "       vstreamd [OPTIONS] recover format the empty data dir "
                "of a cluster replica\n"
                "                                  that lost its disk (it "
                "rejoins without voting\n"
                "                                  until caught up)\n"
                "\n"
                "vstream node: a supervisor with a metadata shard and data "
                "shards.\n"
                "Settings come from defaults < --config FILE (or "
                "VSTREAMD_CONFIG) <\n"
                "VSTREAMD_<KEY> environment variables < --key VALUE flags.\n"
                "\n"
                "  --help                           this help\n"
                "  --version                        print the version\n"
                "  --config FILE                    INI file of key = value "
                "lines\n");
    vs_config_print_help(fd);
}

int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(STDOUT_FILENO);
            return VS_EXIT_OK;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("vstreamd %s\n", PACKAGE_VERSION);
            return VS_EXIT_OK;
        }
    }
    struct vs_config cfg;
    char err[1024];
    int pos = 0;
    vs_log_init("sup", VS_LOG_INFO);
    if (vs_config_load(&cfg, argc, argv, environ, &pos, err, sizeof(err)) !=
        0) {
        fprintf(stderr, "vstreamd: %s\n", err);
        return VS_EXIT_FATAL;
    }
    int format = 0;
    char **rest = NULL;
    if (pos < argc && (strcmp(argv[pos], "format") == 0 ||
                       strcmp(argv[pos], "recover") == 0)) {
        /* options may also follow the subcommand: parse again without it */
        rest = vs_xcalloc((size_t)argc + 1, sizeof(*rest));
        int n = 0;
        for (int i = 0; i < argc; i++)
            if (i != pos)
                rest[n++] = argv[i];
        rest[n] = NULL;
        format = strcmp(argv[pos], "format") == 0 ? 1 : 2;
        int rc = vs_config_load(&cfg, n, rest, environ, &pos, err, sizeof(err));
        if (rc == 0 && pos < n)
            snprintf(err, sizeof(err), "unexpected argument '%s' (see --help)",
                     rest[pos]);
        free(rest);
        if (rc != 0 || pos < n) {
            fprintf(stderr, "vstreamd: %s\n", err);
            return VS_EXIT_FATAL;
        }
    } else if (pos < argc) {
        fprintf(stderr, "vstreamd: unexpected argument '%s' (see --help)\n",
                argv[pos]);
        return VS_EXIT_FATAL;
    }
    vs_log_set_level(cfg.log_level);
    if (cfg.log_file[0] != '\0') {
        int rc = vs_log_open_file(cfg.log_file);
        if (rc != 0) {
            fprintf(stderr, "vstreamd: log_file %s: %s\n", cfg.log_file,
                    strerror(-rc));
            return VS_EXIT_FATAL;
        }
    }
    if (format) {
        int fd = sup_datadir_lock(cfg.data_dir, err, sizeof(err));
        if (fd < 0) {
            fprintf(stderr, "vstreamd: %s\n", err);
            return VS_EXIT_FATAL;
        }
        int rc = format == 1 ? shard0_format(&cfg, err, sizeof(err))
                             : shard0_recover(&cfg, err, sizeof(err));
        close(fd);
        if (rc != 0) {
            fprintf(stderr, "vstreamd: %s\n", err);
            return VS_EXIT_FATAL;
        }
        printf("vstreamd: %s\n", err);
        return VS_EXIT_OK;
    }
    return sup_run(&cfg, argc, argv, environ);
}
