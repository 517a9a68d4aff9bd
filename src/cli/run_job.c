/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare run's job: its environment, signals, the daemon's events, its end and the release. */
#include "cli.h"
#include "leftovers.h"
#include "run.h"
#include "shim_path.h"

#include "gpushare/error.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How long a job has after it was asked to stop before SIGKILL, when the daemon does not say. */
#define STOP_GRACE_MS 10000

/* "KEY=DIR:OLD" (or "KEY=DIR") into *out: DIR put ahead of a search path. Returns 0 or -1. */
static int prepend(char **out, const char *key, const char *dir, const char *old)
{
    if (old != NULL && old[0] != '\0')
        return asprintf(out, "%s=%s:%s", key, dir, old) >= 0 ? 0 : -1;
    return asprintf(out, "%s=%s", key, dir) >= 0 ? 0 : -1;
}

/* The key of an environment entry into key (cut at its size); its value or NULL. */
static const char *split(const char *entry, char *key, size_t len)
{
    const char *eq = strchr(entry, '=');
    size_t key_len = eq != NULL ? (size_t)(eq - entry) : strlen(entry);
    snprintf(key, len, "%.*s", (int)key_len, entry);
    return eq != NULL ? eq + 1 : NULL;
}

/* Builds the job's environment: ours, with the lease's variables (env), the directories it puts
 * ahead of search paths (paths: gpusim's, on a simulated node) and LD_PRELOAD prepended.
 * Entries from *added on are allocated (free_environment). */
static char **job_environment(const json_t *env, const json_t *paths, const char *shim,
                              size_t *added)
{
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **out = calloc(n + json_object_size(env) + json_object_size(paths) + 2, sizeof(char *));
    if (out == NULL)
        return NULL;
    size_t m = 0;
    const char *old_preload = NULL, *old[2] = {NULL, NULL};
    static const char *const searched[2] = {"PATH", "LD_LIBRARY_PATH"};
    for (size_t i = 0; i < n; i++) {
        char key[256];
        const char *value = split(environ[i], key, sizeof(key));
        int path = strcmp(key, "PATH") == 0 ? 0 : strcmp(key, "LD_LIBRARY_PATH") == 0 ? 1 : -1;
        if (path >= 0 && json_object_get(paths, key) != NULL)
            old[path] = value;
        else if (strcmp(key, "LD_PRELOAD") == 0)
            old_preload = value != NULL ? value : "";
        else if (json_object_get(env, key) == NULL)
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
    for (int k = 0; k < 2; k++) {
        const char *dir = json_string_value(json_object_get(paths, searched[k]));
        if (dir != NULL && prepend(&out[m], searched[k], dir, old[k]) == 0)
            m++;
    }
    if (prepend(&out[m], "LD_PRELOAD", shim, old_preload) == 0)
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

/* The job's process: its own signal mask back, killed with its gpushare, exec CMD. */
static void exec_job(char **cmd, char **envp, const sigset_t *old_mask, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(GS_EXIT_FAIL); /* gpushare died before the line above */
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    /* execvpe looks CMD up in this process's PATH: the job's (gpusim's directory first). */
    for (char **e = envp; *e != NULL; e++) {
        if (strncmp(*e, "PATH=", 5) == 0)
            setenv("PATH", *e + 5, 1);
    }
    execvpe(cmd[0], cmd, envp);
    int err = errno;
    fprintf(stderr, "gpushare: cannot run %s: %s\n", cmd[0], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
}

typedef struct job {
    const gs__run_opts_t *opts;
    uint64_t lease;
    pid_t pid;
    int status;
    int done;
    int connected;
    int64_t kill_at_ms; /* SIGKILL deadline after the job was asked to stop, 0 = none */
    int64_t grace_ms;   /* the grace period it was given then, 0 = none yet */
    int killed;         /* the deadline passed: it got SIGKILL */
    int stopped;        /* gpushared asked for the job to stop (said once) */
} job_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reaps the job, and the job's orphans this process adopted as a child subreaper. */
static void reap(job_t *job)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == job->pid) {
            job->status = status;
            job->done = 1;
        }
    }
}

static void on_signal(job_t *job, int sigfd)
{
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            reap(job);
            continue;
        }
        /* A terminal's signal reached the whole foreground group, the job included; forward
         * only what was sent to gpushare alone. */
        if (si.ssi_code != SI_KERNEL)
            kill(job->pid, (int)si.ssi_signo);
    }
}

/* The daemon asks the job to stop: its lease was released by someone else ("revoked") or its
 * time limit passed ("expired"). SIGTERM now, SIGKILL after the grace period. */
static void on_stop(job_t *job, json_t *msg)
{
    int expired = strcmp(gs__cli_str(msg, "event"), "expired") == 0;
    uint64_t grace = json_is_integer(json_object_get(msg, "grace_ms"))
                         ? gs__cli_uint(msg, "grace_ms")
                         : STOP_GRACE_MS;
    char limit[32], after[32];
    gs_format_duration(gs__cli_uint(msg, "time_limit_ms"), limit, sizeof(limit));
    gs_format_duration(grace, after, sizeof(after));
    if (expired)
        gs__run_say(job->opts, json_incref(msg),
                    "lease %llu reached its time limit (%s): stopping the job (SIGTERM, SIGKILL "
                    "in %s)",
                    (unsigned long long)job->lease, limit, after);
    else
        gs__run_say(job->opts, json_incref(msg),
                    "lease %llu was released by %s: stopping the job (SIGTERM, SIGKILL in %s)",
                    (unsigned long long)job->lease, gs__cli_str(msg, "by"), after);
    job->stopped = 1;
    job->grace_ms = (int64_t)grace;
    if (job->done)
        return; /* gpushared's own SIGTERM was first: the job is gone (and reaped) already */
    kill(job->pid, SIGTERM);
    job->kill_at_ms = now_ms() + (int64_t)grace;
}

/* gpushared's watchdog kills a process of the job (enforce = kill): said before the signal, so
 * that the job's owner reads why it died on its stderr, not only "Killed". */
static void on_killed(job_t *job, json_t *msg)
{
    gs__run_say(job->opts, json_incref(msg),
                "gpushared killed pid %llu of lease %llu: %s (enforce = %s)",
                (unsigned long long)gs__cli_uint(msg, "pid"), (unsigned long long)job->lease,
                gs__cli_str(msg, "reason"), gs__cli_str(msg, "enforce"));
}

/* Reads one message of gpushared's. Returns 1 when there was one, else 0. */
static int on_message(gs_client_t *client, job_t *job)
{
    json_t *msg = NULL;
    int result = gs_client_recv(client, 0, &msg);
    if (result == GS_ETIMEDOUT)
        return 0;
    if (result != 0) {
        gs__run_say(
            job->opts,
            json_pack("{s:s, s:I}", "event", "disconnected", "lease", (json_int_t)job->lease),
            "lost the connection to gpushared; the job keeps its lease");
        job->connected = 0;
        return 0;
    }
    const char *event = gs__cli_str(msg, "event");
    if ((strcmp(event, "revoked") == 0 || strcmp(event, "expired") == 0) && !job->stopped)
        on_stop(job, msg);
    else if (strcmp(event, "killed") == 0)
        on_killed(job, msg);
    json_decref(msg);
    return 1;
}

/* After the job's end: what gpushared said before it (who stopped the job: it writes that before
 * it signals the job) is read and told, whichever of the two this process saw first. */
static void drain(gs_client_t *client, job_t *job)
{
    for (int i = 0; i < 16 && job->connected && on_message(client, job); i++)
        ;
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
            job->killed = 1;
        }
        if (n > 0 && (fds[0].revents & POLLIN))
            on_signal(job, sigfd);
        if (n > 0 && job->connected && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            on_message(client, job);
    }
    drain(client, job);
}

/* Releases the lease after the job, saying how it ended, on the same connection or, when the
 * daemon restarted meanwhile, on a new one (the daemon would reap it anyway once this process
 * is gone). */
static void release(gs_client_t **client, const job_t *job)
{
    char err[GS_CLIENT_ERR_MAX + 128];
    if (!job->connected) {
        gs_client_close(*client);
        *client = NULL;
        if (gs_client_connect(job->opts->cli.socket, client, err, sizeof(err)) != 0)
            return;
    }
    json_t *msg = json_pack("{s:s, s:I}", "op", "release", "lease", (json_int_t)job->lease);
    if (msg != NULL && WIFSIGNALED(job->status))
        json_object_set_new(msg, "signal", json_integer(WTERMSIG(job->status)));
    else if (msg != NULL && WIFEXITED(job->status))
        json_object_set_new(msg, "exit_status", json_integer(WEXITSTATUS(job->status)));
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

/* Once the job's main process has ended, what it left running below us (a child subreaper) is
 * stopped, as a Slurm step's processes are: SIGTERM, SIGKILL after the grace period (at once when
 * the job itself had to be killed), so that no process of the lease outlives it. */
static void stop_leftovers(const job_t *job)
{
    int left = gs__cli_leftovers();
    if (left == 0)
        return;
    int64_t grace = job->killed ? 0 : job->grace_ms > 0 ? job->grace_ms : STOP_GRACE_MS;
    char after[32], how[64] = "SIGKILL";
    gs_format_duration((uint64_t)grace, after, sizeof(after));
    if (grace > 0)
        snprintf(how, sizeof(how), "SIGTERM, SIGKILL in %s", after);
    gs__run_say(job->opts,
                json_pack("{s:s, s:I, s:i, s:I}", "event", "leftovers", "lease",
                          (json_int_t)job->lease, "processes", left, "grace_ms", (json_int_t)grace),
                "the job left %d process%s running: stopping %s (%s)", left, left == 1 ? "" : "es",
                left == 1 ? "it" : "them", how);
    gs__cli_stop_leftovers(grace);
}

/* Starts the job and supervises it. Returns 0, or -1 when it could not start (printed). */
static int start_and_wait(gs_client_t *client, job_t *job, char **envp)
{
    sigset_t mask, old_mask;
    sigemptyset(&mask);
    int forwarded[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&mask, forwarded[i]);
    sigprocmask(SIG_BLOCK, &mask, &old_mask);
    int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    /* The job's orphans (daemons, double forks) become this process's children rather than
     * init's: gpushared tells a lease's processes by their descent from its holder. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t parent = getpid();
    job->pid = sigfd >= 0 ? fork() : -1;
    if (job->pid == 0)
        exec_job(job->opts->cmd, envp, &old_mask, parent);
    int result = 0;
    if (job->pid < 0) {
        gs__cli_fail(&job->opts->cli, GS_EXIT_FAIL, "internal", "cannot start %s: %s",
                     job->opts->cmd[0], strerror(errno));
        result = -1;
    } else {
        supervise(client, job, sigfd);
        stop_leftovers(job);
    }
    if (sigfd >= 0)
        close(sigfd);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    return result;
}

int gs__run_job(gs_client_t **client, const gs__run_opts_t *opts, const json_t *granted)
{
    char shim[PATH_MAX] = "libgpushare.so";
    if (gs__cli_shim_path(json_string_value(json_object_get(granted, "preload")), shim,
                          sizeof(shim)) != 0)
        return gs__cli_fail(&opts->cli, GS_EXIT_FAIL, "no_shim",
                            "the shim %s is missing (set GPUSHARE_SHIM or shim = in "
                            "gpushare.conf): refusing to run without the lease's limits",
                            shim); /* closing the connection ends the lease */
    size_t added = 0;
    char **envp = job_environment(json_object_get(granted, "env"),
                                  json_object_get(granted, "env_prepend"), shim, &added);
    if (envp == NULL)
        return gs__cli_fail(&opts->cli, GS_EXIT_FAIL, "internal", "out of memory");
    job_t job = {.opts = opts, .connected = 1};
    job.lease = gs__cli_uint(json_object_get(granted, "lease"), "id");
    int started = start_and_wait(*client, &job, envp);
    free_environment(envp, added);
    if (started != 0)
        return GS_EXIT_FAIL;
    release(client, &job);
    int status = exit_status(job.status);
    if (opts->cli.json) {
        json_t *event = json_pack("{s:s, s:I, s:i}", "event", "ended", "lease",
                                  (json_int_t)job.lease, "exit_status", status);
        if (event != NULL && WIFSIGNALED(job.status))
            json_object_set_new(event, "signal", json_integer(WTERMSIG(job.status)));
        gs__run_say(opts, event, "%s", "");
    }
    return status;
}
