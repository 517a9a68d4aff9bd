/* SPDX-License-Identifier: Apache-2.0 */
/* Placement glue: which of the node's GPUs a lease request goes to. */
#ifndef GS_DAEMON_PLACE_H
#define GS_DAEMON_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Chooses GPUs for req among gpus[0..n) as they are now, following policy; a request pinned to
 * GPUs (req->n_pinned, "gpus_at": NVML indexes) takes exactly those, in the order given, each
 * giving what the request takes of one GPU (a --gpus N lease N / n_pinned slots of each), or
 * does not fit. Otherwise:
 *   - one-GPU requests (--gpu, --gpu-memory): gpushare and fgd ask the placement engine
 *     (fragmentation-aware, docs/placement.md) among the GPUs that fit; bestfit (and the engine
 *     when it cannot decide) take the GPU left with the least free memory (then compute, then
 *     the lowest index), spread the most;
 *   - --gpus N: N logical GPUs as s slots on each of g GPUs with g * s = N, all with the same
 *     overprovision factor, with g as small as possible (whole GPUs when K = 1); bestfit and
 *     gpushare prefer the GPUs with the fewest free slots, spread the most.
 * Returns 0 with *out filled (parts in GPU index order), or GS_ENOFIT when nothing fits now.
 * Reads gpus only (the engine keeps what it learned of the requests). */
int gs__place(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, gs__policy_t policy,
              gs__alloc_t *out);

/* gs__place for a lease of user uid (a GPU's mode may serve one user at a time: mps). Every GPU
 * is asked through its mode (mode_ops.h): a request goes only to GPUs whose mode serves it, and a
 * lease holds a GPU of a one-GPU mode (mps, mig) alone. */
int gs__place_for(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, uint32_t uid,
                  gs__policy_t policy, gs__alloc_t *out);

/* As gs__place_for, on the GPUs whose bit (position in gpus[]) is set in allowed only. */
int gs__place_within(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, uint32_t uid,
                     gs__policy_t policy, uint32_t allowed, gs__alloc_t *out);

/* As gs__place_within on an idle node (nothing leased, any user), best fit: the shape req takes
 * where it could ever be served. Returns 0 with *out, or GS_ENOFIT. */
int gs__place_ever(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req,
                   uint32_t allowed, gs__alloc_t *out);

/* The GPUs (bits by position in gpus[]) req may ever use: of a model it names ("gpu_type"), and
 * among those it is pinned to ("gpus_at"); every GPU when it names neither. */
uint32_t gs__place_eligible(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req);

/* Checks whether req could ever fit on this node, i.e. on its GPUs with nothing leased.
 * Returns 0, GS_ENOFIT with the reason in why (one line, names the largest possible), or
 * GS_EAGAIN when only GPUs that cannot serve anything now could serve it (why: theirs), or
 * GS_EPERM when what keeps those from serving is the administrator's to fix. */
int gs__place_possible(const gs__gpu_t *gpus, unsigned n, const gs_lease_request_t *req, char *why,
                       size_t whylen);

#endif
