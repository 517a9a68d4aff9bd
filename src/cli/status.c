/* gpushare status and top: the node's GPUs and their leases, as a table (or JSON). */
#include "cli.h"
#include "daemon_cli.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define COMMAND_WIDTH 48

typedef struct status_opts {
    const char *socket;
    int json;
    long iterations; /* top: 0 = until q or Ctrl-C */
    unsigned interval_ms;
} status_opts_t;

static void usage(FILE *out, int top)
{
    if (top)
        fprintf(out, "usage: gpushare top [--interval SECONDS] [--iterations N] [--json] "
                     "[--socket PATH]\n\n"
                     "The status table, refreshed every second until q or Ctrl-C.\n"
                     "  --interval SECONDS   refresh period (default 1)\n"
                     "  --iterations N       stop after N refreshes\n"
                     "  --json               one JSON status object per line\n");
    else
        fprintf(out, "usage: gpushare status [--json] [--socket PATH]\n\n"
                     "The node's GPUs (mode, memory used / leased / total, utilization) and under\n"
                     "each its leases: yours in detail (root: all), the others as a count.\n"
                     "  --json               the daemon's status object (docs/api.md)\n");
    fprintf(out, "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n",
            GS_DEFAULT_SOCKET);
}

static int parse_args(int argc, char **argv, status_opts_t *opts, int top)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"socket", required_argument, NULL, 's'},
        {"iterations", required_argument, NULL, 'n'},
        {"interval", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(opts, 0, sizeof(*opts));
    opts->interval_ms = 1000;
    opterr = 0;
    int c;
    const char *name = top ? "top" : "status";
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end = NULL;
        if (c == 'h') {
            usage(stdout, top);
            return -1;
        } else if (c == 'j') {
            opts->json = 1;
        } else if (c == 's') {
            opts->socket = optarg;
        } else if (c == 'n' && top) {
            opts->iterations = strtol(optarg, &end, 10);
            if (*end != '\0' || opts->iterations < 1) {
                fprintf(stderr, "gpushare top: --iterations \"%s\" must be a whole number >= 1\n",
                        optarg);
                return GS_EXIT_USAGE;
            }
        } else if (c == 'i' && top) {
            double s = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(s >= 0.1 && s <= 3600)) {
                fprintf(stderr,
                        "gpushare top: --interval \"%s\" must be seconds from 0.1 to "
                        "3600\n",
                        optarg);
                return GS_EXIT_USAGE;
            }
            opts->interval_ms = (unsigned)(s * 1000);
        } else {
            fprintf(stderr,
                    "gpushare %s: unknown or incomplete option \"%s\" (see gpushare %s "
                    "--help)\n",
                    name, argv[optind - 1], name);
            return GS_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpushare %s: unexpected argument \"%s\"\n", name, argv[optind]);
        return GS_EXIT_USAGE;
    }
    return 0;
}

static void print_header(const json_t *status)
{
    const json_t *node = json_object_get(status, "node");
    const json_t *queue = json_object_get(status, "queue");
    const json_t *gpus = json_object_get(status, "gpus");
    printf("%s on %s: %zu GPU%s%s, driver %s, placement %s, %llu lease%s, %llu waiting\n",
           gs__cli_str(node, "daemon"), gs__cli_str(node, "hostname"), json_array_size(gpus),
           json_array_size(gpus) == 1 ? "" : "s",
           json_is_true(json_object_get(node, "simulated")) ? " (simulated by gpusim)" : "",
           gs__cli_str(node, "driver"), gs__cli_str(node, "placement"),
           (unsigned long long)gs__cli_uint(node, "leases"),
           gs__cli_uint(node, "leases") == 1 ? "" : "s",
           (unsigned long long)gs__cli_uint(queue, "length"));
    printf("GPU  %-22s %-9s %-9s %-36s %5s\n", "NAME", "MODE", "LOGICAL",
           "MEMORY USED / LEASED / TOTAL", "UTIL");
}

static void print_lease_row(const json_t *lease)
{
    char used[32], limit[32], both[72], compute[24] = "-";
    gs__cli_bytes(gs__cli_uint(lease, "memory_used"), used, sizeof(used));
    gs__cli_bytes(gs__cli_uint(lease, "memory_limit"), limit, sizeof(limit));
    snprintf(both, sizeof(both), "%s / %s", used, limit);
    uint64_t share = gs__cli_uint(lease, "compute_share");
    if (share != 0)
        snprintf(compute, sizeof(compute), "%llu%%", (unsigned long long)share);
    const char *command = gs__cli_str(lease, "command");
    int ending = strcmp(gs__cli_str(lease, "state"), "ending") == 0;
    uint64_t ooms = gs__cli_uint(lease, "oom_events");
    char oom[48] = "", over[128] = "";
    if (ooms > 0)
        snprintf(oom, sizeof(oom), " [%llu refused: over the limit]", (unsigned long long)ooms);
    uint64_t beyond = gs__cli_uint(lease, "over_limit");
    if (beyond > 0) {
        char real[32], by[32];
        gs__cli_bytes(gs__cli_uint(lease, "memory_real"), real, sizeof(real));
        gs__cli_bytes(beyond, by, sizeof(by));
        snprintf(over, sizeof(over), " [OVER LIMIT: its processes hold %s, %s over]", real, by);
    }
    printf("  %s  %5llu  %-10.10s %-24s %7s  %.*s%s%s%s%s\n", beyond > 0 ? "!" : " ",
           (unsigned long long)gs__cli_uint(lease, "id"), gs__cli_str(lease, "user"), both, compute,
           COMMAND_WIDTH, command, strlen(command) > COMMAND_WIDTH ? "..." : "",
           ending ? " (ending)" : "", oom, over);
}

/* The processes on the GPU that belong to no lease: marked rows, and the others' count. */
static void print_unmanaged(const json_t *gpu)
{
    const json_t *rows = json_object_get(gpu, "unmanaged");
    const json_t *others = json_object_get(gpu, "unmanaged_others");
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        char used[32];
        gs__cli_bytes(gs__cli_uint(row, "memory_used"), used, sizeof(used));
        const char *command = gs__cli_str(row, "command");
        printf("  !  pid %llu (user %s) holds %s: %.*s%s [UNMANAGED: in no lease]\n",
               (unsigned long long)gs__cli_uint(row, "pid"), gs__cli_str(row, "user"), used,
               COMMAND_WIDTH, command, strlen(command) > COMMAND_WIDTH ? "..." : "");
    }
    uint64_t n = gs__cli_uint(others, "processes");
    if (n > 0) {
        char used[32];
        gs__cli_bytes(gs__cli_uint(others, "memory_used"), used, sizeof(used));
        printf("  !         %llu other process%s of no lease (other users), %s\n",
               (unsigned long long)n, n == 1 ? "" : "es", used);
    }
}

static void print_gpu(const json_t *gpu)
{
    char used[32], leased[32], total[32], memory[112], logical[24];
    gs__cli_bytes(gs__cli_uint(gpu, "memory_used"), used, sizeof(used));
    gs__cli_bytes(gs__cli_uint(gpu, "memory_leased"), leased, sizeof(leased));
    gs__cli_bytes(gs__cli_uint(gpu, "memory_total"), total, sizeof(total));
    snprintf(memory, sizeof(memory), "%s / %s / %s", used, leased, total);
    snprintf(logical, sizeof(logical), "%llu/%llu free",
             (unsigned long long)gs__cli_uint(gpu, "logical_free"),
             (unsigned long long)gs__cli_uint(gpu, "logical_total"));
    printf("%3llu  %-22.22s %-9s %-9s %-36s %4llu%%\n",
           (unsigned long long)gs__cli_uint(gpu, "index"), gs__cli_str(gpu, "name"),
           gs__cli_str(gpu, "mode"), logical, memory,
           (unsigned long long)gs__cli_uint(gpu, "utilization"));
    const json_t *leases = json_object_get(gpu, "leases");
    const json_t *others = json_object_get(gpu, "others");
    uint64_t n_others = gs__cli_uint(others, "leases");
    if (json_array_size(leases) == 0 && n_others == 0) {
        printf("     no leases\n");
        print_unmanaged(gpu);
        return;
    }
    if (json_array_size(leases) > 0)
        printf("     %5s  %-10s %-24s %7s  %s\n", "LEASE", "USER", "USED / LIMIT", "COMPUTE",
               "COMMAND");
    size_t i;
    const json_t *lease;
    json_array_foreach(leases, i, lease) print_lease_row(lease);
    if (n_others > 0) {
        char mem[32];
        gs__cli_bytes(gs__cli_uint(others, "memory_limit"), mem, sizeof(mem));
        printf("            %llu other lease%s (other users), %s\n", (unsigned long long)n_others,
               n_others == 1 ? "" : "s", mem);
    }
    print_unmanaged(gpu);
}

static void print_queue(const json_t *status)
{
    const json_t *queue = json_object_get(status, "queue");
    const json_t *requests = json_object_get(queue, "requests");
    size_t i;
    const json_t *req;
    json_array_foreach(requests, i, req)
    {
        char *text = json_dumps(json_object_get(req, "request"), JSON_COMPACT);
        printf("waiting #%llu: %s %s\n", (unsigned long long)gs__cli_uint(req, "position"),
               gs__cli_str(req, "command"), text != NULL ? text : "");
        free(text);
    }
}

static void print_table(const json_t *status)
{
    print_header(status);
    size_t i;
    const json_t *gpu;
    json_array_foreach(json_object_get(status, "gpus"), i, gpu) print_gpu(gpu);
    print_queue(status);
}

/* Fetches the status. Returns GS_EXIT_OK with *status, or the exit status (printed). */
static int fetch(const char *socket, json_t **status)
{
    gs_client_t *client = NULL;
    int result = gs__cli_connect(socket, &client);
    if (result == GS_EXIT_OK)
        result = gs__cli_call(client, json_pack("{s:s}", "op", "status"), status);
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
    result = fetch(opts.socket, &status);
    if (result != GS_EXIT_OK)
        return result;
    if (opts.json)
        gs__cli_print_json(status);
    else
        print_table(status);
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
        result = fetch(opts->socket, &status);
        if (result != GS_EXIT_OK)
            break;
        if (opts->json) {
            char *text = json_dumps(status, JSON_COMPACT);
            printf("%s\n", text != NULL ? text : "{}");
            free(text);
        } else {
            if (tty)
                printf("\033[H\033[2J");
            print_table(status);
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
