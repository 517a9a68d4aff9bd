/* SPDX-License-Identifier: Apache-2.0 */
/* Devices: enumeration, names, UUIDs, PCI ids, memory size and the attributes a runtime queries,
 * with values of the real GPU models. */
#include "cuda_internal.h"

#include <stdio.h>
#include <string.h>

/* What gpu-models.csv does not carry: per-family figures from NVIDIA's data sheets (the compute
 * capability: gsim_model_cc). */
typedef struct model_spec {
    const char *prefix;
    int clock_khz, mem_clock_khz, bus_width;
    int l2_bytes, smem_per_sm, smem_optin, threads_per_sm, blocks_per_sm;
} model_spec_t;

static const model_spec_t specs[] = {
    {"H100", 1980000, 2619000, 5120, 52428800, 233472, 232448, 2048, 32},
    {"H200", 1980000, 3201000, 6144, 52428800, 233472, 232448, 2048, 32},
    {"A100", 1410000, 1593000, 5120, 41943040, 167936, 166912, 2048, 32},
    {"A30", 1440000, 1215000, 3072, 25165824, 167936, 166912, 2048, 32},
    {"L4", 2040000, 6251000, 192, 50331648, 102400, 101376, 1536, 24},
    {"T4", 1590000, 5001000, 256, 4194304, 65536, 65536, 1024, 16},
    {"V100", 1530000, 877000, 4096, 6291456, 98304, 98304, 2048, 32},
};

static const model_spec_t *spec_of(const gsim_cu_device_t *d)
{
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        size_t len = strlen(specs[i].prefix);
        if (strncmp(d->model->name, specs[i].prefix, len) == 0 && d->model->name[len] == '-')
            return &specs[i];
    }
    return &specs[2]; /* an unknown model looks like an A100 */
}

void gsim_cu_device_describe_model(gsim_cu_device_t *d)
{
    gsim_model_cc(d->model, &d->cc_major, &d->cc_minor);
}

/* Returns the device for a query, checking initialisation and the ordinal. */
static CUresult device_arg(CUdevice dev, const gsim_cu_device_t **out)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    *out = gsim_cu_device(dev);
    return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

GSIM_CU_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(device);
    if (gsim_cu_device(ordinal) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetCount(int *count)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(count);
    *count = gsim_cu_device_count();
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    if (name == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", d->name);
    return CUDA_SUCCESS;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Converts "GPU-8d1e...-..." (any prefix) to the 16 UUID bytes, a digit at a time (a few
 * hundred instructions, as cheap as the driver's copy of its own bytes is meant to be). */
void gsim_cu_uuid_bytes(const char *text, CUuuid *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = strchr(text, '-');
    p = p != NULL ? p + 1 : text;
    for (int n = 0; *p != '\0' && n < 32; p++) {
        int v = hex_digit(*p);
        if (v < 0)
            continue;
        out->bytes[n / 2] = (char)(out->bytes[n / 2] | (char)(n % 2 == 0 ? v << 4 : v));
        n++;
    }
}

GSIM_CU_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(uuid);
    gsim_cu_uuid_bytes(d->parent_uuid, uuid);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(uuid);
    gsim_cu_uuid_bytes(d->uuid, uuid);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(bytes);
    *bytes = d->total_bytes;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    if (pciBusId == NULL || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "%04X:%02X:%02X.0", d->pci_domain, d->pci_bus, d->pci_device);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (dev == NULL || pciBusId == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned dom = 0, bus = 0, device = 0, fn = 0;
    if (sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &device, &fn) != 4) {
        dom = 0;
        if (sscanf(pciBusId, "%x:%x.%x", &bus, &device, &fn) != 3)
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 0; i < gsim_cu_device_count(); i++) {
        const gsim_cu_device_t *d = gsim_cu_device(i);
        if (d->pci_domain == dom && d->pci_bus == bus && d->pci_device == device && fn == 0) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

/* ---- attributes ---- */

/* Attributes whose value is the same on every simulated model. */
typedef struct fixed_attr {
    CUdevice_attribute attr;
    int value;
} fixed_attr_t;

static const fixed_attr_t fixed[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT, 65536},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER, 1},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE, 8192},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE, 8192},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE, 32768},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS, 2046},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT, 65536},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS, 2046},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 268435456},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, 65000},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH, 2097120},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 1},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR},
    {CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 1},
    {CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, 1},
    {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1},
};

/* Attributes that follow the model or the node. Returns 0 and *value, or -1 when not handled. */
static int model_attribute(const gsim_cu_device_t *d, CUdevice_attribute attr, int *value)
{
    const model_spec_t *s = spec_of(d);
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        *value = s->clock_khz;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *value = (int)d->sms;
        return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        *value = (int)d->pci_bus;
        return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        *value = (int)d->pci_device;
        return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        *value = (int)d->pci_domain;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        *value = s->mem_clock_khz;
        return 0;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        *value = s->bus_width;
        return 0;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        *value = s->l2_bytes;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
        *value = s->l2_bytes / 4 * 3;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        *value = s->threads_per_sm;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        *value = s->blocks_per_sm;
        return 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = d->cc_major;
        return 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *value = d->cc_minor;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        *value = s->smem_per_sm;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *value = s->smem_optin;
        return 0;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
        *value = d->cc_major >= 9;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
        *value = d->cc_major >= 9 ? 4 : 1;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
        *value = d->ordinal;
        return 0;
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
        /* NVIDIA's driver connects to the MPS control daemon when CUDA is initialised
         * (nvidia-cuda-mps-control(1)): the answer does not wait for a context. */
        gsim_cu_mps_connect();
        *value = gsim_cu_mps_active();
        return 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
        *value = (int)gsim_cu_node()->dev[d->domain.dev].compute_mode;
        return 0;
    default:
        return -1;
    }
}

static int attribute_value(const gsim_cu_device_t *d, CUdevice_attribute attr, int *value)
{
    if (model_attribute(d, attr, value) == 0)
        return 0;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        if (fixed[i].attr == attr) {
            *value = fixed[i].value;
            return 0;
        }
    }
    if (attr <= 0 || attr >= CU_DEVICE_ATTRIBUTE_MAX)
        return -1;
    *value = 0; /* a feature gpusim does not have (integrated, TCC, GPUDirect RDMA, ...) */
    return 0;
}

GSIM_CU_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pi);
    return attribute_value(d, attrib, pi) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GSIM_CU_API CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    if (major == NULL || minor == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *major = d->cc_major;
    *minor = d->cc_minor;
    return CUDA_SUCCESS;
}

static int attr_or_zero(const gsim_cu_device_t *d, CUdevice_attribute attr)
{
    int v = 0;
    attribute_value(d, attr, &v);
    return v;
}

GSIM_CU_API CUresult cuDeviceGetProperties(CUdevprop *prop, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(prop);
    prop->maxThreadsPerBlock = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    for (int i = 0; i < 3; i++) {
        prop->maxThreadsDim[i] = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i);
        prop->maxGridSize[i] = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i);
    }
    prop->sharedMemPerBlock = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    prop->totalConstantMemory = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
    prop->SIMDWidth = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    prop->memPitch = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_MAX_PITCH);
    prop->regsPerBlock = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    prop->clockRate = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    prop->textureAlign = attr_or_zero(d, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
    return CUDA_SUCCESS;
}

/* ---- peers and odds and ends ---- */

GSIM_CU_API CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    const gsim_cu_device_t *d = NULL, *p = NULL;
    CUresult result = gsim_cu_first_error(device_arg(dev, &d), device_arg(peerDev, &p));
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(canAccessPeer);
    *canAccessPeer = d->domain.dev != p->domain.dev;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                                             CUdevice srcDevice, CUdevice dstDevice)
{
    const gsim_cu_device_t *s = NULL, *d = NULL;
    CUresult result = gsim_cu_first_error(device_arg(srcDevice, &s), device_arg(dstDevice, &d));
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(value);
    if (srcDevice == dstDevice)
        return CUDA_ERROR_INVALID_DEVICE;
    int peer = s->domain.dev != d->domain.dev;
    switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
        *value = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
        *value = peer;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
        *value = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

GSIM_CU_API CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements,
                                                        CUarray_format format, unsigned numChannels,
                                                        CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    if (maxWidthInElements == NULL || (numChannels != 1 && numChannels != 2 && numChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    size_t elem = gsim_cu_format_bytes(format);
    if (elem == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *maxWidthInElements = ((size_t)1 << 28) / (elem * numChannels) * (elem * numChannels);
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type, CUdevice dev)
{
    const gsim_cu_device_t *d;
    CUresult result = device_arg(dev, &d);
    if (result != CUDA_SUCCESS)
        return result;
    if (pi == NULL || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = 0;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                                CUflushGPUDirectRDMAWritesScope scope)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX ||
        (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
         scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}
