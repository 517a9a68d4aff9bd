/* JSON views of leases, lease environments and the node's status. */
#include "views.h"
#include "scheds.h"

#include "regions.h"

#include "gpushare/log.h"

#include <stdio.h>
#include <string.h>

void gs__view_describe(const gs__daemon_t *d, const gs__lease_t *lease, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < lease->alloc.n && off < len; i++) {
        const gs__part_t *part = &lease->alloc.part[i];
        char mem[32];
        gs_qty_format_human(part->memory, mem, sizeof(mem));
        int n = snprintf(buf + off, len - off, "%s%s on GPU %u", i > 0 ? ", " : "", mem,
                         d->gpus[part->gpu].index);
        off += n > 0 ? (size_t)n : 0;
    }
}

static const char *state_name(const gs__lease_t *lease)
{
    return lease->rec.state == GS__LEASE_ENDING ? "ending" : "active";
}

/* The request's sizing as given, without the protocol's "op" and "wait", the command (shown
 * apart) and the owner (the lease's user and uid say it). */
static json_t *request_view(const gs_lease_request_t *req)
{
    json_t *obj = gs_proto_acquire_json(req);
    static const char *const hidden[] = {"op", "wait", "command", "uid", "gid", "user"};
    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
        json_object_del(obj, hidden[i]);
    return obj;
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
        json_array_append_new(
            gpus,
            json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "index", (json_int_t)gpu->index,
                      "uuid", gpu->uuid, "slots", (json_int_t)part->slots, "memory_limit",
                      (json_int_t)part->memory, "memory_used", (json_int_t)use.used[i], "compute",
                      (json_int_t)gs__part_compute_percent(part), "compute_used_ms",
                      (json_int_t)(gs__scheds_lease_used(d, lease, i) / 1000000)));
    }
    const gs__lease_record_t *rec = &lease->rec;
    return json_pack("{s:I, s:s, s:I, s:s, s:I, s:s, s:i, s:o, s:o, s:I, s:I, s:I, s:I, s:I, "
                     "s:I, s:s, s:I}",
                     "id", (json_int_t)rec->id, "user", rec->user, "uid", (json_int_t)rec->uid,
                     "command", rec->request.command, "client_pid", (json_int_t)rec->client_pid,
                     "state", state_name(lease), "priority", (int)rec->request.priority, "request",
                     request_view(&rec->request), "gpus", gpus, "memory_limit", (json_int_t)limit,
                     "memory_used", (json_int_t)use.used_total, "compute_share",
                     (json_int_t)rec->compute_share, "compute_max",
                     (json_int_t)rec->request.compute_max, "oom_events", (json_int_t)use.oom_events,
                     "processes", (json_int_t)use.processes, "region", rec->region, "granted_at_ms",
                     (json_int_t)rec->granted_at_ms);
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
    if (lease->rec.compute_share != 0) {
        snprintf(number, sizeof(number), "%u", lease->rec.compute_share);
        set_text(env, "GPUSHARE_COMPUTE_SHARE", number);
    }
    if (lease->rec.request.compute_max != 0) {
        snprintf(number, sizeof(number), "%u", lease->rec.request.compute_max);
        set_text(env, "GPUSHARE_COMPUTE_MAX", number);
    }
    char sched_dir[GS__PATH_MAX + 16];
    gs__scheds_dir(d, sched_dir, sizeof(sched_dir));
    set_text(env, "GPUSHARE_SCHED_DIR", sched_dir);
    snprintf(number, sizeof(number), "%llu", (unsigned long long)lease->rec.id);
    set_text(env, "GPUSHARE_LEASE_ID", number);
    return env;
}

/* One lease's entry under one GPU of the status. */
static json_t *gpu_lease_view(const gs__daemon_t *d, const gs__lease_t *lease, unsigned part_index,
                              const gs__lease_use_t *use)
{
    const gs__part_t *part = &lease->alloc.part[part_index];
    return json_pack("{s:I, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "id",
                     (json_int_t)lease->rec.id, "user", lease->rec.user, "uid",
                     (json_int_t)lease->rec.uid, "command", lease->rec.request.command, "state",
                     state_name(lease), "slots", (json_int_t)part->slots, "memory_limit",
                     (json_int_t)part->memory, "memory_used", (json_int_t)use->used[part_index],
                     "compute_share", (json_int_t)gs__part_compute_percent(part), "compute_max",
                     (json_int_t)lease->rec.request.compute_max, "compute_used_ms",
                     (json_int_t)(gs__scheds_lease_used(d, lease, part_index) / 1000000),
                     "processes", (json_int_t)use->processes, "oom_events",
                     (json_int_t)use->oom_events);
}

static json_t *gpu_view(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred)
{
    const gs__gpu_t *gpu = &d->gpus[g];
    json_t *leases = json_array();
    uint64_t other_memory = 0;
    unsigned others = 0;
    for (const gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        for (unsigned i = 0; i < lease->alloc.n; i++) {
            if (lease->alloc.part[i].gpu != g)
                continue;
            if (cred->uid == 0 || cred->uid == lease->rec.uid) {
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
    return json_pack(
        "{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:{s:I, "
        "s:I}}",
        "index", (json_int_t)gpu->index, "uuid", gpu->uuid, "name", gpu->name, "mode",
        gs__mode_name(gpu->mode), "overprovision", (json_int_t)k, "memory_total",
        (json_int_t)gpu->total, "memory_reserved", (json_int_t)gpu->reserve, "memory_leasable",
        (json_int_t)gs__gpu_leasable(gpu), "memory_leased", (json_int_t)gpu->mem_leased,
        "memory_used", (json_int_t)d->usage[g].used, "utilization",
        (json_int_t)d->usage[g].utilization, "compute_leased",
        (json_int_t)((gpu->compute_leased + 5) / 10), "logical_total", (json_int_t)k,
        "logical_free", (json_int_t)gs__gpu_free_slots(gpu), "leases", leases, "others", "leases",
        (json_int_t)others, "memory_limit", (json_int_t)other_memory);
}

static json_t *queue_view(const gs__daemon_t *d, const gs__cred_t *cred, const void *conn)
{
    json_t *mine = json_array();
    unsigned position = 1;
    for (const gs__waiter_t *w = d->queue.head; w != NULL; w = w->next, position++) {
        if (w->owner != conn && cred->uid != 0)
            continue;
        json_array_append_new(mine, json_pack("{s:I, s:s, s:o}", "position", (json_int_t)position,
                                              "command", w->req.command, "request",
                                              request_view(&w->req)));
    }
    return json_pack("{s:I, s:o}", "length", (json_int_t)d->queue.length, "requests", mine);
}

json_t *gs__view_status(const gs__daemon_t *d, const gs__cred_t *cred, const void *conn)
{
    json_t *gpus = json_array();
    for (unsigned g = 0; g < d->n_gpus; g++)
        json_array_append_new(gpus, gpu_view(d, g, cred));
    json_t *node = json_pack(
        "{s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I}", "hostname", d->hostname, "daemon",
        "gpushared " GS_VERSION, "simulated", gs__inventory_simulated(d->inv), "driver",
        gs__inventory_driver(d->inv), "nvml_library", gs__inventory_library(d->inv), "placement",
        gs__policy_name(d->policy), "uptime_s", (json_int_t)((gs__now_ms() - d->started_ms) / 1000),
        "leases", (json_int_t)d->n_leases);
    char regions[GS__PATH_MAX];
    gs__regions_dir(&d->cfg, regions, sizeof(regions));
    json_object_set_new(node, "region_dir", json_string(regions));
    json_object_set_new(node, "shim", json_string(d->cfg.shim));
    return json_pack("{s:o, s:o, s:o}", "node", node, "gpus", gpus, "queue",
                     queue_view(d, cred, conn));
}
