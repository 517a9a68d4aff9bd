/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA arrays: 1D/2D/3D, layered and cubemap arrays and mipmapped arrays, their descriptors and
 * memory requirements. An array's data is a dense row-major block of host memory; its size
 * (rounded to GSIM_CU_ARRAY_ALIGN) is charged to the node as device memory. */
#include "cuda_internal.h"

#include <string.h>

#define MAX_LEVELS 32
#define ARRAY_FLAGS                                                                                \
    (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |                     \
     CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE | CUDA_ARRAY3D_COLOR_ATTACHMENT |    \
     CUDA_ARRAY3D_DEFERRED_MAPPING)

struct CUarray_st {
    gsim_cu_obj_t obj;
    CUcontext ctx;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    size_t row_bytes, rows, depth; /* the dense layout of the data */
    uint64_t charged;              /* 0 for a level of a mipmapped array */
    unsigned char *data;
    size_t map_len;
    CUmipmappedArray parent;
};

struct CUmipmappedArray_st {
    gsim_cu_obj_t obj;
    CUcontext ctx;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    unsigned int levels;
    uint64_t charged;
    unsigned char *data;
    size_t map_len;
    CUarray level[MAX_LEVELS];
};

_Static_assert(sizeof(struct CUarray_st) <= GSIM_CU_OBJ_SLOT, "array fits a slot");
_Static_assert(sizeof(struct CUmipmappedArray_st) <= GSIM_CU_OBJ_SLOT, "mipmap fits a slot");

size_t gsim_cu_format_bytes(CUarray_format format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 8;
    default:
        return 0;
    }
}

/* The dense layout of an array level: bytes per row, rows, slices. Returns 0 or -1. */
static int layout(const CUDA_ARRAY3D_DESCRIPTOR *d, size_t *row, size_t *rows, size_t *depth)
{
    size_t elem = gsim_cu_format_bytes(d->Format);
    if (elem == 0 || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return -1;
    if (__builtin_mul_overflow(d->Width, elem * d->NumChannels, row))
        return -1;
    *rows = d->Height != 0 ? d->Height : 1;
    *depth = d->Depth != 0 ? d->Depth : 1;
    return 0;
}

static int dims_valid(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (d->Width == 0 || (d->Flags & ~(unsigned)ARRAY_FLAGS) != 0)
        return 0;
    if (d->Height == 0 && d->Depth != 0 && !(d->Flags & CUDA_ARRAY3D_LAYERED))
        return 0;
    if (d->Flags & CUDA_ARRAY3D_CUBEMAP) {
        if (d->Width != d->Height || d->Depth == 0 || d->Depth % 6 != 0 ||
            (!(d->Flags & CUDA_ARRAY3D_LAYERED) && d->Depth != 6))
            return 0;
    }
    if (d->Depth != 0 && !(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)))
        return d->Width <= 16384 && d->Height <= 16384 && d->Depth <= 16384;
    return d->Width <= 131072 && d->Height <= 65536 && d->Depth <= 2048 * 6;
}

/* Bytes charged for one level: its dense size rounded up to the array alignment. */
static int level_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, uint64_t *bytes)
{
    size_t row, rows, depth, total;
    if (!dims_valid(d) || layout(d, &row, &rows, &depth) != 0 ||
        __builtin_mul_overflow(row, rows, &total) || __builtin_mul_overflow(total, depth, &total) ||
        total > (UINT64_C(1) << 44))
        return -1;
    *bytes = (total + GSIM_CU_ARRAY_ALIGN - 1) / GSIM_CU_ARRAY_ALIGN * GSIM_CU_ARRAY_ALIGN;
    return 0;
}

/* Charges bytes on ctx's device and maps them. */
static CUresult backing(CUcontext ctx, uint64_t bytes, unsigned char **data, size_t *map_len)
{
    CUresult result = gsim_cu_charge(ctx->ordinal, bytes);
    if (result != CUDA_SUCCESS)
        return result;
    *data = gsim_cu_backing_alloc(bytes, map_len);
    if (*data == NULL) {
        gsim_cu_uncharge(ctx->ordinal, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUarray array_new(CUcontext ctx, const CUDA_ARRAY3D_DESCRIPTOR *d, CUmipmappedArray parent)
{
    CUarray a = gsim_cu_obj_new(GSIM_CU_ARRAY);
    if (a == NULL)
        return NULL;
    a->ctx = ctx;
    a->desc = *d;
    a->parent = parent;
    layout(d, &a->row_bytes, &a->rows, &a->depth);
    return a;
}

static CUresult array_create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    uint64_t bytes;
    if (pHandle == NULL || d == NULL || level_bytes(d, &bytes) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUarray a = array_new(ctx, d, NULL);
    if (a == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    result = backing(ctx, bytes, &a->data, &a->map_len);
    if (result != CUDA_SUCCESS) {
        gsim_cu_obj_free(a);
        return result;
    }
    a->charged = bytes;
    *pHandle = a;
    return CUDA_SUCCESS;
}

static void array_free(CUarray a)
{
    if (a->parent == NULL) {
        gsim_cu_backing_free((uintptr_t)a->data, a->map_len);
        gsim_cu_uncharge(a->ctx->ordinal, a->charged);
    }
    gsim_cu_obj_free(a);
}

static CUDA_ARRAY3D_DESCRIPTOR from_2d(const CUDA_ARRAY_DESCRIPTOR *d)
{
    return (CUDA_ARRAY3D_DESCRIPTOR){
        .Width = d->Width, .Height = d->Height, .Format = d->Format, .NumChannels = d->NumChannels};
}

GSIM_CU_API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    if (pAllocateArray == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR d = from_2d(pAllocateArray);
    return array_create(pHandle, &d);
}

GSIM_CU_API CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    if (pAllocateArray == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = pAllocateArray->Width,
                                 .Height = pAllocateArray->Height,
                                 .Format = pAllocateArray->Format,
                                 .NumChannels = pAllocateArray->NumChannels};
    return array_create(pHandle, &d);
}

GSIM_CU_API CUresult cuArray3DCreate_v2(CUarray *pHandle,
                                        const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    return array_create(pHandle, pAllocateArray);
}

GSIM_CU_API CUresult cuArray3DCreate(CUarray *pHandle,
                                     const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    if (pAllocateArray == NULL)
        return gsim_cu_first_error(gsim_cu_initialized(), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = pAllocateArray->Width,
                                 .Height = pAllocateArray->Height,
                                 .Depth = pAllocateArray->Depth,
                                 .Format = pAllocateArray->Format,
                                 .NumChannels = pAllocateArray->NumChannels,
                                 .Flags = pAllocateArray->Flags};
    return array_create(pHandle, &d);
}

static CUresult array_arg(CUarray a)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(a, GSIM_CU_ARRAY) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GSIM_CU_API CUresult cuArrayDestroy(CUarray hArray)
{
    CUresult result = array_arg(hArray);
    if (result != CUDA_SUCCESS)
        return result;
    if (hArray->parent != NULL)
        return CUDA_ERROR_INVALID_HANDLE; /* a level belongs to its mipmapped array */
    array_free(hArray);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor,
                                             CUarray hArray)
{
    CUresult result = array_arg(hArray);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pArrayDescriptor);
    pArrayDescriptor->Width = hArray->desc.Width;
    pArrayDescriptor->Height = hArray->desc.Height;
    pArrayDescriptor->Format = hArray->desc.Format;
    pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1 *pArrayDescriptor,
                                          CUarray hArray)
{
    CUresult result = array_arg(hArray);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pArrayDescriptor);
    pArrayDescriptor->Width = (unsigned int)hArray->desc.Width;
    pArrayDescriptor->Height = (unsigned int)hArray->desc.Height;
    pArrayDescriptor->Format = hArray->desc.Format;
    pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor,
                                               CUarray hArray)
{
    CUresult result = array_arg(hArray);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pArrayDescriptor);
    *pArrayDescriptor = hArray->desc;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR_v1 *pArrayDescriptor,
                                            CUarray hArray)
{
    CUresult result = array_arg(hArray);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pArrayDescriptor);
    pArrayDescriptor->Width = (unsigned int)hArray->desc.Width;
    pArrayDescriptor->Height = (unsigned int)hArray->desc.Height;
    pArrayDescriptor->Depth = (unsigned int)hArray->desc.Depth;
    pArrayDescriptor->Format = hArray->desc.Format;
    pArrayDescriptor->NumChannels = hArray->desc.NumChannels;
    pArrayDescriptor->Flags = hArray->desc.Flags;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuArrayGetMemoryRequirements(
    CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUarray array, CUdevice device)
{
    CUresult result = array_arg(array);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(memoryRequirements);
    if (gsim_cu_device(device) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    uint64_t bytes = 0;
    level_bytes(&array->desc, &bytes);
    memset(memoryRequirements, 0, sizeof(*memoryRequirements));
    memoryRequirements->size = bytes;
    memoryRequirements->alignment = GSIM_CU_ARRAY_ALIGN;
    return CUDA_SUCCESS;
}

CUresult gsim_cu_array_data(CUarray array, unsigned char **data, size_t *row_bytes, size_t *rows,
                            size_t *depth)
{
    if (!gsim_cu_obj_valid(array, GSIM_CU_ARRAY))
        return CUDA_ERROR_INVALID_HANDLE;
    *data = array->data;
    *row_bytes = array->row_bytes;
    *rows = array->rows;
    *depth = array->depth;
    return CUDA_SUCCESS;
}

/* ---- mipmapped arrays ---- */

static size_t halve(size_t dim, unsigned int level)
{
    if (dim == 0)
        return 0;
    size_t v = level < 64 ? dim >> level : 0;
    return v != 0 ? v : 1;
}

static CUDA_ARRAY3D_DESCRIPTOR level_desc(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int level)
{
    CUDA_ARRAY3D_DESCRIPTOR l = *d;
    l.Width = halve(d->Width, level);
    l.Height = halve(d->Height, level);
    if (!(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)))
        l.Depth = halve(d->Depth, level);
    return l;
}

static unsigned int max_levels(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    size_t m = d->Width > d->Height ? d->Width : d->Height;
    if (!(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) && d->Depth > m)
        m = d->Depth;
    unsigned int n = 0;
    while (m > 0) {
        n++;
        m >>= 1;
    }
    return n;
}

/* Sums the levels' sizes into *total and their offsets into off[]. Returns 0 or -1. */
static int mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels, uint64_t *off,
                        uint64_t *total)
{
    *total = 0;
    for (unsigned int i = 0; i < levels; i++) {
        CUDA_ARRAY3D_DESCRIPTOR l = level_desc(d, i);
        uint64_t bytes;
        if (level_bytes(&l, &bytes) != 0)
            return -1;
        off[i] = *total;
        *total += bytes;
    }
    return 0;
}

static void mipmap_free(CUmipmappedArray m)
{
    for (unsigned int i = 0; i < m->levels; i++) {
        if (m->level[i] != NULL)
            gsim_cu_obj_free(m->level[i]);
    }
    if (m->data != NULL) {
        gsim_cu_backing_free((uintptr_t)m->data, m->map_len);
        gsim_cu_uncharge(m->ctx->ordinal, m->charged);
    }
    gsim_cu_obj_free(m);
}

static CUresult make_levels(CUmipmappedArray m, const uint64_t *off)
{
    for (unsigned int i = 0; i < m->levels; i++) {
        CUDA_ARRAY3D_DESCRIPTOR l = level_desc(&m->desc, i);
        m->level[i] = array_new(m->ctx, &l, m);
        if (m->level[i] == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
        m->level[i]->data = m->data + off[i];
    }
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                            const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                            unsigned int numMipmapLevels)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (pHandle == NULL || pMipmappedArrayDesc == NULL || numMipmapLevels == 0 ||
        numMipmapLevels > MAX_LEVELS || numMipmapLevels > max_levels(pMipmappedArrayDesc))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t off[MAX_LEVELS], total;
    if (mipmap_bytes(pMipmappedArrayDesc, numMipmapLevels, off, &total) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUmipmappedArray m = gsim_cu_obj_new(GSIM_CU_MIPMAP);
    if (m == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->ctx = ctx;
    m->desc = *pMipmappedArrayDesc;
    result = backing(ctx, total, &m->data, &m->map_len);
    if (result == CUDA_SUCCESS) {
        m->charged = total;
        m->levels = numMipmapLevels;
        result = make_levels(m, off);
    }
    if (result != CUDA_SUCCESS) {
        mipmap_free(m);
        return result;
    }
    *pHandle = m;
    return CUDA_SUCCESS;
}

static CUresult mipmap_arg(CUmipmappedArray m)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(m, GSIM_CU_MIPMAP) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GSIM_CU_API CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray,
                                              CUmipmappedArray hMipmappedArray, unsigned int level)
{
    CUresult result = mipmap_arg(hMipmappedArray);
    if (result != CUDA_SUCCESS)
        return result;
    if (pLevelArray == NULL || level >= hMipmappedArray->levels)
        return CUDA_ERROR_INVALID_VALUE;
    *pLevelArray = hMipmappedArray->level[level];
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    CUresult result = mipmap_arg(hMipmappedArray);
    if (result == CUDA_SUCCESS)
        mipmap_free(hMipmappedArray);
    return result;
}

GSIM_CU_API CUresult cuMipmappedArrayGetMemoryRequirements(
    CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements, CUmipmappedArray mipmap, CUdevice device)
{
    CUresult result = mipmap_arg(mipmap);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(memoryRequirements);
    if (gsim_cu_device(device) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    memset(memoryRequirements, 0, sizeof(*memoryRequirements));
    memoryRequirements->size = mipmap->charged;
    memoryRequirements->alignment = GSIM_CU_ARRAY_ALIGN;
    return CUDA_SUCCESS;
}

static void destroy_array_in_ctx(void *obj, void *arg)
{
    CUarray a = obj;
    if (a->ctx == arg && a->parent == NULL)
        array_free(a);
}

static void destroy_mipmap_in_ctx(void *obj, void *arg)
{
    CUmipmappedArray m = obj;
    if (m->ctx == arg)
        mipmap_free(m);
}

void gsim_cu_array_destroy_all(CUcontext ctx)
{
    gsim_cu_obj_foreach(GSIM_CU_MIPMAP, destroy_mipmap_in_ctx, ctx);
    gsim_cu_obj_foreach(GSIM_CU_ARRAY, destroy_array_in_ctx, ctx);
}
