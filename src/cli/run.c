/* gpushare run: get a lease, run a command inside it, pass its exit status through, release. */
#include "cli.h"
#include "daemon_cli.h"
#include "shim_path.h"

#include "gpushare/error.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How long a job has, after its lease was released by someone else, before SIGKILL. */
#define REVOKE_GRACE_MS 10000

typedef struct run_opts {
    gs_lease_request_t req;
    const char *socket;
    int verbose;
    char **cmd;
} run_opts_t;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: gpushare run [LEASE OPTIONS] [--] CMD [ARGS...]\n"
        "\n"
        "Gets a GPU lease from gpushared, runs CMD in it (CUDA_VISIBLE_DEVICES, LD_PRELOAD and\n"
        "GPUSHARE_* set), holds the lease until CMD exits and exits with CMD's status.\n"
        "\n"
        "Size of the lease (exactly one):\n"
        "  --gpus N             N whole logical GPUs\n"
        "  --gpu F              a fraction 0 < F <= 1 of one GPU's memory and compute\n"
        "  --gpu-memory SIZE    SIZE of one GPU's memory (4G, 512M, ...)\n"
        "Other options:\n"
        "  --compute PCT        guaranteed compute share with --gpu-memory (1-100)\n"
        "  --compute-max PCT    burst cap on compute (passed as GPUSHARE_COMPUTE_MAX)\n"
        "  --priority N         -100..100 (above 0: root only); higher is served first\n"
        "  --no-wait            fail at once (exit 75) when nothing fits now\n"
        "  --timeout DURATION   give up (exit 75) after waiting this long (30s, 5m, ...)\n"
        "  --socket PATH        gpushared's socket (default $GPUSHARE_SOCKET or %s)\n"
        "  -v, --verbose        print the lease granted\n"
        "Exit status: CMD's (128+N when killed by signal N), 1 error, 2 usage, 75 no room.\n",
        GS_DEFAULT_SOCKET);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpushare run: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see gpushare run --help)\n");
    va_end(ap);
    return GS_EXIT_USAGE;
}

static int set_kind(gs_lease_request_t *req, gs_lease_kind_t kind)
{
    if (req->kind != GS_LEASE_NONE && req->kind != kind)
        return usage_error("give only one of --gpus, --gpu and --gpu-memory");
    req->kind = kind;
    return 0;
}

/* Parses one lease option's value into req. Returns 0 or GS_EXIT_USAGE (printed). */
static int lease_option(int c, const char *arg, gs_lease_request_t *req)
{
    char err[GS_QTY_ERR_MAX];
    int bad = 0;
    switch (c) {
    case 'n': {
        char *end = NULL;
        long n = strtol(arg, &end, 10);
        if (end == arg || *end != '\0' || n < 1 || n > GS_LEASE_GPUS_MAX)
            return usage_error("--gpus \"%s\" must be a whole number from 1 to 64", arg);
        req->gpus = (uint32_t)n;
        return set_kind(req, GS_LEASE_GPUS);
    }
    case 'f':
        bad = gs_qty_parse_fraction(arg, &req->fraction_milli, err, sizeof(err));
        return bad ? usage_error("--gpu: %s", err) : set_kind(req, GS_LEASE_FRACTION);
    case 'm':
        bad = gs_qty_parse_bytes(arg, 0, &req->memory, err, sizeof(err));
        return bad ? usage_error("--gpu-memory: %s", err) : set_kind(req, GS_LEASE_MEMORY);
    case 'c':
        bad = gs_qty_parse_percent(arg, 0, &req->compute, err, sizeof(err));
        return bad ? usage_error("--compute: %s", err) : 0;
    case 'C':
        bad = gs_qty_parse_percent(arg, 0, &req->compute_max, err, sizeof(err));
        return bad ? usage_error("--compute-max: %s", err) : 0;
    case 'p': {
        char *end = NULL;
        long n = strtol(arg, &end, 10);
        if (end == arg || *end != '\0' || n < GS_PRIORITY_MIN || n > GS_PRIORITY_MAX)
            return usage_error("--priority \"%s\" must be a whole number from -100 to 100", arg);
        req->priority = (int32_t)n;
        return 0;
    }
    case 't':
        if (gs__cli_parse_duration(arg, &req->timeout_ms, err, sizeof(err)) != 0)
            return usage_error("--timeout: %s", err);
        return 0;
    }
    return usage_error("unknown option");
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

static int parse_args(int argc, char **argv, run_opts_t *opts)
{
    static const struct option longopts[] = {
        {"gpus", required_argument, NULL, 'n'},
        {"gpu", required_argument, NULL, 'f'},
        {"gpu-memory", required_argument, NULL, 'm'},
        {"compute", required_argument, NULL, 'c'},
        {"compute-max", required_argument, NULL, 'C'},
        {"priority", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 't'},
        {"no-wait", no_argument, NULL, 'W'},
        {"socket", required_argument, NULL, 's'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(opts, 0, sizeof(*opts));
    gs_lease_request_init(&opts->req);
    opterr = 0;
    int c, result = 0;
    while (result == 0 && (c = getopt_long(argc, argv, "+hv", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        } else if (c == 'W') {
            opts->req.wait = 0;
        } else if (c == 's') {
            opts->socket = optarg;
        } else if (c == 'v') {
            opts->verbose = 1;
        } else if (c == '?' || c == ':') {
            return usage_error("unknown or incomplete option \"%s\"", argv[optind - 1]);
        } else {
            result = lease_option(c, optarg, &opts->req);
        }
    }
    if (result != 0)
        return result;
    if (optind >= argc)
        return usage_error("no command to run");
    opts->cmd = argv + optind;
    char err[GS_CLIENT_ERR_MAX];
    if (gs_lease_request_check(&opts->req, err, sizeof(err)) != 0)
        return usage_error("%s", err);
    command_line(opts->cmd, opts->req.command, sizeof(opts->req.command));
    return 0;
}

/* Waits for the grant. Returns GS_EXIT_OK with *granted, or the exit status (printed). */
static int acquire(gs_client_t *client, const gs_lease_request_t *req, json_t **granted)
{
    json_t *msg = gs_proto_acquire_json(req);
    int result = msg != NULL ? gs_client_send(client, msg) : GS_ENOMEM;
    json_decref(msg);
    while (result == 0) {
        json_t *reply = NULL;
        result = gs_client_recv(client, -1, &reply);
        if (result != 0)
            break;
        const char *message = NULL;
        const char *code = gs_reply_error(reply, &message);
        if (code != NULL) {
            fprintf(stderr, "gpushare: %s\n", message);
            int status = gs__cli_exit_for(code);
            json_decref(reply);
            return status;
        }
        const char *state = gs__cli_str(reply, "state");
        if (strcmp(state, "granted") == 0) {
            *granted = reply;
            return GS_EXIT_OK;
        }
        if (strcmp(state, "queued") == 0)
            fprintf(stderr, "gpushare: no GPU has room now: waiting (position %llu in the queue)\n",
                    (unsigned long long)gs__cli_uint(reply, "position"));
        json_decref(reply);
    }
    fprintf(stderr, "gpushare: lost gpushared while waiting for a lease: %s\n",
            result == GS_ECONNREFUSED ? "it closed the connection" : gs_strerror(result));
    return GS_EXIT_FAIL;
}

/* Builds the job's environment: ours, with the lease's variables and LD_PRELOAD prepended.
 * Entries from *added on are allocated (free_environment). */
static char **job_environment(const json_t *env, const char *shim, size_t *added)
{
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **out = calloc(n + json_object_size(env) + 2, sizeof(char *));
    if (out == NULL)
        return NULL;
    size_t m = 0;
    const char *old_preload = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t key_len = eq != NULL ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        char key[256];
        snprintf(key, sizeof(key), "%.*s", (int)key_len, environ[i]);
        if (strcmp(key, "LD_PRELOAD") == 0) {
            old_preload = eq != NULL ? eq + 1 : "";
            continue;
        }
        if (json_object_get(env, key) == NULL)
            out[m++] = environ[i];
    }
    *added = m;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)env, key, value)
    {
        if (json_is_string(value) && asprintf(&out[m], "%s=%s", key, json_string_value(value)) >= 0)
            m++;
    }
    int ok = old_preload != NULL && old_preload[0] != '\0'
                 ? asprintf(&out[m], "LD_PRELOAD=%s:%s", shim, old_preload)
                 : asprintf(&out[m], "LD_PRELOAD=%s", shim);
    if (ok >= 0)
        m++;
    out[m] = NULL;
    return out;
}

static void free_environment(char **envp, size_t added)
{
    if (envp == NULL)
        return;
    for (size_t i = added; envp[i] != NULL; i++)
        free(envp[i]);
    free(envp);
}

static void print_lease(const json_t *granted)
{
    const json_t *lease = json_object_get(granted, "lease");
    const json_t *env = json_object_get(granted, "env");
    char limit[32];
    gs__cli_bytes(gs__cli_uint(lease, "memory_limit"), limit, sizeof(limit));
    fprintf(stderr, "gpushare: lease %llu: %s on %s", (unsigned long long)gs__cli_uint(lease, "id"),
            limit, gs__cli_str(env, "CUDA_VISIBLE_DEVICES"));
    uint64_t share = gs__cli_uint(lease, "compute_share");
    if (share != 0)
        fprintf(stderr, ", %llu%% compute", (unsigned long long)share);
    fprintf(stderr, "\n");
}

/* The job's process: its own signal mask back, killed with its gpushare, exec CMD. */
static void exec_job(char **cmd, char **envp, const sigset_t *old_mask, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(GS_EXIT_FAIL); /* gpushare died before the line above */
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    execvpe(cmd[0], cmd, envp);
    int err = errno;
    fprintf(stderr, "gpushare: cannot run %s: %s\n", cmd[0], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
}

typedef struct job {
    pid_t pid;
    int status;
    int done;
    int connected;
    int64_t kill_at_ms; /* SIGKILL deadline after a revocation, 0 = none */
} job_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_signal(job_t *job, int sigfd)
{
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            int status;
            if (waitpid(job->pid, &status, WNOHANG) == job->pid) {
                job->status = status;
                job->done = 1;
            }
            continue;
        }
        /* A terminal's signal reached the whole foreground group, the job included; forward
         * only what was sent to gpushare alone. */
        if (si.ssi_code != SI_KERNEL)
            kill(job->pid, (int)si.ssi_signo);
    }
}

static void on_message(gs_client_t *client, job_t *job)
{
    json_t *msg = NULL;
    int result = gs_client_recv(client, 0, &msg);
    if (result == GS_ETIMEDOUT)
        return;
    if (result != 0) {
        fprintf(stderr, "gpushare: lost the connection to gpushared; the job keeps its lease\n");
        job->connected = 0;
        return;
    }
    if (strcmp(gs__cli_str(msg, "event"), "revoked") == 0 && job->kill_at_ms == 0) {
        fprintf(stderr, "gpushare: lease %llu was released by %s: stopping the job\n",
                (unsigned long long)gs__cli_uint(msg, "lease"), gs__cli_str(msg, "by"));
        kill(job->pid, SIGTERM);
        job->kill_at_ms = now_ms() + REVOKE_GRACE_MS;
    }
    json_decref(msg);
}

/* Waits for the job while watching the daemon and forwarding signals. */
static void supervise(gs_client_t *client, job_t *job, int sigfd)
{
    while (!job->done) {
        struct pollfd fds[2] = {{.fd = sigfd, .events = POLLIN},
                                {.fd = gs_client_fd(client), .events = POLLIN}};
        int timeout = -1;
        if (job->kill_at_ms != 0) {
            int64_t left = job->kill_at_ms - now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        int n = poll(fds, job->connected ? 2 : 1, timeout);
        if (n == 0 && job->kill_at_ms != 0) {
            kill(job->pid, SIGKILL);
            job->kill_at_ms = 0;
        }
        if (n > 0 && (fds[0].revents & POLLIN))
            on_signal(job, sigfd);
        if (n > 0 && job->connected && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            on_message(client, job);
    }
}

/* Releases the lease after the job, on the same connection or, when the daemon restarted
 * meanwhile, on a new one (the daemon would reap it anyway once this process is gone). */
static void release(gs_client_t **client, const char *socket, uint64_t id, int connected)
{
    char err[GS_CLIENT_ERR_MAX + 128];
    if (!connected) {
        gs_client_close(*client);
        *client = NULL;
        if (gs_client_connect(socket, client, err, sizeof(err)) != 0)
            return;
    }
    json_t *msg = json_pack("{s:s, s:I}", "op", "release", "lease", (json_int_t)id);
    json_t *reply = NULL;
    if (msg != NULL && gs_client_call(*client, msg, 5000, &reply) == 0)
        json_decref(reply);
    json_decref(msg);
}

static int exit_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return GS_EXIT_FAIL;
}

static int run_job(gs_client_t **client, const run_opts_t *opts, const json_t *granted, char **envp)
{
    sigset_t mask, old_mask;
    sigemptyset(&mask);
    int forwarded[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&mask, forwarded[i]);
    sigprocmask(SIG_BLOCK, &mask, &old_mask);
    int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    pid_t parent = getpid();
    job_t job = {.connected = 1};
    job.pid = sigfd >= 0 ? fork() : -1;
    if (job.pid == 0)
        exec_job(opts->cmd, envp, &old_mask, parent);
    if (job.pid < 0) {
        fprintf(stderr, "gpushare: cannot start %s: %s\n", opts->cmd[0], strerror(errno));
        if (sigfd >= 0)
            close(sigfd);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        return GS_EXIT_FAIL;
    }
    supervise(*client, &job, sigfd);
    close(sigfd);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    const json_t *lease = json_object_get(granted, "lease");
    release(client, opts->socket, gs__cli_uint(lease, "id"), job.connected);
    return exit_status(job.status);
}

int gs_cli_run(int argc, char **argv)
{
    run_opts_t opts;
    int status = parse_args(argc, argv, &opts);
    if (status != 0)
        return status < 0 ? GS_EXIT_OK : status;
    gs_client_t *client = NULL;
    json_t *granted = NULL;
    char **envp = NULL;
    size_t added = 0;
    char shim[PATH_MAX] = "libgpushare.so";
    status = gs__cli_connect(opts.socket, &client);
    if (status == GS_EXIT_OK)
        status = acquire(client, &opts.req, &granted);
    if (status != GS_EXIT_OK)
        goto out;
    if (gs__cli_shim_path(json_string_value(json_object_get(granted, "preload")), shim,
                          sizeof(shim)) != 0) {
        fprintf(stderr,
                "gpushare: the shim %s is missing (set GPUSHARE_SHIM or shim = in "
                "gpushare.conf): refusing to run without the lease's limits\n",
                shim);
        status = GS_EXIT_FAIL;
        goto out; /* closing the connection ends the lease */
    }
    envp = job_environment(json_object_get(granted, "env"), shim, &added);
    if (envp == NULL) {
        fprintf(stderr, "gpushare: out of memory\n");
        status = GS_EXIT_FAIL;
        goto out;
    }
    if (opts.verbose)
        print_lease(granted);
    status = run_job(&client, &opts, granted, envp);
out:
    json_decref(granted);
    gs_client_close(client);
    free_environment(envp, added);
    return status;
}
