/* SPDX-License-Identifier: Apache-2.0 */
/* JSON views of the daemon's state for replies: a lease, its environment, the node's status. */
#ifndef GS_DAEMON_VIEWS_H
#define GS_DAEMON_VIEWS_H

#include <jansson.h>
#include <stddef.h>

#include "core/core.h"
#include "gpu/gpu.h"

/* A lease with its live use (docs/api.md, "lease object"). New reference. */
json_t *gs__view_lease(const gs__daemon_t *d, const gs__lease_t *lease);

/* The lease as a connection on its own socket sees it (a container): gs__view_lease without
 * what names the host (the holder's pid, the main socket's path, the cgroup). */
json_t *gs__view_lease_inside(const gs__daemon_t *d, const gs__lease_t *lease);

/* The environment the lease's job runs with: CUDA_VISIBLE_DEVICES, GPUSHARE_REGION,
 * GPUSHARE_MEMORY_LIMIT, GPUSHARE_COMPUTE_SHARE, GPUSHARE_COMPUTE_MAX, GPUSHARE_LEASE_ID. */
json_t *gs__view_env(const gs__daemon_t *d, const gs__lease_t *lease);

/* What the configuration sets, as gpushared --check-config --json prints it (a new reference):
 * its file, socket, state and runtime directories, metrics_listen, enforce, the NVML library,
 * the MPS control program, gpusim's node, and each GPU with its mode, overprovision and reserve. */
json_t *gs__view_config(const gs__daemon_t *d);

/* The directories a lease's job puts ahead of its search paths ("env_prepend": {"PATH": DIR,
 * "LD_LIBRARY_PATH": DIR}): gpusim's, on a simulated node; empty otherwise. A new reference. */
json_t *gs__view_env_paths(const gs__daemon_t *d);

/* The node's GPUs with their leases as cred may see them: its own leases (root: all) in
 * detail, the others only as a count and a sum; with processes, each GPU's processes the same
 * way (gpu/proc_view.h); the queue, with cred's waiting requests (root: all). New reference. */
json_t *gs__view_status(const gs__daemon_t *d, const gs__cred_t *cred, int processes);

/* cred's waiting requests (root: all) in queue order: position, user, name, command, request,
 * waiting time and why it waits (docs/api.md, "pending object"). New reference. */
json_t *gs__view_pending(const gs__daemon_t *d, const gs__cred_t *cred);

/* The name of a process's user: its lease's user, else from passwd (uid), else "?". */
void gs__view_user_name(uid_t uid, const gs__lease_t *lease, char *buf, size_t len);

#endif
