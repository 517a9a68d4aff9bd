/* SPDX-License-Identifier: Apache-2.0 */
/* Test helper: changes a GPU's compute mode or MIG mode through NVML, as an administrator would
 * with nvidia-smi -c / -mig (gpusim's NVML in the tests).
 * usage: gs-nvml-set compute INDEX DEFAULT|PROHIBITED|EXCLUSIVE_PROCESS
 *        gs-nvml-set mig INDEX 0|1 */
#include <stdio.h>
#include <string.h>

#include "gpushare/nvml_abi.h"

static int set_compute(nvmlDevice_t dev, const char *name)
{
    static const struct {
        const char *name;
        nvmlComputeMode_t mode;
    } modes[] = {{"DEFAULT", NVML_COMPUTEMODE_DEFAULT},
                 {"PROHIBITED", NVML_COMPUTEMODE_PROHIBITED},
                 {"EXCLUSIVE_PROCESS", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS}};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(name, modes[i].name) == 0)
            return nvmlDeviceSetComputeMode(dev, modes[i].mode) == NVML_SUCCESS ? 0 : 1;
    }
    return 2;
}

int main(int argc, char **argv)
{
    unsigned index;
    nvmlDevice_t dev;
    if (argc != 4 || sscanf(argv[2], "%u", &index) != 1) {
        fprintf(stderr, "usage: gs-nvml-set compute|mig INDEX VALUE\n");
        return 2;
    }
    if (nvmlInit_v2() != NVML_SUCCESS ||
        nvmlDeviceGetHandleByIndex_v2(index, &dev) != NVML_SUCCESS) {
        fprintf(stderr, "gs-nvml-set: no GPU %u\n", index);
        return 1;
    }
    int result = 2;
    nvmlReturn_t activation;
    if (strcmp(argv[1], "compute") == 0)
        result = set_compute(dev, argv[3]);
    else if (strcmp(argv[1], "mig") == 0 &&
             (strcmp(argv[3], "0") == 0 || strcmp(argv[3], "1") == 0))
        result = nvmlDeviceSetMigMode(dev, argv[3][0] == '1', &activation) == NVML_SUCCESS ? 0 : 1;
    if (result != 0)
        fprintf(stderr, "gs-nvml-set: %s %s %s failed\n", argv[1], argv[2], argv[3]);
    nvmlShutdown();
    return result;
}
