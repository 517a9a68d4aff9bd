/* SPDX-License-Identifier: Apache-2.0 */
/* The one NVML loader (gpushare/nvml_load.h): dlopen, resolving, init; libc and libdl only. */
#include "gpushare/nvml_load.h"

#include "gpushare/error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *gs_nvml_dlopen(const char *library, int flags, char *err, size_t errlen)
{
    void *lib = dlopen(library, flags | RTLD_NOLOAD);
    if (lib == NULL)
        lib = dlopen(library, flags);
    if (lib == NULL)
        gs_fail(err, errlen, GS_ENOENT, "cannot load %s: %s", library, dlerror());
    return lib;
}

int gs_nvml_resolve(void *lib, gs_nvml_lookup_t lookup, const gs_nvml_fn_t *fns, size_t n,
                    const char *library, const char *missing, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        *fns[i].slot = lookup != NULL ? lookup(lib, fns[i].name) : dlsym(lib, fns[i].name);
        if (*fns[i].slot == NULL && fns[i].required)
            return gs_fail(err, errlen, GS_ENOSYS, "%s has no %s: %s", library, fns[i].name,
                           missing);
    }
    return 0;
}

int gs_nvml_fail(const gs_nvml_t *nv, nvmlReturn_t rc, const char *what, char *err, size_t errlen)
{
    return gs_fail(err, errlen, GS_EIO, "NVML %s failed: %s (%d)", what,
                   nv->nvmlErrorString != NULL ? nv->nvmlErrorString(rc) : "?", (int)rc);
}

int gs_nvml_open(gs_nvml_t *nv, const char *library, char *err, size_t errlen)
{
    const gs_nvml_fn_t fns[] = {
#define GS_NVML_ENTRY(name, required) {#name, (void **)&nv->name, required},
        GS_NVML_FUNCTIONS(GS_NVML_ENTRY)
#undef GS_NVML_ENTRY
    };
    memset(nv, 0, sizeof(*nv));
    snprintf(nv->library, sizeof(nv->library), "%s", library);
    nv->lib = gs_nvml_dlopen(library, RTLD_NOW | RTLD_LOCAL, err, errlen);
    if (nv->lib == NULL)
        return GS_ENOENT;
    int result = gs_nvml_resolve(nv->lib, NULL, fns, sizeof(fns) / sizeof(fns[0]), library,
                                 "not an NVML library", err, errlen);
    Dl_info info;
    if (result == 0 && dladdr(*(void **)&nv->nvmlInit_v2, &info) != 0 && info.dli_fname != NULL)
        snprintf(nv->library, sizeof(nv->library), "%s", info.dli_fname);
    nvmlReturn_t rc = result == 0 ? nv->nvmlInit_v2() : NVML_SUCCESS;
    if (result == 0 && rc != NVML_SUCCESS)
        result = gs_nvml_fail(nv, rc, "nvmlInit", err, errlen);
    nv->initialised = result == 0;
    if (result != 0)
        gs_nvml_close(nv);
    return result;
}

void gs_nvml_close(gs_nvml_t *nv)
{
    if (nv->initialised)
        nv->nvmlShutdown();
    if (nv->lib != NULL)
        dlclose(nv->lib);
    nv->initialised = 0;
    nv->lib = NULL;
}

int gs_nvml_more(const gs_nvml_t *nv, const gs_nvml_fn_t *fns, size_t n, const char *missing,
                 char *err, size_t errlen)
{
    return gs_nvml_resolve(nv->lib, NULL, fns, n, nv->library, missing, err, errlen);
}
