/* SPDX-License-Identifier: Apache-2.0 */
/* Linear copies: cuMemcpy*, HtoD/DtoH/DtoD, peer copies and copies to and from arrays. Data moves
 * at once (device memory is host memory); synchronous copies first wait for the default stream's
 * work, as the real driver orders them. */
#include "cuda_internal.h"

/* How a copy is ordered: on which stream, and whether the caller waits for earlier work. */
typedef struct order {
    CUstream stream;
    int per_thread;
    int sync;
} order_t;

#define SYNC_LEGACY  ((order_t){.stream = NULL, .per_thread = 0, .sync = 1})
#define SYNC_PTDS    ((order_t){.stream = NULL, .per_thread = 1, .sync = 1})
#define ASYNC(s, pt) ((order_t){.stream = (s), .per_thread = (pt), .sync = 0})

/* Checks the context and the stream; a synchronous copy waits for the stream's earlier work. */
static CUresult enter(order_t o)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    gsim_cu_stream_t *s;
    result = gsim_cu_stream_resolve(o.stream, o.per_thread, &s);
    if (result == CUDA_SUCCESS && o.sync)
        gsim_cu_stream_wait_idle(s);
    return result;
}

/* A pointer on the device side of a copy: it must lie in device-visible memory. */
static CUresult device_side(CUdeviceptr p, size_t n, void **out)
{
    return gsim_cu_mem_range(p, n, out);
}

/* A pointer of a unified copy: device-visible memory when gpusim knows it, else host memory. */
static CUresult unified_side(CUdeviceptr p, size_t n, void **out)
{
    gsim_cu_alloc_t a;
    if (p == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (gsim_cu_table_find((uintptr_t)p, &a) == 0)
        return gsim_cu_mem_range(p, n, out);
    *out = (void *)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Whether a unified pointer is host memory gpusim does not know (so it is not validated). */
static int unknown_host(CUdeviceptr p)
{
    gsim_cu_alloc_t a;
    return gsim_cu_table_find((uintptr_t)p, &a) != 0;
}

static CUresult copy_linear(CUdeviceptr dst, CUdeviceptr src, size_t n, int dst_dev, int src_dev,
                            order_t o)
{
    CUresult result = enter(o);
    if (result != CUDA_SUCCESS || n == 0)
        return result;
    void *d, *s;
    result = dst_dev ? device_side(dst, n, &d) : unified_side(dst, n, &d);
    if (result == CUDA_SUCCESS)
        result = src_dev ? device_side(src, n, &s) : unified_side(src, n, &s);
    if (result != CUDA_SUCCESS)
        return result;
    int host_side = (!dst_dev && unknown_host(dst)) || (!src_dev && unknown_host(src));
    return gsim_cu_copy_bytes(d, s, n, host_side);
}

static CUresult copy_htod(CUdeviceptr dst, const void *src, size_t n, order_t o)
{
    if (src == NULL && n > 0)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_VALUE);
    return copy_linear(dst, (CUdeviceptr)(uintptr_t)src, n, 1, 0, o);
}

static CUresult copy_dtoh(void *dst, CUdeviceptr src, size_t n, order_t o)
{
    if (dst == NULL && n > 0)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_VALUE);
    return copy_linear((CUdeviceptr)(uintptr_t)dst, src, n, 0, 1, o);
}

#define UNIFIED 0
#define DEVICE  1

GSIM_CU_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy_linear(dst, src, ByteCount, UNIFIED, UNIFIED, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy_linear(dst, src, ByteCount, UNIFIED, UNIFIED, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                   CUstream hStream)
{
    return copy_linear(dst, src, ByteCount, UNIFIED, UNIFIED, ASYNC(hStream, 0));
}

GSIM_CU_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                        CUstream hStream)
{
    return copy_linear(dst, src, ByteCount, UNIFIED, UNIFIED, ASYNC(hStream, 1));
}

GSIM_CU_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy_htod(dstDevice, srcHost, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t ByteCount)
{
    return copy_htod(dstDevice, srcHost, ByteCount, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t ByteCount, CUstream hStream)
{
    return copy_htod(dstDevice, srcHost, ByteCount, ASYNC(hStream, 0));
}

GSIM_CU_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                               size_t ByteCount, CUstream hStream)
{
    return copy_htod(dstDevice, srcHost, ByteCount, ASYNC(hStream, 1));
}

GSIM_CU_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy_dtoh(dstHost, srcDevice, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy_dtoh(dstHost, srcDevice, ByteCount, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                          CUstream hStream)
{
    return copy_dtoh(dstHost, srcDevice, ByteCount, ASYNC(hStream, 0));
}

GSIM_CU_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
                                               size_t ByteCount, CUstream hStream)
{
    return copy_dtoh(dstHost, srcDevice, ByteCount, ASYNC(hStream, 1));
}

GSIM_CU_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy_linear(dstDevice, srcDevice, ByteCount, DEVICE, DEVICE, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                          size_t ByteCount)
{
    return copy_linear(dstDevice, srcDevice, ByteCount, DEVICE, DEVICE, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                          size_t ByteCount, CUstream hStream)
{
    return copy_linear(dstDevice, srcDevice, ByteCount, DEVICE, DEVICE, ASYNC(hStream, 0));
}

GSIM_CU_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                               size_t ByteCount, CUstream hStream)
{
    return copy_linear(dstDevice, srcDevice, ByteCount, DEVICE, DEVICE, ASYNC(hStream, 1));
}

/* ---- peer copies ---- */

static CUresult copy_peer(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src,
                          CUcontext srcContext, size_t n, order_t o)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (gsim_cu_ctx_check(dstContext) != CUDA_SUCCESS ||
        gsim_cu_ctx_check(srcContext) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy_linear(dst, src, n, DEVICE, DEVICE, o);
}

GSIM_CU_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                       CUdeviceptr srcDevice, CUcontext srcContext,
                                       size_t ByteCount)
{
    return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                       CUdeviceptr srcDevice, CUcontext srcContext,
                                       size_t ByteCount, CUstream hStream)
{
    return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, ASYNC(hStream, 0));
}

GSIM_CU_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                            CUdeviceptr srcDevice, CUcontext srcContext,
                                            size_t ByteCount, CUstream hStream)
{
    return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, ASYNC(hStream, 1));
}

/* ---- arrays ---- */

/* Returns the address of bytes [offset, offset + n) of an array's (level 0) data. */
static CUresult array_side(CUarray array, size_t offset, size_t n, unsigned char **out)
{
    unsigned char *data;
    size_t row, rows, depth;
    CUresult result = gsim_cu_array_data(array, &data, &row, &rows, &depth);
    if (result != CUDA_SUCCESS)
        return result;
    size_t total = row * rows * depth;
    if (offset > total || n > total - offset)
        return CUDA_ERROR_INVALID_VALUE;
    *out = data + offset;
    return CUDA_SUCCESS;
}

typedef struct array_copy {
    CUarray dst_array, src_array;
    size_t dst_offset, src_offset;
    CUdeviceptr dst_dev, src_dev; /* device side when not an array */
    void *dst_host;
    const void *src_host;
    size_t n;
} array_copy_t;

static CUresult resolve_dst(const array_copy_t *c, void **d)
{
    if (c->dst_array != NULL) {
        unsigned char *p;
        CUresult result = array_side(c->dst_array, c->dst_offset, c->n, &p);
        *d = p;
        return result;
    }
    if (c->dst_host != NULL) {
        *d = c->dst_host;
        return CUDA_SUCCESS;
    }
    return device_side(c->dst_dev, c->n, d);
}

static CUresult resolve_src(const array_copy_t *c, const void **s)
{
    if (c->src_array != NULL) {
        unsigned char *p;
        CUresult result = array_side(c->src_array, c->src_offset, c->n, &p);
        *s = p;
        return result;
    }
    if (c->src_host != NULL) {
        *s = c->src_host;
        return CUDA_SUCCESS;
    }
    void *p;
    CUresult result = device_side(c->src_dev, c->n, &p);
    *s = p;
    return result;
}

static CUresult copy_array(const array_copy_t *c, order_t o)
{
    CUresult result = enter(o);
    if (result != CUDA_SUCCESS)
        return result;
    void *d;
    const void *s;
    result = resolve_dst(c, &d);
    if (result == CUDA_SUCCESS)
        result = resolve_src(c, &s);
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_copy_bytes(d, s, c->n, c->dst_host != NULL || c->src_host != NULL);
}

static CUresult htoa(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t n, order_t o)
{
    if (srcHost == NULL)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_VALUE);
    array_copy_t c = {.dst_array = dstArray, .dst_offset = dstOffset, .src_host = srcHost, .n = n};
    if (dstArray == NULL)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_HANDLE);
    return copy_array(&c, o);
}

static CUresult atoh(void *dstHost, CUarray srcArray, size_t srcOffset, size_t n, order_t o)
{
    if (dstHost == NULL)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_VALUE);
    if (srcArray == NULL)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_HANDLE);
    array_copy_t c = {.src_array = srcArray, .src_offset = srcOffset, .dst_host = dstHost, .n = n};
    return copy_array(&c, o);
}

static CUresult dtoa(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t n, order_t o)
{
    if (dstArray == NULL)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_HANDLE);
    array_copy_t c = {.dst_array = dstArray, .dst_offset = dstOffset, .src_dev = srcDevice, .n = n};
    return copy_array(&c, o);
}

static CUresult atod(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t n, order_t o)
{
    if (srcArray == NULL)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_HANDLE);
    array_copy_t c = {.src_array = srcArray, .src_offset = srcOffset, .dst_dev = dstDevice, .n = n};
    return copy_array(&c, o);
}

static CUresult atoa(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                     size_t n, order_t o)
{
    if (dstArray == NULL || srcArray == NULL)
        return gsim_cu_first_error(enter(o), CUDA_ERROR_INVALID_HANDLE);
    array_copy_t c = {.dst_array = dstArray,
                      .dst_offset = dstOffset,
                      .src_array = srcArray,
                      .src_offset = srcOffset,
                      .n = n};
    return copy_array(&c, o);
}

GSIM_CU_API CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                     size_t ByteCount)
{
    return htoa(dstArray, dstOffset, srcHost, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                          size_t ByteCount)
{
    return htoa(dstArray, dstOffset, srcHost, ByteCount, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                          size_t ByteCount, CUstream hStream)
{
    return htoa(dstArray, dstOffset, srcHost, ByteCount, ASYNC(hStream, 0));
}

GSIM_CU_API CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset,
                                               const void *srcHost, size_t ByteCount,
                                               CUstream hStream)
{
    return htoa(dstArray, dstOffset, srcHost, ByteCount, ASYNC(hStream, 1));
}

GSIM_CU_API CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount)
{
    return atoh(dstHost, srcArray, srcOffset, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyAtoH_v2_ptds(void *dstHost, CUarray srcArray, size_t srcOffset,
                                          size_t ByteCount)
{
    return atoh(dstHost, srcArray, srcOffset, ByteCount, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset,
                                          size_t ByteCount, CUstream hStream)
{
    return atoh(dstHost, srcArray, srcOffset, ByteCount, ASYNC(hStream, 0));
}

GSIM_CU_API CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dstHost, CUarray srcArray, size_t srcOffset,
                                               size_t ByteCount, CUstream hStream)
{
    return atoh(dstHost, srcArray, srcOffset, ByteCount, ASYNC(hStream, 1));
}

GSIM_CU_API CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                                     size_t ByteCount)
{
    return dtoa(dstArray, dstOffset, srcDevice, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                                          size_t ByteCount)
{
    return dtoa(dstArray, dstOffset, srcDevice, ByteCount, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount)
{
    return atod(dstDevice, srcArray, srcOffset, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                                          size_t ByteCount)
{
    return atod(dstDevice, srcArray, srcOffset, ByteCount, SYNC_PTDS);
}

GSIM_CU_API CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                     size_t srcOffset, size_t ByteCount)
{
    return atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, SYNC_LEGACY);
}

GSIM_CU_API CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                          size_t srcOffset, size_t ByteCount)
{
    return atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, SYNC_PTDS);
}
