/* SPDX-License-Identifier: Apache-2.0 */
/* core/: the daemon's leases and what decides them, with no knowledge of NVML, of GPU modes'
 * insides or of clients' connections (docs/daemon.md). The interface of core for gpu/ and serve/:
 *   daemon.h     the daemon's state, and the callbacks through which core tells serve/ about a
 *                lease's holder;
 *   lease.h      a lease and its lifecycle (grant, end, revoke, expire, reap, restore);
 *   mode_ops.h   the mode seam: what a GPU's mode does, called through each GPU's operations;
 *   model.h      what a GPU can give and what a request takes (pure);
 *   place.h      which GPUs a request goes to (pure but for the engine's cache);
 *   queue.h, queue_pass.h  the wait queue and its service (priority, aging, backfill);
 *   reasons.h    every refusal's and wait's reason, from one place;
 *   ledger.h     the leases in SQLite and the history;
 *   regions.h    the leases' sealed memfd regions;
 *   config.h, users.h, clock.h  the configuration, per-user counters and warnings, the clocks;
 *   claim.h      one gpushared per node: its claim on its state directory and its GPUs;
 *   lease_procs.h  processes named so that a reused pid is never taken for them (identity,
 *                signals through pidfds, the peer of a connection), through lease.h.
 * Private to core: place_engine.h. Core includes and calls nothing of gpu/ or
 * serve/ (scripts/check-layers.sh). One thread, the event loop, runs all of it. */
#ifndef GS_DAEMON_CORE_H
#define GS_DAEMON_CORE_H

#include "claim.h"
#include "clock.h"
#include "config.h"
#include "daemon.h"
#include "lease.h"
#include "ledger.h"
#include "mode_ops.h"
#include "model.h"
#include "place.h"
#include "queue.h"
#include "queue_pass.h"
#include "reasons.h"
#include "regions.h"
#include "users.h"

#endif
