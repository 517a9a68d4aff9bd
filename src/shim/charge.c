/* SPDX-License-Identifier: Apache-2.0 */
/* Reserve-then-commit: every hooked allocation reserves its bytes in the lease region before the
 * driver is asked, and commits or rolls back after; every free returns exactly the charge. */
#include "shim.h"

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/quantity.h"

#include <stdio.h>
#include <time.h>

/* How often an allocating process checks the lease for members that died (SIGKILL leaves their
 * charge behind); well under the one second in which a dead process's memory must return. */
#define REAP_INTERVAL_MS 250

/* The number of CUDA devices this process sees, once the driver can tell (0 before). A lease
 * usually sees exactly one GPU, and then every allocation is on ordinal 0 without asking. */
static int visible_devices(void)
{
    static int count;
    int n = __atomic_load_n(&count, __ATOMIC_RELAXED);
    if (n == 0) {
        const gs__real_t *real = gs__real();
        if (real->cuDeviceGetCount == NULL || real->cuDeviceGetCount(&n) != CUDA_SUCCESS)
            return 0;
        __atomic_store_n(&count, n, __ATOMIC_RELAXED);
    }
    return n;
}

int gs__current_device(void)
{
    if (visible_devices() == 1)
        return 0;
    const gs__real_t *real = gs__real();
    CUdevice dev = -1;
    if (real->cuCtxGetDevice == NULL || real->cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        return -1;
    return dev;
}

/* An application that retries in a loop must not flood its log: one line per refusal, but at
 * most one a second, with the count of those not printed. */
static int64_t last_refusal_ns;
static uint64_t unlogged_refusals;

static int refusal_log_due(uint64_t *skipped)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    int64_t last = __atomic_load_n(&last_refusal_ns, __ATOMIC_RELAXED);
    if ((last != 0 && now - last < 1000000000) ||
        !__atomic_compare_exchange_n(&last_refusal_ns, &last, now, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&unlogged_refusals, 1, __ATOMIC_RELAXED);
        return 0;
    }
    *skipped = __atomic_exchange_n(&unlogged_refusals, 0, __ATOMIC_RELAXED);
    return 1;
}

static void log_refusal(const char *what, unsigned dev, uint64_t bytes, int result)
{
    uint64_t skipped = 0;
    if (!gs_log_enabled(GS_LOG_ERROR) || !refusal_log_due(&skipped))
        return;
    char want[32], limit[32], used[32];
    gs_qty_format_human(bytes, want, sizeof(want));
    gs_qty_format_human(gs__limit(dev), limit, sizeof(limit));
    gs_qty_format_human(gs_region_used(gs__region(), dev), used, sizeof(used));
    char more[64] = "";
    if (skipped > 0)
        snprintf(more, sizeof(more), "; %llu more refused in the last second",
                 (unsigned long long)skipped);
    if (result == GS_ELIMIT && gs__limit(dev) == GS_REGION_LIMIT_SUSPENDED)
        gs_error("%s of %s on device %u refused: this lease is suspended, its memory is back in "
                 "the pool until it resumes (gpushare resume)%s",
                 what, want, dev, more);
    else if (result == GS_ELIMIT)
        gs_error("%s of %s on device %u refused: out of memory in this lease (limit %s, %s in "
                 "use%s)",
                 what, want, dev, limit, used, more);
    else
        gs_error("%s of %s on device %u refused: lease accounting failed: %s", what, want, dev,
                 gs_strerror(result));
}

CUresult gs__charge_begin(int dev, uint64_t bytes, const char *what, gs__charge_t *charge)
{
    charge->active = 0;
    if (!gs__accounting())
        return CUDA_SUCCESS;
    if (dev < 0)
        dev = gs__current_device();
    if (dev < 0 || dev >= GS_MAX_DEVICES)
        return CUDA_SUCCESS; /* no context or device beyond the table: the driver answers */
    int slot = gs__slot();
    /* Without a daemon, the lease's own processes take back what dead members held. */
    gs_region_reap_if_due(gs__region(), REAP_INTERVAL_MS);
    int result = slot < 0 ? GS_EINVAL : gs_region_reserve(gs__region(), slot, (unsigned)dev, bytes);
    if (result != 0) {
        log_refusal(what, (unsigned)dev, bytes, result);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    charge->active = 1;
    charge->dev = (unsigned)dev;
    charge->bytes = bytes;
    return CUDA_SUCCESS;
}

CUresult gs__charge_resize(gs__charge_t *charge, uint64_t bytes, const char *what)
{
    if (!charge->active || bytes == charge->bytes)
        return CUDA_SUCCESS;
    if (bytes < charge->bytes) {
        gs_region_release(gs__region(), gs__slot(), charge->dev, charge->bytes - bytes, 0);
        charge->bytes = bytes;
        return CUDA_SUCCESS;
    }
    uint64_t extra = bytes - charge->bytes;
    int result = gs_region_reserve(gs__region(), gs__slot(), charge->dev, extra);
    if (result != 0) {
        log_refusal(what, charge->dev, bytes, result);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    charge->bytes = bytes;
    return CUDA_SUCCESS;
}

void gs__charge_abort(gs__charge_t *charge)
{
    if (charge->active)
        gs_region_release(gs__region(), gs__slot(), charge->dev, charge->bytes, 0);
    charge->active = 0;
}

void gs__charge_commit(gs__charge_t *charge, gs__kind_t kind, uint64_t key)
{
    if (!charge->active)
        return;
    gs__alloc_t alloc = {
        .kind = kind, .key = key, .dev = charge->dev, .bytes = charge->bytes, .refs = 1};
    gs__alloc_t replaced;
    int result = gs__track_insert(&alloc, &replaced);
    if (result == 1)
        gs__uncharge(&replaced); /* the driver reused the key: that allocation is gone */
    else if (result != 0)
        gs_warn("out of host memory tracking an allocation; its charge stays until exit");
    charge->active = 0;
}

void gs__uncharge(const gs__alloc_t *alloc)
{
    if (alloc->bytes != 0)
        gs_region_release(gs__region(), gs__slot(), alloc->dev, alloc->bytes, 1);
}

CUresult gs__free_tracked(gs__kind_t kind, uint64_t key, CUresult (*free_fn)(void *arg), void *arg)
{
    gs__alloc_t alloc;
    int tracked = gs__accounting() && gs__track_remove(kind, key, &alloc) == 0;
    CUresult result = free_fn(arg);
    if (!tracked)
        return result;
    if (result == CUDA_SUCCESS)
        gs__uncharge(&alloc);
    else
        gs__track_insert(&alloc, NULL); /* still allocated: keep its charge */
    return result;
}
