/* SPDX-License-Identifier: Apache-2.0 */
/* What a container's lease gives CUDA: prints "total T free F filled N oom O" for device 0, where
 * T and F are cuMemGetInfo's, N the bytes allocated in 2 MiB blocks until the first refusal and O
 * 1 when that refusal was CUDA_ERROR_OUT_OF_MEMORY. Built like a user's driver-API program. */
#include <cuda.h>
#include <stdio.h>

#define BLOCK      (2u << 20)
#define MAX_BLOCKS 65536

int main(void)
{
    static CUdeviceptr blocks[MAX_BLOCKS];
    CUcontext ctx;
    size_t free_bytes = 0, total = 0, filled = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate(&ctx, NULL, 0, 0) != CUDA_SUCCESS ||
        cuMemGetInfo(&free_bytes, &total) != CUDA_SUCCESS) {
        printf("no device\n");
        return 1;
    }
    CUresult rc = CUDA_SUCCESS;
    for (int i = 0; i < MAX_BLOCKS && rc == CUDA_SUCCESS; i++) {
        rc = cuMemAlloc(&blocks[i], BLOCK);
        filled += rc == CUDA_SUCCESS ? BLOCK : 0;
    }
    printf("total %zu free %zu filled %zu oom %d\n", total, free_bytes, filled,
           rc == CUDA_ERROR_OUT_OF_MEMORY);
    return 0;
}
