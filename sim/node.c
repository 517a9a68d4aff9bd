/* The shared node state: one mmap'd file per simulated node, opened by every gpusim process. */
#include "node.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Process-slot liveness locks live on bytes far beyond the end of the file. */
#define SLOT_LOCK_BASE (INT64_C(1) << 40)

typedef struct node_handle {
    gsim_node_t *node;
    int fd;
    pid_t fd_pid; /* the process that opened fd (a forked child must open its own) */
    int slot;     /* this process's slot, -1 when not registered */
    pid_t slot_pid;
    char path[4096];
} node_handle_t;

static node_handle_t handle = {.node = NULL, .fd = -1, .slot = -1};
static pthread_mutex_t open_mutex = PTHREAD_MUTEX_INITIALIZER;
static double time_scale;
static pthread_once_t scale_once = PTHREAD_ONCE_INIT;

static void read_time_scale(void)
{
    const char *text = getenv("GPUSIM_TIME_SCALE");
    time_scale = 1.0;
    if (text != NULL && *text != '\0') {
        char *end;
        double v = strtod(text, &end);
        if (end != text && *end == '\0' && v > 0 && v < 1e9)
            time_scale = v;
        else
            fprintf(stderr, "gpusim: ignoring GPUSIM_TIME_SCALE=\"%s\" (want a number > 0)\n",
                    text);
    }
}

double gsim_time_scale(void)
{
    pthread_once(&scale_once, read_time_scale);
    return time_scale;
}

/* Writes the state file path into buf, creating its directory. Returns 0 or -errno. */
static int state_path(char *buf, size_t len)
{
    char dir[4000];
    const char *env = getenv("GPUSIM_STATE");
    if (env != NULL && *env != '\0')
        snprintf(dir, sizeof(dir), "%s", env);
    else
        snprintf(dir, sizeof(dir), "/tmp/gpusim-%u", (unsigned)getuid());
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        int err = errno;
        fprintf(stderr, "gpusim: cannot create state directory %s: %s\n", dir, strerror(err));
        return -err;
    }
    snprintf(buf, len, "%s/node", dir);
    return 0;
}

static void make_uuid(char *out, const char *prefix, uint64_t seed)
{
    uint64_t a = seed * UINT64_C(0x9E3779B97F4A7C15) + UINT64_C(0x6770757369);
    uint64_t b = (a ^ (a >> 31)) * UINT64_C(0xBF58476D1CE4E5B9);
    b ^= b >> 27;
    snprintf(out, GSIM_UUID_MAX, "%s-%08x-%04x-%04x-%04x-%012llx", prefix, (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)(0x4000 | (a & 0x0fff)),
             (unsigned)(0x8000 | ((b >> 48) & 0x3fff)),
             (unsigned long long)(b & UINT64_C(0xffffffffffff)));
}

static void init_device(gsim_device_t *dev, const gsim_model_t *model, const gsim_model_t *table,
                        unsigned index)
{
    memset(dev, 0, sizeof(*dev));
    dev->model_index = (uint32_t)(model - table);
    dev->sms = model->sms;
    dev->total_bytes = model->memory_mib << 20;
    snprintf(dev->name, sizeof(dev->name), "NVIDIA %s", model->name);
    make_uuid(dev->uuid, "GPU", index);
    snprintf(dev->pci_bus_id, sizeof(dev->pci_bus_id), "00000000:%02X:00.0", 0x18 + index * 0x10);
    dev->gi_next_id = 1;
}

/* Initialises a zeroed node for the device spec. Returns 0 or -EINVAL (message printed). */
static int init_node(gsim_node_t *node, const char *spec)
{
    const gsim_model_t *models[GSIM_MAX_DEVICES];
    char err[160];
    int n = gsim_parse_devices(spec, models, err, sizeof(err));
    if (n < 0) {
        fprintf(stderr, "gpusim: %s\n", err);
        return n;
    }
    const gsim_model_t *table;
    gsim_models(&table);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&node->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    snprintf(node->config, sizeof(node->config), "%s", spec != NULL ? spec : "");
    node->n_devices = (uint32_t)n;
    for (int i = 0; i < n; i++)
        init_device(&node->dev[i], models[i], table, (unsigned)i);
    node->size = sizeof(gsim_node_t);
    node->version = GSIM_VERSION;
    node->magic = GSIM_MAGIC;
    return 0;
}

static int map_fd(int fd, gsim_node_t **node)
{
    void *p = mmap(NULL, sizeof(gsim_node_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    *node = p;
    return 0;
}

/* Creates a complete state file beside path and links (or, with replace, renames) it into place,
 * so no process ever sees a half-initialised node. Returns 0, -EEXIST when another process won
 * the race, or -errno. */
static int create_state(const char *path, const char *spec, int replace)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    gsim_node_t *node = NULL;
    int result = 0;
    if (fchmod(fd, 0666) != 0 || ftruncate(fd, sizeof(gsim_node_t)) != 0) {
        result = -errno;
        goto out;
    }
    result = map_fd(fd, &node);
    if (result != 0)
        goto out;
    result = init_node(node, spec);
    if (result != 0)
        goto out;
    if (replace)
        result = rename(tmp, path) == 0 ? 0 : -errno;
    else
        result = link(tmp, path) == 0 ? 0 : -errno;
out:
    if (node != NULL)
        munmap(node, sizeof(gsim_node_t));
    close(fd);
    if (result != 0 || !replace)
        unlink(tmp);
    return result;
}

static int slot_is_alive(int fd, int slot)
{
    struct flock fl = {
        .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SLOT_LOCK_BASE + slot, .l_len = 1};
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return 1; /* cannot tell: keep it */
    return fl.l_type != F_UNLCK;
}

static void reclaim_slot(gsim_node_t *node, int slot)
{
    gsim_proc_t *proc = &node->procs[slot];
    for (uint32_t d = 0; d < node->n_devices; d++) {
        gsim_device_t *dev = &node->dev[d];
        uint64_t mem = proc->mem[d];
        dev->used_bytes -= mem < dev->used_bytes ? mem : dev->used_bytes;
        if (proc->gi[d] >= 0 && proc->gi[d] < GSIM_MAX_GI) {
            gsim_gi_t *gi = &dev->gi[proc->gi[d]];
            gi->used_bytes -= mem < gi->used_bytes ? mem : gi->used_bytes;
        }
        gsim_timeline_forget(&dev->timeline, proc->pid);
        for (int g = 0; g < GSIM_MAX_GI; g++)
            gsim_timeline_forget(&dev->gi[g].timeline, proc->pid);
    }
    memset(proc, 0, sizeof(*proc));
}

int gsim_node_reap_locked(gsim_node_t *node)
{
    int reaped = 0;
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        if (node->procs[i].pid == 0 || i == handle.slot)
            continue;
        if (!slot_is_alive(handle.fd, i)) {
            reclaim_slot(node, i);
            reaped++;
        }
    }
    return reaped;
}

/* After a process died holding the lock, rebuild the derived counters from the slots. */
static void repair_locked(gsim_node_t *node)
{
    for (uint32_t d = 0; d < node->n_devices; d++) {
        node->dev[d].used_bytes = 0;
        for (int g = 0; g < GSIM_MAX_GI; g++)
            node->dev[d].gi[g].used_bytes = 0;
    }
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        gsim_proc_t *proc = &node->procs[i];
        if (proc->pid == 0)
            continue;
        for (uint32_t d = 0; d < node->n_devices; d++) {
            node->dev[d].used_bytes += proc->mem[d];
            if (proc->gi[d] >= 0 && proc->gi[d] < GSIM_MAX_GI)
                node->dev[d].gi[proc->gi[d]].used_bytes += proc->mem[d];
        }
    }
}

void gsim_node_lock(gsim_node_t *node)
{
    int rc = pthread_mutex_lock(&node->lock);
    if (rc == EOWNERDEAD) {
        repair_locked(node);
        pthread_mutex_consistent(&node->lock);
    }
}

void gsim_node_unlock(gsim_node_t *node)
{
    pthread_mutex_unlock(&node->lock);
}

static int any_process_alive(gsim_node_t *node, int fd)
{
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        if (node->procs[i].pid != 0 && slot_is_alive(fd, i))
            return 1;
    }
    return 0;
}

/* Opens and validates an existing state file. Returns 0, -ENOENT, -ESTALE when it was made for
 * other devices and nobody uses it (the caller replaces it), or -errno. */
static int open_existing(const char *path, const char *spec, int *fd_out, gsim_node_t **node_out)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    gsim_node_t *node = NULL;
    int result = fstat(fd, &st) == 0 ? 0 : -errno;
    if (result == 0 && (size_t)st.st_size != sizeof(gsim_node_t))
        result = -ESTALE;
    if (result == 0)
        result = map_fd(fd, &node);
    if (result == 0 && (node->magic != GSIM_MAGIC || node->version != GSIM_VERSION ||
                        node->size != sizeof(gsim_node_t)))
        result = -ESTALE;
    if (result == 0 && strcmp(node->config, spec != NULL ? spec : "") != 0) {
        if (!any_process_alive(node, fd))
            result = -ESTALE;
        else
            fprintf(stderr,
                    "gpusim: node state %s has devices \"%s\" and is in use; ignoring "
                    "GPUSIM_DEVICES=\"%s\"\n",
                    path, node->config, spec != NULL ? spec : "");
    }
    if (result != 0) {
        if (node != NULL)
            munmap(node, sizeof(gsim_node_t));
        close(fd);
        return result;
    }
    *fd_out = fd;
    *node_out = node;
    return 0;
}

static int open_state(void)
{
    char *path = handle.path;
    const char *spec = getenv("GPUSIM_DEVICES");
    int result = state_path(path, sizeof(handle.path));
    for (int attempt = 0; result == 0 && attempt < 8; attempt++) {
        result = open_existing(path, spec, &handle.fd, &handle.node);
        if (result == 0) {
            handle.fd_pid = getpid();
            return 0;
        }
        if (result == -ENOENT || result == -ESTALE) {
            result = create_state(path, spec, result == -ESTALE);
            if (result == -EEXIST)
                result = 0; /* another process created it first: open theirs */
        }
        if (result == 0)
            continue;
    }
    if (result != 0)
        fprintf(stderr, "gpusim: cannot open node state %s: %s\n", path, strerror(-result));
    return result != 0 ? result : -EAGAIN;
}

static void read_comm(char *name, size_t len)
{
    snprintf(name, len, "unknown");
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, name, len - 1);
    close(fd);
    if (n > 0) {
        name[n] = '\0';
        name[strcspn(name, "\n")] = '\0';
    }
}

static int register_self(void)
{
    gsim_node_t *node = handle.node;
    gsim_node_lock(node);
    gsim_node_reap_locked(node);
    int result = -ENOSPC;
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        if (node->procs[i].pid != 0)
            continue;
        struct flock fl = {
            .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SLOT_LOCK_BASE + i, .l_len = 1};
        if (fcntl(handle.fd, F_OFD_SETLK, &fl) != 0)
            continue;
        gsim_proc_t *proc = &node->procs[i];
        memset(proc, 0, sizeof(*proc));
        proc->pid = (int32_t)getpid();
        for (int d = 0; d < GSIM_MAX_DEVICES; d++)
            proc->gi[d] = -1;
        read_comm(proc->name, sizeof(proc->name));
        handle.slot = i;
        handle.slot_pid = getpid();
        result = 0;
        break;
    }
    gsim_node_unlock(node);
    if (result != 0)
        fprintf(stderr, "gpusim: node has no free process slot (%d in use)\n", GSIM_MAX_PROCS);
    return result;
}

/* A forked child shares its parent's open file description and with it the parent's liveness
 * locks: it needs a description of its own, or the two would look like one process. */
static int reopen_after_fork(void)
{
    int fd = open(handle.path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        fprintf(stderr, "gpusim: cannot reopen node state %s: %s\n", handle.path, strerror(err));
        return -err;
    }
    close(handle.fd);
    handle.fd = fd;
    handle.fd_pid = getpid();
    handle.slot = -1;
    return 0;
}

int gsim_node_open(int register_process, gsim_node_t **node)
{
    pthread_mutex_lock(&open_mutex);
    int result = 0;
    if (handle.node == NULL)
        result = open_state();
    else if (handle.fd_pid != getpid())
        result = reopen_after_fork();
    if (result == 0 && register_process && (handle.slot < 0 || handle.slot_pid != getpid()))
        result = register_self();
    if (result == 0)
        *node = handle.node;
    pthread_mutex_unlock(&open_mutex);
    return result;
}

gsim_proc_t *gsim_node_self(gsim_node_t *node)
{
    if (handle.slot < 0 || handle.slot_pid != getpid())
        return NULL;
    return &node->procs[handle.slot];
}

/* Returns the domain's capacity check: 0 when bytes fit, -ENOMEM otherwise. */
static int fits_locked(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes)
{
    gsim_device_t *dev = &node->dev[domain.dev];
    if (bytes > dev->total_bytes - dev->used_bytes)
        return -ENOMEM;
    if (domain.gi >= 0) {
        gsim_gi_t *gi = &dev->gi[domain.gi];
        if (bytes > gi->memory_bytes - gi->used_bytes)
            return -ENOMEM;
    }
    return 0;
}

static int domain_valid(gsim_node_t *node, gsim_domain_t domain)
{
    if (domain.dev < 0 || (uint32_t)domain.dev >= node->n_devices)
        return 0;
    if (domain.gi < 0)
        return 1;
    return domain.gi < GSIM_MAX_GI && node->dev[domain.dev].gi[domain.gi].in_use;
}

int gsim_mem_charge(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes)
{
    gsim_node_lock(node);
    gsim_proc_t *self = gsim_node_self(node);
    int result = self != NULL && domain_valid(node, domain) ? 0 : -EINVAL;
    if (result == 0) {
        result = fits_locked(node, domain, bytes);
        if (result != 0 && gsim_node_reap_locked(node) > 0)
            result = fits_locked(node, domain, bytes);
    }
    if (result == 0) {
        gsim_device_t *dev = &node->dev[domain.dev];
        dev->used_bytes += bytes;
        self->mem[domain.dev] += bytes;
        self->gi[domain.dev] = domain.gi;
        if (domain.gi >= 0)
            dev->gi[domain.gi].used_bytes += bytes;
    }
    gsim_node_unlock(node);
    return result;
}

void gsim_mem_uncharge(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes)
{
    gsim_node_lock(node);
    gsim_proc_t *self = gsim_node_self(node);
    if (self != NULL && domain.dev >= 0 && (uint32_t)domain.dev < node->n_devices) {
        gsim_device_t *dev = &node->dev[domain.dev];
        uint64_t held = self->mem[domain.dev];
        uint64_t take = bytes < held ? bytes : held;
        self->mem[domain.dev] -= take;
        dev->used_bytes -= take < dev->used_bytes ? take : dev->used_bytes;
        if (domain.gi >= 0 && domain.gi < GSIM_MAX_GI) {
            gsim_gi_t *gi = &dev->gi[domain.gi];
            gi->used_bytes -= take < gi->used_bytes ? take : gi->used_bytes;
        }
    }
    gsim_node_unlock(node);
}

int gsim_mem_info(gsim_node_t *node, gsim_domain_t domain, uint64_t *total, uint64_t *used)
{
    gsim_node_lock(node);
    int result = domain_valid(node, domain) ? 0 : -EINVAL;
    if (result == 0) {
        gsim_node_reap_locked(node);
        const gsim_device_t *dev = &node->dev[domain.dev];
        *total = domain.gi >= 0 ? dev->gi[domain.gi].memory_bytes : dev->total_bytes;
        *used = domain.gi >= 0 ? dev->gi[domain.gi].used_bytes : dev->used_bytes;
    }
    gsim_node_unlock(node);
    return result;
}

gsim_timeline_t *gsim_domain_timeline(gsim_node_t *node, gsim_domain_t domain)
{
    if (!domain_valid(node, domain))
        return NULL;
    gsim_device_t *dev = &node->dev[domain.dev];
    return domain.gi >= 0 ? &dev->gi[domain.gi].timeline : &dev->timeline;
}
