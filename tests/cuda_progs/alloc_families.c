/* SPDX-License-Identifier: Apache-2.0 */
/* Every allocation family charges the device exactly (cuMemGetInfo), its data round-trips, and
 * every free returns exactly what was charged: linear, pitch, managed, host (not device memory),
 * async and pool allocations, VMM, arrays, mipmapped arrays and graph memory nodes. */
#include <string.h>

#include "check.h"

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    CHECK(cuMemGetInfo(&f, &t));
    return f;
}

/* Fills n bytes of dptr from a pattern and reads them back through the driver. */
static void round_trip(CUdeviceptr dptr, size_t n, unsigned seed)
{
    unsigned char *in = malloc(n), *out = calloc(1, n);
    for (size_t i = 0; i < n; i++)
        in[i] = (unsigned char)(i * 31 + seed);
    CHECK(cuMemcpyHtoD(dptr, in, n));
    CHECK(cuMemcpyDtoH(out, dptr, n));
    CHECK_TRUE(memcmp(in, out, n) == 0);
    free(in);
    free(out);
}

static void linear_pitch_managed(size_t base)
{
    CUdeviceptr a, p, m;
    size_t pitch = 0;
    CHECK(cuMemAlloc(&a, 1 * MIB));
    CHECK_EQ(free_now(), base - MIB);
    CHECK(cuMemAllocPitch(&p, &pitch, 1000, 10, 4));
    CHECK_EQ(pitch, 1024);
    CHECK_EQ(free_now(), base - MIB - 10240);
    CHECK(cuMemAllocManaged(&m, 4 * MIB, CU_MEM_ATTACH_GLOBAL));
    CHECK_EQ(free_now(), base - 5 * MIB - 10240);
    round_trip(a, MIB, 1);
    round_trip(p, 10240, 2);
    /* Managed memory is directly accessible from the host. */
    ((unsigned char *)(uintptr_t)m)[123] = 77;
    unsigned char b = 0;
    CHECK(cuMemcpyDtoH(&b, m + 123, 1));
    CHECK_EQ(b, 77);
    unsigned int is_managed = 0, type = 0;
    CHECK(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 100));
    CHECK_EQ(is_managed, 1);
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CUdeviceptr range_base;
    size_t range_size;
    CHECK(cuMemGetAddressRange(&range_base, &range_size, p + 5000));
    CHECK_EQ(range_base, p);
    CHECK_EQ(range_size, 10240);
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(p));
    CHECK(cuMemFree(m));
    CHECK_EQ(free_now(), base);
}

static void host_memory(size_t base)
{
    void *pinned, *mapped;
    CHECK(cuMemAllocHost(&pinned, 8 * MIB));
    CHECK(cuMemHostAlloc(&mapped, MIB, CU_MEMHOSTALLOC_DEVICEMAP));
    size_t len = 3 * 4096;
    unsigned char *user = aligned_alloc(4096, len);
    CHECK(cuMemHostRegister(user, len, CU_MEMHOSTREGISTER_DEVICEMAP));
    CHECK_EQ(free_now(), base); /* host memory is not device memory */
    CUdeviceptr dev_view;
    CHECK(cuMemHostGetDevicePointer(&dev_view, mapped, 0));
    CHECK_EQ(dev_view, (uintptr_t)mapped);
    unsigned int type = 0, flags = 0;
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)user));
    CHECK_EQ(type, CU_MEMORYTYPE_HOST);
    CHECK(cuMemHostGetFlags(&flags, mapped));
    CHECK_TRUE(flags & CU_MEMHOSTALLOC_DEVICEMAP);
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, len));
    memset(pinned, 0x5a, len);
    CHECK(cuMemcpyHtoD(d, pinned, len));
    CHECK(cuMemcpyDtoH(user, d, len));
    CHECK_EQ(user[len - 1], 0x5a);
    CHECK(cuMemcpy((CUdeviceptr)mapped, d, len < MIB ? len : MIB));
    CHECK_EQ(((unsigned char *)mapped)[7], 0x5a);
    CHECK(cuMemFree(d));
    CHECK(cuMemHostUnregister(user));
    CHECK_RESULT(cuMemHostUnregister(user), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    CHECK(cuMemFreeHost(pinned));
    CHECK(cuMemFreeHost(mapped));
    free(user);
    CHECK_EQ(free_now(), base);
}

static unsigned long long pool_attr(CUmemoryPool pool, CUmemPool_attribute attr)
{
    cuuint64_t v = 0;
    CHECK(cuMemPoolGetAttribute(pool, attr, &v));
    return v;
}

static void async_and_pools(size_t base, CUdevice dev)
{
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a;
    CHECK(cuMemAllocAsync(&a, 2 * MIB, s));
    CHECK_EQ(free_now(), base - 2 * MIB);
    round_trip(a, 2 * MIB, 3);
    CHECK(cuMemFreeAsync(a, s));
    CUmemoryPool def;
    CHECK(cuDeviceGetDefaultMemPool(&def, dev));
    /* Freed memory stays reserved by the pool until the next synchronization trims it. */
    CHECK_EQ(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * MIB);
    CHECK_EQ(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    CHECK_EQ(free_now(), base - 2 * MIB);
    CHECK(cuStreamSynchronize(s));
    CHECK_EQ(free_now(), base);
    CHECK_EQ(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);

    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    props.maxSize = 4 * MIB;
    CUmemoryPool pool;
    CHECK(cuMemPoolCreate(&pool, &props));
    cuuint64_t keep = 8 * MIB;
    CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    CUdeviceptr p1, p2;
    CHECK(cuMemAllocFromPoolAsync(&p1, 3 * MIB, pool, s));
    CHECK_RESULT(cuMemAllocFromPoolAsync(&p2, 2 * MIB, pool, s), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(free_now(), base - 3 * MIB);
    CUmemoryPool owner = NULL;
    CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p1));
    CHECK_TRUE(owner == pool);
    CHECK(cuMemFreeAsync(p1, s));
    CHECK(cuStreamSynchronize(s));
    CHECK_EQ(free_now(), base - 3 * MIB); /* kept: under the release threshold */
    CHECK(cuMemAllocFromPoolAsync(&p2, 3 * MIB, pool, s));
    CHECK_EQ(p2, p1);     /* the cached block is reused */
    CHECK(cuMemFree(p2)); /* cuMemFree of a pool allocation returns it to the pool */
    /* A 1-byte block cached under its 256-byte charge serves a later 256-byte request in full. */
    CUdeviceptr small, big;
    CHECK(cuMemAllocFromPoolAsync(&small, 1, pool, s));
    CHECK(cuMemFreeAsync(small, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemAllocFromPoolAsync(&big, 256, pool, s));
    CHECK_EQ(big, small);
    round_trip(big, 256, 5);
    CHECK(cuMemFreeAsync(big, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemPoolTrimTo(pool, 0));
    CHECK_EQ(free_now(), base);
    CHECK(cuMemPoolDestroy(pool));
    CHECK(cuStreamDestroy(s));
}

static void vmm(size_t base, CUdevice dev)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_EQ(gran, 2 * MIB);
    CUmemGenericAllocationHandle h;
    CHECK(cuMemCreate(&h, 2 * gran, &prop, 0));
    CHECK_EQ(free_now(), base - 4 * MIB);
    CUdeviceptr va, va2;
    CHECK(cuMemAddressReserve(&va, 8 * MIB, 0, 0, 0));
    CHECK(cuMemAddressReserve(&va2, 4 * MIB, 0, 0, 0));
    CHECK_EQ(free_now(), base - 4 * MIB); /* address space is free */
    CHECK(cuMemMap(va + 2 * MIB, 4 * MIB, 0, h, 0));
    CHECK(cuMemMap(va2, 4 * MIB, 0, h, 0));
    CUmemAccessDesc access = {.location = prop.location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemSetAccess(va + 2 * MIB, 4 * MIB, &access, 1));
    CHECK(cuMemSetAccess(va2, 4 * MIB, &access, 1));
    round_trip(va + 2 * MIB, 4 * MIB, 4);
    /* Both mappings show the same physical memory. */
    unsigned char x = 0;
    CHECK(cuMemsetD8(va + 3 * MIB, 0x42, 1));
    CHECK(cuMemcpyDtoH(&x, va2 + MIB, 1));
    CHECK_EQ(x, 0x42);
    unsigned long long flags = 0;
    CHECK(cuMemGetAccess(&flags, &prop.location, va2));
    CHECK_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    /* Unmapped parts of a reservation are not memory. */
    CHECK_RESULT(cuMemcpyHtoD(va, &x, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemRelease(h));
    CHECK_EQ(free_now(), base - 4 * MIB); /* still mapped */
    CHECK(cuMemUnmap(va + 2 * MIB, 4 * MIB));
    CHECK_EQ(free_now(), base - 4 * MIB);
    CHECK(cuMemUnmap(va2, 4 * MIB));
    CHECK_EQ(free_now(), base);
    CHECK(cuMemAddressFree(va, 8 * MIB));
    CHECK(cuMemAddressFree(va2, 4 * MIB));
}

static void arrays(size_t base)
{
    CUDA_ARRAY_DESCRIPTOR d2 = {
        .Width = 100, .Height = 100, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a;
    CHECK(cuArrayCreate(&a, &d2));
    CHECK_EQ(free_now(), base - 40448); /* 40000 bytes rounded up to 512 */
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    CHECK(cuArrayGetMemoryRequirements(&req, a, 0));
    CHECK_EQ(req.size, 40448);
    float in[100], out[100];
    for (int i = 0; i < 100; i++)
        in[i] = (float)i * 0.5f;
    CHECK(cuMemcpyHtoA(a, 400 * 7, in, sizeof(in)));
    CHECK(cuMemcpyAtoH(out, a, 400 * 7, sizeof(out)));
    CHECK_TRUE(memcmp(in, out, sizeof(in)) == 0);

    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 16,
                                  .Height = 16,
                                  .Depth = 16,
                                  .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                  .NumChannels = 4};
    CUarray a3;
    CHECK(cuArray3DCreate(&a3, &d3));
    CHECK_EQ(free_now(), base - 40448 - 16384);
    CUDA_ARRAY3D_DESCRIPTOR back;
    CHECK(cuArray3DGetDescriptor(&back, a3));
    CHECK_EQ(back.Depth, 16);

    CUDA_ARRAY3D_DESCRIPTOR dm = {
        .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUmipmappedArray mm;
    CHECK(cuMipmappedArrayCreate(&mm, &dm, 7));
    /* Levels of 16384, 4096, 1024, 256, 64, 16 and 4 bytes, each rounded up to 512. */
    CHECK_EQ(free_now(), base - 40448 - 16384 - 23552);
    CHECK(cuMipmappedArrayGetMemoryRequirements(&req, mm, 0));
    CHECK_EQ(req.size, 23552);
    CUarray level;
    CHECK(cuMipmappedArrayGetLevel(&level, mm, 1));
    CHECK(cuArrayGetDescriptor(&d2, level));
    CHECK_EQ(d2.Width, 32);
    CHECK_RESULT(cuMipmappedArrayGetLevel(&level, mm, 7), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMipmappedArrayDestroy(mm));
    CHECK(cuArrayDestroy(a3));
    CHECK(cuArrayDestroy(a));
    CHECK_EQ(free_now(), base);
}

static void graph_memory(size_t base, CUdevice dev)
{
    CUgraph g;
    CHECK(cuGraphCreate(&g, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS params;
    memset(&params, 0, sizeof(params));
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = dev;
    params.bytesize = 6 * MIB;
    CUgraphNode alloc, set;
    CHECK(cuGraphAddMemAllocNode(&alloc, g, NULL, 0, &params));
    CHECK_TRUE(params.dptr != 0);
    CUDA_MEMSET_NODE_PARAMS ms = {
        .dst = params.dptr, .value = 9, .elementSize = 1, .width = 6 * MIB, .height = 1};
    CHECK(cuGraphAddMemsetNode(&set, g, &alloc, 1, &ms, NULL));
    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, g, 0));
    CHECK_EQ(free_now(), base); /* nothing until the graph runs */
    CHECK(cuGraphLaunch(exec, NULL));
    CHECK_EQ(free_now(), base - 6 * MIB);
    unsigned char b = 0;
    CHECK(cuMemcpyDtoH(&b, params.dptr + 5 * MIB, 1));
    CHECK_EQ(b, 9);
    /* Launching again while the allocation is live is an error. */
    CHECK_RESULT(cuGraphLaunch(exec, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree(params.dptr));
    CHECK_EQ(free_now(), base);
    CHECK_RESULT(cuMemFree(params.dptr), CUDA_ERROR_INVALID_VALUE);

    /* A graph that frees what it allocates leaves nothing behind. */
    CUgraphNode free_node;
    CHECK(cuGraphAddMemFreeNode(&free_node, g, &set, 1, params.dptr));
    CUgraphExec exec2;
    CHECK(cuGraphInstantiate(&exec2, g, 0));
    CHECK(cuGraphLaunch(exec2, NULL));
    CHECK_EQ(free_now(), base);
    CHECK(cuGraphLaunch(exec2, NULL));
    CHECK_EQ(free_now(), base);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphExecDestroy(exec2));
    CHECK(cuGraphDestroy(g));
    CHECK_EQ(free_now(), base);
}

int main(void)
{
    CHECK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    size_t base = free_now();
    CHECK_EQ(base, H100_TOTAL - H100_CONTEXT); /* the context's own memory */
    linear_pitch_managed(base);
    host_memory(base);
    async_and_pools(base, dev);
    vmm(base, dev);
    arrays(base);
    graph_memory(base, dev);
    /* Releasing the primary context frees whatever it still holds. */
    CUdeviceptr leak;
    CHECK(cuMemAlloc(&leak, 64 * MIB));
    CHECK_EQ(free_now(), base - 64 * MIB);
    CHECK(cuDevicePrimaryCtxRelease(dev));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_EQ(free_now(), base);
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
