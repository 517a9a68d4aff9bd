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

#define MPSD_MAX_CLIENTS  48 /* client contexts an MPS server takes per device (Volta MPS) */
#define MPSD_MAX_CONTEXTS (GSIM_MPS_MAX_SERVERS * GSIM_MAX_DEVICES)

/* A simulated server's context on one GPU and the client processes attached to it. */
typedef struct mpsd_ctx {
    int used;
    uint32_t uid; /* the server's user */
    int dev;      /* node index of the GPU */
    int peak;     /* most clients attached at once since the context was created */
    int n;
    struct {
        int32_t pid;          /* in the daemon's PID namespace (SO_PEERCRED) */
        uint64_t start_ticks; /* tells a live client from a reused pid */
    } clients[MPSD_MAX_CLIENTS];
} mpsd_ctx_t;

/* The running daemon. */
typedef struct mpsd {
    char pipe_dir[4096];
    char log_dir[4096];
    int lock_fd;      /* control_lock, OFD-locked while the daemon lives */
    int listen_fd;    /* the control socket */
    FILE *log;        /* control.log */
    FILE *server_log; /* server.log: what the simulated servers log */
    mpsd_ctx_t *ctx;  /* [MPSD_MAX_CONTEXTS] server contexts (server.c) */
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

/* Serves "gpusim-attach DEV" from the client process pid of user uid (server.c): the server of
 * uid creates (or reuses) its context on GPU dev and attaches the client, or meets the fatal
 * error of a context whose concurrent clients have all exited. Writes "ok" or "fatal" and a
 * newline into reply. */
void mpsd_attach(mpsd_t *d, uint32_t uid, int32_t pid, int dev, char *reply, size_t len);

/* Notices clients that have exited (housekeeping: their exit is logged when it happens). */
void mpsd_server_tick(mpsd_t *d);

/* Forgets the contexts of the server of uid (it stopped or died). */
void mpsd_server_gone(mpsd_t *d, uint32_t uid);

/* Appends one line to server.log as the server of uid (its pid in the prefix). */
void mpsd_server_log(mpsd_t *d, uint32_t uid, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends one line to control.log (and to stderr in the foreground). */
void mpsd_log(mpsd_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
