/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-cuda-mps-control for one MPS GPU: spawned with a bounded wait, found again by pid file. */
#include "mps_ctl.h"

#include "gpushare/error.h"
#include "gpushare/region.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PID_FILE "nvidia-cuda-mps-control.pid"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* mkdir -p with mode for the missing parts. Returns 0 or -errno. */
static int make_dirs(const char *path, mode_t mode)
{
    char buf[GS__PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return GS_ERANGE;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -errno;
        *p = c;
        if (c == '\0')
            return 0;
    }
}

int gs__mps_ctl_prepare(const gs__mps_ctl_t *ctl, char *err, size_t errlen)
{
    struct sockaddr_un addr;
    if (strlen(ctl->pipe_dir) + sizeof("/control") > sizeof(addr.sun_path))
        return gs_fail(err, errlen, GS_ERANGE,
                       "MPS pipe directory %s is too long for a unix socket (set a shorter "
                       "runtime_dir)",
                       ctl->pipe_dir);
    const char *dirs[2] = {ctl->pipe_dir, ctl->log_dir};
    for (int i = 0; i < 2; i++) {
        int result = make_dirs(dirs[i], 0755);
        if (result != 0)
            return gs_fail(err, errlen, result, "cannot create %s: %s", dirs[i],
                           gs_strerror(result));
    }
    return 0;
}

/* The control program's environment: ours without CUDA_MPS_* and CUDA_VISIBLE_DEVICES, then
 * the GPU's. Returns a calloc'ed array whose last three entries are allocated, or NULL. */
static char **spawn_environment(const gs__mps_ctl_t *ctl)
{
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **env = calloc(n + 4, sizeof(char *));
    if (env == NULL)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "CUDA_MPS_", 9) != 0 &&
            strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) != 0)
            env[m++] = environ[i];
    }
    if (asprintf(&env[m], "CUDA_MPS_PIPE_DIRECTORY=%s", ctl->pipe_dir) < 0 ||
        asprintf(&env[m + 1], "CUDA_MPS_LOG_DIRECTORY=%s", ctl->log_dir) < 0 ||
        asprintf(&env[m + 2], "CUDA_VISIBLE_DEVICES=%s", ctl->gpu_uuid) < 0) {
        free(env);
        return NULL; /* out of memory: the strings made so far are lost with the process */
    }
    env[m + 3] = NULL;
    return env;
}

static void free_environment(char **env)
{
    if (env == NULL)
        return;
    size_t n = 0;
    while (env[n] != NULL)
        n++;
    for (size_t i = n >= 3 ? n - 3 : 0; i < n; i++)
        free(env[i]);
    free(env);
}

/* A run of the control program: its pid and the pipes to its standard input and output. */
typedef struct run {
    pid_t pid;
    int out_fd; /* read end of its stdout and stderr */
} run_t;

static int spawn(const gs__mps_ctl_t *ctl, const char *arg, const char *input, run_t *run)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    char **env = spawn_environment(ctl);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    /* gpushared blocks its stop signals for its signalfd and ignores SIGPIPE: the control
     * daemon and its servers must get both back, or they could not be stopped. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int result = env != NULL ? 0 : GS_ENOMEM;
    if (result == 0 && (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0))
        result = -errno;
    if (result == 0) {
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_adddup2(&fa, out[1], 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* none of gpushared's descriptors */
        char *argv[] = {(char *)ctl->program, (char *)arg, NULL};
        result = -posix_spawnp(&run->pid, ctl->program, &fa, &attr, argv, env);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free_environment(env);
    if (in[0] >= 0)
        close(in[0]);
    if (out[1] >= 0)
        close(out[1]);
    if (result != 0) {
        if (in[1] >= 0)
            close(in[1]);
        if (out[0] >= 0)
            close(out[0]);
        return result;
    }
    run->out_fd = out[0];
    fcntl(run->out_fd, F_SETFL, O_NONBLOCK);
    /* Commands are a few lines, far below a pipe's buffer: the write does not wait. A program
     * that exits before reading makes it fail; its status then says why. */
    ssize_t written = input != NULL ? write(in[1], input, strlen(input)) : 0;
    (void)written;
    close(in[1]);
    return 0;
}

/* Reads what is there into out (kept NUL-terminated, extra dropped). Returns 0 at EOF. */
static int drain(int fd, char *out, size_t outlen, size_t *used)
{
    char buf[1024];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n == 0)
            return 0;
        if (n < 0)
            return errno == EINTR ? 1 : errno == EAGAIN ? 1 : 0;
        size_t keep = *used + (size_t)n < outlen ? (size_t)n : outlen - 1 - *used;
        memcpy(out + *used, buf, keep);
        *used += keep;
        out[*used] = '\0';
    }
}

/* Feeds input, collects output until the program exits (its output may stay open in a daemon
 * it started) or the time is up (then it is killed). Returns 0 with *status, or GS_ETIMEDOUT. */
static int finish(run_t *run, char *out, size_t outlen, int *status)
{
    size_t used = 0;
    out[0] = '\0';
    int64_t deadline = now_ms() + GS__MPS_CTL_TIMEOUT_MS;
    int result = GS_ETIMEDOUT, open_out = 1;
    while (now_ms() < deadline) {
        if (waitpid(run->pid, status, WNOHANG) == run->pid) {
            result = 0;
            break;
        }
        struct pollfd p = {.fd = run->out_fd, .events = POLLIN};
        if (open_out && poll(&p, 1, 5) > 0)
            open_out = drain(run->out_fd, out, outlen, &used);
        else if (!open_out)
            poll(NULL, 0, 5);
    }
    if (result != 0) {
        kill(run->pid, SIGKILL);
        waitpid(run->pid, status, 0);
    }
    drain(run->out_fd, out, outlen, &used);
    close(run->out_fd);
    return result;
}

/* The program's output as one line for a message: its first line, or "" */
static void first_line(char *text)
{
    text[strcspn(text, "\n")] = '\0';
}

/* Runs the program with arg (or none) and input. Returns 0 when it exited with 0, else -errno
 * with one line in err. */
static int run_program(const gs__mps_ctl_t *ctl, const char *arg, const char *input, char *out,
                       size_t outlen, char *err, size_t errlen)
{
    run_t run;
    int status = 0;
    int result = spawn(ctl, arg, input, &run);
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot run %s: %s", ctl->program, gs_strerror(result));
    result = finish(&run, out, outlen, &status);
    if (result != 0)
        return gs_fail(err, errlen, result, "%s did not finish within %d s: killed", ctl->program,
                       GS__MPS_CTL_TIMEOUT_MS / 1000);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char line[256];
    snprintf(line, sizeof(line), "%s", out);
    first_line(line);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && line[0] == '\0')
        return gs_fail(err, errlen, GS_EIO, "cannot run %s: not found", ctl->program);
    if (WIFEXITED(status))
        return gs_fail(err, errlen, GS_EIO, "%s%s exited with status %d%s%s", ctl->program,
                       arg ? " -d" : "", WEXITSTATUS(status), line[0] != '\0' ? ": " : "", line);
    return gs_fail(err, errlen, GS_EIO, "%s was killed by signal %d", ctl->program,
                   WTERMSIG(status));
}

/* Reads the pid file of the pipe directory. Returns the pid, or 0. */
static pid_t read_pid_file(const gs__mps_ctl_t *ctl)
{
    char path[GS__PATH_MAX + 64], text[32] = "";
    snprintf(path, sizeof(path), "%s/%s", ctl->pipe_dir, PID_FILE);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    if (fgets(text, sizeof(text), f) == NULL)
        text[0] = '\0';
    fclose(f);
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    return end != text && pid > 1 && pid < INT32_MAX ? (pid_t)pid : 0;
}

/* Nonzero when pid's command name is the MPS control program's ("nvidia-cuda-mps" as the
 * kernel cuts it to 15 characters). */
static int is_mps_control(pid_t pid)
{
    char path[64], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, "nvidia-cuda-mps", 15) == 0;
}

int gs__mps_ctl_find(const gs__mps_ctl_t *ctl, pid_t *pid, uint64_t *start)
{
    pid_t p = read_pid_file(ctl);
    if (p <= 0 || !gs_proc_alive(p, start) || !is_mps_control(p))
        return 0;
    *pid = p;
    return 1;
}

int gs__mps_ctl_start(const gs__mps_ctl_t *ctl, pid_t *pid, uint64_t *start, char *err,
                      size_t errlen)
{
    char out[512];
    int result = run_program(ctl, "-d", NULL, out, sizeof(out), err, errlen);
    if (result != 0)
        return result;
    /* -d returns once the daemon serves; its pid file says which process it is. */
    if (!gs__mps_ctl_find(ctl, pid, start))
        return gs_fail(err, errlen, GS_ESRCH,
                       "%s -d succeeded but no control daemon is running in %s", ctl->program,
                       ctl->pipe_dir);
    return 0;
}

int gs__mps_ctl_command(const gs__mps_ctl_t *ctl, const char *commands, char *out, size_t outlen,
                        char *err, size_t errlen)
{
    return run_program(ctl, NULL, commands, out, outlen, err, errlen);
}

void gs__mps_ctl_resolve(const char *program, char *buf, size_t len)
{
    buf[0] = '\0';
    if (strchr(program, '/') != NULL) {
        if (access(program, X_OK) == 0)
            snprintf(buf, len, "%s", program);
        return;
    }
    const char *dirs = getenv("PATH");
    for (const char *p = dirs != NULL ? dirs : "/usr/bin:/bin"; *p != '\0';) {
        size_t n = strcspn(p, ":");
        char path[GS__PATH_MAX];
        int w = snprintf(path, sizeof(path), "%.*s/%s", (int)n, p, program);
        if (n > 0 && w > 0 && (size_t)w < sizeof(path) && access(path, X_OK) == 0) {
            snprintf(buf, len, "%s", path);
            return;
        }
        p += n + (p[n] == ':');
    }
}

int gs__mps_ctl_begin(const gs__mps_ctl_t *ctl, const char *commands, gs__mps_ctl_job_t *job)
{
    run_t run;
    int result = spawn(ctl, NULL, commands, &run);
    if (result != 0)
        return result;
    job->pid = run.pid;
    job->out_fd = run.out_fd;
    job->deadline_ms = now_ms() + GS__MPS_CTL_TIMEOUT_MS;
    job->used = 0;
    job->out[0] = '\0';
    return 0;
}

int gs__mps_ctl_poll(gs__mps_ctl_job_t *job, int *ok)
{
    int status = 0;
    if (job->pid == 0)
        return 0;
    drain(job->out_fd, job->out, sizeof(job->out), &job->used);
    pid_t done = waitpid(job->pid, &status, WNOHANG);
    if (done == 0 && now_ms() < job->deadline_ms)
        return 0;
    if (done == 0) {
        kill(job->pid, SIGKILL);
        waitpid(job->pid, &status, 0);
    }
    drain(job->out_fd, job->out, sizeof(job->out), &job->used);
    close(job->out_fd);
    *ok = done == job->pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    job->pid = 0;
    return 1;
}

void gs__mps_ctl_cancel(gs__mps_ctl_job_t *job)
{
    if (job->pid == 0)
        return;
    kill(job->pid, SIGKILL);
    waitpid(job->pid, NULL, 0);
    close(job->out_fd);
    job->pid = 0;
}

int gs__mps_ctl_alive(pid_t pid, uint64_t start)
{
    uint64_t now_start = 0;
    return pid > 0 && gs_proc_alive(pid, &now_start) &&
           (start == 0 || now_start == 0 || now_start == start);
}

int gs__mps_ctl_stop(const gs__mps_ctl_t *ctl, pid_t pid, uint64_t start)
{
    char out[256], err[256];
    gs__mps_ctl_command(ctl, "quit\n", out, sizeof(out), err, sizeof(err));
    int64_t deadline = now_ms() + GS__MPS_CTL_TIMEOUT_MS;
    while (gs__mps_ctl_alive(pid, start) && now_ms() < deadline)
        poll(NULL, 0, 10);
    if (!gs__mps_ctl_alive(pid, start))
        return 0;
    kill(pid, SIGKILL);
    return 1;
}
