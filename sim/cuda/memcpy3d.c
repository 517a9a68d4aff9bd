/* SPDX-License-Identifier: Apache-2.0 */
/* 2D and 3D copies: cuMemcpy2D*, cuMemcpy3D* and peer variants, between host memory, device
 * memory and arrays, every row bounds-checked before any byte moves. */
#include "cuda_internal.h"

/* One side of a 3D copy, resolved to host addresses. */
typedef struct side {
    unsigned char *base; /* address of (0, 0, 0) of the side's layout */
    size_t pitch, height;
    int host; /* application host memory gpusim cannot validate */
} side_t;

typedef struct extent {
    size_t x, y, z;            /* the side's offset */
    size_t width, rows, depth; /* the copy's extent: bytes, rows, slices */
} extent_t;

/* Computes the byte range [*start, *end) the copy touches relative to the side's base, checking
 * the layout (pitch and height large enough) and every multiplication. Returns 0 or -1. */
static int span(const side_t *s, const extent_t *e, size_t *start, size_t *end)
{
    size_t sum;
    if (__builtin_add_overflow(e->x, e->width, &sum) ||
        __builtin_add_overflow(e->y, e->rows, &sum) || __builtin_add_overflow(e->z, e->depth, &sum))
        return -1;
    if ((e->rows > 1 || e->depth > 1) && s->pitch < e->width)
        return -1;
    if (e->depth > 1 && (e->y > s->height || e->rows > s->height - e->y))
        return -1;
    size_t first_row, last_row, last_slice, a, b;
    if (__builtin_mul_overflow(e->z, s->height, &a) || __builtin_add_overflow(a, e->y, &first_row))
        return -1;
    if (__builtin_add_overflow(e->z, e->depth - 1, &last_slice) ||
        __builtin_mul_overflow(last_slice, s->height, &a) ||
        __builtin_add_overflow(a, e->y + (e->rows - 1), &last_row))
        return -1;
    if (__builtin_mul_overflow(first_row, s->pitch, &a) || __builtin_add_overflow(a, e->x, start))
        return -1;
    if (__builtin_mul_overflow(last_row, s->pitch, &b) || __builtin_add_overflow(b, e->x, &b) ||
        __builtin_add_overflow(b, e->width, end))
        return -1;
    return 0;
}

static CUresult linear_side(unsigned char *base, int is_device, size_t pitch, size_t height,
                            const extent_t *e, side_t *out)
{
    out->base = base;
    out->pitch = pitch;
    out->height = height != 0 ? height : e->y + e->rows;
    out->host = !is_device;
    size_t start, end;
    if (base == NULL || span(out, e, &start, &end) != 0 || end > UINTPTR_MAX - (uintptr_t)base)
        return CUDA_ERROR_INVALID_VALUE;
    if (!is_device)
        return CUDA_SUCCESS;
    void *p;
    return gsim_cu_mem_range((CUdeviceptr)(uintptr_t)(base + start), end - start, &p);
}

static CUresult array_side(CUarray array, const extent_t *e, side_t *out)
{
    unsigned char *data;
    size_t row, rows, depth;
    CUresult result = gsim_cu_array_data(array, &data, &row, &rows, &depth);
    if (result != CUDA_SUCCESS)
        return result;
    if (e->x > row || e->width > row - e->x || e->y > rows || e->rows > rows - e->y ||
        e->z > depth || e->depth > depth - e->z)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (side_t){.base = data, .pitch = row, .height = rows};
    return CUDA_SUCCESS;
}

/* Resolves one side: its memory type, pointers, pitch and height. */
static CUresult resolve(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray array,
                        size_t pitch, size_t height, const extent_t *e, side_t *out)
{
    gsim_cu_alloc_t a;
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        return linear_side((unsigned char *)(uintptr_t)host, 0, pitch, height, e, out);
    case CU_MEMORYTYPE_DEVICE:
        return linear_side((unsigned char *)(uintptr_t)dev, 1, pitch, height, e, out);
    case CU_MEMORYTYPE_UNIFIED:
        return linear_side((unsigned char *)(uintptr_t)dev,
                           gsim_cu_table_find((uintptr_t)dev, &a) == 0, pitch, height, e, out);
    case CU_MEMORYTYPE_ARRAY:
        return array_side(array, e, out);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult gsim_cu_copy3d(const CUDA_MEMCPY3D_PEER *p)
{
    if (p->srcLOD != 0 || p->dstLOD != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0)
        return CUDA_SUCCESS;
    extent_t se = {p->srcXInBytes, p->srcY, p->srcZ, p->WidthInBytes, p->Height, p->Depth};
    extent_t de = {p->dstXInBytes, p->dstY, p->dstZ, p->WidthInBytes, p->Height, p->Depth};
    side_t s, d;
    CUresult result = resolve(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcPitch,
                              p->srcHeight, &se, &s);
    if (result == CUDA_SUCCESS)
        result = resolve(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstPitch,
                         p->dstHeight, &de, &d);
    if (result != CUDA_SUCCESS)
        return result;
    for (size_t z = 0; z < p->Depth; z++) {
        for (size_t y = 0; y < p->Height; y++) {
            const unsigned char *from =
                s.base + ((se.z + z) * s.height + se.y + y) * s.pitch + se.x;
            unsigned char *to = d.base + ((de.z + z) * d.height + de.y + y) * d.pitch + de.x;
            result = gsim_cu_copy_bytes(to, from, p->WidthInBytes, s.host || d.host);
            if (result != CUDA_SUCCESS)
                return result;
        }
    }
    return CUDA_SUCCESS;
}

static CUDA_MEMCPY3D_PEER from_2d(const CUDA_MEMCPY2D *c)
{
    return (CUDA_MEMCPY3D_PEER){.srcXInBytes = c->srcXInBytes,
                                .srcY = c->srcY,
                                .srcMemoryType = c->srcMemoryType,
                                .srcHost = c->srcHost,
                                .srcDevice = c->srcDevice,
                                .srcArray = c->srcArray,
                                .srcPitch = c->srcPitch,
                                .srcHeight = c->Height + c->srcY,
                                .dstXInBytes = c->dstXInBytes,
                                .dstY = c->dstY,
                                .dstMemoryType = c->dstMemoryType,
                                .dstHost = c->dstHost,
                                .dstDevice = c->dstDevice,
                                .dstArray = c->dstArray,
                                .dstPitch = c->dstPitch,
                                .dstHeight = c->Height + c->dstY,
                                .WidthInBytes = c->WidthInBytes,
                                .Height = c->Height,
                                .Depth = 1};
}

static CUDA_MEMCPY3D_PEER from_3d(const CUDA_MEMCPY3D *c)
{
    return (CUDA_MEMCPY3D_PEER){.srcXInBytes = c->srcXInBytes,
                                .srcY = c->srcY,
                                .srcZ = c->srcZ,
                                .srcLOD = c->srcLOD,
                                .srcMemoryType = c->srcMemoryType,
                                .srcHost = c->srcHost,
                                .srcDevice = c->srcDevice,
                                .srcArray = c->srcArray,
                                .srcPitch = c->srcPitch,
                                .srcHeight = c->srcHeight,
                                .dstXInBytes = c->dstXInBytes,
                                .dstY = c->dstY,
                                .dstZ = c->dstZ,
                                .dstLOD = c->dstLOD,
                                .dstMemoryType = c->dstMemoryType,
                                .dstHost = c->dstHost,
                                .dstDevice = c->dstDevice,
                                .dstArray = c->dstArray,
                                .dstPitch = c->dstPitch,
                                .dstHeight = c->dstHeight,
                                .WidthInBytes = c->WidthInBytes,
                                .Height = c->Height,
                                .Depth = c->Depth};
}

CUresult gsim_cu_copy3d_plain(const CUDA_MEMCPY3D *c)
{
    CUDA_MEMCPY3D_PEER p = from_3d(c);
    return gsim_cu_copy3d(&p);
}

/* Checks the context and stream, waits for earlier work when synchronous, then copies. */
static CUresult run_copy(const CUDA_MEMCPY3D_PEER *p, CUstream hStream, int per_thread, int sync)
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
    return gsim_cu_copy3d(p);
}

static CUresult copy_2d(const CUDA_MEMCPY2D *pCopy, CUstream hStream, int per_thread, int sync)
{
    if (pCopy == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D_PEER p = from_2d(pCopy);
    return run_copy(&p, hStream, per_thread, sync);
}

static CUresult copy_3d(const CUDA_MEMCPY3D *pCopy, CUstream hStream, int per_thread, int sync)
{
    if (pCopy == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    if (pCopy->reserved0 != NULL || pCopy->reserved1 != NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D_PEER p = from_3d(pCopy);
    return run_copy(&p, hStream, per_thread, sync);
}

static CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream, int per_thread,
                             int sync)
{
    if (pCopy == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    if ((pCopy->srcContext != NULL && gsim_cu_ctx_check(pCopy->srcContext) != CUDA_SUCCESS) ||
        (pCopy->dstContext != NULL && gsim_cu_ctx_check(pCopy->dstContext) != CUDA_SUCCESS))
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_CONTEXT);
    return run_copy(pCopy, hStream, per_thread, sync);
}

GSIM_CU_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL, 0, 1);
}

GSIM_CU_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL, 1, 1);
}

GSIM_CU_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL, 0, 1);
}

GSIM_CU_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return copy_2d(pCopy, NULL, 1, 1);
}

GSIM_CU_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy_2d(pCopy, hStream, 0, 0);
}

GSIM_CU_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy_2d(pCopy, hStream, 1, 0);
}

GSIM_CU_API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
    return copy_3d(pCopy, NULL, 0, 1);
}

GSIM_CU_API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    return copy_3d(pCopy, NULL, 1, 1);
}

GSIM_CU_API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy_3d(pCopy, hStream, 0, 0);
}

GSIM_CU_API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy_3d(pCopy, hStream, 1, 0);
}

GSIM_CU_API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return copy_3d_peer(pCopy, NULL, 0, 1);
}

GSIM_CU_API CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
    return copy_3d_peer(pCopy, NULL, 1, 1);
}

GSIM_CU_API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return copy_3d_peer(pCopy, hStream, 0, 0);
}

GSIM_CU_API CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    return copy_3d_peer(pCopy, hStream, 1, 0);
}
