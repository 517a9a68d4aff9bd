/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-smi: a small nvidia-smi over NVML, so a person can look at a simulated node.
 *   nvidia-smi [-i N]                  the status table: GPUs, MIG devices, processes
 *   nvidia-smi -L                      GPUs and MIG devices with their UUIDs
 *   nvidia-smi [-i N] -mig 0|1         disable / enable MIG
 *   nvidia-smi [-i N] --query-gpu=FIELD,... --format=csv[,noheader][,nounits]
 *                                      NVIDIA's query interface, its common fields
 *   nvidia-smi mig [-i N] -lgip | -lgi | -lci | -cgi LIST [-C] | -dci [-gi ID] [-ci ID] |
 *                         -dgi [-gi ID]
 * Fan, temperature, performance state, power and ECC are not simulated and read N/A. */
#include "smi.h"
#include "gpushare/version.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COL1 41
#define COL2 22
#define COL3 22
#define FULL (COL1 + COL2 + COL3 + 2)

static const int gpu_cols[3] = {COL1, COL2, COL3};

/* "|----+----+----|": the rule between the title line and the column headings. */
static void rule_below_title(FILE *out)
{
    fputc('|', out);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < gpu_cols[i]; k++)
            fputc('-', out);
        fputc('+', out);
    }
    fputc('\n', out);
}

static void header(FILE *out)
{
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A", stamp[64];
    int cuda = 0;
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%a %b %e %H:%M:%S %Y", &tm);
    nvmlSystemGetDriverVersion(version, sizeof(version));
    nvmlSystemGetCudaDriverVersion(&cuda);
    fprintf(out, "%s\n", stamp);
    const int full[1] = {FULL};
    smi_border(out, full, 1, '-');
    smi_line(out, FULL, " NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %d.%d", version,
             version, NVML_CUDA_DRIVER_VERSION_MAJOR(cuda), NVML_CUDA_DRIVER_VERSION_MINOR(cuda));
    rule_below_title(out);
    smi_row(out, gpu_cols, 3,
            (const char *[]){" GPU  Name                 Persistence-M", " Bus-Id        Disp.A ",
                             " Volatile Uncorr. ECC"});
    smi_row(out, gpu_cols, 3,
            (const char *[]){" Fan  Temp   Perf          Pwr:Usage/Cap", "         Memory-Usage",
                             " GPU-Util  Compute M."});
    smi_row(out, gpu_cols, 3, (const char *[]){"", "", "               MIG M."});
    smi_border(out, gpu_cols, 3, '=');
}

static const char *mode_name(nvmlComputeMode_t mode)
{
    switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT:
        return "Default";
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD:
        return "E. Thread";
    case NVML_COMPUTEMODE_PROHIBITED:
        return "Prohibited";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
        return "E. Process";
    default:
        return "Unknown";
    }
}

static void gpu_rows(FILE *out, unsigned index, nvmlDevice_t dev)
{
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", c[3][64], util[16] = "N/A", mig[16] = "N/A";
    nvmlPciInfo_t pci = {.busId = "N/A"};
    nvmlMemory_t mem = {0};
    nvmlUtilization_t u;
    nvmlComputeMode_t mode = NVML_COMPUTEMODE_DEFAULT;
    unsigned cur, pending;
    nvmlDeviceGetName(dev, name, sizeof(name));
    nvmlDeviceGetPciInfo_v3(dev, &pci);
    nvmlDeviceGetMemoryInfo(dev, &mem);
    nvmlDeviceGetComputeMode(dev, &mode);
    if (nvmlDeviceGetUtilizationRates(dev, &u) == NVML_SUCCESS)
        snprintf(util, sizeof(util), "%u%%", u.gpu);
    if (nvmlDeviceGetMigMode(dev, &cur, &pending) == NVML_SUCCESS)
        snprintf(mig, sizeof(mig), "%s", cur ? "Enabled" : "Disabled");
    snprintf(c[0], sizeof(c[0]), "%4u  %-30.30s %-3s ", index, name, "On");
    snprintf(c[1], sizeof(c[1]), " %-16s %3s ", pci.busId, "Off");
    snprintf(c[2], sizeof(c[2]), " %20s ", "N/A");
    smi_row(out, gpu_cols, 3, (const char *[]){c[0], c[1], c[2]});
    char usage[48];
    snprintf(usage, sizeof(usage), "%lluMiB / %lluMiB", mem.used >> 20, mem.total >> 20);
    snprintf(c[0], sizeof(c[0]), " %-3s   %3s    %-2s%24s ", "N/A", "N/A", "P0", "N/A /  N/A");
    snprintf(c[1], sizeof(c[1]), " %20s ", usage);
    snprintf(c[2], sizeof(c[2]), " %7s %12s ", util, mode_name(mode));
    smi_row(out, gpu_cols, 3, (const char *[]){c[0], c[1], c[2]});
    snprintf(c[2], sizeof(c[2]), " %20s ", mig);
    smi_row(out, gpu_cols, 3, (const char *[]){"", "", c[2]});
    smi_border(out, gpu_cols, 3, '-');
}

static int selected(int only, unsigned index)
{
    return only == SMI_ALL || (unsigned)only == index;
}

/* The MIG devices table (only when some GPU has MIG devices). */
static void mig_devices(FILE *out, int only, unsigned count)
{
    static const int cols[4] = {18, 32, 11, 23};
    int printed = 0;
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev;
        unsigned max = 0;
        if (!selected(only, i) || nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS ||
            nvmlDeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS)
            continue;
        for (unsigned m = 0; m < max; m++) {
            nvmlDevice_t mig;
            if (nvmlDeviceGetMigDeviceHandleByIndex(dev, m, &mig) != NVML_SUCCESS)
                continue;
            if (!printed++) {
                const int full[1] = {FULL};
                fprintf(out, "\n");
                smi_border(out, full, 1, '-');
                smi_line(out, FULL, " MIG devices:");
                smi_border(out, cols, 4, '-');
                smi_row(out, cols, 4,
                        (const char *[]){" GPU  GI  CI  MIG", "                   Memory-Usage",
                                         "        SM", " Name"});
                smi_row(out, cols, 4, (const char *[]){"      ID  ID  Dev", "", "", ""});
                smi_border(out, cols, 4, '=');
            }
            unsigned gi = 0, ci = 0;
            nvmlMemory_t mem = {0};
            nvmlDeviceAttributes_t attrs = {0};
            char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", c[4][64], usage[48];
            nvmlDeviceGetGpuInstanceId(mig, &gi);
            nvmlDeviceGetComputeInstanceId(mig, &ci);
            nvmlDeviceGetMemoryInfo(mig, &mem);
            nvmlDeviceGetAttributes_v2(mig, &attrs);
            nvmlDeviceGetName(mig, name, sizeof(name));
            const char *profile = strstr(name, "MIG ");
            snprintf(usage, sizeof(usage), "%lluMiB / %lluMiB", mem.used >> 20, mem.total >> 20);
            snprintf(c[0], sizeof(c[0]), " %2u  %3u %3u %3u  ", i, gi, ci, m);
            snprintf(c[1], sizeof(c[1]), " %29s  ", usage);
            snprintf(c[2], sizeof(c[2]), " %9u ", attrs.multiprocessorCount);
            snprintf(c[3], sizeof(c[3]), " %s", profile != NULL ? profile : name);
            smi_row(out, cols, 4, (const char *[]){c[0], c[1], c[2], c[3]});
            smi_border(out, cols, 4, '-');
        }
    }
}

/* Prints the process rows of one GPU; returns how many. */
static int process_rows(FILE *out, unsigned index, nvmlDevice_t dev)
{
    nvmlProcessInfo_t infos[64];
    unsigned n = 64;
    if (nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, infos) != NVML_SUCCESS)
        return 0;
    for (unsigned k = 0; k < n; k++) {
        char name[64] = "unknown", gi[12] = "N/A", ci[12] = "N/A";
        nvmlSystemGetProcessName(infos[k].pid, name, sizeof(name));
        if (infos[k].gpuInstanceId != 0xFFFFFFFFu)
            snprintf(gi, sizeof(gi), "%u", infos[k].gpuInstanceId);
        if (infos[k].computeInstanceId != 0xFFFFFFFFu)
            snprintf(ci, sizeof(ci), "%u", infos[k].computeInstanceId);
        smi_line(out, FULL, " %4u %4s %4s %10u %6s   %-37.37s %9lluMiB ", index, gi, ci,
                 infos[k].pid, "C", name, infos[k].usedGpuMemory >> 20);
    }
    return (int)n;
}

static void processes(FILE *out, int only, unsigned count)
{
    const int full[1] = {FULL};
    fprintf(out, "\n");
    smi_border(out, full, 1, '-');
    smi_line(out, FULL, " Processes:");
    smi_line(out, FULL, "  GPU   GI   CI        PID   Type   Process name%28sGPU Memory ", "");
    smi_line(out, FULL, "        ID   ID%61sUsage      ", "");
    smi_border(out, full, 1, '=');
    int rows = 0;
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev;
        if (selected(only, i) && nvmlDeviceGetHandleByIndex_v2(i, &dev) == NVML_SUCCESS)
            rows += process_rows(out, i, dev);
    }
    if (rows == 0)
        smi_line(out, FULL, "  No running processes found");
    smi_border(out, full, 1, '-');
}

int smi_table(FILE *out, int only)
{
    unsigned count = 0;
    nvmlDeviceGetCount_v2(&count);
    if (only != SMI_ALL && (unsigned)only >= count) {
        fprintf(stderr, "No devices were found\n");
        return 6;
    }
    header(out);
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev;
        if (selected(only, i) && nvmlDeviceGetHandleByIndex_v2(i, &dev) == NVML_SUCCESS)
            gpu_rows(out, i, dev);
    }
    mig_devices(out, only, count);
    processes(out, only, count);
    return 0;
}

int smi_list(FILE *out, int only)
{
    unsigned count = 0;
    nvmlDeviceGetCount_v2(&count);
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev, mig;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        unsigned max = 0;
        if (!selected(only, i) || nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
            continue;
        nvmlDeviceGetName(dev, name, sizeof(name));
        nvmlDeviceGetUUID(dev, uuid, sizeof(uuid));
        fprintf(out, "GPU %u: %s (UUID: %s)\n", i, name, uuid);
        nvmlDeviceGetMaxMigDeviceCount(dev, &max);
        for (unsigned m = 0; m < max; m++) {
            if (nvmlDeviceGetMigDeviceHandleByIndex(dev, m, &mig) != NVML_SUCCESS)
                continue;
            nvmlDeviceGetName(mig, name, sizeof(name));
            nvmlDeviceGetUUID(mig, uuid, sizeof(uuid));
            const char *profile = strstr(name, "MIG ");
            fprintf(out, "  %-16s Device %2u: (UUID: %s)\n", profile != NULL ? profile : name, m,
                    uuid);
        }
    }
    return 0;
}

int smi_set_mig_mode(FILE *out, int only, unsigned mode)
{
    unsigned count = 0;
    int status = 0;
    nvmlDeviceGetCount_v2(&count);
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t dev;
        nvmlPciInfo_t pci = {.busId = "N/A"};
        nvmlReturn_t activation = NVML_SUCCESS;
        if (!selected(only, i) || nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS)
            continue;
        nvmlDeviceGetPciInfo_v3(dev, &pci);
        nvmlReturn_t r = nvmlDeviceSetMigMode(dev, mode, &activation);
        if (r == NVML_SUCCESS) {
            fprintf(out, "%s MIG Mode for GPU %s\n", mode ? "Enabled" : "Disabled", pci.busId);
        } else {
            fprintf(out, "Unable to %s MIG Mode for GPU %s: %s\n", mode ? "enable" : "disable",
                    pci.busId, nvmlErrorString(r));
            status = r == NVML_ERROR_NOT_SUPPORTED ? 3 : 19;
        }
    }
    fprintf(out, "%s\n", status == 0 ? "All done." : "");
    return status;
}

/* --version: the versions, as NVIDIA's nvidia-smi prints them, then gpusim's own (a line NVIDIA's
 * does not have, last, so that what reads NVIDIA's lines reads them unchanged). */
static int version(FILE *out)
{
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A", nvml[80] = "N/A";
    int cuda = 0;
    nvmlSystemGetDriverVersion(driver, sizeof(driver));
    nvmlSystemGetNVMLVersion(nvml, sizeof(nvml));
    nvmlSystemGetCudaDriverVersion(&cuda);
    fprintf(out,
            "NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\n"
            "CUDA Version        : %d.%d\ngpusim version      : %s\n",
            driver, nvml, driver, NVML_CUDA_DRIVER_VERSION_MAJOR(cuda),
            NVML_CUDA_DRIVER_VERSION_MINOR(cuda), GS_VERSION);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: nvidia-smi [-i N] [-L | -mig 0|1] | --version\n"
            "       nvidia-smi [-i N] --query-gpu=FIELD,... --format=csv[,noheader][,nounits]\n"
            "       nvidia-smi mig [-i N] -lgip | -lgi | -lci | -cgi LIST [-C] |\n"
            "                      -dci [-gi ID] [-ci ID] | -dgi [-gi ID]\n"
            "gpusim's nvidia-smi: the simulated node's GPUs, MIG instances and processes.\n");
}

/* Parses "-i N" at argv[*k]; returns 0 or -1. */
static int take_index(int argc, char **argv, int *k, int *only)
{
    if (*k + 1 >= argc)
        return -1;
    char *end;
    long v = strtol(argv[*k + 1], &end, 10);
    if (*end != '\0' || v < 0)
        return -1;
    *only = (int)v;
    *k += 1;
    return 0;
}

/* "--name=VALUE" or "--name VALUE" at argv[*k]: its value (advancing *k past it), or NULL. */
static const char *long_value(int argc, char **argv, int *k, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*k], name, n) != 0)
        return NULL;
    if (argv[*k][n] == '=')
        return argv[*k] + n + 1;
    if (argv[*k][n] == '\0' && *k + 1 < argc)
        return argv[++*k];
    return NULL;
}

static int run(int argc, char **argv)
{
    int only = SMI_ALL, list = 0, mig_mode = -1;
    const char *query = NULL, *format = NULL, *v;
    if (argc >= 2 && strcmp(argv[1], "mig") == 0) {
        int k = 2;
        if (k < argc && (strcmp(argv[k], "-i") == 0 || strcmp(argv[k], "--id") == 0) &&
            take_index(argc, argv, &k, &only) == 0)
            k++;
        return smi_mig(stdout, only, argc - k, argv + k);
    }
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "-L") == 0 || strcmp(argv[k], "--list-gpus") == 0) {
            list = 1;
        } else if ((strcmp(argv[k], "-i") == 0 || strcmp(argv[k], "--id") == 0) &&
                   take_index(argc, argv, &k, &only) == 0) {
            continue;
        } else if (strcmp(argv[k], "-mig") == 0 && k + 1 < argc &&
                   (strcmp(argv[k + 1], "0") == 0 || strcmp(argv[k + 1], "1") == 0)) {
            mig_mode = argv[++k][0] - '0';
        } else if (strcmp(argv[k], "-h") == 0 || strcmp(argv[k], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[k], "--version") == 0) {
            return version(stdout);
        } else if ((v = long_value(argc, argv, &k, "--query-gpu")) != NULL) {
            query = v;
        } else if ((v = long_value(argc, argv, &k, "--format")) != NULL) {
            format = v;
        } else if ((v = long_value(argc, argv, &k, "--id")) != NULL && v[0] >= '0' && v[0] <= '9') {
            only = atoi(v);
        } else {
            fprintf(stderr, "Invalid combination of input arguments: %s\n", argv[k]);
            usage(stderr);
            return 2;
        }
    }
    if (query != NULL)
        return smi_query_gpu(stdout, only, query, format);
    if (mig_mode >= 0)
        return smi_set_mig_mode(stdout, only, (unsigned)mig_mode);
    return list ? smi_list(stdout, only) : smi_table(stdout, only);
}

int main(int argc, char **argv)
{
    if (nvmlInit_v2() != NVML_SUCCESS) {
        fprintf(stderr, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                        "driver. Make sure that the latest NVIDIA driver is installed and "
                        "running.\n");
        return 9;
    }
    int status = run(argc, argv);
    nvmlShutdown();
    return status;
}
