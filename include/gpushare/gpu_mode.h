/* SPDX-License-Identifier: Apache-2.0 */
/* GPU modes as the client, the CLI and the daemon name them: the enum, names and flags
 * generated from the one table of modes (gpushare/gpu_modes.def). Pure functions over constant
 * tables: thread-safe. */
#ifndef GPUSHARE_GPU_MODE_H
#define GPUSHARE_GPU_MODE_H

#include <stddef.h>

/* What the client, the CLI and doctor know of a mode (the table's flags column). */
enum {
    GS_MODE_SHARES_GPU = 1,    /* several leases may hold one GPU at once */
    GS_MODE_MPS_SERVER = 2,    /* its GPUs are served by NVIDIA's MPS control daemon */
    GS_MODE_MIG_INSTANCES = 4, /* its GPUs need MIG mode on; leases are MIG instances (and
                                  --mig-profile leases go to its GPUs only) */
};

/* Which GPUs a request may go to (a request's "mode", --mode), and a GPU's mode (never ANY). */
typedef enum gs_gpu_mode {
    GS_GPU_MODE_ANY = 0, /* any GPU whose mode can serve the request */
#define GS_GPU_MODE(id, name, flags, summary) GS_GPU_MODE_##id,
#include "gpushare/gpu_modes.def"
#undef GS_GPU_MODE
    GS_GPU_MODE_END /* not a mode: one past the last */
} gs_gpu_mode_t;

/* The mode a GPU has when the configuration names none. */
#define GS_GPU_MODE_DEFAULT GS_GPU_MODE_SHARED

/* Returns the name of a GPU mode ("mps"; "any" for GS_GPU_MODE_ANY), "?" for an unknown value.
 * Never NULL. */
const char *gs_gpu_mode_name(gs_gpu_mode_t mode);

/* Parses a GPU mode name (a name of the table, or "any"). Returns 0 and *mode, or GS_EINVAL. */
int gs_gpu_mode_parse(const char *name, gs_gpu_mode_t *mode);

/* The mode's GS_MODE_* flags (0 for ANY and unknown values). */
unsigned gs_gpu_mode_flags(gs_gpu_mode_t mode);

/* The mode's one-line summary ("" for ANY and unknown values). Never NULL. */
const char *gs_gpu_mode_summary(gs_gpu_mode_t mode);

/* The first mode (in the table's order) whose flags include all of flags, or GS_GPU_MODE_ANY
 * when none has them. */
gs_gpu_mode_t gs_gpu_mode_with(unsigned flags);

/* Writes the names of the modes whose flags include all of `with` (0: every mode) for a
 * message, as "a, b or c": in the table's order, except that the modes with all of `first`
 * (when not 0) come before the others; each in double quotes when quote is set; then `extra`
 * (NULL: nothing) as the last name. Returns buf. */
char *gs_gpu_mode_list(unsigned with, unsigned first, int quote, const char *extra, char *buf,
                       size_t len);

#endif
