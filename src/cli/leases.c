/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare leases and gpushare release: list the caller's leases and waiting requests; release
 * leases. */
#include "cli.h"
#include "daemon_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct list_opts {
    gs__cli_t cli;
    char **ids; /* release */
    int n_ids;
    int force; /* release --force */
} list_opts_t;

static void usage(FILE *out, int release)
{
    if (release)
        fprintf(out,
                "usage: gpushare release [--force] [--json] [--socket PATH] ID...\n\n"
                "Releases the leases ID... (yours; root: any). A job is asked to stop (SIGTERM,\n"
                "then SIGKILL after the daemon's grace period) and its lease ends when no process\n"
                "uses it any more.\n"
                "  --force              root: every process that holds the lease's region is\n"
                "                       stopped too, whatever the lease's records say; waits\n"
                "                       until the lease has ended\n");
    else
        fprintf(out,
                "usage: gpushare leases [--json] [--socket PATH]\n\n"
                "Lists your leases and your waiting requests (PENDING, with their position in\n"
                "the queue and why they wait); root: every lease and request on the node.\n");
    fprintf(out,
            "  --json               the daemon's reply (docs/api.md)\n"
            "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n"
            "  -h, --help           this help\n",
            GS_DEFAULT_SOCKET);
}

/* --force, release's only option of its own. */
static int one_option(void *ctx, int c, const char *value)
{
    list_opts_t *opts = ctx;
    (void)value;
    opts->force = c == 'f';
    return 0;
}

static int parse_args(int argc, char **argv, list_opts_t *opts, int release)
{
    static const gs__cli_opt_t release_options[] = {{"force", 0, 'f', 0}, {NULL, 0, 0, 0}};
    static const gs__cli_opt_t no_options[] = {{NULL, 0, 0, 0}};
    gs__cli_args_t args = {.opts = release ? release_options : no_options,
                           .flags = GS__CLI_CHECK | GS__CLI_SOCKET,
                           .handle = one_option,
                           .ctx = opts};
    memset(opts, 0, sizeof(*opts));
    gs__cli_init(&opts->cli, release ? "release" : "leases");
    int next = 0, result = gs__cli_options(&opts->cli, argc, argv, &args, &next);
    if (result == GS__CLI_HELP)
        usage(stdout, release);
    if (result != 0)
        return result;
    if (release && next < argc) {
        opts->ids = argv + next;
        opts->n_ids = argc - next;
        return 0;
    }
    if (release)
        return gs__cli_usage(&opts->cli, "give one or more lease IDs");
    if (next < argc)
        return gs__cli_usage(&opts->cli, "unexpected argument \"%s\"", argv[next]);
    return 0;
}

/* The GPU indexes of a lease: "0,1". */
static void gpu_list(const json_t *lease, char *buf, size_t len)
{
    size_t i, off = 0;
    const json_t *gpu;
    buf[0] = '\0';
    json_array_foreach(json_object_get(lease, "gpus"), i, gpu)
    {
        int n = snprintf(buf + off, len - off, "%s%llu", i > 0 ? "," : "",
                         (unsigned long long)gs__cli_uint(gpu, "index"));
        off += n > 0 && (size_t)n < len - off ? (size_t)n : 0;
    }
}

static void print_row(const json_t *lease, int64_t now)
{
    char used[32], limit[32], both[72], compute[24] = "-", gpus[64], age[32], left[32], name[16];
    gs__cli_bytes(gs__cli_uint(lease, "memory_used"), used, sizeof(used));
    gs__cli_bytes(gs__cli_uint(lease, "memory_limit"), limit, sizeof(limit));
    snprintf(both, sizeof(both), "%s / %s", used, limit);
    uint64_t share = gs__cli_uint(lease, "compute_share");
    if (share != 0)
        snprintf(compute, sizeof(compute), "%llu%%", (unsigned long long)share);
    gpu_list(lease, gpus, sizeof(gpus));
    int64_t held = now - (int64_t)gs__cli_uint(lease, "granted_at_ms");
    if (held < 1000)
        snprintf(age, sizeof(age), "0s");
    else
        gs_format_duration((uint64_t)held / 1000 * 1000, age, sizeof(age));
    gs__cli_time_left(lease, now, left, sizeof(left));
    gs__cli_fit(gs__cli_str(lease, "name"), 12, name, sizeof(name));
    char user[24];
    const char *key = gs__cli_str(lease, "key"); /* a keyed lease: its key before its command */
    printf("%5llu  %-10s %-12s %-5s %-22s %7s  %-10s %6s %6s  %s%s%s",
           (unsigned long long)gs__cli_uint(lease, "id"),
           gs__cli_fit(gs__cli_str(lease, "user"), 10, user, sizeof(user)),
           name[0] != '\0' ? name : "-", gpus, both, compute, gs__cli_str(lease, "state"), age,
           left, key[0] != '\0' ? "key=" : "", key, key[0] != '\0' ? " " : "");
    fputs(gs__cli_str(lease, "command"), stdout);
    putchar('\n');
}

/* A waiting request: a PENDING row with its position, then what it asks and why it waits. */
static void print_pending(const json_t *req)
{
    char request[256], waited[32], state[24], name[16];
    gs__cli_request_text(json_object_get(req, "request"), request, sizeof(request));
    if (gs__cli_uint(req, "waiting_ms") < 1000)
        snprintf(waited, sizeof(waited), "0s");
    else
        gs_format_duration(gs__cli_uint(req, "waiting_ms") / 1000 * 1000, waited, sizeof(waited));
    snprintf(state, sizeof(state), "PENDING #%llu",
             (unsigned long long)gs__cli_uint(req, "position"));
    gs__cli_fit(gs__cli_str(req, "name"), 12, name, sizeof(name));
    char user[24];
    printf("%5s  %-10s %-12s %-5s %-22s %7s  %-10s %6s %6s  %s\n", "-",
           gs__cli_fit(gs__cli_str(req, "user"), 10, user, sizeof(user)),
           name[0] != '\0' ? name : "-", "-", "-", "-", state, waited, "-",
           gs__cli_str(req, "command"));
    printf("       %s: %s\n", request, gs__cli_str(req, "reason"));
}

static void print_list(const json_t *reply)
{
    const json_t *leases = json_object_get(reply, "leases");
    const json_t *pending = json_object_get(reply, "pending");
    if (json_array_size(leases) == 0 && json_array_size(pending) == 0) {
        printf("no leases\n");
        return;
    }
    printf("%5s  %-10s %-12s %-5s %-22s %7s  %-10s %6s %6s  %s\n", "LEASE", "USER", "NAME", "GPUS",
           "USED / LIMIT", "COMPUTE", "STATE", "AGE", "LEFT", "COMMAND");
    int64_t now = gs__cli_wall_ms();
    size_t i;
    const json_t *item;
    json_array_foreach(leases, i, item) print_row(item, now);
    json_array_foreach(pending, i, item) print_pending(item);
}

/* --json: the rows the text shows, as one array: the leases, then the waiting requests (state
 * "pending", with their position and reason, and no id: they have no lease yet). */
static void print_json(json_t *reply)
{
    json_t *rows = json_array();
    size_t i;
    json_t *item;
    json_array_extend(rows, json_object_get(reply, "leases"));
    json_array_foreach(json_object_get(reply, "pending"), i, item)
    {
        json_t *row = json_deep_copy(item);
        json_object_set_new(row, "state", json_string("pending"));
        json_array_append_new(rows, row);
    }
    gs__cli_print_json(rows);
    json_decref(rows);
}

int gs_cli_leases(int argc, char **argv)
{
    list_opts_t opts;
    int result = parse_args(argc, argv, &opts, 0);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    gs_client_t *client = NULL;
    json_t *reply = NULL;
    result = gs__cli_connect(&opts.cli, &client);
    if (result == GS_EXIT_OK)
        result = gs__cli_call(&opts.cli, client, json_pack("{s:s}", "op", "list"), &reply);
    gs_client_close(client);
    if (result != GS_EXIT_OK)
        return result;
    if (opts.cli.json)
        print_json(reply);
    else
        print_list(reply);
    json_decref(reply);
    return GS_EXIT_OK;
}

/* Parses a lease id; 0 when it is not one. */
static unsigned long long parse_id(const char *text)
{
    char *end = NULL;
    unsigned long long id = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || id > INT64_MAX)
        return 0;
    return id;
}

/* Nonzero while the caller's listing still has lease id. */
static int still_listed(gs_client_t *client, unsigned long long id, int *failed)
{
    json_t *reply = NULL;
    json_t *req = json_pack("{s:s}", "op", "list");
    *failed = req == NULL || gs_client_call(client, req, GS_CLI_CALL_TIMEOUT_MS, &reply) != 0;
    json_decref(req);
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

/* After a release whose lease is still ending: waits until it is gone (its job stopped, SIGKILL
 * after the daemon's kill grace, its holder reported how it ended), at most that grace and 7 s
 * more, so that what release says does not depend on when it asked. Returns 0 when it ended. */
static int wait_ended(const list_opts_t *opts, gs_client_t *client, unsigned long long id,
                      uint64_t grace_ms)
{
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    int failed = 0;
    for (uint64_t waited = 0; waited < grace_ms + 7000; waited += 50) {
        if (!still_listed(client, id, &failed))
            return failed ? gs__cli_fail(&opts->cli, GS_EXIT_FAIL, "unreachable",
                                         "no reply from gpushared")
                          : 0;
        nanosleep(&nap, NULL);
    }
    return gs__cli_fail(&opts->cli, GS_EXIT_FAIL, "ending",
                        "lease %llu is still ending %.0f s after its release: processes still "
                        "hold its region (see gpushare status --processes%s)",
                        id, (double)(grace_ms + 7000) / 1000.0,
                        opts->force ? "" : "; root may release it --force");
}

/* Releases one lease: its reply (success or error) goes into out with --json, else it is
 * printed. Returns the exit status for it. */
static int release_one(const list_opts_t *opts, gs_client_t *client, unsigned long long id,
                       json_t *out)
{
    json_t *reply = NULL;
    json_t *req = json_pack("{s:s, s:I}", "op", "release", "lease", (json_int_t)id);
    if (req != NULL && opts->force)
        json_object_set_new(req, "force", json_true());
    int result = req != NULL ? gs_client_call(client, req, GS_CLI_CALL_TIMEOUT_MS, &reply) : -1;
    json_decref(req);
    if (result != 0)
        return gs__cli_fail(&opts->cli, GS_EXIT_FAIL, "unreachable", "no reply from gpushared");
    const char *code = gs_reply_error(reply, NULL);
    int status = code != NULL ? gs__cli_exit_for(code) : GS_EXIT_OK;
    int ended = code == NULL && strcmp(gs__cli_str(reply, "state"), "ended") == 0;
    if (code == NULL && !ended) {
        status = wait_ended(opts, client, id, gs__cli_uint(reply, "kill_grace_ms"));
        ended = status == GS_EXIT_OK;
        if (ended)
            json_object_set_new(reply, "state", json_string("ended"));
    }
    if (opts->cli.json)
        json_array_append(out, reply);
    else if (code != NULL)
        gs__cli_reply_error(&opts->cli, reply);
    else if (ended)
        printf("lease %llu released%s\n", id, opts->force ? " by force" : "");
    json_decref(reply);
    return status;
}

int gs_cli_release(int argc, char **argv)
{
    list_opts_t opts;
    int result = parse_args(argc, argv, &opts, 1);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    for (int i = 0; i < opts.n_ids; i++) {
        if (parse_id(opts.ids[i]) == 0)
            return gs__cli_fail(&opts.cli, GS_EXIT_USAGE, "usage",
                                "\"%s\" is not a lease ID (see gpushare leases)", opts.ids[i]);
    }
    gs_client_t *client = NULL;
    result = gs__cli_connect(&opts.cli, &client);
    json_t *replies = json_array();
    int status = result;
    for (int i = 0; result == GS_EXIT_OK && i < opts.n_ids; i++) {
        int one = release_one(&opts, client, parse_id(opts.ids[i]), replies);
        status = status == GS_EXIT_OK ? one : status; /* the first failure's status */
    }
    gs_client_close(client);
    if (opts.cli.json && result == GS_EXIT_OK)
        gs__cli_print_json(replies);
    json_decref(replies);
    return status;
}
