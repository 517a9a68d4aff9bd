/* SPDX-License-Identifier: Apache-2.0 */
/* The node's side of CUDA checkpoints (gsim_ckpt_t in node.h): finding a target process by pid,
 * moving its device memory charge off the GPUs and back (all or none), and the futex that carries
 * requests and completions between the requester and the target. The CUDA side — the API, the
 * target's checkpoint thread and the data — is in sim/cuda/checkpoint*.c. Thread-safe; the
 * *_locked functions run with the node lock held. */
#include "node.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int gsim_ckpt_find_locked(gsim_node_t *node, int pid)
{
    if (pid <= 0)
        return -1;
    gsim_node_reap_locked(node);
    uint64_t my_ns = gsim_pidns_of(0);
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        const gsim_proc_t *p = &node->procs[i];
        if (p->pid == 0)
            continue;
        if (p->pid == pid || (p->ns_pid == pid && my_ns != 0 && p->pidns == my_ns))
            return i;
    }
    return -1;
}

/* Takes bytes of GPU d (in GPU instance gi, or the whole GPU) off the device's counters. */
static void device_sub_locked(gsim_node_t *node, int d, int gi, uint64_t bytes)
{
    gsim_device_t *dev = &node->dev[d];
    dev->used_bytes -= bytes < dev->used_bytes ? bytes : dev->used_bytes;
    if (gi >= 0 && gi < GSIM_MAX_GI)
        dev->gi[gi].used_bytes -= bytes < dev->gi[gi].used_bytes ? bytes : dev->gi[gi].used_bytes;
}

void gsim_ckpt_release_locked(gsim_node_t *node, gsim_proc_t *proc)
{
    for (uint32_t d = 0; d < node->n_devices; d++) {
        proc->ckpt.saved[d] = proc->mem[d];
        proc->ckpt.saved_gi[d] = proc->gi[d];
        device_sub_locked(node, (int)d, proc->gi[d], proc->mem[d]);
        proc->mem[d] = 0;
    }
}

/* Nonzero when what proc saved off GPU d fits on the GPU it is to go to, on top of want (bytes
 * already bound for each GPU by earlier entries). */
static int fits_locked(const gsim_node_t *node, const gsim_proc_t *proc, uint32_t d,
                       const uint64_t *want)
{
    int to = proc->ckpt.remap[d], gi = proc->ckpt.saved_gi[d];
    const gsim_device_t *dev = &node->dev[to];
    uint64_t bytes = want[to] + proc->ckpt.saved[d];
    uint64_t usable = gsim_device_usable(dev);
    if (dev->used_bytes > usable || bytes > usable - dev->used_bytes)
        return 0;
    if (gi < 0)
        return 1;
    const gsim_gi_t *g = &dev->gi[gi];
    return g->in_use && g->used_bytes <= g->memory_bytes &&
           proc->ckpt.saved[d] <= g->memory_bytes - g->used_bytes;
}

int gsim_ckpt_reclaim_locked(gsim_node_t *node, gsim_proc_t *proc)
{
    uint64_t want[GSIM_MAX_DEVICES] = {0};
    for (uint32_t d = 0; d < node->n_devices; d++) {
        int to = proc->ckpt.remap[d];
        if (proc->ckpt.saved[d] == 0)
            continue;
        if (to < 0 || (uint32_t)to >= node->n_devices || !fits_locked(node, proc, d, want))
            return -ENOMEM;
        want[to] += proc->ckpt.saved[d];
    }
    for (uint32_t d = 0; d < node->n_devices; d++) {
        uint64_t bytes = proc->ckpt.saved[d];
        if (bytes == 0)
            continue;
        int to = proc->ckpt.remap[d], gi = proc->ckpt.saved_gi[d];
        node->dev[to].used_bytes += bytes;
        if (gi >= 0)
            node->dev[to].gi[gi].used_bytes += bytes;
        proc->mem[to] += bytes;
        proc->gi[to] = gi;
        proc->ckpt.saved[d] = 0;
    }
    return 0;
}

void gsim_ckpt_wait(_Atomic uint32_t *word, uint32_t seen, int timeout_ms)
{
    struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = (timeout_ms % 1000) * 1000000L};
    /* Not FUTEX_PRIVATE: the word is in a mapping shared between processes. */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, timeout_ms < 0 ? NULL : &ts, NULL, 0);
}

void gsim_ckpt_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}
