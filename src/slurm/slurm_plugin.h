/* SPDX-License-Identifier: Apache-2.0 */
/* The Slurm plugin's core, kept apart from SPANK so that it builds and is unit-tested without
 * Slurm: the plugin's arguments, the step's lease request, the tasks' environment (plan.c) and
 * the conversation with gpushared (lease.c). spank_gpushare.c is the SPANK glue around them.
 *
 * Nothing here is thread-safe or needs to be: SPANK calls a plugin from one thread. */
#ifndef GS_SLURM_PLUGIN_H
#define GS_SLURM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "gpushare/client.h"

/* Room for one error line of the plugin (what the user sees when a step cannot run). */
#define GS__SLURM_MSG_MAX 512

/* Room for a path in the plugin's arguments. */
#define GS__SLURM_PATH_MAX 1024

/* The longest a step may wait for room (timeout=), in seconds: a week, like the protocol. */
#define GS__SLURM_TIMEOUT_MAX (GS_LEASE_TIMEOUT_MAX / 1000)

/* The most shards per GPU the plugin accepts (shards=). */
#define GS__SLURM_SHARDS_MAX 10000

/* The plugin's arguments on its plugstack.conf line. */
typedef struct gs__slurm_config {
    char socket[GS__SLURM_PATH_MAX]; /* socket=PATH; "" = $GPUSHARE_SOCKET or the default */
    char shim[GS__SLURM_PATH_MAX];   /* shim=PATH; "" = libgpushare.so beside the plugin */
    uint32_t timeout_s;              /* timeout=SECONDS to wait for room; 0 = fail at once */
    uint32_t shards;                 /* shards=S per GPU (as gres.conf); 0 = not configured */
} gs__slurm_config_t;

/* Parses the plugstack.conf arguments ("socket=PATH", "shim=PATH", "timeout=SECONDS",
 * "shards=S"). Returns 0 with *cfg filled (unset ones empty/0), or GS_EINVAL with one line in
 * err. */
int gs__slurm_config_parse(int argc, char **argv, gs__slurm_config_t *cfg, char *err,
                           size_t errlen);

/* What the user asked for on srun/sbatch's command line (or inherited from sbatch). */
typedef struct gs__slurm_opts {
    uint64_t memory;  /* --gpu-memory per GPU in bytes, 0 = not given */
    uint32_t compute; /* --gpu-compute in percent, 0 = not given */
} gs__slurm_opts_t;

/* Option values, parsed with the project's strict quantity parser as the CLI parses them (a size
 * needs a unit; decimals round down to whole MiB). Return 0 and set *out, or GS_EINVAL /
 * GS_ERANGE (zero is invalid for both). */
int gs__slurm_parse_memory(const char *text, uint64_t *out);
int gs__slurm_parse_compute(const char *text, uint32_t *out);

/* A count from Slurm's environment (SLURM_SHARDS_ON_NODE): digits only, above zero. Returns 0
 * and sets *out, or GS_EINVAL. */
int gs__slurm_parse_count(const char *text, uint32_t *out);

/* Checks how the options combine (before the job runs). Returns 0, or GS_EINVAL with one line
 * in err. */
int gs__slurm_check_opts(const gs__slurm_opts_t *opts, char *err, size_t errlen);

/* What Slurm gave the step on this node. */
typedef struct gs__slurm_step {
    unsigned n_gpus;
    uint8_t gpus[GS_MAX_DEVICES]; /* node-wide GPU indexes (gres.conf File= order), CUDA order */
    uint32_t shards;              /* SLURM_SHARDS_ON_NODE, 0 = no shard gres */
} gs__slurm_step_t;

/* Parses Slurm's GPU list ("0", "0,1", "0-2,5") into step->gpus. Returns 0, or GS_EINVAL with one
 * line in err (an index above GS_MAX_DEVICES - 1, a repeat, anything but digits, ',' and '-'). */
int gs__slurm_parse_gpus(const char *text, gs__slurm_step_t *step, char *err, size_t errlen);

/* Decides the step's lease. Returns 1 with *req filled (pinned to the step's GPUs, wait and
 * timeout from cfg; the caller adds owner and command), 0 when the step needs no lease (no
 * option, no shard gres), or GS_EINVAL with one line in err (e.g. --gpu-memory without GPUs). */
int gs__slurm_plan(const gs__slurm_opts_t *opts, const gs__slurm_step_t *step,
                   const gs__slurm_config_t *cfg, gs_lease_request_t *req, char *err,
                   size_t errlen);

/* Writes LD_PRELOAD with shim first, followed by the other entries of old (may be NULL; entries
 * separated by ':' or blanks, an earlier copy of shim dropped). Returns 0 or GS_ENOSPC. */
int gs__slurm_preload(const char *shim, const char *old, char *out, size_t len);

/* The tasks' environment for a lease described by a LEASE object of the protocol (list), as
 * gpushared gives it with a grant: CUDA_VISIBLE_DEVICES (UUIDs), GPUSHARE_REGION,
 * GPUSHARE_MEMORY_LIMIT, GPUSHARE_COMPUTE_SHARE / _MAX when set, GPUSHARE_LEASE_ID. Returns a new
 * object (the caller json_decref's it), or NULL when the lease object is malformed. */
json_t *gs__slurm_env_of_lease(const json_t *lease);

/* The step's lease: held through a connection to gpushared by the process that asked (slurmstepd)
 * or joined (the lease of the job's batch step, held by that step). */
typedef struct gs__slurm_lease {
    gs_client_t *client; /* the holding connection; NULL when joined or none */
    pid_t holder;        /* the process the connection belongs to */
    uint64_t id;         /* 0 = no lease */
    json_t *env;         /* variables for the tasks (owned) */
} gs__slurm_lease_t;

/* Asks gpushared (socket as cfg, else gs_client_socket_path) for req and waits for the grant
 * (up to cfg->timeout_s and a margin for the reply). Returns 0 with *out holding the lease, or
 * -errno with one line in err (unreachable daemon, refusal, timeout). */
int gs__slurm_acquire(const gs__slurm_config_t *cfg, const gs_lease_request_t *req,
                      gs__slurm_lease_t *out, char *err, size_t errlen);

/* Joins lease id, held by an enclosing step (the batch script's), when it is uid's and was asked
 * with the same size on the same GPUs as req. Returns 1 with out->env set (out->client NULL),
 * 0 when it cannot be joined (gone, another user's, other GPUs or size), or -errno with one
 * line in err when gpushared cannot be asked. */
int gs__slurm_join(const gs__slurm_config_t *cfg, uint64_t id, uint32_t uid,
                   const gs_lease_request_t *req, gs__slurm_lease_t *out, char *err, size_t errlen);

/* Lets the lease go (release on its connection, which is then closed) when the calling process
 * holds it; frees what *lease owns either way and empties it. Safe on an empty lease. */
void gs__slurm_release(gs__slurm_lease_t *lease);

#endif
