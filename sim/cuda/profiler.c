/* SPDX-License-Identifier: Apache-2.0 */
/* Profiler control: cuProfilerStart and cuProfilerStop succeed and do nothing (gpusim has no
 * profiler), so applications that bracket their measured region still run. */
#include "cuda_internal.h"

#include <cudaProfiler.h>

GSIM_CU_API CUresult cuProfilerInitialize(const char *configFile, const char *outputFile,
                                          CUoutput_mode outputMode)
{
    (void)configFile;
    (void)outputFile;
    if (outputMode != CU_OUT_KEY_VALUE_PAIR && outputMode != CU_OUT_CSV)
        return CUDA_ERROR_INVALID_VALUE;
    return gsim_cu_initialized();
}

GSIM_CU_API CUresult cuProfilerStart(void)
{
    CUcontext ctx;
    return gsim_cu_ctx_current(&ctx);
}

GSIM_CU_API CUresult cuProfilerStop(void)
{
    CUcontext ctx;
    return gsim_cu_ctx_current(&ctx);
}
