/* SPDX-License-Identifier: Apache-2.0 */
/* Test helper for the gpushared tests: charges memory into a lease's region like the shim
 * would, and speaks raw bytes to the daemon's socket (malformed, huge or no requests). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/quantity.h"
#include "gpushare/region.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: gs-daemon-tool charge SIZE [SECONDS]   reserve SIZE on device 0 of the lease\n"
            "                                             region $GPUSHARE_REGION, then sleep\n"
            "       gs-daemon-tool send SOCKET [MS]        send stdin, print replies until EOF\n"
            "       gs-daemon-tool bigline SOCKET BYTES [MS] send a line of BYTES without newline\n"
            "       gs-daemon-tool idle SOCKET MS          connect, send nothing, print replies\n"
            "       gs-daemon-tool join REGION             join a lease's region, print its id\n");
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int charge(int argc, char **argv)
{
    const char *path = getenv("GPUSHARE_REGION");
    uint64_t bytes;
    char err[GS_QTY_ERR_MAX];
    if (argc < 3 || path == NULL || gs_qty_parse_bytes(argv[2], 0, &bytes, err, sizeof(err))) {
        fprintf(stderr, "gs-daemon-tool charge: need SIZE and $GPUSHARE_REGION\n");
        return 2;
    }
    double seconds = argc > 3 ? atof(argv[3]) : 1e9;
    gs_region_t *region = NULL;
    int slot = -1;
    char why[256];
    int result = gs_region_join(path, &region, why, sizeof(why));
    if (result == 0 && (result = gs_region_attach(region, &slot)) != 0)
        snprintf(why, sizeof(why), "%s", gs_strerror(result));
    if (result != 0) {
        fprintf(stderr, "gs-daemon-tool charge: %s: %s\n", path, why);
        return 1;
    }
    if (gs_region_reserve(region, slot, 0, bytes) != 0) {
        printf("refused\n");
        fflush(stdout);
        gs_region_detach(region, slot);
        gs_region_close(region);
        return 3;
    }
    printf("charged %llu\n", (unsigned long long)bytes);
    fflush(stdout);
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
    for (double waited = 0; !stop && waited < seconds; waited += 0.02)
        nanosleep(&nap, NULL);
    gs_region_release(region, slot, 0, bytes, 1);
    gs_region_detach(region, slot);
    gs_region_close(region);
    return 0;
}

static int connect_to(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        fprintf(stderr, "gs-daemon-tool: cannot connect to %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return fd;
}

/* Prints everything received until EOF ("EOF") or until ms pass without data ("TIMEOUT"). */
static int drain(int fd, int ms)
{
    char buf[65536];
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, ms) <= 0) {
            printf("TIMEOUT\n");
            return 0;
        }
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) {
            printf("EOF\n");
            return 0;
        }
        fwrite(buf, 1, (size_t)n, stdout);
        fflush(stdout);
    }
}

static void send_all(int fd, const char *data, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = send(fd, data + done, len - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the daemon closed: what it said is still readable */
        done += (size_t)n;
    }
}

static int send_stdin(int argc, char **argv)
{
    int fd = connect_to(argv[2]);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
        send_all(fd, buf, n);
    return drain(fd, argc > 3 ? atoi(argv[3]) : 2000);
}

static int bigline(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    size_t len = (size_t)strtoull(argv[3], NULL, 10);
    char *line = malloc(len);
    if (line == NULL)
        return 1;
    memset(line, 'x', len);
    int fd = connect_to(argv[2]);
    send_all(fd, line, len);
    free(line);
    return drain(fd, argc > 4 ? atoi(argv[4]) : 2000);
}

/* Joins the region GPUSHARE_REGION would name (argv[2]) as a process of the lease would. */
static int join(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    gs_region_t *region = NULL;
    char why[256];
    if (gs_region_join(argv[2], &region, why, sizeof(why)) != 0) {
        fprintf(stderr, "gs-daemon-tool join: %s\n", why);
        return 1;
    }
    printf("joined lease %s\n", gs_region_lease_id(region));
    gs_region_close(region);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "join") == 0)
        return join(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "charge") == 0)
        return charge(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "send") == 0)
        return send_stdin(argc, argv);
    if (argc >= 4 && strcmp(argv[1], "bigline") == 0)
        return bigline(argc, argv);
    if (argc >= 4 && strcmp(argv[1], "idle") == 0)
        return drain(connect_to(argv[2]), atoi(argv[3]));
    usage();
    return 2;
}
