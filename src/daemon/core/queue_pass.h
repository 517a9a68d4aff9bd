/* SPDX-License-Identifier: Apache-2.0 */
/* The wait queue's service: priority with aging, and backfill behind the requests ahead.
 *
 * Waiting requests are served in order of their effective priority (their priority plus one
 * point per queue_aging of waiting, so a large request is not starved by a stream of higher
 * priority ones), then of arrival. A pass walks them in that order: each that fits on GPUs not
 * held for a request ahead of it starts now (backfill); each that does not gets the GPU(s) it is
 * closest to fitting on held for it, among those not held yet, so that nobody behind it takes
 * what it waits for. A request that fits now therefore starts now unless it would delay a
 * request ahead of it, and the head of the queue starts as soon as its GPU has room. Holds are
 * recomputed at every pass (when a request arrives or capacity comes back). */
#ifndef GS_DAEMON_SCHEDULER_H
#define GS_DAEMON_SCHEDULER_H

#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

/* Grants w the lease on alloc: takes w out of the queue, replies to its connection, frees w. */
typedef void (*gs__queue_grant_fn)(gs__daemon_t *d, gs__waiter_t *w, const gs__alloc_t *alloc);

/* One pass at now_ms (CLOCK_MONOTONIC): grants what may start through grant and records in each
 * remaining waiter why it waits and its position (w->wait). */
void gs__queue_pass(gs__daemon_t *d, int64_t now_ms, gs__queue_grant_fn grant);

/* The effective priority of w at now_ms (its priority plus its aging). */
int64_t gs__queue_priority(const gs__daemon_t *d, const gs__waiter_t *w, int64_t now_ms);

/* Why w waits, for people: gs__reason_wait (reasons.h). */

#endif
