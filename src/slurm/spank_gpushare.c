/* SPDX-License-Identifier: Apache-2.0 */
/* spank_gpushare.so: srun/sbatch --gpu-memory and --gpu-compute, and a gpushared lease for every
 * job step that asks for one (or uses a shard gres), set up for its tasks through the shim.
 *
 * Where each part runs (see docs/slurm.md):
 *   - srun / sbatch (local and allocator contexts): the options are registered and checked, a
 *     bad value fails the command before the job is submitted;
 *   - slurmstepd (remote context, root), init_post_opt: the step's lease is asked for, on behalf
 *     of the job's user and pinned to the GPUs Slurm gave the step; slurmstepd holds the
 *     connection, so the lease lives exactly as long as the step;
 *   - each task (as the user, just before exec), task_init: the lease's environment is set, or,
 *     when there is no lease though one was asked for, the task fails with one line;
 *   - slurmstepd, exit: the lease is released.
 * A failure is reported from task_init rather than init_post_opt because only a task's error
 * reaches the user's terminal and fails srun; failing init_post_opt is silent and exits 0.
 * The plugin never exits the process and never lets a task run without a limit it asked for. */
#include <slurm/spank.h>

#include "slurm_plugin.h"

#include "gpushare/error.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Step ids Slurm gives its special steps (slurm.h; repeated so that only spank.h is needed). */
#define STEP_EXTERN      0xfffffffcu
#define STEP_BATCH       0xfffffffbu
#define STEP_INTERACTIVE 0xfffffffau

#define EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(default)
SPANK_PLUGIN(gpushare, 1)
#pragma GCC visibility pop

/* SPANK runs a plugin in one thread of each process; this state is per process. */
static gs__slurm_opts_t opts;           /* set by the option callbacks (srun, sbatch, slurmstepd) */
static gs__slurm_config_t config;       /* the plugstack.conf arguments */
static gs__slurm_lease_t lease;         /* slurmstepd: the step's lease */
static char failure[GS__SLURM_MSG_MAX]; /* slurmstepd: why the step's tasks may not run */

static int on_memory(int val, const char *arg, int remote)
{
    (void)val;
    (void)remote;
    return arg != NULL && gs__slurm_parse_memory(arg, &opts.memory) == 0 ? 0 : -1;
}

static int on_compute(int val, const char *arg, int remote)
{
    (void)val;
    (void)remote;
    return arg != NULL && gs__slurm_parse_compute(arg, &opts.compute) == 0 ? 0 : -1;
}

static struct spank_option options[] = {
    {"gpu-memory", "SIZE",
     "GPU memory per GPU for each step, enforced by gpushare (4G, 512M; binary units)", 1, 0,
     on_memory},
    {"gpu-compute", "PCT", "guaranteed share of each GPU's compute in percent (with --gpu-memory)",
     1, 0, on_compute},
};

/* The libgpushare.so installed beside this plugin. */
static void default_shim(char *path, size_t len)
{
    Dl_info info;
    snprintf(path, len, "libgpushare.so");
    if (dladdr((void *)default_shim, &info) == 0 || info.dli_fname == NULL)
        return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash != NULL)
        snprintf(path, len, "%.*s/libgpushare.so", (int)(slash - info.dli_fname), info.dli_fname);
}

EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return 0;
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
        if (spank_option_register(sp, &options[i]) != ESPANK_SUCCESS) {
            slurm_error("gpushare: cannot register --%s", options[i].name);
            return -1;
        }
    }
    char err[GS__SLURM_MSG_MAX];
    if (gs__slurm_config_parse(ac, av, &config, err, sizeof(err)) != 0) {
        slurm_error("gpushare: plugstack.conf: %s", err);
        return -1;
    }
    if (config.shim[0] == '\0')
        default_shim(config.shim, sizeof(config.shim));
    return 0;
}

/* Reads a variable of the job's environment into buf; "" when it is not set. Returns 0, or -1
 * (buf "") when the value does not fit. */
static int job_env(spank_t sp, const char *name, char *buf, int len)
{
    spank_err_t rc = spank_getenv(sp, name, buf, len);
    if (rc != ESPANK_SUCCESS)
        buf[0] = '\0';
    return rc == ESPANK_NOSPACE ? -1 : 0;
}

/* The step's GPUs and shards. Slurm's node-wide indexes come from SLURM_STEP_GPUS (steps) or
 * SLURM_JOB_GPUS (the batch or interactive step): CUDA_VISIBLE_DEVICES is renumbered from 0 when
 * cgroups constrain devices, so it is only the fallback. */
static int read_step(spank_t sp, uint32_t stepid, gs__slurm_step_t *step, char *err, size_t len)
{
    char text[256], shards[32];
    memset(step, 0, sizeof(*step));
    int whole_job = stepid == STEP_BATCH || stepid == STEP_INTERACTIVE;
    job_env(sp, whole_job ? "SLURM_JOB_GPUS" : "SLURM_STEP_GPUS", text, sizeof(text));
    if (text[0] == '\0')
        job_env(sp, "CUDA_VISIBLE_DEVICES", text, sizeof(text));
    char why[GS__SLURM_MSG_MAX - 16];
    if (text[0] != '\0' && gs__slurm_parse_gpus(text, step, why, sizeof(why)) != 0)
        return gs_fail(err, len, GS_EINVAL, "gpushare: %s", why);
    job_env(sp, "SLURM_SHARDS_ON_NODE", shards, sizeof(shards));
    if (shards[0] != '\0' && gs__slurm_parse_count(shards, &step->shards) != 0)
        return gs_fail(err, len, GS_EINVAL, "gpushare: cannot read SLURM_SHARDS_ON_NODE=\"%.20s\"",
                       shards);
    return 0;
}

/* "slurm job 12.0: prog args" for listings, valid UTF-8 (JSON), cut to fit. */
static void step_command(spank_t sp, uint32_t jobid, uint32_t stepid, char *buf, size_t len)
{
    int argc = 0;
    char **argv = NULL;
    size_t off;
    if (stepid == STEP_BATCH)
        off = (size_t)snprintf(buf, len, "slurm job %u.batch:", jobid);
    else
        off = (size_t)snprintf(buf, len, "slurm job %u.%u:", jobid, stepid);
    if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS)
        argc = 0;
    for (int i = 0; i < argc && off + 1 < len; i++)
        off += (size_t)snprintf(buf + off, len - off, " %s", argv[i]);
    json_t *probe = json_string(buf);
    for (char *p = buf; probe == NULL && *p != '\0'; p++)
        *p = (unsigned char)*p >= 0x80 ? '?' : *p;
    json_decref(probe);
}

/* Joins the batch step's lease when this step inherited it and asks for the same thing.
 * Returns 1 when joined; otherwise the step asks for its own lease (which reports a daemon that
 * cannot be reached). */
static int try_join(spank_t sp, uint32_t uid, const gs_lease_request_t *req)
{
    char text[32], why[GS__SLURM_MSG_MAX];
    unsigned long long id = 0;
    job_env(sp, "GPUSHARE_LEASE_ID", text, sizeof(text));
    if (text[0] == '\0' || sscanf(text, "%llu", &id) != 1 || id == 0)
        return 0;
    int result = gs__slurm_join(&config, id, uid, req, &lease, why, sizeof(why));
    if (result == 1)
        slurm_info("gpushare: the step shares lease %llu of its batch script", id);
    return result;
}

/* Gets the step's lease, if it needs one. Returns 0, or -errno with one line in err. */
static int setup_step(spank_t sp, char *err, size_t len)
{
    uint32_t jobid = 0, stepid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    gs__slurm_step_t step;
    gs_lease_request_t req;
    if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
        return gs_fail(err, len, GS_EINVAL,
                       "gpushare: Slurm did not say which job and user the step is");
    if (stepid == STEP_EXTERN)
        return 0;
    int result = read_step(sp, stepid, &step, err, len);
    if (result == 0)
        result = gs__slurm_plan(&opts, &step, &config, &req, err, len);
    if (result <= 0)
        return result;
    req.owner.set = req.owner.has_uid = req.owner.has_gid = 1;
    req.owner.uid = (uint32_t)uid;
    req.owner.gid = (uint32_t)gid;
    step_command(sp, jobid, stepid, req.command, sizeof(req.command));
    if (stepid != STEP_BATCH && stepid != STEP_INTERACTIVE &&
        try_join(sp, (uint32_t)uid, &req) == 1)
        return 0;
    char why[GS__SLURM_MSG_MAX - 64];
    result = gs__slurm_acquire(&config, &req, &lease, why, sizeof(why));
    if (result != 0)
        return gs_fail(err, len, result, "gpushare: no GPU lease for this step: %s", why);
    slurm_info("gpushare: step %u.%u holds lease %llu", jobid, stepid,
               (unsigned long long)lease.id);
    return 0;
}

EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    spank_context_t ctx = spank_context();
    char err[GS__SLURM_MSG_MAX];
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) {
        if (gs__slurm_check_opts(&opts, err, sizeof(err)) != 0) {
            slurm_error("%s", err);
            return -1;
        }
        return 0;
    }
    if (ctx != S_CTX_REMOTE)
        return 0;
    if (setup_step(sp, failure, sizeof(failure)) != 0)
        slurm_error("%s", failure); /* into slurmd's log; the first task tells the user */
    return 0;
}

/* Sets the lease's variables and the shim in the task's environment. Returns 0 or -1. */
static int set_task_env(spank_t sp)
{
    const char *key;
    json_t *value;
    json_object_foreach(lease.env, key, value)
    {
        if (json_is_string(value) &&
            spank_setenv(sp, key, json_string_value(value), 1) != ESPANK_SUCCESS) {
            slurm_error("gpushare: cannot set %s for the task", key);
            return -1;
        }
    }
    char old[8192], preload[8192 + GS__SLURM_PATH_MAX + 2];
    if (job_env(sp, "LD_PRELOAD", old, sizeof(old)) != 0 ||
        gs__slurm_preload(config.shim, old, preload, sizeof(preload)) != 0 ||
        spank_setenv(sp, "LD_PRELOAD", preload, 1) != ESPANK_SUCCESS) {
        slurm_error("gpushare: cannot set LD_PRELOAD for the task");
        return -1;
    }
    return 0;
}

EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    int task = 0;
    if (spank_remote(sp) != 1)
        return 0;
    if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS)
        task = 0;
    if (failure[0] != '\0') {
        if (task == 0)
            slurm_error("%s", failure);
        return -1;
    }
    if (lease.env == NULL)
        return 0;
    if (access(config.shim, R_OK) != 0) {
        if (task == 0)
            slurm_error("gpushare: the shim %s cannot be read: refusing to run the step without "
                        "its GPU limits (shim= in plugstack.conf)",
                        config.shim);
        return -1;
    }
    return set_task_env(sp);
}

EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE)
        gs__slurm_release(&lease);
    return 0;
}
