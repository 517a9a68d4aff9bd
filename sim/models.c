/* SPDX-License-Identifier: Apache-2.0 */
/* GPU models and MIG profile tables, parsed from the CSVs embedded at build time. */
#include "node.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models_data.h" /* generated: models_csv[], mig_profiles_csv[] */

#define MAX_MODELS 32

typedef struct model_table {
    size_t count;
    gsim_model_t models[MAX_MODELS];
} model_table_t;

static model_table_t table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* Splits line (modified in place) at commas into at most max fields; returns the count. */
static int split_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        fields[n++] = p;
        char *comma = strchr(p, ',');
        if (comma == NULL)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

/* Calls fn for every data line (not a comment, not the header) of csv. */
static void for_each_row(const char *csv, void (*fn)(char **fields, int n))
{
    char line[512];
    int header_seen = 0;
    const char *p = csv;
    while (*p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t len = eol != NULL ? (size_t)(eol - p) : strlen(p);
        if (len < sizeof(line) && len > 0 && p[0] != '#') {
            memcpy(line, p, len);
            line[len] = '\0';
            char *fields[16];
            int n = split_fields(line, fields, 16);
            if (header_seen)
                fn(fields, n);
            header_seen = 1;
        }
        p += len + (eol != NULL);
    }
}

static void add_model(char **f, int n)
{
    if (n < 5 || table.count == MAX_MODELS)
        return;
    gsim_model_t *m = &table.models[table.count++];
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", f[0]);
    m->memory_mib = strtoull(f[1], NULL, 10);
    m->sms = (uint32_t)strtoul(f[2], NULL, 10);
    m->mig_compute_slices = (uint32_t)strtoul(f[3], NULL, 10);
    m->mig_memory_slices = (uint32_t)strtoul(f[4], NULL, 10);
    m->fb_mib = n >= 9 ? strtoull(f[5], NULL, 10) : m->memory_mib;
    if (n >= 9) {
        m->reserved_mib = strtoull(f[6], NULL, 10);
        m->ctx_base_mib = strtoull(f[7], NULL, 10);
        m->ctx_sm_kib = strtoull(f[8], NULL, 10);
    }
}

static void add_profile(char **f, int n)
{
    if (n < 8)
        return;
    for (size_t i = 0; i < table.count; i++) {
        gsim_model_t *m = &table.models[i];
        if (strcmp(m->name, f[0]) != 0 || m->n_profiles == GSIM_MAX_PROFILES)
            continue;
        gsim_mig_profile_t *p = &m->profiles[m->n_profiles++];
        snprintf(p->name, sizeof(p->name), "%s", f[1]);
        p->id = (uint32_t)strtoul(f[2], NULL, 10);
        p->compute = (uint32_t)strtoul(f[3], NULL, 10);
        p->memory = (uint32_t)strtoul(f[4], NULL, 10);
        p->max_instances = (uint32_t)strtoul(f[5], NULL, 10);
        p->size = (uint32_t)strtoul(f[7], NULL, 10);
        for (char *s = f[6]; *s != '\0';) {
            char *end;
            unsigned long start = strtoul(s, &end, 10);
            if (end == s || start >= 32)
                break;
            p->starts_mask |= 1u << start;
            s = *end == '|' ? end + 1 : end;
        }
    }
}

static void load_tables(void)
{
    for_each_row(models_csv, add_model);
    for_each_row(mig_profiles_csv, add_profile);
}

size_t gsim_models(const gsim_model_t **models)
{
    pthread_once(&table_once, load_tables);
    *models = table.models;
    return table.count;
}

uint64_t gsim_context_bytes(const gsim_model_t *m, uint32_t sms)
{
    return (m->ctx_base_mib << 20) + (uint64_t)sms * (m->ctx_sm_kib << 10);
}

void gsim_model_cc(const gsim_model_t *m, int *major, int *minor)
{
    /* NVIDIA's compute capabilities of the families (CUDA C++ Programming Guide). */
    static const struct {
        const char *prefix;
        int major, minor;
    } ccs[] = {{"H100", 9, 0}, {"H200", 9, 0}, {"A100", 8, 0}, {"A30", 8, 0},
               {"L4", 8, 9},   {"T4", 7, 5},   {"V100", 7, 0}};
    *major = 8; /* an unknown model looks like an A100 */
    *minor = 0;
    for (size_t i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++) {
        size_t len = strlen(ccs[i].prefix);
        if (strncmp(m->name, ccs[i].prefix, len) == 0 && m->name[len] == '-') {
            *major = ccs[i].major;
            *minor = ccs[i].minor;
        }
    }
}

const gsim_model_t *gsim_model_find(const char *name)
{
    const gsim_model_t *models;
    size_t n = gsim_models(&models);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(models[i].name, name) == 0)
            return &models[i];
    }
    return NULL;
}

/* Parses one "MODEL" or "MODEL*N" item of length len, appending to out at *count. */
static int parse_item(const char *item, size_t len, const gsim_model_t **out, int *count, char *err,
                      size_t errlen)
{
    char buf[64];
    if (len == 0 || len >= sizeof(buf)) {
        snprintf(err, errlen, "GPUSIM_DEVICES: empty or overlong item");
        return -EINVAL;
    }
    memcpy(buf, item, len);
    buf[len] = '\0';
    long repeat = 1;
    char *star = strchr(buf, '*');
    if (star != NULL) {
        char *end;
        *star = '\0';
        repeat = strtol(star + 1, &end, 10);
        if (end == star + 1 || *end != '\0' || repeat < 1 || repeat > GSIM_MAX_DEVICES) {
            snprintf(err, errlen, "GPUSIM_DEVICES: bad count \"%s\" (1-%d)", star + 1,
                     GSIM_MAX_DEVICES);
            return -EINVAL;
        }
    }
    const gsim_model_t *model = gsim_model_find(buf);
    if (model == NULL) {
        snprintf(err, errlen, "GPUSIM_DEVICES: unknown GPU model \"%s\"", buf);
        return -EINVAL;
    }
    if (*count + repeat > GSIM_MAX_DEVICES) {
        snprintf(err, errlen, "GPUSIM_DEVICES: more than %d devices", GSIM_MAX_DEVICES);
        return -EINVAL;
    }
    for (long i = 0; i < repeat; i++)
        out[(*count)++] = model;
    return 0;
}

int gsim_parse_devices(const char *spec, const gsim_model_t **out, char *err, size_t errlen)
{
    int count = 0;
    if (spec == NULL || *spec == '\0')
        spec = "H100-80GB";
    const char *item = spec;
    for (;;) {
        const char *comma = strchr(item, ',');
        size_t len = comma != NULL ? (size_t)(comma - item) : strlen(item);
        int result = parse_item(item, len, out, &count, err, errlen);
        if (result != 0)
            return result;
        if (comma == NULL)
            break;
        item = comma + 1;
    }
    return count;
}
