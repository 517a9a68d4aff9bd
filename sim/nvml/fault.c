/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's libnvidia-ml: a documented test hook that makes chosen NVML calls fail.
 *
 * GPUSIM_NVML_FAULTS names a file of lines "FUNCTION CODE" (CODE an nvmlReturn_t number, e.g.
 * 999 for NVML_ERROR_UNKNOWN); '#' starts a comment. While a line names a function, every call of
 * it returns CODE and does nothing else. The file is read at each call of a hooked function (the
 * MIG functions), so a test can inject and clear a fault in a running process by writing or
 * removing the file. Unset, the hook costs one getenv per call. NVIDIA's NVML has no such hook:
 * it exists so that the error paths of NVML's users can be tested. */
#include "nvml_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nvmlReturn_t gsim_nvml_fault(const char *function)
{
    const char *path = getenv("GPUSIM_NVML_FAULTS");
    if (path == NULL || path[0] == '\0')
        return NVML_SUCCESS;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NVML_SUCCESS;
    char line[256], name[128];
    nvmlReturn_t result = NVML_SUCCESS;
    while (result == NVML_SUCCESS && fgets(line, sizeof(line), f) != NULL) {
        unsigned code = 0;
        line[strcspn(line, "#")] = '\0';
        if (sscanf(line, "%127s %u", name, &code) == 2 && code != 0 && strcmp(name, function) == 0)
            result = (nvmlReturn_t)code;
    }
    fclose(f);
    return result;
}
