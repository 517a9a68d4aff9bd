/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark of gpushared's lease path: concurrent clients, each acquiring a small lease with
 * no-wait semantics and releasing it, in a loop on one connection per client. */
#include "gpushare/client.h"
#include "gpushare/error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct bench_opts {
    const char *socket;
    int daemon_pid; /* to read its CPU time, 0 = unknown */
    int clients;
    int pairs; /* grant+release pairs per client per run */
    int runs;
} bench_opts_t;

typedef struct worker {
    pthread_t thread;
    const bench_opts_t *opts;
    pthread_barrier_t *start;
    double *latency_us; /* one per pair */
    int done;
    int failed;
    char error[256];
} worker_t;

typedef struct run_result {
    double seconds;
    double daemon_cpu_us; /* daemon CPU time per pair, -1 = unknown */
    double pairs_per_s;
    double p50_us, p99_us, max_us;
    int failed;
} run_result_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One acquire (no wait) and one release. Returns 0, or nonzero with a message. */
static int pair(gs_client_t *client, const json_t *acquire, char *err, size_t errlen)
{
    json_t *reply = NULL;
    int result = gs_client_call(client, acquire, 5000, &reply);
    const char *message = NULL;
    if (result == 0 && gs_reply_error(reply, &message) != NULL) {
        snprintf(err, errlen, "acquire refused: %s", message);
        json_decref(reply);
        return 1;
    }
    if (result != 0) {
        snprintf(err, errlen, "acquire: %s", gs_strerror(result));
        return 1;
    }
    json_int_t id = json_integer_value(json_object_get(json_object_get(reply, "lease"), "id"));
    json_decref(reply);
    json_t *release = json_pack("{s:s, s:I}", "op", "release", "lease", id);
    result = gs_client_call(client, release, 5000, &reply);
    json_decref(release);
    if (result != 0 || gs_reply_error(reply, &message) != NULL) {
        snprintf(err, errlen, "release: %s", result != 0 ? gs_strerror(result) : message);
        json_decref(reply);
        return 1;
    }
    json_decref(reply);
    return 0;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    gs_client_t *client = NULL;
    gs_lease_request_t req;
    gs_lease_request_init(&req);
    req.kind = GS_LEASE_MEMORY;
    req.memory = 1 << 20;
    req.wait = 0;
    snprintf(req.command, sizeof(req.command), "bench_leases");
    json_t *acquire = gs_proto_acquire_json(&req);
    if (gs_client_connect(w->opts->socket, &client, w->error, sizeof(w->error)) != 0)
        w->failed = 1;
    pthread_barrier_wait(w->start);
    for (int i = 0; !w->failed && i < w->opts->pairs; i++) {
        double t0 = now_s();
        if (pair(client, acquire, w->error, sizeof(w->error)) != 0) {
            w->failed = 1;
            break;
        }
        w->latency_us[i] = (now_s() - t0) * 1e6;
        w->done++;
    }
    json_decref(acquire);
    gs_client_close(client);
    return NULL;
}

/* The daemon's user + system CPU seconds, or -1. */
static double daemon_cpu_s(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long long utime = 0, stime = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int run_once(const bench_opts_t *opts, run_result_t *out)
{
    worker_t *workers = calloc((size_t)opts->clients, sizeof(*workers));
    double *all = calloc((size_t)opts->clients * (size_t)opts->pairs, sizeof(double));
    pthread_barrier_t start;
    if (workers == NULL || all == NULL) {
        free(workers);
        free(all);
        return 1;
    }
    pthread_barrier_init(&start, NULL, (unsigned)opts->clients + 1);
    for (int i = 0; i < opts->clients; i++) {
        workers[i].opts = opts;
        workers[i].start = &start;
        workers[i].latency_us = all + (size_t)i * (size_t)opts->pairs;
        pthread_create(&workers[i].thread, NULL, work, &workers[i]);
    }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    double cpu0 = daemon_cpu_s(opts->daemon_pid);
    size_t n = 0;
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < opts->clients; i++) {
        pthread_join(workers[i].thread, NULL);
        if (workers[i].failed && !out->failed) {
            fprintf(stderr, "bench_leases: client %d: %s\n", i, workers[i].error);
            out->failed = 1;
        }
        /* Compact each worker's completed pairs to the front of `all`. */
        memmove(all + n, workers[i].latency_us, (size_t)workers[i].done * sizeof(double));
        n += (size_t)workers[i].done;
    }
    out->seconds = now_s() - t0;
    double cpu1 = daemon_cpu_s(opts->daemon_pid);
    out->daemon_cpu_us = cpu0 >= 0 && cpu1 >= 0 && n > 0 ? (cpu1 - cpu0) * 1e6 / (double)n : -1;
    qsort(all, n, sizeof(double), compare_double);
    if (n > 0) {
        out->pairs_per_s = (double)n / out->seconds;
        out->p50_us = all[n / 2];
        out->p99_us = all[(size_t)((double)(n - 1) * 0.99)];
        out->max_us = all[n - 1];
    }
    pthread_barrier_destroy(&start);
    free(workers);
    free(all);
    return out->failed;
}

static int compare_runs(const void *a, const void *b)
{
    const run_result_t *x = a, *y = b;
    return x->pairs_per_s < y->pairs_per_s ? -1 : x->pairs_per_s > y->pairs_per_s;
}

int main(int argc, char **argv)
{
    bench_opts_t opts = {.socket = NULL, .clients = 8, .pairs = 5000, .runs = 3};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--clients") == 0)
            opts.clients = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--pairs") == 0)
            opts.pairs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--runs") == 0)
            opts.runs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--socket") == 0)
            opts.socket = argv[i + 1];
        else if (strcmp(argv[i], "--daemon-pid") == 0)
            opts.daemon_pid = atoi(argv[i + 1]);
    }
    if (opts.clients < 1 || opts.pairs < 1 || opts.runs < 1 || opts.runs > 15) {
        fprintf(stderr, "usage: bench_leases [--socket PATH] [--clients N] [--pairs N] "
                        "[--runs N]\n");
        return 2;
    }
    run_result_t runs[15];
    for (int r = 0; r < opts.runs; r++) {
        if (run_once(&opts, &runs[r]) != 0)
            return 1;
        printf("  run %d: %.0f grant+release pairs/s (%.0f operations/s), latency p50 %.0f us, "
               "p99 %.0f us, max %.0f us; daemon CPU %.0f us per pair\n",
               r + 1, runs[r].pairs_per_s, 2 * runs[r].pairs_per_s, runs[r].p50_us, runs[r].p99_us,
               runs[r].max_us, runs[r].daemon_cpu_us);
    }
    qsort(runs, (size_t)opts.runs, sizeof(runs[0]), compare_runs);
    const run_result_t *m = &runs[opts.runs / 2];
    printf("median of %d runs (%d clients x %d pairs each): %.0f grant+release pairs/s = %.0f "
           "operations/s; latency of a grant+release pair p50 %.0f us, p99 %.0f us, max %.0f us; "
           "daemon CPU %.0f us per pair\n",
           opts.runs, opts.clients, opts.pairs, m->pairs_per_s, 2 * m->pairs_per_s, m->p50_us,
           m->p99_us, m->max_us, m->daemon_cpu_us);
    return 0;
}
