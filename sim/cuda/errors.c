/* SPDX-License-Identifier: Apache-2.0 */
/* Error names and descriptions: cuGetErrorName and cuGetErrorString for every CUresult of cuda.h
 * (the table is generated from cuda.h at build time). */
#include "cuda_internal.h"

GSIM_CU_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    GSIM_CU_CHECK_PTR(pStr);
    switch (error) {
#define GSIM_CU_ERROR(name, text)                                                                  \
    case name:                                                                                     \
        *pStr = #name;                                                                             \
        return CUDA_SUCCESS;
#include "errors_data.h"
#undef GSIM_CU_ERROR
    default:
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

GSIM_CU_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    GSIM_CU_CHECK_PTR(pStr);
    switch (error) {
#define GSIM_CU_ERROR(name, text)                                                                  \
    case name:                                                                                     \
        *pStr = text;                                                                              \
        return CUDA_SUCCESS;
#include "errors_data.h"
#undef GSIM_CU_ERROR
    default:
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}
