/* SPDX-License-Identifier: Apache-2.0 */
/* Mode mps: the GPU's memory and compute pool as in mode shared, served by an MPS control daemon
 * that gpushared runs for the GPU, checks, restarts when it dies and stops at shutdown.
 *
 * A lease's processes are MPS clients: CUDA_MPS_PIPE_DIRECTORY names the GPU's daemon,
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is the lease's compute share (MPS partitions the SMs, so the
 * shim does not slow launches down) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT its memory limit (the
 * MPS server enforces it per process; the shim still holds the lease's total across its
 * processes). MPS serves one user at a time: NVIDIA's control daemon starts a server per user
 * and makes a second user's clients wait until the first user's server is done, so an MPS GPU
 * takes leases of one user at a time (others wait or go to other GPUs). The GPU's compute mode
 * is left as it is: MPS works in the default mode. */
#include "mode.h"
#include "mps_busy.h"
#include "mps_ctl.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_MIN_MS 500   /* after a failed start: then doubling */
#define RETRY_MAX_MS 30000 /* at most this long between tries */
#define POLL_MS      2000  /* servers and clients are asked for this often */
#define MAX_SERVERS  8
#define MAX_CLIENTS  64

typedef struct mps_gpu {
    gs__mps_ctl_t ctl;
    pid_t pid; /* the control daemon, 0 = not running */
    uint64_t start;
    uint64_t restarts;       /* times it had to be started again since gpushared started */
    uint64_t start_failures; /* failed attempts to start it */
    int64_t retry_ms;        /* the current wait between attempts */
    int64_t next_try_ms;     /* when to try to start it again (while down) */
    int64_t next_poll_ms;
    gs__mps_ctl_job_t poll; /* asking for servers or clients, in the background */
    int polling_clients;    /* the running poll asks for clients (else servers) */
    char error[256];        /* why it is down, "" while up */
    uint32_t uid;           /* the user whose leases it serves now, GS__UID_ANY = none */
    unsigned n_leases;
    unsigned n_servers, n_clients;
    int32_t servers[MAX_SERVERS];
    int32_t clients[MAX_CLIENTS];
    gs__mps_busy_t busy; /* the leases' device time (mps_busy.h) */
} mps_gpu_t;

static mps_gpu_t *state_of(const gs__gpu_t *gpu)
{
    return gpu->mode_state;
}

/* ---- admission ---- */

static int served_kind(gs_lease_kind_t kind)
{
    return kind == GS_LEASE_GPUS || kind == GS_LEASE_FRACTION || kind == GS_LEASE_MEMORY;
}

static int mps_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part)
{
    const mps_gpu_t *st = state_of(gpu);
    if (!served_kind(ask->req->kind))
        return GS_ENOTSUP;
    if (st == NULL || st->pid == 0)
        return GS_EAGAIN;
    if (!ask->idle && st->uid != GS__UID_ANY && ask->uid != GS__UID_ANY && ask->uid != st->uid)
        return GS_ENOFIT; /* MPS serves one user at a time */
    gs__part_for(gpu, ask->req, ask->slots, part);
    int fits = ask->idle ? gs__gpu_fits_idle(gpu, ask->req->kind, part)
                         : gs__gpu_fits(gpu, ask->req->kind, part);
    return fits ? 0 : GS_ENOFIT;
}

static void mps_why_not(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len)
{
    const mps_gpu_t *st = state_of(gpu);
    if (!served_kind(ask->req->kind))
        return;
    if (st == NULL || st->pid == 0)
        snprintf(buf, len, "GPU %u (mps): its MPS control daemon is not running: %s", gpu->index,
                 st != NULL && st->error[0] != '\0' ? st->error : "not started");
    else if (!ask->idle && st->uid != GS__UID_ANY && ask->uid != GS__UID_ANY && ask->uid != st->uid)
        snprintf(buf, len,
                 "GPU %u (%s, mps) serves %u lease%s of another user now: MPS runs one user's "
                 "clients at a time",
                 gpu->index, gs__gpu_model(gpu), st->n_leases, st->n_leases == 1 ? "" : "s");
}

/* ---- the control daemon ---- */

/* Starts the control daemon; on failure records why and when to try again. */
static int start_daemon(mps_gpu_t *st, unsigned index, int64_t now_ms)
{
    char err[sizeof(st->error)];
    int result = gs__mps_ctl_start(&st->ctl, &st->pid, &st->start, err, sizeof(err));
    if (result == 0) {
        st->error[0] = '\0';
        st->retry_ms = RETRY_MIN_MS;
        st->next_poll_ms = now_ms;
        gs_info("GPU %u: MPS control daemon running (pid %d, pipe directory %s)", index,
                (int)st->pid, st->ctl.pipe_dir);
        return 0;
    }
    st->pid = 0;
    st->start_failures++;
    snprintf(st->error, sizeof(st->error), "%s", err);
    st->next_try_ms = now_ms + st->retry_ms;
    gs_error("GPU %u: cannot start its MPS control daemon: %s (next try in %.1f s)", index, err,
             (double)st->retry_ms / 1000.0);
    st->retry_ms = st->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : st->retry_ms * 2;
    return result;
}

static int mps_start(gs__daemon_t *d, unsigned g, char *err, size_t errlen)
{
    gs__gpu_t *gpu = &d->gpus[g];
    mps_gpu_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    st->uid = GS__UID_ANY;
    st->retry_ms = RETRY_MIN_MS;
    snprintf(st->ctl.program, sizeof(st->ctl.program), "%s", d->cfg.mps_control);
    snprintf(st->ctl.gpu_uuid, sizeof(st->ctl.gpu_uuid), "%s", gpu->uuid);
    int n = snprintf(st->ctl.pipe_dir, sizeof(st->ctl.pipe_dir), "%s/mps/%s/pipe",
                     d->cfg.runtime_dir, gpu->uuid);
    int m = snprintf(st->ctl.log_dir, sizeof(st->ctl.log_dir), "%s/mps/%s/log", d->cfg.runtime_dir,
                     gpu->uuid);
    int result = n > 0 && m > 0 && (size_t)n < sizeof(st->ctl.pipe_dir) &&
                         (size_t)m < sizeof(st->ctl.log_dir)
                     ? gs__mps_ctl_prepare(&st->ctl, err, errlen)
                     : GS_ERANGE;
    if (result != 0) {
        if (result == GS_ERANGE && n > 0 && (size_t)n >= sizeof(st->ctl.pipe_dir))
            gs_fail(err, errlen, result, "runtime_dir %s is too long", d->cfg.runtime_dir);
        free(st);
        return result;
    }
    gpu->mode_state = st;
    gs__mps_busy_init(&st->busy, d, g);
    /* A daemon left by a gpushared that was killed still serves its leases: keep it. */
    if (gs__mps_ctl_find(&st->ctl, &st->pid, &st->start))
        gs_info("GPU %u: found its MPS control daemon again (pid %d, pipe directory %s)",
                gpu->index, (int)st->pid, st->ctl.pipe_dir);
    else
        start_daemon(st, gpu->index, gs__now_ms());
    return 0;
}

/* Reads the pids of a control program's replies (one a line) into pids; returns the count. */
static unsigned parse_pids(char *text, int32_t *pids, unsigned max)
{
    unsigned n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL && n < max;
         line = strtok_r(NULL, "\n", &save)) {
        long pid = strtol(line, NULL, 10);
        if (pid > 0 && pid <= INT32_MAX)
            pids[n++] = (int32_t)pid;
    }
    return n;
}

/* Asks the daemon for its servers, then for their clients (for status and metrics), in the
 * background: each step is a run of the control program that the event loop does not wait
 * for (one run takes tens of milliseconds). */
static void poll_servers(mps_gpu_t *st, int64_t now_ms)
{
    int ok = 0;
    if (st->poll.pid == 0) {
        if (now_ms < st->next_poll_ms)
            return;
        st->polling_clients = 0;
        if (gs__mps_ctl_begin(&st->ctl, "get_server_list\n", &st->poll) != 0)
            st->next_poll_ms = now_ms + POLL_MS;
        return;
    }
    if (!gs__mps_ctl_poll(&st->poll, &ok))
        return;
    if (st->polling_clients) {
        st->n_clients = ok ? parse_pids(st->poll.out, st->clients, MAX_CLIENTS) : 0;
        st->next_poll_ms = now_ms + POLL_MS;
        return;
    }
    st->n_servers = ok ? parse_pids(st->poll.out, st->servers, MAX_SERVERS) : 0;
    char cmds[MAX_SERVERS * 32];
    size_t off = 0;
    for (unsigned k = 0; k < st->n_servers; k++)
        off += (size_t)snprintf(cmds + off, sizeof(cmds) - off, "get_client_list %d\n",
                                (int)st->servers[k]);
    st->polling_clients = 1;
    if (st->n_servers == 0 || gs__mps_ctl_begin(&st->ctl, cmds, &st->poll) != 0) {
        st->n_clients = 0;
        st->next_poll_ms = now_ms + POLL_MS;
    }
}

static void mps_tick(gs__daemon_t *d, unsigned g, int64_t now_ms)
{
    mps_gpu_t *st = state_of(&d->gpus[g]);
    unsigned index = d->gpus[g].index;
    if (st == NULL)
        return;
    if (st->pid != 0 && !gs__mps_ctl_alive(st->pid, st->start)) {
        gs_warn("GPU %u: its MPS control daemon (pid %d) died: restarting it", index, (int)st->pid);
        snprintf(st->error, sizeof(st->error), "it died (pid %d)", (int)st->pid);
        st->pid = 0;
        st->n_servers = st->n_clients = 0;
        st->restarts++;
        st->next_try_ms = now_ms;
    }
    if (st->pid == 0 && now_ms >= st->next_try_ms) {
        if (start_daemon(st, index, now_ms) == 0)
            d->need_schedule = 1; /* requests may have waited for it */
    }
    if (st->pid != 0 || st->poll.pid != 0)
        poll_servers(st, now_ms);
    if (st->n_leases > 0)
        gs__mps_busy_tick(&st->busy, d, now_ms);
}

static uint64_t mps_device_ns(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i)
{
    const mps_gpu_t *st = state_of(&d->gpus[lease->alloc.part[i].gpu]);
    return st != NULL ? gs__mps_busy_ns(&st->busy, lease->rec.id) : 0;
}

static void mps_stop(gs__daemon_t *d, unsigned g)
{
    gs__gpu_t *gpu = &d->gpus[g];
    mps_gpu_t *st = state_of(gpu);
    if (st == NULL)
        return;
    gs__mps_ctl_cancel(&st->poll);
    if (st->pid != 0) {
        if (st->n_leases > 0)
            gs_warn("GPU %u: stopping its MPS control daemon while %u leases use it: their "
                    "processes lose their MPS server",
                    gpu->index, st->n_leases);
        int killed = gs__mps_ctl_stop(&st->ctl, st->pid, st->start);
        gs_info("GPU %u: MPS control daemon (pid %d) %s", gpu->index, (int)st->pid,
                killed ? "did not quit: killed" : "stopped");
    }
    free(st);
    gpu->mode_state = NULL;
}

/* ---- leases ---- */

static void hold(mps_gpu_t *st, uint32_t uid)
{
    if (st->n_leases++ == 0)
        st->uid = uid;
}

static int mps_grant(gs__daemon_t *d, gs__lease_t *lease, unsigned i, char *err, size_t errlen)
{
    gs__gpu_t *gpu = &d->gpus[lease->alloc.part[i].gpu];
    mps_gpu_t *st = state_of(gpu);
    if (st == NULL || st->pid == 0)
        return gs_fail(err, errlen, GS_EAGAIN,
                       "GPU %u (mps): its MPS control daemon is not running: %s", gpu->index,
                       st != NULL && st->error[0] != '\0' ? st->error : "not started");
    hold(st, lease->rec.uid);
    return 0;
}

static int mps_restore(gs__daemon_t *d, gs__lease_t *lease, unsigned i)
{
    mps_gpu_t *st = state_of(&d->gpus[lease->alloc.part[i].gpu]);
    if (st != NULL)
        hold(st, lease->rec.uid);
    return 0;
}

static void mps_end(gs__daemon_t *d, gs__lease_t *lease, unsigned i)
{
    mps_gpu_t *st = state_of(&d->gpus[lease->alloc.part[i].gpu]);
    if (st == NULL || st->n_leases == 0)
        return;
    if (--st->n_leases == 0)
        st->uid = GS__UID_ANY;
}

/* "4G", "1536M": CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's units; below a MiB is rounded down (the
 * shim holds the exact limit). */
static void format_limit(uint64_t bytes, char *buf, size_t len)
{
    if (bytes >= (UINT64_C(1) << 30) && bytes % (UINT64_C(1) << 30) == 0)
        snprintf(buf, len, "%lluG", (unsigned long long)(bytes >> 30));
    else
        snprintf(buf, len, "%lluM", (unsigned long long)(bytes >> 20 > 0 ? bytes >> 20 : 1));
}

static void mps_env(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i, json_t *env)
{
    const gs__part_t *part = &lease->alloc.part[i];
    const mps_gpu_t *st = state_of(&d->gpus[part->gpu]);
    char text[64], size[32];
    if (st == NULL)
        return;
    json_object_set_new(env, "CUDA_MPS_PIPE_DIRECTORY", json_string(st->ctl.pipe_dir));
    uint32_t share = gs__part_compute_percent(part);
    if (share != 0) {
        snprintf(text, sizeof(text), "%u", share);
        json_object_set_new(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", json_string(text));
    }
    format_limit(part->memory, size, sizeof(size));
    snprintf(text, sizeof(text), "%u=%s", i, size);
    json_object_set_new(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", json_string(text));
}

/* ---- status and metrics ---- */

static json_t *pid_array(const int32_t *pids, unsigned n)
{
    json_t *a = json_array();
    for (unsigned k = 0; a != NULL && k < n; k++)
        json_array_append_new(a, json_integer(pids[k]));
    return a;
}

static void mps_describe(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view)
{
    const mps_gpu_t *st = state_of(&d->gpus[g]);
    if (st == NULL)
        return;
    json_t *mps = json_pack("{s:s, s:I, s:s, s:I, s:I, s:I}", "state", st->pid ? "up" : "down",
                            "pid", (json_int_t)st->pid, "pipe_directory", st->ctl.pipe_dir,
                            "restarts", (json_int_t)st->restarts, "leases",
                            (json_int_t)st->n_leases, "clients", (json_int_t)st->n_clients);
    if (mps == NULL)
        return;
    if (st->error[0] != '\0' && st->pid == 0) {
        json_object_set_new(mps, "error", json_string(st->error));
        char problem[sizeof(st->error) + 64];
        snprintf(problem, sizeof(problem), "its MPS control daemon is not running: %s", st->error);
        json_object_set_new(view, "problem", json_string(problem));
    }
    /* Which user holds the GPU: their uid to root and to them, "another user" to the others. */
    if (st->uid == GS__UID_ANY)
        json_object_set_new(mps, "user", json_null());
    else if (cred->uid == 0 || cred->uid == st->uid)
        json_object_set_new(mps, "user", json_integer(st->uid));
    else
        json_object_set_new(mps, "user", json_string("another user"));
    /* Process ids of other users' jobs are root's to see. */
    if (cred->uid == 0 || cred->uid == st->uid) {
        json_object_set_new(mps, "servers", pid_array(st->servers, st->n_servers));
        json_object_set_new(mps, "client_pids", pid_array(st->clients, st->n_clients));
    }
    json_object_set_new(view, "mps", mps);
}

static void gpu_label(FILE *f, const gs__gpu_t *gpu)
{
    fprintf(f, "{gpu=\"%u\",UUID=\"%s\"}", gpu->index, gpu->uuid);
}

static void mps_metrics(const gs__daemon_t *d, FILE *f)
{
    static const char *const names[] = {"gpushare_mps_daemon_up", "gpushare_mps_restarts_total",
                                        "gpushare_mps_clients"};
    static const char *const helps[] = {
        "The GPU's MPS control daemon runs (1) or not (0).",
        "Times the GPU's MPS control daemon was found dead and started again.",
        "MPS client processes of the GPU's server (last asked)."};
    static const char *const types[] = {"gauge", "counter", "gauge"};
    for (int k = 0; k < 3; k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", names[k], helps[k], names[k], types[k]);
        for (unsigned g = 0; g < d->n_gpus; g++) {
            const mps_gpu_t *st = state_of(&d->gpus[g]);
            if (gs__mode_of(&d->gpus[g]) != &gs__mode_mps_ops || st == NULL)
                continue;
            uint64_t v = k == 0 ? st->pid != 0 : k == 1 ? st->restarts : st->n_clients;
            fputs(names[k], f);
            gpu_label(f, &d->gpus[g]);
            fprintf(f, " %llu\n", (unsigned long long)v);
        }
    }
}

/* After a failure gpushared stops without stopping the control daemons: the leases' jobs go on,
 * and the next start finds them again. */
static void mps_leave(const gs__daemon_t *d)
{
    (void)d;
    gs_warn("leaving the MPS control daemons running for the leases' jobs");
}

const gs__mode_ops_t gs__mode_mps_ops = {
    .name = "mps",
    .flags = GS__MODE_ONE_GPU | GS__MODE_POOL,
    .gate = "mps",
    .admit = mps_admit,
    .free_slots = gs__pool_free_slots,
    .why_not = mps_why_not,
    .start = mps_start,
    .restore = mps_restore,
    .grant = mps_grant,
    .end = mps_end,
    .env = mps_env,
    .describe = mps_describe,
    .tick = mps_tick,
    .metrics = mps_metrics,
    .device_ns = mps_device_ns,
    .stop = mps_stop,
    .leave = mps_leave,
};
