/* SPDX-License-Identifier: Apache-2.0 */
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
/* Every process with the node open holds a read lock on this byte (its own open file
 * description): a node that some process maps is never rebuilt under it. */
#define MAPPED_LOCK (SLOT_LOCK_BASE - 1)

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

static int cuda_version = GSIM_CUDA_VERSION;
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static void read_cuda_version(void)
{
    const char *text = getenv("GPUSIM_CUDA_VERSION");
    if (text == NULL || *text == '\0')
        return;
    char *end;
    long v = strtol(text, &end, 10);
    if (end != text && *end == '\0' && v >= 1000 && v <= 99990 && v % 10 == 0)
        cuda_version = (int)v;
    else
        fprintf(stderr,
                "gpusim: ignoring GPUSIM_CUDA_VERSION=\"%s\" (want 1000 * major + 10 * minor, "
                "e.g. 12080)\n",
                text);
}

int gsim_cuda_version(void)
{
    pthread_once(&version_once, read_cuda_version);
    return cuda_version;
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

/* A node's GPUs have UUIDs of their own, as real GPUs do (gpushared claims GPUs by UUID): they
 * are derived from the node's path, so two nodes never share one and a node rebuilt at the same
 * path keeps them. */
static uint64_t path_seed(const char *path)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
    for (const char *p = path; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
    return h;
}

static void init_device(gsim_device_t *dev, const gsim_model_t *model, const gsim_model_t *table,
                        unsigned index, uint64_t seed)
{
    memset(dev, 0, sizeof(*dev));
    dev->model_index = (uint32_t)(model - table);
    dev->sms = model->sms;
    dev->total_bytes = model->fb_mib << 20;
    dev->reserved_bytes = model->reserved_mib << 20;
    snprintf(dev->name, sizeof(dev->name), "NVIDIA %s", model->name);
    make_uuid(dev->uuid, "GPU", seed + index);
    snprintf(dev->pci_bus_id, sizeof(dev->pci_bus_id), "00000000:%02X:00.0", 0x18 + index * 0x10);
    dev->gi_next_id = 1;
}

/* Initialises a zeroed node for the device spec. Returns 0 or -EINVAL (message printed). */
static int init_node(gsim_node_t *node, const char *spec, uint64_t seed)
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
    node->pidns = gsim_pidns_of(0);
    for (int i = 0; i < n; i++)
        init_device(&node->dev[i], models[i], table, (unsigned)i, seed);
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
    result = init_node(node, spec, path_seed(path));
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

/* Nonzero when another process has the node open (its lock on MAPPED_LOCK). */
static int mapped_elsewhere(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = MAPPED_LOCK, .l_len = 1};
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0)
        return 1; /* cannot tell: keep it */
    return fl.l_type != F_UNLCK;
}

/* Says that this process has the node open (MAPPED_LOCK), through its own description fd. */
static void hold_mapped(int fd)
{
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = MAPPED_LOCK, .l_len = 1};
    fcntl(fd, F_OFD_SETLK, &fl);
}

static int any_process_alive(gsim_node_t *node, int fd)
{
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        if (node->procs[i].pid != 0 && slot_is_alive(fd, i))
            return 1;
    }
    return 0;
}

/* Whether the node was made for the devices spec names (compared as parsed models, so
 * "A100-40GB*1" and "A100-40GB" agree). A spec that does not parse never matches. */
static int same_devices(const gsim_node_t *node, const char *spec)
{
    const gsim_model_t *models[GSIM_MAX_DEVICES];
    const gsim_model_t *table;
    char err[160];
    int n = gsim_parse_devices(spec, models, err, sizeof(err));
    gsim_models(&table);
    if (n < 0 || (uint32_t)n != node->n_devices)
        return 0;
    for (int i = 0; i < n; i++) {
        if ((uint32_t)(models[i] - table) != node->dev[i].model_index)
            return 0;
    }
    return 1;
}

/* Whether any device has MIG mode on: that state was made by hand and is never replaced. */
static int has_mig_state(const gsim_node_t *node)
{
    for (uint32_t d = 0; d < node->n_devices && d < GSIM_MAX_DEVICES; d++) {
        if (node->dev[d].mig_mode != 0)
            return 1;
    }
    return 0;
}

/* Returns a new open file description of fd's file for the liveness locks, closing fd; on
 * failure (no /proc) returns fd itself. A mapping holds a reference to the description it was
 * made through and a forked child inherits the mapping: locks taken through that description
 * would outlive a SIGKILLed parent for as long as any child lives. */
static int lock_description(int fd)
{
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    int own = open(self, O_RDWR | O_CLOEXEC);
    if (own < 0)
        return fd;
    close(fd);
    return own;
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
    if (result == 0)
        fd = lock_description(fd);
    if (result == 0 && (node->magic != GSIM_MAGIC || node->version != GSIM_VERSION ||
                        node->size != sizeof(gsim_node_t)))
        result = -ESTALE;
    /* GPUSIM_DEVICES unset: the node as it is (a job uses the node its daemon made). */
    if (result == 0 && spec != NULL && spec[0] != '\0' && !same_devices(node, spec)) {
        const char *why = has_mig_state(node) ? "has MIG state"
                          : any_process_alive(node, fd) || mapped_elsewhere(fd)
                              ? "is in use (a running gpushared or job has it open)"
                              : NULL;
        if (why == NULL)
            result = -ESTALE;
        else if (spec != NULL && spec[0] != '\0')
            fprintf(stderr,
                    "gpusim: node %s has devices \"%s\" and %s: not rebuilt for "
                    "GPUSIM_DEVICES=\"%s\" (unset it to use the node as it is)\n",
                    path, node->config, why, spec);
    }
    if (result != 0) {
        if (node != NULL)
            munmap(node, sizeof(gsim_node_t));
        close(fd);
        return result;
    }
    hold_mapped(fd);
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

/* Records who the process is (procid.c) and its key: its pid when it lives in the node's PID
 * namespace, else -(slot + 1), so that processes numbered 1 in two namespaces stay apart. */
static void set_identity(const gsim_node_t *node, gsim_proc_t *proc, int slot)
{
    proc->ns_pid = (int32_t)getpid();
    proc->pidns = gsim_pidns_of(0);
    proc->start_ticks = gsim_start_ticks_of(0);
    int foreign = node->pidns != 0 && proc->pidns != 0 && proc->pidns != node->pidns;
    proc->pid = foreign ? -(int32_t)(slot + 1) : proc->ns_pid;
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
        set_identity(node, proc, i);
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

/* A forked child needs an open file description of its own: the inherited one carries the
 * parent's liveness locks (after_fork_child has already closed the child's copy). */
static int reopen_after_fork(void)
{
    int fd = open(handle.path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        fprintf(stderr, "gpusim: cannot reopen node state %s: %s\n", handle.path, strerror(err));
        return -err;
    }
    if (handle.fd >= 0)
        close(handle.fd);
    hold_mapped(fd);
    handle.fd = fd;
    handle.fd_pid = getpid();
    handle.slot = -1;
    return 0;
}

/* fork(): the child closes its copy of the descriptor at once. Closing a copy never drops the
 * parent's locks, and a child that lives on without calling gsim_node_open again must not keep
 * them alive after the parent dies (its memory would stay charged). */
static void before_fork(void)
{
    pthread_mutex_lock(&open_mutex);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&open_mutex);
}

static void after_fork_child(void)
{
    if (handle.fd >= 0)
        close(handle.fd);
    handle.fd = -1;
    handle.slot = -1;
    pthread_mutex_unlock(&open_mutex);
}

__attribute__((constructor)) static void register_node_fork_handlers(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
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

const char *gsim_node_path(void)
{
    return handle.node != NULL ? handle.path : "";
}

gsim_proc_t *gsim_node_self(gsim_node_t *node)
{
    if (handle.slot < 0 || handle.slot_pid != getpid())
        return NULL;
    return &node->procs[handle.slot];
}

uint64_t gsim_device_usable(const gsim_device_t *dev)
{
    return dev->total_bytes > dev->reserved_bytes ? dev->total_bytes - dev->reserved_bytes : 0;
}

/* Returns the domain's capacity check: 0 when bytes fit, -ENOMEM otherwise. */
static int fits_locked(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes)
{
    gsim_device_t *dev = &node->dev[domain.dev];
    uint64_t usable = gsim_device_usable(dev);
    if (dev->used_bytes > usable || bytes > usable - dev->used_bytes)
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
        *total = domain.gi >= 0 ? dev->gi[domain.gi].memory_bytes : gsim_device_usable(dev);
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

/* ---- MIG: GPU and compute instances ---- */

/* What a device's GPU instances occupy: memory slots, compute slices, instances per profile. */
typedef struct occupancy {
    uint32_t slots;
    uint32_t compute;
    uint32_t count[GSIM_MAX_PROFILES];
} occupancy_t;

const gsim_model_t *gsim_device_model(const gsim_node_t *node, int dev)
{
    const gsim_model_t *models;
    gsim_models(&models);
    return &models[node->dev[dev].model_index];
}

uint32_t gsim_mig_slice_sms(const gsim_model_t *m)
{
    /* An even number of SMs per slice, as NVIDIA's GPCs give (A100: 14, A30: 14). */
    return m->mig_compute_slices == 0 ? 0 : (m->sms / m->mig_compute_slices) & ~1u;
}

uint64_t gsim_mig_profile_bytes(const gsim_model_t *m, const gsim_mig_profile_t *p)
{
    if (m->mig_memory_slices == 0)
        return 0;
    return (m->memory_mib << 20) / m->mig_memory_slices * p->memory;
}

static uint32_t slot_mask(uint32_t start, uint32_t size)
{
    return size >= 32 ? UINT32_MAX : ((1u << size) - 1) << start;
}

static occupancy_t device_occupancy(const gsim_device_t *d)
{
    occupancy_t occ;
    memset(&occ, 0, sizeof(occ));
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        const gsim_gi_t *gi = &d->gi[g];
        if (!gi->in_use)
            continue;
        occ.slots |= slot_mask(gi->start, gi->size);
        occ.compute += gi->compute;
        if (gi->profile_index < GSIM_MAX_PROFILES)
            occ.count[gi->profile_index]++;
    }
    return occ;
}

static int valid_start(const gsim_model_t *m, const gsim_mig_profile_t *p, uint32_t start)
{
    return start < 32 && (p->starts_mask & (1u << start)) != 0 &&
           start + p->size <= m->mig_memory_slices;
}

static int occupancy_fits(const gsim_model_t *m, const occupancy_t *occ, uint32_t pi,
                          uint32_t start)
{
    const gsim_mig_profile_t *p = &m->profiles[pi];
    if (!valid_start(m, p, start))
        return -EINVAL;
    if ((occ->slots & slot_mask(start, p->size)) != 0 ||
        occ->compute + p->compute > m->mig_compute_slices || occ->count[pi] >= p->max_instances)
        return -ENOSPC;
    return 0;
}

int gsim_gi_fits_locked(const gsim_node_t *node, int dev, uint32_t pi, uint32_t start)
{
    const gsim_model_t *m = gsim_device_model(node, dev);
    if (pi >= m->n_profiles)
        return -EINVAL;
    occupancy_t occ = device_occupancy(&node->dev[dev]);
    return occupancy_fits(m, &occ, pi, start);
}

/* Counts the placements (of every profile) that are still free and that mask would cover. */
static int blocking_score(const gsim_model_t *m, uint32_t used, uint32_t mask)
{
    int score = 0;
    for (uint32_t q = 0; q < m->n_profiles; q++) {
        const gsim_mig_profile_t *p = &m->profiles[q];
        for (uint32_t s = 0; s < m->mig_memory_slices; s++) {
            uint32_t other = slot_mask(s, p->size);
            if (valid_start(m, p, s) && (other & used) == 0 && (other & mask) != 0)
                score++;
        }
    }
    return score;
}

/* Returns the start gsim_gi_create picks for profile pi, or -1 when nothing fits. Blocking the
 * fewest other placements puts a first 3g.20gb of an A100 at slot 4, as NVIDIA's driver does,
 * which keeps room for 2g + 1g + 1g in slots 0-3. */
static int choose_start(const gsim_model_t *m, const occupancy_t *occ, uint32_t pi)
{
    int best = -1, best_score = 0;
    for (uint32_t s = 0; s < m->mig_memory_slices; s++) {
        if (occupancy_fits(m, occ, pi, s) != 0)
            continue;
        int score = blocking_score(m, occ->slots, slot_mask(s, m->profiles[pi].size));
        if (best < 0 || score < best_score) {
            best = (int)s;
            best_score = score;
        }
    }
    return best;
}

static void occupancy_add(const gsim_model_t *m, occupancy_t *occ, uint32_t pi, uint32_t start)
{
    occ->slots |= slot_mask(start, m->profiles[pi].size);
    occ->compute += m->profiles[pi].compute;
    occ->count[pi]++;
}

uint32_t gsim_gi_remaining_locked(const gsim_node_t *node, int dev, uint32_t pi)
{
    const gsim_model_t *m = gsim_device_model(node, dev);
    if (pi >= m->n_profiles)
        return 0;
    occupancy_t occ = device_occupancy(&node->dev[dev]);
    uint32_t n = 0;
    for (int start; (start = choose_start(m, &occ, pi)) >= 0; n++)
        occupancy_add(m, &occ, pi, (uint32_t)start);
    return n;
}

/* The id NVIDIA's driver gives a placement: its index in the partition tree of the GPU's memory
 * slots (A100: 0 = 7g, 1-2 = halves, 3-6 = quarters, 7-14 = eighths). */
static uint32_t placement_id(const gsim_model_t *m, uint32_t start, uint32_t size)
{
    return m->mig_memory_slices / size - 1 + start / size;
}

static void init_gi(gsim_gi_t *gi, const gsim_model_t *m, int dev, uint32_t pi, uint32_t start)
{
    const gsim_mig_profile_t *p = &m->profiles[pi];
    memset(gi, 0, sizeof(*gi));
    gi->in_use = 1;
    gi->id = placement_id(m, start, p->size);
    gi->profile_index = pi;
    gi->start = start;
    gi->size = p->size;
    gi->compute = p->compute;
    gi->sms = p->compute * gsim_mig_slice_sms(m);
    gi->memory_bytes = gsim_mig_profile_bytes(m, p);
    /* A new instance gets a new UUID, as on real hardware. */
    uint64_t seed =
        (uint64_t)gsim_now_ns() ^ ((uint64_t)getpid() << 32) ^ ((uint64_t)dev << 8) ^ gi->id;
    make_uuid(gi->uuid, "MIG", seed);
}

static int free_gi_slot(const gsim_device_t *d)
{
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        if (!d->gi[g].in_use)
            return g;
    }
    return -1;
}

static int create_gi_locked(gsim_node_t *node, int dev, uint32_t pi, int start, int *slot)
{
    if (dev < 0 || (uint32_t)dev >= node->n_devices)
        return -EINVAL;
    gsim_device_t *d = &node->dev[dev];
    const gsim_model_t *m = gsim_device_model(node, dev);
    if (m->mig_compute_slices == 0 || !d->mig_mode)
        return -ENOTSUP;
    if (pi >= m->n_profiles)
        return -EINVAL;
    occupancy_t occ = device_occupancy(d);
    if (start < 0)
        start = choose_start(m, &occ, pi);
    if (start < 0)
        return -ENOSPC;
    int result = occupancy_fits(m, &occ, pi, (uint32_t)start);
    int g = free_gi_slot(d);
    if (result == 0 && g < 0)
        result = -ENOSPC;
    if (result != 0)
        return result;
    init_gi(&d->gi[g], m, dev, pi, (uint32_t)start);
    *slot = g;
    return 0;
}

int gsim_gi_create(gsim_node_t *node, int dev, uint32_t pi, int start, int *slot)
{
    gsim_node_lock(node);
    int result = create_gi_locked(node, dev, pi, start, slot);
    gsim_node_unlock(node);
    return result;
}

static int has_pending_work(const gsim_timeline_t *tl)
{
    int64_t now = gsim_now_ns();
    for (uint32_t i = 0; i < tl->n_reserved; i++) {
        if (tl->reserved[i].end_ns > now)
            return 1;
    }
    return 0;
}

/* Returns nonzero when a live process holds memory on dev (in GI slot gi when gi >= 0) or has
 * work pending there. Call after reaping, with the lock held. */
static int domain_in_use_locked(const gsim_node_t *node, int dev, int gi)
{
    const gsim_device_t *d = &node->dev[dev];
    for (int i = 0; i < GSIM_MAX_PROCS; i++) {
        const gsim_proc_t *proc = &node->procs[i];
        if (proc->pid != 0 && proc->mem[dev] > 0 && (gi < 0 || proc->gi[dev] == gi))
            return 1;
    }
    return has_pending_work(gi < 0 ? &d->timeline : &d->gi[gi].timeline);
}

static int any_gi(const gsim_device_t *d)
{
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        if (d->gi[g].in_use)
            return 1;
    }
    return 0;
}

int gsim_mig_set_mode(gsim_node_t *node, int dev, int enable)
{
    if (dev < 0 || (uint32_t)dev >= node->n_devices)
        return -EINVAL;
    if (gsim_device_model(node, dev)->mig_compute_slices == 0)
        return -ENOTSUP;
    gsim_node_lock(node);
    gsim_node_reap_locked(node);
    gsim_device_t *d = &node->dev[dev];
    int result = 0;
    if (enable && !d->mig_mode && domain_in_use_locked(node, dev, -1))
        result = -EBUSY;
    if (!enable && d->mig_mode && any_gi(d))
        result = -EBUSY;
    if (result == 0)
        d->mig_mode = enable ? 1 : 0;
    gsim_node_unlock(node);
    return result;
}

static int gi_valid(const gsim_node_t *node, int dev, int gi)
{
    return dev >= 0 && (uint32_t)dev < node->n_devices && gi >= 0 && gi < GSIM_MAX_GI &&
           node->dev[dev].gi[gi].in_use;
}

int gsim_gi_destroy(gsim_node_t *node, int dev, int slot)
{
    gsim_node_lock(node);
    gsim_node_reap_locked(node);
    int result = gi_valid(node, dev, slot) ? 0 : -EINVAL;
    if (result == 0) {
        gsim_gi_t *gi = &node->dev[dev].gi[slot];
        for (int c = 0; c < GSIM_MAX_CI; c++) {
            if (gi->ci[c].in_use)
                result = -EBUSY;
        }
        if (result == 0 && domain_in_use_locked(node, dev, slot))
            result = -EBUSY;
        if (result == 0)
            memset(gi, 0, sizeof(*gi));
    }
    gsim_node_unlock(node);
    return result;
}

/* Compute instance sizes each GI size offers, as bit masks of slice counts (NVIDIA's tables). */
static uint32_t ci_sizes(uint32_t gi_compute)
{
    switch (gi_compute) {
    case 1:
        return 1u << 1;
    case 2:
        return (1u << 1) | (1u << 2);
    case 3:
        return (1u << 1) | (1u << 2) | (1u << 3);
    case 4:
        return (1u << 1) | (1u << 2) | (1u << 4);
    case 6:
        return (1u << 1) | (1u << 2) | (1u << 3) | (1u << 6);
    case 7:
        return (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 7);
    case 8:
        return (1u << 1) | (1u << 2) | (1u << 4) | (1u << 8);
    default:
        return gi_compute < 32 ? 1u << gi_compute : 0;
    }
}

int gsim_ci_size_allowed(uint32_t gi_compute, uint32_t size)
{
    return size > 0 && size < 32 && (ci_sizes(gi_compute) & (1u << size)) != 0;
}

uint32_t gsim_ci_profile_of_size(uint32_t size)
{
    /* NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7,8,6}_SLICE */
    static const uint32_t profile[9] = {0, 0x0, 0x1, 0x2, 0x3, 0, 0x6, 0x4, 0x5};
    return size < 9 ? profile[size] : 0;
}

static uint32_t ci_used_mask(const gsim_gi_t *gi)
{
    uint32_t used = 0;
    for (int c = 0; c < GSIM_MAX_CI; c++) {
        if (gi->ci[c].in_use)
            used |= slot_mask(gi->ci[c].start, gi->ci[c].size);
    }
    return used;
}

/* Returns the lowest free start for a CI of size in a GI whose CIs use used, or -1. */
static int ci_start(const gsim_gi_t *gi, uint32_t used, uint32_t size)
{
    for (uint32_t s = 0; s + size <= gi->compute; s += size) {
        if ((used & slot_mask(s, size)) == 0)
            return (int)s;
    }
    return -1;
}

uint32_t gsim_ci_remaining_locked(const gsim_node_t *node, int dev, int gi, uint32_t size)
{
    if (!gi_valid(node, dev, gi))
        return 0;
    const gsim_gi_t *g = &node->dev[dev].gi[gi];
    if (!gsim_ci_size_allowed(g->compute, size))
        return 0;
    uint32_t used = ci_used_mask(g), n = 0, free_slots = 0;
    for (int c = 0; c < GSIM_MAX_CI; c++)
        free_slots += !g->ci[c].in_use;
    for (int s; n < free_slots && (s = ci_start(g, used, size)) >= 0; n++)
        used |= slot_mask((uint32_t)s, size);
    return n;
}

int gsim_ci_create(gsim_node_t *node, int dev, int gi, uint32_t size, int *ci)
{
    gsim_node_lock(node);
    int result = gi_valid(node, dev, gi) ? 0 : -EINVAL;
    gsim_gi_t *g = result == 0 ? &node->dev[dev].gi[gi] : NULL;
    if (result == 0 && !gsim_ci_size_allowed(g->compute, size))
        result = -EINVAL;
    int start = result == 0 ? ci_start(g, ci_used_mask(g), size) : -1, slot = -1;
    for (int c = 0; result == 0 && c < GSIM_MAX_CI && slot < 0; c++) {
        if (!g->ci[c].in_use)
            slot = c;
    }
    if (result == 0 && (start < 0 || slot < 0))
        result = -ENOSPC;
    if (result == 0) {
        g->ci[slot] = (gsim_ci_t){.in_use = 1,
                                  .id = (uint32_t)slot,
                                  .profile_id = gsim_ci_profile_of_size(size),
                                  .start = (uint32_t)start,
                                  .size = size};
        *ci = slot;
    }
    gsim_node_unlock(node);
    return result;
}

int gsim_ci_destroy(gsim_node_t *node, int dev, int gi, int ci)
{
    gsim_node_lock(node);
    gsim_node_reap_locked(node);
    int result = gi_valid(node, dev, gi) && ci >= 0 && ci < GSIM_MAX_CI &&
                         node->dev[dev].gi[gi].ci[ci].in_use
                     ? 0
                     : -EINVAL;
    /* gpusim does not record which CI of a GI a process runs on: a used GI keeps its CIs. */
    if (result == 0 && domain_in_use_locked(node, dev, gi))
        result = -EBUSY;
    if (result == 0)
        memset(&node->dev[dev].gi[gi].ci[ci], 0, sizeof(gsim_ci_t));
    gsim_node_unlock(node);
    return result;
}

typedef struct mig_ref {
    uint32_t gi_id, ci_id;
    int gi, ci;
} mig_ref_t;

static int compare_mig_ref(const void *a, const void *b)
{
    const mig_ref_t *x = a, *y = b;
    if (x->gi_id != y->gi_id)
        return x->gi_id < y->gi_id ? -1 : 1;
    return (x->ci_id > y->ci_id) - (x->ci_id < y->ci_id);
}

/* Fills refs with dev's MIG devices in order; returns the count. */
static int list_mig_devices(const gsim_node_t *node, int dev, mig_ref_t *refs)
{
    int n = 0;
    if (dev < 0 || (uint32_t)dev >= node->n_devices || !node->dev[dev].mig_mode)
        return 0;
    for (int g = 0; g < GSIM_MAX_GI; g++) {
        const gsim_gi_t *gi = &node->dev[dev].gi[g];
        for (int c = 0; gi->in_use && c < GSIM_MAX_CI; c++) {
            if (gi->ci[c].in_use)
                refs[n++] = (mig_ref_t){.gi_id = gi->id, .ci_id = gi->ci[c].id, .gi = g, .ci = c};
        }
    }
    qsort(refs, (size_t)n, sizeof(refs[0]), compare_mig_ref);
    return n;
}

int gsim_mig_device_count_locked(const gsim_node_t *node, int dev)
{
    mig_ref_t refs[GSIM_MAX_GI * GSIM_MAX_CI];
    return list_mig_devices(node, dev, refs);
}

int gsim_mig_device_at_locked(const gsim_node_t *node, int dev, int index, int *gi, int *ci)
{
    mig_ref_t refs[GSIM_MAX_GI * GSIM_MAX_CI];
    int n = list_mig_devices(node, dev, refs);
    if (index < 0 || index >= n)
        return -ENOENT;
    *gi = refs[index].gi;
    *ci = refs[index].ci;
    return 0;
}

void gsim_mig_uuid(const gsim_gi_t *gi, int ci, char *out)
{
    if (ci == 0) {
        snprintf(out, GSIM_UUID_MAX, "%s", gi->uuid);
        return;
    }
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a of the GI's UUID, then the CI */
    for (const char *p = gi->uuid; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
    make_uuid(out, "MIG", h ^ (uint64_t)ci);
}

int gsim_mig_find_uuid_locked(const gsim_node_t *node, const char *prefix, int *dev, int *gi,
                              int *ci)
{
    int found = 0;
    size_t len = strlen(prefix);
    for (uint32_t d = 0; d < node->n_devices; d++) {
        mig_ref_t refs[GSIM_MAX_GI * GSIM_MAX_CI];
        int n = list_mig_devices(node, (int)d, refs);
        for (int i = 0; i < n; i++) {
            char uuid[GSIM_UUID_MAX];
            gsim_mig_uuid(&node->dev[d].gi[refs[i].gi], refs[i].ci, uuid);
            if (strncmp(uuid, prefix, len) != 0)
                continue;
            found++;
            *dev = (int)d;
            *gi = refs[i].gi;
            *ci = refs[i].ci;
        }
    }
    return found == 1 ? 0 : -ENOENT;
}

int gsim_node_reserve_locked(gsim_node_t *node, gsim_domain_t domain, const gsim_work_t *w,
                             int64_t *start_ns, int64_t *end_ns)
{
    gsim_timeline_t *tl = gsim_domain_timeline(node, domain);
    if (tl == NULL)
        return -ENODEV;
    int64_t now = gsim_now_ns();
    int64_t covered = gsim_timeline_future_union_ns(tl, w->pid, now);
    int rc = gsim_timeline_reserve(tl, w, start_ns, end_ns);
    if (rc != 0)
        return rc;
    gsim_proc_t *self = gsim_node_self(node);
    int64_t grown = gsim_timeline_future_union_ns(tl, w->pid, now) - covered;
    if (self != NULL) {
        self->busy_ns[domain.dev] += (uint64_t)(*end_ns - *start_ns);
        self->active_ns[domain.dev] += (uint64_t)(grown > 0 ? grown : 0);
    }
    node->dev[domain.dev].busy_ns_total += (uint64_t)(*end_ns - *start_ns);
    return 0;
}
