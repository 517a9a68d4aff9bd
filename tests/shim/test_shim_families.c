/* SPDX-License-Identifier: Apache-2.0 */
/* Every allocation family stops exactly at the lease's limit and gives it all back after frees;
 * the contexts' own memory counts in the limit. Run under the shim with GPUSHARE_MEMORY_LIMIT=2G
 * on a gpusim H100-80GB (tests/shim.cmake). A plain driver-API program: cuda.h, linked against
 * NVIDIA's stub libcuda. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdio.h>
#include <string.h>

#define MIB   (UINT64_C(1) << 20)
#define LIMIT (UINT64_C(2) << 30)
/* A context's own memory on an H100 (NVML per-process, measured on a real one; gpusim models
 * it), which the shim measures at the context's creation and charges to the lease. */
#define CONTEXT UINT64_C(543162368)
/* What the application can allocate with its primary context in place. */
#define AVAIL (LIMIT - CONTEXT)

#define CU(call) assert_int_equal((call), CUDA_SUCCESS)

static CUcontext ctx;

static size_t free_now(void)
{
    size_t free_bytes = 0, total = 0;
    CU(cuMemGetInfo(&free_bytes, &total));
    assert_int_equal(total, LIMIT);
    return free_bytes;
}

static int setup(void **state)
{
    (void)state;
    CUdevice dev;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != 0)
        return -1;
    return 0;
}

static void test_view(void **state)
{
    (void)state;
    size_t total = 0;
    CU(cuDeviceTotalMem(&total, 0));
    assert_int_equal(total, LIMIT);
    /* The primary context's own memory is the lease's: the application sees what is left. */
    assert_int_equal(free_now(), LIMIT - CONTEXT);
}

static void test_linear(void **state)
{
    (void)state;
    CUdeviceptr a, b, c;
    CU(cuMemAlloc(&a, AVAIL - 4096));
    assert_int_equal(cuMemAlloc(&b, 4097), CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuMemAlloc(&b, 4096));
    assert_int_equal(free_now(), 0);
    assert_int_equal(cuMemAlloc(&c, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuMemFree(a));
    CU(cuMemFree(b));
    assert_int_equal(free_now(), AVAIL);
    /* A free of an unknown pointer passes through to the driver untouched. */
    assert_int_not_equal(cuMemFree((CUdeviceptr)0x1234), CUDA_SUCCESS);
    assert_int_equal(free_now(), AVAIL);
}

static void test_pitch(void **state)
{
    (void)state;
    CUdeviceptr a, b;
    size_t pitch = 0;
    CU(cuMemAllocPitch(&a, &pitch, 4096, AVAIL / 4096 / 2, 4));
    assert_true(pitch >= 4096);
    assert_int_equal(free_now(), AVAIL - pitch * (AVAIL / 4096 / 2));
    size_t rows = free_now() / pitch;
    CU(cuMemAllocPitch(&b, &pitch, 4096, rows, 4));
    CUdeviceptr c;
    size_t p2;
    assert_int_equal(cuMemAllocPitch(&c, &p2, 4096, 1 + free_now() / pitch, 4),
                     CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuMemFree(a));
    CU(cuMemFree(b));
    assert_int_equal(free_now(), AVAIL);
}

static void test_managed(void **state)
{
    (void)state;
    CUdeviceptr a, b;
    CU(cuMemAllocManaged(&a, AVAIL, CU_MEM_ATTACH_GLOBAL));
    assert_int_equal(cuMemAllocManaged(&b, 1, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuMemFree(a));
    assert_int_equal(free_now(), AVAIL);
}

static void test_async_and_pools(void **state)
{
    (void)state;
    CUstream stream;
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b;
    CU(cuMemAllocAsync(&a, AVAIL / 2, stream));
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    CU(cuMemPoolCreate(&pool, &props));
    CU(cuMemAllocFromPoolAsync(&b, AVAIL / 2, pool, stream));
    assert_int_equal(free_now(), 0);
    CUdeviceptr c;
    assert_int_equal(cuMemAllocAsync(&c, 1, stream), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuMemAllocFromPoolAsync(&c, 1, pool, stream), CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuMemFreeAsync(a, stream));
    CU(cuMemFreeAsync(b, stream));
    CU(cuStreamSynchronize(stream));
    assert_int_equal(free_now(), AVAIL);
    CU(cuMemPoolDestroy(pool));
    CU(cuStreamDestroy(stream));
}

static void test_vmm(void **state)
{
    (void)state;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    assert_true(gran > 0 && AVAIL % gran == 0);
    CUmemGenericAllocationHandle h, h2;
    CU(cuMemCreate(&h, AVAIL, &prop, 0));
    assert_int_equal(cuMemCreate(&h2, gran, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr va;
    CU(cuMemAddressReserve(&va, AVAIL, 0, 0, 0));
    CU(cuMemMap(va, AVAIL, 0, h, 0));
    /* Released while mapped: the memory is still in use, so still charged. */
    CU(cuMemRelease(h));
    assert_int_equal(free_now(), 0);
    CU(cuMemUnmap(va, AVAIL));
    assert_int_equal(free_now(), AVAIL);
    CU(cuMemAddressFree(va, AVAIL));
}

/* Creates arrays of one shape until the lease refuses; each takes exactly the driver's stated
 * requirement, and the refusal comes exactly when the next one would not fit. */
static void fill_with_arrays(const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    CUarray arrays[64];
    int n = 0;
    size_t expected_free = AVAIL;
    for (;;) {
        CUresult r = cuArray3DCreate(&arrays[n], desc);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            break;
        CU(r);
        CUDA_ARRAY_MEMORY_REQUIREMENTS req;
        CU(cuArrayGetMemoryRequirements(&req, arrays[n], 0));
        assert_true(req.size > 0 && req.size <= expected_free);
        expected_free -= req.size;
        assert_int_equal(free_now(), expected_free);
        n++;
        assert_true(n < 64);
    }
    assert_true(n >= 1);
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    CU(cuArrayGetMemoryRequirements(&req, arrays[0], 0));
    assert_true(req.size > expected_free);
    for (int i = 0; i < n; i++)
        CU(cuArrayDestroy(arrays[i]));
    assert_int_equal(free_now(), AVAIL);
}

static void test_arrays(void **state)
{
    (void)state;
    CUDA_ARRAY3D_DESCRIPTOR desc2d = {
        .Width = 8192, .Height = 6000, .Depth = 0, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    fill_with_arrays(&desc2d);
    CUDA_ARRAY3D_DESCRIPTOR desc3d = {.Width = 512,
                                      .Height = 512,
                                      .Depth = 200,
                                      .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                      .NumChannels = 4};
    fill_with_arrays(&desc3d);
    /* The 2D constructor too. */
    CUDA_ARRAY_DESCRIPTOR d = {
        .Width = 16384, .Height = 16384, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray a, b;
    CU(cuArrayCreate(&a, &d));
    CUDA_ARRAY_MEMORY_REQUIREMENTS req;
    CU(cuArrayGetMemoryRequirements(&req, a, 0));
    assert_int_equal(free_now(), AVAIL - req.size);
    d.Width = 1;
    d.Height = 1 + (AVAIL - req.size);
    d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    assert_int_equal(cuArrayCreate(&b, &d), CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuArrayDestroy(a));
    assert_int_equal(free_now(), AVAIL);
}

static void test_mipmapped(void **state)
{
    (void)state;
    CUDA_ARRAY3D_DESCRIPTOR desc = {
        .Width = 4096, .Height = 4096, .Depth = 0, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUmipmappedArray arrays[32];
    int n = 0;
    size_t expected_free = AVAIL;
    for (;;) {
        CUresult r = cuMipmappedArrayCreate(&arrays[n], &desc, 13);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            break;
        CU(r);
        CUDA_ARRAY_MEMORY_REQUIREMENTS req;
        CU(cuMipmappedArrayGetMemoryRequirements(&req, arrays[n], 0));
        expected_free -= req.size;
        assert_int_equal(free_now(), expected_free);
        n++;
        assert_true(n < 32);
    }
    assert_true(n >= 2);
    for (int i = 0; i < n; i++)
        CU(cuMipmappedArrayDestroy(arrays[i]));
    assert_int_equal(free_now(), AVAIL);
}

/* A graph with one allocation node of bytes (and a free node when with_free). */
static CUgraphExec graph_with_alloc(size_t bytes, int with_free, CUdeviceptr *dptr)
{
    CUgraph graph;
    CU(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS params;
    memset(&params, 0, sizeof(params));
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    CUgraphNode alloc_node, free_node;
    CU(cuGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &params));
    *dptr = params.dptr;
    if (with_free)
        CU(cuGraphAddMemFreeNode(&free_node, graph, &alloc_node, 1, params.dptr));
    CUgraphExec exec;
    CU(cuGraphInstantiate(&exec, graph, 0));
    CU(cuGraphDestroy(graph));
    return exec;
}

static void test_graph_memory(void **state)
{
    (void)state;
    CUdeviceptr big, small, transient;
    CUgraphExec g1 = graph_with_alloc(AVAIL, 0, &big);
    CUgraphExec g2 = graph_with_alloc(MIB, 0, &small);
    CUgraphExec g3 = graph_with_alloc(MIB, 1, &transient);
    assert_int_equal(free_now(), AVAIL); /* nothing is charged before a launch */
    CU(cuGraphLaunch(g1, NULL));
    CU(cuCtxSynchronize());
    assert_int_equal(free_now(), 0);
    assert_int_equal(cuGraphLaunch(g2, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuGraphLaunch(g3, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuMemFree(big));
    assert_int_equal(free_now(), AVAIL);
    CU(cuGraphLaunch(g3, NULL));
    CU(cuCtxSynchronize());
    assert_int_equal(free_now(), AVAIL);
    CU(cuGraphLaunch(g2, NULL));
    CU(cuCtxSynchronize());
    assert_int_equal(free_now(), AVAIL - MIB);
    CU(cuMemFreeAsync(small, NULL));
    CU(cuCtxSynchronize());
    assert_int_equal(free_now(), AVAIL);
    CU(cuGraphExecDestroy(g1));
    CU(cuGraphExecDestroy(g2));
    CU(cuGraphExecDestroy(g3));
}

static void test_context_destroy_returns_memory(void **state)
{
    (void)state;
    CUcontext own;
    CU(cuCtxCreate(&own, NULL, 0, 0));
    assert_int_equal(free_now(), AVAIL - CONTEXT); /* a second context has memory of its own */
    CUdeviceptr a;
    CU(cuMemAlloc(&a, 256 * MIB));
    assert_int_equal(free_now(), AVAIL - CONTEXT - 256 * MIB);
    CU(cuCtxDestroy(own));
    CU(cuCtxSetCurrent(ctx));
    assert_int_equal(free_now(), AVAIL);
}

/* A context whose own memory does not fit in the lease is refused, and nothing stays charged. */
static void test_context_over_the_limit(void **state)
{
    (void)state;
    CUdeviceptr a;
    CU(cuMemAlloc(&a, AVAIL - CONTEXT + 1));
    CUcontext other = (CUcontext)1;
    assert_int_equal(cuCtxCreate(&other, NULL, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_null(other);
    CUcontext cur = NULL;
    CU(cuCtxGetCurrent(&cur));
    assert_ptr_equal(cur, ctx); /* the refused context is gone from the stack too */
    assert_int_equal(free_now(), CONTEXT - 1);
    CU(cuMemFree(a));
    CU(cuCtxCreate(&other, NULL, 0, 0));
    assert_int_equal(free_now(), AVAIL - CONTEXT);
    CU(cuCtxDestroy(other));
    CU(cuCtxSetCurrent(ctx));
    assert_int_equal(free_now(), AVAIL);
}

/* Released while mapped, the memory is still in use: destroying an unrelated context must not
 * make the shim forget it; a retained handle holds it past the unmap until its own release. */
static void test_vmm_references(void **state)
{
    (void)state;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h, again;
    CUdeviceptr va, p;
    const size_t size = AVAIL - CONTEXT; /* room left for the other context */
    CU(cuMemCreate(&h, size, &prop, 0));
    CU(cuMemAddressReserve(&va, size, 0, 0, 0));
    CU(cuMemMap(va, size, 0, h, 0));
    CU(cuMemRelease(h));
    CUcontext other;
    CU(cuCtxCreate(&other, NULL, 0, 0));
    assert_int_equal(free_now(), 0);
    CU(cuCtxDestroy(other));
    CU(cuCtxSetCurrent(ctx));
    assert_int_equal(free_now(), CONTEXT);
    assert_int_equal(cuMemAlloc(&p, CONTEXT + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU(cuMemRetainAllocationHandle(&again, (void *)va));
    assert_true(again == h);
    CU(cuMemUnmap(va, size));
    assert_int_equal(free_now(), CONTEXT); /* the retained reference still holds it */
    CU(cuMemRelease(again));
    assert_int_equal(free_now(), AVAIL);
    CU(cuMemAddressFree(va, size));
}

/* A graph with many allocations all freed inside it costs nothing after each launch. */
static void test_graph_many_free_nodes(void **state)
{
    (void)state;
    enum { PAIRS = 70 };
    CUgraph graph;
    CU(cuGraphCreate(&graph, 0));
    CUgraphNode prev = NULL;
    for (int i = 0; i < PAIRS; i++) {
        CUDA_MEM_ALLOC_NODE_PARAMS params;
        memset(&params, 0, sizeof(params));
        params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        params.poolProps.location.id = 0;
        params.bytesize = 2 * MIB;
        CUgraphNode alloc_node, free_node;
        CU(cuGraphAddMemAllocNode(&alloc_node, graph, prev ? &prev : NULL, prev ? 1 : 0, &params));
        CU(cuGraphAddMemFreeNode(&free_node, graph, &alloc_node, 1, params.dptr));
        prev = free_node;
    }
    CUgraphExec exec;
    CU(cuGraphInstantiate(&exec, graph, 0));
    for (int launch = 0; launch < 3; launch++) {
        CU(cuGraphLaunch(exec, NULL));
        CU(cuCtxSynchronize());
        assert_int_equal(free_now(), AVAIL);
    }
    CU(cuGraphExecDestroy(exec));
    CU(cuGraphDestroy(graph));
}

/* Relaunching an auto-free graph reallocates its memory in place: charged once, not twice. */
static void test_graph_auto_free_relaunch(void **state)
{
    (void)state;
    CUgraph graph;
    CU(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS params;
    memset(&params, 0, sizeof(params));
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    params.bytesize = AVAIL / 2;
    CUgraphNode node;
    CU(cuGraphAddMemAllocNode(&node, graph, NULL, 0, &params));
    CUgraphExec exec;
    CU(cuGraphInstantiateWithFlags(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    for (int launch = 0; launch < 3; launch++) {
        CU(cuGraphLaunch(exec, NULL));
        CU(cuCtxSynchronize());
        assert_int_equal(free_now(), AVAIL / 2);
    }
    CU(cuMemFree(params.dptr));
    assert_int_equal(free_now(), AVAIL);
    CU(cuGraphExecDestroy(exec));
    CU(cuGraphDestroy(graph));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_pitch),
        cmocka_unit_test(test_managed),
        cmocka_unit_test(test_async_and_pools),
        cmocka_unit_test(test_vmm),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_mipmapped),
        cmocka_unit_test(test_graph_memory),
        cmocka_unit_test(test_context_destroy_returns_memory),
        cmocka_unit_test(test_context_over_the_limit),
        cmocka_unit_test(test_vmm_references),
        cmocka_unit_test(test_graph_many_free_nodes),
        cmocka_unit_test(test_graph_auto_free_relaunch),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
