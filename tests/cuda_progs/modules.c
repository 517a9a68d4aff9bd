/* SPDX-License-Identifier: Apache-2.0 */
/* Modules and libraries: gpusim images from memory and from files, kernels and globals, opaque
 * images at the default cost, context-independent libraries loaded into each context, function
 * attributes, and kernel durations measured in simulated time. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static const char image[] = "gpusim-module 1\n"
                            "# kernels and a global of a small application\n"
                            "kernel   init   250us   # trailing comment\n"
                            "kernel step 1.5ms\n"
                            "global counter 64K\n";

static float time_kernel(CUfunction f, unsigned n)
{
    CUstream s;
    CUevent e0, e1, e2;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&e0, 0));
    CHECK(cuEventCreate(&e1, 0));
    CHECK(cuEventCreate(&e2, 0));
    /* A lead kernel keeps the stream busy for 200 ms of wall time, so the measured ones run back
     * to back even if this process is descheduled meanwhile. */
    CUmodule lead_mod;
    CUfunction lead;
    CHECK(cuModuleLoadData(&lead_mod, "gpusim-module 1\nkernel lead 2s\n"));
    CHECK(cuModuleGetFunction(&lead, lead_mod, "lead"));
    CHECK(cuLaunchKernel(lead, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuEventRecord(e0, s));
    for (unsigned i = 0; i < n; i++)
        CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuEventRecord(e1, s));
    CHECK(cuStreamSynchronize(s));
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    CHECK(cuEventDestroy(e0));
    CHECK(cuEventDestroy(e1));
    CHECK(cuEventDestroy(e2));
    CHECK(cuStreamDestroy(s));
    CHECK(cuModuleUnload(lead_mod));
    return ms;
}

static void modules(void)
{
    CUmodule m;
    CUfunction init, step, again;
    CHECK(cuModuleLoadData(&m, image));
    CHECK(cuModuleGetFunction(&init, m, "init"));
    CHECK(cuModuleGetFunction(&step, m, "step"));
    CHECK(cuModuleGetFunction(&again, m, "step"));
    CHECK_TRUE(step == again);
    unsigned int count = 0;
    CHECK(cuModuleGetFunctionCount(&count, m));
    CHECK_EQ(count, 2);
    CUfunction all[2];
    CHECK(cuModuleEnumerateFunctions(all, 2, m));
    CHECK_TRUE(all[0] == init && all[1] == step);
    const char *name = NULL;
    CHECK(cuFuncGetName(&name, step));
    CHECK_TRUE(strcmp(name, "step") == 0);
    CUmodule owner;
    CHECK(cuFuncGetModule(&owner, step));
    CHECK_TRUE(owner == m);
    CHECK_TRUE(fabsf(time_kernel(step, 4) - 6.0f) < 0.01f);
    CHECK_TRUE(fabsf(time_kernel(init, 8) - 2.0f) < 0.01f);

    CUdeviceptr counter;
    size_t bytes = 0;
    CHECK(cuModuleGetGlobal(&counter, &bytes, m, "counter"));
    CHECK_EQ(bytes, 64 * 1024);
    unsigned int v = 1;
    CHECK(cuMemcpyDtoH(&v, counter + 60, sizeof(v)));
    CHECK_EQ(v, 0); /* zero-initialised like a __device__ variable */
    CHECK_RESULT(cuMemFree(counter), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuModuleGetGlobal(&counter, &bytes, m, "missing"), CUDA_ERROR_NOT_FOUND);

    int attr = 0;
    CHECK(cuFuncGetAttribute(&attr, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, step));
    CHECK_EQ(attr, 1024);
    CHECK(cuFuncSetAttribute(step, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
    CHECK(cuFuncGetAttribute(&attr, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, step));
    CHECK_EQ(attr, 100000);
    CHECK_RESULT(cuFuncSetAttribute(step, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 20),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(step, 1, 1, 1, 1, 1, 1, 100000, NULL, NULL, NULL)); /* opted in */
    CHECK_RESULT(cuLaunchKernel(init, 1, 1, 1, 1, 1, 1, 100000, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    size_t avail = 0;
    int blocks = 0, min_grid = 0, block = 0;
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, step, 256, 0));
    CHECK_EQ(blocks, 8);
    CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, step, NULL, 0, 0));
    CHECK_TRUE(block > 0 && block <= 1024 && min_grid > 0);
    CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&avail, step, 2, 128));
    CHECK_TRUE(avail > 0);
    CHECK(cuModuleUnload(m));
}

static void from_file(void)
{
    char path[] = "/tmp/gpusim-module.XXXXXX";
    int fd = mkstemp(path);
    CHECK_TRUE(fd >= 0);
    CHECK_TRUE(write(fd, image, sizeof(image) - 1) == (ssize_t)(sizeof(image) - 1));
    close(fd);
    CUmodule m;
    CUfunction f;
    CHECK(cuModuleLoad(&m, path));
    CHECK(cuModuleGetFunction(&f, m, "step"));
    CHECK_RESULT(cuModuleGetFunction(&f, m, "other"), CUDA_ERROR_NOT_FOUND);
    CHECK(cuModuleUnload(m));
    CUlibrary lib;
    CUkernel k;
    CHECK(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
    CHECK(cuLibraryGetKernel(&k, lib, "init"));
    CHECK(cuLibraryUnload(lib));
    unlink(path);
}

static void opaque_images(void)
{
    static const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.5\n"
                              ".target sm_90\n.visible .entry _Z4axpyfPfS_(\n)\n{\n ret;\n}\n";
    CUmodule m;
    CUfunction f;
    CHECK(cuModuleLoadData(&m, ptx));
    CHECK(cuModuleGetFunction(&f, m, "_Z4axpyfPfS_"));
    CHECK(cuModuleGetFunction(&f, m, "anything_at_all"));
    /* The default cost of an unknown kernel is 10 us. */
    CHECK_TRUE(fabsf(time_kernel(f, 100) - 1.0f) < 0.01f);
    unsigned int count = 1;
    CHECK(cuModuleGetFunctionCount(&count, m));
    CHECK_EQ(count, 0);
    CHECK(cuModuleUnload(m));
}

/* A library is loaded once and used from any context; each context gets its own module. */
static void libraries(CUcontext a, CUcontext b)
{
    CUlibrary lib;
    CUkernel step, dflt;
    CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    CHECK(cuLibraryGetKernel(&step, lib, "step"));
    CHECK_RESULT(cuLibraryGetKernel(&dflt, lib, "missing"), CUDA_ERROR_NOT_FOUND);
    unsigned int count = 0;
    CHECK(cuLibraryGetKernelCount(&count, lib));
    CHECK_EQ(count, 2);
    const char *name = NULL;
    CHECK(cuKernelGetName(&name, step));
    CHECK_TRUE(strcmp(name, "step") == 0);
    CUfunction fa, fb;
    CUmodule ma, mb;
    CHECK(cuCtxSetCurrent(a));
    CHECK(cuKernelGetFunction(&fa, step));
    CHECK(cuLibraryGetModule(&ma, lib));
    /* A CUkernel launches directly, cast to CUfunction. */
    CHECK_TRUE(fabsf(time_kernel((CUfunction)step, 2) - 3.0f) < 0.01f);
    CHECK(cuCtxSetCurrent(b));
    CHECK(cuKernelGetFunction(&fb, step));
    CHECK(cuLibraryGetModule(&mb, lib));
    CHECK_TRUE(fa != fb && ma != mb);
    CUdeviceptr ga, gb;
    size_t bytes;
    CHECK(cuLibraryGetGlobal(&gb, &bytes, lib, "counter"));
    CHECK(cuCtxSetCurrent(a));
    CHECK(cuLibraryGetGlobal(&ga, &bytes, lib, "counter"));
    CHECK_TRUE(ga != gb);
    CHECK(cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CHECK_RESULT(cuLaunchKernel(fb, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_HANDLE); /* b's function in a */
    int attr = 0;
    CHECK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536, step, 0));
    CHECK(cuKernelGetAttribute(&attr, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, step, 0));
    CHECK_EQ(attr, 65536);
    CHECK(cuCtxSynchronize());
    CHECK(cuLibraryUnload(lib));
    CHECK_RESULT(cuLaunchKernel((CUfunction)step, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_HANDLE);
}

int main(void)
{
    CHECK(cuInit(0));
    CUcontext a, b;
    CHECK(cuCtxCreate(&b, NULL, 0, 0));
    CHECK(cuCtxCreate(&a, NULL, 0, 0));
    modules();
    from_file();
    opaque_images();
    libraries(a, b);
    size_t f = 0, t = 0;
    CHECK(cuMemGetInfo(&f, &t));
    CHECK(cuCtxDestroy(b));
    CHECK(cuCtxDestroy(a));
    return 0;
}
