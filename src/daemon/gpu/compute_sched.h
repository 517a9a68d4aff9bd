/* SPDX-License-Identifier: Apache-2.0 */
/* The GPUs' compute schedulers (gpushare/sched_server.h): gpushared runs them in a thread of its
 * own; a lease's process takes part in the scheduler of one of the lease's GPUs over a channel
 * that gpushared makes for it (the API's compute_join), and the lease leaves them all when it
 * ends. Called on the event loop; the server serializes with its thread. */
#ifndef GS_DAEMON_COMPUTE_SCHED_H
#define GS_DAEMON_COMPUTE_SCHED_H

#include <stddef.h>
#include <stdint.h>

struct gs__daemon;
struct gs__lease;

/* Starts the schedulers of d's GPUs. Returns 0 or -errno with one line in err. */
int gs__compute_sched_open(struct gs__daemon *d, char *err, size_t errlen);

/* Stops them (the members' channels close: their processes run unscheduled until a restarted
 * gpushared takes them back). */
void gs__compute_sched_close(struct gs__daemon *d);

/* Makes a process of lease a member of the scheduler of its part-th GPU, capped at cap_pct
 * percent as well as by the lease's own cap: returns 0 and the member's end of its channel in
 * *fd (the caller sends and closes it), with the share it was given in *guarantee and *cap (per
 * mille); or a code with one line in err. */
int gs__compute_sched_add(struct gs__daemon *d, const struct gs__lease *lease, unsigned part,
                          uint32_t cap_pct, int *fd, uint32_t *guarantee, uint32_t *cap, char *err,
                          size_t errlen);

/* The lease ends: its processes leave every scheduler. */
void gs__compute_sched_drop(struct gs__daemon *d, const struct gs__lease *lease);

/* Device time the scheduler of the lease's part-th GPU granted it so far, in ns (0 when it has
 * no process there); on a GPU whose mode shares compute itself, what the mode measured (mps:
 * NVML's per-process utilization at the lease's share, mps_busy.h; mig: 0). */
uint64_t gs__compute_sched_lease_used(const struct gs__daemon *d, const struct gs__lease *lease,
                                      unsigned part);

#endif
