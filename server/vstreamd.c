/*
 * server/vstreamd.c - the vstreamd entry point.
 *
 * Role: parses the configuration (file < environment < flags), handles
 * --help and --version, and hands over to the supervisor.
 * Exit codes (DESIGN §1): 0 clean stop, 1 unexpected failure, 2 do not
 * restart (bad flag or config, refused boot).
 *
 * Everything after the configuration is the supervisor's
 * (server/supervisor.c): data-dir lock, shard count, segment,
 * listeners, shards. vstreamd runs in the foreground (systemd Type=exec).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/supervisor.h"

extern char **environ;

static void
usage(int fd)
{
    dprintf(fd, "usage: vstreamd [OPTIONS]\n"
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
    if (pos < argc) {
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
    return sup_run(&cfg, argc, argv, environ);
}
