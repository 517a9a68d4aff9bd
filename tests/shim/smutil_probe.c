/* SPDX-License-Identifier: Apache-2.0 */
/* Prints NVML's per-process SM utilization samples of GPU 0, one "PID SMUTIL" line each, as a
 * monitoring tool would read them (nvmlDeviceGetProcessUtilization, all samples). */
#include <dlfcn.h>
#include <stdio.h>

#include "gpushare/nvml_abi.h"

int main(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (lib == NULL)
        return 1;
    __typeof__(&nvmlInit_v2) init = (__typeof__(init))dlsym(lib, "nvmlInit_v2");
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) by_index =
        (__typeof__(by_index))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    __typeof__(&nvmlDeviceGetProcessUtilization) samples_of =
        (__typeof__(samples_of))dlsym(lib, "nvmlDeviceGetProcessUtilization");
    nvmlDevice_t dev;
    nvmlProcessUtilizationSample_t samples[64];
    unsigned n = 64;
    if (init == NULL || by_index == NULL || samples_of == NULL || init() != NVML_SUCCESS ||
        by_index(0, &dev) != NVML_SUCCESS || samples_of(dev, samples, &n, 0) != NVML_SUCCESS)
        return 1;
    for (unsigned i = 0; i < n; i++)
        printf("%u %u\n", samples[i].pid, samples[i].smUtil);
    return 0;
}
