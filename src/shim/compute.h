/* SPDX-License-Identifier: Apache-2.0 */
/* Compute shares inside the shim: the launch gate of each scheduled GPU, its agent thread, and
 * the drain of a process's work (compute.c, agent.c, drain.c).
 *
 * A process of a gpushared lease takes part in the compute scheduler of each GPU it uses
 * (gpushare/sched.h, run by gpushared) over a channel of its own (gpushare/sched_member.h), and
 * has, per scheduled device, a gate that every kernel launch passes. The gate is open while the
 * process runs in its lease's slot and the launches of the current round are within its budget;
 * otherwise the launching thread waits (and wakes the agent through the gate's eventfd). The
 * agent thread of the device asks for the GPU when a thread waits, opens the gate for rounds of
 * launches whose estimated device time fits the slot, and at the end of each round closes it,
 * waits for launches in progress, drains the process's work (cuCtxSynchronize on each of its
 * contexts on the device) and measures how long it took. At the end of the slot it renews it
 * (nobody else waits) or hands the GPU on. */
#ifndef GS_SHIM_COMPUTE_H
#define GS_SHIM_COMPUTE_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

#include "gpushare/sched_member.h"

/* ctr: launches that entered the gate through it (low 32 bits, wrapping) and launches admitted
 * since the gate opened, tickets handed out included (high 32 bits); an attempt the gate refuses
 * is taken back from both. A launch is in progress from its entry (there, or on a ticket in a
 * record of its thread's own, compute.c) until its thread counts it done in that record: a
 * launch on a ticket pays no atomic operation, one through the gate one. (The entries' wrap carries
 * into the round's count: one launch more, once in 2^32.) */
#define GS_GATE_INFLIGHT UINT64_C(0xffffffff)
#define GS_GATE_LAUNCH   (UINT64_C(1) << 32)

typedef struct gs__gate {
    uint64_t ctr;
    uint32_t word;    /* futex: generation << 1 | open */
    uint32_t limit;   /* launches the round allows (read after word) */
    uint32_t blocked; /* threads waiting at the gate */
    int wake_fd;      /* eventfd: a thread that waits at the gate wakes the agent with it */
    int64_t first_ns; /* when the first launch after the gate opened was admitted, 0 = none */
    int ordinal;      /* the CUDA ordinal of the gate's device (its column in the records) */
} gs__gate_t;

typedef struct gs__sched_dev {
    gs__gate_t gate;
    gs_smember_t *member; /* the channel to gpushared's scheduler; NULL while it is lost */
    CUdevice device;
    int ordinal;
    int scheduled;    /* the device's launches pass the gate */
    int lost;         /* the channel to gpushared broke: the agent takes part again */
    uint64_t cost_ns; /* estimated device time per launch (0 = not known yet), agent only */
    uint32_t cap_pct; /* the cap the process asked for (GPUSHARE_COMPUTE_MAX), 0 = none */
    char uuid[48];
} gs__sched_dev_t;

/* Returns the device state of CUDA ordinal ordinal when it is scheduled, else NULL. */
gs__sched_dev_t *gs__compute_dev(int ordinal);

/* The channel to gpushared was lost (it restarted, or dropped the process): asks to take part
 * again, with backoff, until gpushared answers; meanwhile the gate stays open. Returns 0 when
 * the process takes part again, GS_ENOENT when its lease is gone (the device stays unscheduled).
 * Agent thread only. */
int gs__compute_rejoin(gs__sched_dev_t *dev);

/* The slow path of a launch (compute.c): waits until the gate admits it; returns with the launch
 * counted as in progress. */
void gs__gate_wait(gs__gate_t *gate);

/* Opens the gate for a round of limit launches / closes it; wakes the threads that wait. */
void gs__gate_open(gs__gate_t *gate, uint32_t limit);
void gs__gate_close(gs__gate_t *gate);

/* Raises an open round's limit to limit launches in all (a renewed slot). */
void gs__gate_extend(gs__gate_t *gate, uint32_t limit);

/* Launches counted in the current round: admitted, or handed to a thread as tickets (some of
 * which the next opening of the gate may void unused). */
uint32_t gs__gate_launches(const gs__gate_t *gate);

/* A count that moves with every launch past the gate, tickets' included (launches only move
 * when a thread takes tickets): for telling activity, compared with an earlier value. */
uint32_t gs__gate_activity(const gs__gate_t *gate);

/* Waits (at most about 100 ms) until no launch is in progress past the closed gate. */
void gs__gate_quiesce(gs__gate_t *gate);

/* The agent thread of dev (agent.c). Returns nonzero when started. */
int gs__agent_start(gs__sched_dev_t *dev);

/* Drains this process's work on device (drain.c): every context of it the process holds is
 * synchronized. Returns CLOCK_MONOTONIC ns after the drain. Thread-safe. */
int64_t gs__drain(CUdevice device);

/* Context registry for drains (drain.c), fed by context.c: a context the process made
 * (cuCtxCreate) or retained (the primary context, primary nonzero) on device. Before it
 * destroys a context, context.c calls gs__ctx_forget; around the driver's release or reset of a
 * primary context, gs__ctx_primary_begin and gs__ctx_primary_end. Forget and begin wait for a
 * drain in progress on that context to end (no lock is held meanwhile), and no drain starts on
 * it until end; primary contexts stay registered (a drain skips them while inactive). No-ops
 * while compute shares are off. */
void gs__ctx_note(CUcontext ctx, CUdevice device, int primary);
void gs__ctx_forget(CUcontext ctx);
void gs__ctx_primary_begin(CUdevice device);
void gs__ctx_primary_end(CUdevice device);

/* CLOCK_MONOTONIC in ns. */
int64_t gs__mono_ns(void);

#endif
