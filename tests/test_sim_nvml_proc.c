/* Test support: runs test_sim_nvml_helper (a stand-in CUDA process) and talks to it. */
#include "test_sim_nvml_proc.h"

#include <signal.h>
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

int helper_start(helper_proc_t *p, const char *const *env)
{
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0)
        return -1;
    if (pipe(from_child) != 0) {
        close(to_child[0]);
        close(to_child[1]);
        return -1;
    }
    const char *exe = build_path("tests/test_sim_nvml_helper");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        apply_env(env);
        execl(exe, exe, (char *)NULL);
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
