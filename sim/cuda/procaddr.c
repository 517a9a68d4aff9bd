/* SPDX-License-Identifier: Apache-2.0 */
/* cuGetProcAddress and cuGetProcAddress_v2: version-aware lookup of the driver's entry points in
 * the table of exports.h, as NVIDIA's driver does it for the CUDA runtime. */
#include "cuda_internal.h"

#include <cudaProfiler.h>
#include <cudaProfilerTypedefs.h>
#include <cudaTypedefs.h>
#include <string.h>

/* Compile-time ABI check: each exported symbol must have the type NVIDIA gives the function at
 * the version the table claims (PFN_<base>_v<version><suffix> of cudaTypedefs.h). */
#define GSIM_CU_EXPORT(base, symbol, version, suffix)                                              \
    static const PFN_##base##_v##version##suffix check_##symbol __attribute__((unused)) = symbol;
#include "exports.h"
#undef GSIM_CU_EXPORT

typedef struct export_entry {
    const char *base;
    void *fn;
    int version;
    int per_thread;
} export_entry_t;

#define GSIM_CU_EXPORT(base, symbol, version, suffix)                                              \
    {#base, (void *)symbol, version, sizeof(#suffix) > 1},
static const export_entry_t table[] = {
#include "exports.h"
};
#undef GSIM_CU_EXPORT

#define TABLE_SIZE (sizeof(table) / sizeof(table[0]))

/* Picks the newest entry of base not newer than version, in the per-thread or legacy flavour.
 * Sets *known when base exists at all. Returns the entry or NULL. */
static const export_entry_t *pick(const char *base, int version, int per_thread, int *known)
{
    const export_entry_t *best = NULL;
    for (size_t i = 0; i < TABLE_SIZE; i++) {
        const export_entry_t *e = &table[i];
        if (e->base[2] != base[2] || strcmp(e->base, base) != 0)
            continue;
        *known = 1;
        if (e->per_thread == per_thread && e->version <= version &&
            (best == NULL || e->version > best->version))
            best = e;
    }
    return best;
}

static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    const cuuint64_t valid =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (symbol == NULL || pfn == NULL || (flags & ~valid) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    int known = 0;
    const export_entry_t *e = NULL;
    if (strlen(symbol) >= 3) {
        if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
            e = pick(symbol, cudaVersion, 1, &known);
        if (e == NULL)
            e = pick(symbol, cudaVersion, 0, &known);
    }
    if (e != NULL) {
        *pfn = e->fn;
        if (status != NULL)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    if (status != NULL)
        *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

GSIM_CU_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags)
{
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

GSIM_CU_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}
