/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's ground truth of compute shares per container: over a window of SECONDS, the device
 * time of device 0 (the union of a process's kernels on the device timeline, work booked but not
 * run yet excluded: as compute_check reads it) of the processes of each PID namespace given, as a
 * percentage of the window's wall time. A container has a PID namespace of its own, so its
 * processes are the ones recorded with its namespace's inode.
 *
 * usage: gs-sim-devtime SECONDS PIDNS...   (GPUSIM_STATE: the node)
 * prints "PIDNS PERCENT" per namespace, in the order given. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "node.h"

#define MAX_NS 8

/* The device time so far of the processes of namespace ns (ns). */
static int64_t device_time(gsim_node_t *node, uint64_t ns, int64_t now)
{
    int64_t total = 0;
    for (int s = 0; s < GSIM_MAX_PROCS; s++) {
        const gsim_proc_t *rec = &node->procs[s];
        if (rec->pid == 0 || rec->pidns != ns)
            continue;
        total += (int64_t)rec->active_ns[0] -
                 gsim_timeline_future_union_ns(&node->dev[0].timeline, rec->pid, now);
    }
    return total;
}

static void sample(gsim_node_t *node, const uint64_t *ns, int n, int64_t *at, int64_t *out)
{
    gsim_node_lock(node);
    *at = gsim_now_ns();
    for (int i = 0; i < n; i++)
        out[i] = device_time(node, ns[i], *at);
    gsim_node_unlock(node);
}

int main(int argc, char **argv)
{
    double seconds = argc > 2 ? atof(argv[1]) : 0;
    int n = argc - 2;
    if (seconds <= 0 || n > MAX_NS) {
        fprintf(stderr, "usage: gs-sim-devtime SECONDS PIDNS...\n");
        return 2;
    }
    uint64_t ns[MAX_NS];
    for (int i = 0; i < n; i++)
        ns[i] = strtoull(argv[i + 2], NULL, 10);
    gsim_node_t *node;
    if (gsim_node_open(0, &node) != 0) {
        fprintf(stderr, "gs-sim-devtime: no gpusim node (GPUSIM_STATE)\n");
        return 1;
    }
    int64_t t0, t1, before[MAX_NS], after[MAX_NS];
    sample(node, ns, n, &t0, before);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    sample(node, ns, n, &t1, after);
    for (int i = 0; i < n; i++)
        printf("%llu %.1f\n", (unsigned long long)ns[i],
               100.0 * (double)(after[i] - before[i]) / (double)(t1 - t0));
    return 0;
}
