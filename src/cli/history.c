/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare history: finished leases from the daemon's ledger, like sacct. */
#include "cli.h"
#include "daemon_cli.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct history_opts {
    gs__cli_t cli;
    gs_history_query_t query;
} history_opts_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpushare history [--since WHEN] [--user NAME] [--limit N] [--json]\n"
            "                        [--socket PATH]\n\n"
            "Finished leases, most recent first, from gpushared's ledger (they survive restarts):\n"
            "who, what, when, how long, peak memory, allocations refused over the limit (OOM)\n"
            "and how the job ended. Yours; root: everyone's.\n"
            "  --since WHEN         ended since: a duration ago (2h, 1d) or a date\n"
            "                       (2025-06-01 or 2025-06-01T12:00:00, local time)\n"
            "  --user NAME          only this user's (root)\n"
            "  --limit N            at most N leases (default %d, at most %d)\n"
            "  --json               the daemon's reply: a list of history objects (docs/api.md)\n"
            "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n"
            "  -h, --help           this help\n",
            GS_HISTORY_DEFAULT, GS_HISTORY_MAX, GS_DEFAULT_SOCKET);
}

/* A date in local time: "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM[:SS]" (or a blank for the T). */
static int parse_date(const char *text, int64_t *ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *formats[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M",
                             "%Y-%m-%d %H:%M", "%Y-%m-%d"};
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        memset(&tm, 0, sizeof(tm));
        const char *end = strptime(text, formats[i], &tm);
        if (end != NULL && *end == '\0') {
            tm.tm_isdst = -1;
            time_t t = mktime(&tm);
            if (t == (time_t)-1)
                return GS_EINVAL;
            *ms = (int64_t)t * 1000;
            return 0;
        }
    }
    return GS_EINVAL;
}

static int parse_since(const gs__cli_t *cli, const char *text, int64_t *ms)
{
    char err[GS_CLIENT_ERR_MAX];
    uint64_t ago = 0;
    if (parse_date(text, ms) == 0)
        return 0;
    if (gs__cli_parse_duration(text, 1, UINT64_C(100) * 366 * 86400 * 1000, &ago, err,
                               sizeof(err)) != 0)
        return gs__cli_usage(cli,
                             "--since \"%s\": expected a duration ago (2h, 1d) or a date "
                             "(2025-06-01, 2025-06-01T12:00)",
                             text);
    *ms = gs__cli_wall_ms() - (int64_t)ago;
    return 0;
}

static int one_option(void *ctx, int c, const char *value)
{
    history_opts_t *opts = ctx;
    char *end = NULL;
    switch (c) {
    case 'S':
        return parse_since(&opts->cli, value, &opts->query.since_ms);
    case 'u':
        if (strlen(value) >= sizeof(opts->query.user))
            return gs__cli_usage(&opts->cli, "--user \"%s\": too long", value);
        snprintf(opts->query.user, sizeof(opts->query.user), "%s", value);
        return 0;
    }
    long n = strtol(value, &end, 10); /* --limit */
    if (end == value || *end != '\0' || n < 1 || n > GS_HISTORY_MAX)
        return gs__cli_usage(&opts->cli, "--limit \"%s\" must be a whole number from 1 to %d",
                             value, GS_HISTORY_MAX);
    opts->query.limit = (uint32_t)n;
    return 0;
}

static int parse_args(int argc, char **argv, history_opts_t *opts)
{
    static const gs__cli_opt_t options[] = {
        {"since", 1, 'S', 0},
        {"user", 1, 'u', 0},
        {"limit", 1, 'l', 0},
        {NULL, 0, 0, 0},
    };
    gs__cli_args_t args = {.opts = options,
                           .flags = GS__CLI_CHECK | GS__CLI_SOCKET,
                           .handle = one_option,
                           .ctx = opts};
    memset(opts, 0, sizeof(*opts));
    gs__cli_init(&opts->cli, "history");
    opts->query.limit = GS_HISTORY_DEFAULT;
    int next = 0, result = gs__cli_options(&opts->cli, argc, argv, &args, &next);
    if (result == GS__CLI_HELP)
        usage(stdout);
    if (result == 0 && next < argc)
        result = gs__cli_usage(&opts->cli, "unexpected argument \"%s\"", argv[next]);
    return result;
}

/* "2025-06-01 12:00" in local time. */
static void when(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}

/* How the job ended: "exit 0", "signal 9", or "-" when its holder did not say; then why the
 * lease ended unless it was simply released ("signal 9, time limit"). */
static void ending(const json_t *lease, char *buf, size_t len)
{
    const json_t *status = json_object_get(lease, "exit_status");
    const json_t *sig = json_object_get(lease, "signal");
    const char *reason = gs__cli_str(lease, "end_reason");
    int n;
    if (json_is_integer(status))
        n = snprintf(buf, len, "exit %lld", (long long)json_integer_value(status));
    else if (json_is_integer(sig))
        n = snprintf(buf, len, "signal %lld", (long long)json_integer_value(sig));
    else
        n = snprintf(buf, len, "-");
    if (n > 0 && (size_t)n < len && reason[0] != '\0' && strcmp(reason, "released") != 0)
        snprintf(buf + n, len - (size_t)n, ", %s", reason);
}

static void print_row(const json_t *lease)
{
    char ended[32], held[32], peak[16], limit[16], end[128], name[16], gpus[32] = "";
    when((int64_t)gs__cli_uint(lease, "ended_at_ms"), ended, sizeof(ended));
    gs_format_duration(gs__cli_uint(lease, "duration_ms"), held, sizeof(held));
    gs__cli_bytes_short(gs__cli_uint(lease, "peak_memory"), peak, sizeof(peak));
    gs__cli_bytes_short(gs__cli_uint(lease, "memory_limit"), limit, sizeof(limit));
    ending(lease, end, sizeof(end));
    gs__cli_fit(gs__cli_str(lease, "name"), 12, name, sizeof(name));
    size_t i, off = 0;
    const json_t *gpu;
    json_array_foreach(json_object_get(lease, "gpus"), i, gpu)
    {
        int n = snprintf(gpus + off, sizeof(gpus) - off, "%s%llu", i > 0 ? "," : "",
                         (unsigned long long)gs__cli_uint(gpu, "index"));
        off += n > 0 && (size_t)n < sizeof(gpus) - off ? (size_t)n : 0;
    }
    char user[24], submitted[32] = "-", waited[32] = "-";
    if (json_is_integer(json_object_get(lease, "submitted_at_ms"))) {
        when((int64_t)gs__cli_uint(lease, "submitted_at_ms"), submitted, sizeof(submitted));
        gs_format_duration(gs__cli_uint(lease, "queue_wait_ms") / 1000 * 1000, waited,
                           sizeof(waited));
        if (gs__cli_uint(lease, "queue_wait_ms") < 1000)
            snprintf(waited, sizeof(waited), "0s");
    }
    printf("%5llu  %-10s %-12s %-16s %7s %-16s %7s %-5s %6s /%6s %4llu  %-20s %s\n",
           (unsigned long long)gs__cli_uint(lease, "id"),
           gs__cli_fit(gs__cli_str(lease, "user"), 10, user, sizeof(user)),
           name[0] != '\0' ? name : "-", submitted, waited, ended, held, gpus, peak, limit,
           (unsigned long long)gs__cli_uint(lease, "oom_events"), end,
           gs__cli_str(lease, "command"));
}

/* Asks for the history page by page (the daemon answers at most a page per request, with
 * "next" while more is wanted), on one connection; *out gets every lease in order. */
static int fetch(history_opts_t *opts, json_t **out)
{
    json_t *req =
        json_pack("{s:s, s:I, s:I}", "op", "history", "since_ms", (json_int_t)opts->query.since_ms,
                  "limit", (json_int_t)opts->query.limit);
    if (req != NULL && opts->query.user[0] != '\0')
        json_object_set_new(req, "user", json_string(opts->query.user));
    gs_client_t *client = NULL;
    json_t *all = json_array();
    int result = gs__cli_connect(&opts->cli, &client);
    while (result == GS_EXIT_OK && req != NULL) {
        json_t *reply = NULL;
        result = gs__cli_call(&opts->cli, client, json_incref(req), &reply);
        if (result != GS_EXIT_OK)
            break;
        json_array_extend(all, json_object_get(reply, "leases"));
        const json_t *next = json_object_get(reply, "next");
        if (json_is_object(next)) {
            json_object_set(req, "before", json_object_get(next, "before"));
            json_object_set(req, "limit", json_object_get(next, "limit"));
        } else {
            json_decref(req);
            req = NULL;
        }
        json_decref(reply);
    }
    json_decref(req);
    gs_client_close(client);
    if (result != GS_EXIT_OK)
        json_decref(all);
    else
        *out = all;
    return result;
}

int gs_cli_history(int argc, char **argv)
{
    history_opts_t opts;
    int result = parse_args(argc, argv, &opts);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    json_t *leases = NULL;
    result = fetch(&opts, &leases);
    if (result != GS_EXIT_OK)
        return result;
    if (opts.cli.json) {
        gs__cli_print_json(leases);
    } else if (json_array_size(leases) == 0) {
        printf("no finished leases\n");
    } else {
        printf("%5s  %-10s %-12s %-16s %7s %-16s %7s %-5s %14s %4s  %-20s %s\n", "LEASE", "USER",
               "NAME", "SUBMITTED", "WAITED", "ENDED", "HELD", "GPUS", "PEAK / LIMIT", "OOM", "END",
               "COMMAND");
        size_t i;
        const json_t *lease;
        json_array_foreach(leases, i, lease) print_row(lease);
    }
    json_decref(leases);
    return GS_EXIT_OK;
}
