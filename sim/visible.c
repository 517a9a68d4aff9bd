/* CUDA_VISIBLE_DEVICES: which GPUs (or MIG instances) a CUDA process sees, in which order. */
#include "node.h"

#include <stdlib.h>
#include <string.h>

/* Resolves one entry to a domain; returns 0 or -1 when it matches nothing. */
static int resolve_entry(gsim_node_t *node, const char *entry, gsim_domain_t *out)
{
    if (entry[0] >= '0' && entry[0] <= '9') {
        char *end;
        long index = strtol(entry, &end, 10);
        if (*end != '\0' || index < 0 || index >= (long)node->n_devices)
            return -1;
        *out = (gsim_domain_t){.dev = (int)index, .gi = -1};
        return 0;
    }
    if (strncmp(entry, "GPU-", 4) == 0) {
        /* NVIDIA accepts any unique prefix of a UUID. */
        int found = -1;
        for (uint32_t d = 0; d < node->n_devices; d++) {
            if (strncmp(node->dev[d].uuid, entry, strlen(entry)) == 0) {
                if (found >= 0)
                    return -1;
                found = (int)d;
            }
        }
        if (found < 0)
            return -1;
        *out = (gsim_domain_t){.dev = found, .gi = -1};
        return 0;
    }
    return -1;
}

static int already_listed(const gsim_domain_t *list, int n, gsim_domain_t d)
{
    for (int i = 0; i < n; i++) {
        if (list[i].dev == d.dev && list[i].gi == d.gi)
            return 1;
    }
    return 0;
}

int gsim_visible_domains(gsim_node_t *node, gsim_domain_t *out, int max)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    int n = 0;
    gsim_node_lock(node);
    if (env == NULL) {
        for (uint32_t d = 0; d < node->n_devices && n < max; d++)
            out[n++] = (gsim_domain_t){.dev = (int)d, .gi = -1};
        gsim_node_unlock(node);
        return n;
    }
    char entry[128];
    const char *p = env;
    while (*p != '\0' && n < max) {
        size_t len = strcspn(p, ",");
        size_t copy = len < sizeof(entry) - 1 ? len : sizeof(entry) - 1;
        memcpy(entry, p, copy);
        entry[copy] = '\0';
        gsim_domain_t d;
        if (resolve_entry(node, entry, &d) != 0 || already_listed(out, n, d))
            break;
        out[n++] = d;
        p += len + (p[len] == ',');
    }
    gsim_node_unlock(node);
    return n;
}
