/* SPDX-License-Identifier: Apache-2.0 */
/* Context-independent loading: cuLibrary* and cuKernel*. A library keeps its parsed image and
 * loads it as a module into each context that uses it, on first use. */
#include "cuda_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIB_CONTEXTS 16

typedef struct lib_module {
    CUcontext ctx;
    uint32_t ctx_serial;
    uint64_t generation;
    CUmodule mod;
    uint32_t mod_serial;
} lib_module_t;

struct CUlib_st {
    gsim_cu_obj_t obj;
    pthread_mutex_t mu;
    gsim_cu_image_t image;
    CUkernel *kernels;
    size_t n_kernels, cap_kernels;
    lib_module_t mods[LIB_CONTEXTS];
};

struct CUkern_st {
    gsim_cu_obj_t obj;
    CUlibrary lib;
    int64_t duration_ns;
    gsim_cu_fattrs_t attrs;
    char name[GSIM_CU_NAME_MAX];
};

_Static_assert(sizeof(struct CUlib_st) <= GSIM_CU_OBJ_SLOT, "library fits a slot");
_Static_assert(sizeof(struct CUkern_st) <= GSIM_CU_OBJ_SLOT, "kernel fits a slot");

static CUkernel kernel_new(CUlibrary lib, const char *name, int64_t duration_ns)
{
    CUkernel k = gsim_cu_obj_new(GSIM_CU_KERNEL);
    if (k == NULL)
        return NULL;
    k->lib = lib;
    k->duration_ns = duration_ns;
    gsim_cu_fattrs_init(&k->attrs);
    snprintf(k->name, sizeof(k->name), "%s", name);
    return k;
}

static int add_kernel_locked(CUlibrary lib, CUkernel k)
{
    if (lib->n_kernels == lib->cap_kernels) {
        size_t cap = lib->cap_kernels != 0 ? lib->cap_kernels * 2 : 8;
        CUkernel *ks = realloc(lib->kernels, cap * sizeof(*ks));
        if (ks == NULL)
            return -1;
        lib->kernels = ks;
        lib->cap_kernels = cap;
    }
    lib->kernels[lib->n_kernels++] = k;
    return 0;
}

static int mod_alive(const lib_module_t *m)
{
    return m->mod != NULL && gsim_cu_obj_valid(m->mod, GSIM_CU_MODULE) &&
           gsim_cu_obj_serial(m->mod) == m->mod_serial && gsim_cu_obj_valid(m->ctx, GSIM_CU_CTX) &&
           m->ctx->obj.serial == m->ctx_serial && m->ctx->generation == m->generation;
}

static void library_destroy(CUlibrary lib)
{
    for (int i = 0; i < LIB_CONTEXTS; i++) {
        if (mod_alive(&lib->mods[i]))
            gsim_cu_module_destroy(lib->mods[i].mod);
    }
    for (size_t i = 0; i < lib->n_kernels; i++)
        gsim_cu_obj_free(lib->kernels[i]);
    free(lib->kernels);
    gsim_cu_image_free(&lib->image);
    pthread_mutex_destroy(&lib->mu);
    gsim_cu_obj_free(lib);
}

static CUresult library_create(gsim_cu_image_t *image, CUlibrary *out)
{
    CUlibrary lib = gsim_cu_obj_new(GSIM_CU_LIBRARY);
    if (lib == NULL) {
        gsim_cu_image_free(image);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_init(&lib->mu, NULL);
    lib->image = *image;
    memset(image, 0, sizeof(*image));
    for (size_t i = 0; i < lib->image.n_kernels; i++) {
        const gsim_cu_image_kernel_t *ik = &lib->image.kernels[i];
        CUkernel k = kernel_new(lib, ik->name, ik->duration_ns);
        if (k == NULL || add_kernel_locked(lib, k) != 0) {
            if (k != NULL)
                gsim_cu_obj_free(k);
            library_destroy(lib);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    *out = lib;
    return CUDA_SUCCESS;
}

static CUresult load_library(CUlibrary *library, const void *code, size_t max,
                             unsigned int numJitOptions, CUjit_option *jitOptions,
                             void **jitOptionsValues, unsigned int numLibraryOptions,
                             CUlibraryOption *libraryOptions)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (library == NULL || code == NULL || (numJitOptions > 0 && jitOptions == NULL) ||
        (numLibraryOptions > 0 && libraryOptions == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_image_t parsed;
    char err[200];
    int rc = gsim_cu_image_parse(code, max, &parsed, err, sizeof(err));
    if (rc == -EINVAL) {
        gsim_cu_image_report(err, numJitOptions, jitOptions, jitOptionsValues);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    if (rc != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return library_create(&parsed, library);
}

GSIM_CU_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions)
{
    (void)libraryOptionValues;
    return load_library(library, code, SIZE_MAX, numJitOptions, jitOptions, jitOptionsValues,
                        numLibraryOptions, libraryOptions);
}

GSIM_CU_API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                           CUjit_option *jitOptions, void **jitOptionsValues,
                                           unsigned int numJitOptions,
                                           CUlibraryOption *libraryOptions,
                                           void **libraryOptionValues,
                                           unsigned int numLibraryOptions)
{
    (void)libraryOptionValues;
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (library == NULL || fileName == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    char *data = NULL;
    size_t len = 0;
    result = gsim_cu_read_file(fileName, &data, &len);
    if (result != CUDA_SUCCESS)
        return result;
    result = load_library(library, data, len, numJitOptions, jitOptions, jitOptionsValues,
                          numLibraryOptions, libraryOptions);
    free(data);
    return result;
}

static CUresult library_arg(CUlibrary lib)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(lib, GSIM_CU_LIBRARY) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult kernel_arg(CUkernel k)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(k, GSIM_CU_KERNEL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GSIM_CU_API CUresult cuLibraryUnload(CUlibrary library)
{
    CUresult result = library_arg(library);
    if (result == CUDA_SUCCESS)
        library_destroy(library);
    return result;
}

/* Returns the library's module in ctx, loading it on first use. Call with lib->mu held. */
static CUresult module_in_locked(CUlibrary lib, CUcontext ctx, CUmodule *out)
{
    lib_module_t *slot = NULL;
    for (int i = 0; i < LIB_CONTEXTS; i++) {
        lib_module_t *m = &lib->mods[i];
        if (mod_alive(m) && m->ctx == ctx) {
            *out = m->mod;
            return CUDA_SUCCESS;
        }
        if (slot == NULL && !mod_alive(m))
            slot = m;
    }
    if (slot == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gsim_cu_image_t copy;
    if (gsim_cu_image_copy(&lib->image, &copy) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUmodule mod;
    CUresult result = gsim_cu_module_create(ctx, &copy, &mod);
    if (result != CUDA_SUCCESS)
        return result;
    *slot = (lib_module_t){.ctx = ctx,
                           .ctx_serial = ctx->obj.serial,
                           .generation = ctx->generation,
                           .mod = mod,
                           .mod_serial = gsim_cu_obj_serial(mod)};
    *out = mod;
    return CUDA_SUCCESS;
}

static CUresult current_module(CUlibrary lib, CUmodule *out)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    pthread_mutex_lock(&lib->mu);
    result = module_in_locked(lib, ctx, out);
    pthread_mutex_unlock(&lib->mu);
    return result;
}

GSIM_CU_API CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    CUresult result = library_arg(library);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pMod);
    return current_module(library, pMod);
}

GSIM_CU_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    CUresult result = library_arg(library);
    if (result != CUDA_SUCCESS)
        return result;
    if (pKernel == NULL || name == NULL || strlen(name) >= GSIM_CU_NAME_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    result = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&library->mu);
    for (size_t i = 0; i < library->n_kernels; i++) {
        if (strcmp(library->kernels[i]->name, name) == 0) {
            *pKernel = library->kernels[i];
            result = CUDA_SUCCESS;
            break;
        }
    }
    if (result != CUDA_SUCCESS && !library->image.known) {
        CUkernel k = kernel_new(library, name, GSIM_CU_DEFAULT_KERNEL_NS);
        result = CUDA_ERROR_OUT_OF_MEMORY;
        if (k != NULL && add_kernel_locked(library, k) == 0) {
            *pKernel = k;
            result = CUDA_SUCCESS;
        } else if (k != NULL) {
            gsim_cu_obj_free(k);
        }
    }
    pthread_mutex_unlock(&library->mu);
    return result;
}

GSIM_CU_API CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                        const char *name)
{
    CUresult result = library_arg(library);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(name);
    CUmodule mod;
    result = current_module(library, &mod);
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_module_global(mod, name, dptr, bytes);
}

GSIM_CU_API CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    CUresult result = library_arg(lib);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(count);
    *count = (unsigned int)lib->image.n_kernels;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
                                               CUlibrary lib)
{
    CUresult result = library_arg(lib);
    if (result != CUDA_SUCCESS)
        return result;
    if (kernels == NULL || numKernels > lib->image.n_kernels)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < numKernels; i++)
        kernels[i] = lib->kernels[i];
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    CUresult result = kernel_arg(kernel);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pFunc);
    CUmodule mod;
    result = current_module(kernel->lib, &mod);
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_module_function(mod, kernel->name, pFunc);
}

GSIM_CU_API CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    CUresult result = kernel_arg(kernel);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pLib);
    *pLib = kernel->lib;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    CUresult result = kernel_arg(hfunc);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(name);
    *name = hfunc->name;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                          CUdevice dev)
{
    CUresult result = kernel_arg(kernel);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pi);
    if (gsim_cu_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    return gsim_cu_fattrs_get(&kernel->attrs, attrib, dev, pi);
}

GSIM_CU_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                          CUdevice dev)
{
    CUresult result = kernel_arg(kernel);
    if (result != CUDA_SUCCESS)
        return result;
    if (gsim_cu_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    return gsim_cu_fattrs_set(&kernel->attrs, attrib, dev, val);
}

GSIM_CU_API CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    CUresult result = kernel_arg(kernel);
    if (result != CUDA_SUCCESS)
        return result;
    if (gsim_cu_device(dev) == NULL)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    kernel->attrs.cache_config = config;
    return CUDA_SUCCESS;
}

CUresult gsim_cu_kernel_launchable(CUkernel k, gsim_cu_launchable_t *out)
{
    if (!gsim_cu_obj_valid(k, GSIM_CU_KERNEL))
        return CUDA_ERROR_INVALID_HANDLE;
    out->duration_ns = k->duration_ns;
    out->ctx = NULL;
    out->max_dyn_smem = k->attrs.max_dyn_smem;
    return CUDA_SUCCESS;
}
