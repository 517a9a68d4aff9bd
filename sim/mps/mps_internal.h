/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-cuda-mps-control: private header between its front end and its daemon. */
#ifndef GSIM_MPS_INTERNAL_H
#define GSIM_MPS_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "mps_state.h"

/* Runs the control daemon: in the background (fork, setsid; returns 0 in the caller once the
 * daemon is ready, or 1 with one line on stderr naming the cause), or in the foreground until
 * quit or SIGTERM. Returns the process exit status. */
int mpsd_run(int background);

/* Sends each command line of in to the running daemon and copies its replies to out. Returns
 * 0, or 1 when no daemon answers (message on stderr). */
int mpsd_send_commands(FILE *in, FILE *out);

/* The running daemon. */
typedef struct mpsd {
    char pipe_dir[4096];
    char log_dir[4096];
    int lock_fd;   /* control_lock, OFD-locked while the daemon lives */
    int listen_fd; /* the control socket */
    FILE *log;     /* control.log */
    int foreground;
    gsim_mps_state_t state; /* what gpusim-mps.state holds */
} mpsd_t;

/* Serves one command line (no newline) with the daemon's state; writes the reply (possibly
 * empty; lines end in '\n') into reply. Returns 1 when the command is quit, else 0. */
int mpsd_command(mpsd_t *d, const char *line, char *reply, size_t len);

/* Starts the (simulated) MPS server of uid unless one runs. Returns its index in
 * d->state.servers, or -1 when the table is full or fork fails. */
int mpsd_start_server(mpsd_t *d, uint32_t uid);

/* Fills pids (up to max) with the live clients of uid; returns how many there are. */
int mpsd_client_pids(mpsd_t *d, uint32_t uid, int32_t *pids, int max);

/* Publishes d->state in the state file (atomic rename). */
void mpsd_save_state(mpsd_t *d);

/* Appends one line to control.log (and to stderr in the foreground). */
void mpsd_log(mpsd_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
