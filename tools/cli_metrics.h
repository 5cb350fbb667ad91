/*
 * tools/cli_metrics.h - `vstream stats --http-addr HOST:PORT`: the node's
 * figures from its HTTP endpoint's /metrics (the same numbers Prometheus
 * scrapes), printed beside GetStats as JSON members or a table.
 * Callers: the vstream CLI (one thread).
 */
#ifndef VS_TOOLS_CLI_METRICS_H
#define VS_TOOLS_CLI_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* GET http://addr/metrics within timeout_ms. 0 and *text (malloc, NUL-
 * terminated body), or -errno with a one-line reason in err. */
int cli_metrics_fetch(const char *addr, uint32_t timeout_ms, char **text,
                      char *err, size_t errlen);

/* Writes every sample of a Prometheus text body as JSON object members
 * `"series":value` separated by commas (comments skipped). */
void cli_metrics_print_json(const char *text, FILE *out);

/* Writes every sample as "series value" lines. */
void cli_metrics_print_table(const char *text, FILE *out);

#endif /* VS_TOOLS_CLI_METRICS_H */
