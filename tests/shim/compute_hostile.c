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
 * Two attacks of issue 34 instead, each alone:
 * - --churn N: N channels, each answering every grant at once with a first launch and a yield
 *   that still wants, never launching (what it costs the others is the hand-overs);
 * - --hoard GPUSHARE: as many channels and leases as gpushared lets its user hold on the GPU,
 *   all idle: a channel of its own lease, leases of 1 MiB (`GPUSHARE run --gpu-memory 1M --
 *   compute_hostile --hold 3`, each holding 3 channels) until one is refused, then channels of
 *   its own lease until refused; prints "pid PID" once they all hold, then what they hold.
 * usage: compute_hostile [--churn N | --hoard GPUSHARE | --hold N]   (GPUSHARE_REGION and
 * CUDA_VISIBLE_DEVICES from gpushare run) */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/region.h"
#include "gpushare/sched_member.h"
#include "gpushare/sched_wire.h"

#define KINDS      5
#define MAX_CHANS  256
#define MAX_HOARDS 80

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

/* Joins the lease of spec on uuid up to max times (until refused); returns how many joined. */
static int join_many(const char *spec, const char *uuid, gs_smember_t **m, int max)
{
    gs_smember_terms_t terms;
    char err[256];
    int n = 0;
    while (n < max && gs_smember_join(spec, uuid, 0, &m[n], &terms, err, sizeof(err)) == 0 &&
           terms.gate)
        n++;
    return n;
}

/* --churn: every grant on any of the n channels answered at once, never launching. */
static void churn(gs_smember_t **m, int n)
{
    struct pollfd pfd[MAX_CHANS];
    for (int i = 0; i < n; i++)
        pfd[i] = (struct pollfd){.fd = gs_smember_fd(m[i]), .events = POLLIN};
    while (!stop) {
        for (int i = 0; i < n; i++) {
            gs_sched_grant_t g;
            if (m[i] == NULL || gs_smember_want(m[i], &g) != 0) {
                pfd[i].fd = -1;
                continue;
            }
            if (g.held) {
                gs_smember_started(m[i], g.epoch, g.end_ns);
                gs_smember_yield(m[i], g.epoch, 1);
            }
        }
        poll(pfd, (nfds_t)n, 1);
    }
}

/* --hoard (see the top). Its SIGTERM is passed on to the leases it made. */
static void hoard(const char *spec, const char *uuid, const char *gpushare, gs_smember_t **m)
{
    pid_t kids[MAX_HOARDS];
    int n_kids = 0, held = join_many(spec, uuid, m, 1), leases = held > 0, total = held;
    char self[4200];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[len > 0 ? len : 0] = '\0';
    while (held > 0 && n_kids < MAX_HOARDS) {
        int fds[2];
        char line[160];
        if (pipe(fds) != 0)
            break;
        pid_t kid = fork();
        if (kid == 0) {
            dup2(fds[1], 1);
            execl(gpushare, gpushare, "run", "--gpu-memory", "1M", "--", self, "--hold", "3",
                  (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        FILE *out = fdopen(fds[0], "r");
        held = 0;
        if (out != NULL && fgets(line, sizeof(line), out) != NULL)
            sscanf(line, "hostile held %d", &held);
        if (out != NULL)
            fclose(out);
        kids[n_kids++] = kid;
        leases += held > 0;
        total += held;
    }
    total += join_many(spec, uuid, m + 1, MAX_CHANS - 1); /* the user's last channels */
    printf("pid %d\nhostile holds %d channels in %d leases (the last lease refused)\n",
           (int)getpid(), total, leases);
    fflush(stdout);
    while (!stop)
        pause();
    for (int i = 0; i < n_kids; i++)
        kill(kids[i], SIGTERM);
    for (int i = 0; i < n_kids; i++)
        waitpid(kids[i], NULL, 0);
}

/* The abuses of issue 20, all at once (see the top). */
static void abuse(const char *spec, const char *uuid, unsigned long long own)
{
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
}

int main(int argc, char **argv)
{
    const char *spec = getenv("GPUSHARE_REGION"), *uuid = getenv("CUDA_VISIBLE_DEVICES");
    unsigned long long own = 0;
    if (spec == NULL || uuid == NULL || sscanf(spec, "gpushared:%llu:", &own) != 1) {
        fprintf(stderr, "compute_hostile: run under gpushare run\n");
        return 2;
    }
    signal(SIGTERM, on_signal);
    static gs_smember_t *m[MAX_CHANS];
    if (argc == 3 && strcmp(argv[1], "--churn") == 0) {
        int want = atoi(argv[2]), n = join_many(spec, uuid, m, want < MAX_CHANS ? want : MAX_CHANS);
        printf("pid %d\nhostile churns on %d of %d channels\n", (int)getpid(), n, want);
        fflush(stdout);
        churn(m, n);
    } else if (argc == 3 && strcmp(argv[1], "--hoard") == 0) {
        hoard(spec, uuid, argv[2], m);
    } else if (argc == 3 && strcmp(argv[1], "--hold") == 0) {
        int want = atoi(argv[2]);
        printf("hostile held %d channels\n",
               join_many(spec, uuid, m, want > 0 && want < MAX_CHANS ? want : MAX_CHANS));
        fflush(stdout);
        while (!stop)
            pause();
    } else {
        abuse(spec, uuid, own);
    }
    fflush(stdout);
    _exit(0);
}
