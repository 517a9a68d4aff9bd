/* SPDX-License-Identifier: Apache-2.0 */
/* libgs-bypass-deep.so: the library gs-bypass loads with dlopen(RTLD_DEEPBIND) (issue 34). It
 * needs libcuda.so.1 and calls cuMemAlloc_v2 through its own dynamic relocation; with DEEPBIND,
 * the loader resolves that in the library's own scope (itself, then libcuda.so.1) before the
 * global scope where an LD_PRELOADed shim sits, so the call reaches the driver past the shim. */
#include <cuda.h>

/* Allocates bytes in the current context straight from the driver (the relocation above). */
__attribute__((visibility("default"))) CUresult gs_bypass_deep_alloc(CUdeviceptr *dptr,
                                                                     size_t bytes);

__attribute__((visibility("default"))) CUresult gs_bypass_deep_alloc(CUdeviceptr *dptr,
                                                                     size_t bytes)
{
    return cuMemAlloc(dptr, bytes); /* (cuda.h makes it cuMemAlloc_v2) */
}
