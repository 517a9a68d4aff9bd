/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's MPS control daemon: lifetime, control socket, simulated servers and clients.
 *
 * MPS servers are simulated by one child process per user (named nvidia-cuda-mps, as the real
 * server's comm reads), started by start_server or when a client of a new user appears; they only
 * wait to be stopped. Unlike NVIDIA's daemon, servers of several users may run at once. */
#include "mps_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 250 /* housekeeping period: clients, servers */

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

void mpsd_log(mpsd_t *d, const char *fmt, ...)
{
    char stamp[64], msg[512];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (d->log != NULL) {
        fprintf(d->log, "[%s.%03ld Control %d] %s\n", stamp, ts.tv_nsec / 1000000, (int)getpid(),
                msg);
        fflush(d->log);
    }
    if (d->foreground)
        fprintf(stderr, "[%s Control %d] %s\n", stamp, (int)getpid(), msg);
}

static void path_in(const char *dir, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* Writes whole buf into path through a temporary file and rename. Returns 0 or -errno. */
static int write_atomically(const char *path, const void *buf, size_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int result = fchmod(fd, 0644) == 0 && write(fd, buf, len) == (ssize_t)len ? 0 : -EIO;
    close(fd);
    if (result == 0 && rename(tmp, path) != 0)
        result = -errno;
    if (result != 0)
        unlink(tmp);
    return result;
}

void mpsd_save_state(mpsd_t *d)
{
    char path[4200];
    path_in(d->pipe_dir, GSIM_MPS_STATE, path, sizeof(path));
    if (write_atomically(path, &d->state, sizeof(d->state)) != 0)
        mpsd_log(d, "cannot write %s", path);
}

/* mkdir -p. Returns 0 or -errno. */
static int make_dirs(const char *path, mode_t mode)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Takes control_lock: only one daemon per pipe directory. */
static int take_lock(mpsd_t *d, char *err, size_t errlen)
{
    char path[4200];
    path_in(d->pipe_dir, GSIM_MPS_LOCK, path, sizeof(path));
    d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (d->lock_fd < 0) {
        snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(errno));
        return -1;
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(d->lock_fd, F_OFD_SETLK, &fl) != 0) {
        snprintf(err, errlen, "An instance of this daemon is already running");
        return -1;
    }
    return 0;
}

/* Binds the control socket, replacing a stale one (the lock proves nobody serves it). */
static int open_socket(mpsd_t *d, char *err, size_t errlen)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (gsim_mps_socket_path(d->pipe_dir, addr.sun_path, sizeof(addr.sun_path)) != 0) {
        snprintf(err, errlen, "pipe directory path too long: %.400s", d->pipe_dir);
        return -1;
    }
    unlink(addr.sun_path);
    d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (d->listen_fd < 0 || bind(d->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(d->listen_fd, 16) != 0) {
        snprintf(err, errlen, "cannot listen on %.400s: %s", addr.sun_path, strerror(errno));
        return -1;
    }
    chmod(addr.sun_path, 0666);
    return 0;
}

static int resolve_dirs(mpsd_t *d, char *err, size_t errlen)
{
    char dir[4096];
    gsim_mps_pipe_dir(dir, sizeof(dir));
    int result = make_dirs(dir, 0755);
    if (result == 0 && realpath(dir, d->pipe_dir) == NULL)
        result = -errno;
    if (result == 0) {
        gsim_mps_log_dir(dir, sizeof(dir));
        result = make_dirs(dir, 0755);
        if (result == 0 && realpath(dir, d->log_dir) == NULL)
            result = -errno;
    }
    if (result != 0)
        snprintf(err, errlen, "cannot create %.400s: %s", dir, strerror(-result));
    return result;
}

/* Sets up everything a client or a command may look for. Returns 0 or -1 with err set. */
static int start(mpsd_t *d, char *err, size_t errlen)
{
    char path[4200];
    if (resolve_dirs(d, err, errlen) != 0)
        return -1;
    path_in(d->log_dir, GSIM_MPS_LOG, path, sizeof(path));
    d->log = fopen(path, "ae");
    if (d->log == NULL) {
        snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(errno));
        return -1;
    }
    path_in(d->log_dir, "server.log", path, sizeof(path));
    d->server_log = fopen(path, "ae");
    d->ctx = calloc(MPSD_MAX_CONTEXTS, sizeof(*d->ctx));
    if (d->server_log == NULL || d->ctx == NULL) {
        snprintf(err, errlen, "cannot open %.400s: %s", path, strerror(errno));
        return -1;
    }
    if (take_lock(d, err, errlen) != 0 || open_socket(d, err, errlen) != 0)
        return -1;
    path_in(d->pipe_dir, GSIM_MPS_CLIENTS, path, sizeof(path));
    if (mkdir(path, 01777) == 0 || errno == EEXIST)
        chmod(path, 01777); /* clients of every user register here */
    d->state = (gsim_mps_state_t){
        .magic = GSIM_MPS_MAGIC, .daemon_pid = (int32_t)getpid(), .default_thread_pct = 100.0};
    mpsd_save_state(d);
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    path_in(d->pipe_dir, GSIM_MPS_PID_FILE, path, sizeof(path));
    write_atomically(path, pid, (size_t)n);
    mpsd_log(d, "Startup (pipe directory %s)", d->pipe_dir);
    return 0;
}

/* ---- simulated servers ---- */

/* Closes every descriptor from 3 up, except keep (-1: none). */
static void close_fds_from_3(int keep)
{
    for (int fd = 3; fd < 1024; fd++) {
        if (fd != keep)
            close(fd);
    }
}

/* A server: waits to be stopped. Entered with SIGTERM and SIGINT blocked (see start). */
static void server_main(const sigset_t *old_mask)
{
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    close_fds_from_3(-1); /* above all, not the control lock: it must die with the daemon */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    prctl(PR_SET_NAME, "nvidia-cuda-mps");
    sigprocmask(SIG_SETMASK, old_mask, NULL); /* a stop sent before now is delivered here */
    for (;;)
        pause();
}

int mpsd_start_server(mpsd_t *d, uint32_t uid)
{
    for (uint32_t i = 0; i < d->state.n_servers; i++) {
        if (d->state.servers[i].uid == uid)
            return (int)i;
    }
    if (d->state.n_servers == GSIM_MPS_MAX_SERVERS)
        return -1;
    pid_t daemon_pid = getpid();
    sigset_t stop, old_mask;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    /* Blocked across fork: a stop must not reach the child while it has the daemon's handler. */
    sigprocmask(SIG_BLOCK, &stop, &old_mask);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (getppid() != daemon_pid)
            _exit(0);
        server_main(&old_mask);
    }
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (pid < 0)
        return -1;
    int i = (int)d->state.n_servers++;
    d->state.servers[i] = (gsim_mps_server_t){.pid = (int32_t)pid, .uid = uid};
    mpsd_save_state(d);
    mpsd_log(d, "Starting new server %d for user %u", (int)pid, uid);
    return i;
}

static void forget_server(mpsd_t *d, pid_t pid)
{
    for (uint32_t i = 0; i < d->state.n_servers; i++) {
        if (d->state.servers[i].pid == pid) {
            mpsd_server_gone(d, d->state.servers[i].uid);
            d->state.servers[i] = d->state.servers[--d->state.n_servers];
            mpsd_log(d, "Server %d exited", (int)pid);
            mpsd_save_state(d);
            return;
        }
    }
}

static void reap_servers(mpsd_t *d)
{
    pid_t pid;
    while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
        forget_server(d, pid);
}

static void stop_servers(mpsd_t *d)
{
    for (uint32_t i = 0; i < d->state.n_servers; i++)
        kill(d->state.servers[i].pid, SIGTERM);
    for (uint32_t i = 0; i < d->state.n_servers; i++) {
        waitpid(d->state.servers[i].pid, NULL, 0);
        mpsd_server_gone(d, d->state.servers[i].uid);
    }
    d->state.n_servers = 0;
}

/* ---- clients ---- */

/* Calls fn for every live client (unlinking the files of dead ones); returns the live count. */
static int each_client(mpsd_t *d, void (*fn)(mpsd_t *, int32_t pid, uint32_t uid, void *),
                       void *arg)
{
    char dir[4200], path[4500];
    path_in(d->pipe_dir, GSIM_MPS_CLIENTS, dir, sizeof(dir));
    DIR *dp = opendir(dir);
    if (dp == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end != '\0')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct stat st;
        if (!gsim_mps_lock_held(path) || stat(path, &st) != 0) {
            unlink(path);
            continue;
        }
        n++;
        if (fn != NULL)
            fn(d, (int32_t)pid, (uint32_t)st.st_uid, arg);
    }
    closedir(dp);
    return n;
}

static void ensure_server(mpsd_t *d, int32_t pid, uint32_t uid, void *arg)
{
    (void)pid;
    (void)arg;
    mpsd_start_server(d, uid);
}

typedef struct pid_list {
    uint32_t uid;
    int32_t *pids;
    int max, n;
} pid_list_t;

static void collect_client(mpsd_t *d, int32_t pid, uint32_t uid, void *arg)
{
    (void)d;
    pid_list_t *list = arg;
    if (uid == list->uid && list->n < list->max)
        list->pids[list->n++] = pid;
}

int mpsd_client_pids(mpsd_t *d, uint32_t uid, int32_t *pids, int max)
{
    pid_list_t list = {.uid = uid, .pids = pids, .max = max, .n = 0};
    each_client(d, collect_client, &list);
    return list.n;
}

/* Reaps servers and starts one for every user with a client, as the daemon does when a client
 * connects. */
static void housekeeping(mpsd_t *d)
{
    reap_servers(d);
    each_client(d, ensure_server, NULL);
    mpsd_server_tick(d);
}

/* ---- commands ---- */

static int read_line(int fd, char *buf, size_t len)
{
    size_t used = 0;
    while (used < len - 1) {
        ssize_t n = read(fd, buf + used, len - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        if (memchr(buf, '\n', used) != NULL)
            break;
    }
    buf[used] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    return used > 0 ? 0 : -1;
}

static void cleanup(mpsd_t *d)
{
    char path[4200];
    stop_servers(d);
    path_in(d->pipe_dir, GSIM_MPS_SOCKET, path, sizeof(path));
    unlink(path);
    path_in(d->pipe_dir, GSIM_MPS_STATE, path, sizeof(path));
    unlink(path);
    path_in(d->pipe_dir, GSIM_MPS_PID_FILE, path, sizeof(path));
    unlink(path);
    if (d->listen_fd >= 0)
        close(d->listen_fd);
    d->listen_fd = -1;
    mpsd_log(d, "Shutdown");
    /* Last: releasing the lock tells clients there is no daemon any more. */
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    d->lock_fd = -1;
}

/* Serves one connection. Returns 1 when the daemon must stop (cleanup is then done before the
 * reply, so "echo quit | nvidia-cuda-mps-control" returns once the daemon is gone). */
static int serve_connection(mpsd_t *d, int fd)
{
    char line[1024], reply[8192];
    struct timeval timeout = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    if (read_line(fd, line, sizeof(line)) != 0)
        return 0;
    housekeeping(d);
    int dev;
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    if (sscanf(line, "gpusim-attach %d", &dev) == 1 &&
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0) {
        /* A client's context request (gsim_mps_client_attach), not a user command. */
        mpsd_attach(d, (uint32_t)cred.uid, (int32_t)cred.pid, dev, reply, sizeof(reply));
        if (write(fd, reply, strlen(reply)) < 0)
            mpsd_log(d, "cannot send reply: %s", strerror(errno));
        return 0;
    }
    int quit = mpsd_command(d, line, reply, sizeof(reply));
    if (quit)
        cleanup(d);
    size_t len = strlen(reply);
    if (len > 0 && write(fd, reply, len) < 0)
        mpsd_log(d, "cannot send reply: %s", strerror(errno));
    return quit;
}

static void serve(mpsd_t *d)
{
    while (!stop_requested) {
        struct pollfd p = {.fd = d->listen_fd, .events = POLLIN};
        int ready = poll(&p, 1, TICK_MS);
        if (ready > 0 && (p.revents & POLLIN)) {
            int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            int quit = fd >= 0 ? serve_connection(d, fd) : 0;
            if (fd >= 0)
                close(fd);
            if (quit)
                return;
        }
        housekeeping(d);
    }
    mpsd_log(d, "Signal received: stopping");
    cleanup(d);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal; /* no SA_RESTART: poll returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void detach_stdio(void)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0)
        return;
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    close(null);
}

/* The daemon process: starts, reports to ready_fd ("" = ready, else the error), serves. */
static int daemon_main(int foreground, int ready_fd)
{
    mpsd_t d;
    char err[512] = "";
    memset(&d, 0, sizeof(d));
    d.lock_fd = d.listen_fd = -1;
    d.foreground = foreground;
    install_signals();
    int result = start(&d, err, sizeof(err));
    if (result != 0 && foreground)
        fprintf(stderr, "nvidia-cuda-mps-control: %s\n", err);
    if (ready_fd >= 0) {
        if (write(ready_fd, err, strlen(err) + 1) < 0)
            result = -1;
        close(ready_fd);
    }
    if (result == 0) {
        if (!foreground) {
            detach_stdio();
            if (chdir("/") != 0)
                mpsd_log(&d, "cannot chdir to /");
        }
        serve(&d);
    }
    if (d.log != NULL)
        fclose(d.log);
    if (d.server_log != NULL)
        fclose(d.server_log);
    free(d.ctx);
    return result == 0 ? 0 : 1;
}

int mpsd_run(int background)
{
    if (!background)
        return daemon_main(1, -1);
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0) {
        fprintf(stderr, "nvidia-cuda-mps-control: pipe: %s\n", strerror(errno));
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close_fds_from_3(ready[1]); /* the caller's pipes must not stay open in the daemon */
        setsid();
        _exit(daemon_main(0, ready[1]));
    }
    close(ready[1]);
    char err[512] = "";
    ssize_t n = pid > 0 ? read(ready[0], err, sizeof(err) - 1) : -1;
    close(ready[0]);
    if (n <= 0 || err[0] != '\0') {
        err[n > 0 ? n : 0] = '\0';
        fprintf(stderr, "nvidia-cuda-mps-control: %s\n",
                err[0] != '\0' ? err : "the daemon did not start");
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return 1;
    }
    return 0;
}
