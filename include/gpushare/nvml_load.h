/* SPDX-License-Identifier: Apache-2.0 */
/* The one NVML loader: dlopen()s libnvidia-ml (NVIDIA's or gpusim's: the seam is which library
 * is loaded) and resolves its functions, for gpushared's inventory, gpushare doctor and the shim.
 * libc and libdl only (the shim links it and is loaded into applications), in the static library
 * gs_nvml.
 *
 * Two levels: gs_nvml_dlopen and gs_nvml_resolve load a library and fill any table of functions
 * through any lookup (the shim resolves its hooks' targets with its own dlsym, never through its
 * dlsym hook); gs_nvml_open fills gs_nvml_t, the functions the programs call, and initialises
 * NVML. NVML's own init and shutdown are not thread-safe: one thread per gs_nvml_t. */
#ifndef GPUSHARE_NVML_LOAD_H
#define GPUSHARE_NVML_LOAD_H

#include <stddef.h>

#include "gpushare/nvml_abi.h"

/* A function to resolve: its name, where its address goes (NULL when the library lacks it), and
 * whether a library without it is refused (a required one: "not an NVML library"). */
typedef struct gs_nvml_fn {
    const char *name;
    void **slot;
    int required;
} gs_nvml_fn_t;

/* How a name is looked up in a loaded library: dlsym, or the shim's own. */
typedef void *(*gs_nvml_lookup_t)(void *lib, const char *name);

/* Loads library (a name for the dynamic linker, or a path), reusing it when the process has it
 * loaded already, with dlopen's flags. Returns the handle, or NULL with "cannot load LIBRARY:
 * dlerror's words" in err. */
void *gs_nvml_dlopen(const char *library, int flags, char *err, size_t errlen);

/* Fills the n slots of fns from lib (the file library) through lookup (NULL: dlsym). Returns 0,
 * or GS_ENOSYS with "LIBRARY has no NAME: MISSING" in err when a required one is missing
 * (missing: what that means, "not an NVML library"; the slots found stay set). */
int gs_nvml_resolve(void *lib, gs_nvml_lookup_t lookup, const gs_nvml_fn_t *fns, size_t n,
                    const char *library, const char *missing, char *err, size_t errlen);

/* The NVML functions gpushare's programs call: required (r) or not, (o) left NULL when the
 * library has none (each caller says what it does without it). */
#define GS_NVML_FUNCTIONS(X)                                                                       \
    X(nvmlInit_v2, 1)                                                                              \
    X(nvmlShutdown, 1)                                                                             \
    X(nvmlErrorString, 1)                                                                          \
    X(nvmlSystemGetDriverVersion, 1)                                                               \
    X(nvmlSystemGetCudaDriverVersion_v2, 0)                                                        \
    X(nvmlDeviceGetCount_v2, 1)                                                                    \
    X(nvmlDeviceGetHandleByIndex_v2, 1)                                                            \
    X(nvmlDeviceGetName, 1)                                                                        \
    X(nvmlDeviceGetUUID, 1)                                                                        \
    X(nvmlDeviceGetMinorNumber, 0)                                                                 \
    X(nvmlDeviceGetPciInfo_v3, 0)                                                                  \
    X(nvmlDeviceGetMemoryInfo, 1)                                                                  \
    X(nvmlDeviceGetMemoryInfo_v2, 0)                                                               \
    X(nvmlDeviceGetUtilizationRates, 1)                                                            \
    X(nvmlDeviceGetComputeRunningProcesses_v3, 0)                                                  \
    X(nvmlDeviceGetComputeMode, 0)                                                                 \
    X(nvmlDeviceGetMigMode, 0)

/* A loaded, initialised NVML. */
typedef struct gs_nvml {
    void *lib;
    int initialised;
    char library[4096]; /* the file loaded (dladdr), else the name asked for */
#define GS_NVML_SLOT(name, required) __typeof__(&name) name;
    GS_NVML_FUNCTIONS(GS_NVML_SLOT)
#undef GS_NVML_SLOT
} gs_nvml_t;

/* Loads library (a name or a path; flags RTLD_NOW | RTLD_LOCAL), resolves GS_NVML_FUNCTIONS and
 * calls nvmlInit_v2. Returns 0, or with one line in err GS_ENOENT (cannot load), GS_ENOSYS (a
 * required function is missing) or GS_EIO (nvmlInit failed); *nv is then closed. */
int gs_nvml_open(gs_nvml_t *nv, const char *library, char *err, size_t errlen);

/* Shuts NVML down (when initialised) and unloads it. Safe on a closed or zeroed nv. */
void gs_nvml_close(gs_nvml_t *nv);

/* Resolves more functions of the loaded library (gs_nvml_resolve with nv's library). */
int gs_nvml_more(const gs_nvml_t *nv, const gs_nvml_fn_t *fns, size_t n, const char *missing,
                 char *err, size_t errlen);

/* Writes "NVML WHAT failed: TEXT (RC)" into err (TEXT from nvmlErrorString) and returns
 * GS_EIO. */
int gs_nvml_fail(const gs_nvml_t *nv, nvmlReturn_t rc, const char *what, char *err, size_t errlen);

#endif
