/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in CUDA process for gpusim's NVML, MIG and MPS tests: it uses gpusim's core the way
 * the simulated driver does (a process slot, CUDA_VISIBLE_DEVICES domains, memory charges,
 * kernel intervals on the domain's timeline at the MPS active thread percentage, the MPS pinned
 * memory limit as OOM), driven by one command per line on stdin, one reply line each on stdout:
 *   visible                 -> "visible N TOTAL ..."  (bytes of each visible device)
 *   ctx ORD                 -> "ok"  (context creation: nothing to do here)
 *   charge ORD BYTES        -> "ok" | "oom" | "error"   (BYTES may end in K, M or G)
 *   uncharge ORD BYTES      -> "ok"
 *   run ORD N US            -> "done ELAPSED_US"  (N kernels of US each, 8 queued ahead)
 *   busy ORD MS             -> "ok"  (queues one kernel of MS and returns at once)
 *   mps                     -> "mps ACTIVE PCT LIMIT0 LIMIT1"
 * It prints "ready PID" once set up and exits at end of input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "node.h"

#define MAX_DOMAINS 16
#define QUEUE_DEPTH 8 /* kernels a stream holds before the host waits */

typedef struct helper {
    gsim_node_t *node;
    gsim_domain_t domains[MAX_DOMAINS];
    int n_domains;
    gsim_mps_client_t mps;
    uint64_t held[MAX_DOMAINS];
} helper_t;

static uint64_t parse_bytes(const char *text)
{
    char *end;
    uint64_t v = strtoull(text, &end, 10);
    switch (*end) {
    case 'K':
        return v << 10;
    case 'M':
        return v << 20;
    case 'G':
        return v << 30;
    default:
        return v;
    }
}

static void cmd_visible(helper_t *h)
{
    printf("visible %d", h->n_domains);
    for (int i = 0; i < h->n_domains; i++) {
        uint64_t total = 0, used = 0;
        gsim_mem_info(h->node, h->domains[i], &total, &used);
        printf(" %llu", (unsigned long long)total);
    }
    printf("\n");
}

/* The driver's allocation path: the MPS pinned limit first, then the physical memory. */
static const char *cmd_charge(helper_t *h, int ord, uint64_t bytes)
{
    if (ord < 0 || ord >= h->n_domains)
        return "error";
    uint64_t limit = h->mps.active && ord < GSIM_MAX_DEVICES ? h->mps.pinned_limit[ord] : 0;
    if (limit != 0 && h->held[ord] + bytes > limit)
        return "oom";
    int result = gsim_mem_charge(h->node, h->domains[ord], bytes);
    if (result != 0)
        return result == -ENOMEM ? "oom" : "error";
    h->held[ord] += bytes;
    return "ok";
}

static const char *cmd_uncharge(helper_t *h, int ord, uint64_t bytes)
{
    if (ord < 0 || ord >= h->n_domains)
        return "error";
    gsim_mem_uncharge(h->node, h->domains[ord], bytes);
    h->held[ord] -= bytes < h->held[ord] ? bytes : h->held[ord];
    return "ok";
}

/* Reserves one kernel of dur_ns on the domain's timeline, ready at ready_ns; returns its end. */
static int64_t launch(helper_t *h, int ord, int64_t ready_ns, int64_t dur_ns)
{
    uint32_t pct = h->mps.thread_pct == 0 || h->mps.thread_pct > 100 ? 100 : h->mps.thread_pct;
    gsim_work_t work = {.pid = (int32_t)getpid(),
                        .mps_pct = h->mps.active ? pct : 0,
                        .ready_ns = ready_ns,
                        .work_ns = dur_ns};
    for (;;) {
        int64_t start, end;
        gsim_node_lock(h->node);
        if (gsim_node_self(h->node) != NULL)
            work.pid = gsim_node_self(h->node)->pid; /* the key, as the driver uses it */
        /* (The driver's own booking: the accounting is gpusim's, not a copy of it.) */
        int result = gsim_node_reserve_locked(h->node, h->domains[ord], &work, &start, &end);
        gsim_node_unlock(h->node);
        if (result == 0)
            return end;
        if (result != -EAGAIN)
            return ready_ns;
        gsim_sleep_until(start);
    }
}

static int64_t kernel_ns(long us)
{
    return (int64_t)((double)us * 1000.0 / gsim_time_scale());
}

static void cmd_run(helper_t *h, int ord, long n, long us)
{
    if (ord < 0 || ord >= h->n_domains) {
        printf("error\n");
        return;
    }
    /* Like a stream the host keeps QUEUE_DEPTH kernels ahead of: launch kernel i, then wait for
     * kernel i - QUEUE_DEPTH + 1, so the host's wake-up latency (up to the queued time) does not
     * leave the device idle between kernels. */
    int64_t t0 = gsim_now_ns(), ready = t0, ends[QUEUE_DEPTH];
    for (long i = 0; i < n; i++) {
        ready = launch(h, ord, ready, kernel_ns(us));
        ends[i % QUEUE_DEPTH] = ready;
        if (i + 1 >= QUEUE_DEPTH)
            gsim_sleep_until(ends[(i + 1) % QUEUE_DEPTH]);
    }
    gsim_sleep_until(ready);
    printf("done %lld\n", (long long)((gsim_now_ns() - t0) / 1000));
}

static void dispatch(helper_t *h, char *line)
{
    char cmd[32], a[32], b[32], c[32];
    int n = sscanf(line, "%31s %31s %31s %31s", cmd, a, b, c);
    if (n >= 1 && strcmp(cmd, "visible") == 0) {
        cmd_visible(h);
    } else if (n == 2 && strcmp(cmd, "ctx") == 0) {
        printf("%s\n", atoi(a) >= 0 && atoi(a) < h->n_domains ? "ok" : "error");
    } else if (n == 3 && strcmp(cmd, "charge") == 0) {
        printf("%s\n", cmd_charge(h, atoi(a), parse_bytes(b)));
    } else if (n == 3 && strcmp(cmd, "uncharge") == 0) {
        printf("%s\n", cmd_uncharge(h, atoi(a), parse_bytes(b)));
    } else if (n == 4 && strcmp(cmd, "run") == 0) {
        cmd_run(h, atoi(a), atol(b), atol(c));
    } else if (n == 3 && strcmp(cmd, "busy") == 0 && atoi(a) >= 0 && atoi(a) < h->n_domains) {
        launch(h, atoi(a), gsim_now_ns(), kernel_ns(atol(b) * 1000));
        printf("ok\n");
    } else if (n >= 1 && strcmp(cmd, "mps") == 0) {
        printf("mps %d %u %llu %llu\n", h->mps.active, h->mps.thread_pct,
               (unsigned long long)h->mps.pinned_limit[0],
               (unsigned long long)h->mps.pinned_limit[1]);
    } else {
        printf("error\n");
    }
    fflush(stdout);
}

int main(void)
{
    helper_t h;
    memset(&h, 0, sizeof(h));
    if (gsim_node_open(1, &h.node) != 0)
        return 1;
    h.n_domains = gsim_visible_domains(h.node, h.domains, MAX_DOMAINS);
    int result = gsim_mps_client_detect(h.node, &h.mps);
    if (result != 0) {
        fprintf(stderr, "helper: bad MPS environment: %s\n", strerror(-result));
        return 2;
    }
    /* Like the driver at context creation: an MPS client records its share in its slot. */
    gsim_node_lock(h.node);
    gsim_proc_t *self = gsim_node_self(h.node);
    if (self != NULL && h.mps.active)
        self->mps_pct = h.mps.thread_pct;
    gsim_node_unlock(h.node);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof(line), stdin) != NULL)
        dispatch(&h, line);
    return 0;
}
