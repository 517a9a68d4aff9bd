/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's MPS servers: their contexts on each GPU, the clients attached to them, server.log,
 * and the server reset seen on a real H100.
 *
 * A CUDA process that is an MPS client asks the daemon for each context it creates
 * (gsim_mps_client_attach); the server of its user creates its own context on that GPU on the
 * first request and attaches the client process. The reset (data/gpu-facts/h100-gpushare-checks.md,
 * "mode = mps through gpushared", driver 580.159.04): the first client that connects right after
 * two concurrent clients have exited fails to create its context with CUDA_ERROR_LAUNCH_FAILED;
 * the server log says the client "encountered a fatal GPU error" and that the device will be
 * reset, the server destroys its context, and the next client works. gpusim makes it happen every
 * time (the H100 showed it in 4 tries of 5, the other's cause unknown): when a context that had
 * two or more clients attached at once has none left alive, the next request fails ("fatal"),
 * the context is destroyed, and a request after that creates a fresh one. Whether the refused
 * process itself may create a context again is not known from the H100; gpusim lets it (the
 * refused client never held a context the server would wait for). */
#include "mps_internal.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int32_t server_pid(const mpsd_t *d, uint32_t uid)
{
    for (uint32_t i = 0; i < d->state.n_servers; i++) {
        if (d->state.servers[i].uid == uid)
            return d->state.servers[i].pid;
    }
    return 0;
}

void mpsd_server_log(mpsd_t *d, uint32_t uid, const char *fmt, ...)
{
    char stamp[64], msg[512];
    struct timespec ts;
    struct tm tm;
    if (d->server_log == NULL)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(d->server_log, "[%s.%03ld Server %d] %s\n", stamp, ts.tv_nsec / 1000000,
            (int)server_pid(d, uid), msg);
    fflush(d->server_log);
}

/* The context of uid's server on dev, made (unused) when create; NULL when full or absent. */
static mpsd_ctx_t *find_ctx(mpsd_t *d, uint32_t uid, int dev, int create)
{
    mpsd_ctx_t *free_one = NULL;
    for (int i = 0; d->ctx != NULL && i < MPSD_MAX_CONTEXTS; i++) {
        mpsd_ctx_t *c = &d->ctx[i];
        if (c->used && c->uid == uid && c->dev == dev)
            return c;
        if (!c->used && free_one == NULL)
            free_one = c;
    }
    if (!create || free_one == NULL)
        return NULL;
    memset(free_one, 0, sizeof(*free_one));
    free_one->uid = uid;
    free_one->dev = dev;
    return free_one;
}

/* Drops the clients that have exited (a reused pid has another start time). */
static void prune(mpsd_t *d, mpsd_ctx_t *c)
{
    for (int i = 0; i < c->n;) {
        if (gsim_start_ticks_of(c->clients[i].pid) == c->clients[i].start_ticks &&
            c->clients[i].start_ticks != 0) {
            i++;
            continue;
        }
        mpsd_server_log(d, c->uid, "Client %d exit", (int)c->clients[i].pid);
        c->clients[i] = c->clients[--c->n];
        mpsd_server_log(d, c->uid, "Client disconnected. Number of active client contexts is %d",
                        c->n);
    }
}

static void add_client(mpsd_t *d, mpsd_ctx_t *c, int32_t pid)
{
    uint64_t start = gsim_start_ticks_of(pid);
    for (int i = 0; i < c->n; i++) {
        if (c->clients[i].pid == pid && c->clients[i].start_ticks == start)
            return; /* another context of an attached process */
    }
    if (c->n == MPSD_MAX_CLIENTS)
        return;
    c->clients[c->n].pid = pid;
    c->clients[c->n].start_ticks = start;
    c->n++;
    if (c->n > c->peak)
        c->peak = c->n;
    mpsd_server_log(d, c->uid, "New client %d connected to device %d", (int)pid, c->dev);
}

void mpsd_attach(mpsd_t *d, uint32_t uid, int32_t pid, int dev, char *reply, size_t len)
{
    if (mpsd_start_server(d, uid) < 0 || dev < 0 || dev >= GSIM_MAX_DEVICES) {
        snprintf(reply, len, "ok\n"); /* nothing to simulate: an ordinary context */
        return;
    }
    mpsd_ctx_t *c = find_ctx(d, uid, dev, 1);
    if (c == NULL) {
        snprintf(reply, len, "ok\n");
        return;
    }
    if (c->used)
        prune(d, c);
    if (c->used && c->n == 0 && c->peak >= 2) {
        /* The H100's reset: the concurrent clients are gone, the next one meets the fault. */
        mpsd_server_log(d, uid, "Client %d encountered a fatal GPU error.", (int)pid);
        mpsd_server_log(d, uid, "The following devices will be reset: %d", dev);
        mpsd_server_log(d, uid, "Destroy server context on device %d", dev);
        c->used = 0;
        snprintf(reply, len, "fatal\n");
        return;
    }
    if (!c->used) {
        c->used = 1;
        c->peak = c->n = 0;
        mpsd_server_log(d, uid, "Creating server context on device %d", dev);
    }
    add_client(d, c, pid);
    snprintf(reply, len, "ok\n");
}

void mpsd_server_gone(mpsd_t *d, uint32_t uid)
{
    for (int i = 0; d->ctx != NULL && i < MPSD_MAX_CONTEXTS; i++) {
        if (d->ctx[i].used && d->ctx[i].uid == uid)
            d->ctx[i].used = 0;
    }
}

void mpsd_server_tick(mpsd_t *d)
{
    for (int i = 0; d->ctx != NULL && i < MPSD_MAX_CONTEXTS; i++) {
        if (d->ctx[i].used)
            prune(d, &d->ctx[i]);
    }
}
