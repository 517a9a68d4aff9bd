/* SPDX-License-Identifier: Apache-2.0 */
/* Assertions for the driver-API test programs: print the failing line and exit 1, else silent. */
#ifndef GSIM_TEST_CHECK_H
#define GSIM_TEST_CHECK_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

/* Fails unless call returns expected (a CUresult). */
#define CHECK_RESULT(call, expected)                                                               \
    do {                                                                                           \
        CUresult check_r_ = (call);                                                                \
        if (check_r_ != (expected)) {                                                              \
            const char *check_n_ = NULL;                                                           \
            cuGetErrorName(check_r_, &check_n_);                                                   \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s\n", __FILE__, __LINE__,       \
                    #call, (int)check_r_, check_n_ != NULL ? check_n_ : "?", #expected);           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK(call) CHECK_RESULT(call, CUDA_SUCCESS)

/* Fails unless the two integer values are equal. */
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        unsigned long long check_a_ = (unsigned long long)(a);                                     \
        unsigned long long check_b_ = (unsigned long long)(b);                                     \
        if (check_a_ != check_b_) {                                                                \
            fprintf(stderr, "%s:%d: %s == %llu, expected %s == %llu\n", __FILE__, __LINE__, #a,    \
                    check_a_, #b, check_b_);                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Fails unless cond holds. */
#define CHECK_TRUE(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define GIB (1ull << 30)
#define MIB (1ull << 20)

/* The simulated models' memory as CUDA shows it (data/gpus/gpu-models.csv): CUDA's total (NVML's
 * less the memory the driver reserves) and the device memory of one context. The H100-80GB's
 * figures are measured on a real H100 (data/gpu-facts), the A100-40GB's are estimates. */
#define H100_TOTAL   85017493504ull
#define H100_CONTEXT 543162368ull
#define A100_TOTAL   (40 * GIB - 240 * MIB)
#define A100_CONTEXT (470 * MIB)

#endif
