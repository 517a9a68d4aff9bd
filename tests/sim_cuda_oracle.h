/* SPDX-License-Identifier: Apache-2.0 */
/* The getProcAddress oracle tables (see sim_cuda_oracle.c). */
#ifndef SIM_CUDA_ORACLE_H
#define SIM_CUDA_ORACLE_H

typedef struct sim_cuda_oracle {
    const char *name;   /* the base name the runtime asks for */
    const char *symbol; /* what cuda.h's macros expand it to */
} sim_cuda_oracle_t;

/* Terminated by a NULL name. */
extern const sim_cuda_oracle_t oracle_legacy[];
extern const sim_cuda_oracle_t oracle_ptds[];

#endif
