/* A library for the RTLD_NEXT test: defines gs_next_probe and looks up the next one itself. */
#include <dlfcn.h>

int gs_next_probe(void);
void *gs_next_probe_lookup_from_library(void);

int gs_next_probe(void)
{
    return 2;
}

/* dlsym(RTLD_NEXT) from here must not find this library's own definition. */
void *gs_next_probe_lookup_from_library(void)
{
    return dlsym(RTLD_NEXT, "gs_next_probe");
}
