/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's private header: the simulated node (GPU models, shared node state, device timelines).
 *
 * gpusim is a stand-in for NVIDIA's driver and knows nothing of gpushare. Every gpusim binary
 * (libcuda.so.1, libnvidia-ml.so.1, nvidia-cuda-mps-control, nvidia-smi) links this core. All
 * processes of a "node" share one state file, $GPUSIM_STATE/node (mmap), exactly as processes on
 * a real node share one GPU: physical memory use, busy time, MIG instances.
 *
 * Concurrency: the state is guarded by one robust, process-shared mutex (gsim_node_lock). A
 * process that dies while holding it leaves it recoverable (EOWNERDEAD → the derived counters are
 * rebuilt from the per-process records). Liveness of a process is an OFD lock it holds on a byte
 * of the state file for its slot: the kernel drops it when the process dies, even by SIGKILL, and
 * pid reuse cannot fool it. */
#ifndef GSIM_NODE_H
#define GSIM_NODE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GSIM_MAX_DEVICES      16
#define GSIM_MAX_PROCS        1024
#define GSIM_MAX_GI           8   /* GPU instances per device (MIG) */
#define GSIM_MAX_CI           8   /* compute instances per GPU instance */
#define GSIM_MAX_PROFILES     8   /* MIG GPU-instance profiles per model */
#define GSIM_MAX_RESERVATIONS 64  /* future kernel intervals per timeline */
#define GSIM_HISTORY          128 /* past kernel intervals per timeline (utilization) */
#define GSIM_NAME_MAX         64
#define GSIM_UUID_MAX         48 /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" + NUL */

/* ---- GPU models (from the CSVs in data/gpus, embedded at build time) ---- */

typedef struct gsim_mig_profile {
    char name[24];    /* "3g.20gb" */
    uint32_t id;      /* NVML_GPU_INSTANCE_PROFILE_* value as printed by nvidia-smi */
    uint32_t compute; /* compute slices */
    uint32_t memory;  /* memory slices */
    uint32_t max_instances;
    uint32_t starts_mask; /* bit s set when s is a valid start slot */
    uint32_t size;        /* memory slots an instance occupies */
} gsim_mig_profile_t;

typedef struct gsim_model {
    char name[32];         /* "H100-80GB" */
    uint64_t memory_mib;   /* nominal: MIG instance sizes derive from it */
    uint64_t fb_mib;       /* NVML's total */
    uint64_t reserved_mib; /* kept by the driver: NVML shows it used; CUDA's total excludes it */
    uint64_t ctx_base_mib; /* a CUDA context's device memory: this ... */
    uint64_t ctx_sm_kib;   /* ... plus this per SM the context can use */
    uint32_t sms;
    uint32_t mig_compute_slices; /* 0 = no MIG */
    uint32_t mig_memory_slices;
    uint32_t n_profiles;
    gsim_mig_profile_t profiles[GSIM_MAX_PROFILES];
} gsim_model_t;

/* Returns the model called name (exact, case-sensitive), or NULL. Thread-safe. */
const gsim_model_t *gsim_model_find(const char *name);

/* Sets the compute capability of model m (9.0 for an H100). Thread-safe. */
void gsim_model_cc(const gsim_model_t *m, int *major, int *minor);

/* Returns the device memory one CUDA context takes on model m when it can use sms SMs (the whole
 * GPU's, or a MIG instance's): the model's base part plus its per-SM part. Thread-safe. */
uint64_t gsim_context_bytes(const gsim_model_t *m, uint32_t sms);

/* Returns the number of known models and, through *models, the table. Thread-safe. */
size_t gsim_models(const gsim_model_t **models);

/* Parses a GPUSIM_DEVICES value ("H100-80GB,H100-80GB", "A100-40GB*4", a mix, or NULL/"" for one
 * H100-80GB) into model pointers. Returns the device count (1..GSIM_MAX_DEVICES), or -EINVAL with
 * a message naming the bad part in err. Thread-safe. */
int gsim_parse_devices(const char *spec, const gsim_model_t **out, char *err, size_t errlen);

/* ---- shared node state ---- */

typedef struct gsim_interval {
    int64_t start_ns; /* CLOCK_MONOTONIC, wall time */
    int64_t end_ns;
    int64_t busy_ns;   /* work inside [start, end): all of it, except for history entries that
                        * merged a process's kernels across short idle gaps */
    int64_t submit_ns; /* when the work was launched (the earliest, for merged entries) */
    int32_t pid;
    uint32_t pct;     /* share of the device's SMs the work may use (100 = whole device) */
    uint32_t mps_pct; /* the MPS client's active thread percentage, 0 = not an MPS client */
    uint32_t pad;
} gsim_interval_t;

/* The busy time of iv within [from, to): its work, spread evenly over its span. */
int64_t gsim_interval_busy_within(const gsim_interval_t *iv, int64_t from, int64_t to);

/* Kernel work on one execution domain (a whole GPU or one MIG GPU instance). Work of different
 * processes overlaps only while the sum of their pct stays <= 100: time-slicing is pct 100, MPS
 * clients run at their active thread percentage. */
typedef struct gsim_timeline {
    uint32_t n_reserved;
    uint32_t history_next;
    uint32_t history_count;
    uint32_t pad;
    gsim_interval_t reserved[GSIM_MAX_RESERVATIONS];
    gsim_interval_t history[GSIM_HISTORY];
} gsim_timeline_t;

typedef struct gsim_ci {
    uint32_t in_use;
    uint32_t id;
    uint32_t profile_id; /* NVML_COMPUTE_INSTANCE_PROFILE_* */
    uint32_t start;
    uint32_t size; /* compute slices */
    uint32_t pad;
} gsim_ci_t;

typedef struct gsim_gi {
    uint32_t in_use;
    uint32_t id;            /* NVML GPU instance id */
    uint32_t profile_index; /* into the model's profiles[] */
    uint32_t start;         /* first memory slot */
    uint32_t size;          /* memory slots */
    uint32_t compute;       /* compute slices */
    uint32_t sms;
    uint32_t ci_next_id;
    uint64_t memory_bytes;
    uint64_t used_bytes;
    char uuid[GSIM_UUID_MAX]; /* "MIG-..." */
    gsim_ci_t ci[GSIM_MAX_CI];
    gsim_timeline_t timeline;
} gsim_gi_t;

typedef struct gsim_device {
    uint32_t model_index;
    uint32_t sms;
    uint64_t total_bytes;     /* NVML's total */
    uint64_t reserved_bytes;  /* kept by the driver: CUDA's total is total - reserved */
    uint64_t used_bytes;      /* every process's memory on this GPU, MIG instances included */
    uint64_t busy_ns_total;   /* kernel time ever reserved on this GPU */
    char name[GSIM_NAME_MAX]; /* "NVIDIA H100-80GB" */
    char uuid[GSIM_UUID_MAX]; /* "GPU-..." */
    char pci_bus_id[32];      /* "00000000:18:00.0" */
    uint32_t compute_mode;    /* NVML/CU compute mode value */
    uint32_t mig_mode;        /* 0 disabled, 1 enabled */
    uint32_t gi_next_id;
    uint32_t pad;
    gsim_gi_t gi[GSIM_MAX_GI];
    gsim_timeline_t timeline;
} gsim_device_t;

/* A process's CUDA checkpoint state (cuCheckpointProcess*; sim/checkpoint.c,
 * sim/cuda/checkpoint*.c). Another process (the requester) posts one operation at a time: under the
 * node lock it checks that none is in flight (done == request), fills op and its arguments, bumps
 * request and wakes the target (a futex on request in the shared mapping). The target's checkpoint
 * thread performs it, sets state and result, then done = request, and wakes the requester (a futex
 * on done). state and restore_tid are written by the target only; saved, saved_gi and host_bytes by
 * the target under the node lock. */
typedef struct gsim_ckpt {
    _Atomic uint32_t request;           /* futex word: operations posted */
    _Atomic uint32_t done;              /* futex word: operations completed */
    uint32_t op;                        /* GSIM_CKPT_* of the last posted operation */
    uint32_t state;                     /* CUprocessState */
    int32_t result;                     /* CUresult of the last completed operation */
    int32_t restore_tid;                /* the target's checkpoint thread (0: none) */
    uint32_t timeout_ms;                /* GSIM_CKPT_LOCK: 0 = wait as long as it takes */
    int32_t fault;                      /* nonzero: fail the operation with this CUresult, FAILED */
    int32_t remap[GSIM_MAX_DEVICES];    /* GSIM_CKPT_RESTORE: the GPU each GPU's memory goes to */
    uint64_t saved[GSIM_MAX_DEVICES];   /* device memory checkpointed off each GPU (its charge) */
    int32_t saved_gi[GSIM_MAX_DEVICES]; /* the GPU instance it was charged in (-1: whole GPU) */
    uint64_t host_bytes;                /* host memory the checkpointed contents take */
} gsim_ckpt_t;

enum { GSIM_CKPT_LOCK = 1, GSIM_CKPT_CHECKPOINT, GSIM_CKPT_RESTORE, GSIM_CKPT_UNLOCK };

/* A process slot. Its pid is the process's key on the node (its timeline intervals carry it): the
 * process's pid when it runs in the PID namespace the node was created in (gsim_node_t.pidns),
 * else -(slot + 1), unique on the node however many namespaces number their processes from 1.
 * What NVML shows is the pid as the caller's namespace sees it (sim/nvml/pidns.c), found through
 * the identity below: the PID namespace (nsfs inode), the pid in it and the start time. */
typedef struct gsim_proc {
    int32_t pid;      /* 0 = free slot; else the key, see above */
    uint32_t mps_pct; /* MPS active thread percentage; 0 = not an MPS client */
    int32_t ns_pid;   /* getpid() of the process: its pid in its own PID namespace */
    uint32_t pad;
    uint64_t pidns;       /* inode of its /proc/self/ns/pid; 0 when unknown (no /proc) */
    uint64_t start_ticks; /* field 22 of /proc/self/stat (clock ticks since boot); 0 unknown */
    char name[GSIM_NAME_MAX];
    uint64_t mem[GSIM_MAX_DEVICES];       /* bytes held per GPU */
    int32_t gi[GSIM_MAX_DEVICES];         /* GPU instance slot the memory is in, -1 = whole GPU */
    uint64_t busy_ns[GSIM_MAX_DEVICES];   /* kernel time reserved (concurrent kernels add up) */
    uint64_t active_ns[GSIM_MAX_DEVICES]; /* wall time the device runs its work (their union) */
    gsim_ckpt_t ckpt;                     /* CUDA checkpoint state and requests (checkpoint.c) */
} gsim_proc_t;

#define GSIM_MAGIC   UINT64_C(0x31657461745f6d73) /* "sm_state1" */
#define GSIM_VERSION 5u

typedef struct gsim_node {
    uint64_t magic;
    uint32_t version;
    uint32_t n_devices;
    uint64_t size;    /* sizeof(gsim_node_t) of the writer */
    char config[256]; /* the GPUSIM_DEVICES it was created with */
    uint64_t pidns;   /* PID namespace (nsfs inode) of the process that created it; 0 unknown */
    pthread_mutex_t lock;
    gsim_device_t dev[GSIM_MAX_DEVICES];
    gsim_proc_t procs[GSIM_MAX_PROCS];
} gsim_node_t;

/* An execution and memory domain: a whole GPU (gi = -1) or one MIG GPU instance. */
typedef struct gsim_domain {
    int dev;
    int gi;
} gsim_domain_t;

/* Opens (creating atomically if needed) the node state named by GPUSIM_STATE (default
 * /tmp/gpusim-$UID) with the devices of GPUSIM_DEVICES. With register_process nonzero the calling
 * process takes a process slot (its GPU memory and busy time are recorded there; done by the
 * driver, not by NVML tools). Idempotent and thread-safe: later calls return the same node.
 * Returns 0 and *node, or a negative errno with one line printed to stderr naming the cause. */
int gsim_node_open(int register_process, gsim_node_t **node);

/* The path of the node's state file once gsim_node_open succeeded ("" before). */
const char *gsim_node_path(void);

/* Locks / unlocks the node. Lock recovers from a dead owner. Never fails on a valid node. */
void gsim_node_lock(gsim_node_t *node);
void gsim_node_unlock(gsim_node_t *node);

/* ---- process identity across PID namespaces (procid.c) ---- */

/* Returns the inode of the PID namespace /proc/<pid>/ns/pid names (pid 0: the calling process),
 * or 0 when it cannot be read (no /proc, or no permission). */
uint64_t gsim_pidns_of(int pid);

/* Reads the NSpid line of /proc/<pid>/status (pid 0: /proc/self): the process's pid in the PID
 * namespace of that /proc mount, then in each namespace below it down to its own. Fills up to max
 * entries of ids and returns how many the line has (0 when it cannot be read). */
int gsim_nspid_of(int pid, int32_t *ids, int max);

/* Returns the start time of /proc/<pid>/stat (field 22, clock ticks since boot; pid 0: the
 * calling process), or 0 when it cannot be read or the process has exited (a zombie). */
uint64_t gsim_start_ticks_of(int pid);

/* Returns the calling process's slot (registered by gsim_node_open), or NULL. */
gsim_proc_t *gsim_node_self(gsim_node_t *node);

/* Reclaims the memory and pending work of processes that are gone. Call with the lock held.
 * Returns the number of processes reclaimed. */
int gsim_node_reap_locked(gsim_node_t *node);

/* The memory of dev that processes can allocate (CUDA's total): NVML's total less the driver's
 * reserved memory. */
uint64_t gsim_device_usable(const gsim_device_t *dev);

/* Charges bytes of physical memory in domain to the calling process. Fails with -ENOMEM when
 * the GPU (or the MIG instance) does not have them free, after reclaiming dead processes once.
 * Returns 0 or -ENOMEM/-EINVAL. Takes the lock. */
int gsim_mem_charge(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes);

/* Returns bytes charged by gsim_mem_charge. Takes the lock. Never fails. */
void gsim_mem_uncharge(gsim_node_t *node, gsim_domain_t domain, uint64_t bytes);

/* Reads the domain's total and used memory as CUDA sees them (reclaiming dead processes first):
 * a whole GPU's total excludes the driver's reserved memory, used is every process's memory.
 * Takes the lock. Returns 0 or -EINVAL for a domain that does not exist. */
int gsim_mem_info(gsim_node_t *node, gsim_domain_t domain, uint64_t *total, uint64_t *used);

/* Returns the domain's timeline (whole GPU or MIG instance), or NULL when it does not exist.
 * Call with the lock held. */
gsim_timeline_t *gsim_domain_timeline(gsim_node_t *node, gsim_domain_t domain);

/* ---- CUDA checkpoints across processes (checkpoint.c) ---- */

/* Returns the slot of the live CUDA process pid names in the caller's PID namespace (its node key,
 * or its pid in its own namespace when that is the caller's), or -1. Call with the lock held. */
int gsim_ckpt_find_locked(gsim_node_t *node, int pid);

/* Moves every byte proc holds on the node's GPUs off them (into proc->ckpt.saved): NVML and every
 * process's free memory see it released. Call with the lock held. */
void gsim_ckpt_release_locked(gsim_node_t *node, gsim_proc_t *proc);

/* Charges proc->ckpt.saved[d] on GPU proc->ckpt.remap[d] for every d, all or none (the same GPU
 * instance when it was in one). Returns 0, or -ENOMEM when one does not fit (nothing charged).
 * Call with the lock held. */
int gsim_ckpt_reclaim_locked(gsim_node_t *node, gsim_proc_t *proc);

/* Waits while *word == seen (a futex in the shared mapping; at most timeout_ms, < 0: no limit).
 * Wakes every waiter of *word. */
void gsim_ckpt_wait(_Atomic uint32_t *word, uint32_t seen, int timeout_ms);
void gsim_ckpt_wake(_Atomic uint32_t *word);

/* ---- time ---- */

/* CLOCK_MONOTONIC in nanoseconds: the node's wall clock, common to all processes. */
int64_t gsim_now_ns(void);

/* GPUSIM_TIME_SCALE (> 0, default 1): simulated time runs this many times faster than wall
 * time. Read once; thread-safe. */
double gsim_time_scale(void);

/* Sleeps until the wall clock reaches deadline_ns (returns at once if it has passed). */
void gsim_sleep_until(int64_t deadline_ns);

/* Kernel work to place on a timeline (gsim_timeline_reserve). */
typedef struct gsim_work {
    int32_t pid;
    uint32_t mps_pct; /* the MPS client's active thread percentage (1..100); 0 = time-sliced */
    int64_t ready_ns; /* earliest start (stream order) */
    int64_t work_ns;  /* wall time the kernel takes with the whole device to itself */
} gsim_work_t;

/* The time model, calibrated with fixed-work kernels on an H100 (data/gpu-facts):
 * - Contexts are time-sliced: work of different processes never overlaps. Work launched while
 *   another process has work pending on the device shares it by time slices, which costs
 *   GSIM_SLICE_EFFICIENCY of its throughput: two saturating processes get 45.5 % each, 91 %
 *   together. Work launched with the device to itself runs at full speed.
 * - MPS clients run concurrently on a partition of the SMs: a client at active thread percentage
 *   p runs at p % of the device's speed (its kernel takes work * 100 / p); when the pending
 *   clients' percentages add up to more than 100 each is scaled down to its part of 100, and
 *   together they gain GSIM_MPS_CONCURRENCY (two full clients: 53.5 % each, 107 % together). */
#define GSIM_SLICE_EFFICIENCY 0.91
#define GSIM_MPS_CONCURRENCY  1.07

/* Reserves w's kernel on a timeline at the earliest time, no earlier than w->ready_ns, that keeps
 * every instant's total pct <= 100 (time-sliced work takes pct 100). Sets *start_ns and *end_ns
 * (the kernel's wall time follows the time model above). Returns 0, or -EAGAIN when the timeline
 * holds GSIM_MAX_RESERVATIONS future intervals (the caller unlocks, sleeps until *start_ns,
 * which is then the earliest end, and retries — like a full GPU push buffer). Call with the lock
 * held. */
int gsim_timeline_reserve(gsim_timeline_t *timeline, const gsim_work_t *w, int64_t *start_ns,
                          int64_t *end_ns);

/* Returns the part of pid's reserved work that lies after now_ns (device time booked but not yet
 * spent). Call with the lock held. */
int64_t gsim_timeline_future_ns(const gsim_timeline_t *timeline, int32_t pid, int64_t now_ns);

/* Returns the wall time from now_ns on during which pid has work reserved (the union of its
 * reserved intervals after now_ns). gsim_proc_t.active_ns grows by its change at each
 * reservation, so active_ns minus this is the device time the process's work has had so far.
 * Call with the lock held. */
int64_t gsim_timeline_future_union_ns(const gsim_timeline_t *timeline, int32_t pid, int64_t now_ns);

/* Returns the wall time within [from_ns, to_ns) during which pid had work launched and not yet
 * complete (queued or running): what NVML's per-process SM utilization reports. Call with the
 * lock held. */
int64_t gsim_timeline_pending_ns(gsim_timeline_t *timeline, int32_t pid, int64_t from_ns,
                                 int64_t to_ns);

/* Returns the wall time within [from_ns, to_ns) during which some work ran on the timeline
 * (all processes when pid is 0, else only pid's). Call with the lock held. */
int64_t gsim_timeline_busy_ns(gsim_timeline_t *timeline, int32_t pid, int64_t from_ns,
                              int64_t to_ns);

/* Reserves w's kernel on domain's timeline (gsim_timeline_reserve) and books it: the calling
 * process's busy_ns and the device's busy_ns_total grow by the kernel's time, the process's
 * active_ns by the growth of the union of its work after now (kernels of one process that
 * overlap count once), so that active_ns less gsim_timeline_future_union_ns is the device time
 * its work has had: the ground truth of gpusim's users (the CUDA driver's launches, the NVML
 * tests' helper, the compute tests). Returns 0, -EAGAIN (as gsim_timeline_reserve) or -ENODEV
 * (the domain is gone). Call with the lock held. */
int gsim_node_reserve_locked(gsim_node_t *node, gsim_domain_t domain, const gsim_work_t *w,
                             int64_t *start_ns, int64_t *end_ns);

/* Drops every interval of pid (a process that is gone). Call with the lock held. */
void gsim_timeline_forget(gsim_timeline_t *timeline, int32_t pid);

/* ---- what a CUDA process sees ---- */

/* Fills out[0..max) with the domains CUDA shows this process, in CUDA ordinal order, following
 * CUDA_VISIBLE_DEVICES as NVIDIA's driver does (indices and GPU-/MIG- UUIDs; enumeration stops at
 * the first entry that matches nothing). Returns the count (0..max). Takes the lock. */
int gsim_visible_domains(gsim_node_t *node, gsim_domain_t *out, int max);

/* What the MPS control daemon serving this process (if any) imposes on it. */
typedef struct gsim_mps_client {
    int active;          /* nonzero when a live MPS control daemon serves this process */
    uint32_t thread_pct; /* active thread percentage 1..100 */
    uint64_t pinned_limit[GSIM_MAX_DEVICES]; /* bytes per CUDA ordinal; 0 = no limit */
} gsim_mps_client_t;

/* Finds whether CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps) has a live MPS control daemon
 * and, if so, the limits that apply to this process (daemon defaults, lowered by
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / CUDA_MPS_PINNED_DEVICE_MEM_LIMIT). Returns 0 (with
 * out->active 0 when there is no daemon) or a negative errno for malformed variables. */
int gsim_mps_client_detect(gsim_node_t *node, gsim_mps_client_t *out);

/* Asks the MPS control daemon of this process (CUDA_MPS_PIPE_DIRECTORY) for a client context on
 * GPU dev (node index), as the driver does at context creation; the daemon's simulated server
 * for the caller's user grants it (sim/mps/server.c). Returns 0 when granted (or when no daemon
 * answers: the caller is then no MPS client), or -EIO when the server met a fatal GPU error and
 * reset the device instead: the context must not be created (CUDA_ERROR_LAUNCH_FAILED). */
int gsim_mps_client_attach(int dev);

/* ---- versions the simulated driver reports (libcuda, libnvidia-ml, nvidia-smi) ---- */

#define GSIM_DRIVER_VERSION "580.65.06" /* an R580 driver: the one that ships CUDA 13.0 */
#define GSIM_CUDA_VERSION   13000       /* 1000 * major + 10 * minor, as cuDriverGetVersion */

/* The CUDA version the simulated driver supports: GPUSIM_CUDA_VERSION (e.g. 12080, to play an
 * older driver) or GSIM_CUDA_VERSION. What cuDriverGetVersion, NVML and nvidia-smi report. */
int gsim_cuda_version(void);

/* ---- MIG: GPU instances (GI) and compute instances (CI) ----
 *
 * A GI of a model profile occupies `size` memory slots from `start` and `compute` compute slices;
 * it has profile.memory / mig_memory_slices of the GPU's memory and gsim_mig_slice_sms() SMs per
 * compute slice. Its id is the one NVIDIA's driver gives that placement (the partition's index in
 * the GPU's fixed partition tree: 0 = whole GPU, then halves, quarters, eighths). CIs split a GI's
 * compute slices; their id is their slot. A MIG device is one CI; its UUID ("MIG-...") is the GI's
 * uuid for CI 0 and derived from it for others, stable while the instance exists. */

/* Returns the model of device dev (0 <= dev < n_devices). */
const gsim_model_t *gsim_device_model(const gsim_node_t *node, int dev);

/* Returns the SMs of one compute slice of model m (0 when m has no MIG). */
uint32_t gsim_mig_slice_sms(const gsim_model_t *m);

/* Returns the memory in bytes of a GPU instance of profile p on model m. */
uint64_t gsim_mig_profile_bytes(const gsim_model_t *m, const gsim_mig_profile_t *p);

/* Enables (nonzero) or disables MIG on dev. Returns 0, -EINVAL (no such device), -ENOTSUP (the
 * model has no MIG), or -EBUSY (enabling while a live process holds memory or has work on the
 * GPU; disabling while GPU instances exist). Takes the lock. */
int gsim_mig_set_mode(gsim_node_t *node, int dev, int enable);

/* Checks whether a GI of model profile pi could be created at memory slot start now. Returns 0,
 * -EINVAL (start is not a valid placement of the profile) or -ENOSPC (slots taken, compute slices
 * or the profile's instance limit exhausted). Call with the lock held; MIG must be enabled. */
int gsim_gi_fits_locked(const gsim_node_t *node, int dev, uint32_t pi, uint32_t start);

/* Returns how many more GIs of model profile pi could be created now, placing each where
 * gsim_gi_create would. Call with the lock held. */
uint32_t gsim_gi_remaining_locked(const gsim_node_t *node, int dev, uint32_t pi);

/* Creates a GI of model profile pi at memory slot start, or, when start < 0, at the free
 * placement that blocks the fewest other placements (ties: the lowest start). Sets *slot (index
 * in dev->gi[]). Returns 0, -EINVAL (bad device, profile or start), -ENOTSUP (MIG disabled) or
 * -ENOSPC. Takes the lock. */
int gsim_gi_create(gsim_node_t *node, int dev, uint32_t pi, int start, int *slot);

/* Destroys GI slot of dev after reclaiming dead processes. Returns 0, -EINVAL (no such GI) or
 * -EBUSY (compute instances exist, or a live process holds memory or has pending work in it).
 * Takes the lock. */
int gsim_gi_destroy(gsim_node_t *node, int dev, int slot);

/* Returns nonzero when a CI of size compute slices exists for a GI of gi_compute slices
 * (NVIDIA's tables: 1g:{1} 2g:{1,2} 3g:{1,2,3} 4g:{1,2,4} 7g:{1,2,3,4,7}). */
int gsim_ci_size_allowed(uint32_t gi_compute, uint32_t size);

/* Returns the NVML compute instance profile constant of a CI of size compute slices. */
uint32_t gsim_ci_profile_of_size(uint32_t size);

/* Returns how many more CIs of size slices GI slot gi could hold (lock held). */
uint32_t gsim_ci_remaining_locked(const gsim_node_t *node, int dev, int gi, uint32_t size);

/* Creates a CI of size compute slices in GI slot gi at the lowest free aligned start; sets *ci.
 * Returns 0, -EINVAL (no such GI, or a size the GI does not offer) or -ENOSPC. Takes the lock. */
int gsim_ci_create(gsim_node_t *node, int dev, int gi, uint32_t size, int *ci);

/* Destroys CI ci of GI slot gi. Returns 0, -EINVAL or -EBUSY (a live process holds memory or
 * has pending work in the GI). Takes the lock. */
int gsim_ci_destroy(gsim_node_t *node, int dev, int gi, int ci);

/* Returns the number of MIG devices (CIs) of dev; MIG devices are ordered by GI id, then CI id.
 * Call with the lock held. */
int gsim_mig_device_count_locked(const gsim_node_t *node, int dev);

/* Finds MIG device index of dev: sets *gi and *ci (slots). Returns 0 or -ENOENT (lock held). */
int gsim_mig_device_at_locked(const gsim_node_t *node, int dev, int index, int *gi, int *ci);

/* Writes the UUID of the MIG device of CI ci in gi into out[GSIM_UUID_MAX]. */
void gsim_mig_uuid(const gsim_gi_t *gi, int ci, char *out);

/* Finds the MIG device whose UUID starts with prefix ("MIG-..."; the prefix must match exactly
 * one). Sets *dev, *gi, *ci. Returns 0 or -ENOENT. Call with the lock held. */
int gsim_mig_find_uuid_locked(const gsim_node_t *node, const char *prefix, int *dev, int *gi,
                              int *ci);

#endif
