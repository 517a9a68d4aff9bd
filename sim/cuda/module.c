/* SPDX-License-Identifier: Apache-2.0 */
/* Modules and functions: cuModuleLoad*, cuModuleGetFunction/Global, cuFunc* attributes. */
#include "cuda_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CUmod_st {
    gsim_cu_obj_t obj;
    CUcontext ctx;
    pthread_mutex_t mu;
    gsim_cu_image_t image;
    CUdeviceptr *globals;  /* per image global */
    CUfunction *functions; /* known image: per kernel; opaque image: created on demand */
    size_t n_functions, cap_functions;
};

struct CUfunc_st {
    gsim_cu_obj_t obj;
    CUmodule module;
    int64_t duration_ns;
    gsim_cu_fattrs_t attrs;
    char name[GSIM_CU_NAME_MAX];
};

_Static_assert(sizeof(struct CUmod_st) <= GSIM_CU_OBJ_SLOT, "module fits a slot");
_Static_assert(sizeof(struct CUfunc_st) <= GSIM_CU_OBJ_SLOT, "function fits a slot");

/* ---- function attributes (shared with library kernels) ---- */

void gsim_cu_fattrs_init(gsim_cu_fattrs_t *a)
{
    memset(a, 0, sizeof(*a));
    a->max_dyn_smem = 49152;
    a->carveout = -1;
    a->cache_config = CU_FUNC_CACHE_PREFER_NONE;
    a->shmem_config = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
}

static int smem_optin(int ordinal)
{
    int v = 49152;
    cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, ordinal);
    return v;
}

CUresult gsim_cu_fattrs_get(const gsim_cu_fattrs_t *a, CUfunction_attribute attrib, int ordinal,
                            int *value)
{
    const gsim_cu_device_t *d = gsim_cu_device(ordinal);
    int cc = d != NULL ? d->cc_major * 10 + d->cc_minor : 80;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *value = 1024;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *value = 32;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *value = cc;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *value = a->max_dyn_smem;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        *value = a->carveout;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        *value = a->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        *value = a->non_portable_cluster;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        *value = a->cluster_policy;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        *value = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult gsim_cu_fattrs_set(gsim_cu_fattrs_t *a, CUfunction_attribute attrib, int ordinal,
                            int value)
{
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || value > smem_optin(ordinal))
            return CUDA_ERROR_INVALID_VALUE;
        a->max_dyn_smem = value;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100)
            return CUDA_ERROR_INVALID_VALUE;
        a->carveout = value;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (value < 0 || value > 16)
            return CUDA_ERROR_INVALID_VALUE;
        a->cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        a->non_portable_cluster = value != 0;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        if (value < 0 || value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
            return CUDA_ERROR_INVALID_VALUE;
        a->cluster_policy = value;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- modules ---- */

static CUfunction function_new(CUmodule mod, const char *name, int64_t duration_ns)
{
    CUfunction f = gsim_cu_obj_new(GSIM_CU_FUNCTION);
    if (f == NULL)
        return NULL;
    f->module = mod;
    f->duration_ns = duration_ns;
    gsim_cu_fattrs_init(&f->attrs);
    snprintf(f->name, sizeof(f->name), "%s", name);
    return f;
}

static int add_function_locked(CUmodule mod, CUfunction f)
{
    if (mod->n_functions == mod->cap_functions) {
        size_t cap = mod->cap_functions != 0 ? mod->cap_functions * 2 : 8;
        CUfunction *fs = realloc(mod->functions, cap * sizeof(*fs));
        if (fs == NULL)
            return -1;
        mod->functions = fs;
        mod->cap_functions = cap;
    }
    mod->functions[mod->n_functions++] = f;
    return 0;
}

static CUresult load_kernels(CUmodule mod)
{
    for (size_t i = 0; i < mod->image.n_kernels; i++) {
        const gsim_cu_image_kernel_t *k = &mod->image.kernels[i];
        CUfunction f = function_new(mod, k->name, k->duration_ns);
        if (f == NULL || add_function_locked(mod, f) != 0) {
            if (f != NULL)
                gsim_cu_obj_free(f);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult load_globals(CUmodule mod)
{
    if (mod->image.n_globals == 0)
        return CUDA_SUCCESS;
    mod->globals = calloc(mod->image.n_globals, sizeof(*mod->globals));
    if (mod->globals == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < mod->image.n_globals; i++) {
        size_t bytes = mod->image.globals[i].bytes;
        CUresult result =
            gsim_cu_mem_alloc(mod->ctx, bytes, GSIM_CU_MEM_DEVICE, mod, &mod->globals[i]);
        if (result != CUDA_SUCCESS)
            return result;
        memset((void *)(uintptr_t)mod->globals[i], 0, bytes);
    }
    return CUDA_SUCCESS;
}

void gsim_cu_module_destroy(CUmodule mod)
{
    for (size_t i = 0; i < mod->n_functions; i++)
        gsim_cu_obj_free(mod->functions[i]);
    for (size_t i = 0; mod->globals != NULL && i < mod->image.n_globals; i++) {
        gsim_cu_alloc_t a;
        if (mod->globals[i] != 0 && gsim_cu_table_remove((uintptr_t)mod->globals[i], &a) == 0)
            gsim_cu_mem_release(&a);
    }
    free(mod->functions);
    free(mod->globals);
    gsim_cu_image_free(&mod->image);
    pthread_mutex_destroy(&mod->mu);
    gsim_cu_obj_free(mod);
}

CUresult gsim_cu_module_create(CUcontext ctx, gsim_cu_image_t *image, CUmodule *out)
{
    CUmodule mod = gsim_cu_obj_new(GSIM_CU_MODULE);
    if (mod == NULL) {
        gsim_cu_image_free(image);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    mod->ctx = ctx;
    mod->image = *image;
    memset(image, 0, sizeof(*image));
    pthread_mutex_init(&mod->mu, NULL);
    CUresult result = load_kernels(mod);
    if (result == CUDA_SUCCESS)
        result = load_globals(mod);
    if (result != CUDA_SUCCESS) {
        gsim_cu_module_destroy(mod);
        return result;
    }
    *out = mod;
    return CUDA_SUCCESS;
}

static void destroy_if_in_ctx(void *obj, void *arg)
{
    CUmodule mod = obj;
    if (mod->ctx == arg)
        gsim_cu_module_destroy(mod);
}

void gsim_cu_module_destroy_all(CUcontext ctx)
{
    gsim_cu_obj_foreach(GSIM_CU_MODULE, destroy_if_in_ctx, ctx);
}

void gsim_cu_image_report(const char *err, unsigned int numOptions, const CUjit_option *options,
                          void *const *optionValues)
{
    char *log = NULL;
    size_t log_size = 0;
    for (unsigned int i = 0; options != NULL && optionValues != NULL && i < numOptions; i++) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
            log = optionValues[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            log_size = (size_t)(uintptr_t)optionValues[i];
    }
    if (log != NULL && log_size > 0)
        snprintf(log, log_size, "gpusim: module image: %s", err);
    else
        fprintf(stderr, "gpusim: module image: %s\n", err);
}

/* Parses an image and loads it into the current context. */
static CUresult load_image(CUmodule *module, const void *image, size_t max, unsigned int numOptions,
                           const CUjit_option *options, void *const *optionValues)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (module == NULL || image == NULL || (numOptions > 0 && (options == NULL)))
        return CUDA_ERROR_INVALID_VALUE;
    gsim_cu_image_t parsed;
    char err[200];
    int rc = gsim_cu_image_parse(image, max, &parsed, err, sizeof(err));
    if (rc == -EINVAL) {
        gsim_cu_image_report(err, numOptions, options, optionValues);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    if (rc != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return gsim_cu_module_create(ctx, &parsed, module);
}

GSIM_CU_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return load_image(module, image, SIZE_MAX, 0, NULL, NULL);
}

GSIM_CU_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                                        unsigned int numOptions, CUjit_option *options,
                                        void **optionValues)
{
    return load_image(module, image, SIZE_MAX, numOptions, options, optionValues);
}

GSIM_CU_API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return load_image(module, fatCubin, SIZE_MAX, 0, NULL, NULL);
}

GSIM_CU_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    CUcontext ctx;
    CUresult result = gsim_cu_ctx_current(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (module == NULL || fname == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    char *data = NULL;
    size_t len = 0;
    result = gsim_cu_read_file(fname, &data, &len);
    if (result != CUDA_SUCCESS)
        return result;
    result = load_image(module, data, len, 0, NULL, NULL);
    free(data);
    return result;
}

static CUresult module_arg(CUmodule hmod)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(hmod, GSIM_CU_MODULE) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GSIM_CU_API CUresult cuModuleUnload(CUmodule hmod)
{
    CUresult result = module_arg(hmod);
    if (result == CUDA_SUCCESS)
        gsim_cu_module_destroy(hmod);
    return result;
}

CUresult gsim_cu_module_function(CUmodule mod, const char *name, CUfunction *out)
{
    CUresult result = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&mod->mu);
    for (size_t i = 0; i < mod->n_functions; i++) {
        if (strcmp(mod->functions[i]->name, name) == 0) {
            *out = mod->functions[i];
            result = CUDA_SUCCESS;
            break;
        }
    }
    if (result != CUDA_SUCCESS && !mod->image.known) {
        CUfunction f = function_new(mod, name, GSIM_CU_DEFAULT_KERNEL_NS);
        result = CUDA_ERROR_OUT_OF_MEMORY;
        if (f != NULL && add_function_locked(mod, f) == 0) {
            *out = f;
            result = CUDA_SUCCESS;
        } else if (f != NULL) {
            gsim_cu_obj_free(f);
        }
    }
    pthread_mutex_unlock(&mod->mu);
    return result;
}

CUresult gsim_cu_module_global(CUmodule mod, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
    for (size_t i = 0; i < mod->image.n_globals; i++) {
        if (strcmp(mod->image.globals[i].name, name) == 0) {
            if (dptr != NULL)
                *dptr = mod->globals[i];
            if (bytes != NULL)
                *bytes = mod->image.globals[i].bytes;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

GSIM_CU_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult result = module_arg(hmod);
    if (result != CUDA_SUCCESS)
        return result;
    if (hfunc == NULL || name == NULL || strlen(name) >= GSIM_CU_NAME_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    return gsim_cu_module_function(hmod, name, hfunc);
}

GSIM_CU_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                          const char *name)
{
    CUresult result = module_arg(hmod);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(name);
    return gsim_cu_module_global(hmod, name, dptr, bytes);
}

GSIM_CU_API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(mode);
    *mode = CU_MODULE_EAGER_LOADING;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
    CUresult result = module_arg(mod);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(count);
    *count = (unsigned int)mod->image.n_kernels;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
                                                CUmodule mod)
{
    CUresult result = module_arg(mod);
    if (result != CUDA_SUCCESS)
        return result;
    if (functions == NULL || numFunctions > mod->image.n_kernels)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < numFunctions; i++)
        functions[i] = mod->functions[i];
    return CUDA_SUCCESS;
}

/* ---- functions ---- */

static CUresult function_arg(CUfunction f)
{
    CUresult result = gsim_cu_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_obj_valid(f, GSIM_CU_FUNCTION) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult gsim_cu_function_launchable(CUfunction f, CUcontext ctx, gsim_cu_launchable_t *out)
{
    if (gsim_cu_obj_valid(f, GSIM_CU_FUNCTION)) {
        if (f->module->ctx != ctx)
            return CUDA_ERROR_INVALID_HANDLE;
        out->duration_ns = f->duration_ns;
        out->ctx = f->module->ctx;
        out->max_dyn_smem = f->attrs.max_dyn_smem;
        return CUDA_SUCCESS;
    }
    return gsim_cu_kernel_launchable((CUkernel)(void *)f, out);
}

GSIM_CU_API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    CUresult result = function_arg(hfunc);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(pi);
    return gsim_cu_fattrs_get(&hfunc->attrs, attrib, hfunc->module->ctx->ordinal, pi);
}

GSIM_CU_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    CUresult result = function_arg(hfunc);
    if (result != CUDA_SUCCESS)
        return result;
    return gsim_cu_fattrs_set(&hfunc->attrs, attrib, hfunc->module->ctx->ordinal, value);
}

GSIM_CU_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    CUresult result = function_arg(hfunc);
    if (result != CUDA_SUCCESS)
        return result;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    hfunc->attrs.cache_config = config;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
    CUresult result = function_arg(hfunc);
    if (result != CUDA_SUCCESS)
        return result;
    if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
        return CUDA_ERROR_INVALID_VALUE;
    hfunc->attrs.shmem_config = config;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    CUresult result = function_arg(hfunc);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(name);
    *name = hfunc->name;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    CUresult result = function_arg(hfunc);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(hmod);
    *hmod = hfunc->module;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
    CUresult result = function_arg(function);
    if (result != CUDA_SUCCESS)
        return result;
    GSIM_CU_CHECK_PTR(state);
    *state = CU_FUNCTION_LOADING_STATE_LOADED;
    return CUDA_SUCCESS;
}

GSIM_CU_API CUresult cuFuncLoad(CUfunction function)
{
    return function_arg(function);
}
