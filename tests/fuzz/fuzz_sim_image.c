/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: gpusim's module image parser on arbitrary bytes (not NUL-terminated). A
 * parsed image must be consistent: named entries, no duplicates, durations within bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gsim_cu_image_t image;
    char err[200];
    if (gsim_cu_image_parse(data, size, &image, err, sizeof(err)) != 0)
        return 0;
    for (size_t i = 0; i < image.n_kernels; i++) {
        const gsim_cu_image_kernel_t *k = &image.kernels[i];
        if (k->name[0] == '\0' || k->duration_ns < 0 || gsim_cu_image_kernel(&image, k->name) != k)
            abort();
    }
    for (size_t i = 0; i < image.n_globals; i++) {
        if (image.globals[i].name[0] == '\0' || image.globals[i].bytes == 0)
            abort();
    }
    gsim_cu_image_t copy;
    if (gsim_cu_image_copy(&image, &copy) == 0) {
        if (copy.n_kernels != image.n_kernels || copy.known != image.known)
            abort();
        gsim_cu_image_free(&copy);
    }
    gsim_cu_image_free(&image);
    return 0;
}
