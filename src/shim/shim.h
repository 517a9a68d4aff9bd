/* SPDX-License-Identifier: Apache-2.0 */
/* libgpushare.so internals: the real-function table, the shim's state, allocation tracking and
 * the reserve-then-commit helpers every hook uses. Compiled with -D__CUDA_API_VERSION_INTERNAL so
 * cuda.h declares every versioned prototype (cuMemAlloc with 32-bit sizes, _v2, _ptsz, ...), and
 * the compiler checks each hook against NVIDIA's signature. */
#ifndef GS_SHIM_H
#define GS_SHIM_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Before nvml_abi.h: nvml.c exports the NVML hooks it declares (GS_NVML_API). */
#define GS_EXPORT __attribute__((visibility("default")))

#include "gpushare/nvml_abi.h"
#include "gpushare/region.h"

/* Pointers to the driver's own functions, one member per GS_HOOK / GS_DRIVER entry. */
typedef struct gs__real {
#define GS_HOOK(fn)   __typeof__(&fn) fn;
#define GS_DRIVER(fn) __typeof__(&fn) fn;
#include "hooks.def"
#undef GS_HOOK
#undef GS_DRIVER
} gs__real_t;

/* Returns the driver's functions (resolved by gs__ensure_init; members may be NULL when the
 * driver lacks a symbol). Never NULL. Thread-safe after initialisation. */
const gs__real_t *gs__real(void);

/* Initialises the shim once (reads GPUSHARE_* variables, loads the driver, opens and joins the
 * lease region). Returns CUDA_SUCCESS, or the error every hook then returns: a bad configuration
 * fails closed with CUDA_ERROR_INVALID_VALUE and one log line. Thread-safe; cheap after the
 * first call. */
CUresult gs__ensure_init(void);

/* In a hook: initialises the shim (returning its failure), and returns CUDA_ERROR_NOT_SUPPORTED
 * when the driver has no fn. */
#define REAL_OR_FAIL(fn)                                                                           \
    do {                                                                                           \
        CUresult init_result = gs__ensure_init();                                                  \
        if (init_result != CUDA_SUCCESS)                                                           \
            return init_result;                                                                    \
        if (gs__real()->fn == NULL)                                                                \
            return CUDA_ERROR_NOT_SUPPORTED;                                                       \
    } while (0)

/* Nonzero when a lease is in force (a limit or a region): allocations are charged. */
int gs__accounting(void);

/* The lease region and this process's record in it; NULL / -1 without a lease. */
gs_region_t *gs__region(void);
int gs__slot(void);

/* Resolves the real driver entry points from handle (the loaded libcuda.so.1). */
void gs__resolve_driver(void *handle);

/* Returns the hook that replaces real (a function of the driver that the shim interposes), or
 * NULL when real is not interposed. Thread-safe. */
void *gs__hook_for_real(void *real);

/* Returns the shim's hook named name (a versioned symbol from hooks.def), or NULL. */
void *gs__hook_by_name(const char *name);

/* Returns the shim's NVML hook named name, or NULL. */
void *gs__nvml_hook_by_name(const char *name);

/* NVML's own functions that the shim calls for its measurements (never the shim's hooks). */
typedef struct gs__nvml {
    __typeof__(&nvmlInit_v2) init;
    __typeof__(&nvmlDeviceGetHandleByUUID) by_uuid;
    __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) processes;
    __typeof__(&nvmlDeviceGetMemoryInfo) memory;
} gs__nvml_t;

/* Loads NVML (libnvidia-ml.so.1) and initialises it once per process (again in a forked child).
 * Returns the functions, or NULL (with one log line) when NVML is missing or fails to start.
 * Thread-safe. */
const gs__nvml_t *gs__nvml(void);

/* The real dlsym/dlopen family, found in libc without going through the shim's own dlsym. */
void *gs__real_dlsym(void *handle, const char *name);

/* ---- allocation tracking: what each live allocation was charged ---- */

typedef enum gs__kind {
    GS_KIND_LINEAR = 1, /* cuMemAlloc, pitch, managed, async, pools, graph memory */
    GS_KIND_ARRAY,      /* CUarray */
    GS_KIND_MIPMAP,     /* CUmipmappedArray */
    GS_KIND_VMM,        /* CUmemGenericAllocationHandle */
    GS_KIND_MAP,        /* a VMM mapping at a virtual address (no charge of its own) */
    GS_KIND_POOL,       /* a memory pool and its device (no charge) */
    GS_KIND_GRAPH,      /* an instantiated graph's memory plan (no charge) */
    GS_KIND_CONTEXT,    /* a context's own device memory, measured at its creation */
} gs__kind_t;

typedef struct gs__alloc {
    gs__kind_t kind;
    uint64_t key;    /* pointer or handle value */
    unsigned dev;    /* CUDA ordinal charged */
    uint64_t bytes;  /* exactly what was charged */
    uint32_t maps;   /* VMM: live mappings of the handle */
    uint32_t refs;   /* VMM: references (1 at creation, +1 per retain, -1 per release) */
    uint64_t parent; /* MAP: the mapped handle; GRAPH: the plan (owned by the entry) */
    uint64_t span;   /* MAP: bytes mapped at key */
    uint64_t serial; /* set by gs__track_insert: tells an entry from a later one of that key */
} gs__alloc_t;

/* Records a live allocation. When an entry of the same key was still recorded (the driver
 * reused the pointer or handle, so that allocation is gone), it is replaced and copied to
 * *replaced (may be NULL) and 1 is returned; otherwise 0, or GS_ENOMEM. Thread-safe. */
int gs__track_insert(const gs__alloc_t *alloc, gs__alloc_t *replaced);

/* Removes the allocation (kind, key) into *out. Returns 0 or GS_ENOENT. Thread-safe. */
int gs__track_remove(gs__kind_t kind, uint64_t key, gs__alloc_t *out);

/* Applies fn to the entry (kind, key) under its lock; fn returns nonzero to remove the entry,
 * which is then copied to *removed. Returns 1 when removed, 0 when kept, GS_ENOENT when absent. */
int gs__track_update(gs__kind_t kind, uint64_t key, int (*fn)(gs__alloc_t *entry, void *arg),
                     void *arg, gs__alloc_t *removed);

/* In a forked child: empties the table (the parent's allocations are not the child's) and frees
 * its locks (their holders do not exist in the child). */
void gs__track_after_fork(void);

/* After the driver destroyed a context (and with it the memory allocated in it), drops every
 * allocation the driver no longer knows and returns its charge; returns the count. */
int gs__track_drop_gone(void);

/* ---- reserve-then-commit ---- */

typedef struct gs__charge {
    int active; /* nonzero when bytes were reserved */
    unsigned dev;
    uint64_t bytes;
    CUcontext ctx;
} gs__charge_t;

/* Reserves bytes on device dev (-1: the current context's device) for the lease before a driver
 * allocation named what. Sets *charge (inactive when no lease is in force or the device cannot be
 * told, so the driver decides). Returns CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY with one log
 * line when the lease's limit would be exceeded. */
CUresult gs__charge_begin(int dev, uint64_t bytes, const char *what, gs__charge_t *charge);

/* Grows (or shrinks) an active reservation to bytes once the driver told the exact size.
 * Returns CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY (the reservation is then unchanged). */
CUresult gs__charge_resize(gs__charge_t *charge, uint64_t bytes, const char *what);

/* Gives an unused reservation back (the driver call failed). */
void gs__charge_abort(gs__charge_t *charge);

/* Commits the reservation as allocation (kind, key). If it cannot be tracked the charge stays
 * (never under-counted) and a warning is logged. */
void gs__charge_commit(gs__charge_t *charge, gs__kind_t kind, uint64_t key);

/* Returns a freed allocation's charge to the region. */
void gs__uncharge(const gs__alloc_t *alloc);

/* Frees through the driver with the charge returned exactly: looks (kind, key) up, calls
 * free_fn(arg), and on success returns the charge; unknown keys pass straight through. */
CUresult gs__free_tracked(gs__kind_t kind, uint64_t key, CUresult (*free_fn)(void *arg), void *arg);

/* ---- context footprints (footprint.c) ---- */

/* A context's kind for the footprints this process has measured (footprint.c): contexts of
 * one kind on one device take the same memory. GS_FOOTPRINT_PRIMARY | flags for a primary
 * context, flags for cuCtxCreate without parameters; GS_FOOTPRINT_OWN for anything else
 * (execution affinity, creation parameters), which is measured every time. */
#define GS_FOOTPRINT_PRIMARY (UINT64_C(1) << 32)
#define GS_FOOTPRINT_OWN     (UINT64_C(1) << 33)

/* What gs__footprint_begin sampled before a context's creation. */
typedef struct gs__footprint_probe {
    int dev; /* CUDA ordinal; -1 when nothing is measured (no lease) */
    nvmlDevice_t nvml;
    uint64_t kind;   /* the context's kind (GS_FOOTPRINT_*) */
    int known;       /* bytes is known: 1 this process measured it, 2 the lease's region has it */
    int first;       /* the process's first context on dev, alone: own is 0, not sampled */
    int own_listed;  /* NVML listed this process on the device */
    uint64_t own;    /* its NVML used memory there (0 when not listed) */
    uint64_t device; /* the device's NVML used memory */
    uint64_t bytes;  /* known: the footprint to charge */
    uint64_t epoch;  /* measurements begun on dev in this process, this one included */
    uint64_t key;    /* the kind among the lease's processes (0 = none) */
} gs__footprint_probe_t;

/* Before a context of kind is created on dev: when this process has measured a context of that
 * kind on dev, takes its figure (no NVML); else samples NVML. Without a lease it samples
 * nothing. Returns CUDA_SUCCESS, or CUDA_ERROR_NOT_SUPPORTED (one log line) when the lease
 * limits dev and NVML cannot measure there: the context would escape the limit. Thread-safe. */
CUresult gs__footprint_begin(CUdevice dev, uint64_t kind, gs__footprint_probe_t *probe);

/* After ctx was created on probe->dev: measures the memory its creation took (or takes the
 * known figure) and charges it to the lease (one charge per context, however many threads
 * measured its creation); a measurement no other of this process overlapped, by this process's
 * own NVML use, becomes the figure of its kind. Returns CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY (one log line) when it does not fit in the lease: the caller then
 * destroys the context. */
CUresult gs__footprint_commit(gs__footprint_probe_t *probe, CUcontext ctx);

/* The creation gs__footprint_begin was called for failed: forgets the probe (no charge). */
void gs__footprint_abort(gs__footprint_probe_t *probe);

/* Returns ctx's charge: it was destroyed, or a primary context was released for the last time. */
void gs__footprint_end(CUcontext ctx);

/* Compute shares (compute.c). gs__compute_config reads GPUSHARE_COMPUTE_* at start-up (a bad
 * value fails closed with CUDA_ERROR_INVALID_VALUE and one log line; region_share, from the
 * lease's region, overrides GPUSHARE_COMPUTE_SHARE when nonzero). gs__compute_setup joins the
 * GPUs' schedulers once, after the driver's cuInit succeeded: CUDA_ERROR_NOT_SUPPORTED with one
 * log line when a share cannot be enforced. */
CUresult gs__compute_config(uint32_t region_share);
CUresult gs__compute_setup(void);
void gs__compute_after_fork(void);
void gs__compute_exit(void);

/* Around every kernel or graph launch: gs__compute_enter waits until the launch may go to the
 * GPU and returns a token (NULL when compute shares are off), gs__compute_leave(token) follows
 * the driver call. Thread-safe; without shares one predictable branch. */
struct gs__gate;
struct gs__gate *gs__compute_enter(void);
void gs__compute_leave(struct gs__gate *gate);

/* The current context's CUDA ordinal, or -1 without a current context. */
int gs__current_device(void);

/* The lease's limit for ordinal dev (0 = none). */
uint64_t gs__limit(unsigned dev);

#endif
