/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-smi --query-gpu=FIELD,... --format=csv[,noheader][,nounits]: NVIDIA's query
 * interface for the common fields, read from NVML as NVIDIA's reads them (in a lease, through
 * the shim: the lease's GPUs and memory). What gpusim does not model (temperature, power, ...)
 * reads "[N/A]", as NVIDIA's does for what a GPU does not support. */
#include "smi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gpu_info {
    unsigned index, count;
    nvmlDevice_t dev;
} gpu_info_t;

/* Writes one field's value of GPU g, without its unit ("[N/A]" when NVML cannot say). */
typedef void (*field_fn)(const gpu_info_t *g, char *buf, size_t len);

static void f_index(const gpu_info_t *g, char *buf, size_t len)
{
    snprintf(buf, len, "%u", g->index);
}

static void f_count(const gpu_info_t *g, char *buf, size_t len)
{
    snprintf(buf, len, "%u", g->count);
}

static void f_name(const gpu_info_t *g, char *buf, size_t len)
{
    if (nvmlDeviceGetName(g->dev, buf, (unsigned)len) != NVML_SUCCESS)
        snprintf(buf, len, "[N/A]");
}

static void f_uuid(const gpu_info_t *g, char *buf, size_t len)
{
    if (nvmlDeviceGetUUID(g->dev, buf, (unsigned)len) != NVML_SUCCESS)
        snprintf(buf, len, "[N/A]");
}

static void f_bus_id(const gpu_info_t *g, char *buf, size_t len)
{
    nvmlPciInfo_t pci;
    if (nvmlDeviceGetPciInfo_v3(g->dev, &pci) == NVML_SUCCESS)
        snprintf(buf, len, "%s", pci.busId);
    else
        snprintf(buf, len, "[N/A]");
}

static void f_driver(const gpu_info_t *g, char *buf, size_t len)
{
    (void)g;
    if (nvmlSystemGetDriverVersion(buf, (unsigned)len) != NVML_SUCCESS)
        snprintf(buf, len, "[N/A]");
}

/* memory.total / used / free / reserved in MiB (which: 0..3). */
static void memory(const gpu_info_t *g, int which, char *buf, size_t len)
{
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    nvmlMemory_t m;
    if (which == 3 && nvmlDeviceGetMemoryInfo_v2(g->dev, &m2) == NVML_SUCCESS) {
        snprintf(buf, len, "%llu", (unsigned long long)(m2.reserved >> 20));
        return;
    }
    if (which == 3 || nvmlDeviceGetMemoryInfo(g->dev, &m) != NVML_SUCCESS) {
        snprintf(buf, len, "[N/A]");
        return;
    }
    unsigned long long v = which == 0 ? m.total : which == 1 ? m.used : m.free;
    snprintf(buf, len, "%llu", v >> 20);
}

static void f_mem_total(const gpu_info_t *g, char *buf, size_t len)
{
    memory(g, 0, buf, len);
}

static void f_mem_used(const gpu_info_t *g, char *buf, size_t len)
{
    memory(g, 1, buf, len);
}

static void f_mem_free(const gpu_info_t *g, char *buf, size_t len)
{
    memory(g, 2, buf, len);
}

static void f_mem_reserved(const gpu_info_t *g, char *buf, size_t len)
{
    memory(g, 3, buf, len);
}

static void utilization(const gpu_info_t *g, int memory_util, char *buf, size_t len)
{
    nvmlUtilization_t u;
    if (nvmlDeviceGetUtilizationRates(g->dev, &u) == NVML_SUCCESS)
        snprintf(buf, len, "%u", memory_util ? u.memory : u.gpu);
    else
        snprintf(buf, len, "[N/A]");
}

static void f_util_gpu(const gpu_info_t *g, char *buf, size_t len)
{
    utilization(g, 0, buf, len);
}

static void f_util_mem(const gpu_info_t *g, char *buf, size_t len)
{
    utilization(g, 1, buf, len);
}

static void f_compute_mode(const gpu_info_t *g, char *buf, size_t len)
{
    nvmlComputeMode_t mode;
    static const char *const names[] = {"Default", "Exclusive_Thread", "Prohibited",
                                        "Exclusive_Process"};
    if (nvmlDeviceGetComputeMode(g->dev, &mode) == NVML_SUCCESS && (unsigned)mode < 4)
        snprintf(buf, len, "%s", names[mode]);
    else
        snprintf(buf, len, "[N/A]");
}

static void mig_mode(const gpu_info_t *g, int pending, char *buf, size_t len)
{
    unsigned cur, pend;
    if (nvmlDeviceGetMigMode(g->dev, &cur, &pend) == NVML_SUCCESS)
        snprintf(buf, len, "%s", (pending ? pend : cur) ? "Enabled" : "Disabled");
    else
        snprintf(buf, len, "[N/A]");
}

static void f_mig_current(const gpu_info_t *g, char *buf, size_t len)
{
    mig_mode(g, 0, buf, len);
}

static void f_mig_pending(const gpu_info_t *g, char *buf, size_t len)
{
    mig_mode(g, 1, buf, len);
}

static void f_persistence(const gpu_info_t *g, char *buf, size_t len)
{
    (void)g;
    snprintf(buf, len, "Enabled"); /* the status table's "On" */
}

static void f_pstate(const gpu_info_t *g, char *buf, size_t len)
{
    (void)g;
    snprintf(buf, len, "P0");
}

static void f_not_simulated(const gpu_info_t *g, char *buf, size_t len)
{
    (void)g;
    snprintf(buf, len, "[N/A]");
}

typedef struct field {
    const char *name;
    const char *alias; /* NVIDIA's other name for it, NULL none */
    const char *unit;  /* for the header and the values, "" none */
    field_fn fn;
} field_t;

static const field_t fields[] = {
    {"index", NULL, "", f_index},
    {"count", NULL, "", f_count},
    {"name", "gpu_name", "", f_name},
    {"uuid", "gpu_uuid", "", f_uuid},
    {"pci.bus_id", "gpu_bus_id", "", f_bus_id},
    {"driver_version", NULL, "", f_driver},
    {"memory.total", NULL, "MiB", f_mem_total},
    {"memory.used", NULL, "MiB", f_mem_used},
    {"memory.free", NULL, "MiB", f_mem_free},
    {"memory.reserved", NULL, "MiB", f_mem_reserved},
    {"utilization.gpu", NULL, "%", f_util_gpu},
    {"utilization.memory", NULL, "%", f_util_mem},
    {"compute_mode", NULL, "", f_compute_mode},
    {"mig.mode.current", NULL, "", f_mig_current},
    {"mig.mode.pending", NULL, "", f_mig_pending},
    {"persistence_mode", NULL, "", f_persistence},
    {"pstate", NULL, "", f_pstate},
    {"temperature.gpu", NULL, "", f_not_simulated},
    {"power.draw", NULL, "W", f_not_simulated},
    {"power.limit", NULL, "W", f_not_simulated},
    {"fan.speed", NULL, "%", f_not_simulated},
    {"clocks.sm", NULL, "MHz", f_not_simulated},
    {"clocks.mem", NULL, "MHz", f_not_simulated},
};

#define N_FIELDS  (sizeof(fields) / sizeof(fields[0]))
#define MAX_ASKED 64

static const field_t *find_field(const char *name)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (strcmp(fields[i].name, name) == 0 ||
            (fields[i].alias != NULL && strcmp(fields[i].alias, name) == 0))
            return &fields[i];
    }
    return NULL;
}

/* Splits the field list; returns how many, or -1 after printing NVIDIA's error. */
static int parse_fields(char *list, const field_t **out, char **names)
{
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        const field_t *f = find_field(tok);
        if (f == NULL || n == MAX_ASKED) {
            fprintf(stderr, "Field \"%s\" is not a valid field to query.\n\n", tok);
            return -1;
        }
        names[n] = tok;
        out[n++] = f;
    }
    if (n == 0)
        fprintf(stderr, "No fields to query.\n");
    return n > 0 ? n : -1;
}

/* The --format options: csv, then noheader and nounits in any order. Returns 0 or -1. */
static int parse_format(const char *format, int *header, int *units)
{
    char copy[64];
    snprintf(copy, sizeof(copy), "%s", format);
    char *save = NULL;
    char *tok = strtok_r(copy, ",", &save);
    if (tok == NULL || strcmp(tok, "csv") != 0)
        return -1;
    *header = 1;
    *units = 1;
    while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
        if (strcmp(tok, "noheader") == 0)
            *header = 0;
        else if (strcmp(tok, "nounits") == 0)
            *units = 0;
        else
            return -1;
    }
    return 0;
}

static void print_row(FILE *out, const field_t **asked, int n, const gpu_info_t *g, int units)
{
    for (int k = 0; k < n; k++) {
        char value[256];
        asked[k]->fn(g, value, sizeof(value));
        /* "81559 MiB", "37 %": a value with its unit, as NVIDIA's prints them. */
        int with_unit = units && asked[k]->unit[0] != '\0' && strcmp(value, "[N/A]") != 0;
        fprintf(out, "%s%s%s%s", k > 0 ? ", " : "", value, with_unit ? " " : "",
                with_unit ? asked[k]->unit : "");
    }
    fputc('\n', out);
}

int smi_query_gpu(FILE *out, int only, const char *list, const char *format)
{
    int header = 1, units = 1;
    if (format == NULL || parse_format(format, &header, &units) != 0) {
        fprintf(stderr, "%s\n",
                format == NULL ? "Please specify the output format with --format."
                               : "Invalid format: use csv[,noheader][,nounits]");
        return 2;
    }
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", list);
    const field_t *asked[MAX_ASKED];
    char *names[MAX_ASKED];
    int n = parse_fields(copy, asked, names);
    if (n < 0)
        return 2;
    if (header) {
        for (int k = 0; k < n; k++)
            fprintf(out, "%s%s%s%s%s", k > 0 ? ", " : "", names[k],
                    asked[k]->unit[0] != '\0' ? " [" : "", asked[k]->unit,
                    asked[k]->unit[0] != '\0' ? "]" : "");
        fputc('\n', out);
    }
    gpu_info_t g = {0};
    nvmlDeviceGetCount_v2(&g.count);
    for (g.index = 0; g.index < g.count; g.index++) {
        if ((only == SMI_ALL || (unsigned)only == g.index) &&
            nvmlDeviceGetHandleByIndex_v2(g.index, &g.dev) == NVML_SUCCESS)
            print_row(out, asked, n, &g, units);
    }
    return 0;
}
