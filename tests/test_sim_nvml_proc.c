/* SPDX-License-Identifier: Apache-2.0 */
/* Test support: runs test_sim_nvml_helper (a stand-in CUDA process) and talks to it. */
#include "test_sim_nvml_proc.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *build_path(const char *rel)
{
    static char path[4][1024];
    static int next;
    char *buf = path[next++ % 4];
    const char *build = getenv("GS_BUILD_DIR");
    snprintf(buf, sizeof(path[0]), "%s/%s", build != NULL ? build : "build", rel);
    return buf;
}

static void apply_env(const char *const *env)
{
    for (; env != NULL && *env != NULL; env++) {
        const char *eq = strchr(*env, '=');
        if (eq == NULL) {
            unsetenv(*env);
            continue;
        }
        char name[128];
        size_t len =
            (size_t)(eq - *env) < sizeof(name) - 1 ? (size_t)(eq - *env) : sizeof(name) - 1;
        memcpy(name, *env, len);
        name[len] = '\0';
        setenv(name, eq + 1, 1);
    }
}

static const char *helper_path(void)
{
    const char *env = getenv("GSIM_TEST_HELPER");
    return env != NULL && *env != '\0' ? env : build_path("tests/test_sim_nvml_helper");
}

int helper_is_cuda(void)
{
    const char *env = getenv("GSIM_TEST_HELPER");
    return env != NULL && *env != '\0';
}

const char *helper_comm(void)
{
    static char comm[16];
    const char *path = helper_path();
    const char *base = strrchr(path, '/');
    snprintf(comm, sizeof(comm), "%s", base != NULL ? base + 1 : path);
    return comm;
}

int helper_start(helper_proc_t *p, const char *const *env)
{
    return helper_start_wrapped(p, env, NULL, NULL);
}

/* Execs wrapper's words (if any) followed by exe. */
static void exec_helper(const char *exe, const char *const *wrapper)
{
    const char *argv[16];
    int n = 0;
    for (; wrapper != NULL && wrapper[n] != NULL && n < 14; n++)
        argv[n] = wrapper[n];
    argv[n++] = exe;
    argv[n] = NULL;
    execvp(argv[0], (char *const *)argv);
}

int helper_start_wrapped(helper_proc_t *p, const char *const *env, const char *const *wrapper,
                         int *ready_pid)
{
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        close(to_child[0]);
        close(to_child[1]);
        return -1;
    }
    const char *exe = helper_path();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        apply_env(env);
        exec_helper(exe, wrapper);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    p->pid = pid;
    p->in = fdopen(to_child[1], "w");
    p->out = fdopen(from_child[0], "r");
    char line[64];
    if (pid < 0 || p->in == NULL || p->out == NULL || helper_reply(p, line, sizeof(line)) != 0 ||
        strncmp(line, "ready", 5) != 0) {
        helper_kill(p);
        return -1;
    }
    if (ready_pid != NULL)
        *ready_pid = atoi(line + 5);
    return 0;
}

int helper_send(helper_proc_t *p, const char *cmd)
{
    if (fprintf(p->in, "%s\n", cmd) < 0 || fflush(p->in) != 0)
        return -1;
    return 0;
}

int helper_reply(helper_proc_t *p, char *reply, size_t len)
{
    if (fgets(reply, (int)len, p->out) == NULL)
        return -1;
    reply[strcspn(reply, "\n")] = '\0';
    return 0;
}

int helper_cmd(helper_proc_t *p, const char *cmd, char *reply, size_t len)
{
    return helper_send(p, cmd) == 0 ? helper_reply(p, reply, len) : -1;
}

static void close_streams(helper_proc_t *p)
{
    if (p->in != NULL)
        fclose(p->in);
    if (p->out != NULL)
        fclose(p->out);
    p->in = p->out = NULL;
}

void helper_stop(helper_proc_t *p)
{
    close_streams(p);
    if (p->pid > 0)
        waitpid(p->pid, NULL, 0);
    p->pid = 0;
}

void helper_kill(helper_proc_t *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    close_streams(p);
    p->pid = 0;
}

const char *make_temp_dir(const char *tag)
{
    static char dirs[8][256];
    static int next;
    char *buf = dirs[next++ % 8];
    snprintf(buf, sizeof(dirs[0]), "/tmp/gsim-%s-XXXXXX", tag);
    return mkdtemp(buf);
}

void remove_tree(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", path, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

int run_program(const char *const argv[], const char *input, char *out, size_t len)
{
    int in[2], outp[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(outp, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(outp[1], 1);
        close(in[0]);
        close(in[1]);
        close(outp[0]);
        close(outp[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    if (input != NULL && write(in[1], input, strlen(input)) < 0)
        input = NULL;
    close(in[1]);
    size_t used = 0;
    ssize_t n;
    while (len > 0 && (n = read(outp[0], out + used, len - 1 - used)) > 0)
        used += (size_t)n;
    if (len > 0)
        out[used] = '\0';
    close(outp[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int process_alive(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int wait_gone(pid_t pid, int ms)
{
    double deadline = now_ms() + ms;
    while (process_alive(pid)) {
        if (now_ms() > deadline)
            return -1;
        waitpid(pid, NULL, WNOHANG); /* our own child: reap it */
        struct timespec ts = {.tv_nsec = 5000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}
