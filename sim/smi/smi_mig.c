/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-smi: the "mig" subcommands (list profiles and instances, create, destroy). */
#include "smi.h"

#include <stdlib.h>
#include <string.h>

#define MAX_GI 16

static int selected(int only, unsigned index)
{
    return only == SMI_ALL || (unsigned)only == index;
}

/* Calls fn for every selected GPU with MIG enabled; returns how many there were. */
static int each_mig_gpu(int only, void (*fn)(unsigned index, nvmlDevice_t dev, void *arg),
                        void *arg)
{
    unsigned count = 0, cur, pending;
    int n = 0;
    nvmlDeviceGetCount_v2(&count);
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev;
        if (!selected(only, i) || nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS ||
            nvmlDeviceGetMigMode(dev, &cur, &pending) != NVML_SUCCESS || !cur)
            continue;
        n++;
        if (fn != NULL)
            fn(i, dev, arg);
    }
    return n;
}

/* ---- -lgip ---- */

static const int gip_cols[1] = {77};

static void list_profiles(unsigned index, nvmlDevice_t dev, void *arg)
{
    FILE *out = arg;
    for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        nvmlGpuInstanceProfileInfo_v2_t info = {.version = nvmlGpuInstanceProfileInfo_v2};
        unsigned free_count = 0;
        if (nvmlDeviceGetGpuInstanceProfileInfoV(dev, p, &info) != NVML_SUCCESS)
            continue;
        nvmlDeviceGetGpuInstanceRemainingCapacity(dev, info.id, &free_count);
        char instances[16];
        snprintf(instances, sizeof(instances), "%u/%u", free_count, info.instanceCount);
        smi_line(out, gip_cols[0], " %3u  %-16s %3u    %-9s %7.2f      %-3s  %4u  %4u  %4u   ",
                 index, info.name, info.id, instances, (double)info.memorySizeMB / 1024.0,
                 info.isP2pSupported ? "Yes" : "No", info.multiprocessorCount, info.decoderCount,
                 info.encoderCount);
        smi_line(out, gip_cols[0], "%58s%4u  %4u  %4u   ", "", info.copyEngineCount, info.jpegCount,
                 info.ofaCount);
        smi_border(out, gip_cols, 1, '-');
    }
}

static int list_gpu_profiles(FILE *out, int only)
{
    if (each_mig_gpu(only, NULL, NULL) == 0) {
        fprintf(out, "No MIG-enabled devices found.\n");
        return 6;
    }
    smi_border(out, gip_cols, 1, '-');
    smi_line(out, gip_cols[0], " GPU instance profiles:");
    smi_line(out, gip_cols[0],
             " GPU   Name             ID    Instances   Memory     P2P    SM    "
             "DEC   ENC  ");
    smi_line(out, gip_cols[0], "%30sFree/Total   GiB              CE    JPEG  OFA  ", "");
    smi_border(out, gip_cols, 1, '=');
    each_mig_gpu(only, list_profiles, out);
    return 0;
}

/* ---- GPU instances of a GPU, in id order ---- */

typedef struct gi_entry {
    nvmlGpuInstance_t handle;
    nvmlGpuInstanceInfo_t info;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} gi_entry_t;

static int compare_gi(const void *a, const void *b)
{
    const gi_entry_t *x = a, *y = b;
    return (x->info.id > y->info.id) - (x->info.id < y->info.id);
}

static int gpu_instances(nvmlDevice_t dev, gi_entry_t *entries)
{
    int n = 0;
    for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        nvmlGpuInstanceProfileInfo_v2_t info = {.version = nvmlGpuInstanceProfileInfo_v2};
        nvmlGpuInstance_t handles[MAX_GI];
        unsigned count = 0;
        if (nvmlDeviceGetGpuInstanceProfileInfoV(dev, p, &info) != NVML_SUCCESS ||
            nvmlDeviceGetGpuInstances(dev, info.id, handles, &count) != NVML_SUCCESS)
            continue;
        for (unsigned k = 0; k < count && n < MAX_GI; k++, n++) {
            entries[n].handle = handles[k];
            nvmlGpuInstanceGetInfo(handles[k], &entries[n].info);
            snprintf(entries[n].name, sizeof(entries[n].name), "%s", info.name);
        }
    }
    qsort(entries, (size_t)n, sizeof(entries[0]), compare_gi);
    return n;
}

/* ---- -lgi ---- */

static const int gi_cols[1] = {55};

typedef struct list_state {
    FILE *out;
    int rows;
} list_state_t;

static void list_gis(unsigned index, nvmlDevice_t dev, void *arg)
{
    list_state_t *s = arg;
    gi_entry_t gis[MAX_GI];
    int n = gpu_instances(dev, gis);
    for (int k = 0; k < n; k++, s->rows++) {
        char placement[16];
        snprintf(placement, sizeof(placement), "%u:%u", gis[k].info.placement.start,
                 gis[k].info.placement.size);
        smi_line(s->out, gi_cols[0], " %3u  %-16s %5u %8u %12s     ", index, gis[k].name,
                 gis[k].info.profileId, gis[k].info.id, placement);
    }
}

static int list_gpu_instances(FILE *out, int only)
{
    list_state_t s = {.out = out, .rows = 0};
    if (each_mig_gpu(only, NULL, NULL) == 0) {
        fprintf(out, "No MIG-enabled devices found.\n");
        return 6;
    }
    smi_border(out, gi_cols, 1, '-');
    smi_line(out, gi_cols[0], " GPU instances:");
    smi_line(out, gi_cols[0], " GPU   Name             Profile  Instance   Placement  ");
    smi_line(out, gi_cols[0], "                          ID       ID       Start:Size ");
    smi_border(out, gi_cols, 1, '=');
    each_mig_gpu(only, list_gis, &s);
    if (s.rows == 0)
        smi_line(out, gi_cols[0], "  No GPU instances found");
    smi_border(out, gi_cols, 1, '-');
    return 0;
}

/* ---- -lci ---- */

static const int ci_cols[1] = {68};

static void list_cis(unsigned index, nvmlDevice_t dev, void *arg)
{
    list_state_t *s = arg;
    gi_entry_t gis[MAX_GI];
    int n = gpu_instances(dev, gis);
    for (int k = 0; k < n; k++) {
        for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
            nvmlComputeInstanceProfileInfo_v2_t info = {.version =
                                                            nvmlComputeInstanceProfileInfo_v2};
            nvmlComputeInstance_t cis[8];
            unsigned count = 0;
            if (nvmlGpuInstanceGetComputeInstanceProfileInfoV(gis[k].handle, p, 0, &info) !=
                    NVML_SUCCESS ||
                nvmlGpuInstanceGetComputeInstances(gis[k].handle, p, cis, &count) != NVML_SUCCESS)
                continue;
            for (unsigned c = 0; c < count; c++, s->rows++) {
                nvmlComputeInstanceInfo_t ci;
                char placement[16];
                nvmlComputeInstanceGetInfo_v2(cis[c], &ci);
                snprintf(placement, sizeof(placement), "%u:%u", ci.placement.start,
                         ci.placement.size);
                smi_line(s->out, ci_cols[0], " %3u  %6u       %-16s %6u %9u %10s     ", index,
                         gis[k].info.id, info.name, ci.profileId, ci.id, placement);
            }
        }
    }
}

static int list_compute_instances(FILE *out, int only)
{
    list_state_t s = {.out = out, .rows = 0};
    if (each_mig_gpu(only, NULL, NULL) == 0) {
        fprintf(out, "No MIG-enabled devices found.\n");
        return 6;
    }
    smi_border(out, ci_cols, 1, '-');
    smi_line(out, ci_cols[0], " Compute instances:");
    smi_line(out, ci_cols[0],
             " GPU     GPU       Name             Profile   Instance   "
             "Placement  ");
    smi_line(out, ci_cols[0],
             "       Instance                       ID        ID       "
             "Start:Size ");
    smi_line(out, ci_cols[0], "         ID");
    smi_border(out, ci_cols, 1, '=');
    each_mig_gpu(only, list_cis, &s);
    if (s.rows == 0)
        smi_line(out, ci_cols[0], "  No compute instances found");
    smi_border(out, ci_cols, 1, '-');
    return 0;
}

/* ---- -cgi, -dci, -dgi ---- */

/* Resolves a profile given as an id ("9") or a name ("3g.20gb", "MIG 3g.20gb"). */
static int find_profile(nvmlDevice_t dev, const char *spec, nvmlGpuInstanceProfileInfo_v2_t *out)
{
    char *end;
    unsigned long id = strtoul(spec, &end, 10);
    int numeric = end != spec && *end == '\0';
    if (strncmp(spec, "MIG ", 4) == 0)
        spec += 4;
    for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
        nvmlGpuInstanceProfileInfo_v2_t info = {.version = nvmlGpuInstanceProfileInfo_v2};
        if (nvmlDeviceGetGpuInstanceProfileInfoV(dev, p, &info) != NVML_SUCCESS)
            continue;
        if ((numeric && info.id == id) || (!numeric && strcmp(info.name + 4, spec) == 0)) {
            *out = info;
            return 0;
        }
    }
    return -1;
}

/* Creates the compute instance that spans a new GPU instance of slices slices. */
static int create_full_ci(FILE *out, unsigned index, nvmlGpuInstance_t gi, unsigned gi_id,
                          unsigned slices, const char *name)
{
    for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
        nvmlComputeInstanceProfileInfo_t info;
        nvmlComputeInstance_t ci;
        nvmlComputeInstanceInfo_t ci_info;
        if (nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, p, 0, &info) != NVML_SUCCESS ||
            info.sliceCount != slices)
            continue;
        nvmlReturn_t r = nvmlGpuInstanceCreateComputeInstance(gi, info.id, &ci);
        if (r != NVML_SUCCESS) {
            fprintf(out, "Unable to create a compute instance on GPU %2u GPU instance ID %2u: %s\n",
                    index, gi_id, nvmlErrorString(r));
            return 1;
        }
        nvmlComputeInstanceGetInfo_v2(ci, &ci_info);
        fprintf(out,
                "Successfully created compute instance ID %2u on GPU %2u GPU instance ID %2u "
                "using profile %s (ID %2u)\n",
                ci_info.id, index, gi_id, name, info.id);
        return 0;
    }
    return 1;
}

typedef struct create_state {
    FILE *out;
    const char *list;
    int with_ci;
    int status;
} create_state_t;

static void create_on_gpu(unsigned index, nvmlDevice_t dev, void *arg)
{
    create_state_t *s = arg;
    char list[256], *save = NULL;
    snprintf(list, sizeof(list), "%s", s->list);
    for (char *spec = strtok_r(list, ",", &save); spec != NULL; spec = strtok_r(NULL, ",", &save)) {
        nvmlGpuInstanceProfileInfo_v2_t info;
        nvmlGpuInstance_t gi;
        nvmlGpuInstanceInfo_t gi_info;
        if (find_profile(dev, spec, &info) != 0) {
            fprintf(s->out, "Unable to create a GPU instance on GPU %2u using profile %s: %s\n",
                    index, spec, nvmlErrorString(NVML_ERROR_INVALID_ARGUMENT));
            s->status = 2;
            continue;
        }
        nvmlReturn_t r = nvmlDeviceCreateGpuInstance(dev, info.id, &gi);
        if (r != NVML_SUCCESS) {
            fprintf(s->out, "Unable to create a GPU instance on GPU %2u using profile %u: %s\n",
                    index, info.id, nvmlErrorString(r));
            s->status = r == NVML_ERROR_INSUFFICIENT_RESOURCES ? 23 : 2;
            continue;
        }
        nvmlGpuInstanceGetInfo(gi, &gi_info);
        fprintf(s->out,
                "Successfully created GPU instance ID %2u on GPU %2u using profile %s (ID %2u)\n",
                gi_info.id, index, info.name, info.id);
        if (s->with_ci &&
            create_full_ci(s->out, index, gi, gi_info.id, info.sliceCount, info.name) != 0)
            s->status = 2;
    }
}

typedef struct destroy_state {
    FILE *out;
    int cis;           /* 1: compute instances, 0: GPU instances */
    long gi_id, ci_id; /* -1: all */
    int status, done;
} destroy_state_t;

static void destroy_cis(destroy_state_t *s, unsigned index, const gi_entry_t *g)
{
    for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
        nvmlComputeInstance_t cis[8];
        unsigned count = 0;
        if (nvmlGpuInstanceGetComputeInstances(g->handle, p, cis, &count) != NVML_SUCCESS)
            continue;
        for (unsigned c = 0; c < count; c++) {
            nvmlComputeInstanceInfo_t ci;
            nvmlComputeInstanceGetInfo_v2(cis[c], &ci);
            if (s->ci_id >= 0 && ci.id != (unsigned)s->ci_id)
                continue;
            nvmlReturn_t r = nvmlComputeInstanceDestroy(cis[c]);
            s->done++;
            if (r == NVML_SUCCESS)
                fprintf(s->out,
                        "Successfully destroyed compute instance ID %2u from GPU %2u GPU "
                        "instance ID %2u\n",
                        ci.id, index, g->info.id);
            else
                fprintf(s->out,
                        "Unable to destroy compute instance ID %2u from GPU %2u GPU instance ID "
                        "%2u: %s\n",
                        ci.id, index, g->info.id, nvmlErrorString(r));
            if (r != NVML_SUCCESS)
                s->status = r == NVML_ERROR_IN_USE ? 19 : 2;
        }
    }
}

static void destroy_on_gpu(unsigned index, nvmlDevice_t dev, void *arg)
{
    destroy_state_t *s = arg;
    gi_entry_t gis[MAX_GI];
    int n = gpu_instances(dev, gis);
    for (int k = 0; k < n; k++) {
        if (s->gi_id >= 0 && gis[k].info.id != (unsigned)s->gi_id)
            continue;
        if (s->cis) {
            destroy_cis(s, index, &gis[k]);
            continue;
        }
        nvmlReturn_t r = nvmlGpuInstanceDestroy(gis[k].handle);
        s->done++;
        if (r == NVML_SUCCESS)
            fprintf(s->out, "Successfully destroyed GPU instance ID %2u from GPU %2u\n",
                    gis[k].info.id, index);
        else
            fprintf(s->out, "Unable to destroy GPU instance ID %2u from GPU %2u: %s\n",
                    gis[k].info.id, index, nvmlErrorString(r));
        if (r != NVML_SUCCESS)
            s->status = r == NVML_ERROR_IN_USE ? 19 : 2;
    }
}

/* Parses the "-gi ID" / "-ci ID" options of -dci and -dgi. Returns 0 or -1. */
static int parse_ids(int argc, char **argv, destroy_state_t *s)
{
    for (int k = 1; k < argc; k += 2) { /* option, value */
        char *end;
        if (k + 1 >= argc || (strcmp(argv[k], "-gi") != 0 && strcmp(argv[k], "-ci") != 0))
            return -1;
        long v = strtol(argv[k + 1], &end, 10);
        if (*end != '\0' || v < 0)
            return -1;
        if (strcmp(argv[k], "-gi") == 0)
            s->gi_id = v;
        else
            s->ci_id = v;
    }
    return 0;
}

static int destroy(FILE *out, int only, int cis, int argc, char **argv)
{
    destroy_state_t s = {.out = out, .cis = cis, .gi_id = -1, .ci_id = -1};
    if (parse_ids(argc, argv, &s) != 0) {
        fprintf(stderr, "Invalid arguments: expected [-gi ID] [-ci ID]\n");
        return 2;
    }
    if (each_mig_gpu(only, destroy_on_gpu, &s) == 0) {
        fprintf(out, "No MIG-enabled devices found.\n");
        return 6;
    }
    if (s.done == 0) {
        fprintf(out, "No %s instances found.\n", cis ? "compute" : "GPU");
        return 6;
    }
    return s.status;
}

int smi_mig(FILE *out, int only, int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "-lgip") == 0)
        return list_gpu_profiles(out, only);
    if (argc >= 1 && strcmp(argv[0], "-lgi") == 0)
        return list_gpu_instances(out, only);
    if (argc >= 1 && strcmp(argv[0], "-lci") == 0)
        return list_compute_instances(out, only);
    if (argc >= 2 && strcmp(argv[0], "-cgi") == 0) {
        create_state_t s = {
            .out = out, .list = argv[1], .with_ci = argc >= 3 && strcmp(argv[2], "-C") == 0};
        if (each_mig_gpu(only, create_on_gpu, &s) == 0) {
            fprintf(out, "No MIG-enabled devices found.\n");
            return 6;
        }
        return s.status;
    }
    if (argc >= 1 && strcmp(argv[0], "-dci") == 0)
        return destroy(out, only, 1, argc, argv);
    if (argc >= 1 && strcmp(argv[0], "-dgi") == 0)
        return destroy(out, only, 0, argc, argv);
    fprintf(stderr, "Usage: nvidia-smi mig [-i N] -lgip | -lgi | -lci | -cgi LIST [-C] |\n"
                    "                      -dci [-gi ID] [-ci ID] | -dgi [-gi ID]\n");
    return 2;
}
