/* SPDX-License-Identifier: Apache-2.0 */
/* cuGetExportTable: a driver's private tables of entry points, handed out by UUID (NVIDIA's
 * driver gives its own runtime several, undocumented). gpusim has one, so that the tests can try
 * the bypass a private table offers (issue 34): device memory that no exported symbol, dlsym or
 * cuGetProcAddress reaches, so that no interposer such as gpushare's shim sees it. It is charged
 * to the device like cuMemAlloc's (NVML shows it), which is how gpushared's watchdog finds it.
 *
 * The table "gpusim-allocate\0" (these 16 bytes as the CUuuid): {size_t size; CUresult
 * (*alloc)(CUdeviceptr *, size_t); CUresult (*free)(CUdeviceptr);}, in the current context. Any
 * other UUID is CUDA_ERROR_INVALID_VALUE, as with NVIDIA's driver for one it does not know. */
#include "cuda_internal.h"

#include <string.h>

typedef struct private_alloc_table {
    size_t size;
    CUresult (*alloc)(CUdeviceptr *dptr, size_t bytes);
    CUresult (*free)(CUdeviceptr dptr);
} private_alloc_table_t;

static CUresult private_alloc(CUdeviceptr *dptr, size_t bytes)
{
    return cuMemAlloc_v2(dptr, bytes); /* (bound inside the library: -Bsymbolic-functions) */
}

static CUresult private_free(CUdeviceptr dptr)
{
    return cuMemFree_v2(dptr); /* (bound inside the library: -Bsymbolic-functions) */
}

static const private_alloc_table_t private_alloc_table = {
    .size = sizeof(private_alloc_table_t),
    .alloc = private_alloc,
    .free = private_free,
};

static const char PRIVATE_ALLOC_ID[16] = "gpusim-allocate";

GSIM_CU_API CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    if (ppExportTable == NULL || pExportTableId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    if (memcmp(pExportTableId->bytes, PRIVATE_ALLOC_ID, sizeof(PRIVATE_ALLOC_ID)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = &private_alloc_table;
    return CUDA_SUCCESS;
}
