/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: private header shared by its files (handles, call prologue). */
#ifndef GSIM_NVML_INTERNAL_H
#define GSIM_NVML_INTERNAL_H

#define GS_NVML_API                   __attribute__((visibility("default")))
#define NVML_NO_UNVERSIONED_FUNC_DEFS 1
#include "gpushare/nvml_abi.h"

#include "node.h"

/* A device handle is a whole GPU (gi < 0) or a MIG device (GI slot gi, CI slot ci). Handles are
 * pointers into static per-process tables: a pointer from anywhere else is an invalid argument. */
struct nvmlDevice_st {
    int dev, gi, ci;
};
struct nvmlGpuInstance_st {
    int dev, gi;
};
struct nvmlComputeInstance_st {
    int dev, gi, ci;
};

/* What a call works on, resolved from its handle, with the node locked. */
typedef struct nvml_target {
    gsim_node_t *node;
    int locked;
    int dev, gi, ci;
    gsim_device_t *d;
    gsim_gi_t *g; /* NULL for a whole GPU */
    const gsim_model_t *model;
} nvml_target_t;

/* Returns the node when NVML is initialised, else NULL. Thread-safe. */
gsim_node_t *gsim_nvml_node(void);

/* Handles of a GPU, a MIG device, a GPU instance and a compute instance (valid indices). */
nvmlDevice_t gsim_nvml_device_handle(int dev);
nvmlDevice_t gsim_nvml_mig_handle(int dev, int gi, int ci);
nvmlGpuInstance_t gsim_nvml_gi_handle(int dev, int gi);
nvmlComputeInstance_t gsim_nvml_ci_handle(int dev, int gi, int ci);

/* Call prologues: check initialisation (NVML_ERROR_UNINITIALIZED), that the handle comes from the
 * tables and names something that exists (NVML_ERROR_INVALID_ARGUMENT), then lock the node and
 * fill *t. gsim_nvml_begin_node only checks initialisation and locks. Every begin is paired with
 * gsim_nvml_end, which unlocks if locked and returns result. */
nvmlReturn_t gsim_nvml_begin_node(nvml_target_t *t);
nvmlReturn_t gsim_nvml_begin_device(nvmlDevice_t device, nvml_target_t *t);
nvmlReturn_t gsim_nvml_begin_gi(nvmlGpuInstance_t gpuInstance, nvml_target_t *t);
nvmlReturn_t gsim_nvml_begin_ci(nvmlComputeInstance_t computeInstance, nvml_target_t *t);
nvmlReturn_t gsim_nvml_end(nvml_target_t *t, nvmlReturn_t result);

/* Copies text into buf of length bytes: NVML_ERROR_INVALID_ARGUMENT for a NULL buf,
 * NVML_ERROR_INSUFFICIENT_SIZE when it does not fit with its NUL. */
nvmlReturn_t gsim_nvml_copy_string(char *buf, unsigned int length, const char *text);

/* The index of a MIG device among its GPU's MIG devices, or -1 (lock held). */
int gsim_nvml_mig_index(const nvml_target_t *t);

/* The MIG device name of CI ci in GI g: "3g.20gb", or "1c.3g.20gb" for a partial CI. */
void gsim_nvml_mig_profile_name(const gsim_model_t *model, const gsim_gi_t *g, int ci, char *out,
                                size_t len);

/* Calls fn(interval, arg) for every interval (past and reserved) of a timeline (lock held). */
void gsim_nvml_each_interval(const gsim_timeline_t *tl, void (*fn)(const gsim_interval_t *, void *),
                             void *arg);

/* PID namespaces (pidns.c). Refresh resolves, outside the node lock, the processes of other PID
 * namespaces that the process lists may show; call it before begin. Thread-safe. */
void gsim_nvml_pidns_refresh(gsim_node_t *node);

/* The pid of slot's process as the calling process's PID namespace sees it, 0 when it cannot see
 * it (as NVIDIA's driver, which leaves such processes out). Call with the node locked. */
uint32_t gsim_nvml_visible_pid(const gsim_node_t *node, int slot);

/* The slot whose process has key (gsim_proc_t.pid, as timeline intervals carry it), or -1. Call
 * with the node locked. */
int gsim_nvml_slot_of_key(const gsim_node_t *node, int32_t key);

/* Stubs of the entry points gpusim does not model (stub.c, called by the generated
 * nvml_stubs.c): NVML_ERROR_UNINITIALIZED, NVML_ERROR_INVALID_ARGUMENT for a handle of kind that
 * is not valid, else NVML_ERROR_NOT_SUPPORTED. */
typedef enum gsim_nvml_kind {
    GSIM_NVML_NONE,
    GSIM_NVML_DEVICE,
    GSIM_NVML_GPU_INSTANCE,
    GSIM_NVML_COMPUTE_INSTANCE,
    GSIM_NVML_UNIT
} gsim_nvml_kind_t;
nvmlReturn_t gsim_nvml_stub(gsim_nvml_kind_t kind, void *handle);

/* The test hook (fault.c): the code GPUSIM_NVML_FAULTS injects for function, else
 * NVML_SUCCESS. */
nvmlReturn_t gsim_nvml_fault(const char *function);

/* Returns the injected code from the calling function when there is one. */
#define GSIM_NVML_FAULT_POINT()                                                                    \
    do {                                                                                           \
        nvmlReturn_t fault_ = gsim_nvml_fault(__func__);                                           \
        if (fault_ != NVML_SUCCESS)                                                                \
            return fault_;                                                                         \
    } while (0)

#endif
