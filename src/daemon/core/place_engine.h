/* SPDX-License-Identifier: Apache-2.0 */
/* The placement engine behind the daemon's gpushare and fgd policies. */
#ifndef GS_DAEMON_PLACE_ENGINE_H
#define GS_DAEMON_PLACE_ENGINE_H

#include "config.h"
#include "model.h"

/* Chooses, with the placement engine's policy (gpushare or fgd), the GPU a one-GPU lease goes
 * to among gpus[0..n) whose fits[i] is set; parts[i] is what the lease would take of GPU i.
 * The engine learns the lease shapes it is asked about (its target workload). Returns the GPU's
 * index, or -1 when the engine cannot decide (the caller then uses its built-in rule). Not
 * thread-safe: the daemon's event loop is its only caller. */
int gs__place_engine_pick(const gs__gpu_t *gpus, unsigned n, const gs__part_t *parts,
                          const int *fits, gs__policy_t policy);

/* Frees the engine (at shutdown). */
void gs__place_engine_free(void);

#endif
