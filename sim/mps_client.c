/* SPDX-License-Identifier: Apache-2.0 */
/* MPS client side: does a live MPS control daemon serve this process, and with which limits.
 *
 * A live daemon is one that holds the OFD lock on control_lock in the pipe directory (see
 * mps/mps_state.h); its defaults come from its state file. The client's active thread percentage
 * is the daemon's default, lowered (never raised) by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; its pinned
 * device memory limit per CUDA ordinal is the daemon's default, lowered by
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (which alone sets it when the daemon has none). A detected
 * client registers itself in gpusim-clients/ so the daemon can list it (get_client_list), and
 * asks the daemon for each context it creates (gsim_mps_client_attach: the server may refuse one
 * after a fatal error, see sim/mps/server.c). */
#include "node.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "mps/mps_state.h"

void gsim_mps_pipe_dir(char *buf, size_t len)
{
    const char *env = getenv("CUDA_MPS_PIPE_DIRECTORY");
    snprintf(buf, len, "%s", env != NULL && *env != '\0' ? env : "/tmp/nvidia-mps");
}

void gsim_mps_log_dir(char *buf, size_t len)
{
    const char *env = getenv("CUDA_MPS_LOG_DIRECTORY");
    snprintf(buf, len, "%s", env != NULL && *env != '\0' ? env : "/var/log/nvidia-mps");
}

int gsim_mps_socket_path(const char *dir, char *buf, size_t len)
{
    size_t dlen = strlen(dir), slen = strlen(GSIM_MPS_SOCKET);
    if (dlen + 1 + slen + 1 > len)
        return -ENAMETOOLONG;
    memcpy(buf, dir, dlen);
    buf[dlen] = '/';
    memcpy(buf + dlen + 1, GSIM_MPS_SOCKET, slen + 1);
    return 0;
}

int gsim_mps_lock_held(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    int held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return held;
}

int gsim_mps_read_state(const char *dir, gsim_mps_state_t *out)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, GSIM_MPS_LOCK);
    if (!gsim_mps_lock_held(path))
        return -ENOENT;
    snprintf(path, sizeof(path), "%s/%s", dir, GSIM_MPS_STATE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -EIO;
    ssize_t n = read(fd, out, sizeof(*out));
    close(fd);
    if (n != (ssize_t)sizeof(*out) || out->magic != GSIM_MPS_MAGIC)
        return -EIO;
    return 0;
}

int gsim_mps_parse_size(const char *text, uint64_t *bytes)
{
    char *end;
    if (text == NULL || *text < '0' || *text > '9')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'K':
    case 'k':
        shift = 10;
        break;
    case 'M':
    case 'm':
        shift = 20;
        break;
    case 'G':
    case 'g':
        shift = 30;
        break;
    case 'T':
    case 't':
        shift = 40;
        break;
    default:
        break;
    }
    if (shift != 0)
        end++;
    if (shift != 0 && (*end == 'B' || *end == 'b'))
        end++;
    if (errno != 0 || *end != '\0' || (shift != 0 && v > (UINT64_MAX >> shift)))
        return -EINVAL;
    *bytes = (uint64_t)v << shift;
    return 0;
}

int gsim_mps_parse_pinned(const char *text, uint64_t limits[GSIM_MAX_DEVICES])
{
    char item[64];
    for (const char *p = text; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof(item))
            return -EINVAL;
        memcpy(item, p, len);
        item[len] = '\0';
        char *eq = strchr(item, '='), *end;
        if (eq == NULL)
            return -EINVAL;
        *eq = '\0';
        long dev = strtol(item, &end, 10);
        uint64_t bytes;
        if (end == item || *end != '\0' || dev < 0 || dev >= GSIM_MAX_DEVICES ||
            gsim_mps_parse_size(eq + 1, &bytes) != 0)
            return -EINVAL;
        limits[dev] = bytes;
        p += len + (p[len] == ',');
    }
    return 0;
}

void gsim_mps_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && bytes != 0 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)bytes, units[u]);
}

/* The client's registration: one locked file per process (a fork registers anew). */
typedef struct registration {
    pthread_mutex_t mutex;
    int fd;
    pid_t pid;
    char path[4200];
} registration_t;

static registration_t reg = {.mutex = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* fork(): the child drops its copy of the parent's registration descriptor at once, so the
 * parent's lock goes with the parent even while the child lives on. */
static void before_fork(void)
{
    pthread_mutex_lock(&reg.mutex);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&reg.mutex);
}

static void after_fork_child(void)
{
    if (reg.fd >= 0)
        close(reg.fd);
    reg.fd = -1;
    pthread_mutex_unlock(&reg.mutex);
}

__attribute__((constructor)) static void register_mps_fork_handlers(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void register_client(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s/%d", dir, GSIM_MPS_CLIENTS, (int)getpid());
    pthread_mutex_lock(&reg.mutex);
    if (reg.fd >= 0 && reg.pid == getpid() && strcmp(reg.path, path) == 0)
        goto out;
    if (reg.fd >= 0)
        close(reg.fd); /* registered under another pipe directory before */
    reg.fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (reg.fd >= 0 && fcntl(reg.fd, F_OFD_SETLK, &fl) != 0) {
        close(reg.fd);
        reg.fd = -1;
    }
    reg.pid = getpid();
    snprintf(reg.path, sizeof(reg.path), "%s", path);
out:
    pthread_mutex_unlock(&reg.mutex);
}

/* Lowers *pct by CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. Returns 0 or -EINVAL. */
static int apply_thread_env(double *pct)
{
    const char *env = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    if (env == NULL || *env == '\0')
        return 0;
    char *end;
    double v = strtod(env, &end);
    if (end == env || *end != '\0' || !(v > 0.0 && v <= 100.0))
        return -EINVAL;
    if (v < *pct)
        *pct = v;
    return 0;
}

/* Lowers the daemon's pinned limits by CUDA_MPS_PINNED_DEVICE_MEM_LIMIT. Returns 0 or -EINVAL. */
static int apply_pinned_env(uint64_t limits[GSIM_MAX_DEVICES])
{
    const char *env = getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
    uint64_t own[GSIM_MAX_DEVICES] = {0};
    if (env == NULL || *env == '\0')
        return 0;
    if (gsim_mps_parse_pinned(env, own) != 0)
        return -EINVAL;
    for (int d = 0; d < GSIM_MAX_DEVICES; d++) {
        if (own[d] != 0 && (limits[d] == 0 || own[d] < limits[d]))
            limits[d] = own[d];
    }
    return 0;
}

int gsim_mps_client_detect(gsim_node_t *node, gsim_mps_client_t *out)
{
    (void)node;
    char dir[4096];
    gsim_mps_state_t state;
    memset(out, 0, sizeof(*out));
    gsim_mps_pipe_dir(dir, sizeof(dir));
    if (gsim_mps_read_state(dir, &state) != 0)
        return 0;
    double pct = state.default_thread_pct > 0 ? state.default_thread_pct : 100.0;
    uint64_t limits[GSIM_MAX_DEVICES];
    memcpy(limits, state.default_pinned, sizeof(limits));
    if (apply_thread_env(&pct) != 0 || apply_pinned_env(limits) != 0)
        return -EINVAL;
    out->active = 1;
    out->thread_pct = (uint32_t)(pct + 0.5);
    if (out->thread_pct < 1)
        out->thread_pct = 1;
    if (out->thread_pct > 100)
        out->thread_pct = 100;
    memcpy(out->pinned_limit, limits, sizeof(limits));
    register_client(dir);
    return 0;
}

/* Sends one line to the daemon of dir and reads one reply line into reply. Returns 0 or -errno. */
static int ask_daemon(const char *dir, const char *line, char *reply, size_t len)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (gsim_mps_socket_path(dir, addr.sun_path, sizeof(addr.sun_path)) != 0)
        return -ENAMETOOLONG;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct timeval timeout = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    int result = 0;
    size_t n = strlen(line);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        write(fd, line, n) != (ssize_t)n)
        result = -errno;
    ssize_t got = result == 0 ? read(fd, reply, len - 1) : -1;
    close(fd);
    if (result == 0 && got <= 0)
        result = -EIO;
    if (result == 0) {
        reply[got] = '\0';
        reply[strcspn(reply, "\r\n")] = '\0';
    }
    return result;
}

int gsim_mps_client_attach(int dev)
{
    char dir[4096], line[64], reply[64];
    gsim_mps_pipe_dir(dir, sizeof(dir));
    snprintf(line, sizeof(line), "gpusim-attach %d\n", dev);
    if (ask_daemon(dir, line, reply, sizeof(reply)) != 0)
        return 0; /* no daemon answers: the context is an ordinary one */
    return strcmp(reply, "fatal") == 0 ? -EIO : 0;
}
