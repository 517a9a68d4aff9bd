/* SPDX-License-Identifier: Apache-2.0 */
/* Mode mig: dynamic MIG. A lease holds one GPU instance of the smallest profile that fits it
 * (or the one it names); instances outlive their leases and serve the next request of their
 * profile, and an idle instance is destroyed only when its slots are needed by another profile
 * (the planner: include/gpushare/mig.h; NVML: mig_nvml.c).
 *
 * gpushared never turns MIG mode on or off (it needs an idle GPU and, on some systems, a reset:
 * the administrator's step). A GPU configured mig while MIG is off serves nothing and says so in
 * its status ("problem") and in the reply to requests only it could serve; it is looked at again
 * every few seconds. Every instance on a MIG GPU is gpushared's to use: those that exist when it
 * starts (left by a gpushared that was killed, or made by hand) are found and taken as idle
 * unless the ledger says a lease holds them. After a failed NVML call the instances are listed
 * again, so what gpushared believes never drifts from the GPU. A GPU configured in another mode
 * has, at the start, the instances no process uses destroyed (mig_clean): what a mig GPU left
 * would keep the administrator from turning MIG off. */
#include "mig_nvml.h"
#include "mode.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_MS 5000 /* MIG mode is looked at this often */

/* One instance: the planner's view is layout.inst[k], the rest is here at the same k. */
typedef struct mig_inst {
    gs__mig_found_t nv;
    uint64_t lease; /* the lease holding it, 0 = idle */
    uint32_t uid;   /* its user */
} mig_inst_t;

/* A restored lease whose instance could not be looked for (NVML failed at the start): it keeps
 * its capacity and waits for NVML, then takes its instance back (or ends if it is gone). */
typedef struct mig_pending {
    uint64_t lease;
    uint32_t uid;
    char uuid[GS__UUID_MAX];
} mig_pending_t;

typedef struct mig_gpu {
    gs__mig_nvml_t nv;
    int enabled;       /* MIG mode on and the catalog read */
    int admin;         /* not enabled because MIG mode is off: the administrator's to fix */
    char problem[256]; /* why it serves nothing, "" when it does */
    int64_t next_check_ms;
    gs_mig_catalog_t cat;
    gs_mig_layout_t layout;
    mig_inst_t inst[GS_MIG_INSTANCES_MAX];
    uint64_t created, destroyed, reused;
    mig_pending_t pending[GS_MIG_INSTANCES_MAX];
    unsigned n_pending;
} mig_gpu_t;

static mig_gpu_t *state_of(const gs__gpu_t *gpu)
{
    return gpu->mode_state;
}

/* ---- admission ---- */

static int mig_check_config(const gs__gpu_t *gpu, char *err, size_t errlen)
{
    if (gpu->overprovision > 1)
        return gs_fail(err, errlen, GS_EINVAL,
                       "GPU %u: mode mig gives MIG instances: overprovision must be 1, not %u",
                       gpu->index, gpu->overprovision);
    if (gpu->reserve > 0)
        return gs_fail(err, errlen, GS_EINVAL,
                       "GPU %u: mode mig: MIG instances have memory of their own; remove reserve",
                       gpu->index);
    return 0;
}

static int served_kind(gs_lease_kind_t kind)
{
    return kind == GS_LEASE_MIG || kind == GS_LEASE_MEMORY || kind == GS_LEASE_FRACTION;
}

/* The profile a request gets on this GPU, or -1. */
static int profile_for(const gs__gpu_t *gpu, const mig_gpu_t *st, const gs_lease_request_t *req)
{
    if (req->kind == GS_LEASE_MIG)
        return gs_mig_profile_find(&st->cat, req->mig_profile);
    if (req->kind == GS_LEASE_MEMORY)
        return gs_mig_profile_for(&st->cat, req->memory, req->compute);
    uint64_t memory = (uint64_t)((unsigned __int128)gpu->total * req->fraction_milli / 1000);
    return gs_mig_profile_for(&st->cat, memory, (req->fraction_milli + 9) / 10);
}

/* Where one more instance of profile p goes for req: its own placement when it names one. */
static int plan_for(const mig_gpu_t *st, const gs_lease_request_t *req, int p, gs_mig_plan_t *plan)
{
    return req->has_mig_start ? gs_mig_plan_at(&st->cat, &st->layout, p, req->mig_start, plan)
                              : gs_mig_plan(&st->cat, &st->layout, p, plan);
}

static int mig_admit(const gs__gpu_t *gpu, const gs__ask_t *ask, gs__part_t *part)
{
    const mig_gpu_t *st = state_of(gpu);
    if (!served_kind(ask->req->kind))
        return GS_ENOTSUP;
    if (st == NULL || !st->enabled)
        return GS_EAGAIN;
    int p = profile_for(gpu, st, ask->req);
    if (p < 0)
        return ask->req->kind == GS_LEASE_MIG ? GS_ENOTSUP : GS_ENOFIT;
    const gs_mig_profile_t *prof = &st->cat.profiles[p];
    part->memory = prof->memory_bytes;
    part->compute = st->cat.compute_slices > 0 ? prof->compute * 1000 / st->cat.compute_slices : 0;
    part->plan.profile = p;
    gs_mig_layout_t empty = {0};
    if (ask->idle) /* every profile of the GPU fits an idle GPU, at each of its starts */
        return !ask->req->has_mig_start || gs_mig_fits_at(&st->cat, &empty, p, ask->req->mig_start)
                   ? 0
                   : GS_ENOTSUP;
    gs_mig_plan_t plan;
    if (plan_for(st, ask->req, p, &plan) != 0)
        return GS_ENOFIT;
    part->plan.reuse = plan.reuse;
    part->plan.start = plan.start;
    part->plan.evict = plan.evict;
    return 0;
}

/* "1g.5gb, 1g.10gb, ..." */
static void profile_names(const gs_mig_catalog_t *cat, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < cat->n_profiles && off < len; i++) {
        int n = snprintf(buf + off, len - off, "%s%s", i > 0 ? ", " : "", cat->profiles[i].name);
        off += n > 0 ? (size_t)n : 0;
    }
}

/* Why no instance of profile p can be had now: the leased instances hold the slots it needs
 * (idle ones the planner would destroy). */
static void why_full(const gs__gpu_t *gpu, const mig_gpu_t *st, int p, char *buf, size_t len)
{
    gs_mig_plan_t plan;
    if (gs_mig_plan(&st->cat, &st->layout, p, &plan) == 0) {
        buf[0] = '\0'; /* it fits: nothing of the mode's stands in the way */
        return;
    }
    int n = snprintf(buf, len,
                     "GPU %u (%s, mig) has no room for a %s instance: its slots are "
                     "held by",
                     gpu->index, gs__gpu_model(gpu), st->cat.profiles[p].name);
    size_t off = n > 0 && (size_t)n < len ? (size_t)n : 0;
    unsigned listed = 0;
    for (unsigned k = 0; k < st->layout.n && off < len; k++) {
        const gs_mig_instance_t *in = &st->layout.inst[k];
        if (!in->busy)
            continue;
        n = snprintf(buf + off, len - off, "%s the %s instance of lease %llu",
                     listed++ > 0 ? "," : "", st->cat.profiles[in->profile].name,
                     (unsigned long long)st->inst[k].lease);
        off += n > 0 ? (size_t)n : 0;
    }
    if (listed == 0)
        snprintf(buf + (off < len ? off : 0), off < len ? len - off : len,
                 " instances of no lease");
}

static void mig_why_not(const gs__gpu_t *gpu, const gs__ask_t *ask, char *buf, size_t len)
{
    const mig_gpu_t *st = state_of(gpu);
    char names[256];
    if (!served_kind(ask->req->kind)) {
        snprintf(buf, len,
                 "GPU %u is mode mig: it gives MIG instances (--gpu-memory, --gpu or "
                 "--mig-profile), not whole GPUs",
                 gpu->index);
    } else if (st == NULL || !st->enabled) {
        snprintf(buf, len, "GPU %u (mig): %s", gpu->index, st != NULL ? st->problem : "not set up");
    } else if (ask->req->kind == GS_LEASE_MIG && profile_for(gpu, st, ask->req) < 0) {
        profile_names(&st->cat, names, sizeof(names));
        snprintf(buf, len, "GPU %u (%s) has no MIG profile \"%s\" (it has %s)", gpu->index,
                 gpu->name, ask->req->mig_profile, names);
    } else if (!ask->idle && profile_for(gpu, st, ask->req) >= 0) {
        why_full(gpu, st, profile_for(gpu, st, ask->req), buf, len);
    }
}

/* ---- the GPU's instances ---- */

static void remove_at(mig_gpu_t *st, unsigned k)
{
    for (unsigned j = k + 1; j < st->layout.n; j++) {
        st->layout.inst[j - 1] = st->layout.inst[j];
        st->inst[j - 1] = st->inst[j];
    }
    st->layout.n--;
}

static int add_instance(mig_gpu_t *st, const gs__mig_found_t *f, uint64_t lease, uint32_t uid)
{
    unsigned k = st->layout.n;
    if (k == GS_MIG_INSTANCES_MAX)
        return -1;
    st->layout.inst[k] =
        (gs_mig_instance_t){.profile = f->profile, .start = f->start, .busy = lease != 0};
    st->inst[k] = (mig_inst_t){.nv = *f, .lease = lease, .uid = uid};
    st->layout.n++;
    return (int)k;
}

/* Lists the instances again from NVML, keeping which lease holds which (by GPU instance id and
 * UUID). Returns 0 or GS_EIO with one line in err. */
static int sync_instances(mig_gpu_t *st, char *err, size_t errlen)
{
    gs__mig_found_t found[GS_MIG_INSTANCES_MAX];
    int n = gs__mig_nvml_list(&st->nv, &st->cat, found, GS_MIG_INSTANCES_MAX, err, errlen);
    if (n < 0)
        return n;
    mig_gpu_t old = *st;
    st->layout.n = 0;
    for (int i = 0; i < n; i++) {
        uint64_t lease = 0;
        uint32_t uid = 0;
        for (unsigned k = 0; k < old.layout.n; k++) {
            if (old.inst[k].nv.gi == found[i].gi &&
                strcmp(old.inst[k].nv.uuid, found[i].uuid) == 0) {
                lease = old.inst[k].lease;
                uid = old.inst[k].uid;
            }
        }
        add_instance(st, &found[i], lease, uid);
    }
    return 0;
}

/* The GPU's model as the MIG catalogs name it ("A100-40GB"). */
static const char *model_of(const gs__gpu_t *gpu)
{
    return strncmp(gpu->name, "NVIDIA ", 7) == 0 ? gpu->name + 7 : gpu->name;
}

/* Turns the GPU on when MIG mode is on: reads its catalog and instances. Returns 0 or -errno
 * with the problem recorded. */
static int enable(mig_gpu_t *st, const gs__gpu_t *gpu)
{
    char err[sizeof(st->problem)];
    int on = 0;
    int result = gs__mig_nvml_enabled(&st->nv, &on, err, sizeof(err));
    int off = result == 0 && !on;
    if (off) {
        snprintf(err, sizeof(err),
                 "mode = mig but MIG mode is off (the administrator enables it on an idle GPU: "
                 "nvidia-smi -i %u -mig 1)",
                 gpu->index);
        result = GS_EAGAIN;
    }
    if (result == 0)
        result = gs__mig_nvml_catalog(&st->nv, model_of(gpu), &st->cat, err, sizeof(err));
    /* Listed again with the leases they had: an instance in use never looks idle. */
    if (result == 0)
        result = sync_instances(st, err, sizeof(err));
    st->enabled = result == 0;
    st->admin = off;
    snprintf(st->problem, sizeof(st->problem), "%s", result == 0 ? "" : err);
    return result;
}

/* MIG mode off is the administrator's to fix (nvidia-smi -mig 1 on an idle GPU); a driver call
 * that failed is tried again by the tick. */
static int mig_needs_admin(const gs__gpu_t *gpu)
{
    const mig_gpu_t *st = state_of(gpu);
    return st != NULL && !st->enabled && st->admin;
}

static int mig_start(gs__daemon_t *d, unsigned g, char *err, size_t errlen)
{
    gs__gpu_t *gpu = &d->gpus[g];
    mig_gpu_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return gs_fail(err, errlen, GS_ENOMEM, "out of memory");
    int result = gs__mig_nvml_open(d->inv, g, &st->nv, err, errlen);
    if (result != 0) {
        free(st);
        return result;
    }
    gpu->mode_state = st;
    st->next_check_ms = gs__now_ms() + CHECK_MS;
    result = enable(st, gpu);
    if (result == GS_ENOSYS) {
        free(st);
        gpu->mode_state = NULL;
        return gs_fail(err, errlen, GS_EINVAL, "GPU %u: mode mig, but the GPU (%s) has no MIG",
                       gpu->index, gpu->name);
    }
    if (result != 0)
        gs_warn("GPU %u: %s", gpu->index, st->problem);
    else
        gs_info("GPU %u: MIG on, %u profiles, %u instances found", gpu->index, st->cat.n_profiles,
                st->layout.n);
    return 0;
}

/* GPU g is of another mode now (issue 37): when MIG mode is on, the instances an earlier mig
 * mode left (idle ones stay, to serve the next lease) would keep the administrator from turning
 * MIG off. Each that no process uses is destroyed (NVML refuses one in use: it stays, logged);
 * MIG mode itself stays the administrator's. */
static void mig_clean(gs__daemon_t *d, unsigned g)
{
    const gs__gpu_t *gpu = &d->gpus[g];
    mig_gpu_t *st = calloc(1, sizeof(*st));
    char err[256];
    int on = 0, n = -1;
    gs__mig_found_t found[GS_MIG_INSTANCES_MAX];
    if (st != NULL && gs__mig_nvml_open(d->inv, g, &st->nv, err, sizeof(err)) == 0 &&
        gs__mig_nvml_enabled(&st->nv, &on, err, sizeof(err)) == 0 && on &&
        gs__mig_nvml_catalog(&st->nv, model_of(gpu), &st->cat, err, sizeof(err)) == 0)
        n = gs__mig_nvml_list(&st->nv, &st->cat, found, GS_MIG_INSTANCES_MAX, err, sizeof(err));
    unsigned gone = 0;
    for (int i = 0; i < n; i++) {
        if (gs__mig_nvml_destroy(&st->nv, found[i].gi, err, sizeof(err)) == 0)
            gone++;
        else
            gs_warn("GPU %u is mode %s: its MIG instance %s stays: %s", gpu->index,
                    gs_gpu_mode_name(gpu->mode), found[i].uuid[0] != '\0' ? found[i].uuid : "-",
                    err);
    }
    if (n > 0)
        gs_info("GPU %u is mode %s: %u of its %d MIG instances destroyed; MIG mode stays on (the "
                "administrator turns it off on an idle GPU: nvidia-smi -i %u -mig 0)",
                gpu->index, gs_gpu_mode_name(gpu->mode), gone, n, gpu->index);
    free(st);
}

static void mig_stop(gs__daemon_t *d, unsigned g)
{
    free(d->gpus[g].mode_state); /* instances stay: they serve the leases after a restart */
    d->gpus[g].mode_state = NULL;
}

static int find_uuid(const mig_gpu_t *st, const char *uuid)
{
    for (unsigned k = 0; uuid[0] != '\0' && k < st->layout.n; k++) {
        if (st->inst[k].lease == 0 && strcmp(st->inst[k].nv.uuid, uuid) == 0)
            return (int)k;
    }
    return -1;
}

/* Binds instance k to the lease (its part i). */
static void bind(mig_gpu_t *st, unsigned k, gs__lease_t *lease, unsigned i)
{
    st->layout.inst[k].busy = 1;
    st->inst[k].lease = lease->rec.id;
    st->inst[k].uid = lease->rec.uid;
    lease->alloc.part[i].plan.profile = st->layout.inst[k].profile;
}

/* NVML answers again: the leases that waited for it take their instances back; one whose
 * instance is gone now ends (its job cannot run on an instance that is not there). */
static void take_pending(gs__daemon_t *d, unsigned g)
{
    mig_gpu_t *st = state_of(&d->gpus[g]);
    while (st->n_pending > 0) {
        mig_pending_t p = st->pending[--st->n_pending];
        gs__lease_t *lease = gs__lease_find(d, p.lease);
        for (unsigned i = 0; lease != NULL && i < lease->alloc.n; i++) {
            if (lease->alloc.part[i].gpu != g)
                continue;
            int k = find_uuid(st, p.uuid);
            if (k >= 0) {
                bind(st, (unsigned)k, lease, i);
                gs_info("lease %llu: NVML answers again: its MIG instance %s on GPU %u is back",
                        (unsigned long long)p.lease, p.uuid, d->gpus[g].index);
            } else {
                gs_warn("lease %llu: NVML answers again, and its MIG instance %s on GPU %u is "
                        "gone: ending it",
                        (unsigned long long)p.lease, p.uuid[0] ? p.uuid : "(none)",
                        d->gpus[g].index);
                gs__lease_end(d, lease, "its MIG instance is gone");
            }
            break;
        }
    }
}

static void mig_tick(gs__daemon_t *d, unsigned g, int64_t now_ms)
{
    gs__gpu_t *gpu = &d->gpus[g];
    mig_gpu_t *st = state_of(gpu);
    if (st == NULL || now_ms < st->next_check_ms)
        return;
    st->next_check_ms = now_ms + CHECK_MS;
    int was = st->enabled;
    int on = 0;
    char err[256];
    if (was && gs__mig_nvml_enabled(&st->nv, &on, err, sizeof(err)) == 0 && on)
        return;
    if (enable(st, gpu) == 0) {
        gs_info("GPU %u: MIG is on now: %u profiles, %u instances found", gpu->index,
                st->cat.n_profiles, st->layout.n);
        take_pending(d, g);
        d->need_schedule = 1;
    } else if (was) {
        gs_warn("GPU %u: %s", gpu->index, st->problem);
    }
}

/* ---- leases ---- */

static int find_lease(const mig_gpu_t *st, uint64_t lease)
{
    for (unsigned k = 0; k < st->layout.n; k++) {
        if (st->inst[k].lease == lease)
            return (int)k;
    }
    return -1;
}

/* Destroys the idle instances of evict (bits of layout indexes), highest index first. */
static int evict(mig_gpu_t *st, unsigned index, uint32_t mask, char *err, size_t errlen)
{
    for (unsigned k = st->layout.n; k-- > 0;) {
        if (!((mask >> k) & 1))
            continue;
        const gs_mig_profile_t *p = &st->cat.profiles[st->layout.inst[k].profile];
        int result = gs__mig_nvml_destroy(&st->nv, st->inst[k].nv.gi, err, errlen);
        if (result != 0)
            return result;
        gs_info("GPU %u: destroyed idle MIG %s instance (GPU instance %u) to make room", index,
                p->name, st->inst[k].nv.gi);
        st->destroyed++;
        remove_at(st, k);
    }
    return 0;
}

/* Sets up instance plan for lease on gpu. Returns its layout index, or -errno with err set. */
static int take_instance(mig_gpu_t *st, const gs__gpu_t *gpu, const gs__lease_t *lease, int p,
                         char *err, size_t errlen)
{
    gs_mig_plan_t plan;
    if (plan_for(st, &lease->rec.request, p, &plan) != 0)
        return gs_fail(err, errlen, GS_ENOFIT, "no room for a MIG %s instance any more",
                       st->cat.profiles[p].name);
    if (plan.reuse >= 0) {
        int result =
            gs__mig_nvml_complete(&st->nv, &st->cat, &st->inst[plan.reuse].nv, err, errlen);
        if (result != 0)
            return result;
        st->reused++;
        return plan.reuse;
    }
    int result = evict(st, gpu->index, plan.evict, err, errlen);
    gs__mig_found_t made;
    if (result == 0)
        result = gs__mig_nvml_create(&st->nv, &st->cat, p, plan.start, &made, err, errlen);
    if (result != 0)
        return result;
    st->created++;
    gs_info("GPU %u: created MIG %s instance (GPU instance %u, slots from %u) for lease %llu",
            gpu->index, st->cat.profiles[p].name, made.gi, made.start,
            (unsigned long long)lease->rec.id);
    int k = add_instance(st, &made, 0, 0);
    if (k < 0)
        return gs_fail(err, errlen, GS_ENOSPC, "more than %d MIG instances", GS_MIG_INSTANCES_MAX);
    return k;
}

static int mig_grant(gs__daemon_t *d, gs__lease_t *lease, unsigned i, char *err, size_t errlen)
{
    gs__part_t *part = &lease->alloc.part[i];
    gs__gpu_t *gpu = &d->gpus[part->gpu];
    mig_gpu_t *st = state_of(gpu);
    int p = part->plan.profile;
    if (st == NULL || !st->enabled || p < 0 || (unsigned)p >= st->cat.n_profiles)
        return gs_fail(err, errlen, GS_EAGAIN, "GPU %u (mig): %s", gpu->index,
                       st != NULL && st->problem[0] ? st->problem : "no MIG profile chosen");
    char why[200];
    int k = take_instance(st, gpu, lease, p, why, sizeof(why));
    if (k < 0) {
        int result = gs_fail(err, errlen, GS_EGPU, "GPU %u: cannot set up a MIG %s instance: %s",
                             gpu->index, st->cat.profiles[p].name, why);
        /* What the failure left (an instance made halfway that could not be destroyed) is
         * listed again; when NVML cannot list them, the GPU is off until the tick can (it grants
         * nothing on a layout it does not know). */
        char again[200];
        if (sync_instances(st, again, sizeof(again)) != 0) {
            gs_warn("GPU %u: cannot list its MIG instances: %s", gpu->index, again);
            st->enabled = 0;
            snprintf(st->problem, sizeof(st->problem), "%s", again);
        }
        return result;
    }
    st->layout.inst[k].busy = 1;
    st->inst[k].lease = lease->rec.id;
    st->inst[k].uid = lease->rec.uid;
    snprintf(part->instance, sizeof(part->instance), "%s", st->inst[k].nv.uuid);
    return 0;
}

static void mig_end(gs__daemon_t *d, gs__lease_t *lease, unsigned i)
{
    gs__gpu_t *gpu = &d->gpus[lease->alloc.part[i].gpu];
    mig_gpu_t *st = state_of(gpu);
    for (unsigned p = 0; st != NULL && p < st->n_pending; p++) {
        if (st->pending[p].lease == lease->rec.id)
            st->pending[p--] = st->pending[--st->n_pending];
    }
    int k = st != NULL ? find_lease(st, lease->rec.id) : -1;
    if (k < 0)
        return;
    st->layout.inst[k].busy = 0;
    st->inst[k].lease = 0;
    gs_info("GPU %u: MIG %s instance (GPU instance %u) is idle: kept for the next %s lease",
            gpu->index, st->cat.profiles[st->layout.inst[k].profile].name, st->inst[k].nv.gi,
            st->cat.profiles[st->layout.inst[k].profile].name);
}

/* A restored lease while NVML cannot list the instances: it keeps its capacity and waits. */
static int wait_for_nvml(mig_gpu_t *st, const gs__gpu_t *gpu, gs__lease_t *lease, unsigned i)
{
    if (st->n_pending == GS_MIG_INSTANCES_MAX)
        return GS_ENOSPC;
    mig_pending_t *p = &st->pending[st->n_pending++];
    p->lease = lease->rec.id;
    p->uid = lease->rec.uid;
    snprintf(p->uuid, sizeof(p->uuid), "%s", lease->alloc.part[i].instance);
    gs_warn("lease %llu: GPU %u cannot list its MIG instances (%s): the lease keeps its capacity "
            "and waits for NVML to look for its instance %s",
            (unsigned long long)lease->rec.id, gpu->index, st->problem,
            p->uuid[0] ? p->uuid : "(none)");
    return 0;
}

static int mig_restore(gs__daemon_t *d, gs__lease_t *lease, unsigned i)
{
    gs__part_t *part = &lease->alloc.part[i];
    gs__gpu_t *gpu = &d->gpus[part->gpu];
    mig_gpu_t *st = state_of(gpu);
    if (st != NULL && !st->enabled)
        return wait_for_nvml(st, gpu, lease, i);
    int k = st != NULL ? find_uuid(st, part->instance) : -1;
    if (k >= 0) {
        bind(st, (unsigned)k, lease, i);
        return 0;
    }
    gs_warn("lease %llu: its MIG instance %s on GPU %u is gone: ending it",
            (unsigned long long)lease->rec.id, part->instance[0] ? part->instance : "(none)",
            gpu->index);
    return GS_ENOENT;
}

static void mig_restored(gs__daemon_t *d, unsigned g)
{
    mig_gpu_t *st = state_of(&d->gpus[g]);
    unsigned idle = 0;
    for (unsigned k = 0; st != NULL && k < st->layout.n; k++)
        idle += st->inst[k].lease == 0;
    if (idle > 0)
        gs_info("GPU %u: %u idle MIG instances kept for new leases", d->gpus[g].index, idle);
}

static void mig_env(const gs__daemon_t *d, const gs__lease_t *lease, unsigned i, json_t *env)
{
    (void)d;
    const gs__part_t *part = &lease->alloc.part[i];
    if (part->instance[0] != '\0')
        json_object_set_new(env, "CUDA_VISIBLE_DEVICES", json_string(part->instance));
}

/* ---- status and metrics ---- */

static json_t *instance_view(const mig_gpu_t *st, unsigned k, const gs__cred_t *cred)
{
    const gs_mig_profile_t *p = &st->cat.profiles[st->layout.inst[k].profile];
    const mig_inst_t *in = &st->inst[k];
    json_t *v =
        json_pack("{s:I, s:s, s:I, s:I, s:I, s:s, s:s}", "gpu_instance", (json_int_t)in->nv.gi,
                  "profile", p->name, "start", (json_int_t)in->nv.start, "slots",
                  (json_int_t)p->size, "memory", (json_int_t)p->memory_bytes, "uuid", in->nv.uuid,
                  "state", in->lease != 0 ? "leased" : "idle");
    if (v != NULL && in->lease != 0 && (cred->uid == 0 || cred->uid == in->uid))
        json_object_set_new(v, "lease", json_integer((json_int_t)in->lease));
    return v;
}

/* The GPU's profiles as NVML gives them, for clients that plan instances (gpushare-k8s
 * publishes one device per profile and placement). */
static json_t *profiles_view(const gs_mig_catalog_t *cat)
{
    json_t *list = json_array();
    for (unsigned i = 0; list != NULL && i < cat->n_profiles; i++) {
        const gs_mig_profile_t *p = &cat->profiles[i];
        json_t *starts = json_array();
        for (uint32_t s = 0; starts != NULL && s < 32; s++)
            if ((p->starts >> s) & 1)
                json_array_append_new(starts, json_integer(s));
        json_array_append_new(list,
                              json_pack("{s:s, s:I, s:I, s:I, s:I, s:o, s:I, s:b}", "name", p->name,
                                        "id", (json_int_t)p->id, "compute", (json_int_t)p->compute,
                                        "slots", (json_int_t)p->size, "max_instances",
                                        (json_int_t)p->max_instances, "starts", starts, "memory",
                                        (json_int_t)p->memory_bytes, "media", p->media));
    }
    return list;
}

static void mig_describe(const gs__daemon_t *d, unsigned g, const gs__cred_t *cred, json_t *view)
{
    const mig_gpu_t *st = state_of(&d->gpus[g]);
    if (st == NULL)
        return;
    json_t *instances = json_array();
    for (unsigned k = 0; k < st->layout.n; k++)
        json_array_append_new(instances, instance_view(st, k, cred));
    char layout[512];
    gs_mig_draw(&st->cat, &st->layout, layout, sizeof(layout));
    json_t *mig =
        json_pack("{s:b, s:o, s:s, s:I, s:I, s:I}", "enabled", st->enabled, "instances", instances,
                  "layout", st->enabled ? layout : "", "created", (json_int_t)st->created,
                  "destroyed", (json_int_t)st->destroyed, "reused", (json_int_t)st->reused);
    if (mig != NULL && st->enabled) {
        json_object_set_new(mig, "compute_slices", json_integer(st->cat.compute_slices));
        json_object_set_new(mig, "memory_slots", json_integer(st->cat.memory_slots));
        json_object_set_new(mig, "profiles", profiles_view(&st->cat));
    }
    if (mig != NULL)
        json_object_set_new(view, "mig", mig);
    if (st->problem[0] != '\0')
        json_object_set_new(view, "problem", json_string(st->problem));
    json_t *waiting = json_array();
    for (unsigned p = 0; p < st->n_pending; p++) {
        if (cred->uid == 0 || cred->uid == st->pending[p].uid)
            json_array_append_new(waiting, json_integer((json_int_t)st->pending[p].lease));
    }
    if (mig != NULL)
        json_object_set_new(mig, "waiting_for_nvml", waiting); /* restored leases: issue 25 */
    else
        json_decref(waiting);
}

static void mig_counter(const gs__daemon_t *d, FILE *f, const char *name, const char *help,
                        int which)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, which < 3 ? "counter" : "gauge");
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const mig_gpu_t *st = state_of(&d->gpus[g]);
        if (gs__mode_of(&d->gpus[g]) != &gs__mode_mig_ops || st == NULL)
            continue;
        uint64_t v = which == 0   ? st->created
                     : which == 1 ? st->destroyed
                     : which == 2 ? st->reused
                                  : (uint64_t)st->enabled;
        fprintf(f, "%s{gpu=\"%u\",UUID=\"%s\"} %llu\n", name, d->gpus[g].index, d->gpus[g].uuid,
                (unsigned long long)v);
    }
}

static void mig_metrics(const gs__daemon_t *d, FILE *f)
{
    mig_counter(d, f, "gpushare_mig_instances_created_total", "MIG instances created.", 0);
    mig_counter(d, f, "gpushare_mig_instances_destroyed_total",
                "Idle MIG instances destroyed to make room for another profile.", 1);
    mig_counter(d, f, "gpushare_mig_instances_reused_total",
                "Leases that got an idle MIG instance without creating one.", 2);
    mig_counter(d, f, "gpushare_mig_enabled", "MIG mode is on and the GPU serves MIG leases.", 3);
    fprintf(f, "# HELP gpushare_mig_instance_memory_bytes A MIG instance's memory, with its "
               "profile and state (leased or idle).\n"
               "# TYPE gpushare_mig_instance_memory_bytes gauge\n");
    for (unsigned g = 0; g < d->n_gpus; g++) {
        const mig_gpu_t *st = state_of(&d->gpus[g]);
        if (gs__mode_of(&d->gpus[g]) != &gs__mode_mig_ops || st == NULL)
            continue;
        for (unsigned k = 0; k < st->layout.n; k++) {
            const gs_mig_profile_t *p = &st->cat.profiles[st->layout.inst[k].profile];
            /* Which lease holds it only where per-lease series are shown (metrics_users). */
            char lease[48] = "";
            if (d->cfg.metrics_users == GS__METRICS_USERS_ALL)
                snprintf(lease, sizeof(lease), ",lease=\"%llu\"",
                         (unsigned long long)st->inst[k].lease);
            fprintf(f,
                    "gpushare_mig_instance_memory_bytes{gpu=\"%u\",UUID=\"%s\",instance=\"%s\","
                    "gpu_instance=\"%u\",profile=\"%s\",state=\"%s\"%s} %llu\n",
                    d->gpus[g].index, d->gpus[g].uuid, st->inst[k].nv.uuid, st->inst[k].nv.gi,
                    p->name, st->inst[k].lease ? "leased" : "idle", lease,
                    (unsigned long long)p->memory_bytes);
        }
    }
}

const gs__mode_ops_t gs__mode_mig_ops = {
    .name = "mig",
    .flags = GS__MODE_ONE_GPU,
    .gate = "none",
    .check_config = mig_check_config,
    .admit = mig_admit,
    .why_not = mig_why_not,
    .needs_admin = mig_needs_admin,
    .start = mig_start,
    .clean = mig_clean,
    .restore = mig_restore,
    .restored = mig_restored,
    .grant = mig_grant,
    .end = mig_end,
    .env = mig_env,
    .describe = mig_describe,
    .tick = mig_tick,
    .metrics = mig_metrics,
    .stop = mig_stop,
};
