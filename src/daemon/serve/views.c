/* SPDX-License-Identifier: Apache-2.0 */
/* JSON views of leases, lease environments and the node's status. */
#include "views.h"
#include "server.h"

#include "gpushare/version.h"
#include "gpushare/log.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *state_name(const gs__lease_t *lease)
{
    if (lease->rec.damaged[0] != '\0')
        return "damaged";
    if (lease->rec.state != GS__LEASE_ENDING)
        return lease->rec.suspended ? "suspended" : "active";
    return lease->expired ? "expired" : "ending";
}

/* The request's sizing as given, without the protocol's "op" and "wait", the command (shown
 * apart) and the owner (the lease's user and uid say it). */
static json_t *request_view(const gs_lease_request_t *req)
{
    json_t *obj = gs_proto_acquire_json(req);
    static const char *const hidden[] = {"op",  "wait", "command",   "uid",
                                         "gid", "user", "capability"};
    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
        json_object_del(obj, hidden[i]);
    return obj;
}

/* Adds the watchdog's figures of the lease's part: its processes' real memory (NVML) and how far
 * it is over its limit beyond the tolerance. */
static void add_real(const gs__daemon_t *d, const gs__lease_t *lease, unsigned part, json_t *obj)
{
    uint64_t real = 0, over = 0;
    if (gs__watchdog_lease_real(d, lease, part, &real, &over) != 0)
        return;
    json_object_set_new(obj, "memory_real", json_integer((json_int_t)real));
    json_object_set_new(obj, "over_limit", json_integer((json_int_t)over));
}

/* The name, the time limit and when it passes, for listings. */
static void add_labels(json_t *obj, const gs__lease_t *lease)
{
    if (obj == NULL)
        return;
    json_object_set_new(obj, "name", json_string(lease->rec.request.name));
    if (lease->rec.request.key[0] != '\0')
        json_object_set_new(obj, "key", json_string(lease->rec.request.key));
    if (lease->rec.request.cgroup[0] != '\0')
        json_object_set_new(obj, "cgroup", json_string(lease->rec.request.cgroup));
    int64_t expiry = gs__lease_expiry(lease);
    if (expiry == 0)
        return;
    json_object_set_new(obj, "time_limit_ms",
                        json_integer((json_int_t)lease->rec.request.time_limit_ms));
    json_object_set_new(obj, "expires_at_ms", json_integer((json_int_t)expiry));
}

/* What keeps the lease from its normal course: its row is damaged (root decides), or it cannot
 * end (processes outside its job hold its region: root's release --force). */
static void add_trouble(json_t *obj, const gs__lease_t *lease)
{
    if (obj != NULL && lease->rec.damaged[0] != '\0')
        json_object_set_new(obj, "damaged", json_string(lease->rec.damaged));
    if (obj != NULL && lease->stop_reported)
        json_object_set_new(obj, "stuck", json_true());
}

json_t *gs__view_lease(const gs__daemon_t *d, const gs__lease_t *lease)
{
    gs__lease_use_t use;
    gs__lease_use(lease, &use);
    uint64_t limit = 0;
    json_t *gpus = json_array();
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__part_t *part = &lease->alloc.part[i];
        const gs__gpu_t *gpu = &d->gpus[part->gpu];
        limit += part->memory;
        json_t *view = json_pack(
            "{s:I, s:s, s:s, s:I, s:I, s:I, s:I}", "index", (json_int_t)gpu->index, "uuid",
            gpu->uuid, "mode", gs_gpu_mode_name(gpu->mode), "slots", (json_int_t)part->slots,
            "memory_limit", (json_int_t)part->memory, "memory_used", (json_int_t)use.used[i],
            "compute", (json_int_t)gs__part_compute_percent(part));
        if (view != NULL)
            json_object_set_new(
                view, "compute_used_ms",
                json_integer((json_int_t)(gs__compute_sched_lease_used(d, lease, i) / 1000000)));
        if (view != NULL && part->instance[0] != '\0')
            json_object_set_new(view, "instance", json_string(part->instance));
        add_real(d, lease, i, view);
        json_array_append_new(gpus, view);
    }
    const gs__lease_record_t *rec = &lease->rec;
    json_t *obj = json_pack(
        "{s:I, s:s, s:I, s:s, s:I, s:s, s:i, s:o, s:o, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:s, s:I}",
        "id", (json_int_t)rec->id, "user", rec->user, "uid", (json_int_t)rec->uid, "command",
        rec->request.command, "client_pid", (json_int_t)rec->client_pid, "state", state_name(lease),
        "priority", (int)rec->request.priority, "request", request_view(&rec->request), "gpus",
        gpus, "memory_limit", (json_int_t)limit, "memory_used", (json_int_t)use.used_total,
        "compute_share", (json_int_t)rec->compute_share, "compute_max",
        (json_int_t)rec->request.compute_max, "oom_events", (json_int_t)use.oom_events, "processes",
        (json_int_t)use.processes, "region", rec->region, "granted_at_ms",
        (json_int_t)rec->granted_at_ms);
    add_labels(obj, lease);
    add_trouble(obj, lease);
    return obj;
}

static void set_text(json_t *env, const char *key, const char *value)
{
    json_object_set_new(env, key, json_string(value));
}

json_t *gs__view_env(const gs__daemon_t *d, const gs__lease_t *lease)
{
    char uuids[GS_MAX_DEVICES * (GS__UUID_MAX + 1)] = "";
    char limits[GS_MAX_DEVICES * 32] = "";
    size_t ou = 0, ol = 0;
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        const gs__part_t *part = &lease->alloc.part[i];
        char size[32];
        gs_qty_format_bytes(part->memory, size, sizeof(size));
        ou += (size_t)snprintf(uuids + ou, sizeof(uuids) - ou, "%s%s", i > 0 ? "," : "",
                               d->gpus[part->gpu].uuid);
        if (lease->alloc.n == 1)
            ol += (size_t)snprintf(limits + ol, sizeof(limits) - ol, "%s", size);
        else
            ol += (size_t)snprintf(limits + ol, sizeof(limits) - ol, "%s%u=%s", i > 0 ? "," : "", i,
                                   size);
    }
    json_t *env = json_object();
    char number[32];
    set_text(env, "CUDA_VISIBLE_DEVICES", uuids);
    set_text(env, "GPUSHARE_REGION", lease->rec.region);
    set_text(env, "GPUSHARE_MEMORY_LIMIT", limits);
    if (lease->rec.compute_share != 0 && gs__lease_shim_compute(d, lease)) {
        snprintf(number, sizeof(number), "%u", lease->rec.compute_share);
        set_text(env, "GPUSHARE_COMPUTE_SHARE", number);
    }
    if (lease->rec.request.compute_max != 0) {
        snprintf(number, sizeof(number), "%u", lease->rec.request.compute_max);
        set_text(env, "GPUSHARE_COMPUTE_MAX", number);
    }
    snprintf(number, sizeof(number), "%llu", (unsigned long long)lease->rec.id);
    set_text(env, "GPUSHARE_LEASE_ID", number);
    /* On gpusim the job runs on the daemon's node, whoever runs it. */
    if (gs__inventory_sim_state(d->inv)[0] != '\0')
        set_text(env, "GPUSIM_STATE", gs__inventory_sim_state(d->inv));
    gs__modes_env(d, lease, env);
    return env;
}

json_t *gs__view_env_paths(const gs__daemon_t *d)
{
    json_t *paths = json_object();
    const char *dir = gs__inventory_sim_dir(d->inv);
    if (dir[0] != '\0') {
        set_text(paths, "LD_LIBRARY_PATH", dir); /* gpusim's libcuda.so.1 for CUDA programs */
        set_text(paths, "PATH", dir);            /* its nvidia-smi */
    }
    return paths;
}

/* One lease's entry under one GPU of the status. */
static json_t *gpu_lease_view(const gs__daemon_t *d, const gs__lease_t *lease, unsigned part_index,
                              const gs__lease_use_t *use)
{
    const gs__part_t *part = &lease->alloc.part[part_index];
    json_t *obj = json_pack(
        "{s:I, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "id",
        (json_int_t)lease->rec.id, "user", lease->rec.user, "uid", (json_int_t)lease->rec.uid,
        "command", lease->rec.request.command, "state", state_name(lease), "slots",
        (json_int_t)part->slots, "memory_limit", (json_int_t)part->memory, "memory_used",
        (json_int_t)use->used[part_index], "compute_share",
        (json_int_t)gs__part_compute_percent(part), "compute_max",
        (json_int_t)lease->rec.request.compute_max, "compute_used_ms",
        (json_int_t)(gs__compute_sched_lease_used(d, lease, part_index) / 1000000), "processes",
        (json_int_t)use->processes, "oom_events", (json_int_t)use->oom_events);
    if (obj != NULL && part->instance[0] != '\0')
        json_object_set_new(obj, "instance", json_string(part->instance));
    add_real(d, lease, part_index, obj);
    add_labels(obj, lease);
    add_trouble(obj, lease);
    return obj;
}

/* What runs on GPU g outside the leases: the memory it takes from new leases, and the
 * unmanaged processes (the caller's own; root: all) with the others' as a count. */
static void add_outside(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view)
{
    const gs__gpu_t *gpu = &d->gpus[g];
    unsigned others = 0;
    uint64_t others_bytes = 0;
    json_t *rows = gs__watchdog_unmanaged_view(d, g, cred->uid, &others, &others_bytes);
    json_object_set_new(view, "memory_driver_reserved",
                        json_integer((json_int_t)gpu->driver_reserved));
    json_object_set_new(view, "memory_outside", json_integer((json_int_t)gpu->outside));
    json_object_set_new(view, "unmanaged", rows);
    json_object_set_new(view, "unmanaged_others",
                        json_pack("{s:I, s:I}", "processes", (json_int_t)others, "memory_used",
                                  (json_int_t)others_bytes));
}

/* Whether cred may see the details of something of uid's (root sees all). */
static int visible(const gs__cred_t *cred, uid_t uid)
{
    return cred->uid == 0 || cred->uid == uid;
}

/* One process of the per-process view. */
static json_t *proc_view(const gs__proc_row_t *proc, const char *user)
{
    json_t *obj =
        json_pack("{s:I, s:s, s:I, s:I, s:s}", "pid", (json_int_t)proc->pid, "user", user, "uid",
                  (json_int_t)(proc->uid == (uid_t)-1 ? -1 : (json_int_t)proc->uid), "lease",
                  (json_int_t)proc->lease, "name", proc->name);
    if (obj != NULL)
        json_object_set_new(obj, "memory_used",
                            proc->used == UINT64_MAX ? json_null()
                                                     : json_integer((json_int_t)proc->used));
    return obj;
}

/* Adds GPU g's processes to its view: cred's own in detail (root: all), others counted. */
static void add_processes(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred,
                          const gs__proc_rows_t *procs, json_t *gpu, json_t *others)
{
    json_t *list = json_array();
    unsigned hidden = 0;
    uint64_t hidden_memory = 0;
    for (unsigned i = 0; i < procs->n; i++) {
        const gs__proc_row_t *proc = &procs->items[i];
        if (proc->gpu != g)
            continue;
        const gs__lease_t *lease =
            proc->lease != 0 ? gs__lease_find((gs__daemon_t *)d, proc->lease) : NULL;
        uid_t owner = lease != NULL ? lease->rec.uid : proc->uid;
        if (!visible(cred, owner)) {
            hidden++;
            hidden_memory += proc->used != UINT64_MAX ? proc->used : 0;
            continue;
        }
        char user[GS__USER_MAX];
        gs__view_user_name(owner, lease, user, sizeof(user));
        json_array_append_new(list, proc_view(proc, user));
    }
    json_object_set_new(gpu, "processes", list);
    json_object_set_new(others, "processes", json_integer(hidden));
    json_object_set_new(others, "process_memory", json_integer((json_int_t)hidden_memory));
}

static json_t *gpu_view(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred,
                        const gs__proc_rows_t *procs)
{
    const gs__gpu_t *gpu = &d->gpus[g];
    json_t *leases = json_array();
    uint64_t other_memory = 0;
    unsigned others = 0;
    for (const gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        for (unsigned i = 0; i < lease->alloc.n; i++) {
            if (lease->alloc.part[i].gpu != g)
                continue;
            if (visible(cred, lease->rec.uid)) {
                gs__lease_use_t use;
                gs__lease_use(lease, &use);
                json_array_append_new(leases, gpu_lease_view(d, lease, i, &use));
            } else {
                others++;
                other_memory += lease->alloc.part[i].memory;
            }
        }
    }
    unsigned k = gpu->overprovision >= 1 ? gpu->overprovision : 1;
    uint64_t leasable = gs__gpu_leasable(gpu);
    json_t *other = json_pack("{s:I, s:I}", "leases", (json_int_t)others, "memory_limit",
                              (json_int_t)other_memory);
    json_t *view = json_pack(
        "{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
        "index", (json_int_t)gpu->index, "uuid", gpu->uuid, "name", gpu->name, "mode",
        gs_gpu_mode_name(gpu->mode), "overprovision", (json_int_t)k, "memory_total",
        (json_int_t)gpu->total, "memory_reserved", (json_int_t)gpu->reserve, "memory_leasable",
        (json_int_t)leasable, "memory_leased", (json_int_t)gpu->mem_leased, "memory_free",
        (json_int_t)gs__gpu_mem_free(gpu), "memory_used", (json_int_t)d->usage[g].used,
        "utilization", (json_int_t)d->usage[g].utilization, "compute_leased",
        (json_int_t)((gpu->compute_leased + 5) / 10), "logical_total", (json_int_t)k,
        "logical_free", (json_int_t)gs__gpu_free_slots(gpu), "n_leases", (json_int_t)gpu->n_leases,
        "leases", leases);
    if (procs != NULL && view != NULL && other != NULL)
        add_processes(d, g, cred, procs, view, other);
    if (view != NULL) {
        json_object_set_new(view, "others", other);
        add_outside(d, g, cred, view);
    } else {
        json_decref(other);
    }
    if (view != NULL)
        gs__modes_describe(d, g, cred, view);
    return view;
}

void gs__view_user_name(uid_t uid, const gs__lease_t *lease, char *buf, size_t len)
{
    if (lease != NULL) {
        snprintf(buf, len, "%s", lease->rec.user);
        return;
    }
    struct passwd pw, *found = NULL;
    char pwbuf[1024];
    if (uid != (uid_t)-1 && getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &found) == 0 &&
        found != NULL)
        snprintf(buf, len, "%s", found->pw_name);
    else if (uid != (uid_t)-1)
        snprintf(buf, len, "%u", (unsigned)uid);
    else
        snprintf(buf, len, "?");
}

/* The user a waiting request is for, and its uid. */
static uid_t waiter_user(const gs__waiter_t *w, const char **name)
{
    const gs__cred_t *cred = gs__conn_cred(w->owner);
    if (w->req.owner.set) {
        *name = w->req.owner.user;
        return (uid_t)w->req.owner.uid;
    }
    *name = cred->user;
    return cred->uid;
}

static json_t *pending_view(const gs__daemon_t *d, const gs__waiter_t *w, int64_t now)
{
    const char *user = NULL;
    uid_t uid = waiter_user(w, &user);
    char reason[384];
    gs__reason_wait(d, w, reason, sizeof(reason));
    return json_pack("{s:I, s:s, s:I, s:s, s:s, s:i, s:I, s:o, s:I, s:s}", "position",
                     (json_int_t)w->wait.position, "user", user, "uid", (json_int_t)uid, "name",
                     w->req.name, "command", w->req.command, "priority", (int)w->req.priority,
                     "effective_priority", (json_int_t)gs__queue_priority(d, w, now), "request",
                     request_view(&w->req), "waiting_ms", (json_int_t)(now - w->queued_ms),
                     "reason", reason);
}

static int by_position(const void *a, const void *b)
{
    const gs__waiter_t *x = *(const gs__waiter_t *const *)a, *y = *(const gs__waiter_t *const *)b;
    return (x->wait.position > y->wait.position) - (x->wait.position < y->wait.position);
}

json_t *gs__view_pending(const gs__daemon_t *d, const gs__cred_t *cred)
{
    json_t *list = json_array();
    const gs__waiter_t **mine = calloc(d->queue.length + 1, sizeof(*mine));
    if (list == NULL || mine == NULL) {
        free(mine);
        return list;
    }
    size_t n = 0;
    for (const gs__waiter_t *w = d->queue.head; w != NULL && n < d->queue.length; w = w->next) {
        const char *user = NULL;
        if (visible(cred, waiter_user(w, &user)))
            mine[n++] = w;
    }
    /* In queue order: positions from the scheduler's last pass. */
    qsort(mine, n, sizeof(*mine), by_position);
    int64_t now = gs__now_ms();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, pending_view(d, mine[i], now));
    free(mine);
    return list;
}

json_t *gs__view_status(const gs__daemon_t *d, const gs__cred_t *cred, int processes)
{
    gs__proc_rows_t procs = {0};
    if (processes && gs__proc_view_collect((gs__daemon_t *)d, &procs) != 0)
        gs_warn("status: out of memory listing the GPUs' processes");
    json_t *gpus = json_array();
    for (unsigned g = 0; g < d->n_gpus; g++)
        json_array_append_new(gpus, gpu_view(d, g, cred, processes ? &procs : NULL));
    gs__proc_view_free(&procs);
    json_t *node = json_pack(
        "{s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I, s:I}", "hostname", d->hostname, "daemon",
        "gpushared " GS_VERSION, "simulated", gs__inventory_simulated(d->inv), "driver",
        gs__inventory_driver(d->inv), "nvml_library", gs__inventory_library(d->inv), "placement",
        gs__policy_name(d->policy), "uptime_s", (json_int_t)((gs__now_ms() - d->started_ms) / 1000),
        "leases", (json_int_t)d->n_leases, "time_ms", (json_int_t)gs__wall_ms());
    /* Lease regions are memfds of the daemon: no directory to show (or to get wrong). */
    json_object_set_new(node, "regions", json_string("memfd"));
    json_object_set_new(node, "cuda_driver", json_string(gs__inventory_cuda_version(d->inv)));
    json_object_set_new(node, "shim", json_string(d->cfg.shim));
    char mps_control[GS__PATH_MAX];
    gs__gpus_mps_control(d, mps_control, sizeof(mps_control));
    json_object_set_new(node, "mps_control", json_string(mps_control));
    uint64_t dropped = 0;
    int full = gs__ledger_disk_full(d->ledger, &dropped);
    json_object_set_new(
        node, "ledger",
        json_pack("{s:b, s:I}", "disk_full", full, "history_dropped", (json_int_t)dropped));
    json_object_set_new(node, "gpusim_state", json_string(gs__inventory_sim_state(d->inv)));
    json_object_set_new(node, "config", json_string(d->cfg.path));
    json_t *queue = json_pack("{s:I, s:o}", "length", (json_int_t)d->queue.length, "requests",
                              gs__view_pending(d, cred));
    return json_pack("{s:o, s:o, s:o}", "node", node, "gpus", gpus, "queue", queue);
}

json_t *gs__view_lease_inside(const gs__daemon_t *d, const gs__lease_t *lease)
{
    json_t *obj = gs__view_lease(d, lease);
    static const char *const host[] = {"client_pid", "region", "cgroup"};
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        json_object_del(obj, host[i]);
    json_object_del(json_object_get(obj, "request"), "cgroup");
    return obj;
}

json_t *gs__view_config(const gs__daemon_t *d)
{
    const gs__config_t *cfg = &d->cfg;
    json_t *gpus = json_array();
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const gs__gpu_t *gpu = &d->gpus[g];
        json_array_append_new(gpus, json_pack("{s:I, s:s, s:s, s:s, s:I, s:I}", "index",
                                              (json_int_t)gpu->index, "uuid", gpu->uuid, "name",
                                              gpu->name, "mode", gs_gpu_mode_name(gpu->mode),
                                              "overprovision", (json_int_t)gpu->overprovision,
                                              "reserve", (json_int_t)gpu->reserve));
    }
    char mps_control[GS__PATH_MAX];
    gs__gpus_mps_control(d, mps_control, sizeof(mps_control));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:o}", "config", cfg->path,
                     "socket", cfg->socket, "state_dir", cfg->state_dir, "runtime_dir",
                     cfg->runtime_dir, "metrics_listen", cfg->metrics_listen, "enforce",
                     gs__enforce_name(cfg->enforce), "nvml_library", gs__inventory_library(d->inv),
                     "mps_control", mps_control, "simulated", gs__inventory_simulated(d->inv),
                     "gpusim_state", gs__inventory_sim_state(d->inv), "gpus", gpus);
}
