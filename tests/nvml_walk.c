/* SPDX-License-Identifier: Apache-2.0 */
/* A third-party NVML tool, as monitoring tools are written: it loads libnvidia-ml.so.1 by name
 * (dlopen), looks up the common entry points by their exported names — the unversioned v1
 * nvmlDeviceGetComputeRunningProcesses among them, as tools built against old headers or
 * binding by name do — calls each on every GPU and prints what they answer. Unsupported
 * features are a return code, never a crash. Output, one line each:
 *   call NAME RESULT                 every call made (RESULT: NVML's return code)
 *   v1 PID BYTES NAME                each process of the v1 compute list, with its name
 *   v2 PID BYTES GI CI               each process of the v2 list
 *   walked N calls                   at the end; the exit status is 0 when nothing crashed and
 *                                    init, count and handles worked, else 1 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The few NVML types the tool needs, with NVIDIA's layouts (nvml.h). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} proc_v1_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} proc_v2_t;

static void *lib;
static int calls;

static void *fn(const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL)
        printf("missing %s\n", name);
    return p;
}

static nvmlReturn_t report(const char *name, nvmlReturn_t r)
{
    printf("call %s %d\n", name, r);
    calls++;
    return r;
}

/* Calls NAME(device, out...) for the getters that take one or two output words. */
#define GET1(name, dev)                                                                            \
    do {                                                                                           \
        unsigned long long out_[64] = {0};                                                         \
        nvmlReturn_t (*f_)(nvmlDevice_t, void *) = fn(name);                                       \
        if (f_ != NULL)                                                                            \
            report(name, f_(dev, out_));                                                           \
    } while (0)
#define GET2(name, dev, arg)                                                                       \
    do {                                                                                           \
        unsigned long long out_[64] = {0};                                                         \
        nvmlReturn_t (*f_)(nvmlDevice_t, unsigned, void *) = fn(name);                             \
        if (f_ != NULL)                                                                            \
            report(name, f_(dev, arg, out_));                                                      \
    } while (0)

static void walk_processes(nvmlDevice_t dev)
{
    nvmlReturn_t (*v1)(nvmlDevice_t, unsigned *, proc_v1_t *) =
        fn("nvmlDeviceGetComputeRunningProcesses");
    nvmlReturn_t (*v2)(nvmlDevice_t, unsigned *, proc_v2_t *) =
        fn("nvmlDeviceGetComputeRunningProcesses_v2");
    nvmlReturn_t (*name)(unsigned, char *, unsigned) = fn("nvmlSystemGetProcessName");
    proc_v1_t p1[16];
    proc_v2_t p2[16];
    unsigned n1 = 16, n2 = 16;
    if (v1 != NULL && report("nvmlDeviceGetComputeRunningProcesses", v1(dev, &n1, p1)) == 0) {
        for (unsigned i = 0; i < n1; i++) {
            char comm[64] = "?";
            if (name != NULL)
                report("nvmlSystemGetProcessName", name(p1[i].pid, comm, sizeof(comm)));
            printf("v1 %u %llu %s\n", p1[i].pid, p1[i].usedGpuMemory, comm);
        }
    }
    if (v2 != NULL && report("nvmlDeviceGetComputeRunningProcesses_v2", v2(dev, &n2, p2)) == 0) {
        for (unsigned i = 0; i < n2; i++)
            printf("v2 %u %llu %x %x\n", p2[i].pid, p2[i].usedGpuMemory, p2[i].gpuInstanceId,
                   p2[i].computeInstanceId);
    }
    GET1("nvmlDeviceGetGraphicsRunningProcesses", dev);
    GET1("nvmlDeviceGetMPSComputeRunningProcesses_v3", dev);
}

static void walk_device(nvmlDevice_t dev)
{
    char text[128];
    nvmlReturn_t (*str)(nvmlDevice_t, char *, unsigned) = fn("nvmlDeviceGetName");
    if (str != NULL)
        report("nvmlDeviceGetName", str(dev, text, sizeof(text)));
    const char *one[] = {"nvmlDeviceGetPciInfo_v3",
                         "nvmlDeviceGetMemoryInfo",
                         "nvmlDeviceGetBAR1MemoryInfo",
                         "nvmlDeviceGetPowerUsage",
                         "nvmlDeviceGetEnforcedPowerLimit",
                         "nvmlDeviceGetFanSpeed",
                         "nvmlDeviceGetPerformanceState",
                         "nvmlDeviceGetUtilizationRates",
                         "nvmlDeviceGetComputeMode",
                         "nvmlDeviceGetPersistenceMode",
                         "nvmlDeviceGetTotalEnergyConsumption",
                         "nvmlDeviceGetCurrPcieLinkGeneration",
                         "nvmlDeviceGetCurrPcieLinkWidth",
                         "nvmlDeviceGetSupportedEventTypes",
                         "nvmlDeviceGetArchitecture",
                         "nvmlDeviceGetCurrentClocksEventReasons",
                         "nvmlDeviceGetDisplayMode",
                         "nvmlDeviceGetIndex",
                         "nvmlDeviceGetAttributes",
                         "nvmlDeviceGetNumGpuCores"};
    for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
        GET1(one[i], dev);
    GET2("nvmlDeviceGetTemperature", dev, 0);
    GET2("nvmlDeviceGetClockInfo", dev, 0);
    GET2("nvmlDeviceGetMaxClockInfo", dev, 1);
    GET2("nvmlDeviceGetPcieThroughput", dev, 0);
    const char *strings[] = {"nvmlDeviceGetUUID", "nvmlDeviceGetSerial",
                             "nvmlDeviceGetVbiosVersion", "nvmlDeviceGetBoardPartNumber"};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        str = fn(strings[i]);
        if (str != NULL)
            report(strings[i], str(dev, text, sizeof(text)));
    }
    nvmlReturn_t (*two)(nvmlDevice_t, void *, void *) = fn("nvmlDeviceGetCudaComputeCapability");
    int major = 0, minor = 0;
    if (two != NULL)
        report("nvmlDeviceGetCudaComputeCapability", two(dev, &major, &minor));
    two = fn("nvmlDeviceGetEccMode");
    if (two != NULL)
        report("nvmlDeviceGetEccMode", two(dev, &major, &minor));
    two = fn("nvmlDeviceGetMigMode");
    if (two != NULL)
        report("nvmlDeviceGetMigMode", two(dev, &major, &minor));
    walk_processes(dev);
}

int main(void)
{
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (lib == NULL) {
        fprintf(stderr, "nvml_walk: %s\n", dlerror());
        return 1;
    }
    nvmlReturn_t (*init)(void) = fn("nvmlInit"); /* the v1 name, as old tools call it */
    nvmlReturn_t (*count_fn)(unsigned *) = fn("nvmlDeviceGetCount");
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) = fn("nvmlDeviceGetHandleByIndex");
    nvmlReturn_t (*shutdown)(void) = fn("nvmlShutdown");
    if (init == NULL || count_fn == NULL || by_index == NULL || shutdown == NULL ||
        report("nvmlInit", init()) != 0)
        return 1;
    char version[80];
    nvmlReturn_t (*sys)(char *, unsigned) = fn("nvmlSystemGetDriverVersion");
    if (sys != NULL)
        report("nvmlSystemGetDriverVersion", sys(version, sizeof(version)));
    unsigned count = 0, units = 0;
    nvmlReturn_t (*unit_count)(unsigned *) = fn("nvmlUnitGetCount");
    if (unit_count != NULL)
        report("nvmlUnitGetCount", unit_count(&units));
    if (report("nvmlDeviceGetCount", count_fn(&count)) != 0)
        return 1;
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev;
        if (report("nvmlDeviceGetHandleByIndex", by_index(i, &dev)) != 0)
            return 1;
        walk_device(dev);
    }
    report("nvmlShutdown", shutdown());
    printf("walked %d calls\n", calls);
    return 0;
}
