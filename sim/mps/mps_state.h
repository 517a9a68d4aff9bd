/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim MPS: what the control daemon leaves in its pipe directory for clients to read.
 *
 * The pipe directory (CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps) holds:
 *   control                      the daemon's unix socket (commands, one per connection)
 *   control_lock                 an OFD write lock held by the live daemon: its liveness
 *   gpusim-mps.state             gsim_mps_state_t, replaced atomically (rename) on every change
 *   nvidia-cuda-mps-control.pid  the daemon's pid, as NVIDIA's daemon writes it
 *   gpusim-clients/<pid>         one file per MPS client, OFD-locked by the client while it lives
 * A client tells a live daemon from stale files by the lock alone, without talking to it. */
#ifndef GSIM_MPS_STATE_H
#define GSIM_MPS_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "node.h"

#define GSIM_MPS_SOCKET      "control"
#define GSIM_MPS_LOCK        "control_lock"
#define GSIM_MPS_STATE       "gpusim-mps.state"
#define GSIM_MPS_PID_FILE    "nvidia-cuda-mps-control.pid"
#define GSIM_MPS_CLIENTS     "gpusim-clients"
#define GSIM_MPS_LOG         "control.log"
#define GSIM_MPS_MAX_SERVERS 16
#define GSIM_MPS_MAGIC       UINT64_C(0x3174617473737067) /* "gpsstat1" */

typedef struct gsim_mps_server {
    int32_t pid; /* the simulated nvidia-cuda-mps-server process */
    uint32_t uid;
} gsim_mps_server_t;

typedef struct gsim_mps_state {
    uint64_t magic;
    int32_t daemon_pid;
    uint32_t n_servers;
    double default_thread_pct;                 /* (0, 100] */
    uint64_t default_pinned[GSIM_MAX_DEVICES]; /* bytes per device ordinal; 0 = no limit */
    gsim_mps_server_t servers[GSIM_MPS_MAX_SERVERS];
} gsim_mps_state_t;

/* Writes the pipe directory (CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps) into buf. */
void gsim_mps_pipe_dir(char *buf, size_t len);

/* Writes the log directory (CUDA_MPS_LOG_DIRECTORY or /var/log/nvidia-mps) into buf. */
void gsim_mps_log_dir(char *buf, size_t len);

/* Writes the control socket path of pipe directory dir into buf (a sockaddr_un's sun_path).
 * Returns 0, or -ENAMETOOLONG when it does not fit. */
int gsim_mps_socket_path(const char *dir, char *buf, size_t len);

/* Returns 1 when the file at path exists and another open file description holds an OFD lock
 * on it (a live daemon or client), else 0. */
int gsim_mps_lock_held(const char *path);

/* Reads the state of the live daemon of pipe directory dir. Returns 0, -ENOENT when no live
 * daemon serves dir, or -EIO for an unreadable state file. Thread-safe. */
int gsim_mps_read_state(const char *dir, gsim_mps_state_t *out);

/* Parses a memory size as NVIDIA's MPS tools take it: an integer with an optional unit K, M, G
 * or T (binary; "KB", "MB", ... accepted too). Returns 0 or -EINVAL. */
int gsim_mps_parse_size(const char *text, uint64_t *bytes);

/* Parses CUDA_MPS_PINNED_DEVICE_MEM_LIMIT syntax ("0=1G,1=512M") into limits (unlisted devices
 * keep their value). Returns 0 or -EINVAL. */
int gsim_mps_parse_pinned(const char *text, uint64_t limits[GSIM_MAX_DEVICES]);

/* Formats bytes in the largest binary unit that divides it ("1G", "512M", "0"). */
void gsim_mps_format_size(uint64_t bytes, char *buf, size_t len);

#endif
