/* SPDX-License-Identifier: Apache-2.0 */
/* Every reason gpushared gives for a refusal or a wait, from one place: why a request can never
 * be served on this node, why it cannot be served now (gpushare run --no-wait), why it waits.
 *
 * A reason names the real constraint: the GPU and its model, and what holds what it lacks (the
 * caller's own leases by id, other users' as a count, root sees every lease with its user;
 * processes of no lease by the memory they hold), the mode or model that does not match, or
 * what the GPU's mode says (MPS serving another user, the MIG instances holding the slots: the
 * mode's why_not, mode_ops.h). Pure: reads the daemon's state, writes one line. The event loop's.
 */
#ifndef GS_DAEMON_REASONS_H
#define GS_DAEMON_REASONS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "mode_ops.h"

/* Why GPU g (position in d->gpus) cannot give req to user uid now, with slots logical GPUs on it
 * (--gpus leases; 0 otherwise): "GPU 0 (A100-40GB) has 10 GiB free of the 30 GiB it needs:
 * your lease 4 (20 GiB) and 1 lease of another user (10 GiB) hold the rest". */
void gs__reason_gpu(const gs__daemon_t *d, unsigned g, const gs_lease_request_t *req, uint32_t uid,
                    unsigned slots, char *buf, size_t len);

/* Why w waits, as the last pass of the queue left it (w->wait) and the GPUs are now. */
void gs__reason_wait(const gs__daemon_t *d, const gs__waiter_t *w, char *buf, size_t len);

/* Why req can never be served on this node: gpus[0..n) are the node's GPUs, empty[0..m) those of
 * the models it names as if nothing were leased (what gs__place_possible could not place it
 * on). Returns GS_ENOFIT, or GS_EAGAIN when a GPU that would serve it cannot serve anything now
 * (its mode's reason), GS_EPERM when that is the administrator's to fix (needs_admin). */
int gs__reason_never(const gs__gpu_t *gpus, unsigned n, const gs__gpu_t *empty, unsigned m,
                     const gs_lease_request_t *req, char *why, size_t whylen);

#endif
