/* The processes on the node's GPUs: NVML's list, tied to leases (regions) and users (/proc). */
#include "procs.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Which lease each process attached to a region belongs to, sorted by pid. */
typedef struct owner {
    pid_t pid;
    uint64_t lease;
} owner_t;

static int by_pid(const void *a, const void *b)
{
    const owner_t *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Lists the processes of every lease's region (one pass over the leases). Returns the count
 * (*out allocated, the caller frees it), or -1 when out of memory. */
static int lease_owners(const gs__daemon_t *d, owner_t **out)
{
    gs_region_process_t recs[64];
    size_t n = 0, cap = 0;
    owner_t *owners = NULL;
    for (const gs__lease_t *lease = d->leases; lease != NULL; lease = lease->next) {
        if (lease->region == NULL || gs_region_attached(lease->region) == 0)
            continue;
        int k = gs_region_processes(lease->region, recs, 64);
        if (n + (size_t)k > cap) {
            cap = (n + (size_t)k) * 2;
            owner_t *grown = realloc(owners, cap * sizeof(*owners));
            if (grown == NULL) {
                free(owners);
                return -1;
            }
            owners = grown;
        }
        for (int i = 0; i < k; i++)
            owners[n++] = (owner_t){.pid = recs[i].pid, .lease = lease->rec.id};
    }
    if (n > 0)
        qsort(owners, n, sizeof(*owners), by_pid);
    *out = owners;
    return (int)n;
}

static uint64_t lease_of(const owner_t *owners, int n, pid_t pid)
{
    owner_t key = {.pid = pid};
    const owner_t *found = n > 0 ? bsearch(&key, owners, (size_t)n, sizeof(key), by_pid) : NULL;
    return found != NULL ? found->lease : 0;
}

/* The owner and command name of pid from /proc. */
static void identify(gs__proc_t *proc)
{
    char path[64];
    struct stat st;
    proc->uid = (uid_t)-1;
    proc->name[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%d", (int)proc->pid);
    if (stat(path, &st) == 0)
        proc->uid = st.st_uid;
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)proc->pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return;
    if (fgets(proc->name, sizeof(proc->name), f) != NULL)
        proc->name[strcspn(proc->name, "\n")] = '\0';
    fclose(f);
}

static int grow(gs__procs_t *procs, unsigned need)
{
    if (need <= procs->cap)
        return 0;
    unsigned cap = procs->cap ? procs->cap * 2 : 64;
    while (cap < need)
        cap *= 2;
    gs__proc_t *items = realloc(procs->items, cap * sizeof(*items));
    if (items == NULL)
        return GS_ENOMEM;
    procs->items = items;
    procs->cap = cap;
    return 0;
}

int gs__procs_collect(gs__daemon_t *d, gs__procs_t *procs)
{
    gs__gpu_process_t found[256];
    owner_t *owners = NULL;
    int n_owners = lease_owners(d, &owners);
    procs->n = 0;
    if (n_owners < 0)
        return GS_ENOMEM;
    for (unsigned g = 0; g < d->n_gpus; g++) {
        unsigned count = sizeof(found) / sizeof(found[0]);
        if (gs__inventory_processes(d->inv, g, found, &count) != 0)
            continue;
        if (grow(procs, procs->n + count) != 0) {
            free(owners);
            return GS_ENOMEM;
        }
        for (unsigned k = 0; k < count; k++) {
            gs__proc_t *proc = &procs->items[procs->n++];
            memset(proc, 0, sizeof(*proc));
            proc->gpu = g;
            proc->pid = found[k].pid;
            proc->used = found[k].used;
            proc->lease = lease_of(owners, n_owners, found[k].pid);
            identify(proc);
        }
    }
    free(owners);
    return 0;
}

void gs__procs_free(gs__procs_t *procs)
{
    free(procs->items);
    procs->items = NULL;
    procs->n = procs->cap = 0;
}
