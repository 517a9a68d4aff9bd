/* SPDX-License-Identifier: Apache-2.0 */
/* The lease model's fit rules: slices, demands and per-GPU accounting. */
#include "model.h"

#include <string.h>

static uint64_t minus(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

uint64_t gs__gpu_leasable(const gs__gpu_t *gpu)
{
    return minus(minus(gpu->total, gpu->driver_reserved), gpu->reserve);
}

uint64_t gs__gpu_taken(const gs__gpu_t *gpu)
{
    return gpu->mem_leased + gpu->outside;
}

uint64_t gs__gpu_mem_free(const gs__gpu_t *gpu)
{
    return minus(gs__gpu_leasable(gpu), gs__gpu_taken(gpu));
}

static unsigned overprovision(const gs__gpu_t *gpu)
{
    return gpu->overprovision >= 1 ? gpu->overprovision : 1;
}

uint64_t gs__slot_memory(const gs__gpu_t *gpu)
{
    return gs__gpu_leasable(gpu) / overprovision(gpu);
}

uint32_t gs__slot_compute(const gs__gpu_t *gpu)
{
    return 1000u / overprovision(gpu);
}

void gs__part_for(const gs__gpu_t *gpu, const gs_lease_request_t *req, unsigned slots,
                  gs__part_t *part)
{
    part->slots = 0;
    switch (req->kind) {
    case GS_LEASE_GPUS:
        part->slots = slots;
        /* K slots are exactly the whole GPU, without the rounding of K slices. */
        if (slots >= overprovision(gpu)) {
            part->memory = gs__gpu_leasable(gpu);
            part->compute = 1000;
        } else {
            part->memory = gs__slot_memory(gpu) * slots;
            part->compute = gs__slot_compute(gpu) * slots;
        }
        break;
    case GS_LEASE_FRACTION:
        part->memory =
            (uint64_t)((unsigned __int128)gs__gpu_leasable(gpu) * req->fraction_milli / 1000);
        part->compute = req->fraction_milli;
        break;
    case GS_LEASE_MEMORY:
        part->memory = req->memory;
        part->compute = req->compute * 10;
        break;
    case GS_LEASE_MIG:
    case GS_LEASE_NONE:
        part->memory = 0;
        part->compute = 0;
        break;
    }
}

int gs__gpu_fits(const gs__gpu_t *gpu, gs_lease_kind_t kind, const gs__part_t *part)
{
    if (kind != GS_LEASE_GPUS && kind != GS_LEASE_FRACTION && kind != GS_LEASE_MEMORY)
        return 0;
    if (kind == GS_LEASE_GPUS && (part->slots == 0 || part->slots > overprovision(gpu)))
        return 0;
    if (part->memory == 0 || part->memory > gs__gpu_mem_free(gpu))
        return 0;
    if (gpu->compute_leased > 1000 || part->compute > 1000 - gpu->compute_leased)
        return 0;
    return gpu->slots_leased + part->slots <= overprovision(gpu);
}

void gs__gpu_take(gs__gpu_t *gpu, const gs__part_t *part)
{
    gpu->mem_leased += part->memory;
    gpu->compute_leased += part->compute;
    gpu->slots_leased += part->slots;
    gpu->n_leases++;
}

void gs__gpu_give(gs__gpu_t *gpu, const gs__part_t *part)
{
    gpu->mem_leased = minus(gpu->mem_leased, part->memory);
    gpu->compute_leased = (uint32_t)minus(gpu->compute_leased, part->compute);
    gpu->slots_leased = (unsigned)minus(gpu->slots_leased, part->slots);
    gpu->n_leases = (unsigned)minus(gpu->n_leases, 1);
}

int gs__gpu_fits_idle(const gs__gpu_t *gpu, gs_lease_kind_t kind, const gs__part_t *part)
{
    gs__gpu_t idle = *gpu;
    idle.mem_leased = 0;
    idle.compute_leased = 0;
    idle.slots_leased = 0;
    idle.n_leases = 0;
    idle.outside = 0; /* processes of no lease go when they will */
    return gs__gpu_fits(&idle, kind, part);
}

unsigned gs__pool_free_slots(const gs__gpu_t *gpu)
{
    unsigned k = overprovision(gpu);
    /* The largest s such that s slots fit; slots are uniform so fitting is monotonic. */
    unsigned s = k > gpu->slots_leased ? k - gpu->slots_leased : 0;
    gs_lease_request_t req = {.kind = GS_LEASE_GPUS};
    for (; s > 0; s--) {
        gs__part_t part;
        gs__part_for(gpu, &req, s, &part);
        if (gs__gpu_fits(gpu, GS_LEASE_GPUS, &part))
            return s;
    }
    return 0;
}

uint32_t gs__part_compute_percent(const gs__part_t *part)
{
    if (part->compute == 0 || part->compute >= 1000)
        return 0;
    uint32_t percent = (part->compute + 5) / 10;
    return percent > 0 ? percent : 1;
}

const char *gs__gpu_model(const gs__gpu_t *gpu)
{
    const char *name = gpu->name;
    if (strncmp(name, "NVIDIA ", 7) == 0)
        return name + 7;
    if (strncmp(name, "Tesla ", 6) == 0)
        return name + 6;
    return name;
}
