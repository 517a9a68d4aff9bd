/* SPDX-License-Identifier: Apache-2.0 */
/* Running nvidia-cuda-mps-control for one MPS GPU: start its control daemon, send it commands,
 * find it again after a restart of gpushared, stop it.
 *
 * Each MPS GPU has its own control daemon with its own CUDA_MPS_PIPE_DIRECTORY and
 * CUDA_MPS_LOG_DIRECTORY, started with CUDA_VISIBLE_DEVICES set to the GPU's UUID so that its
 * servers see that GPU alone (NVIDIA's MPS documentation recommends UUIDs for this). The control
 * program is run with posix_spawn and a clean set of descriptors; every run is bounded in time,
 * so a hung control program cannot stall the event loop for long. */
#ifndef GS_DAEMON_MPS_CTL_H
#define GS_DAEMON_MPS_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core.h"

/* One GPU's control daemon: where it lives and how it is run. */
typedef struct gs__mps_ctl {
    char program[GS__PATH_MAX];  /* nvidia-cuda-mps-control: a path or a name in PATH */
    char pipe_dir[GS__PATH_MAX]; /* CUDA_MPS_PIPE_DIRECTORY */
    char log_dir[GS__PATH_MAX];  /* CUDA_MPS_LOG_DIRECTORY */
    char gpu_uuid[GS__UUID_MAX]; /* CUDA_VISIBLE_DEVICES of the control daemon */
} gs__mps_ctl_t;

/* How long one run of the control program may take. */
#define GS__MPS_CTL_TIMEOUT_MS 5000

/* Creates the pipe and log directories (0755, with parents). Returns 0, or -errno with one line
 * in err (also when the control socket's path would not fit a unix socket address). */
int gs__mps_ctl_prepare(const gs__mps_ctl_t *ctl, char *err, size_t errlen);

/* Runs `program -d`. Returns 0 and the daemon's pid (from its pid file) and start time, or
 * -errno with one line in err (the program's own message when it printed one). */
int gs__mps_ctl_start(const gs__mps_ctl_t *ctl, pid_t *pid, uint64_t *start, char *err,
                      size_t errlen);

/* Finds a control daemon already serving the pipe directory (left by a gpushared that was
 * killed): its pid file names a live nvidia-cuda-mps-control process. Returns 1 with *pid and
 * *start, or 0. */
int gs__mps_ctl_find(const gs__mps_ctl_t *ctl, pid_t *pid, uint64_t *start);

/* Sends commands (lines, each ending in '\n') to the daemon and collects its replies in out.
 * Returns 0, or -errno with one line in err (no daemon answered, the program failed). */
int gs__mps_ctl_command(const gs__mps_ctl_t *ctl, const char *commands, char *out, size_t outlen,
                        char *err, size_t errlen);

/* A command run in the background, so that the event loop does not wait for it: begun, then
 * polled until it is done. */
typedef struct gs__mps_ctl_job {
    pid_t pid; /* the control program, 0 = none running */
    int out_fd;
    int64_t deadline_ms; /* CLOCK_MONOTONIC: killed past it */
    size_t used;
    char out[4096]; /* its replies, NUL-terminated (cut at the end when longer) */
} gs__mps_ctl_job_t;

/* Starts `program` with commands on its standard input. Returns 0, or -errno (nothing runs). */
int gs__mps_ctl_begin(const gs__mps_ctl_t *ctl, const char *commands, gs__mps_ctl_job_t *job);

/* Collects what job wrote. Returns 1 when it is done (job->out complete, *ok nonzero when it
 * exited with status 0; job->pid is then 0), 0 while it runs. Past its deadline it is killed
 * (done, not ok). Never blocks. */
int gs__mps_ctl_poll(gs__mps_ctl_job_t *job, int *ok);

/* Kills and reaps a running job (NULL pid is fine). */
void gs__mps_ctl_cancel(gs__mps_ctl_job_t *job);

/* Stops the daemon: `quit`, then waits up to GS__MPS_CTL_TIMEOUT_MS for pid to exit, then
 * SIGKILL. Returns 0 when it is gone by quit, 1 when it had to be killed. */
int gs__mps_ctl_stop(const gs__mps_ctl_t *ctl, pid_t pid, uint64_t start);

/* Writes where program (a path, or a name looked up in PATH) is into buf: the path, or "" when
 * no executable file is there. */
void gs__mps_ctl_resolve(const char *program, char *buf, size_t len);

/* Nonzero when pid (started at start) is still alive. */
int gs__mps_ctl_alive(pid_t pid, uint64_t start);

#endif
