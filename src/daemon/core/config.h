/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared's configuration: gpushare.conf (INI) merged with command-line overrides. */
#ifndef GS_DAEMON_CONFIG_H
#define GS_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "gpushare/gpu_mode.h"
#include "gpushare/quantity.h"

#define GS__PATH_MAX      512
#define GS__UUID_MAX      96
#define GS__CONFIG_ERRMAX 1024

/* GS_CONFIG_PATH and GS_STATE_DIR follow the install prefix (cmake/gs_paths.cmake). */
#define GS__DEFAULT_CONFIG    GS_CONFIG_PATH
#define GS__DEFAULT_STATE_DIR GS_STATE_DIR
#define GS__DEFAULT_METRICS   "127.0.0.1:9447"
#define GS__DEFAULT_IDLE_MS   10000
#define GS__DEFAULT_WATCH_MS  1000
#define GS__DEFAULT_TOLERANCE (UINT64_C(128) << 20)
#define GS__DEFAULT_AGING_MS  60000
#define GS__DEFAULT_GRACE_MS  10000
#define GS__DEFAULT_RUNTIME   "/run/gpushare"
#define GS__DEFAULT_MPS_CTL   "nvidia-cuda-mps-control"

/* Per-user limits (root is exempt): what one user can make the daemon hold. */
#define GS__DEFAULT_MAX_CONNS  256                /* connections open at once */
#define GS__DEFAULT_MAX_QUEUED 128                /* requests waiting at once */
#define GS__DEFAULT_MAX_OUTPUT (4u * 1024 * 1024) /* unread replies of one connection, bytes */
#define GS__DEFAULT_MAX_USER_OUTPUT                                                                \
    (16u * 1024 * 1024)            /* unread replies of all its connections                        \
                                    */
#define GS__DEFAULT_MAX_LEASES 256 /* leases held at once (each a region memfd of 384 KiB) */

/* What one lease and one user (root excepted) may hold in one GPU's compute scheduler, whose
 * tables have room for GS_SCHED_MAX_PROCS (256) processes and GS_SCHED_MAX_LEASES (64) leases:
 * a quarter of each per user, so that no one user can keep another's --compute out. */
#define GS__DEFAULT_COMPUTE_MEMBERS_LEASE 32 /* processes of one lease */
#define GS__DEFAULT_COMPUTE_MEMBERS_USER  64 /* processes of one user's leases */
#define GS__DEFAULT_COMPUTE_LEASES_USER   16 /* one user's leases */

/* The history's retention: the oldest rows go first, beyond any of these. */
#define GS__DEFAULT_HISTORY_ROWS      200000 /* rows in all */
#define GS__DEFAULT_HISTORY_USER_ROWS 20000  /* rows of one user */
#define GS__DEFAULT_HISTORY_DAYS      90     /* days since the lease ended */

/* Who the per-lease metric series show (metrics_users). */
typedef enum gs__metrics_users {
    GS__METRICS_USERS_NONE = 0, /* no per-lease series: nothing about users (the default) */
    GS__METRICS_USERS_ALL,      /* every lease, labelled with its user and uid */
} gs__metrics_users_t;

/* What the watchdog does about a process of no lease, or a lease over its limit. */
typedef enum gs__enforce {
    GS__ENFORCE_REPORT = 0, /* status, metrics and the log say so */
    GS__ENFORCE_KILL,       /* and the offending process gets SIGKILL */
} gs__enforce_t;

typedef enum gs__policy {
    GS__POLICY_GPUSHARE = 0,
    GS__POLICY_FGD,
    GS__POLICY_BESTFIT,
    GS__POLICY_SPREAD,
} gs__policy_t;

/* Settings of one GPU section; a field applies only when its bit is set in `set`. */
enum { GS__SET_MODE = 1, GS__SET_OVERPROVISION = 2, GS__SET_PLACEMENT = 4, GS__SET_RESERVE = 8 };

typedef struct gs__gpu_settings {
    unsigned set;
    gs_gpu_mode_t mode; /* never GS_GPU_MODE_ANY */
    unsigned overprovision;
    gs__policy_t placement;
    uint64_t reserve; /* bytes kept for the driver, never leased */
} gs__gpu_settings_t;

/* A [gpu:...] section: all GPUs, one index, or one UUID. */
typedef struct gs__gpu_section {
    enum { GS__GPU_ALL, GS__GPU_INDEX, GS__GPU_UUID } match;
    unsigned index;
    char uuid[GS__UUID_MAX];
    int line; /* where the section starts, for messages */
    gs__gpu_settings_t settings;
} gs__gpu_section_t;

#define GS__MAX_GPU_SECTIONS (2 * GS_MAX_DEVICES + 1)

typedef struct gs__config {
    char path[GS__PATH_MAX]; /* the file read, "" when none */
    char socket[GS__PATH_MAX];
    char state_dir[GS__PATH_MAX];
    char region_dir[GS__PATH_MAX]; /* no longer used (regions are sealed memfds); accepted */
    char metrics_listen[64];       /* "ADDR:PORT"; port 0 = off */
    char nvml_library[GS__PATH_MAX];
    char shim[GS__PATH_MAX];        /* LD_PRELOAD for leases, "" = the client decides */
    char runtime_dir[GS__PATH_MAX]; /* MPS pipe and log directories (tmpfs) */
    char mps_control[GS__PATH_MAX]; /* nvidia-cuda-mps-control: a path, or a name in PATH */
    char lease_admin_group[64]; /* its members may, as root, lease for others and name cgroups */
    unsigned idle_timeout_ms;   /* a connection with no lease that sends nothing is closed */
    unsigned queue_aging_ms;    /* a waiting request gains a priority point per this, 0 = never */
    unsigned kill_grace_ms;     /* SIGTERM to SIGKILL at a time limit or a release by another */
    unsigned watch_interval_ms; /* the watchdog's NVML scan; 0 = no watchdog */
    uint64_t watch_tolerance;   /* a lease's real use may pass its limit by this much */
    gs__enforce_t enforce;
    unsigned max_connections_per_user;
    unsigned max_queued_per_user;
    unsigned max_output_per_connection; /* bytes */
    unsigned max_output_per_user;       /* bytes, all its connections together */
    unsigned max_leases_per_user;
    unsigned compute_members_per_lease; /* per GPU's compute scheduler (sched_server.h) */
    unsigned compute_members_per_user;
    unsigned compute_leases_per_user;
    unsigned history_max_rows; /* the history's retention (ledger.h) */
    unsigned history_max_rows_per_user;
    unsigned history_max_days;
    gs__metrics_users_t metrics_users;
    unsigned n_sections;
    gs__gpu_section_t sections[GS__MAX_GPU_SECTIONS];
} gs__config_t;

/* Fills cfg with the built-in defaults (DESIGN.md's paths). */
void gs__config_defaults(gs__config_t *cfg);

/* Reads the INI file at path over cfg. Returns 0, GS_ENOENT when the file does not exist (cfg
 * unchanged), or GS_EINVAL / -errno with "path:line: reason" in err (one line). */
int gs__config_load(gs__config_t *cfg, const char *path, char *err, size_t errlen);

/* Parses INI text (named `source` in messages) over cfg. Same returns as gs__config_load. */
int gs__config_parse(gs__config_t *cfg, const char *text, const char *source, char *err,
                     size_t errlen);

/* The settings that apply to GPU index/uuid: defaults (GS_GPU_MODE_DEFAULT, 1, gpushare, 0), then
 * [gpu:all], then [gpu:INDEX], then [gpu:UUID]. */
gs__gpu_settings_t gs__config_gpu(const gs__config_t *cfg, unsigned index, const char *uuid);

/* Parses "ADDR:PORT" (IPv4 address) into host-order parts. Returns 0 or GS_EINVAL. */
int gs__config_parse_listen(const char *text, uint32_t *addr, uint16_t *port);

/* Names of the enums, for logs and replies (a GPU mode's: gs_gpu_mode_name). Never NULL. */
const char *gs__enforce_name(gs__enforce_t enforce);
const char *gs__policy_name(gs__policy_t policy);

#endif
