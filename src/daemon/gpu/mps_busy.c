/* SPDX-License-Identifier: Apache-2.0 */
/* Device time of leases on an mps GPU, from NVML's per-process utilization (mps_busy.h). */
#include "mps_busy.h"
#include "inventory.h"
#include "watchdog.h"

#include <string.h>

#define SAMPLE_MS      1000
#define MAX_SAMPLES    64
#define NS_PER_PERCENT (UINT64_C(10000000)) /* 1 % of the second a sample covers */

void gs__mps_busy_init(gs__mps_busy_t *b, const gs__daemon_t *d, unsigned g)
{
    memset(b, 0, sizeof(*b));
    gs_nvml_fn_t fns[] = {
        {"nvmlDeviceGetProcessUtilization", (void **)&b->get, 0},
    };
    char err[256];
    if (gs__inventory_resolve(d->inv, fns, 1, "", err, sizeof(err)) != 0)
        b->get = NULL;
    b->dev = gs__inventory_handle(d->inv, g);
}

/* The slot of lease in b (a new one when it has none; NULL when full). */
static uint64_t *slot_of(gs__mps_busy_t *b, uint64_t lease)
{
    for (unsigned i = 0; i < b->n; i++) {
        if (b->leases[i].lease == lease)
            return &b->leases[i].ns;
    }
    if (b->n == GS__MPS_BUSY_LEASES)
        return NULL;
    b->leases[b->n].lease = lease;
    b->leases[b->n].ns = 0;
    return &b->leases[b->n++].ns;
}

/* Leases that ended keep no slot. */
static void prune(gs__mps_busy_t *b, gs__daemon_t *d)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < b->n; i++) {
        if (gs__lease_find(d, b->leases[i].lease) != NULL)
            b->leases[kept++] = b->leases[i];
    }
    b->n = kept;
}

/* One sample: the process's busy part of the second, at its lease's share of the SMs. */
static void add_sample(gs__mps_busy_t *b, gs__daemon_t *d, const nvmlProcessUtilizationSample_t *s)
{
    uint64_t id = gs__watchdog_lease_of(d, (pid_t)s->pid);
    const gs__lease_t *lease = id != 0 ? gs__lease_find(d, id) : NULL;
    uint64_t *ns = lease != NULL ? slot_of(b, id) : NULL;
    if (ns == NULL)
        return;
    uint64_t share = lease->rec.compute_share > 0 ? lease->rec.compute_share : 100;
    uint64_t util = s->smUtil <= 100 ? s->smUtil : 100;
    *ns += util * NS_PER_PERCENT * share / 100;
}

void gs__mps_busy_tick(gs__mps_busy_t *b, gs__daemon_t *d, int64_t now_ms)
{
    if (b->get == NULL || b->dev == NULL || now_ms < b->next_ms)
        return;
    b->next_ms = now_ms + SAMPLE_MS;
    prune(b, d);
    nvmlProcessUtilizationSample_t samples[MAX_SAMPLES];
    unsigned count = MAX_SAMPLES;
    if (b->get(b->dev, samples, &count, b->last_seen) != NVML_SUCCESS)
        return; /* none since the last one (NOT_FOUND), or the driver cannot say */
    for (unsigned i = 0; i < count && i < MAX_SAMPLES; i++) {
        if (samples[i].timeStamp <= b->last_seen)
            continue;
        add_sample(b, d, &samples[i]);
    }
    for (unsigned i = 0; i < count && i < MAX_SAMPLES; i++) {
        if (samples[i].timeStamp > b->last_seen)
            b->last_seen = samples[i].timeStamp;
    }
}

uint64_t gs__mps_busy_ns(const gs__mps_busy_t *b, uint64_t lease)
{
    for (unsigned i = 0; i < b->n; i++) {
        if (b->leases[i].lease == lease)
            return b->leases[i].ns;
    }
    return 0;
}
