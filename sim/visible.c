/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA_VISIBLE_DEVICES: which GPUs (or MIG instances) a CUDA process sees, in which order.
 *
 * MIG follows NVIDIA's MIG user guide ("CUDA Device Enumeration", drivers R470 and later):
 * a MIG device is named by its own UUID "MIG-<uuid>" (or, in the pre-R470 form,
 * "MIG-GPU-<gpu uuid>/<gi id>/<ci id>"); a MIG-enabled GPU named by index or GPU UUID stands for
 * its first MIG device, and offers nothing when it has none (a MIG-enabled GPU cannot run CUDA
 * work outside an instance). CUDA enumerates a single MIG device: when any MIG device is visible,
 * the process sees exactly the first one, and no non-MIG GPU. */
#include "node.h"

#include <stdlib.h>
#include <string.h>

/* A resolved entry: a domain, and whether it is a MIG device. */
typedef struct visible_entry {
    gsim_domain_t domain;
    int mig;
} visible_entry_t;

static int resolve_index(gsim_node_t *node, const char *entry, int *dev)
{
    char *end;
    long index = strtol(entry, &end, 10);
    if (*end != '\0' || index < 0 || index >= (long)node->n_devices)
        return -1;
    *dev = (int)index;
    return 0;
}

/* NVIDIA accepts any unique prefix of a GPU UUID. */
static int resolve_gpu_uuid(gsim_node_t *node, const char *prefix, size_t len, int *dev)
{
    int found = -1;
    for (uint32_t d = 0; d < node->n_devices; d++) {
        if (strncmp(node->dev[d].uuid, prefix, len) == 0) {
            if (found >= 0)
                return -1;
            found = (int)d;
        }
    }
    *dev = found;
    return found >= 0 ? 0 : -1;
}

/* "MIG-GPU-<uuid>/<gi id>/<ci id>", the form of drivers before R470. */
static int resolve_legacy_mig(gsim_node_t *node, const char *entry, gsim_domain_t *out)
{
    const char *gpu = entry + 4;
    const char *slash = strchr(gpu, '/');
    int dev;
    if (slash == NULL || resolve_gpu_uuid(node, gpu, (size_t)(slash - gpu), &dev) != 0)
        return -1;
    char *end;
    unsigned long gi_id = strtoul(slash + 1, &end, 10);
    if (*end != '/')
        return -1;
    unsigned long ci_id = strtoul(end + 1, &end, 10);
    if (*end != '\0' || !node->dev[dev].mig_mode)
        return -1;
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        const gsim_gi_t *gi = &node->dev[dev].gi[g];
        if (!gi->in_use || gi->id != gi_id)
            continue;
        for (int c = 0; c < GSIM_MAX_CI; c++) {
            if (gi->ci[c].in_use && gi->ci[c].id == ci_id) {
                *out = (gsim_domain_t){.dev = dev, .gi = g};
                return 0;
            }
        }
    }
    return -1;
}

/* A whole GPU; a MIG-enabled one stands for its first MIG device (none: out->dev = -1). */
static void whole_gpu(gsim_node_t *node, int dev, visible_entry_t *out)
{
    int gi, ci;
    *out = (visible_entry_t){.domain = {.dev = dev, .gi = -1}, .mig = 0};
    if (!node->dev[dev].mig_mode)
        return;
    out->mig = 1;
    if (gsim_mig_device_at_locked(node, dev, 0, &gi, &ci) == 0)
        out->domain.gi = gi;
    else
        out->domain.dev = -1;
}

/* Resolves one entry; returns 0 or -1 when it matches nothing. */
static int resolve_entry(gsim_node_t *node, const char *entry, visible_entry_t *out)
{
    int dev, gi, ci;
    if (entry[0] >= '0' && entry[0] <= '9') {
        if (resolve_index(node, entry, &dev) != 0)
            return -1;
        whole_gpu(node, dev, out);
        return 0;
    }
    if (strncmp(entry, "GPU-", 4) == 0) {
        if (resolve_gpu_uuid(node, entry, strlen(entry), &dev) != 0)
            return -1;
        whole_gpu(node, dev, out);
        return 0;
    }
    if (strncmp(entry, "MIG-GPU-", 8) == 0) {
        out->mig = 1;
        return resolve_legacy_mig(node, entry, &out->domain);
    }
    if (strncmp(entry, "MIG-", 4) == 0 &&
        gsim_mig_find_uuid_locked(node, entry, &dev, &gi, &ci) == 0) {
        *out = (visible_entry_t){.domain = {.dev = dev, .gi = gi}, .mig = 1};
        return 0;
    }
    return -1;
}

static int already_listed(const visible_entry_t *list, int n, gsim_domain_t d)
{
    for (int i = 0; i < n; i++) {
        if (list[i].domain.dev == d.dev && list[i].domain.gi == d.gi)
            return 1;
    }
    return 0;
}

/* Resolves CUDA_VISIBLE_DEVICES (or every GPU when env is NULL) into list; returns the count.
 * Enumeration stops at the first entry that matches nothing or repeats one. */
static int resolve_all(gsim_node_t *node, const char *env, visible_entry_t *list, int max)
{
    int n = 0;
    if (env == NULL) {
        for (uint32_t d = 0; d < node->n_devices && n < max; d++) {
            whole_gpu(node, (int)d, &list[n]);
            n += list[n].domain.dev >= 0;
        }
        return n;
    }
    char entry[128];
    for (const char *p = env; *p != '\0' && n < max;) {
        size_t len = strcspn(p, ",");
        size_t copy = len < sizeof(entry) - 1 ? len : sizeof(entry) - 1;
        memcpy(entry, p, copy);
        entry[copy] = '\0';
        visible_entry_t e;
        if (resolve_entry(node, entry, &e) != 0)
            break;
        if (e.domain.dev >= 0) {
            if (already_listed(list, n, e.domain))
                break;
            list[n++] = e;
        }
        p += len + (p[len] == ',');
    }
    return n;
}

int gsim_visible_domains(gsim_node_t *node, gsim_domain_t *out, int max)
{
    visible_entry_t list[GSIM_MAX_DEVICES * 2];
    int cap =
        max < (int)(sizeof(list) / sizeof(list[0])) ? max : (int)(sizeof(list) / sizeof(list[0]));
    gsim_node_lock(node);
    int n = resolve_all(node, getenv("CUDA_VISIBLE_DEVICES"), list, cap);
    gsim_node_unlock(node);
    for (int i = 0; i < n; i++) {
        if (list[i].mig) {
            out[0] = list[i].domain;
            return 1;
        }
    }
    for (int i = 0; i < n; i++)
        out[i] = list[i].domain;
    return n;
}
