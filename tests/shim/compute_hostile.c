/* SPDX-License-Identifier: Apache-2.0 */
/* A hostile member of a lease, for compute_check's `hostile=1` leases: run under `gpushare run`
 * (as another user), it takes part in its GPU's scheduler as often as gpushared lets it and
 * abuses everything it holds, without ever launching work:
 * - stall: asks for the GPU, then neither launches nor yields (the daemon must take it back);
 * - churn: yields the moment it is granted and asks again, claiming a late first launch;
 * - flood: sends everything it may say, with random epochs, as fast as it can;
 * - garbage: messages of the wrong size and unknown types;
 * - deaf: never reads its channel;
 * - its lease's region: scribbled over;
 * - other leases: asks to take part in every lease id up to 64 (it must be refused).
 * A channel gpushared closes is asked for again. Prints "pid PID" first and, on SIGTERM,
 * "hostile joins J refused R dropped D" (refused: joins of leases not its own).
 * usage: compute_hostile   (GPUSHARE_REGION and CUDA_VISIBLE_DEVICES from gpushare run) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/region.h"
#include "gpushare/sched_member.h"
#include "gpushare/sched_wire.h"

#define KINDS 5

static volatile sig_atomic_t stop;
static unsigned long joins, refused, dropped;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void say(gs_smember_t *m, uint32_t type, uint64_t epoch, int64_t ns)
{
    gs_sched_msg_t msg = {GS_SCHED_WIRE_MAGIC | type, (uint32_t)rand() & 1, epoch, ns,
                          (uint64_t)rand()};
    send(gs_smember_fd(m), &msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* One step of kind k on channel m. Returns nonzero when gpushared closed it. */
static int step(int k, gs_smember_t *m)
{
    gs_sched_grant_t g;
    if (k == 4) /* deaf: never reads; it only keeps asking */
        return (say(m, GS_SMSG_WANT, 0, 0), 0);
    if (gs_smember_wait(m, -1, 1000000) < 0 || gs_smember_want(m, &g) != 0)
        return 1;
    switch (k) {
    case 0: /* stall: holds what it gets */
        break;
    case 1: /* churn */
        if (g.held) {
            gs_smember_started(m, g.epoch, g.end_ns);
            gs_smember_yield(m, g.epoch, 1);
        }
        break;
    case 2: /* flood */
        for (int i = 0; i < 200; i++)
            say(m, (uint32_t)(1 + rand() % 4), rand() % 2 ? g.epoch : (uint64_t)rand(),
                (int64_t)rand() * 1000);
        break;
    default: /* garbage */
        send(gs_smember_fd(m), "junk", 4, MSG_NOSIGNAL | MSG_DONTWAIT);
        say(m, 77, g.epoch, 0);
        break;
    }
    return 0;
}

/* Scribbles over the lease's region (its own: the one mapping of gpushare's it can write). */
static void scribble(const char *spec)
{
    gs_region_t *r = NULL;
    char err[256];
    if (gs_region_join(spec, &r, err, sizeof(err)) != 0)
        return;
    void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, gs_region_fd(r), 0);
    if (map != MAP_FAILED) {
        for (int i = 0; i < 4096; i++)
            ((unsigned char *)map)[i] = (unsigned char)rand();
        munmap(map, 4096);
    }
    gs_region_close(r);
}

/* Tries every other lease id on the GPU: each must be refused. */
static void try_others(const char *spec, const char *uuid, unsigned long long own)
{
    const char *sock = strchr(strchr(spec, ':') + 1, ':') + 1;
    for (unsigned long long id = 1; id <= 64; id++) {
        char other[4200], err[256];
        gs_smember_t *m = NULL;
        gs_smember_terms_t terms;
        if (id == own)
            continue;
        snprintf(other, sizeof(other), "gpushared:%llu:%s", id, sock);
        if (gs_smember_join(other, uuid, 0, &m, &terms, err, sizeof(err)) != 0)
            refused++;
        else
            gs_smember_free(m);
    }
}

int main(void)
{
    const char *spec = getenv("GPUSHARE_REGION"), *uuid = getenv("CUDA_VISIBLE_DEVICES");
    unsigned long long own = 0;
    if (spec == NULL || uuid == NULL || sscanf(spec, "gpushared:%llu:", &own) != 1) {
        fprintf(stderr, "compute_hostile: run under gpushare run\n");
        return 2;
    }
    signal(SIGTERM, on_signal);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    srand((unsigned)getpid());
    scribble(spec);
    try_others(spec, uuid, own);
    gs_smember_t *m[KINDS] = {NULL};
    gs_smember_terms_t terms;
    char err[256];
    while (!stop) {
        for (int k = 0; k < KINDS && !stop; k++) {
            if (m[k] == NULL) {
                if (gs_smember_join(spec, uuid, 0, &m[k], &terms, err, sizeof(err)) != 0 ||
                    !terms.gate)
                    continue;
                joins++;
            }
            if (step(k, m[k]) != 0) {
                gs_smember_free(m[k]);
                m[k] = NULL;
                dropped++;
            }
        }
    }
    printf("hostile joins %lu refused %lu dropped %lu\n", joins, refused, dropped);
    fflush(stdout);
    _exit(0);
}
