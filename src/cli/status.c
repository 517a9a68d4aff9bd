/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare status and top: the node's GPUs, their leases, processes and the waiting requests,
 * as a table of at most 80 columns (or JSON). */
#include "cli.h"
#include "daemon_cli.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define WIDTH 80

typedef struct status_opts {
    gs__cli_t cli;
    int processes;
    long iterations; /* top: 0 = until q or Ctrl-C */
    unsigned interval_ms;
} status_opts_t;

static void usage(FILE *out, int top)
{
    if (top)
        fprintf(out, "usage: gpushare top [--interval SECONDS] [--iterations N] [--processes]\n"
                     "                    [--json] [--socket PATH]\n\n"
                     "The status table with the time, refreshed every second until q or Ctrl-C.\n"
                     "  --interval SECONDS   refresh period (default 1)\n"
                     "  --iterations N       stop after N refreshes\n"
                     "  --processes          each GPU's processes too\n"
                     "  --json               one JSON status object per line\n");
    else
        fprintf(out, "usage: gpushare status [--processes] [--json] [--socket PATH]\n\n"
                     "The node's GPUs (mode, memory free to lease, used / leased / total, compute\n"
                     "promised, utilization) and under each its leases: yours in detail (root:\n"
                     "all), the others as a count; then the requests waiting, with why.\n"
                     "  --processes          each GPU's processes (pid, user, lease, memory from\n"
                     "                       NVML); other users' as a count\n"
                     "  --json               the daemon's status object (docs/api.md)\n");
    fprintf(out,
            "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n"
            "  -h, --help           this help\n",
            GS_DEFAULT_SOCKET);
}

/* top's --iterations and --interval. */
static int top_option(status_opts_t *opts, int c, const char *arg)
{
    char *end = NULL;
    if (c == 'n') {
        opts->iterations = strtol(arg, &end, 10);
        if (end == arg || *end != '\0' || opts->iterations < 1)
            return gs__cli_usage(&opts->cli, "--iterations \"%s\" must be a whole number >= 1",
                                 arg);
        return 0;
    }
    double s = strtod(arg, &end);
    if (end == arg || *end != '\0' || !(s >= 0.1 && s <= 3600))
        return gs__cli_usage(&opts->cli, "--interval \"%s\" must be seconds from 0.1 to 3600", arg);
    opts->interval_ms = (unsigned)(s * 1000);
    return 0;
}

static int one_option(void *ctx, int c, const char *value)
{
    status_opts_t *opts = ctx;
    if (c == 'p') {
        opts->processes = 1;
        return 0;
    }
    return top_option(opts, c, value);
}

static int parse_args(int argc, char **argv, status_opts_t *opts, int top)
{
    static const gs__cli_opt_t top_options[] = {
        {"processes", 0, 'p', 0},
        {"iterations", 1, 'n', 0},
        {"interval", 1, 'i', 0},
        {NULL, 0, 0, 0},
    };
    static const gs__cli_opt_t status_options[] = {{"processes", 0, 'p', 0}, {NULL, 0, 0, 0}};
    gs__cli_args_t args = {.opts = top ? top_options : status_options,
                           .flags = GS__CLI_CHECK | GS__CLI_SOCKET,
                           .handle = one_option,
                           .ctx = opts};
    memset(opts, 0, sizeof(*opts));
    gs__cli_init(&opts->cli, top ? "top" : "status");
    opts->interval_ms = 1000;
    int next = 0, result = gs__cli_options(&opts->cli, argc, argv, &args, &next);
    if (result == GS__CLI_HELP)
        usage(stdout, top);
    if (result == 0 && next < argc)
        result = gs__cli_usage(&opts->cli, "unexpected argument \"%s\"", argv[next]);
    return result;
}

/* The model of a GPU without NVIDIA's prefix, as nvidia-smi's narrow columns show it. */
static const char *model(const char *name)
{
    if (strncmp(name, "NVIDIA ", 7) == 0)
        return name + 7;
    return strncmp(name, "Tesla ", 6) == 0 ? name + 6 : name;
}

/* "gpushared 0.2.0 on node (simulated), driver X, placement P" and "2 GPUs, 1 lease, 0
 * waiting" with the time at the right. */
static void print_header(const json_t *status, int64_t now)
{
    const json_t *node = json_object_get(status, "node");
    size_t n_gpus = json_array_size(json_object_get(status, "gpus"));
    uint64_t leases = gs__cli_uint(node, "leases");
    uint64_t waiting = gs__cli_uint(json_object_get(status, "queue"), "length");
    char line[256], fitted[WIDTH + 8], counts[96], stamp[32];
    snprintf(line, sizeof(line), "%s on %s%s, driver %s, placement %s", gs__cli_str(node, "daemon"),
             gs__cli_str(node, "hostname"),
             json_is_true(json_object_get(node, "simulated")) ? " (gpusim)" : "",
             gs__cli_str(node, "driver"), gs__cli_str(node, "placement"));
    gs__cli_fit(line, WIDTH, fitted, sizeof(fitted));
    printf("%s\n", fitted);
    snprintf(counts, sizeof(counts), "%zu GPU%s, %llu lease%s, %llu waiting", n_gpus,
             n_gpus == 1 ? "" : "s", (unsigned long long)leases, leases == 1 ? "" : "s",
             (unsigned long long)waiting);
    time_t t = (time_t)(now / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
    printf("%-*s%s\n", WIDTH - (int)strlen(stamp), counts, stamp);
    const json_t *ledger = json_object_get(node, "ledger");
    if (json_is_true(json_object_get(ledger, "disk_full")))
        printf("the ledger's filesystem is full: the history is not written (%llu ended leases "
               "so far); grants go on from the room kept for them\n",
               (unsigned long long)gs__cli_uint(ledger, "history_dropped"));
    printf("GPU %-16s %-9s %7s %27s %7s %5s\n", "NAME", "MODE", "FREE", "USED / LEASED / TOTAL",
           "COMPUTE", "UTIL");
}

/* One lease under its GPU: at most 80 columns, the name and command cut to fit. */
static void print_lease_row(const json_t *lease, int64_t now)
{
    char used[16], limit[16], both[40], compute[24] = "-", left[24], name[16], command[32];
    gs__cli_bytes_short(gs__cli_uint(lease, "memory_used"), used, sizeof(used));
    gs__cli_bytes_short(gs__cli_uint(lease, "memory_limit"), limit, sizeof(limit));
    snprintf(both, sizeof(both), "%s / %s", used, limit);
    uint64_t share = gs__cli_uint(lease, "compute_share");
    if (share != 0)
        snprintf(compute, sizeof(compute), "%llu%%", (unsigned long long)share);
    const char *state = gs__cli_str(lease, "state");
    if (strcmp(state, "active") == 0)
        gs__cli_time_left(lease, now, left, sizeof(left));
    else
        snprintf(left, sizeof(left), "%s", state);
    gs__cli_fit(gs__cli_str(lease, "name"), 10, name, sizeof(name));
    size_t wide = strlen(left) > 7 ? strlen(left) - 7 : 0; /* "suspended": the command gives way */
    gs__cli_fit_command(gs__cli_str(lease, "command"), 17 - (wide < 10 ? wide : 10), command,
                        sizeof(command));
    char user[24];
    uint64_t over = gs__cli_uint(lease, "over_limit");
    printf("  %s %5llu %-8s %-10s %15s %7s %7s  %s\n", over > 0 ? "!" : " ",
           (unsigned long long)gs__cli_uint(lease, "id"),
           gs__cli_fit(gs__cli_str(lease, "user"), 8, user, sizeof(user)),
           name[0] != '\0' ? name : "-", both, compute, left, command);
    uint64_t ooms = gs__cli_uint(lease, "oom_events");
    if (ooms > 0)
        printf("          %llu allocation%s refused: over the limit\n", (unsigned long long)ooms,
               ooms == 1 ? "" : "s");
    if (over > 0) {
        char real[32], by[32];
        gs__cli_bytes(gs__cli_uint(lease, "memory_real"), real, sizeof(real));
        gs__cli_bytes(over, by, sizeof(by));
        printf("          OVER LIMIT: its processes hold %s (%s over)\n", real, by);
    }
}

/* The processes on the GPU that belong to no lease (watchdog): marked rows, others counted. */
static void print_unmanaged(const json_t *gpu)
{
    const json_t *others = json_object_get(gpu, "unmanaged_others");
    size_t i;
    const json_t *row;
    json_array_foreach(json_object_get(gpu, "unmanaged"), i, row)
    {
        char used[32] = "memory NVML cannot tell (N/A)", line[512], fitted[160];
        if (json_is_integer(json_object_get(row, "memory_used")))
            gs__cli_bytes(gs__cli_uint(row, "memory_used"), used, sizeof(used));
        snprintf(line, sizeof(line), "  ! UNMANAGED pid %llu (%s) holds %s: %s",
                 (unsigned long long)gs__cli_uint(row, "pid"), gs__cli_str(row, "user"), used,
                 gs__cli_str(row, "command"));
        printf("%s\n", gs__cli_fit(line, WIDTH, fitted, sizeof(fitted)));
    }
    uint64_t n = gs__cli_uint(others, "processes");
    if (n > 0) {
        char used[32];
        gs__cli_bytes(gs__cli_uint(others, "memory_used"), used, sizeof(used));
        printf("  ! UNMANAGED %llu process%s of other users hold%s %s\n", (unsigned long long)n,
               n == 1 ? "" : "es", n == 1 ? "s" : "", used);
    }
}

static void print_processes(const json_t *gpu)
{
    const json_t *procs = json_object_get(gpu, "processes");
    const json_t *others = json_object_get(gpu, "others");
    uint64_t hidden = gs__cli_uint(others, "processes");
    if (json_array_size(procs) > 0)
        printf("    %7s %-8s %5s %8s  %s\n", "PID", "USER", "LEASE", "MEMORY", "PROCESS");
    size_t i;
    const json_t *p;
    json_array_foreach(procs, i, p)
    {
        char mem[16] = "N/A", lease[24] = "-";
        if (json_is_integer(json_object_get(p, "memory_used")))
            gs__cli_bytes_short(gs__cli_uint(p, "memory_used"), mem, sizeof(mem));
        if (gs__cli_uint(p, "lease") != 0)
            snprintf(lease, sizeof(lease), "%llu", (unsigned long long)gs__cli_uint(p, "lease"));
        char user[24];
        printf("    %7llu %-8s %5s %8s  %.43s\n", (unsigned long long)gs__cli_uint(p, "pid"),
               gs__cli_fit(gs__cli_str(p, "user"), 8, user, sizeof(user)), lease, mem,
               gs__cli_str(p, "name"));
    }
    if (hidden > 0) {
        char mem[16];
        gs__cli_bytes_short(gs__cli_uint(others, "process_memory"), mem, sizeof(mem));
        printf("    %llu process%s of other users, %s\n", (unsigned long long)hidden,
               hidden == 1 ? "" : "es", mem);
    }
    if (json_array_size(procs) == 0 && hidden == 0)
        printf("    no processes\n");
}

/* The GPU's line: FREE is the memory not promised to leases (what a --gpu-memory request can
 * still get), which reads right on a GPU that leases share by memory. */
static void print_gpu_line(const json_t *gpu)
{
    char name[24], free_mem[16], used[16], leased[16], total[16], memory[64], compute[24];
    gs__cli_fit(model(gs__cli_str(gpu, "name")), 16, name, sizeof(name));
    gs__cli_bytes_short(gs__cli_uint(gpu, "memory_free"), free_mem, sizeof(free_mem));
    gs__cli_bytes_short(gs__cli_uint(gpu, "memory_used"), used, sizeof(used));
    gs__cli_bytes_short(gs__cli_uint(gpu, "memory_leased"), leased, sizeof(leased));
    gs__cli_bytes_short(gs__cli_uint(gpu, "memory_total"), total, sizeof(total));
    snprintf(memory, sizeof(memory), "%7s / %7s / %7s", used, leased, total);
    snprintf(compute, sizeof(compute), "%llu%%",
             (unsigned long long)gs__cli_uint(gpu, "compute_leased"));
    printf("%3llu %-16s %-9s %7s %27s %7s %4llu%%\n",
           (unsigned long long)gs__cli_uint(gpu, "index"), name, gs__cli_str(gpu, "mode"), free_mem,
           memory, compute, (unsigned long long)gs__cli_uint(gpu, "utilization"));
    uint64_t k = gs__cli_uint(gpu, "logical_total");
    if (k > 1)
        printf("    logical GPUs (--gpus): %llu of %llu free\n",
               (unsigned long long)gs__cli_uint(gpu, "logical_free"), (unsigned long long)k);
}

static void print_gpu(const json_t *gpu, int processes, int64_t now)
{
    print_gpu_line(gpu);
    gs__cli_print_modes(gpu);
    const json_t *leases = json_object_get(gpu, "leases");
    const json_t *others = json_object_get(gpu, "others");
    uint64_t n_others = gs__cli_uint(others, "leases");
    if (json_array_size(leases) == 0 && n_others == 0)
        printf("    no leases\n");
    if (json_array_size(leases) > 0)
        printf("    %5s %-8s %-10s %15s %7s %7s  %s\n", "LEASE", "USER", "NAME", "USED / LIMIT",
               "COMPUTE", "LEFT", "COMMAND");
    size_t i;
    const json_t *lease;
    json_array_foreach(leases, i, lease) print_lease_row(lease, now);
    if (n_others > 0) {
        char mem[16];
        gs__cli_bytes_short(gs__cli_uint(others, "memory_limit"), mem, sizeof(mem));
        printf("    %llu lease%s of other users, %s leased\n", (unsigned long long)n_others,
               n_others == 1 ? "" : "s", mem);
    }
    print_unmanaged(gpu);
    if (processes)
        print_processes(gpu);
}

/* The waiting requests the caller may see: position, user, what it asks, for how long, why. */
static void print_queue(const json_t *status)
{
    const json_t *requests = json_object_get(json_object_get(status, "queue"), "requests");
    if (json_array_size(requests) == 0)
        return;
    printf("%-7s %-8s %-10s %-32s %6s  %s\n", "WAITING", "USER", "NAME", "REQUEST", "WAITED",
           "COMMAND");
    size_t i;
    const json_t *req;
    json_array_foreach(requests, i, req)
    {
        char position[16], name[16], request[160], fitted[40], waited[24], command[16], why[512];
        snprintf(position, sizeof(position), "#%llu",
                 (unsigned long long)gs__cli_uint(req, "position"));
        gs__cli_fit(gs__cli_str(req, "name"), 10, name, sizeof(name));
        gs__cli_request_text(json_object_get(req, "request"), request, sizeof(request));
        gs__cli_fit(request, 32, fitted, sizeof(fitted));
        gs_format_duration(gs__cli_uint(req, "waiting_ms") / 1000 * 1000, waited, sizeof(waited));
        gs__cli_fit_command(gs__cli_str(req, "command"), 11, command, sizeof(command));
        char user[24];
        printf("%7s %-8s %-10s %-32s %6s  %s\n", position,
               gs__cli_fit(gs__cli_str(req, "user"), 8, user, sizeof(user)),
               name[0] != '\0' ? name : "-", fitted,
               gs__cli_uint(req, "waiting_ms") < 1000 ? "0s" : waited, command);
        gs__cli_fit(gs__cli_str(req, "reason"), WIDTH - 8, why, sizeof(why));
        printf("        %s\n", why);
    }
}

static void print_table(const json_t *status, int processes)
{
    const json_t *node = json_object_get(status, "node");
    int64_t now = json_is_integer(json_object_get(node, "time_ms"))
                      ? (int64_t)gs__cli_uint(node, "time_ms")
                      : gs__cli_wall_ms();
    print_header(status, now);
    size_t i;
    const json_t *gpu;
    json_array_foreach(json_object_get(status, "gpus"), i, gpu) print_gpu(gpu, processes, now);
    print_queue(status);
}

/* Fetches the status. Returns GS_EXIT_OK with *status, or the exit status (printed). */
static int fetch(const status_opts_t *opts, json_t **status)
{
    gs_client_t *client = NULL;
    int result = gs__cli_connect(&opts->cli, &client);
    json_t *req = json_pack("{s:s}", "op", "status");
    if (req != NULL && opts->processes)
        json_object_set_new(req, "processes", json_true());
    if (result == GS_EXIT_OK)
        result = gs__cli_call(&opts->cli, client, req, status);
    else
        json_decref(req);
    gs_client_close(client);
    if (result == GS_EXIT_OK) {
        json_object_del(*status, "ok");
        json_object_del(*status, "op");
    }
    return result;
}

int gs_cli_status(int argc, char **argv)
{
    status_opts_t opts;
    int result = parse_args(argc, argv, &opts, 0);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    json_t *status = NULL;
    result = fetch(&opts, &status);
    if (result != GS_EXIT_OK)
        return result;
    if (opts.cli.json)
        gs__cli_print_json(status);
    else
        print_table(status, opts.processes);
    json_decref(status);
    return GS_EXIT_OK;
}

/* Set by SIGINT/SIGTERM while top runs, so the terminal is restored before exit. */
static volatile sig_atomic_t top_stop;

static void on_stop(int sig)
{
    (void)sig;
    top_stop = 1;
}

/* Waits up to ms for the next refresh; returns nonzero when the user typed q. */
static int wait_key(int interactive, unsigned ms)
{
    struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
    if (!interactive) {
        poll(NULL, 0, (int)ms);
        return 0;
    }
    if (poll(&pfd, 1, (int)ms) > 0) {
        char c = 0;
        if (read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
            return 1;
    }
    return 0;
}

static int top_loop(const status_opts_t *opts, int interactive)
{
    int result = GS_EXIT_OK;
    int tty = isatty(STDOUT_FILENO);
    for (long n = 0; !top_stop && (opts->iterations == 0 || n < opts->iterations); n++) {
        if (n > 0 && wait_key(interactive, opts->interval_ms))
            break;
        if (top_stop)
            break;
        json_t *status = NULL;
        result = fetch(opts, &status);
        if (result != GS_EXIT_OK)
            break;
        if (opts->cli.json) {
            char *text = json_dumps(status, JSON_COMPACT);
            printf("%s\n", text != NULL ? text : "{}");
            free(text);
        } else {
            if (tty)
                printf("\033[H\033[2J");
            print_table(status, opts->processes);
            if (interactive)
                printf("(q to quit)\n");
        }
        fflush(stdout);
        json_decref(status);
    }
    return result;
}

int gs_cli_top(int argc, char **argv)
{
    status_opts_t opts;
    int result = parse_args(argc, argv, &opts, 1);
    if (result != 0)
        return result < 0 ? GS_EXIT_OK : result;
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct termios saved;
    int interactive = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (interactive) {
        struct termios raw = saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    result = top_loop(&opts, interactive);
    if (interactive)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    return result;
}
