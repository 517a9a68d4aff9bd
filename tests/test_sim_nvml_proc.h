/* SPDX-License-Identifier: Apache-2.0 */
/* Test support: runs test_sim_nvml_helper (a stand-in CUDA process) and talks to it. */
#ifndef TEST_SIM_NVML_PROC_H
#define TEST_SIM_NVML_PROC_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct helper_proc {
    pid_t pid;
    FILE *in;  /* its stdin */
    FILE *out; /* its stdout */
} helper_proc_t;

/* The stand-in CUDA process is $GSIM_TEST_HELPER when set (the driver-API client, run against
 * gpusim's libcuda), else the core helper test_sim_nvml_helper. helper_is_cuda says which;
 * helper_comm gives its process name as the kernel reports it (15 characters at most). */
int helper_is_cuda(void);
const char *helper_comm(void);

/* Starts the helper with extra environment entries ("NAME=value", or "NAME" to unset; the list
 * ends with NULL; env may be NULL) and waits for its "ready" line. Returns 0 or -1. */
int helper_start(helper_proc_t *p, const char *const *env);

/* As helper_start, run through wrapper (argv words before the helper's path, NULL-terminated,
 * e.g. unshare --pid --fork; NULL for none); *ready_pid (may be NULL) gets the pid the helper
 * reported, which is its pid in its own PID namespace. */
int helper_start_wrapped(helper_proc_t *p, const char *const *env, const char *const *wrapper,
                         int *ready_pid);

/* Sends one command and reads the reply line (without newline) into reply. Returns 0 or -1. */
int helper_cmd(helper_proc_t *p, const char *cmd, char *reply, size_t len);

/* Sends a command without waiting for its reply; helper_reply reads it later. */
int helper_send(helper_proc_t *p, const char *cmd);
int helper_reply(helper_proc_t *p, char *reply, size_t len);

/* Ends the helper: stop closes its input and waits; kill sends SIGKILL and waits. */
void helper_stop(helper_proc_t *p);
void helper_kill(helper_proc_t *p);

/* Runs argv (argv[0] a path) with input on its stdin (NULL: empty) and its stdout captured
 * into out (NUL-terminated, truncated to len). Returns its exit status, or -1. */
int run_program(const char *const argv[], const char *input, char *out, size_t len);

/* Returns 1 while pid is a live process (a zombie counts as gone), else 0. */
int process_alive(pid_t pid);

/* Waits up to ms milliseconds for pid to be gone. Returns 0 when gone, -1 on timeout. */
int wait_gone(pid_t pid, int ms);

/* Milliseconds of CLOCK_MONOTONIC. */
double now_ms(void);

/* Path of a file built into the build tree ($GS_BUILD_DIR/rel), in a static buffer. */
const char *build_path(const char *rel);

/* Creates a fresh temporary directory named after tag; returns its path (static storage,
 * one per call site is enough: each call returns a new buffer from a small ring). */
const char *make_temp_dir(const char *tag);

/* Removes a directory tree (rm -rf). */
void remove_tree(const char *path);

#endif
