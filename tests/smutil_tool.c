/* Test helper: the SM share each process of a GPU gets, as NVML reports it.
 *
 *   gs-smutil GPU SAMPLES   prints "PID SMUTIL" per process, one line each:
 *                           the median over SAMPLES one-second samples of
 *                           nvmlDeviceGetProcessUtilization's smUtil
 * (NVML from the dynamic linker's path: gpusim's in the tests). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpushare/nvml_abi.h"

#define MAX_PROCS   16
#define MAX_SAMPLES 30

typedef struct proc {
    unsigned pid;
    unsigned n;
    unsigned sm[MAX_SAMPLES];
} proc_t;

static int cmp_uint(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

static proc_t *find(proc_t *procs, unsigned *n, unsigned pid)
{
    for (unsigned i = 0; i < *n; i++) {
        if (procs[i].pid == pid)
            return &procs[i];
    }
    if (*n == MAX_PROCS)
        return NULL;
    procs[*n].pid = pid;
    procs[*n].n = 0;
    return &procs[(*n)++];
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gs-smutil GPU SAMPLES\n");
        return 2;
    }
    unsigned index = (unsigned)atoi(argv[1]), samples = (unsigned)atoi(argv[2]);
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (lib == NULL || samples == 0 || samples > MAX_SAMPLES) {
        fprintf(stderr, "gs-smutil: %s\n", lib == NULL ? dlerror() : "1 to 30 samples");
        return 1;
    }
    __typeof__(&nvmlInit_v2) init = (__typeof__(&nvmlInit_v2))dlsym(lib, "nvmlInit_v2");
    __typeof__(&nvmlDeviceGetHandleByIndex_v2) handle =
        (__typeof__(&nvmlDeviceGetHandleByIndex_v2))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    __typeof__(&nvmlDeviceGetProcessUtilization) util =
        (__typeof__(&nvmlDeviceGetProcessUtilization))dlsym(lib, "nvmlDeviceGetProcessUtilization");
    nvmlDevice_t dev;
    if (init == NULL || handle == NULL || util == NULL || init() != NVML_SUCCESS ||
        handle(index, &dev) != NVML_SUCCESS) {
        fprintf(stderr, "gs-smutil: cannot open GPU %u through NVML\n", index);
        return 1;
    }
    proc_t procs[MAX_PROCS];
    unsigned n = 0;
    for (unsigned s = 0; s < samples; s++) {
        struct timespec second = {.tv_sec = 1};
        nanosleep(&second, NULL);
        nvmlProcessUtilizationSample_t buf[MAX_PROCS];
        unsigned count = MAX_PROCS;
        if (util(dev, buf, &count, 0) != NVML_SUCCESS)
            continue;
        for (unsigned k = 0; k < count; k++) {
            proc_t *p = find(procs, &n, buf[k].pid);
            if (p != NULL)
                p->sm[p->n++] = buf[k].smUtil;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        qsort(procs[i].sm, procs[i].n, sizeof(unsigned), cmp_uint);
        printf("%u %u\n", procs[i].pid, procs[i].sm[procs[i].n / 2]);
    }
    return 0;
}
