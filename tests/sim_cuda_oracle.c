/* SPDX-License-Identifier: Apache-2.0 */
/* The oracle of the getProcAddress replay test: for every function name the CUDA runtime looks
 * up, the symbol NVIDIA's cuda.h maps that name to. Compiled twice: as oracle_legacy, and with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM as oracle_ptds (the _ptds/_ptsz names). */
#include <cuda.h>
#include <stddef.h>

#include "sim_cuda_oracle.h"

#define ORACLE_STR2(x) #x
#define ORACLE_STR(x)  ORACLE_STR2(x)
#define ORACLE_NAME(n) {#n, ORACLE_STR(n)},

const sim_cuda_oracle_t ORACLE_TABLE[] = {
#include "sim_cuda_tsv_names.h"
    {NULL, NULL}};
