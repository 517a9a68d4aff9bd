/* SPDX-License-Identifier: Apache-2.0 */
/* Graphs: kernel, memcpy, memset, host, empty and event nodes; instantiation (every entry point
 * and version), launch in stream order and simulated time, node queries, destroying nodes. */
#include <math.h>
#include <string.h>

#include "check.h"

static int host_calls;

static void on_host(void *arg)
{
    (void)arg;
    host_calls++;
}

typedef CUresult (*instantiate_v1_t)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);

int main(void)
{
    CHECK(cuInit(0));
    CUcontext ctx;
    CHECK(cuCtxCreate(&ctx, NULL, 0, 0));
    CUmodule m;
    CUfunction k;
    CUfunction gate;
    CHECK(cuModuleLoadData(&m, "gpusim-module 1\nkernel k 40ms\nkernel gate 2s\n"));
    CHECK(cuModuleGetFunction(&k, m, "k"));
    CHECK(cuModuleGetFunction(&gate, m, "gate"));
    CUdeviceptr buf;
    CHECK(cuMemAlloc(&buf, 4096));
    unsigned char host_in[4096], host_out[4096];
    for (int i = 0; i < 4096; i++)
        host_in[i] = (unsigned char)(i ^ 0x5a);

    CUgraph g;
    CUgraphNode copy_in, kern1, kern2, set, host, empty, rec_start, rec_end;
    CUevent e0, e1;
    CHECK(cuEventCreate(&e0, 0));
    CHECK(cuEventCreate(&e1, 0));
    CHECK(cuGraphCreate(&g, 0));
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host_in;
    c.srcPitch = 4096;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = buf;
    c.dstPitch = 4096;
    c.WidthInBytes = 4096;
    c.Height = 1;
    c.Depth = 1;
    CHECK(cuGraphAddMemcpyNode(&copy_in, g, NULL, 0, &c, ctx));
    CHECK(cuGraphAddEventRecordNode(&rec_start, g, &copy_in, 1, e0));
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof(kp));
    kp.func = k;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 128;
    kp.blockDimY = kp.blockDimZ = 1;
    CHECK(cuGraphAddKernelNode(&kern1, g, &rec_start, 1, &kp));
    CHECK(cuGraphAddKernelNode(&kern2, g, &kern1, 1, &kp));
    CHECK(cuGraphAddEventRecordNode(&rec_end, g, &kern2, 1, e1));
    CUDA_MEMSET_NODE_PARAMS ms = {
        .dst = buf + 4000, .value = 0xee, .elementSize = 1, .width = 96, .height = 1};
    CHECK(cuGraphAddMemsetNode(&set, g, &copy_in, 1, &ms, ctx));
    CUDA_HOST_NODE_PARAMS hp = {.fn = on_host, .userData = NULL};
    CUgraphNode deps[2] = {rec_end, set};
    CHECK(cuGraphAddHostNode(&host, g, deps, 2, &hp));
    CHECK(cuGraphAddEmptyNode(&empty, g, &host, 1));
    CUgraphNode bad[2] = {host, (CUgraphNode)(uintptr_t)0x1234};
    CHECK_RESULT(cuGraphAddEmptyNode(&empty, g, bad, 2), CUDA_ERROR_INVALID_VALUE);
    bad[1] = host; /* the same dependency twice */
    CHECK_RESULT(cuGraphAddEmptyNode(&empty, g, bad, 2), CUDA_ERROR_INVALID_VALUE);

    size_t n = 0;
    CHECK(cuGraphGetNodes(g, NULL, &n));
    CHECK_EQ(n, 8);
    CUgraphNode roots[4];
    n = 4;
    CHECK(cuGraphGetRootNodes(g, roots, &n));
    CHECK_EQ(n, 1);
    CHECK_TRUE(roots[0] == copy_in);
    CUgraphNodeType type;
    CHECK(cuGraphNodeGetType(kern2, &type));
    CHECK_EQ(type, CU_GRAPH_NODE_TYPE_KERNEL);
    CUDA_KERNEL_NODE_PARAMS back;
    CHECK(cuGraphKernelNodeGetParams(kern1, &back));
    CHECK_TRUE(back.func == k && back.blockDimX == 128);

    CUgraphExec exec, exec_v1;
    CHECK(cuGraphInstantiate(&exec, g, 0));
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK(cuGetProcAddress("cuGraphInstantiate", &fn, 11000, 0, &st));
    char log[64];
    CHECK(((instantiate_v1_t)fn)(&exec_v1, g, NULL, log, sizeof(log)));
    CUstream s;
    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuGraphLaunch(exec, s));
    /* 200 ms of wall time on the stream: the second launch's kernels then run back to back. */
    CHECK(cuLaunchKernel(gate, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuGraphLaunch(exec_v1, s));
    CHECK(cuStreamSynchronize(s));
    CHECK_EQ(host_calls, 2);
    float ms_elapsed = 0;
    CHECK(cuEventElapsedTime(&ms_elapsed, e0, e1)); /* the second launch's two kernels */
    CHECK_TRUE(fabsf(ms_elapsed - 80.0f) < 0.01f);
    CHECK(cuMemcpyDtoH(host_out, buf, 4096));
    CHECK_TRUE(memcmp(host_out, host_in, 4000) == 0);
    CHECK_EQ(host_out[4000], 0xee);
    CHECK_EQ(host_out[4095], 0xee);

    /* Changing a node's parameters affects later instantiations only. */
    CUDA_MEMSET_NODE_PARAMS got;
    CHECK(cuGraphMemsetNodeGetParams(set, &got));
    CHECK_EQ(got.value, 0xee);
    got.value = 0x11;
    CHECK(cuGraphMemsetNodeSetParams(set, &got));
    CUDA_HOST_NODE_PARAMS hgot;
    CHECK(cuGraphHostNodeGetParams(host, &hgot));
    CHECK_TRUE(hgot.fn == on_host);
    CUevent ev = NULL;
    CHECK(cuGraphEventRecordNodeGetEvent(rec_end, &ev));
    CHECK_TRUE(ev == e1);
    CHECK_RESULT(cuGraphMemsetNodeGetParams(host, &got), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D cgot;
    CHECK(cuGraphMemcpyNodeGetParams(copy_in, &cgot));
    CHECK_TRUE(cgot.srcHost == host_in);
    CUgraphExec exec_new;
    CHECK(cuGraphInstantiateWithFlags(&exec_new, g, 0));
    CHECK(cuGraphLaunch(exec, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(host_out, buf, 4096));
    CHECK_EQ(host_out[4000], 0xee);
    CHECK(cuGraphLaunch(exec_new, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(host_out, buf, 4096));
    CHECK_EQ(host_out[4000], 0x11);
    CHECK(cuGraphExecDestroy(exec_new));
    host_calls -= 2;

    /* Destroying a node removes it and its edges; instantiated graphs keep their copy. */
    CHECK(cuGraphDestroyNode(set));
    CHECK(cuGraphGetNodes(g, NULL, &n));
    CHECK_EQ(n, 7);
    CHECK(cuGraphLaunch(exec, s));
    CHECK(cuStreamSynchronize(s));
    CHECK_EQ(host_calls, 3);
    CHECK_RESULT(cuGraphLaunch((CUgraphExec)(uintptr_t)0x1000, s), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphExecDestroy(exec_v1));
    CHECK(cuGraphDestroy(g));
    CHECK(cuEventDestroy(e0));
    CHECK(cuEventDestroy(e1));
    CHECK(cuStreamDestroy(s));
    CHECK(cuMemFree(buf));
    CHECK(cuModuleUnload(m));
    CHECK(cuCtxDestroy(ctx));
    return 0;
}
