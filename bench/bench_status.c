/* SPDX-License-Identifier: Apache-2.0 */
/* Latency of another user's `status` (a fresh connection, one request, its reply, as the CLI
 * does) for bench/hostile.sh: prints the median, p99 and maximum of N requests in ms. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One status round trip on a new connection. Returns its ms, or -1 on failure. */
static double one(const char *path)
{
    double start = now_ms();
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    static const char req[] = "{\"op\":\"status\"}\n";
    char buf[65536];
    size_t have = 0;
    int ok = send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(req) - 1);
    while (ok && memchr(buf, '\n', have) == NULL && have < sizeof(buf)) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        ssize_t n = poll(&pfd, 1, 10000) == 1 ? recv(fd, buf + have, sizeof(buf) - have, 0) : -1;
        ok = n > 0;
        have += ok ? (size_t)n : 0;
    }
    close(fd);
    ok = ok && strstr(buf, "\"ok\":true") != NULL;
    return ok ? now_ms() - start : -1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_status SOCKET N\n");
        return 2;
    }
    int n = atoi(argv[2]), failed = 0, got = 0;
    double *ms = calloc((size_t)n, sizeof(double));
    for (int i = 0; ms != NULL && i < n; i++) {
        double t = one(argv[1]);
        if (t < 0)
            failed++;
        else
            ms[got++] = t;
    }
    if (got == 0) {
        printf("n=0 failed=%d\n", failed);
        return 1;
    }
    qsort(ms, (size_t)got, sizeof(double), cmp);
    printf("n=%d failed=%d median=%.2f p99=%.2f max=%.2f\n", got, failed, ms[got / 2],
           ms[(size_t)(got * 0.99)], ms[got - 1]);
    free(ms);
    return failed == 0 ? 0 : 1;
}
