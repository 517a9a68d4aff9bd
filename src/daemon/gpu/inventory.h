/* SPDX-License-Identifier: Apache-2.0 */
/* GPU inventory: the node's GPUs through NVML, loaded at run time with dlopen.
 *
 * The seam between NVIDIA's driver and gpusim is which libnvidia-ml.so.1 is loaded (the
 * config's nvml_library, else the dynamic linker's search path). The inventory calls the library
 * the same way in both cases; it only tells them apart to say so: a library that works while
 * the NVIDIA kernel driver is absent (/proc/driver/nvidia/version does not exist) cannot be
 * NVIDIA's, so the GPUs are simulated (gpusim). */
#ifndef GS_DAEMON_INVENTORY_H
#define GS_DAEMON_INVENTORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpushare/nvml_abi.h"
#include "gpushare/nvml_load.h"
#include "core/core.h"

typedef struct gs__inventory gs__inventory_t;

/* One GPU as discovered. */
typedef struct gs__gpu_info {
    unsigned index;
    char uuid[GS__UUID_MAX];
    char name[GS__NAME_MAX];
    uint64_t total;    /* bytes */
    uint64_t reserved; /* bytes the driver keeps for itself (NVML shows them used), 0 unknown */
    int minor;         /* /dev/nvidiaN's N, -1 unknown */
    char pci_bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:18:00.0", "" unknown */
} gs__gpu_info_t;

/* Loads the NVML library (a name for the dynamic linker or a path), initialises it and lists the
 * GPUs. Without NVIDIA's kernel driver (gpusim), GPUSIM_STATE is set to sim_node when it is
 * unset (NULL: left as it is): the simulated node then lives where every user's job reaches it.
 * Returns 0 and *out, or GS_ENOENT (library not found), GS_ENOSYS (a function is missing),
 * GS_EIO (NVML failed) with one line in err. The caller owns *out (gs__inventory_close). */
int gs__inventory_open(const char *library, const char *sim_node, gs__inventory_t **out, char *err,
                       size_t errlen);

/* Whether gs__inventory_open will make sim_node the host's simulated node (no NVIDIA kernel
 * driver, GPUSIM_STATE unset): 1, else 0 (NVIDIA's GPUs, or a node GPUSIM_STATE names). One such
 * node per host: gpushared claims it before opening it (core/claim.h, gs__claim_sim). */
int gs__inventory_host_node(const char *sim_node);

/* Shuts NVML down and unloads it (NULL is fine). */
void gs__inventory_close(gs__inventory_t *inv);

/* The number of GPUs, and GPU i (0 <= i < count). */
unsigned gs__inventory_count(const gs__inventory_t *inv);
const gs__gpu_info_t *gs__inventory_gpu(const gs__inventory_t *inv, unsigned i);

/* Reads GPU i's memory use and utilization. Returns 0 or GS_EIO. Not thread-safe. */
int gs__inventory_usage(gs__inventory_t *inv, unsigned i, gs__gpu_usage_t *usage);

/* One process with a context on a GPU, from nvmlDeviceGetComputeRunningProcesses_v3. */
typedef struct gs__gpu_process {
    pid_t pid;
    uint64_t used; /* bytes of device memory; UINT64_MAX when the driver cannot tell */
} gs__gpu_process_t;

/* Lists up to *count processes using GPU i into out and sets *count to how many. Returns 0,
 * GS_ENOSYS when the driver has no process list, or GS_EIO. Not thread-safe (the event loop's). */
int gs__inventory_processes(gs__inventory_t *inv, unsigned i, gs__gpu_process_t *out,
                            unsigned *count);

/* Nonzero when the GPUs are simulated (see above). */
int gs__inventory_simulated(const gs__inventory_t *inv);

/* With gpusim: its node (GPUSIM_STATE as the library read it) and the directory of its libraries
 * and programs (nvidia-smi), which leases' jobs are given; "" otherwise (also for NULL). */
const char *gs__inventory_sim_state(const gs__inventory_t *inv);
const char *gs__inventory_sim_dir(const gs__inventory_t *inv);

/* The NVML handle of GPU i (0 <= i < count), for modes that call NVML themselves. */
nvmlDevice_t gs__inventory_handle(const gs__inventory_t *inv, unsigned i);

/* Resolves more functions of the loaded library (gs_nvml_more, gpushare/nvml_load.h): 0, or
 * GS_ENOSYS with "LIBRARY has no NAME: MISSING" in err. */
int gs__inventory_resolve(const gs__inventory_t *inv, const gs_nvml_fn_t *fns, size_t n,
                          const char *missing, char *err, size_t errlen);

/* The loaded library's path (from dladdr) and the driver version it reports. Never NULL. */
const char *gs__inventory_library(const gs__inventory_t *inv);
const char *gs__inventory_driver(const gs__inventory_t *inv);

/* The CUDA driver API version NVML reports (nvmlSystemGetCudaDriverVersion_v2), as "13.0"; ""
 * when it cannot tell. Never NULL. */
const char *gs__inventory_cuda_version(const gs__inventory_t *inv);

#endif
