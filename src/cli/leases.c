/* gpushare leases and gpushare release: list the caller's leases, release one. */
#include "cli.h"
#include "daemon_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct list_opts {
    const char *socket;
    int json;
    int force;      /* release --force */
    const char *id; /* release */
} list_opts_t;

static void usage(FILE *out, int release)
{
    if (release)
        fprintf(
            out,
            "usage: gpushare release [--force] [--json] [--socket PATH] ID\n\n"
            "Releases lease ID (yours; root: any). Its job is asked to stop (SIGTERM, then\n"
            "SIGKILL after gpushared's kill_grace, 10 s by default) and the lease ends when no\n"
            "process uses it any more.\n"
            "  --force              root: every process that holds the lease's region is\n"
            "                       stopped too, whatever the lease's records say; waits\n"
            "                       until the lease has ended\n");
    else
        fprintf(out, "usage: gpushare leases [--json] [--socket PATH]\n\n"
                     "Lists your leases (root: every lease on the node).\n");
    fprintf(out,
            "  --json               the daemon's reply (docs/api.md)\n"
            "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n",
            GS_DEFAULT_SOCKET);
}

static int parse_args(int argc, char **argv, list_opts_t *opts, int release)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"force", no_argument, NULL, 'f'},
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *name = release ? "release" : "leases";
    memset(opts, 0, sizeof(*opts));
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout, release);
            return -1;
        } else if (c == 'j') {
            opts->json = 1;
        } else if (c == 'f' && release) {
            opts->force = 1;
        } else if (c == 's') {
            opts->socket = optarg;
        } else {
            fprintf(stderr,
                    "gpushare %s: unknown or incomplete option \"%s\" (see gpushare %s "
                    "--help)\n",
                    name, argv[optind - 1], name);
            return GS_EXIT_USAGE;
        }
    }
    if (release && optind + 1 == argc) {
        opts->id = argv[optind];
        return 0;
    }
    if (optind < argc || release) {
        fprintf(stderr, "gpushare %s: %s (see gpushare %s --help)\n", name,
                release ? "give exactly one lease ID" : "unexpected argument", name);
        return GS_EXIT_USAGE;
    }
    return 0;
}

static void print_row(const json_t *lease)
{
    char used[32], limit[32], both[72], compute[24] = "-", gpus[64] = "";
    gs__cli_bytes(gs__cli_uint(lease, "memory_used"), used, sizeof(used));
    gs__cli_bytes(gs__cli_uint(lease, "memory_limit"), limit, sizeof(limit));
    snprintf(both, sizeof(both), "%s / %s", used, limit);
    uint64_t share = gs__cli_uint(lease, "compute_share");
    if (share != 0)
        snprintf(compute, sizeof(compute), "%llu%%", (unsigned long long)share);
    size_t i, off = 0;
    const json_t *gpu;
    json_array_foreach(json_object_get(lease, "gpus"), i, gpu)
    {
        int n = snprintf(gpus + off, sizeof(gpus) - off, "%s%llu", i > 0 ? "," : "",
                         (unsigned long long)gs__cli_uint(gpu, "index"));
        off += n > 0 && (size_t)n < sizeof(gpus) - off ? (size_t)n : 0;
    }
    double age = (double)time(NULL) - (double)gs__cli_uint(lease, "granted_at_ms") / 1000.0;
    printf("%5llu  %-10.10s %-5s %-24s %7s  %-7s %7.0fs  %s\n",
           (unsigned long long)gs__cli_uint(lease, "id"), gs__cli_str(lease, "user"), gpus, both,
           compute, gs__cli_str(lease, "state"), age > 0 ? age : 0, gs__cli_str(lease, "command"));
}

int gs_cli_leases(int argc, char **argv)
{
    list_opts_t opts;
    int result = parse_args(argc, argv, &opts, 0);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    gs_client_t *client = NULL;
    json_t *reply = NULL;
    result = gs__cli_connect(opts.socket, &client);
    if (result == GS_EXIT_OK)
        result = gs__cli_call(client, json_pack("{s:s}", "op", "list"), &reply);
    gs_client_close(client);
    if (result != GS_EXIT_OK)
        return result;
    const json_t *leases = json_object_get(reply, "leases");
    if (opts.json) {
        gs__cli_print_json(leases);
    } else if (json_array_size(leases) == 0) {
        printf("no leases\n");
    } else {
        printf("%5s  %-10s %-5s %-24s %7s  %-7s %8s  %s\n", "LEASE", "USER", "GPUS", "USED / LIMIT",
               "COMPUTE", "STATE", "AGE", "COMMAND");
        size_t i;
        const json_t *lease;
        json_array_foreach(leases, i, lease) print_row(lease);
    }
    json_decref(reply);
    return GS_EXIT_OK;
}

/* Nonzero while the caller's listing still has lease id. */
static int still_listed(gs_client_t *client, unsigned long long id, int *status)
{
    json_t *reply = NULL;
    *status = gs__cli_call(client, json_pack("{s:s}", "op", "list"), &reply);
    if (*status != GS_EXIT_OK)
        return 0;
    int found = 0;
    size_t i;
    const json_t *lease;
    json_array_foreach(json_object_get(reply, "leases"), i, lease)
    {
        found |= gs__cli_uint(lease, "id") == id;
    }
    json_decref(reply);
    return found;
}

/* After a forced release: waits until the lease is gone (its processes got SIGKILL after the
 * daemon's kill grace), at most that grace and 10 s more. */
static int wait_ended(gs_client_t *client, unsigned long long id, uint64_t grace_ms)
{
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
    int status = GS_EXIT_OK;
    for (uint64_t waited = 0; waited < grace_ms + 10000; waited += 100) {
        if (!still_listed(client, id, &status))
            return status;
        nanosleep(&nap, NULL);
    }
    fprintf(stderr,
            "gpushare: lease %llu is still ending %.0f s after its release: a process of root "
            "still holds its region (see gpushare leases)\n",
            id, (double)(grace_ms + 10000) / 1000.0);
    return GS_EXIT_FAIL;
}

static json_t *release_request(unsigned long long id, int force)
{
    json_t *req = json_pack("{s:s, s:I}", "op", "release", "lease", (json_int_t)id);
    if (req != NULL && force)
        json_object_set_new(req, "force", json_true());
    return req;
}

int gs_cli_release(int argc, char **argv)
{
    list_opts_t opts;
    int result = parse_args(argc, argv, &opts, 1);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    char *end = NULL;
    unsigned long long id = strtoull(opts.id, &end, 10);
    if (opts.id[0] < '0' || opts.id[0] > '9' || *end != '\0' || id == 0 || id > INT64_MAX) {
        fprintf(stderr, "gpushare release: \"%s\" is not a lease ID (see gpushare leases)\n",
                opts.id);
        return GS_EXIT_USAGE;
    }
    gs_client_t *client = NULL;
    json_t *reply = NULL;
    result = gs__cli_connect(opts.socket, &client);
    if (result == GS_EXIT_OK)
        result = gs__cli_call(client, release_request(id, opts.force), &reply);
    int ended = result == GS_EXIT_OK && strcmp(gs__cli_str(reply, "state"), "ended") == 0;
    if (result == GS_EXIT_OK && opts.force && !ended) {
        result = wait_ended(client, id, gs__cli_uint(reply, "kill_grace_ms"));
        ended = result == GS_EXIT_OK;
        if (ended)
            json_object_set_new(reply, "state", json_string("ended"));
    }
    gs_client_close(client);
    if (result != GS_EXIT_OK) {
        json_decref(reply);
        return result;
    }
    if (opts.json)
        gs__cli_print_json(reply);
    else if (ended)
        printf("lease %llu %s\n", id, opts.force ? "ended (released by force)" : "released");
    else
        printf("lease %llu is ending: its job was asked to stop\n", id);
    json_decref(reply);
    return GS_EXIT_OK;
}
