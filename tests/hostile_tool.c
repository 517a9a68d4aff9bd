/* SPDX-License-Identifier: Apache-2.0 */
/* gs-hostile: what a hostile local user does to gpushared, for the tests of issue 15: resizes or
 * rewrites its lease's region, floods the API socket and the metrics port, joins another user's
 * container lease by a stolen path (issue 34). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/region.h"
#include "gpushare/sched_member.h"
#include "region_internal.h"

static void usage(void)
{
    fprintf(
        stderr,
        "usage: gs-hostile resize                 shrink, grow and fill $GPUSHARE_REGION\n"
        "       gs-hostile forge N [SECONDS]      rewrite N records of it (pid 1, no lock),\n"
        "                                         then stay SECONDS ignoring SIGTERM\n"
        "       gs-hostile flood SOCKET N [LINE]  open N connections (sending LINE on each),\n"
        "                                         print how many stayed, hold them\n"
        "       gs-hostile pipeline SOCKET N      send N status requests, read nothing, hold\n"
        "       gs-hostile tcpidle PORT N         open N idle connections to 127.0.0.1:PORT\n"
        "       gs-hostile hold SOCKET N LINE     send LINE N times on one connection, print\n"
        "                                         how many were granted, hold the leases\n"
        "       gs-hostile adopt PID FD [SECONDS] take the region open as PID's FD as a\n"
        "                                         member (never joined through gpushared),\n"
        "                                         stay SECONDS ignoring SIGTERM\n"
        "       gs-hostile zombie SOCKET LINE     connect from a child that exits at once (a\n"
        "                                         zombie), send LINE, print the child's pid\n"
        "                                         and the reply, reap the child, hold\n"
        "       gs-hostile tcpflood PORT SECONDS  connect to 127.0.0.1:PORT as fast as it can\n"
        "                                         (1000 kept open, the oldest closed)\n"
        "       gs-hostile keep SOCKET ID... [--forge]\n"
        "                                         a child joins the leases, passes their\n"
        "                                         regions over and exits; this process takes\n"
        "                                         them as a member (never joined itself),\n"
        "                                         rewrites every record with --forge, holds\n"
        "       gs-hostile histhold SOCKET N LINE N connections: each acquires with LINE,\n"
        "                                         then asks for its history, reads nothing\n"
        "       gs-hostile histloop SOCKET N      N connections asking for their history in\n"
        "                                         a loop, reading every reply\n"
        "       gs-hostile stall SOCKET N         open N connections, print \"opened\", at\n"
        "                                         SIGUSR1 send a status request on each and\n"
        "                                         count the replies and idle_timeout errors\n"
        "       gs-hostile steal SOCKET ID UUID   join lease ID through SOCKET (a path seen in\n"
        "                                         a CDI spec or a container's mountinfo): its\n"
        "                                         region and GPU UUID's compute scheduler;\n"
        "                                         one line each, joined or gpushared's answer\n");
}

/* The region's descriptor as a process of the lease gets it: joined from gpushared, or the
 * file itself (a path, as older versions gave). */
static int region_fd(void)
{
    const char *spec = getenv("GPUSHARE_REGION");
    if (spec == NULL) {
        fprintf(stderr, "gs-hostile: no GPUSHARE_REGION\n");
        exit(2);
    }
    if (strncmp(spec, "gpushared:", 10) != 0)
        return open(spec, O_RDWR | O_CLOEXEC);
    gs_region_t *region = NULL;
    char why[256];
    if (gs_region_join(spec, &region, why, sizeof(why)) != 0) {
        fprintf(stderr, "gs-hostile: %s\n", why);
        exit(1);
    }
    return gs_region_fd(region); /* the handle stays: its mapping keeps the process a member */
}

static void report(const char *what, int rc)
{
    printf("%s: %s\n", what, rc == 0 ? "done" : strerror(errno));
    fflush(stdout);
}

static int resize(void)
{
    int fd = region_fd();
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return 1;
    report("shrink", ftruncate(fd, 0));
    report("grow", ftruncate(fd, st.st_size + (off_t)(1 << 30)));
    /* Fill whatever filesystem holds it, a MiB at a time (at most 256 MiB). */
    int rc = -1;
    for (off_t at = st.st_size; at < st.st_size + (256 << 20); at += 1 << 20) {
        rc = fallocate(fd, 0, at, 1 << 20);
        if (rc != 0)
            break;
    }
    report("fill", rc);
    sleep(1); /* the daemon looks at the region meanwhile */
    return 0;
}

static int forge(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : GS_REGION_MAX_PROCS;
    double seconds = argc > 3 ? atof(argv[3]) : 0;
    int fd = region_fd();
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(region_layout_t))
        return 1;
    region_layout_t *map = mmap(NULL, sizeof(*map), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return 1;
    for (int i = 0; i < n && i < GS_REGION_MAX_PROCS; i++) {
        map->procs[i].pid = 1;
        map->procs[i].locked = 0;
        map->procs[i].start_time = 1;
    }
    map->attached = UINT32_MAX;
    printf("forged %d records\n", n);
    fflush(stdout);
    signal(SIGTERM, SIG_IGN);
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    for (double waited = 0; waited < seconds; waited += 0.05)
        nanosleep(&nap, NULL);
    return 0;
}

static void raise_fd_limit(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
}

static int unix_conn(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether the daemon turned the connection away: an error line or the end, within ms. */
static int turned_away(int fd, int ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, ms) <= 0)
        return 0;
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    if (n <= 0)
        return 1;
    buf[n] = '\0';
    return strstr(buf, "\"code\":\"busy\"") != NULL;
}

static void hold(void)
{
    for (;;)
        pause();
}

static int flood(int argc, char **argv)
{
    int n = atoi(argv[3]);
    const char *line = argc > 4 ? argv[4] : NULL;
    raise_fd_limit();
    int *fds = calloc((size_t)n, sizeof(int));
    int opened = 0, failed = 0;
    for (int i = 0; i < n && fds != NULL; i++) {
        fds[i] = unix_conn(argv[2]);
        if (fds[i] < 0) {
            failed++;
            continue;
        }
        if (line != NULL && (send(fds[i], line, strlen(line), MSG_NOSIGNAL) < 0 ||
                             send(fds[i], "\n", 1, MSG_NOSIGNAL) < 0))
            failed++;
    }
    sleep(2); /* the daemon answers every connection meanwhile */
    int kept = 0;
    for (int i = 0; i < n && fds != NULL; i++) {
        if (fds[i] < 0)
            continue;
        opened++;
        if (turned_away(fds[i], 0)) {
            close(fds[i]);
            fds[i] = -1;
        } else {
            kept++;
        }
    }
    printf("connected %d, kept %d, turned away %d, failed %d\n", opened, kept, opened - kept,
           failed);
    fflush(stdout);
    hold();
    return 0;
}

static int pipeline(char **argv)
{
    int fd = unix_conn(argv[2]);
    int n = atoi(argv[3]);
    if (fd < 0)
        return 1;
    int sent = 0;
    static const char req[] = "{\"op\":\"status\"}\n";
    for (; sent < n; sent++) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        if (poll(&pfd, 1, 500) <= 0 || send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0)
            break; /* the daemon stopped reading: its buffers stay bounded */
    }
    printf("sent %d requests\n", sent);
    fflush(stdout);
    hold();
    return 0;
}

static int tcpidle(char **argv)
{
    int port = atoi(argv[2]), n = atoi(argv[3]), opened = 0;
    raise_fd_limit();
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
            opened++;
    }
    printf("opened %d\n", opened);
    fflush(stdout);
    hold();
    return 0;
}

/* Reads one reply line from buf (more from fd as needed; what follows it stays in buf).
 * Returns 1 when it is a grant, 0 for another reply, -1 at the end of the connection. */
static int read_line(int fd, char *buf, size_t len, size_t *have)
{
    for (;;) {
        char *nl = memchr(buf, '\n', *have);
        if (nl != NULL) {
            size_t line = (size_t)(nl - buf) + 1;
            static const char mark[] = "\"state\":\"granted\"";
            int granted = memmem(buf, line, mark, sizeof(mark) - 1) != NULL;
            memmove(buf, buf + line, *have - line);
            *have -= line;
            return granted;
        }
        if (*have == len)
            *have = 0; /* a reply longer than the buffer: its end still tells */
        ssize_t n = recv(fd, buf + *have, len - *have, 0);
        if (n <= 0)
            return -1;
        *have += (size_t)n;
    }
}

static int hold_leases(char **argv)
{
    int fd = unix_conn(argv[2]);
    int n = atoi(argv[3]), granted = 0;
    if (fd < 0)
        return 1;
    static char buf[1 << 20];
    size_t have = 0;
    for (int i = 0; i < n; i++) {
        if (send(fd, argv[4], strlen(argv[4]), MSG_NOSIGNAL) < 0 ||
            send(fd, "\n", 1, MSG_NOSIGNAL) < 0)
            break;
        int r = read_line(fd, buf, sizeof(buf), &have);
        if (r < 0)
            break;
        granted += r;
    }
    printf("granted %d\n", granted);
    fflush(stdout);
    hold();
    return 0;
}

static int adopt(int argc, char **argv)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%s/fd/%s", argv[2], argv[3]);
    double seconds = argc > 4 ? atof(argv[4]) : 3600;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    gs_region_t *region = NULL;
    if (fd < 0 || gs_region_adopt(fd, GS_REGION_SEALED | GS_REGION_MEMBER, &region) != 0) {
        fprintf(stderr, "gs-hostile: cannot adopt %s\n", path);
        return 1;
    }
    printf("adopted %s\n", path);
    fflush(stdout);
    signal(SIGTERM, SIG_IGN);
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    for (double waited = 0; waited < seconds; waited += 0.05)
        nanosleep(&nap, NULL);
    return 0;
}

/* The pid-reuse attack of issue 28: the process that connects is a zombie when the daemon
 * accepts; the connection lives on in its parent. */
static int zombie(char **argv)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[2]);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pid_t child = fork();
    if (child == 0)
        _exit(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 ? 0 : 1);
    struct timespec nap = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
    nanosleep(&nap, NULL); /* the child exited: a zombie, not reaped */
    send(fd, argv[3], strlen(argv[3]), MSG_NOSIGNAL);
    send(fd, "\n", 1, MSG_NOSIGNAL);
    char buf[4096];
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    ssize_t n = poll(&pfd, 1, 3000) > 0 ? recv(fd, buf, sizeof(buf) - 1, 0) : -2;
    if (n == -1 && errno == ECONNRESET)
        n = 0; /* closed with the request unread */
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    printf("zombie %d: %s\n", (int)child, n > 0 ? buf : n == 0 ? "closed" : "no reply");
    fflush(stdout);
    waitpid(child, NULL, 0);
    hold();
    return 0;
}

static int tcpflood(char **argv)
{
    int port = atoi(argv[2]);
    double seconds = atof(argv[3]);
    raise_fd_limit();
    static int fds[1000];
    unsigned next = 0, opened = 0;
    for (unsigned i = 0; i < 1000; i++)
        fds[i] = -1;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (fds[next] >= 0)
            close(fds[next]);
        fds[next] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fds[next] >= 0 && connect(fds[next], (struct sockaddr *)&sin, sizeof(sin)) == 0)
            opened++;
        next = (next + 1) % 1000;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    printf("opened %u\n", opened);
    return 0;
}

/* Sends fd over sock (SCM_RIGHTS) with one byte. */
static int send_fd(int sock, int fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    char byte = 'r';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof(control.buf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.buf,
                         .msg_controllen = sizeof(control.buf)};
    if (recvmsg(sock, &msg, 0) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int fd = -1;
    if (c != NULL && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* Rewrites every record of the region mapped from fd (pid 1, attached all ones). */
static void forge_fd(int fd)
{
    region_layout_t *map = mmap(NULL, sizeof(*map), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return;
    for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
        map->procs[i].pid = 1;
        map->procs[i].start_time = 1;
    }
    map->attached = UINT32_MAX;
}

/* Issue 28, finding 2: regions held by a process that is neither the holder's descendant nor a
 * process that joined (a child joined and passed them over). */
static int keep(int argc, char **argv)
{
    int forge_too = strcmp(argv[argc - 1], "--forge") == 0;
    int n = argc - 3 - forge_too, pair[2], kept = 0;
    raise_fd_limit();
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < n; i++) {
            char spec[512], why[256];
            gs_region_t *region = NULL;
            snprintf(spec, sizeof(spec), "gpushared:%s:%s", argv[3 + i], argv[2]);
            if (gs_region_join(spec, &region, why, sizeof(why)) == 0)
                send_fd(pair[1], gs_region_fd(region));
        }
        _exit(0);
    }
    close(pair[1]);
    for (int fd; (fd = recv_fd(pair[0])) >= 0;) {
        gs_region_t *region = NULL;
        if (gs_region_adopt(fd, GS_REGION_SEALED | GS_REGION_MEMBER, &region) == 0)
            kept++;
        if (forge_too)
            forge_fd(fd);
    }
    waitpid(child, NULL, 0);
    printf("kept %d\n", kept);
    fflush(stdout);
    signal(SIGTERM, SIG_IGN);
    hold();
    return 0;
}

/* Issue 28, finding 3: N connections, each holding a lease (never idle) and one unread history
 * reply. */
static int histhold(char **argv)
{
    int n = atoi(argv[3]), held = 0;
    raise_fd_limit();
    static char buf[1 << 16];
    static const char ask[] = "{\"op\":\"history\",\"limit\":5000}\n";
    for (int i = 0; i < n; i++) {
        int fd = unix_conn(argv[2]);
        size_t have = 0;
        if (fd < 0 || send(fd, argv[4], strlen(argv[4]), MSG_NOSIGNAL) < 0 ||
            send(fd, "\n", 1, MSG_NOSIGNAL) < 0 || read_line(fd, buf, sizeof(buf), &have) != 1)
            continue;
        held += send(fd, ask, sizeof(ask) - 1, MSG_NOSIGNAL) > 0;
    }
    printf("held %d\n", held);
    fflush(stdout);
    hold();
    return 0;
}

static int histloop(char **argv)
{
    int n = atoi(argv[3]);
    raise_fd_limit();
    for (int i = 1; i < n; i++) {
        if (fork() == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* they go with the first */
            break;
        }
    }
    static char buf[1 << 20];
    static const char ask[] = "{\"op\":\"history\",\"limit\":5000}\n";
    int fd = unix_conn(argv[2]);
    for (;;) {
        size_t have = 0;
        if (fd < 0 || send(fd, ask, sizeof(ask) - 1, MSG_NOSIGNAL) < 0 ||
            read_line(fd, buf, sizeof(buf), &have) < 0)
            return 1;
    }
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
    (void)sig;
    go = 1;
}

/* Issue 28, finding 12: requests sent while the daemon is stalled are answered, not closed as
 * idle. */
static int stall(char **argv)
{
    int n = atoi(argv[3]), replies = 0, idle = 0;
    raise_fd_limit();
    signal(SIGUSR1, on_usr1);
    int *fds = calloc((size_t)n, sizeof(int));
    for (int i = 0; fds != NULL && i < n; i++)
        fds[i] = unix_conn(argv[2]);
    printf("opened\n");
    fflush(stdout);
    while (!go)
        pause();
    static const char req[] = "{\"op\":\"hello\"}\n";
    for (int i = 0; fds != NULL && i < n; i++)
        if (fds[i] >= 0)
            send(fds[i], req, sizeof(req) - 1, MSG_NOSIGNAL);
    for (int i = 0; fds != NULL && i < n; i++) {
        char buf[512];
        struct pollfd pfd = {.fd = fds[i], .events = POLLIN};
        ssize_t got = fds[i] >= 0 && poll(&pfd, 1, 10000) > 0 ? recv(fds[i], buf, 511, 0) : -1;
        buf[got > 0 ? got : 0] = '\0';
        replies += strstr(buf, "\"ok\":true") != NULL;
        idle += strstr(buf, "idle_timeout") != NULL;
    }
    printf("replies %d, idle_timeout %d\n", replies, idle);
    return 0;
}

/* Issue 34, finding 1: another user's container lease joined through its socket's path (from
 * the lease's CDI spec, or the bind mount's root in a container process's mountinfo): its
 * region, mapped read-write, and a channel of its compute scheduler. Holds nothing. */
static int steal(char **argv)
{
    char spec[4200], why[512];
    snprintf(spec, sizeof(spec), "gpushared:%s:%s", argv[3], argv[2]);
    gs_region_t *region = NULL;
    if (gs_region_join(spec, &region, why, sizeof(why)) == 0) {
        void *map = mmap(NULL, sizeof(region_layout_t), PROT_READ | PROT_WRITE, MAP_SHARED,
                         gs_region_fd(region), 0);
        printf("join: joined lease %s, its region mapped %s\n", gs_region_lease_id(region),
               map != MAP_FAILED ? "read-write" : "read-only");
        if (map != MAP_FAILED)
            munmap(map, sizeof(region_layout_t));
        gs_region_close(region);
    } else {
        printf("join: %s\n", why);
    }
    gs_smember_t *member = NULL;
    gs_smember_terms_t terms;
    if (gs_smember_join(spec, argv[4], 0, &member, &terms, why, sizeof(why)) == 0)
        printf("compute_join: joined, %s\n", member != NULL ? "a channel of its own" : "no gate");
    else
        printf("compute_join: %s\n", why);
    gs_smember_free(member);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "steal") == 0)
        return steal(argv);
    if (argc >= 4 && strcmp(argv[1], "keep") == 0)
        return keep(argc, argv);
    if (argc >= 5 && strcmp(argv[1], "histhold") == 0)
        return histhold(argv);
    if (argc >= 4 && strcmp(argv[1], "histloop") == 0)
        return histloop(argv);
    if (argc >= 4 && strcmp(argv[1], "stall") == 0)
        return stall(argv);
    if (argc >= 4 && strcmp(argv[1], "adopt") == 0)
        return adopt(argc, argv);
    if (argc >= 4 && strcmp(argv[1], "zombie") == 0)
        return zombie(argv);
    if (argc >= 4 && strcmp(argv[1], "tcpflood") == 0)
        return tcpflood(argv);
    if (argc >= 5 && strcmp(argv[1], "hold") == 0)
        return hold_leases(argv);
    if (argc >= 2 && strcmp(argv[1], "resize") == 0)
        return resize();
    if (argc >= 2 && strcmp(argv[1], "forge") == 0)
        return forge(argc, argv);
    if (argc >= 4 && strcmp(argv[1], "flood") == 0)
        return flood(argc, argv);
    if (argc >= 4 && strcmp(argv[1], "pipeline") == 0)
        return pipeline(argv);
    if (argc >= 4 && strcmp(argv[1], "tcpidle") == 0)
        return tcpidle(argv);
    usage();
    return 2;
}
