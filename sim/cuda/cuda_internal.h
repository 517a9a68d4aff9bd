/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's CUDA driver: the private header shared by the modules of libcuda.so.1.
 *
 * Every module includes NVIDIA's cuda.h with __CUDA_API_VERSION_INTERNAL defined, so cuda.h
 * declares every exported name (current, legacy and per-thread-stream variants) and the compiler
 * checks each definition against NVIDIA's prototype. Nothing here re-declares a CUDA type.
 *
 * The exported cu* functions keep the contract NVIDIA documents in cuda.h (arguments, results,
 * error codes): each returns CUDA_SUCCESS or a documented error, never crashes on a bad handle,
 * pointer or size, never exits, holds no lock while it sleeps, and is thread-safe. Where gpusim
 * deviates (what is simulated and what not), docs/gpusim.md says so.
 *
 * Naming: cross-module functions are gsim_cu_<module>_*; everything else is static.
 * Threading: every function here is thread-safe unless it says "with ctx->mu held".
 * Handles: CUDA handles are pointers to objects that live in per-kind arenas (handles.c), so any
 * handle value, even garbage, can be validated without dereferencing unmapped memory. */
#ifndef GSIM_CUDA_INTERNAL_H
#define GSIM_CUDA_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "node.h"

/* Marks a function as part of the driver's ABI (the library is built -fvisibility=hidden). */
#define GSIM_CU_API __attribute__((visibility("default")))

#define GSIM_CU_VMM_GRANULARITY   (UINT64_C(2) << 20)
#define GSIM_CU_ALLOC_ALIGN       256 /* cuMemAlloc's documented alignment; charges round to it */
#define GSIM_CU_ARRAY_ALIGN       512
#define GSIM_CU_DEFAULT_KERNEL_NS INT64_C(10000) /* kernels of images gpusim cannot read */
#define GSIM_CU_NAME_MAX          256

/* ---- handle arenas (handles.c) ---- */

typedef enum gsim_cu_kind {
    GSIM_CU_CTX = 1,
    GSIM_CU_STREAM,
    GSIM_CU_EVENT,
    GSIM_CU_MODULE,
    GSIM_CU_FUNCTION,
    GSIM_CU_LIBRARY,
    GSIM_CU_KERNEL,
    GSIM_CU_POOL,
    GSIM_CU_VMM,
    GSIM_CU_ARRAY,
    GSIM_CU_MIPMAP,
    GSIM_CU_GRAPH,
    GSIM_CU_GRAPH_NODE,
    GSIM_CU_GRAPH_EXEC,
    GSIM_CU_KIND_COUNT
} gsim_cu_kind_t;

#define GSIM_CU_OBJ_SLOT 1024 /* every object fits in one arena slot */

/* The first member of every handle object. */
typedef struct gsim_cu_obj {
    _Atomic uint32_t live; /* the object's kind while it exists, 0 when free */
    uint32_t serial;       /* incremented per reuse of the slot */
} gsim_cu_obj_t;

/* Returns a zeroed object of kind (size <= GSIM_CU_OBJ_SLOT) marked live, or NULL when the
 * arena is exhausted. Slots are reused only after every slot has been used once. */
void *gsim_cu_obj_new(gsim_cu_kind_t kind);

/* Marks obj free and returns its slot to the arena. obj must be a live object. */
void gsim_cu_obj_free(void *obj);

/* Returns nonzero when p is a live object of kind. Never dereferences memory outside the arena,
 * so any value (NULL, garbage, a freed handle) is safe. Lock-free. */
int gsim_cu_obj_valid(const void *p, gsim_cu_kind_t kind);

/* Returns the reuse serial of a handle object (to tell a handle from a later one in its slot). */
static inline uint32_t gsim_cu_obj_serial(const void *obj)
{
    return ((const gsim_cu_obj_t *)obj)->serial;
}

/* Calls fn(obj, arg) for every live object of kind. fn may free obj. */
void gsim_cu_obj_foreach(gsim_cu_kind_t kind, void (*fn)(void *obj, void *arg), void *arg);

/* ---- the driver (init.c) ---- */

typedef struct gsim_cu_device {
    int ordinal;
    gsim_domain_t domain;
    int cc_major, cc_minor;
    uint32_t sms;
    uint64_t total_bytes;
    char name[GSIM_NAME_MAX + 32];
    char uuid[GSIM_UUID_MAX];        /* the domain's: "GPU-..." or "MIG-..." */
    char parent_uuid[GSIM_UUID_MAX]; /* the physical GPU's */
    unsigned pci_domain, pci_bus, pci_device;
    const gsim_model_t *model;
} gsim_cu_device_t;

/* Converts a UUID's text ("GPU-8d1e...", any prefix) to CUDA's 16 bytes (device.c). */
void gsim_cu_uuid_bytes(const char *text, CUuuid *out);

/* Fills the compute capability of d from its model (device.c). */
void gsim_cu_device_describe_model(gsim_cu_device_t *d);

/* Returns CUDA_SUCCESS when cuInit succeeded in this process, else CUDA_ERROR_NOT_INITIALIZED
 * (also in a child forked after the parent initialised, as NVIDIA's driver does). Lock-free. */
CUresult gsim_cu_initialized(void);

/* Returns the node (valid after a successful cuInit). */
gsim_node_t *gsim_cu_node(void);

/* Returns the number of CUDA devices this process sees. */
int gsim_cu_device_count(void);

/* Returns the device with CUDA ordinal ord, or NULL when ord is not a valid ordinal. */
const gsim_cu_device_t *gsim_cu_device(CUdevice ord);

/* Finds (once per process, at the first context) whether an MPS daemon serves this process and
 * caches its limits. Returns CUDA_SUCCESS or CUDA_ERROR_MPS_CONNECTION_FAILED. */
CUresult gsim_cu_mps_connect(void);

/* An MPS client's request for a context on ordinal (context creation): CUDA_SUCCESS, or
 * CUDA_ERROR_LAUNCH_FAILED when the MPS server met a fatal GPU error and reset the device instead
 * (sim/mps/server.c). CUDA_SUCCESS at once for a process that is no MPS client. */
CUresult gsim_cu_mps_attach(CUdevice ordinal);

/* Returns this process's MPS active thread percentage (1..100) when an MPS daemon serves it, 0
 * when it is time-sliced; and whether an MPS daemon serves it. */
uint32_t gsim_cu_mps_pct(void);
int gsim_cu_mps_active(void);

/* Returns the MPS pinned memory limit for ordinal in bytes (0 = none). */
uint64_t gsim_cu_pinned_limit(int ordinal);

/* Returns this process's pid as recorded in the node (cached at cuInit). */
int32_t gsim_cu_pid(void);

/* ---- physical memory accounting (charge.c) ---- */

/* Charges bytes of device memory on ordinal to this process: honours the MPS pinned limit, then
 * the node's physical memory. Returns CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gsim_cu_charge(int ordinal, uint64_t bytes);

/* Returns bytes charged with gsim_cu_charge. */
void gsim_cu_uncharge(int ordinal, uint64_t bytes);

/* Charges the device memory a new context on ordinal takes (gsim_context_bytes of the device's
 * model and SMs) to this process and records it in ctx->footprint. It counts in the node (NVML's
 * per-process and device memory, every process's free memory) and against an MPS pinned limit
 * (measured on an H100 MPS client: 4 GiB limit, 3 GiB allocated, 510.6 MiB left). Returns
 * CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY (nothing charged). */
CUresult gsim_cu_charge_context(CUcontext ctx, int ordinal);

/* Returns a context's footprint (when it is destroyed); idempotent. */
void gsim_cu_uncharge_context(CUcontext ctx);

/* Returns what the MPS pinned limit of ordinal leaves this process (UINT64_MAX: no limit). */
uint64_t gsim_cu_pinned_left(int ordinal);

/* ---- contexts (context.c) ---- */

typedef struct CUstream_st gsim_cu_stream_t;

enum { GSIM_CU_STREAM_USER = 0, GSIM_CU_STREAM_LEGACY, GSIM_CU_STREAM_PER_THREAD };

/* A stream: a created stream, a per-thread default stream (both arena objects) or a context's
 * legacy default stream (embedded in the context, never handed out as a handle). */
struct CUstream_st {
    gsim_cu_obj_t obj;
    CUcontext ctx;
    uint64_t ctx_generation;
    int type; /* GSIM_CU_STREAM_* */
    unsigned int flags;
    int priority;
    unsigned long long id;
    int64_t tail;          /* end of the last work queued (wall ns), ctx->mu */
    int pending_callbacks; /* ctx->mu */
};

struct CUctx_st {
    gsim_cu_obj_t obj;
    int ordinal;
    gsim_domain_t domain;
    unsigned int flags;
    int primary;                 /* the device's primary context */
    _Atomic int active;          /* a primary context is active while retained */
    int refcount;                /* primary: retain count; created: attach count */
    _Atomic uint64_t generation; /* bumped when the context is destroyed or reset */
    unsigned long long id;
    pthread_mutex_t mu;        /* guards the timing fields of the context and its streams */
    pthread_cond_t cond;       /* signalled when host callbacks complete */
    struct CUstream_st legacy; /* the legacy default stream */
    int64_t blocking_tail;     /* latest end of work on blocking streams */
    int64_t max_tail;          /* latest end of any work in the context */
    int pending_callbacks;     /* host functions queued and not yet run */
    size_t limits[16];         /* CUlimit values */
    CUfunc_cache cache_config;
    CUsharedconfig shmem_config;
    unsigned char peer[GSIM_MAX_DEVICES];
    uint64_t footprint; /* the context's own device memory, charged while it exists */
};

/* Returns nonzero when flags are valid context flags (one scheduling mode, known bits). */
int gsim_cu_ctx_flags_valid(unsigned int flags);

/* Initialises a context object's lock and condition variable (once per object). */
void gsim_cu_ctx_init_sync(CUcontext ctx);

/* Makes ctx a fresh, active context on ordinal (streams idle, default limits). */
void gsim_cu_ctx_start(CUcontext ctx, int ordinal, unsigned int flags, int is_primary);

/* Sets a context's limits and cache configuration to their defaults. */
void gsim_cu_ctx_default_limits(CUcontext ctx);

/* Destroys everything ctx owns (memory, streams, events, modules, arrays): what cuCtxDestroy and
 * a primary context's last release or reset do. The context object itself stays. */
void gsim_cu_ctx_release_resources(CUcontext ctx);

/* Returns the calling thread's current context, checking that the driver is initialised and
 * the context alive: CUDA_SUCCESS, CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_INVALID_CONTEXT (no
 * current context) or CUDA_ERROR_CONTEXT_IS_DESTROYED. */
CUresult gsim_cu_ctx_current(CUcontext *ctx);

/* Returns CUDA_SUCCESS when ctx is a live (active) context, else CUDA_ERROR_INVALID_CONTEXT. */
CUresult gsim_cu_ctx_check(CUcontext ctx);

/* Resolves a context argument: NULL means the current context. */
CUresult gsim_cu_ctx_resolve(CUcontext ctx, CUcontext *out);

/* ---- streams and simulated time (stream.c, callback.c) ---- */

/* Resets ctx's legacy default stream (context start and reset). */
void gsim_cu_stream_init_legacy(CUcontext ctx);

/* Resolves a stream argument to the stream object that orders the work (legacy default stream,
 * per-thread default stream, or a created stream). per_thread selects what NULL means (the _ptsz
 * and _ptds entry points). Checks that the driver is initialised and a context is current (for
 * NULL and the special handles) or that the stream is live. Returns CUDA_SUCCESS,
 * CUDA_ERROR_INVALID_HANDLE or a context error. */
CUresult gsim_cu_stream_resolve(CUstream handle, int per_thread, gsim_cu_stream_t **out);

/* Queues dur_ns of simulated kernel work (already divided by the time scale: wall ns) on s: waits
 * for the stream's earlier work, time-slices with other processes on the device, and records the
 * busy time in the node. Sets *end_ns (may be NULL). Returns CUDA_SUCCESS. */
CUresult gsim_cu_stream_submit(gsim_cu_stream_t *s, int64_t dur_ns, int64_t *end_ns);

/* Returns the wall time at which the work queued on s so far is complete (now when the stream is
 * idle), and marks that point as the stream's tail (an empty operation in stream order, e.g. an
 * event record). */
int64_t gsim_cu_stream_mark(gsim_cu_stream_t *s);

/* Makes later work on s wait until at least t_ns. */
void gsim_cu_stream_wait_until(gsim_cu_stream_t *s, int64_t t_ns);

/* Blocks until the work queued on s is complete (time and host callbacks). */
void gsim_cu_stream_sync(gsim_cu_stream_t *s);

/* Blocks until s's predecessors in stream order are complete: what a synchronous copy on s's
 * default stream waits for. */
void gsim_cu_stream_wait_idle(gsim_cu_stream_t *s);

/* Blocks until all work of ctx is complete. */
void gsim_cu_ctx_sync(CUcontext ctx);

/* Destroys every stream of ctx (context teardown). */
void gsim_cu_stream_destroy_all(CUcontext ctx);

/* A host function queued on a stream: cuLaunchHostFunc (host_fn) or cuStreamAddCallback
 * (stream_cb, called with handle). */
typedef struct gsim_cu_host_call {
    CUhostFn host_fn;
    CUstreamCallback stream_cb;
    void *user;
    CUstream handle;
} gsim_cu_host_call_t;

/* Queues call on s, run by the process's callback thread once the stream's preceding work is
 * complete. Returns CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gsim_cu_stream_host_call(gsim_cu_stream_t *s, const gsim_cu_host_call_t *call);

/* Blocks until the host calls queued on s (or, with s NULL, on every stream of ctx) have run. */
void gsim_cu_wait_host_calls(CUcontext ctx, gsim_cu_stream_t *s);

/* ---- events (event.c) ---- */

/* Destroys every event of ctx (context teardown). */
void gsim_cu_event_destroy_all(CUcontext ctx);

/* Records event (a live CUevent) at the current end of s. Returns CUDA_SUCCESS or
 * CUDA_ERROR_INVALID_HANDLE. */
CUresult gsim_cu_event_record_on(CUevent event, gsim_cu_stream_t *s);

/* Returns CUDA_SUCCESS and the recorded time of a live event, or CUDA_ERROR_INVALID_HANDLE. */
CUresult gsim_cu_event_time(CUevent event, int64_t *t_ns);

/* ---- device memory: the allocation table (alloc_table.c) ---- */

typedef enum gsim_cu_mem_kind {
    GSIM_CU_MEM_DEVICE = 1, /* cuMemAlloc, pitch, module globals */
    GSIM_CU_MEM_MANAGED,
    GSIM_CU_MEM_POOL,       /* stream-ordered allocations */
    GSIM_CU_MEM_HOST,       /* cuMemHostAlloc / cuMemAllocHost */
    GSIM_CU_MEM_REGISTERED, /* cuMemHostRegister */
    GSIM_CU_MEM_VMM,        /* a cuMemAddressReserve range */
    GSIM_CU_MEM_GRAPH,      /* the address of a graph memory node */
} gsim_cu_mem_kind_t;

typedef struct gsim_cu_alloc {
    uintptr_t base;
    size_t size;      /* bytes the caller may use */
    uint64_t charged; /* bytes charged to the node (0 for host memory) */
    size_t map_len;   /* length of the mmap backing it; 0 when not mmap'd by the table's owner */
    gsim_cu_mem_kind_t kind;
    int ordinal;
    CUcontext ctx;
    void *owner; /* pool, VMM reservation or graph allocation */
    unsigned int flags;
    unsigned long long buffer_id;
    int sync_memops;
} gsim_cu_alloc_t;

/* Inserts a copy of a into the table. Returns CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE when the
 * range overlaps an existing entry, or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gsim_cu_table_insert(const gsim_cu_alloc_t *a);

/* Removes the entry starting exactly at base, copying it to *out. Returns 0 or -1. */
int gsim_cu_table_remove(uintptr_t base, gsim_cu_alloc_t *out);

/* Copies the entry containing addr to *out. Returns 0 or -1 when no entry contains it. */
int gsim_cu_table_find(uintptr_t addr, gsim_cu_alloc_t *out);

/* Updates the entry starting at base with fn(entry, arg) under the table lock. Returns 0 or -1. */
int gsim_cu_table_update(uintptr_t base, void (*fn)(gsim_cu_alloc_t *entry, void *arg), void *arg);

/* Removes every entry for which pick(entry, arg) is nonzero, calling release(entry) for each
 * outside the table lock. */
void gsim_cu_table_remove_if(int (*pick)(const gsim_cu_alloc_t *entry, void *arg), void *arg,
                             void (*release)(const gsim_cu_alloc_t *entry));

/* Calls fn(entry, arg) for every entry, in address order, under the table's read lock (fn must
 * not call the table). */
void gsim_cu_table_foreach(void (*fn)(const gsim_cu_alloc_t *entry, void *arg), void *arg);

/* Validates that [addr, addr + n) is usable device-visible memory (any kind, mapped and
 * accessible) and returns its host address. Returns CUDA_SUCCESS or CUDA_ERROR_INVALID_VALUE. */
CUresult gsim_cu_mem_range(CUdeviceptr addr, size_t n, void **host);

/* ---- allocations (memory.c) ---- */

/* Allocates size bytes of device memory of kind on ctx's device, charged to the node. Returns
 * CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY or CUDA_ERROR_INVALID_VALUE (size 0). */
CUresult gsim_cu_mem_alloc(CUcontext ctx, size_t size, gsim_cu_mem_kind_t kind, void *owner,
                           CUdeviceptr *dptr);

/* Frees a table entry's memory and charge (the entry has been removed from the table). */
void gsim_cu_mem_release(const gsim_cu_alloc_t *a);

/* Frees every allocation owned by ctx (context teardown). */
void gsim_cu_mem_free_ctx(CUcontext ctx);

/* Backs size bytes of device memory with host memory: malloc for small sizes, an mmap (its
 * length in *map_len) otherwise. Returns NULL on failure. */
void *gsim_cu_backing_alloc(size_t size, size_t *map_len);

/* Frees what gsim_cu_backing_alloc returned. */
void gsim_cu_backing_free(uintptr_t base, size_t map_len);

/* Maps len bytes of zero-filled anonymous memory with no swap reservation; NULL on failure. */
void *gsim_cu_map_anon(size_t len, int prot);

/* ---- stream-ordered pools (pool.c) ---- */

/* Frees a pool allocation (entry already removed from the table): it returns to its pool. */
void gsim_cu_pool_free_entry(const gsim_cu_alloc_t *a);

/* Trims every pool to its release threshold (called at synchronization points). */
void gsim_cu_pool_trim_all(void);

/* ---- VMM (vmm.c) ---- */

/* Validates [addr, addr + n) inside a VMM reservation entry: it must be mapped and accessible.
 * Returns CUDA_SUCCESS or CUDA_ERROR_INVALID_VALUE. */
CUresult gsim_cu_vmm_range(const gsim_cu_alloc_t *reservation, uintptr_t addr, size_t n);

/* cuMemGetAddressRange for an address inside a VMM reservation: the mapping containing it. */
CUresult gsim_cu_vmm_address_range(const gsim_cu_alloc_t *reservation, uintptr_t addr,
                                   CUdeviceptr *pbase, size_t *psize);

/* ---- graph memory (graph_mem.c) ---- */

/* The memory of one graph allocation node: a fixed address range, reserved when the node is
 * added, backed and charged from the launch that allocates it to the free that releases it. */
typedef struct gsim_cu_graph_alloc gsim_cu_graph_alloc_t;

/* Reserves the address range of a new allocation node (one reference, the node's). Returns
 * CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gsim_cu_graph_alloc_create(int ordinal, size_t size, gsim_cu_graph_alloc_t **out,
                                    CUdeviceptr *dptr);

/* Takes / drops a reference (a node or an executable graph holds one). The address range goes
 * with the last reference unless the memory is still allocated; then with its free. */
void gsim_cu_graph_alloc_ref(gsim_cu_graph_alloc_t *a);
void gsim_cu_graph_alloc_unref(gsim_cu_graph_alloc_t *a);

/* Returns nonzero when the allocation currently has memory. */
int gsim_cu_graph_alloc_allocated(gsim_cu_graph_alloc_t *a);

/* Backs and charges the allocation (a graph launch reached its node). Returns CUDA_SUCCESS,
 * CUDA_ERROR_OUT_OF_MEMORY, or CUDA_ERROR_INVALID_VALUE when it is still allocated. */
CUresult gsim_cu_graph_alloc_allocate(gsim_cu_graph_alloc_t *a);

/* Returns the address of the allocation. */
CUdeviceptr gsim_cu_graph_alloc_ptr(const gsim_cu_graph_alloc_t *a);

/* Returns nonzero when a graph allocation currently has physical memory. */
int gsim_cu_graph_mem_live(const gsim_cu_alloc_t *a);

/* cuMemFree / cuMemFreeAsync of a graph allocation. Returns CUDA_SUCCESS or
 * CUDA_ERROR_INVALID_VALUE when it is not allocated. */
CUresult gsim_cu_graph_mem_free(uintptr_t dptr);

/* ---- arrays (array.c) ---- */

/* Returns the host address and byte extent of array level data, checking the handle.
 * Returns CUDA_SUCCESS or CUDA_ERROR_INVALID_HANDLE / CUDA_ERROR_INVALID_VALUE. */
CUresult gsim_cu_array_data(CUarray array, unsigned char **data, size_t *row_bytes, size_t *rows,
                            size_t *depth);

/* Returns the bytes of one channel of an element of format, or 0 for an unknown format. */
size_t gsim_cu_format_bytes(CUarray_format format);

/* Destroys every array of ctx (context teardown). */
void gsim_cu_array_destroy_all(CUcontext ctx);

/* ---- modules and kernels (module.c, library.c, image.c) ---- */

typedef struct gsim_cu_image_kernel {
    char name[GSIM_CU_NAME_MAX];
    int64_t duration_ns; /* simulated time */
} gsim_cu_image_kernel_t;

typedef struct gsim_cu_image_global {
    char name[GSIM_CU_NAME_MAX];
    size_t bytes;
} gsim_cu_image_global_t;

typedef struct gsim_cu_image {
    int known; /* a gpusim image; otherwise every name resolves at the default cost */
    size_t n_kernels, n_globals;
    gsim_cu_image_kernel_t *kernels;
    gsim_cu_image_global_t *globals;
} gsim_cu_image_t;

/* Parses a module image. A gpusim image is text starting "gpusim-module 1"; anything else is
 * accepted as an opaque image (known = 0). The image is read up to its NUL or max bytes.
 * Returns 0, -EINVAL for a malformed gpusim image (a message in err) or -ENOMEM. */
int gsim_cu_image_parse(const void *image, size_t max, gsim_cu_image_t *out, char *err,
                        size_t errlen);

/* Frees what gsim_cu_image_parse allocated. */
void gsim_cu_image_free(gsim_cu_image_t *image);

/* Reads a whole file (at most 64 MiB) into a NUL-terminated buffer. Returns CUDA_SUCCESS,
 * CUDA_ERROR_FILE_NOT_FOUND or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gsim_cu_read_file(const char *path, char **data, size_t *len);

/* Copies an image (deep). Returns 0 or -ENOMEM. */
int gsim_cu_image_copy(const gsim_cu_image_t *from, gsim_cu_image_t *to);

/* Returns the kernel called name in a known image, or NULL. */
const gsim_cu_image_kernel_t *gsim_cu_image_kernel(const gsim_cu_image_t *image, const char *name);

/* Reports a malformed image: into the JIT error log buffer when the options carry one, else as
 * one line on stderr. */
void gsim_cu_image_report(const char *err, unsigned int numOptions, const CUjit_option *options,
                          void *const *optionValues);

/* Loads image (already parsed; ownership moves to the module, even on failure) as a module of
 * ctx. Returns CUDA_SUCCESS or CUDA_ERROR_OUT_OF_MEMORY. */
CUresult gsim_cu_module_create(CUcontext ctx, gsim_cu_image_t *image, CUmodule *out);

/* Returns the function called name of a live module (CUDA_ERROR_NOT_FOUND when a known image has
 * no such kernel). */
CUresult gsim_cu_module_function(CUmodule mod, const char *name, CUfunction *out);

/* Returns the global called name of a live module. */
CUresult gsim_cu_module_global(CUmodule mod, const char *name, CUdeviceptr *dptr, size_t *bytes);

/* Settable per-function attributes, shared by CUfunction and CUkernel. */
typedef struct gsim_cu_fattrs {
    int max_dyn_smem;
    int carveout;
    int cluster[3];
    int non_portable_cluster;
    int cluster_policy;
    CUfunc_cache cache_config;
    CUsharedconfig shmem_config;
} gsim_cu_fattrs_t;

/* Sets the defaults of a function's attributes. */
void gsim_cu_fattrs_init(gsim_cu_fattrs_t *a);

/* cuFuncGetAttribute / cuKernelGetAttribute on ordinal's device. */
CUresult gsim_cu_fattrs_get(const gsim_cu_fattrs_t *a, CUfunction_attribute attrib, int ordinal,
                            int *value);

/* cuFuncSetAttribute / cuKernelSetAttribute on ordinal's device. */
CUresult gsim_cu_fattrs_set(gsim_cu_fattrs_t *a, CUfunction_attribute attrib, int ordinal,
                            int value);

/* Unloads a module (its functions and globals). */
void gsim_cu_module_destroy(CUmodule mod);

/* Destroys every module of ctx (context teardown). */
void gsim_cu_module_destroy_all(CUcontext ctx);

/* What a launch needs from a CUfunction or CUkernel handle. */
typedef struct gsim_cu_launchable {
    int64_t duration_ns; /* simulated */
    CUcontext ctx;       /* the function's context, NULL for a CUkernel */
    int max_dyn_smem;
} gsim_cu_launchable_t;

/* Resolves f (a CUfunction, or a CUkernel cast to CUfunction) for a launch in ctx. Returns
 * CUDA_SUCCESS or CUDA_ERROR_INVALID_HANDLE / CUDA_ERROR_INVALID_CONTEXT. */
CUresult gsim_cu_function_launchable(CUfunction f, CUcontext ctx, gsim_cu_launchable_t *out);

/* Resolves a CUkernel handle for a launch (library.c). */
CUresult gsim_cu_kernel_launchable(CUkernel k, gsim_cu_launchable_t *out);

/* ---- launch (launch.c) ---- */

typedef struct gsim_cu_launch {
    CUfunction f;
    unsigned int grid[3], block[3];
    unsigned int shared_mem;
    int cooperative;
    void **params, **extra;
} gsim_cu_launch_t;

/* Validates and queues one kernel launch on stream (already resolved). */
CUresult gsim_cu_launch_on(const gsim_cu_launch_t *launch, gsim_cu_stream_t *s);

/* ---- memcpy and memset (memcpy.c, memcpy3d.c, memset.c) ---- */

/* Copies a CUDA_MEMCPY3D_PEER description immediately (all memory is host memory). Returns
 * CUDA_SUCCESS or CUDA_ERROR_INVALID_VALUE. */
CUresult gsim_cu_copy3d(const CUDA_MEMCPY3D_PEER *p);

/* Copies n bytes; with host_side (one side is an unvalidated host pointer) through the kernel, so
 * a bad host pointer returns CUDA_ERROR_INVALID_VALUE instead of faulting (hostcopy.c). Overlapping
 * ranges are copied as memmove does. */
CUresult gsim_cu_copy_bytes(void *dst, const void *src, size_t n, int host_side);

/* Copies a CUDA_MEMCPY3D description immediately (graph memcpy nodes). */
CUresult gsim_cu_copy3d_plain(const CUDA_MEMCPY3D *c);

/* Sets a 2D region of elements of elem_size bytes (1, 2 or 4) at dst. */
CUresult gsim_cu_memset2d(CUdeviceptr dst, size_t pitch, unsigned int value, unsigned int elem_size,
                          size_t width, size_t height);

/* ---- checkpoints (checkpoint.c: the API; checkpoint_target.c: the target process's side;
 * checkpoint_data.c: the contents) ---- */

/* The gate every CUDA call passes (gsim_cu_initialized): CUDA_SUCCESS at once while the process
 * runs; blocks while another process holds it locked or checkpointed; CUDA_ERROR_ILLEGAL_STATE
 * once a checkpoint or restore failed (CU_PROCESS_STATE_FAILED). The checkpoint thread passes. */
CUresult gsim_cu_checkpoint_gate(void);

/* Starts the process's checkpoint thread, which serves requests posted to its node slot (cuInit,
 * node and devices ready). Returns 0 or -1 (the process then cannot be checkpointed). */
int gsim_cu_checkpoint_start(void);

/* Copies the device allocations' data to host memory and drops the device copies; sets
 * *host_bytes. Returns 0 or -1 (nothing released). Checkpoint thread only. */
int gsim_cu_checkpoint_data_save(uint64_t *host_bytes);

/* Copies the saved data back to the same addresses and frees the host copies. */
void gsim_cu_checkpoint_data_restore(void);

/* Frees the host copies without restoring them. */
void gsim_cu_checkpoint_data_discard(void);

/* Makes CUDA ordinal ord show node GPU dev (a restore onto another GPU of the same model): its
 * description, and the domain of its contexts. Call with the node lock held. */
void gsim_cu_device_remap_locked(int ord, int dev);

/* Returns CUDA_SUCCESS when cuInit succeeded in this process, without the checkpoint gate (the
 * checkpoint API itself, called on other processes, never blocks on its caller's gate). */
CUresult gsim_cu_init_state(void);

/* ---- errors ---- */

/* The result a CUDA call returns when it validates a pointer argument that must not be NULL. */
#define GSIM_CU_CHECK_PTR(p)                                                                       \
    do {                                                                                           \
        if ((p) == NULL)                                                                           \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
    } while (0)

/* Returns the first error of a and b. */
static inline CUresult gsim_cu_first_error(CUresult a, CUresult b)
{
    return a != CUDA_SUCCESS ? a : b;
}

/* Converts simulated nanoseconds to wall nanoseconds with GPUSIM_TIME_SCALE (>= 1 when > 0). */
int64_t gsim_cu_sim_to_wall(int64_t sim_ns);

#endif
