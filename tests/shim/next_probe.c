/* SPDX-License-Identifier: Apache-2.0 */
/* A library for the RTLD_NEXT test: defines gs_next_probe and looks up the next one itself. */
#include <dlfcn.h>

int gs_next_probe(void);
void *gs_next_probe_lookup_from_library(void);

int gs_next_probe(void)
{
    return 2;
}

/* dlsym(RTLD_NEXT) from here must not find this library's own definition. The volatile keeps
 * the compiler from turning the call into a tail jump, which would make the caller (whose
 * return address glibc looks at) the executable rather than this library. */
void *gs_next_probe_lookup_from_library(void)
{
    void *volatile found = dlsym(RTLD_NEXT, "gs_next_probe");
    return found;
}
