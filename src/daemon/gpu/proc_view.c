/* SPDX-License-Identifier: Apache-2.0 */
/* The processes on the node's GPUs: NVML's list, tied to leases (the watchdog's rules: the
 * holder's descendants, else a region of the process's own user) and users (/proc). */
#include "proc_view.h"
#include "watchdog.h"

#include "gpushare/client.h"
#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The owner and command name of pid from /proc. */
static void identify(gs__proc_row_t *proc)
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
    char raw[sizeof(proc->name)];
    if (fgets(raw, sizeof(raw), f) != NULL) {
        raw[strcspn(raw, "\n")] = '\0';
        gs_display_escape(proc->name, sizeof(proc->name), raw); /* the user's text, shown to root */
    }
    fclose(f);
}

static int grow(gs__proc_rows_t *procs, unsigned need)
{
    if (need <= procs->cap)
        return 0;
    unsigned cap = procs->cap ? procs->cap * 2 : 64;
    while (cap < need)
        cap *= 2;
    gs__proc_row_t *items = realloc(procs->items, cap * sizeof(*items));
    if (items == NULL)
        return GS_ENOMEM;
    procs->items = items;
    procs->cap = cap;
    return 0;
}

int gs__proc_view_collect(gs__daemon_t *d, gs__proc_rows_t *procs)
{
    gs__gpu_process_t found[256];
    procs->n = 0;
    for (unsigned g = 0; g < d->n_gpus; g++) {
        unsigned count = sizeof(found) / sizeof(found[0]);
        if (gs__inventory_processes(d->inv, g, found, &count) != 0)
            continue;
        if (grow(procs, procs->n + count) != 0)
            return GS_ENOMEM;
        for (unsigned k = 0; k < count; k++) {
            gs__proc_row_t *proc = &procs->items[procs->n++];
            memset(proc, 0, sizeof(*proc));
            proc->gpu = g;
            proc->pid = found[k].pid;
            proc->used = found[k].used;
            proc->lease = gs__watchdog_lease_of(d, found[k].pid);
            identify(proc);
        }
    }
    return 0;
}

void gs__proc_view_free(gs__proc_rows_t *procs)
{
    free(procs->items);
    procs->items = NULL;
    procs->n = procs->cap = 0;
}
