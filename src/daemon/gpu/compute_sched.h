/* SPDX-License-Identifier: Apache-2.0 */
/* The GPUs' compute schedulers (gpushare/sched.h): gpushared makes one per GPU at start, in
 * state_dir/sched (mode 0755; key files 0644, segments 0666 so that every user's jobs take part),
 * or takes over the one its previous run's jobs still use, keeps them open while it runs, passes
 * the directory to jobs (GPUSHARE_SCHED_DIR) and reads from them the device time each lease was
 * granted, for metrics and status. */
#ifndef GS_DAEMON_GPU_SCHED_H
#define GS_DAEMON_GPU_SCHED_H

#include <stddef.h>
#include <stdint.h>

struct gs__daemon;
struct gs__lease;

/* Writes the directory of the schedulers into buf. */
void gs__compute_sched_dir(const struct gs__daemon *d, char *buf, size_t len);

/* Makes (or, when valid, keeps) the scheduler of every GPU of d. Returns 0 or -errno with one
 * line in err. */
int gs__compute_sched_open(struct gs__daemon *d, char *err, size_t errlen);

/* Closes them (a scheduler stays while jobs use it). */
void gs__compute_sched_close(struct gs__daemon *d);

/* Device time the scheduler of the lease's part-th GPU granted it so far, in ns (0 when it has
 * no process there). */
uint64_t gs__compute_sched_lease_used(const struct gs__daemon *d, const struct gs__lease *lease,
                                      unsigned part);

#endif
