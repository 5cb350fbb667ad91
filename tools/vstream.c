/*
 * tools/vstream.c - the `vstream` command-line client.
 *
 * Role: manage a vstream node (or any server of Iggy's VSR client
 * protocol) from a shell: ping, me, stats, cluster, streams, topics,
 * partitions, users, permissions and personal access tokens, through the
 * client library (tools/client/vsc.h).
 * Invariants:
 *  - global options are accepted before or after the subcommand;
 *  - stdout carries the result only: a table, or with --json exactly one
 *    JSON object; errors go to stderr as ONE line
 *    "vstream: <ErrorName> (<code>): <text>";
 *  - exit status: 0 success, 1 usage error (usage printed), 2 the request
 *    failed (server refusal, connection or protocol error);
 *  - the password never appears in argv of a child or in output
 *    (--password-stdin / VSTREAM_PASSWORD are preferred over --password).
 * Callers: a user's shell; the integration tests.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/buf.h"
#include "common/errors.h"
#include "tools/cli_metrics.h"
#include "tools/client/vsc.h"

#define VS_CLI_ARGS_MAX  1024
#define VS_CLI_PERMS_MAX 32

enum { CLI_OK = 0, CLI_USAGE = 1, CLI_FAIL = 2 };

struct cli {
    const char *addr; /* "HOST:PORT[,HOST:PORT...]" */
    char addrs[1024]; /* several --addr, joined */
    const char *user;
    const char *password;
    int password_stdin;
    int json;
    int help;
    int tls;
    const char *tls_ca;
    const char *tls_server_name;
    const char *http_addr; /* stats: the node's HTTP endpoint */
    const char *pos[VS_CLI_ARGS_MAX];
    int npos;
    /* command options */
    const char *partitions;
    const char *message_expiry;
    const char *max_topic_size;
    const char *compression;
    const char *segment_size;
    const char *enforce_fsync;
    const char *msgs_to_save;
    const char *size_to_save;
    const char *preallocate;
    const char *replication_factor;
    const char *options[VS_CLI_PERMS_MAX]; /* --option KEY=VALUE */
    int noptions;
    const char *name;
    const char *status;
    const char *expiry;
    const char *perm;
    const char *stream_perm[VS_CLI_PERMS_MAX];
    int nstream_perm;
    const char *topic_perm[VS_CLI_PERMS_MAX];
    int ntopic_perm;
    int clear;
    int no_follow; /* stay on the first node that answers */
    /* messages, offsets, groups */
    const char *partition;
    const char *key;
    const char *offset;
    const char *timestamp;
    const char *count;
    const char *consumer;
    const char *group;
    int first, last, next, auto_commit, fsync;
    const char *headers[VS_CLI_PERMS_MAX]; /* --header KEY=VALUE */
    int nheaders;
    char pwbuf[256];
    struct vsc *c;
};

static const char USAGE[] =
    "usage: vstream [global options] COMMAND [ARGS] [options]\n"
    "\n"
    "Global options (before or after the command):\n"
    "  --addr HOST:PORT       server address (env VSTREAM_ADDR; default "
    "127.0.0.1:8090);\n"
    "                         repeat it (or separate by commas) to name "
    "more\n"
    "                         nodes of a cluster: the CLI tries them in turn "
    "and\n"
    "                         moves to the cluster's leader after login\n"
    "  --user NAME            username (env VSTREAM_USER; default iggy)\n"
    "  --password PASSWORD    password (prefer --password-stdin or "
    "VSTREAM_PASSWORD)\n"
    "  --password-stdin       read the password from the first line of "
    "stdin\n"
    "  --json                 print one JSON object instead of a table\n"
    "  --http-addr HOST:PORT  stats: also the node's /metrics figures (env\n"
    "                         VSTREAM_HTTP_ADDR)\n"
    "  --tls                  connect with TLS (the server's tls_addr); the\n"
    "                         server certificate is always verified\n"
    "  --tls-ca FILE          trust the CAs in FILE (PEM) instead of the\n"
    "                         system store (implies --tls)\n"
    "  --tls-server-name NAME name the certificate must match (default: the\n"
    "                         host of --addr; implies --tls)\n"
    "  -h, --help             help (also after any command)\n"
    "\n"
    "Commands:\n"
    "  ping                   check the server answers (no login)\n"
    "  me                     this connection's client record\n"
    "  stats                  server statistics\n"
    "  cluster                cluster metadata; on a cluster each node's "
    "role,\n"
    "                         client address, view, log_view, commit, "
    "checkpoint\n"
    "                         and link state (--json: a \"nodes\" array)\n"
    "  stream  create|list|get|update|delete|purge\n"
    "  topic   create|list|get|update|delete|purge\n"
    "  partition create|delete\n"
    "  user    create|list|get|update|delete|passwd|permissions\n"
    "  pat     create|list|delete\n"
    "  send    STREAM TOPIC [MSG...]   send messages (or lines of stdin)\n"
    "  poll    STREAM TOPIC            poll messages\n"
    "  offset  get|store|delete        consumer offsets\n"
    "  group   create|list|get|delete  consumer groups\n"
    "  flush   STREAM TOPIC PARTITION  flush a partition's unsaved buffer\n"
    "\n"
    "Identifiers: a number is an id, anything else a name.\n"
    "Exit status: 0 ok, 1 usage error, 2 the request failed.\n";

static const char USAGE_CLUSTER[] =
    "usage: vstream cluster [--json]\n"
    "\n"
    "Lists the nodes of the cluster as Iggy's SDKs see them "
    "(GetClusterMetadata\n"
    "of the node the CLI is connected to). On a cluster, every node is also\n"
    "asked for its own account on a connection of its own (needs the\n"
    "password), so each row's numbers have one meaning on every node:\n"
    "  NODE            the node's name\n"
    "  CLIENT_ADDRESS  where clients reach it (as it advertised it)\n"
    "  ROLE            leader: the settled primary of the current view; no\n"
    "                  node is leader during a view change\n"
    "  STATUS          healthy, starting (not Normal yet) or unreachable, as\n"
    "                  the connected node sees it\n"
    "  VSR             the node's replica status: normal, view_change or\n"
    "                  recovering\n"
    "  VIEW            the node's current view\n"
    "  LOG_VIEW        the view in which its journal was last normal\n"
    "  OP              the highest op in its journal (prepared, maybe not\n"
    "                  committed yet)\n"
    "  COMMIT          the highest op the node itself has committed and\n"
    "                  applied (commit_min); what its clients can read\n"
    "  LAG             ops the node's COMMIT is behind the cluster commit:\n"
    "                  the highest op any reachable node knows committed\n"
    "                  (max of every node's commit_max and COMMIT)\n"
    "  CHECKPOINT      the op of the node's newest durable checkpoint\n"
    "  LINK            the replica link from the connected node to it (self,\n"
    "                  up, handshake, connecting, down)\n"
    "  TRANSFER        the node's metadata state transfer (fetching the\n"
    "                  primary's checkpoint when its journal cannot catch\n"
    "                  up): its stage (idle, awaiting-target: asked a peer\n"
    "                  for the manifest; fetching; installing), while one\n"
    "                  runs the serving node and bytes fetched/total, then\n"
    "                  `last:` how the last session ended (installed, with\n"
    "                  its bytes and duration, or why it was abandoned); '-'\n"
    "                  when the node does not report it\n"
    "A node that does not answer shows '-'. The CLI logs in to every node\n"
    "first (each login is an op of the cluster), then asks them back to back.\n"
    "A backup learns of a commit with the primary's next prepare or Commit\n"
    "heartbeat (every 500 ms), so right after writes, the CLI's own logins\n"
    "included, a backup's LAG of a few ops is normal; a LAG that keeps\n"
    "growing is a node falling behind.\n"
    "--json prints {\"name\", \"connected\", \"cluster_commit\", \"nodes\": "
    "[...]}\n"
    "with these fields per node (name, ip, tcp, quic, http, websocket, role,\n"
    "status, client_address, link, replica, vsr_status, view, log_view, op,\n"
    "commit, commit_max, lag, checkpoint; null when the node did not\n"
    "answer) and its transfer: transfer_stage, transfer_peer (the serving\n"
    "node's name, null when idle), transfer_fetched, transfer_total (bytes\n"
    "of the running session), transfer_sessions, transfer_completed,\n"
    "transfer_abandoned (counts since the node started), transfer_last (how\n"
    "the last session ended, \"\" none), transfer_last_bytes and\n"
    "transfer_last_ms (the last installed session); all null when the node\n"
    "does not report them.\n";

static const char USAGE_STREAM[] =
    "usage: vstream stream create NAME\n"
    "       vstream stream list\n"
    "       vstream stream get STREAM\n"
    "       vstream stream update STREAM NEW_NAME\n"
    "       vstream stream delete STREAM\n"
    "       vstream stream purge STREAM\n";

static const char USAGE_TOPIC[] =
    "usage: vstream topic create STREAM NAME [--partitions N] [topic "
    "options]\n"
    "       vstream topic list STREAM\n"
    "       vstream topic get STREAM TOPIC\n"
    "       vstream topic update STREAM TOPIC NEW_NAME [topic options]\n"
    "       vstream topic delete STREAM TOPIC\n"
    "       vstream topic purge STREAM TOPIC\n"
    "Topic options:\n"
    "  --message-expiry US|DURATION|none   --max-topic-size BYTES|SIZE|"
    "unlimited\n"
    "  --compression none|gzip             --segment-size BYTES\n"
    "  --enforce-fsync true|false          --messages-required-to-save N\n"
    "  --size-of-messages-required-to-save BYTES\n"
    "  --preallocate-segments true|false   --option KEY=VALUE (string "
    "value)\n"
    "  --replication-factor N (create only: nodes holding each partition;\n"
    "                          0 = min(3, nodes), at most the node count)\n"
    "topic get also lists each partition's replicas and its primary (view "
    "0).\n";

static const char USAGE_PARTITION[] =
    "usage: vstream partition create STREAM TOPIC COUNT\n"
    "       vstream partition delete STREAM TOPIC COUNT\n"
    "(delete removes the COUNT highest partition ids)\n";

static const char USAGE_USER[] =
    "usage: vstream user create NAME [PASSWORD] [--status active|inactive] "
    "[perms]\n"
    "       vstream user list\n"
    "       vstream user get USER\n"
    "       vstream user update USER [--name NEW] [--status "
    "active|inactive]\n"
    "       vstream user delete USER\n"
    "       vstream user passwd USER CURRENT NEW\n"
    "       vstream user permissions USER [perms | --clear]\n"
    "Permissions:\n"
    "  --perm LIST                  global: all, none, or a comma list of\n"
    "                               manage_servers read_servers manage_users\n"
    "                               read_users manage_streams read_streams\n"
    "                               manage_topics read_topics poll_messages\n"
    "                               send_messages\n"
    "  --stream-perm SID:LIST       per stream (repeatable): manage_stream\n"
    "                               read_stream manage_topics read_topics\n"
    "                               poll_messages send_messages\n"
    "  --topic-perm SID:TID:LIST    per topic (repeatable): manage_topic\n"
    "                               read_topic poll_messages send_messages\n"
    "A created user without PASSWORD gets a generated one, printed once.\n";

static const char USAGE_PAT[] =
    "usage: vstream pat create NAME [--expiry MICROSECONDS]\n"
    "       vstream pat list\n"
    "       vstream pat delete NAME\n"
    "(the token is printed once, at create; expiry 0 = never)\n";

static int
cli_usage(const char *text, const char *why)
{
    if (why != NULL)
        fprintf(stderr, "vstream: %s\n", why);
    fputs(text, stderr);
    return CLI_USAGE;
}

static int
cli_fail(struct cli *cl, int rc)
{
    const char *e = cl->c ? vsc_last_error(cl->c) : "";
    (void)rc;
    if (e[0] == '\0')
        fprintf(stderr, "vstream: Error (1): %s\n",
                strerror(rc < 0 ? -rc : EIO));
    else
        fprintf(stderr, "vstream: %s\n", e);
    return CLI_FAIL;
}

static int
cli_not_found(uint32_t code, const char *what)
{
    fprintf(stderr, "vstream: %s (%u): %s not found\n",
            vs_iggy_error_name(code), code, what);
    return CLI_FAIL;
}

/* ---- JSON helpers ---- */

static void
json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", stdout);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void
json_kv_str(const char *k, const char *v, int comma)
{
    printf("\"%s\":", k);
    json_str(v);
    if (comma)
        putchar(',');
}

/* ---- parsing ---- */

static int
cli_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    if (s == NULL || s[0] == '\0' || s[0] == '-')
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -EINVAL;
    *out = v;
    return 0;
}

static int
cli_u32(const char *s, uint32_t *out)
{
    uint64_t v;
    if (cli_u64(s, &v) != 0 || v > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

static int
cli_bool(const char *s, int *out)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0) {
        *out = 1;
        return 0;
    }
    if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0) {
        *out = 0;
        return 0;
    }
    return -EINVAL;
}

/* Options that take a value, and where they go. */
static const char **
cli_value_slot(struct cli *cl, const char *opt)
{
    static const struct {
        const char *name;
        size_t off;
    } t[] = {
        {"--addr", offsetof(struct cli, addr)},
        {"--user", offsetof(struct cli, user)},
        {"--password", offsetof(struct cli, password)},
        {"--tls-ca", offsetof(struct cli, tls_ca)},
        {"--http-addr", offsetof(struct cli, http_addr)},
        {"--tls-server-name", offsetof(struct cli, tls_server_name)},
        {"--partitions", offsetof(struct cli, partitions)},
        {"--message-expiry", offsetof(struct cli, message_expiry)},
        {"--max-topic-size", offsetof(struct cli, max_topic_size)},
        {"--compression", offsetof(struct cli, compression)},
        {"--segment-size", offsetof(struct cli, segment_size)},
        {"--enforce-fsync", offsetof(struct cli, enforce_fsync)},
        {"--messages-required-to-save", offsetof(struct cli, msgs_to_save)},
        {"--size-of-messages-required-to-save",
         offsetof(struct cli, size_to_save)},
        {"--preallocate-segments", offsetof(struct cli, preallocate)},
        {"--replication-factor", offsetof(struct cli, replication_factor)},
        {"--name", offsetof(struct cli, name)},
        {"--status", offsetof(struct cli, status)},
        {"--expiry", offsetof(struct cli, expiry)},
        {"--perm", offsetof(struct cli, perm)},
        {"--partition", offsetof(struct cli, partition)},
        {"--key", offsetof(struct cli, key)},
        {"--offset", offsetof(struct cli, offset)},
        {"--timestamp", offsetof(struct cli, timestamp)},
        {"--count", offsetof(struct cli, count)},
        {"--consumer", offsetof(struct cli, consumer)},
        {"--group", offsetof(struct cli, group)},
    };
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(opt, t[i].name) == 0)
            return (const char **)((char *)cl + t[i].off);
    return NULL;
}

static int
cli_parse(struct cli *cl, int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot;
        const char *val = NULL;
        char optname[64];
        const char *eq;
        if (strcmp(a, "--") == 0) {
            for (i++; i < argc; i++) {
                if (cl->npos >= VS_CLI_ARGS_MAX)
                    return -E2BIG;
                cl->pos[cl->npos++] = argv[i];
            }
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (cl->npos >= VS_CLI_ARGS_MAX)
                return -E2BIG;
            cl->pos[cl->npos++] = a;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cl->help = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            cl->json = 1;
            continue;
        }
        if (strcmp(a, "--tls") == 0) {
            cl->tls = 1;
            continue;
        }
        if (strcmp(a, "--password-stdin") == 0) {
            cl->password_stdin = 1;
            continue;
        }
        if (strcmp(a, "--clear") == 0) {
            cl->clear = 1;
            continue;
        }
        if (strcmp(a, "--first") == 0 || strcmp(a, "--last") == 0 ||
            strcmp(a, "--next") == 0 || strcmp(a, "--auto-commit") == 0 ||
            strcmp(a, "--fsync") == 0) {
            int *flag = a[2] == 'f' && a[3] == 'i' ? &cl->first
                        : a[2] == 'f'              ? &cl->fsync
                        : a[2] == 'l'              ? &cl->last
                        : a[2] == 'n'              ? &cl->next
                                                   : &cl->auto_commit;
            *flag = 1;
            continue;
        }
        /* --opt=value or --opt value */
        eq = strchr(a, '=');
        if (eq != NULL && (size_t)(eq - a) < sizeof optname) {
            memcpy(optname, a, (size_t)(eq - a));
            optname[eq - a] = '\0';
            val = eq + 1;
        } else {
            snprintf(optname, sizeof optname, "%s", a);
        }
        if (val == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vstream: option %s needs a value\n", a);
                return -EINVAL;
            }
            val = argv[++i];
        }
        if (strcmp(optname, "--header") == 0) {
            if (cl->nheaders >= VS_CLI_PERMS_MAX)
                return -E2BIG;
            cl->headers[cl->nheaders++] = val;
            continue;
        }
        if (strcmp(optname, "--option") == 0 ||
            strcmp(optname, "--stream-perm") == 0 ||
            strcmp(optname, "--topic-perm") == 0) {
            const char **arr = optname[2] == 'o'   ? cl->options
                               : optname[2] == 's' ? cl->stream_perm
                                                   : cl->topic_perm;
            int *n = optname[2] == 'o'   ? &cl->noptions
                     : optname[2] == 's' ? &cl->nstream_perm
                                         : &cl->ntopic_perm;
            if (*n >= VS_CLI_PERMS_MAX)
                return -E2BIG;
            arr[(*n)++] = val;
            continue;
        }
        if (strcmp(optname, "--addr") == 0 && cl->addr != NULL) {
            /* several --addr: one comma-separated list */
            size_t have = strlen(cl->addrs);
            if (have == 0)
                have = (size_t)snprintf(cl->addrs, sizeof cl->addrs, "%s",
                                        cl->addr);
            if (have + 1 + strlen(val) >= sizeof cl->addrs)
                return -E2BIG;
            snprintf(cl->addrs + have, sizeof cl->addrs - have, ",%s", val);
            cl->addr = cl->addrs;
            continue;
        }
        slot = cli_value_slot(cl, optname);
        if (slot == NULL) {
            fprintf(stderr, "vstream: unknown option %s\n", optname);
            return -EINVAL;
        }
        *slot = val;
    }
    return 0;
}

/* ---- topic options ---- */

static int
cli_opt_num_or_str(struct vs_wbuf *w, const char *key, const char *v)
{
    uint64_t n;
    if (cli_u64(v, &n) == 0)
        vsc_opt_u64(w, key, n);
    else
        vsc_opt_str(w, key, v);
    return 0;
}

static int
cli_topic_opts(struct cli *cl, struct vs_wbuf *w)
{
    int b, i;
    uint32_t u;
    if (cl->message_expiry)
        cli_opt_num_or_str(w, "message_expiry", cl->message_expiry);
    if (cl->max_topic_size)
        cli_opt_num_or_str(w, "max_topic_size", cl->max_topic_size);
    if (cl->compression)
        vsc_opt_str(w, "compression_algorithm", cl->compression);
    if (cl->segment_size)
        cli_opt_num_or_str(w, "segment_size", cl->segment_size);
    if (cl->enforce_fsync) {
        if (cli_bool(cl->enforce_fsync, &b) != 0)
            return -EINVAL;
        vsc_opt_bool(w, "enforce_fsync", b);
    }
    if (cl->msgs_to_save) {
        if (cli_u32(cl->msgs_to_save, &u) != 0)
            return -EINVAL;
        vsc_opt_u32(w, "messages_required_to_save", u);
    }
    if (cl->size_to_save)
        cli_opt_num_or_str(w, "size_of_messages_required_to_save",
                           cl->size_to_save);
    if (cl->preallocate) {
        if (cli_bool(cl->preallocate, &b) != 0)
            return -EINVAL;
        vsc_opt_bool(w, "preallocate_segments", b);
    }
    if (cl->replication_factor) {
        if (cli_u32(cl->replication_factor, &u) != 0 || u > 255)
            return -EINVAL;
        vsc_opt_replication_factor(w, (uint8_t)u);
    }
    for (i = 0; i < cl->noptions; i++) {
        const char *eq = strchr(cl->options[i], '=');
        char key[256];
        if (eq == NULL || eq == cl->options[i] ||
            (size_t)(eq - cl->options[i]) >= sizeof key)
            return -EINVAL;
        memcpy(key, cl->options[i], (size_t)(eq - cl->options[i]));
        key[eq - cl->options[i]] = '\0';
        vsc_opt_str(w, key, eq + 1);
    }
    return 0;
}

/* ---- permissions ---- */

static int
cli_flags(const char *list, const char *const *names, size_t n, uint8_t *flags)
{
    char buf[512];
    char *tok, *save = NULL;
    if (strlen(list) >= sizeof buf)
        return -EINVAL;
    snprintf(buf, sizeof buf, "%s", list);
    if (strcmp(buf, "all") == 0) {
        memset(flags, 1, n);
        return 0;
    }
    if (strcmp(buf, "none") == 0 || buf[0] == '\0')
        return 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < n; i++)
            if (strcmp(tok, names[i]) == 0)
                break;
        if (i == n) {
            fprintf(stderr, "vstream: unknown permission '%s'\n", tok);
            return -EINVAL;
        }
        flags[i] = 1;
    }
    return 0;
}

static struct vsc_stream_perms *
cli_stream_entry(struct vsc_perms *p, uint32_t sid)
{
    size_t i;
    for (i = 0; i < p->n_streams; i++)
        if (p->streams[i].stream_id == sid)
            return &p->streams[i];
    p->streams = realloc(p->streams, (p->n_streams + 1) * sizeof *p->streams);
    if (p->streams == NULL)
        abort();
    memset(&p->streams[p->n_streams], 0, sizeof *p->streams);
    p->streams[p->n_streams].stream_id = sid;
    return &p->streams[p->n_streams++];
}

/* Builds permissions from --perm/--stream-perm/--topic-perm. Returns 1
 * if any was given, 0 if none, -EINVAL on a bad spec. */
static int
cli_perms(struct cli *cl, struct vsc_perms *p)
{
    int i, any = 0;
    memset(p, 0, sizeof *p);
    if (cl->perm) {
        any = 1;
        if (cli_flags(cl->perm, vsc_global_perm_names, VSC_G_COUNT,
                      p->global) != 0)
            return -EINVAL;
    }
    for (i = 0; i < cl->nstream_perm; i++) {
        const char *colon = strchr(cl->stream_perm[i], ':');
        char num[16];
        uint32_t sid;
        struct vsc_stream_perms *s;
        any = 1;
        if (colon == NULL || (size_t)(colon - cl->stream_perm[i]) >= sizeof num)
            return -EINVAL;
        memcpy(num, cl->stream_perm[i], (size_t)(colon - cl->stream_perm[i]));
        num[colon - cl->stream_perm[i]] = '\0';
        if (cli_u32(num, &sid) != 0)
            return -EINVAL;
        s = cli_stream_entry(p, sid);
        if (cli_flags(colon + 1, vsc_stream_perm_names, VSC_S_COUNT,
                      s->flags) != 0)
            return -EINVAL;
    }
    for (i = 0; i < cl->ntopic_perm; i++) {
        char buf[512];
        char *a, *b2, *rest;
        uint32_t sid, tid;
        struct vsc_stream_perms *s;
        struct vsc_topic_perms *t;
        any = 1;
        if (strlen(cl->topic_perm[i]) >= sizeof buf)
            return -EINVAL;
        snprintf(buf, sizeof buf, "%s", cl->topic_perm[i]);
        a = buf;
        b2 = strchr(a, ':');
        if (b2 == NULL)
            return -EINVAL;
        *b2++ = '\0';
        rest = strchr(b2, ':');
        if (rest == NULL)
            return -EINVAL;
        *rest++ = '\0';
        if (cli_u32(a, &sid) != 0 || cli_u32(b2, &tid) != 0)
            return -EINVAL;
        s = cli_stream_entry(p, sid);
        s->topics = realloc(s->topics, (s->n_topics + 1) * sizeof *s->topics);
        if (s->topics == NULL)
            abort();
        t = &s->topics[s->n_topics++];
        memset(t, 0, sizeof *t);
        t->topic_id = tid;
        if (cli_flags(rest, vsc_topic_perm_names, VSC_T_COUNT, t->flags) != 0)
            return -EINVAL;
    }
    return any;
}

static void
print_flags(const uint8_t *flags, const char *const *names, size_t n, int json)
{
    size_t i;
    int first = 1;
    if (json)
        putchar('[');
    for (i = 0; i < n; i++) {
        if (!flags[i])
            continue;
        if (json) {
            if (!first)
                putchar(',');
            json_str(names[i]);
        } else {
            printf("%s%s", first ? "" : ",", names[i]);
        }
        first = 0;
    }
    if (json)
        putchar(']');
    else if (first)
        fputs("-", stdout);
}

static void
print_perms(const struct vsc_user *u, int json)
{
    size_t i, j;
    if (json) {
        fputs("\"permissions\":", stdout);
        if (!u->has_perms) {
            fputs("null", stdout);
            return;
        }
        fputs("{\"global\":", stdout);
        print_flags(u->perms.global, vsc_global_perm_names, VSC_G_COUNT, 1);
        fputs(",\"streams\":[", stdout);
        for (i = 0; i < u->perms.n_streams; i++) {
            const struct vsc_stream_perms *s = &u->perms.streams[i];
            printf("%s{\"stream_id\":%u,\"permissions\":", i ? "," : "",
                   s->stream_id);
            print_flags(s->flags, vsc_stream_perm_names, VSC_S_COUNT, 1);
            fputs(",\"topics\":[", stdout);
            for (j = 0; j < s->n_topics; j++) {
                printf("%s{\"topic_id\":%u,\"permissions\":", j ? "," : "",
                       s->topics[j].topic_id);
                print_flags(s->topics[j].flags, vsc_topic_perm_names,
                            VSC_T_COUNT, 1);
                putchar('}');
            }
            fputs("]}", stdout);
        }
        fputs("]}", stdout);
        return;
    }
    if (!u->has_perms) {
        printf("permissions: none\n");
        return;
    }
    printf("global:      ");
    print_flags(u->perms.global, vsc_global_perm_names, VSC_G_COUNT, 0);
    putchar('\n');
    for (i = 0; i < u->perms.n_streams; i++) {
        const struct vsc_stream_perms *s = &u->perms.streams[i];
        printf("stream %-5u ", s->stream_id);
        print_flags(s->flags, vsc_stream_perm_names, VSC_S_COUNT, 0);
        putchar('\n');
        for (j = 0; j < s->n_topics; j++) {
            printf("  topic %-5u ", s->topics[j].topic_id);
            print_flags(s->topics[j].flags, vsc_topic_perm_names, VSC_T_COUNT,
                        0);
            putchar('\n');
        }
    }
}

/* ---- record printers ---- */

static const char *
user_status(uint8_t s)
{
    return s == 2 ? "inactive" : "active";
}

static void
print_stream_json(const struct vsc_stream *s)
{
    printf("{\"id\":%u,", s->id);
    json_kv_str("name", s->name, 1);
    printf("\"created_at\":%" PRIu64 ",\"topics_count\":%u,"
           "\"size_bytes\":%" PRIu64 ",\"messages_count\":%" PRIu64 "}",
           s->created_at, s->topics_count, s->size_bytes, s->messages_count);
}

/* The replica set entry of partition `id`, or NULL. */
static const struct vsc_partition_replicas *
cli_part_replicas(const struct vsc_topic_replicas *rs, uint32_t id)
{
    for (size_t i = 0; rs != NULL && i < rs->n_partitions; i++)
        if (rs->partitions[i].id == id)
            return &rs->partitions[i];
    return NULL;
}

/* "0,1,2" into buf. */
static const char *
cli_replica_list(const struct vsc_partition_replicas *p, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (uint8_t k = 0; k < p->count && at + 5 < n; k++)
        at += (size_t)snprintf(buf + at, n - at, "%s%u", k ? "," : "",
                               p->replicas[k]);
    return buf;
}

/* rs: the topic's replica sets (GetTopicReplicas), or NULL. */
static void
print_topic_json(const struct vsc_topic *t, int with_partitions,
                 const struct vsc_topic_replicas *rs)
{
    size_t i;
    printf("{\"id\":%u,", t->id);
    json_kv_str("name", t->name, 1);
    printf("\"created_at\":%" PRIu64 ",\"partitions_count\":%u,"
           "\"message_expiry\":%" PRIu64 ",\"compression\":\"%s\","
           "\"max_topic_size\":%" PRIu64 ",\"size_bytes\":%" PRIu64
           ",\"messages_count\":%" PRIu64,
           t->created_at, t->partitions_count, t->message_expiry,
           t->compression == 2 ? "gzip" : "none", t->max_topic_size,
           t->size_bytes, t->messages_count);
    if (rs != NULL)
        printf(",\"replication_factor\":%u", rs->replication_factor);
    if (with_partitions) {
        fputs(",\"partitions\":[", stdout);
        for (i = 0; i < t->n_partitions; i++) {
            printf("%s{\"id\":%u,\"segments_count\":%u,"
                   "\"current_offset\":%" PRIu64 ",\"size_bytes\":%" PRIu64
                   ",\"messages_count\":%" PRIu64,
                   i ? "," : "", t->partitions[i].id,
                   t->partitions[i].segments_count,
                   t->partitions[i].current_offset, t->partitions[i].size_bytes,
                   t->partitions[i].messages_count);
            const struct vsc_partition_replicas *pr =
                cli_part_replicas(rs, t->partitions[i].id);
            if (pr != NULL) {
                char list[160];
                printf(",\"replicas\":[%s],\"primary\":",
                       cli_replica_list(pr, list, sizeof list));
                if (pr->primary == 255)
                    fputs("null", stdout);
                else
                    printf("%u", pr->primary);
            }
            putchar('}');
        }
        putchar(']');
    }
    putchar('}');
}

static void
print_u64_or(uint64_t v, const char *max_word)
{
    if (v == UINT64_MAX)
        printf("%s", max_word);
    else if (v == 0)
        printf("default");
    else
        printf("%" PRIu64, v);
}

static void
print_topic_row(const struct vsc_topic *t)
{
    printf("%-6u %-24s %-10u %-6s ", t->id, t->name, t->partitions_count,
           t->compression == 2 ? "gzip" : "none");
    print_u64_or(t->message_expiry, "never");
    fputs("  ", stdout);
    print_u64_or(t->max_topic_size, "unlimited");
    putchar('\n');
}

static void
print_client_json(const struct vsc_client_info *ci)
{
    printf("{\"client_id\":%u,\"user_id\":", ci->client_id);
    if (ci->user_id == UINT32_MAX)
        fputs("null", stdout);
    else
        printf("%u", ci->user_id);
    printf(",\"transport\":\"%s\",", ci->transport == 1   ? "tcp"
                                     : ci->transport == 2 ? "quic"
                                                          : "other");
    json_kv_str("address", ci->address, 1);
    printf("\"consumer_groups_count\":%u}", ci->groups_count);
}

/* ---- connection ---- */

static int
cli_read_password_stdin(struct cli *cl)
{
    size_t n;
    if (fgets(cl->pwbuf, sizeof cl->pwbuf, stdin) == NULL)
        return -EINVAL;
    n = strlen(cl->pwbuf);
    while (n > 0 && (cl->pwbuf[n - 1] == '\n' || cl->pwbuf[n - 1] == '\r'))
        cl->pwbuf[--n] = '\0';
    cl->password = cl->pwbuf;
    return 0;
}

static int
cli_open(struct cli *cl, int login)
{
    struct vsc_opts o;
    int rc;
    char first[256];
    memset(&o, 0, sizeof o);
    const char *comma = strchr(cl->addr, ',');
    size_t n = comma ? (size_t)(comma - cl->addr) : strlen(cl->addr);
    if (n >= sizeof first)
        n = sizeof first - 1;
    memcpy(first, cl->addr, n);
    first[n] = '\0';
    o.addr = first;
    o.more_addrs = comma ? comma + 1 : NULL;
    o.no_follow = cl->no_follow;
    o.tls = cl->tls || cl->tls_ca != NULL || cl->tls_server_name != NULL;
    o.tls_ca_file = cl->tls_ca;
    o.tls_server_name = cl->tls_server_name;
    cl->c = vsc_create(&o);
    if (cl->c == NULL)
        return cli_fail(cl, -ENOMEM);
    /* the first node that answers */
    rc = vsc_connect(cl->c);
    for (const char *p = o.more_addrs; rc != 0 && p != NULL && *p;) {
        const char *c2 = strchr(p, ',');
        size_t k = c2 ? (size_t)(c2 - p) : strlen(p);
        char one[256];
        if (k > 0 && k < sizeof one) {
            memcpy(one, p, k);
            one[k] = '\0';
            vsc_set_addr(cl->c, one);
            rc = vsc_connect(cl->c);
        }
        p = c2 ? c2 + 1 : NULL;
    }
    if (rc != 0)
        return cli_fail(cl, rc);
    if (!login)
        return 0;
    if (cl->password == NULL) {
        fprintf(stderr, "vstream: Unauthenticated (40): no password (use "
                        "--password-stdin, VSTREAM_PASSWORD or "
                        "--password)\n");
        return CLI_FAIL;
    }
    rc = vsc_login(cl->c, cl->user, cl->password, NULL);
    if (rc != 0)
        return cli_fail(cl, rc);
    return 0;
}

/* ---- commands ---- */

static int
cmd_ping(struct cli *cl)
{
    int rc = cli_open(cl, 0);
    if (rc != 0)
        return rc;
    rc = vsc_ping(cl->c);
    if (rc != 0)
        return cli_fail(cl, rc);
    if (cl->json)
        printf("{\"ping\":\"pong\"}\n");
    else
        printf("pong\n");
    return CLI_OK;
}

static int
cmd_me(struct cli *cl)
{
    struct vsc_client_info ci;
    int rc = cli_open(cl, 1);
    if (rc != 0)
        return rc;
    rc = vsc_me(cl->c, &ci);
    if (rc != 0)
        return cli_fail(cl, rc);
    if (cl->json) {
        print_client_json(&ci);
        putchar('\n');
    } else {
        printf("client_id:  %u\nuser_id:    %u\nuser:       %s\n"
               "address:    %s\ntransport:  %s\n",
               ci.client_id, ci.user_id, cl->user, ci.address,
               ci.transport == 1 ? "tcp" : "other");
    }
    return CLI_OK;
}

static int
cmd_stats(struct cli *cl)
{
    struct vsc_stats s;
    int rc = cli_open(cl, 1);
    if (rc != 0)
        return rc;
    rc = vsc_stats(cl->c, &s);
    if (rc != 0)
        return cli_fail(cl, rc);
    char *metrics = NULL;
    if (cl->http_addr != NULL && cl->http_addr[0] != '\0') {
        char err[512];
        if (cli_metrics_fetch(cl->http_addr, 10000, &metrics, err,
                              sizeof err) != 0) {
            fprintf(stderr, "vstream: Error (1): %s\n", err);
            return CLI_FAIL;
        }
    }
    if (cl->json) {
        printf("{\"process_id\":%u,\"cpu_usage\":%.2f,"
               "\"memory_usage\":%" PRIu64 ",\"run_time\":%" PRIu64
               ",\"start_time\":%" PRIu64 ",\"streams_count\":%u,"
               "\"topics_count\":%u,\"partitions_count\":%u,"
               "\"segments_count\":%u,\"messages_count\":%" PRIu64
               ",\"clients_count\":%u,\"consumer_groups_count\":%u,",
               s.process_id, (double)s.cpu_usage, s.memory_usage, s.run_time,
               s.start_time, s.streams_count, s.topics_count,
               s.partitions_count, s.segments_count, s.messages_count,
               s.clients_count, s.consumer_groups_count);
        json_kv_str("hostname", s.hostname, 1);
        json_kv_str("os_name", s.os_name, 1);
        json_kv_str("os_version", s.os_version, 1);
        json_kv_str("kernel_version", s.kernel_version, 0);
        if (metrics != NULL) {
            printf(",\"metrics\":{");
            cli_metrics_print_json(metrics, stdout);
            printf("}");
        }
        printf("}\n");
    } else {
        printf("process_id:        %u\nmemory_usage:      %" PRIu64
               "\nrun_time_us:       %" PRIu64 "\nstreams:           %u\n"
               "topics:            %u\npartitions:        %u\n"
               "segments:          %u\nmessages:          %" PRIu64
               "\nclients:           %u\nconsumer_groups:   %u\n"
               "hostname:          %s\nos:                %s %s\n"
               "kernel:            %s\n",
               s.process_id, s.memory_usage, s.run_time, s.streams_count,
               s.topics_count, s.partitions_count, s.segments_count,
               s.messages_count, s.clients_count, s.consumer_groups_count,
               s.hostname, s.os_name, s.os_version, s.kernel_version);
        if (metrics != NULL) {
            printf("metrics:\n");
            cli_metrics_print_table(metrics, stdout);
        }
    }
    free(metrics);
    return CLI_OK;
}

/* A logged-in handle on one node (no leader following), or NULL with
 * *rc set. */
static struct vsc *
cli_node_login(struct cli *cl, const char *addr, int *rc)
{
    struct vsc_opts o;
    memset(&o, 0, sizeof o);
    o.addr = addr;
    o.connect_timeout_ms = 2000;
    o.io_timeout_ms = 3000;
    o.no_follow = 1;
    struct vsc *c = vsc_create(&o);
    if (c == NULL) {
        *rc = -ENOMEM;
        return NULL;
    }
    *rc = vsc_connect(c);
    if (*rc == 0)
        *rc = vsc_login(c, cl->user, cl->password, NULL);
    if (*rc != 0) {
        vsc_destroy(c);
        return NULL;
    }
    return c;
}

static const char *
cli_link_name(uint8_t link)
{
    static const char *const names[] = {"down", "connecting", "handshake",
                                        "up"};
    return link == 255 ? "self" : link < 4 ? names[link] : "unknown";
}

static const char *
cli_xfer_stage(uint8_t stage)
{
    static const char *const names[] = {"idle", "awaiting-target", "fetching",
                                        "installing"};
    return stage < 4 ? names[stage] : "unknown";
}

/* The name of replica `peer` in the cluster metadata (NULL: none). */
static const char *
cli_xfer_peer(const struct vsc_cluster *c, uint8_t peer)
{
    return peer < c->n_nodes ? c->nodes[peer].name : NULL;
}

/* The TRANSFER column of a node (USAGE_CLUSTER). */
static void
cli_xfer_text(const struct vsc_cluster *c, const struct vsc_replica_status *s,
              char *out, size_t cap)
{
    if (s == NULL || !s->has_xfer) {
        snprintf(out, cap, "-");
        return;
    }
    const char *peer = cli_xfer_peer(c, s->xfer.peer);
    size_t n;
    if (s->xfer.stage == 0)
        n = (size_t)snprintf(out, cap, "idle");
    else
        n = (size_t)snprintf(out, cap, "%s %" PRIu64 "/%" PRIu64 " B from %s",
                             cli_xfer_stage(s->xfer.stage), s->xfer.fetched,
                             s->xfer.total, peer != NULL ? peer : "?");
    if (n >= cap || s->xfer.last[0] == '\0')
        return;
    if (s->xfer.completed > 0 && strcmp(s->xfer.last, "installed") == 0)
        snprintf(out + n, cap - n,
                 "; last: installed %" PRIu64 " B in %" PRIu64 " ms",
                 s->xfer.last_bytes, s->xfer.last_ms);
    else
        snprintf(out + n, cap - n, "; last: %s", s->xfer.last);
}

static void
cli_xfer_json(const struct vsc_cluster *c, const struct vsc_replica_status *s)
{
    if (s == NULL || !s->has_xfer) {
        printf(",\"transfer_stage\":null,\"transfer_peer\":null,"
               "\"transfer_fetched\":null,\"transfer_total\":null,"
               "\"transfer_sessions\":null,\"transfer_completed\":null,"
               "\"transfer_abandoned\":null,\"transfer_last\":null,"
               "\"transfer_last_bytes\":null,\"transfer_last_ms\":null");
        return;
    }
    const char *peer =
        s->xfer.stage != 0 ? cli_xfer_peer(c, s->xfer.peer) : NULL;
    printf(",\"transfer_stage\":\"%s\",\"transfer_peer\":",
           cli_xfer_stage(s->xfer.stage));
    if (peer != NULL)
        json_str(peer);
    else
        fputs("null", stdout);
    printf(",\"transfer_fetched\":%" PRIu64 ",\"transfer_total\":%" PRIu64
           ",\"transfer_sessions\":%" PRIu64 ",\"transfer_completed\":%" PRIu64
           ",\"transfer_abandoned\":%" PRIu64 ",\"transfer_last\":",
           s->xfer.fetched, s->xfer.total, s->xfer.sessions, s->xfer.completed,
           s->xfer.abandoned);
    json_str(s->xfer.last);
    printf(",\"transfer_last_bytes\":%" PRIu64 ",\"transfer_last_ms\":%" PRIu64,
           s->xfer.last_bytes, s->xfer.last_ms);
}

/* cluster: the metadata as Iggy's SDKs read it, and on a cluster each
 * node's own account (USAGE_CLUSTER defines every column). Each node's
 * numbers come from that node itself (GetReplicaStatus on a connection
 * of its own), the link states from the node the CLI is connected to.
 * LAG is measured against the highest commit_max any reachable node
 * reports: the newest op the CLI can prove committed. */
static int
cmd_cluster(struct cli *cl)
{
    static const char *const roles[] = {"leader", "follower"};
    static const char *const statuses[] = {"healthy", "starting", "stopping",
                                           "unreachable", "maintenance"};
    static const char *const vsr_states[] = {"normal", "view_change",
                                             "recovering"};
    struct vsc_cluster c;
    size_t i;
    int rc = cli_open(cl, 1);
    if (rc != 0)
        return rc;
    rc = vsc_cluster(cl->c, &c);
    if (rc != 0)
        return cli_fail(cl, rc);
    struct vsc_replica_status here;
    memset(&here, 0, sizeof here);
    (void)vsc_replica_status(cl->c, &here); /* count 0: one node */
    int clustered = here.count > 1;
    struct vsc_replica_status *ns = NULL;
    int *have = NULL;
    uint64_t cluster_commit = 0;
    if (clustered && c.n_nodes > 0) {
        ns = calloc(c.n_nodes, sizeof *ns);
        have = calloc(c.n_nodes, sizeof *have);
        if (ns == NULL || have == NULL) {
            free(ns);
            free(have);
            vsc_cluster_fini(&c);
            return cli_fail(cl, -ENOMEM);
        }
    }
    /* Log in everywhere first (each login is an op of the cluster), then
     * ask every node back to back, so the numbers are one snapshot. */
    struct vsc **nc =
        clustered && c.n_nodes > 0 ? calloc(c.n_nodes, sizeof *nc) : NULL;
    for (i = 0; nc != NULL && i < c.n_nodes; i++) {
        const struct vsc_node *n = &c.nodes[i];
        char addr[300];
        snprintf(addr, sizeof addr, strchr(n->ip, ':') ? "[%s]:%u" : "%s:%u",
                 n->ip, n->tcp);
        int lrc;
        if (n->tcp != 0 && cl->password != NULL)
            nc[i] = cli_node_login(cl, addr, &lrc);
    }
    for (i = 0; nc != NULL && i < c.n_nodes; i++)
        have[i] = nc[i] != NULL && vsc_replica_status(nc[i], &ns[i]) == 0 &&
                  ns[i].count > 1;
    for (i = 0; nc != NULL && i < c.n_nodes; i++) {
        vsc_destroy(nc[i]);
        if (have[i] && ns[i].commit_max > cluster_commit)
            cluster_commit = ns[i].commit_max;
        if (have[i] && ns[i].commit_min > cluster_commit)
            cluster_commit = ns[i].commit_min;
    }
    free(nc);
    if (cl->json) {
        putchar('{');
        json_kv_str("name", c.name, 1);
        printf("\"connected\":\"%s\",", vsc_addr(cl->c));
        if (clustered)
            printf("\"cluster_commit\":%" PRIu64 ",", cluster_commit);
        fputs("\"nodes\":[", stdout);
    } else {
        printf("cluster: %s (connected to %s)\n", c.name, vsc_addr(cl->c));
        if (clustered)
            printf("%-12s %-22s %-9s %-11s %-11s %-6s %-8s %-8s %-8s %-6s "
                   "%-10s %-10s %s\n",
                   "NODE", "CLIENT_ADDRESS", "ROLE", "STATUS", "VSR", "VIEW",
                   "LOG_VIEW", "OP", "COMMIT", "LAG", "CHECKPOINT", "LINK",
                   "TRANSFER");
        else
            printf("%-20s %-16s %-6s %-6s %-6s %-6s %-9s %s\n", "NODE", "IP",
                   "TCP", "QUIC", "HTTP", "WS", "ROLE", "STATUS");
    }
    for (i = 0; i < c.n_nodes; i++) {
        const struct vsc_node *n = &c.nodes[i];
        const char *role = n->role < 2 ? roles[n->role] : "unknown";
        const char *st = n->status < 5 ? statuses[n->status] : "unknown";
        char addr[300];
        snprintf(addr, sizeof addr, strchr(n->ip, ':') ? "[%s]:%u" : "%s:%u",
                 n->ip, n->tcp);
        int h = clustered && have[i];
        const struct vsc_replica_status *s = h ? &ns[i] : NULL;
        const char *vsr =
            h ? (s->status < 3 ? vsr_states[s->status] : "unknown") : "-";
        uint64_t lag = h && cluster_commit > s->commit_min
                           ? cluster_commit - s->commit_min
                           : 0;
        const char *link = clustered && i < here.count
                               ? cli_link_name(here.nodes[i].link)
                               : "-";
        if (cl->json) {
            printf("%s{", i ? "," : "");
            json_kv_str("name", n->name, 1);
            json_kv_str("ip", n->ip, 1);
            printf("\"tcp\":%u,\"quic\":%u,\"http\":%u,\"websocket\":%u,"
                   "\"role\":\"%s\",\"status\":\"%s\"",
                   n->tcp, n->quic, n->http, n->websocket, role, st);
            if (clustered) {
                printf(",\"client_address\":\"%s\",\"link\":\"%s\"", addr,
                       link);
                if (h)
                    printf(",\"replica\":%u,\"vsr_status\":\"%s\",\"view\":%u,"
                           "\"log_view\":%u,\"op\":%" PRIu64
                           ",\"commit\":%" PRIu64 ",\"commit_max\":%" PRIu64
                           ",\"lag\":%" PRIu64 ",\"checkpoint\":%" PRIu64,
                           s->self, vsr, s->view, s->log_view, s->op,
                           s->commit_min, s->commit_max, lag, s->checkpoint_op);
                else
                    printf(",\"replica\":null,\"vsr_status\":null,"
                           "\"view\":null,\"log_view\":null,\"op\":null,"
                           "\"commit\":null,\"commit_max\":null,\"lag\":null,"
                           "\"checkpoint\":null");
                cli_xfer_json(&c, s);
            }
            putchar('}');
        } else if (clustered) {
            char v[16] = "-", lv[16] = "-", op[24] = "-", cm[24] = "-",
                 lg[24] = "-", ck[24] = "-";
            if (h) {
                snprintf(v, sizeof v, "%u", s->view);
                snprintf(lv, sizeof lv, "%u", s->log_view);
                snprintf(op, sizeof op, "%" PRIu64, s->op);
                snprintf(cm, sizeof cm, "%" PRIu64, s->commit_min);
                snprintf(lg, sizeof lg, "%" PRIu64, lag);
                snprintf(ck, sizeof ck, "%" PRIu64, s->checkpoint_op);
            }
            char xf[256];
            cli_xfer_text(&c, s, xf, sizeof xf);
            printf("%-12s %-22s %-9s %-11s %-11s %-6s %-8s %-8s %-8s %-6s "
                   "%-10s %-10s %s\n",
                   n->name, addr, role, st, vsr, v, lv, op, cm, lg, ck, link,
                   xf);
        } else {
            printf("%-20s %-16s %-6u %-6u %-6u %-6u %-9s %s\n", n->name, n->ip,
                   n->tcp, n->quic, n->http, n->websocket, role, st);
        }
    }
    if (cl->json)
        printf("]}\n");
    free(ns);
    free(have);
    vsc_cluster_fini(&c);
    return CLI_OK;
}

static int
cmd_stream(struct cli *cl)
{
    const char *sub = cl->npos > 1 ? cl->pos[1] : NULL;
    struct vsc_id id;
    int rc, found;
    if (cl->help || sub == NULL)
        return cl->help ? (fputs(USAGE_STREAM, stdout), CLI_OK)
                        : cli_usage(USAGE_STREAM, "stream: missing action");
#define NEED(n)                                                                \
    do {                                                                       \
        if (cl->npos != (n))                                                   \
            return cli_usage(USAGE_STREAM, "stream: wrong arguments");         \
    } while (0)
    if (strcmp(sub, "create") == 0) {
        struct vsc_stream s;
        NEED(3);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_stream_create(cl->c, cl->pos[2], &s);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            print_stream_json(&s);
            putchar('\n');
        } else {
            printf("created stream %u: %s\n", s.id, s.name);
        }
        return CLI_OK;
    }
    if (strcmp(sub, "list") == 0) {
        struct vsc_stream *v;
        size_t n, i;
        NEED(2);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_stream_list(cl->c, &v, &n);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            fputs("{\"streams\":[", stdout);
            for (i = 0; i < n; i++) {
                if (i)
                    putchar(',');
                print_stream_json(&v[i]);
            }
            printf("]}\n");
        } else {
            printf("%-6s %-32s %-7s %-12s %s\n", "ID", "NAME", "TOPICS", "SIZE",
                   "MESSAGES");
            for (i = 0; i < n; i++)
                printf("%-6u %-32s %-7u %-12" PRIu64 " %" PRIu64 "\n", v[i].id,
                       v[i].name, v[i].topics_count, v[i].size_bytes,
                       v[i].messages_count);
        }
        free(v);
        return CLI_OK;
    }
    if (strcmp(sub, "get") == 0) {
        struct vsc_stream s;
        size_t i;
        NEED(3);
        id = vsc_id_parse(cl->pos[2]);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_stream_get(cl->c, &id, &s, &found);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (!found)
            return cli_not_found(VS_E_STREAM_ID_NOT_FOUND, "stream");
        if (cl->json) {
            printf("{\"id\":%u,", s.id);
            json_kv_str("name", s.name, 1);
            printf("\"created_at\":%" PRIu64 ",\"topics_count\":%u,"
                   "\"size_bytes\":%" PRIu64 ",\"messages_count\":%" PRIu64
                   ",\"topics\":[",
                   s.created_at, s.topics_count, s.size_bytes,
                   s.messages_count);
            for (i = 0; i < s.n_topics; i++) {
                if (i)
                    putchar(',');
                print_topic_json(&s.topics[i], 0, NULL);
            }
            printf("]}\n");
        } else {
            printf("id:        %u\nname:      %s\ncreated:   %" PRIu64
                   "\ntopics:    %u\nsize:      %" PRIu64
                   "\nmessages:  %" PRIu64 "\n",
                   s.id, s.name, s.created_at, s.topics_count, s.size_bytes,
                   s.messages_count);
            if (s.n_topics > 0) {
                printf("\n%-6s %-24s %-10s %-6s %s\n", "ID", "TOPIC", "PARTS",
                       "COMPR", "EXPIRY  MAX_SIZE");
                for (i = 0; i < s.n_topics; i++)
                    print_topic_row(&s.topics[i]);
            }
        }
        vsc_stream_fini(&s);
        return CLI_OK;
    }
    if (strcmp(sub, "update") == 0) {
        NEED(4);
        id = vsc_id_parse(cl->pos[2]);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_stream_update(cl->c, &id, cl->pos[3]);
        if (rc != 0)
            return cli_fail(cl, rc);
    } else if (strcmp(sub, "delete") == 0 || strcmp(sub, "purge") == 0) {
        NEED(3);
        id = vsc_id_parse(cl->pos[2]);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = sub[0] == 'd' ? vsc_stream_delete(cl->c, &id)
                           : vsc_stream_purge(cl->c, &id);
        if (rc != 0)
            return cli_fail(cl, rc);
    } else {
        return cli_usage(USAGE_STREAM, "stream: unknown action");
    }
#undef NEED
    if (cl->json)
        printf("{\"ok\":true}\n");
    else
        printf("ok\n");
    return CLI_OK;
}

static int
cmd_topic(struct cli *cl)
{
    const char *sub = cl->npos > 1 ? cl->pos[1] : NULL;
    struct vsc_id sid, tid;
    struct vs_wbuf opts;
    int rc, found;
    if (cl->help || sub == NULL)
        return cl->help ? (fputs(USAGE_TOPIC, stdout), CLI_OK)
                        : cli_usage(USAGE_TOPIC, "topic: missing action");
#define NEED(n)                                                                \
    do {                                                                       \
        if (cl->npos != (n))                                                   \
            return cli_usage(USAGE_TOPIC, "topic: wrong arguments");           \
    } while (0)
    if (cl->npos > 2)
        sid = vsc_id_parse(cl->pos[2]);
    if (cl->npos > 3)
        tid = vsc_id_parse(cl->pos[3]);
    if (strcmp(sub, "create") == 0 || strcmp(sub, "update") == 0) {
        int create = sub[0] == 'c';
        uint32_t parts = 1;
        struct vsc_topic t;
        NEED(create ? 4 : 5);
        if (cl->partitions && cli_u32(cl->partitions, &parts) != 0)
            return cli_usage(USAGE_TOPIC, "topic: bad --partitions");
        vs_wbuf_init(&opts);
        if (cli_topic_opts(cl, &opts) != 0) {
            vs_wbuf_fini(&opts);
            return cli_usage(USAGE_TOPIC, "topic: bad option value");
        }
        if ((rc = cli_open(cl, 1)) != 0) {
            vs_wbuf_fini(&opts);
            return rc;
        }
        if (create)
            rc = vsc_topic_create(cl->c, &sid, parts, cl->pos[3], opts.data,
                                  opts.len, &t);
        else
            rc = vsc_topic_update(cl->c, &sid, &tid, cl->pos[4], opts.data,
                                  opts.len);
        vs_wbuf_fini(&opts);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (!create) {
            printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
            return CLI_OK;
        }
        if (cl->json) {
            print_topic_json(&t, 1, NULL);
            putchar('\n');
        } else {
            printf("created topic %u: %s (%u partitions)\n", t.id, t.name,
                   t.partitions_count);
        }
        vsc_topic_fini(&t);
        return CLI_OK;
    }
    if (strcmp(sub, "list") == 0) {
        struct vsc_topic *v;
        size_t n, i;
        NEED(3);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_topic_list(cl->c, &sid, &v, &n);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            fputs("{\"topics\":[", stdout);
            for (i = 0; i < n; i++) {
                if (i)
                    putchar(',');
                print_topic_json(&v[i], 0, NULL);
            }
            printf("]}\n");
        } else {
            printf("%-6s %-24s %-10s %-6s %s\n", "ID", "NAME", "PARTS", "COMPR",
                   "EXPIRY  MAX_SIZE");
            for (i = 0; i < n; i++)
                print_topic_row(&v[i]);
        }
        for (i = 0; i < n; i++)
            vsc_topic_fini(&v[i]);
        free(v);
        return CLI_OK;
    }
    if (strcmp(sub, "get") == 0) {
        struct vsc_topic t;
        size_t i;
        NEED(4);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_topic_get(cl->c, &sid, &tid, &t, &found);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (!found)
            return cli_not_found(VS_E_TOPIC_ID_NOT_FOUND, "topic");
        /* replica sets: vstream's own read (an Iggy server refuses it;
         * then they are left out) */
        struct vsc_topic_replicas rs;
        int have_rs = 0;
        if (vsc_topic_replicas(cl->c, &sid, &tid, &rs, &have_rs) != 0)
            have_rs = 0;
        if (cl->json) {
            print_topic_json(&t, 1, have_rs ? &rs : NULL);
            putchar('\n');
        } else {
            printf("%-6s %-24s %-10s %-6s %s\n", "ID", "NAME", "PARTS", "COMPR",
                   "EXPIRY  MAX_SIZE");
            print_topic_row(&t);
            if (have_rs)
                printf("replication factor: %u (of %u nodes)\n",
                       rs.replication_factor, rs.nodes);
            printf("\n%-10s %-10s %-14s %-12s %-10s %-10s %s\n", "PARTITION",
                   "SEGMENTS", "OFFSET", "SIZE", "MESSAGES", "REPLICAS",
                   "PRIMARY(VIEW 0)");
            for (i = 0; i < t.n_partitions; i++) {
                const struct vsc_partition_replicas *pr =
                    cli_part_replicas(have_rs ? &rs : NULL, t.partitions[i].id);
                char list[160] = "-", prim[8] = "-";
                if (pr != NULL) {
                    cli_replica_list(pr, list, sizeof list);
                    if (pr->primary != 255)
                        snprintf(prim, sizeof prim, "%u", pr->primary);
                }
                printf("%-10u %-10u %-14" PRIu64 " %-12" PRIu64 " %-10" PRIu64
                       " %-10s %s\n",
                       t.partitions[i].id, t.partitions[i].segments_count,
                       t.partitions[i].current_offset,
                       t.partitions[i].size_bytes,
                       t.partitions[i].messages_count, list, prim);
            }
        }
        if (have_rs)
            vsc_topic_replicas_fini(&rs);
        vsc_topic_fini(&t);
        return CLI_OK;
    }
    if (strcmp(sub, "delete") == 0 || strcmp(sub, "purge") == 0) {
        NEED(4);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = sub[0] == 'd' ? vsc_topic_delete(cl->c, &sid, &tid)
                           : vsc_topic_purge(cl->c, &sid, &tid);
        if (rc != 0)
            return cli_fail(cl, rc);
        printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
        return CLI_OK;
    }
#undef NEED
    return cli_usage(USAGE_TOPIC, "topic: unknown action");
}

static int
cmd_partition(struct cli *cl)
{
    const char *sub = cl->npos > 1 ? cl->pos[1] : NULL;
    struct vsc_id sid, tid;
    uint32_t count;
    int rc;
    if (cl->help || sub == NULL)
        return cl->help
                   ? (fputs(USAGE_PARTITION, stdout), CLI_OK)
                   : cli_usage(USAGE_PARTITION, "partition: missing action");
    if ((strcmp(sub, "create") != 0 && strcmp(sub, "delete") != 0))
        return cli_usage(USAGE_PARTITION, "partition: unknown action");
    if (cl->npos != 5 || cli_u32(cl->pos[4], &count) != 0)
        return cli_usage(USAGE_PARTITION, "partition: wrong arguments");
    sid = vsc_id_parse(cl->pos[2]);
    tid = vsc_id_parse(cl->pos[3]);
    if ((rc = cli_open(cl, 1)) != 0)
        return rc;
    rc = sub[0] == 'c' ? vsc_partitions_create(cl->c, &sid, &tid, count)
                       : vsc_partitions_delete(cl->c, &sid, &tid, count);
    if (rc != 0)
        return cli_fail(cl, rc);
    printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
    return CLI_OK;
}

static int
cli_status(const char *s, uint8_t *out)
{
    if (s == NULL)
        return 0;
    if (strcmp(s, "active") == 0)
        *out = 1;
    else if (strcmp(s, "inactive") == 0)
        *out = 2;
    else
        return -EINVAL;
    return 0;
}

static void
cli_gen_password(char out[33])
{
    static const char alpha[] =
        "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    uint8_t rnd[32];
    size_t i;
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        abort();
    for (i = 0; i < 32; i++)
        out[i] = alpha[rnd[i] % (sizeof alpha - 1)];
    out[32] = '\0';
}

static void
print_user(const struct vsc_user *u, int json, int details)
{
    if (json) {
        printf("{\"id\":%u,", u->id);
        json_kv_str("name", u->name, 1);
        printf("\"status\":\"%s\",\"created_at\":%" PRIu64,
               user_status(u->status), u->created_at);
        if (details) {
            putchar(',');
            print_perms(u, 1);
        }
        putchar('}');
        return;
    }
    printf("id:          %u\nname:        %s\nstatus:      %s\n"
           "created:     %" PRIu64 "\n",
           u->id, u->name, user_status(u->status), u->created_at);
    if (details)
        print_perms(u, 0);
}

static int
cmd_user(struct cli *cl)
{
    const char *sub = cl->npos > 1 ? cl->pos[1] : NULL;
    struct vsc_id id;
    struct vsc_perms perms;
    uint8_t status = 0;
    int rc, found, has;
    if (cl->help || sub == NULL)
        return cl->help ? (fputs(USAGE_USER, stdout), CLI_OK)
                        : cli_usage(USAGE_USER, "user: missing action");
    if (cl->npos > 2)
        id = vsc_id_parse(cl->pos[2]);
    if (cli_status(cl->status, &status) != 0)
        return cli_usage(USAGE_USER, "user: --status is active or inactive");
    if (strcmp(sub, "create") == 0) {
        char gen[33];
        const char *pw;
        struct vsc_user u;
        if (cl->npos != 3 && cl->npos != 4)
            return cli_usage(USAGE_USER, "user: wrong arguments");
        has = cli_perms(cl, &perms);
        if (has < 0) {
            vsc_perms_fini(&perms);
            return cli_usage(USAGE_USER, "user: bad permissions");
        }
        if (cl->npos == 4) {
            pw = cl->pos[3];
        } else {
            cli_gen_password(gen);
            pw = gen;
        }
        if ((rc = cli_open(cl, 1)) != 0) {
            vsc_perms_fini(&perms);
            return rc;
        }
        rc = vsc_user_create(cl->c, cl->pos[2], pw, status ? status : 1,
                             has ? &perms : NULL, &u);
        vsc_perms_fini(&perms);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            printf("{\"id\":%u,", u.id);
            json_kv_str("name", u.name, 1);
            if (cl->npos == 3)
                json_kv_str("password", gen, 1);
            printf("\"status\":\"%s\"}\n", user_status(u.status));
        } else {
            printf("created user %u: %s\n", u.id, u.name);
            if (cl->npos == 3)
                printf("password: %s\n", gen);
        }
        vsc_user_fini(&u);
        return CLI_OK;
    }
    if (strcmp(sub, "list") == 0) {
        struct vsc_user *v;
        size_t n, i;
        if (cl->npos != 2)
            return cli_usage(USAGE_USER, "user: wrong arguments");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_user_list(cl->c, &v, &n);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            fputs("{\"users\":[", stdout);
            for (i = 0; i < n; i++) {
                if (i)
                    putchar(',');
                print_user(&v[i], 1, 0);
            }
            printf("]}\n");
        } else {
            printf("%-6s %-32s %-9s %s\n", "ID", "NAME", "STATUS", "CREATED");
            for (i = 0; i < n; i++)
                printf("%-6u %-32s %-9s %" PRIu64 "\n", v[i].id, v[i].name,
                       user_status(v[i].status), v[i].created_at);
        }
        free(v);
        return CLI_OK;
    }
    if (strcmp(sub, "get") == 0) {
        struct vsc_user u;
        if (cl->npos != 3)
            return cli_usage(USAGE_USER, "user: wrong arguments");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_user_get(cl->c, &id, &u, &found);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (!found)
            return cli_not_found(VS_E_RESOURCE_NOT_FOUND, "user");
        print_user(&u, cl->json, 1);
        if (cl->json)
            putchar('\n');
        vsc_user_fini(&u);
        return CLI_OK;
    }
    if (strcmp(sub, "update") == 0) {
        if (cl->npos != 3 || (cl->name == NULL && status == 0))
            return cli_usage(USAGE_USER,
                             "user update: give --name and/or --status");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_user_update(cl->c, &id, cl->name, status);
    } else if (strcmp(sub, "delete") == 0) {
        if (cl->npos != 3)
            return cli_usage(USAGE_USER, "user: wrong arguments");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_user_delete(cl->c, &id);
    } else if (strcmp(sub, "passwd") == 0) {
        if (cl->npos != 5)
            return cli_usage(USAGE_USER, "user passwd: USER CURRENT NEW");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_user_passwd(cl->c, &id, cl->pos[3], cl->pos[4]);
    } else if (strcmp(sub, "permissions") == 0) {
        if (cl->npos != 3)
            return cli_usage(USAGE_USER, "user: wrong arguments");
        has = cli_perms(cl, &perms);
        if (has < 0 || (has == 0 && !cl->clear) || (has && cl->clear)) {
            vsc_perms_fini(&perms);
            return cli_usage(USAGE_USER,
                             "user permissions: give permissions or --clear");
        }
        if ((rc = cli_open(cl, 1)) != 0) {
            vsc_perms_fini(&perms);
            return rc;
        }
        rc = vsc_user_permissions(cl->c, &id, has ? &perms : NULL);
        vsc_perms_fini(&perms);
    } else {
        return cli_usage(USAGE_USER, "user: unknown action");
    }
    if (rc != 0)
        return cli_fail(cl, rc);
    printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
    return CLI_OK;
}

static int
cmd_pat(struct cli *cl)
{
    const char *sub = cl->npos > 1 ? cl->pos[1] : NULL;
    int rc;
    if (cl->help || sub == NULL)
        return cl->help ? (fputs(USAGE_PAT, stdout), CLI_OK)
                        : cli_usage(USAGE_PAT, "pat: missing action");
    if (strcmp(sub, "create") == 0) {
        char token[256];
        uint64_t expiry = 0;
        if (cl->npos != 3 || (cl->expiry && cli_u64(cl->expiry, &expiry)))
            return cli_usage(USAGE_PAT, "pat: wrong arguments");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_pat_create(cl->c, cl->pos[2], expiry, token);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            putchar('{');
            json_kv_str("name", cl->pos[2], 1);
            json_kv_str("token", token, 0);
            printf("}\n");
        } else {
            printf("%s\n", token);
        }
        explicit_bzero(token, sizeof token);
        return CLI_OK;
    }
    if (strcmp(sub, "list") == 0) {
        struct vsc_pat *v;
        size_t n, i;
        if (cl->npos != 2)
            return cli_usage(USAGE_PAT, "pat: wrong arguments");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_pat_list(cl->c, &v, &n);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            fputs("{\"tokens\":[", stdout);
            for (i = 0; i < n; i++) {
                printf("%s{", i ? "," : "");
                json_kv_str("name", v[i].name, 1);
                printf("\"expiry_at\":%" PRIu64 "}", v[i].expiry_at);
            }
            printf("]}\n");
        } else {
            printf("%-32s %s\n", "NAME", "EXPIRY_AT");
            for (i = 0; i < n; i++) {
                if (v[i].expiry_at == 0 || v[i].expiry_at == UINT64_MAX)
                    printf("%-32s never\n", v[i].name);
                else
                    printf("%-32s %" PRIu64 "\n", v[i].name, v[i].expiry_at);
            }
        }
        free(v);
        return CLI_OK;
    }
    if (strcmp(sub, "delete") == 0) {
        if (cl->npos != 3)
            return cli_usage(USAGE_PAT, "pat: wrong arguments");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_pat_delete(cl->c, cl->pos[2]);
        if (rc != 0)
            return cli_fail(cl, rc);
        printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
        return CLI_OK;
    }
    return cli_usage(USAGE_PAT, "pat: unknown action");
}

/* ---- messages, offsets, groups ---- */

static const char USAGE_SEND[] =
    "usage: vstream send STREAM TOPIC [--partition N | --key K] "
    "[--header KEY=VALUE]... [MSG...]\n"
    "Sends each MSG as one message, or, without MSG, each line of stdin\n"
    "(newline stripped; batches of up to 1000 lines or 1 MiB).\n"
    "Partitioning: --partition N (that partition), --key K (the server\n"
    "hashes K: XXH32(K) mod partitions), default balanced (round robin).\n"
    "--header adds a string user header to every message (repeatable).\n"
    "Delivery is at-least-once: a send whose reply was lost is resent\n"
    "after a reconnect and may then be stored twice (same message ids).\n"
    "Prints the number of messages sent (--json: count, partition and base\n"
    "offset of the last batch).\n";

static const char USAGE_POLL[] =
    "usage: vstream poll STREAM TOPIC [--partition N]\n"
    "         [--offset O | --first | --last | --next | --timestamp T]\n"
    "         [--count C] [--consumer NAME | --group G] [--auto-commit]\n"
    "Strategy: default --next with --consumer or --group, else --first.\n"
    "--timestamp T: messages at or after T (microseconds since the epoch).\n"
    "--count C: at most C messages (default 100).\n"
    "--consumer NAME: a single consumer (a number is a numeric id; default\n"
    "numeric 0). Without --partition the server reads partition 0.\n"
    "--group G: the server assigns the partitions; the CLI joins G, syncs,\n"
    "polls its partitions in order (up to C messages in all) and leaves.\n"
    "--auto-commit: the server stores the offset of the last message\n"
    "returned for the consumer (or group).\n"
    "Output: one line per message \"OFFSET<TAB>PAYLOAD\" (payloads that are\n"
    "not valid UTF-8 are printed as base64: prefixed \"base64:\"); --json:\n"
    "{\"messages\":[{\"partition_id\",\"offset\",\"timestamp\",\"id\",\n"
    "\"payload\" or \"payload_base64\",\"headers\"}...]}.\n";

static const char USAGE_OFFSET[] =
    "usage: vstream offset get STREAM TOPIC [--partition N] "
    "[--consumer NAME | --group G]\n"
    "       vstream offset store STREAM TOPIC OFFSET --partition N "
    "[--consumer NAME | --group G]\n"
    "       vstream offset delete STREAM TOPIC --partition N "
    "[--consumer NAME | --group G]\n"
    "Default consumer: numeric 0. A group's offset can be stored or deleted\n"
    "only by a member owning the partition (the server answers 20 else).\n";

static const char USAGE_GROUP[] =
    "usage: vstream group create STREAM TOPIC NAME\n"
    "       vstream group list STREAM TOPIC\n"
    "       vstream group get STREAM TOPIC GROUP\n"
    "       vstream group delete STREAM TOPIC GROUP\n";

static const char USAGE_FLUSH[] =
    "usage: vstream flush STREAM TOPIC PARTITION [--fsync]\n";

/* 1 if the bytes are valid UTF-8 (no overlongs, no surrogates). */
static int
cli_utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (len - i - 1 < n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return 0;
        i += n + 1;
    }
    return 1;
}

static void
cli_base64(const uint8_t *p, size_t n)
{
    static const char A[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i;
    for (i = 0; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        putchar(A[v >> 18]);
        putchar(A[(v >> 12) & 63]);
        putchar(A[(v >> 6) & 63]);
        putchar(A[v & 63]);
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        printf("%c%c==", A[v >> 18], A[(v >> 12) & 63]);
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        printf("%c%c%c=", A[v >> 18], A[(v >> 12) & 63], A[(v >> 6) & 63]);
    }
}

/* A JSON string of n bytes of valid UTF-8. */
static void
json_bytes(const uint8_t *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = s[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", stdout);
        else if (ch < 0x20 || ch == 0x7f)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* The 128-bit value as a UUID string (big-endian digits). */
static void
cli_uuid_str(struct vs_u128 id, char out[37])
{
    char hex[33];
    snprintf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, id.hi, id.lo);
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
             hex + 16, hex + 20);
}

/* Payload or header value: text when valid UTF-8, else base64. */
static void
json_payload(const char *key, const uint8_t *p, size_t n)
{
    if (cli_utf8_valid(p, n)) {
        printf("\"%s\":", key);
        json_bytes(p, n);
    } else {
        printf("\"%s_base64\":\"", key);
        cli_base64(p, n);
        putchar('"');
    }
}

static void
print_message_json(uint32_t partition, const struct vsc_message *m)
{
    char id[37];
    size_t off = 0;
    struct vsc_tlv kv;
    int first = 1;
    cli_uuid_str(m->id, id);
    printf("{\"partition_id\":%u,\"offset\":%" PRIu64 ",\"timestamp\":%" PRIu64
           ",\"origin_timestamp\":%" PRIu64 ",\"id\":\"%s\",",
           partition, m->offset, m->timestamp, m->origin_timestamp, id);
    json_payload("payload", m->payload, m->payload_len);
    fputs(",\"headers\":[", stdout);
    while (vsc_uhdr_next(m->headers, m->headers_len, &off, &kv) == 1) {
        printf("%s{\"key\":", first ? "" : ",");
        first = 0;
        if (cli_utf8_valid(kv.key, kv.key_len))
            json_bytes(kv.key, kv.key_len);
        else
            fputs("\"\"", stdout);
        printf(",\"kind\":%u,", kv.kind);
        json_payload("value", kv.val, kv.val_len);
        putchar('}');
    }
    fputs("]}", stdout);
}

static void
print_message_text(const struct vsc_message *m)
{
    printf("%" PRIu64 "\t", m->offset);
    if (cli_utf8_valid(m->payload, m->payload_len)) {
        fwrite(m->payload, 1, m->payload_len, stdout);
    } else {
        fputs("base64:", stdout);
        cli_base64(m->payload, m->payload_len);
    }
    putchar('\n');
}

/* --partition / --key -> partitioning; -EINVAL on a bad value. */
static int
cli_partitioning(struct cli *cl, struct vsc_partitioning *p)
{
    uint32_t n;
    if (cl->partition != NULL && cl->key != NULL)
        return -EINVAL;
    if (cl->partition != NULL) {
        if (cli_u32(cl->partition, &n) != 0)
            return -EINVAL;
        *p = vsc_part_id(n);
    } else if (cl->key != NULL) {
        size_t kl = strlen(cl->key);
        if (kl == 0 || kl > 255)
            return -EINVAL;
        *p = vsc_part_key(cl->key, kl);
    } else {
        *p = vsc_part_balanced();
    }
    return 0;
}

#define CLI_SEND_BATCH     1000u
#define CLI_SEND_BATCH_MAX (1u << 20)

struct cli_send {
    struct vsc_msg msgs[CLI_SEND_BATCH];
    char *lines[CLI_SEND_BATCH];
    uint32_t n;
    size_t bytes;
    uint64_t sent;
    struct vsc_sent last;
};

static int
cli_send_flush(struct cli *cl, struct cli_send *st, const struct vsc_id *sid,
               const struct vsc_id *tid, const struct vsc_partitioning *p,
               const struct vs_wbuf *hdrs)
{
    int rc;
    uint32_t i;
    if (st->n == 0)
        return 0;
    for (i = 0; i < st->n; i++) {
        st->msgs[i].headers = hdrs->data;
        st->msgs[i].headers_len = (uint32_t)hdrs->len;
    }
    rc = vsc_send(cl->c, sid, tid, p, st->msgs, st->n, &st->last);
    for (i = 0; i < st->n; i++) {
        free(st->lines[i]);
        st->lines[i] = NULL;
    }
    if (rc == 0)
        st->sent += st->n;
    st->n = 0;
    st->bytes = 0;
    return rc;
}

static int
cmd_send(struct cli *cl)
{
    struct vsc_partitioning p;
    struct vsc_id sid, tid;
    struct cli_send *st;
    struct vs_wbuf hdrs;
    int rc = 0, i;
    if (cl->help) {
        fputs(USAGE_SEND, stdout);
        return CLI_OK;
    }
    if (cl->npos < 3)
        return cli_usage(USAGE_SEND, "send: STREAM and TOPIC are required");
    if (cli_partitioning(cl, &p) != 0)
        return cli_usage(USAGE_SEND, "send: bad --partition or --key (give "
                                     "one; a key is 1..255 bytes)");
    vs_wbuf_init(&hdrs);
    for (i = 0; i < cl->nheaders; i++) {
        const char *eq = strchr(cl->headers[i], '=');
        char key[256];
        size_t kl = eq ? (size_t)(eq - cl->headers[i]) : 0;
        if (kl == 0 || kl > 255) {
            vs_wbuf_fini(&hdrs);
            return cli_usage(USAGE_SEND, "send: --header wants KEY=VALUE");
        }
        memcpy(key, cl->headers[i], kl);
        key[kl] = '\0';
        vsc_uhdr_str(&hdrs, key, eq + 1);
    }
    sid = vsc_id_parse(cl->pos[1]);
    tid = vsc_id_parse(cl->pos[2]);
    if ((rc = cli_open(cl, 1)) != 0) {
        vs_wbuf_fini(&hdrs);
        return rc;
    }
    st = calloc(1, sizeof *st);
    if (st == NULL) {
        vs_wbuf_fini(&hdrs);
        return cli_fail(cl, -ENOMEM);
    }
    if (cl->npos > 3) {
        for (i = 3; i < cl->npos && rc == 0; i++) {
            struct vsc_msg *m = &st->msgs[st->n++];
            memset(m, 0, sizeof *m);
            m->payload = cl->pos[i];
            m->payload_len = (uint32_t)strlen(cl->pos[i]);
            if (st->n == CLI_SEND_BATCH)
                rc = cli_send_flush(cl, st, &sid, &tid, &p, &hdrs);
        }
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while (rc == 0 && (len = getline(&line, &cap, stdin)) != -1) {
            struct vsc_msg *m;
            if (len > 0 && line[len - 1] == '\n')
                line[--len] = '\0';
            m = &st->msgs[st->n];
            memset(m, 0, sizeof *m);
            st->lines[st->n] = line;
            m->payload = line;
            m->payload_len = (uint32_t)len;
            st->n++;
            st->bytes += (size_t)len;
            line = NULL;
            cap = 0;
            if (st->n == CLI_SEND_BATCH || st->bytes >= CLI_SEND_BATCH_MAX)
                rc = cli_send_flush(cl, st, &sid, &tid, &p, &hdrs);
        }
        free(line);
    }
    if (rc == 0)
        rc = cli_send_flush(cl, st, &sid, &tid, &p, &hdrs);
    vs_wbuf_fini(&hdrs);
    if (rc != 0) {
        uint64_t sent = st->sent;
        for (uint32_t k = 0; k < st->n; k++)
            free(st->lines[k]);
        free(st);
        if (sent > 0)
            fprintf(stderr,
                    "vstream: %" PRIu64 " messages were sent before "
                    "the failure\n",
                    sent);
        return cli_fail(cl, rc);
    }
    if (cl->json) {
        printf("{\"sent\":%" PRIu64, st->sent);
        if (st->last.confirmed)
            printf(",\"stream_id\":%u,\"topic_id\":%u,\"partition_id\":%u,"
                   "\"base_offset\":%" PRIu64,
                   st->last.stream_id, st->last.topic_id, st->last.partition_id,
                   st->last.base_offset);
        printf("}\n");
    } else {
        printf("sent %" PRIu64 " message%s\n", st->sent,
               st->sent == 1 ? "" : "s");
    }
    free(st);
    return CLI_OK;
}

/* --consumer / --group -> consumer (default: numeric 0). */
static struct vsc_consumer
cli_consumer(struct cli *cl)
{
    struct vsc_id id = vsc_id_num(0);
    if (cl->group != NULL) {
        id = vsc_id_parse(cl->group);
        return vsc_consumer_group(&id);
    }
    if (cl->consumer != NULL)
        id = vsc_id_parse(cl->consumer);
    return vsc_consumer_single(&id);
}

/* Polls one partition (or the server's default) and prints; *left is
 * decremented by the messages printed. */
static int
cli_poll_once(struct cli *cl, const struct vsc_id *sid,
              const struct vsc_id *tid, struct vsc_poll_args *a, uint32_t *left,
              int *first_out)
{
    struct vsc_polled r;
    int rc = vsc_poll(cl->c, sid, tid, a, &r);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i<r.n && * left> 0; i++, (*left)--) {
        if (cl->json) {
            if (!*first_out)
                putchar(',');
            *first_out = 0;
            print_message_json(r.partition_id, &r.msgs[i]);
        } else {
            print_message_text(&r.msgs[i]);
        }
    }
    vsc_polled_fini(&r);
    return 0;
}

static int
cmd_poll(struct cli *cl)
{
    struct vsc_poll_args a;
    struct vsc_id sid, tid, gid;
    uint32_t left, part = 0;
    int nstrat, rc, first = 1;
    if (cl->help) {
        fputs(USAGE_POLL, stdout);
        return CLI_OK;
    }
    if (cl->npos != 3)
        return cli_usage(USAGE_POLL, "poll: STREAM and TOPIC are required");
    memset(&a, 0, sizeof a);
    nstrat = (cl->offset != NULL) + (cl->timestamp != NULL) + cl->first +
             cl->last + cl->next;
    if (nstrat > 1 || (cl->consumer && cl->group) ||
        (cl->group && cl->partition))
        return cli_usage(USAGE_POLL, "poll: conflicting options");
    a.count = 100;
    if ((cl->count && (cli_u32(cl->count, &a.count) != 0 || a.count == 0)) ||
        (cl->partition && cli_u32(cl->partition, &part) != 0))
        return cli_usage(USAGE_POLL, "poll: bad --count or --partition");
    if (cl->offset != NULL) {
        a.strategy = VSC_POLL_OFFSET;
        if (cli_u64(cl->offset, &a.value) != 0)
            return cli_usage(USAGE_POLL, "poll: bad --offset");
    } else if (cl->timestamp != NULL) {
        a.strategy = VSC_POLL_TIMESTAMP;
        if (cli_u64(cl->timestamp, &a.value) != 0)
            return cli_usage(USAGE_POLL, "poll: bad --timestamp");
    } else if (cl->first) {
        a.strategy = VSC_POLL_FIRST;
    } else if (cl->last) {
        a.strategy = VSC_POLL_LAST;
    } else if (cl->next || cl->consumer || cl->group) {
        a.strategy = VSC_POLL_NEXT;
    } else {
        a.strategy = VSC_POLL_FIRST;
    }
    a.consumer = cli_consumer(cl);
    a.auto_commit = cl->auto_commit;
    a.has_partition = cl->partition != NULL;
    a.partition_id = part;
    sid = vsc_id_parse(cl->pos[1]);
    tid = vsc_id_parse(cl->pos[2]);
    if ((rc = cli_open(cl, 1)) != 0)
        return rc;
    left = a.count;
    if (cl->json)
        fputs("{\"messages\":[", stdout);
    if (cl->group == NULL) {
        rc = cli_poll_once(cl, &sid, &tid, &a, &left, &first);
    } else {
        uint32_t *parts = NULL;
        size_t n = 0, i;
        uint64_t gen;
        int member = 0;
        gid = vsc_id_parse(cl->group);
        rc = vsc_group_join(cl->c, &sid, &tid, &gid);
        if (rc == 0)
            rc = vsc_group_sync(cl->c, &sid, &tid, &gid, &gen, &parts, &n,
                                &member);
        if (rc == 0 && !member) {
            /* joined, yet the server does not list us (deleted group?) */
            fprintf(stderr, "vstream: %s (%u): not a member after joining\n",
                    vs_iggy_error_name(VS_E_CONSUMER_GROUP_MEMBER_NOT_FOUND),
                    VS_E_CONSUMER_GROUP_MEMBER_NOT_FOUND);
            if (cl->json)
                fputs("]}\n", stdout);
            return CLI_FAIL;
        }
        for (i = 0; rc == 0 && i < n && left > 0; i++) {
            a.has_partition = 1;
            a.partition_id = parts[i];
            a.count = left;
            rc = cli_poll_once(cl, &sid, &tid, &a, &left, &first);
        }
        free(parts);
        if (member) {
            int lrc = vsc_group_leave(cl->c, &sid, &tid, &gid);
            if (rc == 0)
                rc = lrc;
        }
    }
    if (cl->json)
        fputs("]}\n", stdout);
    if (rc != 0)
        return cli_fail(cl, rc);
    return CLI_OK;
}

static int
cmd_offset(struct cli *cl)
{
    const char *sub = cl->npos > 1 ? cl->pos[1] : NULL;
    struct vsc_consumer cons;
    struct vsc_id sid, tid;
    uint32_t part = 0;
    uint64_t off = 0;
    int rc;
    if (cl->help || sub == NULL)
        return cl->help ? (fputs(USAGE_OFFSET, stdout), CLI_OK)
                        : cli_usage(USAGE_OFFSET, "offset: missing action");
    if (cl->consumer && cl->group)
        return cli_usage(USAGE_OFFSET, "offset: --consumer or --group");
    if (cl->partition && cli_u32(cl->partition, &part) != 0)
        return cli_usage(USAGE_OFFSET, "offset: bad --partition");
    cons = cli_consumer(cl);
    if (strcmp(sub, "get") == 0) {
        struct vsc_offset o;
        int found;
        if (cl->npos != 4)
            return cli_usage(USAGE_OFFSET, "offset get: STREAM TOPIC");
        sid = vsc_id_parse(cl->pos[2]);
        tid = vsc_id_parse(cl->pos[3]);
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_offset_get(cl->c, &cons, &sid, &tid, cl->partition != NULL,
                            part, &o, &found);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (!found)
            return cli_not_found(VS_E_RESOURCE_NOT_FOUND, "consumer offset");
        if (cl->json)
            printf("{\"partition_id\":%u,\"current_offset\":%" PRIu64
                   ",\"stored_offset\":%" PRIu64 "}\n",
                   o.partition_id, o.current_offset, o.stored_offset);
        else
            printf("partition %u: stored %" PRIu64 ", current %" PRIu64 "\n",
                   o.partition_id, o.stored_offset, o.current_offset);
        return CLI_OK;
    }
    if (strcmp(sub, "store") == 0) {
        if (cl->npos != 5 || cli_u64(cl->pos[4], &off) != 0)
            return cli_usage(USAGE_OFFSET, "offset store: STREAM TOPIC OFFSET");
    } else if (strcmp(sub, "delete") == 0) {
        if (cl->npos != 4)
            return cli_usage(USAGE_OFFSET, "offset delete: STREAM TOPIC");
    } else {
        return cli_usage(USAGE_OFFSET, "offset: unknown action");
    }
    sid = vsc_id_parse(cl->pos[2]);
    tid = vsc_id_parse(cl->pos[3]);
    if ((rc = cli_open(cl, 1)) != 0)
        return rc;
    if (sub[0] == 's')
        rc = vsc_offset_store(cl->c, &cons, &sid, &tid, cl->partition != NULL,
                              part, off);
    else
        rc = vsc_offset_delete(cl->c, &cons, &sid, &tid, cl->partition != NULL,
                               part);
    if (rc != 0)
        return cli_fail(cl, rc);
    printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
    return CLI_OK;
}

static void
print_group(const struct vsc_group *g, int json, int details)
{
    size_t i, j;
    if (!json) {
        printf("%-8u %-12u %-10u %s\n", g->id, g->partitions_count,
               g->members_count, g->name);
        for (i = 0; details && i < g->n_members; i++) {
            printf("  member %u:", g->members[i].id);
            for (j = 0; j < g->members[i].n_partitions; j++)
                printf(" %u", g->members[i].partitions[j]);
            putchar('\n');
        }
        return;
    }
    printf("{\"id\":%u,\"partitions_count\":%u,\"members_count\":%u,", g->id,
           g->partitions_count, g->members_count);
    json_kv_str("name", g->name, details);
    if (details) {
        fputs("\"members\":[", stdout);
        for (i = 0; i < g->n_members; i++) {
            printf("%s{\"id\":%u,\"partitions\":[", i ? "," : "",
                   g->members[i].id);
            for (j = 0; j < g->members[i].n_partitions; j++)
                printf("%s%u", j ? "," : "", g->members[i].partitions[j]);
            fputs("]}", stdout);
        }
        putchar(']');
    }
    putchar('}');
}

static int
cmd_group(struct cli *cl)
{
    const char *sub = cl->npos > 1 ? cl->pos[1] : NULL;
    struct vsc_id sid, tid, gid;
    int rc;
    if (cl->help || sub == NULL)
        return cl->help ? (fputs(USAGE_GROUP, stdout), CLI_OK)
                        : cli_usage(USAGE_GROUP, "group: missing action");
    if (cl->npos < 4)
        return cli_usage(USAGE_GROUP, "group: STREAM and TOPIC are required");
    sid = vsc_id_parse(cl->pos[2]);
    tid = vsc_id_parse(cl->pos[3]);
    if (strcmp(sub, "list") == 0) {
        struct vsc_group *v;
        size_t n, i;
        if (cl->npos != 4)
            return cli_usage(USAGE_GROUP, "group list: STREAM TOPIC");
        if ((rc = cli_open(cl, 1)) != 0)
            return rc;
        rc = vsc_group_list(cl->c, &sid, &tid, &v, &n);
        if (rc != 0)
            return cli_fail(cl, rc);
        if (cl->json) {
            fputs("{\"groups\":[", stdout);
            for (i = 0; i < n; i++) {
                if (i)
                    putchar(',');
                print_group(&v[i], 1, 0);
            }
            fputs("]}\n", stdout);
        } else {
            printf("%-8s %-12s %-10s %s\n", "ID", "PARTITIONS", "MEMBERS",
                   "NAME");
            for (i = 0; i < n; i++)
                print_group(&v[i], 0, 0);
        }
        free(v);
        return CLI_OK;
    }
    if (cl->npos != 5)
        return cli_usage(USAGE_GROUP, "group: wrong arguments");
    if ((rc = cli_open(cl, 1)) != 0)
        return rc;
    if (strcmp(sub, "create") == 0 || strcmp(sub, "get") == 0) {
        struct vsc_group g;
        int found = 1;
        if (sub[0] == 'c') {
            rc = vsc_group_create(cl->c, &sid, &tid, cl->pos[4], &g);
        } else {
            gid = vsc_id_parse(cl->pos[4]);
            rc = vsc_group_get(cl->c, &sid, &tid, &gid, &g, &found);
        }
        if (rc != 0)
            return cli_fail(cl, rc);
        if (!found)
            return cli_not_found(VS_E_CONSUMER_GROUP_ID_NOT_FOUND,
                                 "consumer group");
        if (!cl->json)
            printf("%-8s %-12s %-10s %s\n", "ID", "PARTITIONS", "MEMBERS",
                   "NAME");
        print_group(&g, cl->json, 1);
        if (cl->json)
            putchar('\n');
        vsc_group_fini(&g);
        return CLI_OK;
    }
    if (strcmp(sub, "delete") != 0)
        return cli_usage(USAGE_GROUP, "group: unknown action");
    gid = vsc_id_parse(cl->pos[4]);
    rc = vsc_group_delete(cl->c, &sid, &tid, &gid);
    if (rc != 0)
        return cli_fail(cl, rc);
    printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
    return CLI_OK;
}

static int
cmd_flush(struct cli *cl)
{
    struct vsc_id sid, tid;
    uint32_t part;
    int rc;
    if (cl->help) {
        fputs(USAGE_FLUSH, stdout);
        return CLI_OK;
    }
    if (cl->npos != 4 || cli_u32(cl->pos[3], &part) != 0)
        return cli_usage(USAGE_FLUSH, "flush: STREAM TOPIC PARTITION");
    sid = vsc_id_parse(cl->pos[1]);
    tid = vsc_id_parse(cl->pos[2]);
    if ((rc = cli_open(cl, 1)) != 0)
        return rc;
    rc = vsc_flush(cl->c, &sid, &tid, part, cl->fsync);
    if (rc != 0)
        return cli_fail(cl, rc);
    printf(cl->json ? "{\"ok\":true}\n" : "ok\n");
    return CLI_OK;
}

static int
cli_simple(struct cli *cl, int (*fn)(struct cli *), const char *usage)
{
    if (cl->help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (cl->npos != 1)
        return cli_usage(usage, "unexpected arguments");
    return fn(cl);
}

int
main(int argc, char **argv)
{
    struct cli cl;
    const char *cmd;
    int rc;
    memset(&cl, 0, sizeof cl);
    if (cli_parse(&cl, argc, argv) != 0)
        return cli_usage(USAGE, NULL);
    if (cl.addr == NULL)
        cl.addr = getenv("VSTREAM_ADDR");
    if (cl.addr == NULL || cl.addr[0] == '\0')
        cl.addr = "127.0.0.1:8090";
    if (cl.http_addr == NULL)
        cl.http_addr = getenv("VSTREAM_HTTP_ADDR");
    if (cl.user == NULL)
        cl.user = getenv("VSTREAM_USER");
    if (cl.user == NULL || cl.user[0] == '\0')
        cl.user = "iggy";
    if (cl.password_stdin) {
        if (cl.password != NULL)
            return cli_usage(USAGE, "--password and --password-stdin "
                                    "exclude each other");
        if (cli_read_password_stdin(&cl) != 0)
            return cli_usage(USAGE, "no password on stdin");
    }
    if (cl.password == NULL)
        cl.password = getenv("VSTREAM_PASSWORD");
    if (cl.npos == 0) {
        if (cl.help) {
            fputs(USAGE, stdout);
            return CLI_OK;
        }
        return cli_usage(USAGE, "missing command");
    }
    cmd = cl.pos[0];
    if (strcmp(cmd, "ping") == 0)
        rc = cli_simple(&cl, cmd_ping, "usage: vstream ping\n");
    else if (strcmp(cmd, "me") == 0)
        rc = cli_simple(&cl, cmd_me, "usage: vstream me\n");
    else if (strcmp(cmd, "stats") == 0)
        rc = cli_simple(&cl, cmd_stats, "usage: vstream stats\n");
    else if (strcmp(cmd, "cluster") == 0)
        rc = cli_simple(&cl, cmd_cluster, USAGE_CLUSTER);
    else if (strcmp(cmd, "stream") == 0)
        rc = cmd_stream(&cl);
    else if (strcmp(cmd, "topic") == 0)
        rc = cmd_topic(&cl);
    else if (strcmp(cmd, "partition") == 0)
        rc = cmd_partition(&cl);
    else if (strcmp(cmd, "user") == 0)
        rc = cmd_user(&cl);
    else if (strcmp(cmd, "pat") == 0)
        rc = cmd_pat(&cl);
    else if (strcmp(cmd, "send") == 0)
        rc = cmd_send(&cl);
    else if (strcmp(cmd, "poll") == 0)
        rc = cmd_poll(&cl);
    else if (strcmp(cmd, "offset") == 0)
        rc = cmd_offset(&cl);
    else if (strcmp(cmd, "group") == 0)
        rc = cmd_group(&cl);
    else if (strcmp(cmd, "flush") == 0)
        rc = cmd_flush(&cl);
    else if (strcmp(cmd, "help") == 0) {
        fputs(USAGE, stdout);
        rc = CLI_OK;
    } else
        rc = cli_usage(USAGE, "unknown command");
    if (cl.c != NULL) {
        if (vsc_session(cl.c) != 0)
            (void)vsc_logout(cl.c);
        vsc_destroy(cl.c);
    }
    explicit_bzero(cl.pwbuf, sizeof cl.pwbuf);
    if (fflush(stdout) != 0)
        return CLI_FAIL;
    return rc;
}
