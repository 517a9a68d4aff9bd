/* SPDX-License-Identifier: Apache-2.0 */
/* Prints what NVML says runs on a GPU, for the tests: "PID USED_BYTES" per compute process of
 * the GPU with NVML index INDEX (gs-nvml-procs INDEX). NVML is loaded with dlopen, as gpushared
 * loads it, so the same program reads NVIDIA's NVML or gpusim's. Exit status 1 on an NVML error. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpushare/nvml_abi.h"

typedef struct nvml {
    __typeof__(&nvmlInit_v2) init;
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index;
    __typeof__(&nvmlDeviceGetComputeRunningProcesses_v3) processes;
} nvml_t;

static int load(nvml_t *api)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return -1;
    *(void **)&api->init = dlsym(lib, "nvmlInit_v2");
    *(void **)&api->by_index = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&api->processes = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    return api->init != NULL && api->by_index != NULL && api->processes != NULL ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gs-nvml-procs INDEX\n");
        return 2;
    }
    nvml_t api;
    nvmlDevice_t device;
    nvmlProcessInfo_t infos[256];
    unsigned count = 256;
    if (load(&api) != 0 || api.init() != NVML_SUCCESS ||
        api.by_index((unsigned)strtoul(argv[1], NULL, 10), &device) != NVML_SUCCESS ||
        api.processes(device, &count, infos) != NVML_SUCCESS) {
        fprintf(stderr, "gs-nvml-procs: NVML failed\n");
        return 1;
    }
    for (unsigned i = 0; i < count; i++)
        printf("%u %llu\n", infos[i].pid, infos[i].usedGpuMemory);
    return 0;
}
