/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare doctor's reading of the configuration: gpushared --check-config --json, in a child. */
#include "doctor_config.h"

#include "gpushare/error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUTPUT_MAX     (256 * 1024)
#define TIMEOUT_MS     20000 /* gpushared --check-config (it opens NVML) */
#define MPS_TIMEOUT_MS 5000  /* an MPS control daemon's answer, as gpushared waits for it */

/* The child: its output into the pipe, then gpushared. */
static void exec_daemon(const char *gpushared, const char *config, const char *sim_state, int out)
{
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    if (sim_state != NULL && sim_state[0] != '\0')
        setenv("GPUSIM_STATE", sim_state, 1);
    char *argv[] = {(char *)gpushared, "--check-config",
                    "--json",          "--log-level",
                    "error",           config != NULL && config[0] != '\0' ? "--config" : NULL,
                    (char *)config,    NULL};
    execv(gpushared, argv);
    _exit(127);
}

/* Reads all the child writes (at most OUTPUT_MAX, for at most timeout_ms). Returns the text
 * (malloc'ed, NUL-terminated) or NULL. */
static char *read_all(int fd, long timeout_ms)
{
    char *text = calloc(1, OUTPUT_MAX + 1);
    size_t used = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long waited = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (text == NULL || waited >= timeout_ms || poll(&p, 1, (int)(timeout_ms - waited)) <= 0)
            break;
        ssize_t n = read(fd, text + used, OUTPUT_MAX - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return text;
        used += (size_t)n;
        if (used == OUTPUT_MAX)
            return text;
    }
    free(text);
    return NULL;
}

/* The last line of text (its error), without its timestamp and program name. */
static const char *last_line(char *text)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n')
        text[--n] = '\0';
    char *line = strrchr(text, '\n');
    line = line != NULL ? line + 1 : text;
    char *tag = strstr(line, "gpushared[");
    char *after = tag != NULL ? strstr(tag, "]: ") : NULL;
    line = after != NULL ? after + 3 : line;
    return strncmp(line, "error: ", 7) == 0 ? line + 7 : line;
}

/* The JSON object on the last line of text, NULL when there is none. */
static json_t *parse_last(char *text)
{
    const char *line = last_line(text);
    return line[0] == '{' ? json_loads(line, 0, NULL) : NULL;
}

int gs__doctor_read_config(const char *gpushared, const char *config, const char *sim_state,
                           json_t **out, char *err, size_t errlen)
{
    int fds[2];
    *out = NULL;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return gs_fail(err, errlen, -errno, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0)
        exec_daemon(gpushared, config, sim_state, fds[1]);
    close(fds[1]);
    char *text = pid > 0 ? read_all(fds[0], TIMEOUT_MS) : NULL;
    close(fds[0]);
    int status = 0;
    if (pid > 0 && text == NULL)
        kill(pid, SIGKILL);
    if (pid < 0 || waitpid(pid, &status, 0) != pid || text == NULL) {
        free(text);
        return gs_fail(err, errlen, GS_EIO, "%s --check-config gave no answer", gpushared);
    }
    int result = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && (*out = parse_last(text)) != NULL)
        result = 0;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 78)
        result = gs_fail(err, errlen, GS_EINVAL, "%s", last_line(text));
    else
        result = gs_fail(err, errlen, GS_EIO, "%s --check-config failed: %s", gpushared,
                         last_line(text));
    free(text);
    return result;
}

/* The child: commands on its standard input, its output into out. */
static void exec_mps(const char *program, const char *pipe_dir, int in, int out)
{
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
    char *argv[] = {(char *)program, NULL};
    execvp(program, argv);
    _exit(127);
}

int gs__doctor_mps_answers(const char *program, const char *pipe_dir, char *err, size_t errlen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        return gs_fail(err, errlen, -errno, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0)
        exec_mps(program, pipe_dir, in[0], out[1]);
    close(in[0]);
    close(out[1]);
    static const char ask[] = "get_server_list\n";
    ssize_t w = pid > 0 ? write(in[1], ask, sizeof(ask) - 1) : -1;
    close(in[1]);
    char *text = pid > 0 && w > 0 ? read_all(out[0], MPS_TIMEOUT_MS) : NULL;
    close(out[0]);
    int status = 0;
    if (pid > 0 && text == NULL)
        kill(pid, SIGKILL);
    if (pid < 0 || waitpid(pid, &status, 0) != pid || text == NULL) {
        free(text);
        return gs_fail(err, errlen, GS_ETIMEDOUT, "%s get_server_list gave no answer", program);
    }
    int result = WIFEXITED(status) && WEXITSTATUS(status) == 0
                     ? 0
                     : gs_fail(err, errlen, GS_EIO, "%s get_server_list failed: %s", program,
                               text[0] != '\0' ? last_line(text) : "no output");
    free(text);
    return result;
}
