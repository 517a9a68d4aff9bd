/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in MIG profile tables: data/gpus/mig-profiles.csv and gpu-models.csv, embedded. */
#include "gpushare/mig.h"

#include "gpushare/error.h"
#include "placement_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig_tables.h" /* generated: models_csv[], mig_profiles_csv[] */

/* Reads a whole decimal field; returns 0 or GS_EFORMAT. */
static int number(const char *text, uint64_t *out)
{
    char *end = NULL;
    if (text[0] < '0' || text[0] > '9')
        return GS_EFORMAT;
    *out = strtoull(text, &end, 10);
    return *end == '\0' ? 0 : GS_EFORMAT;
}

/* Finds model's row in gpu-models.csv: its memory and slices. Returns 0 or GS_ENOENT. */
static int model_row(const char *model, uint64_t *memory_mib, uint64_t *compute, uint64_t *slots)
{
    gs__csv_t csv;
    char err[GS_PLACE_ERR_MAX];
    gs__csv_init(&csv, models_csv, strlen(models_csv), "gpu-models.csv");
    csv.comments = 1;
    int header = 1;
    while (gs__csv_next(&csv, err, sizeof(err)) == 1) {
        if (header || csv.nfields < 5 || strcmp(csv.field[0], model) != 0) {
            header = 0;
            continue;
        }
        if (number(csv.field[1], memory_mib) != 0 || number(csv.field[3], compute) != 0 ||
            number(csv.field[4], slots) != 0)
            return GS_EFORMAT;
        return 0;
    }
    return GS_ENOENT;
}

/* "0|1|2" -> a bit per start. */
static uint32_t parse_starts(const char *text)
{
    uint32_t mask = 0;
    for (const char *p = text; *p != '\0';) {
        char *end = NULL;
        unsigned long s = strtoul(p, &end, 10);
        if (end == p || s >= 32)
            break;
        mask |= UINT32_C(1) << s;
        p = *end == '|' ? end + 1 : end;
    }
    return mask;
}

/* Adds the profile of the current row (of out->model) to out. */
static void add_profile(gs__csv_t *csv, uint64_t memory_mib, gs_mig_catalog_t *out)
{
    uint64_t id, compute, memory, max, size;
    if (csv->nfields < 8 || out->n_profiles == GS_MIG_PROFILES_MAX ||
        number(csv->field[2], &id) != 0 || number(csv->field[3], &compute) != 0 ||
        number(csv->field[4], &memory) != 0 || number(csv->field[5], &max) != 0 ||
        number(csv->field[7], &size) != 0)
        return;
    gs_mig_profile_t *p = &out->profiles[out->n_profiles++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", csv->field[1]);
    p->id = (uint32_t)id;
    p->compute = (uint32_t)compute;
    p->size = (uint32_t)size;
    p->max_instances = (uint32_t)max;
    p->starts = parse_starts(csv->field[6]);
    p->memory_bytes = (memory_mib << 20) / out->memory_slots * memory;
    p->media = strstr(p->name, "+me") != NULL;
}

int gs_mig_catalog_builtin(const char *model, gs_mig_catalog_t *out)
{
    uint64_t memory_mib = 0, compute = 0, slots = 0;
    memset(out, 0, sizeof(*out));
    int result = model_row(model, &memory_mib, &compute, &slots);
    if (result != 0)
        return GS_ENOENT;
    if (compute == 0 || slots == 0 || slots > GS_MIG_SLOTS_MAX)
        return GS_ENOSYS;
    snprintf(out->model, sizeof(out->model), "%s", model);
    out->compute_slices = (uint32_t)compute;
    out->memory_slots = (uint32_t)slots;
    gs__csv_t csv;
    char err[GS_PLACE_ERR_MAX];
    gs__csv_init(&csv, mig_profiles_csv, strlen(mig_profiles_csv), "mig-profiles.csv");
    csv.comments = 1;
    while (gs__csv_next(&csv, err, sizeof(err)) == 1) {
        if (csv.nfields >= 8 && strcmp(csv.field[0], model) == 0)
            add_profile(&csv, memory_mib, out);
    }
    return out->n_profiles > 0 ? 0 : GS_ENOSYS;
}

void gs_mig_builtin_models(char *buf, size_t len)
{
    gs__csv_t csv;
    char err[GS_PLACE_ERR_MAX];
    size_t off = 0;
    buf[0] = '\0';
    gs__csv_init(&csv, models_csv, strlen(models_csv), "gpu-models.csv");
    csv.comments = 1;
    int header = 1;
    while (gs__csv_next(&csv, err, sizeof(err)) == 1 && off < len) {
        uint64_t compute = 0;
        if (header || csv.nfields < 5 || number(csv.field[3], &compute) != 0 || compute == 0) {
            header = 0;
            continue;
        }
        int n = snprintf(buf + off, len - off, "%s%s", off > 0 ? ", " : "", csv.field[0]);
        off += n > 0 ? (size_t)n : 0;
    }
}
