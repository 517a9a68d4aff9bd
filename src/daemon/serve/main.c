/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared: the node daemon that grants GPU leases (see docs/man/gpushared.8). */
#include "serve.h"

#include "gpushare/version.h"
#include "gpushare/error.h"
#include "gpushare/log.h"

#include <getopt.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exit statuses: the unit does not restart gpushared on 75 or 78 (RestartPreventExitStatus). */
enum { EXIT_USAGE = 2, EXIT_RUNNING = 75, EXIT_CONFIG = 78 };

typedef struct options {
    int check_config; /* 1: text, 2: JSON (--json) */
    const char *config;
    const char *socket;
    const char *state_dir;
    const char *metrics_listen;
    enum gs_log_level level;
} options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpushared [--config FILE] [--socket PATH] [--state-dir DIR]\n"
            "                 [--metrics-listen ADDR:PORT] [--log-level LEVEL]\n"
            "       gpushared --check-config [--json] [--config FILE]\n"
            "\n"
            "Grants GPU leases on this node; runs in the foreground (for systemd).\n"
            "  --config FILE             configuration (default %s; optional when absent)\n"
            "  --socket PATH             API socket (default from the config, or\n"
            "                            $GPUSHARE_SOCKET, or /run/gpushare/gpushared.sock)\n"
            "  --state-dir DIR           ledger and lease regions (default %s)\n"
            "  --metrics-listen A:P      Prometheus endpoint (default %s; port 0 = off)\n"
            "  --log-level LEVEL         error, warn, info (default) or debug\n"
            "  --check-config            read the configuration and the GPUs it applies to,\n"
            "                            say what is wrong (exit 78) or what it sets (exit 0);\n"
            "                            touches nothing (a running gpushared may serve);\n"
            "  --json                    with --check-config: what it sets as JSON\n"
            "  --version                 print the version\n"
            "  -h, --help                this help\n"
            "See gpushared(8) and docs/api.md.\n",
            GS__DEFAULT_CONFIG, GS__DEFAULT_STATE_DIR, GS__DEFAULT_METRICS);
}

/* Nonzero when the long option getopt_long just returned (name) was written as an abbreviation
 * ("--state" for --state-dir): options are taken only as written in full. */
static int abbreviated(char **argv, const char *name)
{
    const char *word = argv[optind - 1];
    if (optarg != NULL && optarg == argv[optind - 1] && optind >= 2)
        word = argv[optind - 2];
    size_t n = strlen(name);
    return strncmp(word, "--", 2) == 0 &&
           !(strncmp(word + 2, name, n) == 0 && (word[2 + n] == '\0' || word[2 + n] == '='));
}

/* One option getopt_long returned. Returns 0 to go on, -1 to stop with status 0 (help,
 * version), or the exit status of a usage error (printed). */
static int take_option(options_t *opts, int c, char **argv)
{
    switch (c) {
    case 'c':
        opts->config = optarg;
        return 0;
    case 's':
        opts->socket = optarg;
        return 0;
    case 'd':
        opts->state_dir = optarg;
        return 0;
    case 'm':
        opts->metrics_listen = optarg;
        return 0;
    case 'l':
        if (gs_log_level_parse(optarg, &opts->level) == 0)
            return 0;
        fprintf(stderr, "gpushared: --log-level \"%s\" must be error, warn, info or debug\n",
                optarg);
        return EXIT_USAGE;
    case 'C':
        opts->check_config |= 1;
        return 0;
    case 'J':
        opts->check_config |= 2;
        return 0;
    case 'h':
        usage(stdout);
        return -1;
    case 'V':
        printf("gpushared %s\n", GS_VERSION);
        return -1;
    default:
        fprintf(stderr, "gpushared: unknown or incomplete option \"%s\" (see --help)\n",
                argv[optind - 1]);
        return EXIT_USAGE;
    }
}

/* Returns 0, or the exit status when the process should stop (help, version, usage error). */
static int parse_args(int argc, char **argv, options_t *opts)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"socket", required_argument, NULL, 's'},
        {"state-dir", required_argument, NULL, 'd'},
        {"metrics-listen", required_argument, NULL, 'm'},
        {"log-level", required_argument, NULL, 'l'},
        {"check-config", no_argument, NULL, 'C'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    memset(opts, 0, sizeof(*opts));
    opts->level = GS_LOG_INFO;
    int c, li = -1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+", longopts, &li)) != -1) {
        if (li >= 0 && c != '?' && abbreviated(argv, longopts[li].name)) {
            fprintf(stderr, "gpushared: unknown option \"%s\" (did you mean --%s?)\n",
                    argv[optind - 1 - (optarg != NULL && optarg == argv[optind - 1])],
                    longopts[li].name);
            return EXIT_USAGE;
        }
        li = -1;
        int status = take_option(opts, c, argv);
        if (status != 0)
            return status;
    }
    if (optind < argc) {
        fprintf(stderr, "gpushared: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (opts->check_config == 2) {
        fprintf(stderr, "gpushared: --json goes with --check-config (see --help)\n");
        return EXIT_USAGE;
    }
    return 0;
}

static int set_override(char *dst, size_t len, const char *value, const char *what)
{
    if (value == NULL)
        return 0;
    if (value[0] == '\0' || strlen(value) >= len) {
        gs_error("%s \"%s\" is empty or too long", what, value);
        return GS_EINVAL;
    }
    snprintf(dst, len, "%s", value);
    return 0;
}

/* Jobs find the daemon by its socket's path (GPUSHARE_REGION) from their own directories. */
static int absolute_socket(gs__config_t *cfg)
{
    if (cfg->socket[0] == '/')
        return 0;
    char cwd[GS__PATH_MAX], path[2 * GS__PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL ||
        (size_t)snprintf(path, sizeof(path), "%s/%s", cwd, cfg->socket) >= sizeof(cfg->socket)) {
        gs_error("socket \"%s\": cannot make it an absolute path", cfg->socket);
        return GS_EINVAL;
    }
    memcpy(cfg->socket, path, strlen(path) + 1);
    return 0;
}

/* Defaults, then the config file, then $GPUSHARE_SOCKET, then the command line. */
static int load_config(gs__config_t *cfg, const options_t *opts)
{
    char err[GS__CONFIG_ERRMAX];
    gs__config_defaults(cfg);
    const char *path = opts->config != NULL ? opts->config : GS__DEFAULT_CONFIG;
    int result = gs__config_load(cfg, path, err, sizeof(err));
    if (result == GS_ENOENT && opts->config == NULL) {
        gs_info("no %s: using the defaults", path);
        result = 0;
    }
    if (result != 0) {
        gs_error("%s", err);
        return result;
    }
    const char *env = getenv("GPUSHARE_SOCKET");
    if (env != NULL && env[0] != '\0')
        result = set_override(cfg->socket, sizeof(cfg->socket), env, "GPUSHARE_SOCKET");
    if (result == 0)
        result = set_override(cfg->socket, sizeof(cfg->socket), opts->socket, "--socket");
    if (result == 0)
        result =
            set_override(cfg->state_dir, sizeof(cfg->state_dir), opts->state_dir, "--state-dir");
    uint32_t addr;
    uint16_t port;
    if (result == 0 && opts->metrics_listen != NULL &&
        gs__config_parse_listen(opts->metrics_listen, &addr, &port) != 0) {
        gs_error("--metrics-listen \"%s\" is not ADDRESS:PORT (e.g. 127.0.0.1:9447)",
                 opts->metrics_listen);
        result = GS_EINVAL;
    }
    if (result == 0)
        result = set_override(cfg->metrics_listen, sizeof(cfg->metrics_listen),
                              opts->metrics_listen, "--metrics-listen");
    if (result == 0)
        result = absolute_socket(cfg);
    return result;
}

static void log_gpus(const gs__daemon_t *d)
{
    if (gs__inventory_simulated(d->inv))
        gs_warn("using gpusim (simulated GPUs) from %s: the NVIDIA kernel driver is not loaded "
                "(/proc/driver/nvidia/version is missing)",
                gs__inventory_library(d->inv));
    else
        gs_info("NVML %s, driver %s", gs__inventory_library(d->inv), gs__inventory_driver(d->inv));
    for (unsigned i = 0; i < d->n_gpus; i++) {
        const gs__gpu_t *g = &d->gpus[i];
        char total[32], driver[32], reserve[32];
        gs_qty_format_human(g->total, total, sizeof(total));
        gs_qty_format_human(g->driver_reserved, driver, sizeof(driver));
        gs_qty_format_human(g->reserve, reserve, sizeof(reserve));
        gs_info("GPU %u: %s %s, %s (%s reserved by the driver), mode %s, overprovision %u, "
                "reserve %s",
                g->index, g->name, g->uuid, total, driver, gs_gpu_mode_name(g->mode),
                g->overprovision, reserve);
    }
    if (d->n_gpus == 0)
        gs_warn("no GPU found: every lease request will be refused");
}

/* The GPUs as NVML has them and the configuration sets them (gs__gpus_setup). Returns 0 or the
 * code, logged. */
/* Where gpushared keeps the host's simulated node (gpusim with GPUSIM_STATE unset). */
static void sim_node_of(const gs__daemon_t *d, char *buf, size_t len)
{
    snprintf(buf, len, "%s/gpusim", d->cfg.runtime_dir);
}

static int open_gpus(gs__daemon_t *d)
{
    char err[GS__PATH_MAX + 256];
    char sim_node[GS__PATH_MAX + 16];
    sim_node_of(d, sim_node, sizeof(sim_node));
    int result = gs__inventory_open(d->cfg.nvml_library, sim_node, &d->inv, err, sizeof(err));
    if (result == 0)
        result = gs__gpus_setup(d, err, sizeof(err));
    if (result != 0)
        gs_error("%s", err);
    return result;
}

/* Claims the node (core/claim.h): its state directory, then its GPUs. Returns 0 or the code,
 * logged, with the exit status in *status. */
static int claim_node(gs__daemon_t *d, gs__claim_t *claim, int *status)
{
    char err[GS__PATH_MAX + 256];
    char sim_node[GS__PATH_MAX + 16];
    sim_node_of(d, sim_node, sizeof(sim_node));
    int result = gs__claim_state(claim, &d->cfg, err, sizeof(err));
    /* The host's simulated node before it is made: another daemon's is refused, not doubled. */
    if (result == 0 && gs__inventory_host_node(sim_node))
        result = gs__claim_sim(claim, sim_node, err, sizeof(err));
    if (result == 0 && (result = open_gpus(d)) != 0) {
        *status = result == GS_EINVAL ? EXIT_CONFIG : 1;
        return result;
    }
    if (result == 0)
        result = gs__claim_gpus(claim, d->gpus, d->n_gpus, err, sizeof(err));
    if (result != 0) {
        gs_error("%s", err);
        *status = result == GS_EBUSY ? EXIT_RUNNING : 1;
    }
    return result;
}

/* Claims the node, binds the metrics endpoint (a port that is taken is a configuration error,
 * found before anything is started), opens the state directory, the ledger and the GPUs' modes,
 * and restores the leases. Returns 0 or the code (logged), with the exit status in *status. */
static int start(gs__daemon_t *d, gs__claim_t *claim, gs__metrics_t **metrics, int *status,
                 int *modes)
{
    char err[GS__PATH_MAX + 256];
    int result = claim_node(d, claim, status);
    if (result != 0)
        return result;
    log_gpus(d);
    if ((result = gs__metrics_start(d, metrics, err, sizeof(err))) != 0) {
        gs_error("%s", err);
        *status = EXIT_CONFIG;
        return result;
    }
    result = gs__regions_init(&d->cfg, err, sizeof(err));
    if (result == 0)
        result = gs__compute_sched_open(d, err, sizeof(err));
    char db[GS__PATH_MAX + 16];
    snprintf(db, sizeof(db), "%s/state.db", d->cfg.state_dir);
    if (result == 0)
        result = gs__ledger_open(db, &d->ledger, err, sizeof(err));
    *modes = result == 0; /* from here on, the modes may have started something */
    if (result == 0)
        result = gs__modes_start(d, err, sizeof(err));
    if (result != 0) {
        gs_error("%s", err);
        *status = result == GS_EINVAL || result == GS_ENOSYS ? EXIT_CONFIG : 1;
        return result;
    }
    if (d->cfg.region_dir[0] != '\0')
        gs_warn("region_dir = %s is no longer used: lease regions are sealed memfds of the "
                "daemon (ignored)",
                d->cfg.region_dir);
    return gs__leases_restore(d); /* a ledger that cannot be read is logged by the ledger */
}

static void block_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    /* Blocked before any thread starts, so only the loop's signalfd sees them. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Stops everything. The GPUs' modes (MPS control daemons) are stopped only on a clean stop:
 * after a failure the leases' jobs go on, and the next start finds their MPS servers again. A
 * daemon that stopped before its modes started (another one holds the node) touches none. */
static void stop(gs__daemon_t *d, gs__metrics_t *metrics, int clean, int modes)
{
    gs__metrics_stop(metrics);
    gs__watchdog_stop(d);
    gs__api_shutdown(d);
    if (modes && clean)
        gs__modes_stop(d);
    else if (modes)
        gs__modes_leave(d);
    gs__compute_sched_close(d);
    gs__ckpt_close(d);
    gs__inventory_close(d->inv);
    gs__daemon_close(d);
}

/* Each live lease keeps its region open (the kernel is asked about the locks on it), so a busy
 * node needs more descriptors than the usual soft limit of 1024. */
static void raise_fd_limit(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
            gs_warn("cannot raise the open file limit: %s", gs_strerror(-errno));
    }
}

/* What a start would need of the host for the GPUs' modes: mps mode's control program. Returns 0,
 * or GS_ENOENT with one line said. */
static int check_mode_needs(const gs__daemon_t *d)
{
    for (unsigned i = 0; i < d->n_gpus; i++) {
        const gs__gpu_t *g = &d->gpus[i];
        if (!(gs_gpu_mode_flags(g->mode) & GS_MODE_MPS_SERVER))
            continue;
        char path[GS__PATH_MAX];
        gs__gpus_mps_control(d, path, sizeof(path));
        if (path[0] != '\0')
            continue;
        gs_error("GPU %u is mode = mps, but its MPS control program %s is not found%s: install "
                 "NVIDIA's MPS (nvidia-cuda-mps-control) or set mps_control = PATH",
                 g->index, d->cfg.mps_control,
                 strchr(d->cfg.mps_control, '/') != NULL ? "" : " on PATH");
        return GS_ENOENT;
    }
    return 0;
}

/* gpushared --check-config: the configuration and the GPUs it applies to, as a daemon would
 * start with them, without claiming or starting anything (json: as one JSON object, which
 * gpushare doctor reads). Returns 0 or EXIT_CONFIG. */
static int check_config(gs__daemon_t *d, int json)
{
    int result = open_gpus(d);
    /* The text form answers "would a start work?"; the JSON form (gpushare doctor's) says what
     * the configuration sets, and doctor checks the host's part itself, one line a problem. */
    if (result == 0 && !json)
        result = check_mode_needs(d);
    const gs__config_t *cfg = &d->cfg;
    if (result == 0 && json) {
        json_t *view = gs__view_config(d);
        char *text = json_dumps(view, JSON_COMPACT | JSON_ENSURE_ASCII);
        printf("%s\n", text != NULL ? text : "{}");
        free(text);
        json_decref(view);
    } else if (result == 0) {
        printf("%s: the configuration is valid\n",
               cfg->path[0] != '\0' ? cfg->path : "(no file: the defaults)");
        printf("socket %s, state_dir %s, metrics_listen %s, enforce %s, watch_interval %.1f s\n",
               cfg->socket, cfg->state_dir, cfg->metrics_listen, gs__enforce_name(cfg->enforce),
               cfg->watch_interval_ms / 1000.0);
        for (unsigned i = 0; i < d->n_gpus; i++) {
            const gs__gpu_t *g = &d->gpus[i];
            char reserve[32];
            gs_qty_format_human(g->reserve, reserve, sizeof(reserve));
            printf("GPU %u: %s %s, mode %s, overprovision %u, reserve %s\n", g->index, g->name,
                   g->uuid, gs_gpu_mode_name(g->mode), g->overprovision, reserve);
        }
        if (d->n_gpus == 0)
            printf("no GPU found: every lease request would be refused\n");
    }
    gs__inventory_close(d->inv);
    d->inv = NULL;
    return result == 0 ? 0 : EXIT_CONFIG;
}

/* Runs the daemon until it is stopped. Returns the exit status. */
static int run(gs__daemon_t *d)
{
    static gs__claim_t claim; /* large: kept off the stack */
    gs__claim_init(&claim);
    block_signals();
    char err[GS__PATH_MAX + 256];
    gs__metrics_t *metrics = NULL;
    int status = 1, modes = 0;
    int result = start(d, &claim, &metrics, &status, &modes);
    if (result == 0 && (result = gs__watchdog_start(d)) != 0)
        gs_error("cannot start the watchdog: %s", gs_strerror(result));
    if (result == 0 && (result = gs__ckpt_start(d)) != 0)
        gs_error("cannot start the checkpoint worker: %s", gs_strerror(result));
    if (result == 0)
        gs__metrics_publish(metrics, d);
    if (result == 0 && (result = gs__server_run(d, metrics, err, sizeof(err))) != 0) {
        gs_error("%s", err);
        status = result == GS_EINVAL ? EXIT_CONFIG : result == GS_EBUSY ? EXIT_RUNNING : 1;
    }
    int fatal = d->fatal;
    stop(d, metrics, result == 0 && !fatal, modes);
    gs__claim_release(&claim);
    return result == 0 && !fatal ? 0 : status;
}

int main(int argc, char **argv)
{
    options_t opts;
    int status = parse_args(argc, argv, &opts);
    if (status != 0)
        return status < 0 ? 0 : status;
    gs_log_init("gpushared", opts.level);
    gs_log_set_timestamps(!gs_log_stderr_is_journal()); /* the journal stamps lines itself */
    raise_fd_limit();
    gs__daemon_t *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return 1;
    umask(022);
    gs__daemon_init(d);
    gs__api_attach(d);
    if (load_config(&d->cfg, &opts) != 0)
        status = EXIT_CONFIG;
    else if (opts.check_config)
        status = check_config(d, opts.check_config & 2);
    else
        status = run(d);
    free(d);
    return status;
}
