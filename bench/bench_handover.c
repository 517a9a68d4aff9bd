/* SPDX-License-Identifier: Apache-2.0 */
/* How long the GPU takes to change hands in gpushared's compute scheduler
 * (gpushare/sched_server.h): from the holder's "yield" to the moment the next holder knows it holds
 * the GPU, over the channels, with the server's thread in between, as a job's agents see it. Two
 * member threads of two leases pass the GPU back and forth HANDOVERS times; each times its own
 * grants (CLOCK_MONOTONIC, the yield's time passed through a shared variable). Prints the median
 * and the 99th percentile. bench/handover.sh runs it beside the same measure of the previous
 * release's shared-segment scheduler (bench/handover_old.c, built from git history).
 * usage: bench_handover */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpushare/sched_member.h"
#include "gpushare/sched_server.h"

#define HANDOVERS 4000

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct side {
    gs_smember_t *m;
    int64_t *samples;
    int n;
} side_t;

static int64_t yielded_at; /* when the last holder yielded (read by the other after its grant) */
static int remaining = HANDOVERS;

static void *run(void *arg)
{
    side_t *s = arg;
    gs_sched_grant_t g;
    for (;;) {
        if (gs_smember_want(s->m, &g) != 0)
            return NULL;
        while (!g.held) {
            if (__atomic_load_n(&remaining, __ATOMIC_ACQUIRE) <= 0 ||
                gs_smember_wait(s->m, -1, 1000000) < 0 || gs_smember_want(s->m, &g) != 0)
                return NULL;
        }
        int64_t at = __atomic_load_n(&yielded_at, __ATOMIC_ACQUIRE);
        if (at != 0 && s->n < HANDOVERS)
            s->samples[s->n++] = mono_ns() - at;
        if (__atomic_sub_fetch(&remaining, 1, __ATOMIC_ACQ_REL) <= 0) {
            gs_smember_yield(s->m, g.epoch, 0);
            return NULL;
        }
        __atomic_store_n(&yielded_at, mono_ns(), __ATOMIC_RELEASE);
        gs_smember_yield(s->m, g.epoch, 1);
    }
}

static int compare(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    gs_sched_server_t *server = NULL;
    if (gs_sched_server_new(1, &server) != 0)
        return 1;
    side_t sides[2];
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        gs_sched_member_info_t info = {.gpu = 0, .share = {500, 0}};
        snprintf(info.key, sizeof(info.key), "lease/%d", i);
        int fd;
        sides[i].samples = calloc(HANDOVERS, sizeof(int64_t));
        sides[i].n = 0;
        if (sides[i].samples == NULL || gs_sched_server_add(server, &info, &fd, NULL, 0) != 0 ||
            gs_smember_new(fd, &sides[i].m) != 0)
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
        gs_smember_free(sides[i].m);
        free(sides[i].samples);
    }
    gs_sched_server_free(server);
    if (n == 0)
        return 1;
    qsort(all, (size_t)n, sizeof(int64_t), compare);
    printf("  %-52s p50 %6.1f us   p99 %6.1f us   (%d hand-overs)\n",
           "gpushared's scheduler (channels, its thread between)", (double)all[n / 2] / 1e3,
           (double)all[n * 99 / 100] / 1e3, n);
    free(all);
    return 0;
}
