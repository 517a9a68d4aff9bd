/* SPDX-License-Identifier: Apache-2.0 */
/* Memsets: cuMemsetD8/D16/D32 and their 2D and async forms, on device-visible memory. */
#include "cuda_internal.h"

#include <string.h>

static void fill_row(unsigned char *row, unsigned int value, unsigned int elem, size_t width)
{
    if (elem == 1) {
        memset(row, (int)(value & 0xff), width);
        return;
    }
    for (size_t i = 0; i < width; i++) {
        if (elem == 2) {
            uint16_t v = (uint16_t)value;
            memcpy(row + i * 2, &v, 2);
        } else {
            uint32_t v = value;
            memcpy(row + i * 4, &v, 4);
        }
    }
}

CUresult gsim_cu_memset2d(CUdeviceptr dst, size_t pitch, unsigned int value, unsigned int elem,
                          size_t width, size_t height)
{
    if (elem != 1 && elem != 2 && elem != 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    size_t row_bytes, last, span;
    if (dst % elem != 0 || __builtin_mul_overflow(width, (size_t)elem, &row_bytes))
        return CUDA_ERROR_INVALID_VALUE;
    if (height > 1 && pitch < row_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (__builtin_mul_overflow(height - 1, pitch, &last) ||
        __builtin_add_overflow(last, row_bytes, &span))
        return CUDA_ERROR_INVALID_VALUE;
    void *base;
    CUresult result = gsim_cu_mem_range(dst, span, &base);
    if (result != CUDA_SUCCESS)
        return result;
    for (size_t y = 0; y < height; y++)
        fill_row((unsigned char *)base + y * pitch, value, elem, width);
    return CUDA_SUCCESS;
}

static CUresult memset_on(CUstream hStream, int per_thread, int sync, CUdeviceptr dst, size_t pitch,
                          unsigned int value, unsigned int elem, size_t width, size_t height)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_stream_t *s;
    result = gsim_cu_stream_resolve(hStream, per_thread, &s);
    if (result != CUDA_SUCCESS)
        return result;
    if (sync)
        gsim_cu_stream_wait_idle(s);
    return gsim_cu_memset2d(dst, pitch, value, elem, width, height);
}

#define MEMSET_1D(name, type, elem)                                                                \
    GSIM_CU_API CUresult name##_v2(CUdeviceptr dstDevice, type v, size_t N)                        \
    {                                                                                              \
        return memset_on(NULL, 0, 1, dstDevice, N * (elem), v, elem, N, 1);                        \
    }                                                                                              \
    GSIM_CU_API CUresult name##_v2_ptds(CUdeviceptr dstDevice, type v, size_t N)                   \
    {                                                                                              \
        return memset_on(NULL, 1, 1, dstDevice, N * (elem), v, elem, N, 1);                        \
    }                                                                                              \
    GSIM_CU_API CUresult name##Async(CUdeviceptr dstDevice, type v, size_t N, CUstream hStream)    \
    {                                                                                              \
        return memset_on(hStream, 0, 0, dstDevice, N * (elem), v, elem, N, 1);                     \
    }                                                                                              \
    GSIM_CU_API CUresult name##Async_ptsz(CUdeviceptr dstDevice, type v, size_t N,                 \
                                          CUstream hStream)                                        \
    {                                                                                              \
        return memset_on(hStream, 1, 0, dstDevice, N * (elem), v, elem, N, 1);                     \
    }

#define MEMSET_2D(name, type, elem)                                                                \
    GSIM_CU_API CUresult name##_v2(CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width,   \
                                   size_t Height)                                                  \
    {                                                                                              \
        return memset_on(NULL, 0, 1, dstDevice, dstPitch, v, elem, Width, Height);                 \
    }                                                                                              \
    GSIM_CU_API CUresult name##_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, type v,            \
                                        size_t Width, size_t Height)                               \
    {                                                                                              \
        return memset_on(NULL, 1, 1, dstDevice, dstPitch, v, elem, Width, Height);                 \
    }                                                                                              \
    GSIM_CU_API CUresult name##Async(CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width, \
                                     size_t Height, CUstream hStream)                              \
    {                                                                                              \
        return memset_on(hStream, 0, 0, dstDevice, dstPitch, v, elem, Width, Height);              \
    }                                                                                              \
    GSIM_CU_API CUresult name##Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, type v,          \
                                          size_t Width, size_t Height, CUstream hStream)           \
    {                                                                                              \
        return memset_on(hStream, 1, 0, dstDevice, dstPitch, v, elem, Width, Height);              \
    }

MEMSET_1D(cuMemsetD8, unsigned char, 1)
MEMSET_1D(cuMemsetD16, unsigned short, 2)
MEMSET_1D(cuMemsetD32, unsigned int, 4)
MEMSET_2D(cuMemsetD2D8, unsigned char, 1)
MEMSET_2D(cuMemsetD2D16, unsigned short, 2)
MEMSET_2D(cuMemsetD2D32, unsigned int, 4)
