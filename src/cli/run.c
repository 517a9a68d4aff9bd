/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare run: the options, the wait for a lease and what it says while it waits. */
#include "run.h"
#include "cli.h"

#include "gpushare/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    char modes[128];
    gs_gpu_mode_list(0, 0, 0, NULL, modes, sizeof(modes));
    fprintf(
        out,
        "usage: gpushare run [LEASE OPTIONS] [--] CMD [ARGS...]\n"
        "\n"
        "Gets a GPU lease from gpushared, runs CMD in it (CUDA_VISIBLE_DEVICES, LD_PRELOAD and\n"
        "GPUSHARE_* set), holds the lease until CMD exits and exits with CMD's status.\n"
        "\n"
        "Size of the lease (exactly one):\n"
        "  --gpus N             N whole logical GPUs\n"
        "  --gpu F              a fraction of one GPU's memory and compute: 0.25 or 25%%\n"
        "  --gpu-memory SIZE    SIZE of one GPU's memory: 4G, 1.5G, 512M (decimals round down\n"
        "                       to whole MiB)\n"
        "  --mig-profile NAME   one MIG instance of that profile (1g.10gb, 3g.40gb, ...)\n"
        "Other options:\n"
        "  --mode MODE          only GPUs of that mode: %s\n"
        "  --compute PCT        guaranteed compute share with --gpu-memory (1-100)\n"
        "  --compute-max PCT    burst cap on compute (passed as GPUSHARE_COMPUTE_MAX)\n"
        "  --gpu-type TYPE      only GPUs of this model (T4, A100-40GB, H100); a list T4,L4\n"
        "                       or the option repeated allows several\n"
        "  --name NAME          a name for the job in listings and the history\n"
        "  --time DURATION      time limit (30m, 2h, 1d): then SIGTERM, SIGKILL after the\n"
        "                       daemon's grace period, and the lease ends\n"
        "  --priority N         -100..100 (above 0: root only); higher is served first\n"
        "  --no-wait            fail at once (exit 75) when nothing fits now\n"
        "  --timeout DURATION   give up (exit 75) after waiting this long (30s, 5m, ...)\n"
        "  --json               its own messages as JSON lines on stderr (CMD's output as is)\n"
        "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n"
        "  -v, --verbose        print the lease granted\n"
        "  -h, --help           this help\n"
        "Exit status: CMD's (128+N when killed by signal N), 1 error, 2 usage, 75 no room\n"
        "(retry later), 78 a GPU the administrator must set up first.\n",
        modes, GS_DEFAULT_SOCKET);
}

void gs__run_say(const gs__run_opts_t *opts, json_t *event, const char *fmt, ...)
{
    if (opts->cli.json) {
        char *text = event != NULL ? json_dumps(event, JSON_COMPACT) : NULL;
        if (text != NULL)
            fprintf(stderr, "%s\n", text);
        free(text);
        json_decref(event);
        return;
    }
    json_decref(event);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpushare: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static int set_kind(const gs__cli_t *cli, gs_lease_request_t *req, gs_lease_kind_t kind)
{
    if (req->kind != GS_LEASE_NONE && req->kind != kind)
        return gs__cli_usage(cli, "give only one of --gpus, --gpu, --gpu-memory and --mig-profile");
    req->kind = kind;
    return 0;
}

/* Parses a whole number from min to max. */
static int whole(const char *arg, long min, long max, long *out)
{
    char *end = NULL;
    long n = strtol(arg, &end, 10);
    if (end == arg || *end != '\0' || n < min || n > max)
        return GS_EINVAL;
    *out = n;
    return 0;
}

/* The labels: --name, --gpu-type, --time. */
static int label_option(const gs__cli_t *cli, int c, const char *arg, gs_lease_request_t *req)
{
    char err[GS_QTY_ERR_MAX];
    if (c == 'N') {
        if (gs_lease_name_check(arg, err, sizeof(err)) != 0)
            return gs__cli_usage(cli, "--name: %s", err);
        snprintf(req->name, sizeof(req->name), "%s", arg);
        return 0;
    }
    if (c == 'T') {
        if (gs_lease_add_gpu_types(req, arg, err, sizeof(err)) != 0)
            return gs__cli_usage(cli, "--gpu-type: %s", err);
        return 0;
    }
    if (gs__cli_parse_duration(arg, 1, GS_LEASE_TIME_MAX, &req->time_limit_ms, err, sizeof(err)) !=
        0)
        return gs__cli_usage(cli, "--time: %s", err);
    return 0;
}

int gs__run_lease_option(const gs__cli_t *cli, int c, const char *arg, gs_lease_request_t *req)
{
    char err[GS_QTY_ERR_MAX];
    long n = 0;
    uint64_t ms = 0;
    switch (c) {
    case 'n':
        if (whole(arg, 1, GS_LEASE_GPUS_MAX, &n) != 0)
            return gs__cli_usage(cli, "--gpus \"%s\" must be a whole number from 1 to 64", arg);
        req->gpus = (uint32_t)n;
        return set_kind(cli, req, GS_LEASE_GPUS);
    case 'f':
        if (gs_qty_parse_fraction(arg, &req->fraction_milli, err, sizeof(err)) != 0)
            return gs__cli_usage(cli, "--gpu: %s", err);
        return set_kind(cli, req, GS_LEASE_FRACTION);
    case 'm':
        if (gs_qty_parse_bytes(arg, GS_QTY_REQUIRE_UNIT, &req->memory, err, sizeof(err)) != 0)
            return gs__cli_usage(cli, "--gpu-memory: %s", err);
        return set_kind(cli, req, GS_LEASE_MEMORY);
    case 'M':
        if (strlen(arg) >= sizeof(req->mig_profile))
            return gs__cli_usage(cli, "--mig-profile \"%s\" is too long", arg);
        snprintf(req->mig_profile, sizeof(req->mig_profile), "%s", arg);
        return set_kind(cli, req, GS_LEASE_MIG);
    case 'o':
        if (gs_gpu_mode_parse(arg, &req->mode) != 0)
            return gs__cli_usage(cli, "--mode \"%s\" must be %s", arg,
                                 gs_gpu_mode_list(0, 0, 0, NULL, err, sizeof(err)));
        return 0;
    case 'c':
    case 'C':
        if (gs_qty_parse_percent(arg, 0, c == 'c' ? &req->compute : &req->compute_max, err,
                                 sizeof(err)) != 0)
            return gs__cli_usage(cli, "%s: %s", c == 'c' ? "--compute" : "--compute-max", err);
        return 0;
    case 'p':
        if (whole(arg, GS_PRIORITY_MIN, GS_PRIORITY_MAX, &n) != 0)
            return gs__cli_usage(cli, "--priority \"%s\" must be a whole number from -100 to 100",
                                 arg);
        req->priority = (int32_t)n;
        return 0;
    case 't':
        if (gs__cli_parse_duration(arg, 0, GS_LEASE_TIMEOUT_MAX, &ms, err, sizeof(err)) != 0)
            return gs__cli_usage(cli, "--timeout: %s", err);
        req->timeout_ms = (uint32_t)ms;
        return 0;
    }
    return label_option(cli, c, arg, req);
}

/* The command as one line for listings: its words joined by spaces, cut to fit. */
static void command_line(char **cmd, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; cmd[i] != NULL && off + 1 < len; i++) {
        int n = snprintf(buf + off, len - off, "%s%s", i > 0 ? " " : "", cmd[i]);
        off += n > 0 ? (size_t)n : 0;
    }
    json_t *probe = json_string(buf); /* invalid UTF-8 would make the request unencodable */
    if (probe == NULL) {
        for (char *p = buf; *p != '\0'; p++)
            *p = (unsigned char)*p >= 0x80 ? '?' : *p;
    }
    json_decref(probe);
}

const gs__cli_opt_t gs__run_options[] = {
    {"gpus", 1, 'n', 0},        {"gpu", 1, 'f', 0},       {"gpu-memory", 1, 'm', 0},
    {"mig-profile", 1, 'M', 0}, {"mode", 1, 'o', 0},      {"compute", 1, 'c', 0},
    {"compute-max", 1, 'C', 0}, {"priority", 1, 'p', 0},  {"timeout", 1, 't', 0},
    {"name", 1, 'N', 0},        {"gpu-type", 1, 'T', 0},  {"time", 1, 'L', 0},
    {"no-wait", 0, 'W', 0},     {"verbose", 0, 'v', 'v'}, {NULL, 0, 0, 0},
};

/* One option (its value checked already). Returns 0, or the exit status of a usage error. */
static int one_option(void *ctx, int c, const char *value)
{
    gs__run_opts_t *opts = ctx;
    if (c == 'W') {
        opts->req.wait = 0;
        return 0;
    }
    if (c == 'v') {
        opts->verbose = 1;
        return 0;
    }
    return gs__run_lease_option(&opts->cli, c, value, &opts->req);
}

static int parse_args(int argc, char **argv, gs__run_opts_t *opts)
{
    gs__cli_args_t args = {.opts = gs__run_options,
                           .flags = GS__CLI_COMMAND | GS__CLI_CHECK | GS__CLI_SOCKET,
                           .handle = one_option,
                           .ctx = opts};
    memset(opts, 0, sizeof(*opts));
    gs__cli_init(&opts->cli, "run");
    opts->cli.json_errors = stderr;
    gs_lease_request_init(&opts->req);
    int next = 0, result = gs__cli_options(&opts->cli, argc, argv, &args, &next);
    if (result == GS__CLI_HELP)
        usage(stdout);
    if (result != 0)
        return result;
    if (next >= argc)
        return gs__cli_usage(&opts->cli, "no command to run");
    opts->cmd = argv + next;
    char err[GS_CLIENT_ERR_MAX];
    if (gs_lease_request_check(&opts->req, err, sizeof(err)) != 0)
        return gs__cli_usage(&opts->cli, "%s", err);
    command_line(opts->cmd, opts->req.command, sizeof(opts->req.command));
    return 0;
}

/* Says that the request waits, where and why. */
static void say_queued(const gs__run_opts_t *opts, json_t *reply)
{
    json_t *event = json_pack("{s:s, s:O, s:O, s:O}", "event", "queued", "position",
                              json_object_get(reply, "position"), "queue_length",
                              json_object_get(reply, "queue_length"), "reason",
                              json_object_get(reply, "reason"));
    gs__run_say(opts, event, "waiting for a lease (position %llu of %llu): %s",
                (unsigned long long)gs__cli_uint(reply, "position"),
                (unsigned long long)gs__cli_uint(reply, "queue_length"),
                gs__cli_str(reply, "reason"));
}

int gs__run_acquire(gs_client_t *client, const gs__run_opts_t *opts, json_t **granted)
{
    json_t *msg = gs_proto_acquire_json(&opts->req);
    int result = msg != NULL ? gs_client_send(client, msg) : GS_ENOMEM;
    json_decref(msg);
    while (result == 0) {
        json_t *reply = NULL;
        result = gs_client_recv(client, -1, &reply);
        if (result != 0)
            break;
        if (gs_reply_error(reply, NULL) != NULL) {
            int status = gs__cli_reply_error(&opts->cli, reply);
            json_decref(reply);
            return status;
        }
        const char *state = gs__cli_str(reply, "state");
        if (strcmp(state, "granted") == 0) {
            *granted = reply;
            return GS_EXIT_OK;
        }
        if (strcmp(state, "queued") == 0)
            say_queued(opts, reply);
        json_decref(reply);
    }
    return gs__cli_fail(
        &opts->cli, GS_EXIT_FAIL, "unreachable", "lost gpushared while waiting for a lease: %s",
        result == GS_ECONNREFUSED ? "it closed the connection" : gs_strerror(result));
}

/* Says which lease was granted (-v, or always with --json). */
static void say_granted(const gs__run_opts_t *opts, const json_t *granted)
{
    const json_t *lease = json_object_get(granted, "lease");
    const json_t *env = json_object_get(granted, "env");
    if (!opts->verbose && !opts->cli.json)
        return;
    char limit[32], share[32] = "";
    gs__cli_bytes(gs__cli_uint(lease, "memory_limit"), limit, sizeof(limit));
    if (gs__cli_uint(lease, "compute_share") != 0)
        snprintf(share, sizeof(share), ", %llu%% compute",
                 (unsigned long long)gs__cli_uint(lease, "compute_share"));
    json_t *event = json_pack("{s:s, s:O, s:O}", "event", "granted", "lease", lease, "env", env);
    gs__run_say(opts, event, "lease %llu: %s on %s%s",
                (unsigned long long)gs__cli_uint(lease, "id"), limit,
                gs__cli_str(env, "CUDA_VISIBLE_DEVICES"), share);
}

int gs_cli_run(int argc, char **argv)
{
    gs__run_opts_t opts;
    int status = parse_args(argc, argv, &opts);
    if (status != 0)
        return status < 0 ? GS_EXIT_OK : status;
    gs_client_t *client = NULL;
    json_t *granted = NULL;
    status = gs__cli_connect(&opts.cli, &client);
    if (status == GS_EXIT_OK)
        status = gs__run_acquire(client, &opts, &granted);
    if (status == GS_EXIT_OK) {
        say_granted(&opts, granted);
        status = gs__run_job(&client, &opts, granted);
    }
    json_decref(granted);
    gs_client_close(client); /* closing the connection ends a lease not released yet */
    return status;
}
