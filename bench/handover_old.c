/* SPDX-License-Identifier: Apache-2.0 */
/* The same measure as bench_handover.c for the compute scheduler of gpushare 0.1 (a System V
 * segment every member wrote, the GPU handed on by the yielding member itself under the
 * segment's lock, and a futex): from the holder's yield to the moment the next holder knows it
 * holds the GPU. bench/handover.sh builds it against that release's src/region/sched*.c taken
 * from git history; it is not part of the build.
 * usage: handover_old DIR */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpushare/sched.h"

#define HANDOVERS 4000

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct side {
    gs_sched_t *s;
    int64_t *samples;
    int n;
} side_t;

static int64_t yielded_at;
static int remaining = HANDOVERS;

static void *run(void *arg)
{
    side_t *side = arg;
    gs_sched_grant_t g;
    for (;;) {
        uint32_t turn = gs_sched_turn(side->s);
        gs_sched_want(side->s, mono_ns(), &g);
        while (!g.held) {
            if (__atomic_load_n(&remaining, __ATOMIC_ACQUIRE) <= 0)
                return NULL;
            gs_sched_wait(side->s, turn, 1000000);
            turn = gs_sched_turn(side->s);
            gs_sched_want(side->s, mono_ns(), &g);
        }
        int64_t at = __atomic_load_n(&yielded_at, __ATOMIC_ACQUIRE);
        if (at != 0 && side->n < HANDOVERS)
            side->samples[side->n++] = mono_ns() - at;
        if (__atomic_sub_fetch(&remaining, 1, __ATOMIC_ACQ_REL) <= 0) {
            gs_sched_yield(side->s, g.epoch, mono_ns(), 0, &g);
            return NULL;
        }
        __atomic_store_n(&yielded_at, mono_ns(), __ATOMIC_RELEASE);
        gs_sched_yield(side->s, g.epoch, mono_ns(), 1, &g);
    }
}

static int compare(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    char path[4200];
    snprintf(path, sizeof(path), "%s/gpushare-sched-GPU-bench", argv[1]);
    gs_sched_t *creator = NULL;
    if (gs_sched_create(path, 0644, &creator) != 0)
        return 1;
    side_t sides[2];
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        char key[16];
        snprintf(key, sizeof(key), "lease/%d", i);
        sides[i].samples = calloc(HANDOVERS, sizeof(int64_t));
        sides[i].n = 0;
        if (sides[i].samples == NULL || gs_sched_open(path, &sides[i].s) != 0 ||
            gs_sched_join(sides[i].s, key, (gs_sched_share_t){500, 0}) != 0)
            return 1;
    }
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, run, &sides[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    int64_t *all = calloc(2 * HANDOVERS, sizeof(int64_t));
    int n = 0;
    for (int i = 0; i < 2; i++) {
        memcpy(all + n, sides[i].samples, (size_t)sides[i].n * sizeof(int64_t));
        n += sides[i].n;
        gs_sched_close(sides[i].s);
    }
    gs_sched_close(creator);
    if (n == 0)
        return 1;
    qsort(all, (size_t)n, sizeof(int64_t), compare);
    printf("  %-52s p50 %6.1f us   p99 %6.1f us   (%d hand-overs)\n",
           "0.1's shared segment (the yielder hands on, futex)", (double)all[n / 2] / 1e3,
           (double)all[n * 99 / 100] / 1e3, n);
    return 0;
}
