/* SPDX-License-Identifier: Apache-2.0 */
/* gpushare doctor's NVML reader: dlopen'ed like the daemon's inventory, read once, unloaded. */
#include "doctor_nvml.h"

#include "gpushare/error.h"
#include "gpushare/nvml_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define NVML_FUNCTIONS(X)                                                                          \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlShutdown)                                                                                \
    X(nvmlErrorString)                                                                             \
    X(nvmlSystemGetCudaDriverVersion_v2)                                                           \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetComputeMode)                                                                    \
    X(nvmlDeviceGetMigMode)

typedef struct nvml {
    void *lib;
#define X(name) __typeof__(&name) name;
    NVML_FUNCTIONS(X)
#undef X
} nvml_t;

static int resolve(nvml_t *n, const char *library, char *err, size_t errlen)
{
#define X(name)                                                                                    \
    *(void **)&n->name = dlsym(n->lib, #name);                                                     \
    if (n->name == NULL) {                                                                         \
        snprintf(err, errlen, "%s has no %s: not an NVML library", library, #name);                \
        return GS_ENOSYS;                                                                          \
    }
    NVML_FUNCTIONS(X)
#undef X
    return 0;
}

static void read_gpu(const nvml_t *n, unsigned i, gs__doctor_gpu_t *gpu)
{
    nvmlDevice_t dev;
    gpu->index = i;
    gpu->compute_mode = -1;
    if (n->nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
        return;
    if (n->nvmlDeviceGetUUID(dev, gpu->uuid, sizeof(gpu->uuid)) != NVML_SUCCESS)
        gpu->uuid[0] = '\0';
    nvmlComputeMode_t mode;
    if (n->nvmlDeviceGetComputeMode(dev, &mode) == NVML_SUCCESS)
        gpu->compute_mode = (int)mode;
    gpu->mig_supported =
        n->nvmlDeviceGetMigMode(dev, &gpu->mig_current, &gpu->mig_pending) == NVML_SUCCESS;
}

static int read_all(const nvml_t *n, gs__doctor_nvml_t *out, char *err, size_t errlen)
{
    unsigned count = 0;
    nvmlReturn_t rc = n->nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS)
        return gs_fail(err, errlen, GS_EIO, "nvmlDeviceGetCount failed: %s",
                       n->nvmlErrorString(rc));
    if (n->nvmlSystemGetCudaDriverVersion_v2(&out->cuda_version) != NVML_SUCCESS)
        out->cuda_version = 0;
    out->count = count < GS_MAX_DEVICES ? count : GS_MAX_DEVICES;
    for (unsigned i = 0; i < out->count; i++)
        read_gpu(n, i, &out->gpus[i]);
    return 0;
}

int gs__doctor_read_nvml(const char *library, gs__doctor_nvml_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->library, sizeof(out->library), "%s", library);
    nvml_t n = {.lib = dlopen(library, RTLD_NOW | RTLD_LOCAL)};
    if (n.lib == NULL)
        return gs_fail(err, errlen, GS_ENOENT, "cannot load %s: %s", library, dlerror());
    int result = resolve(&n, library, err, errlen);
    if (result != 0)
        goto out;
    Dl_info info;
    if (dladdr(*(void **)&n.nvmlInit_v2, &info) != 0 && info.dli_fname != NULL)
        snprintf(out->library, sizeof(out->library), "%s", info.dli_fname);
    nvmlReturn_t rc = n.nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        result = gs_fail(err, errlen, GS_EIO, "nvmlInit failed: %s", n.nvmlErrorString(rc));
        goto out;
    }
    result = read_all(&n, out, err, errlen);
    n.nvmlShutdown();
out:
    dlclose(n.lib);
    return result;
}
