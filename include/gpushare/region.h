/* SPDX-License-Identifier: Apache-2.0 */
/* The lease accounting region: a shared-memory file holding one lease's GPU memory budget.
 *
 * Every process of a lease maps the same region. Admission is reserve-then-commit: a process
 * reserves bytes against the lease's per-device limit before it asks the driver for memory, and
 * returns them if the driver fails or when it frees. A reservation is one compare-and-swap on
 * the device's 128-bit word (use + the operation's tag), lock-free across processes, so no
 * interleaving can pass the limit and a process that dies at any instruction holds nothing
 * others wait for; its charge is reclaimed exactly by whoever notices first (the daemon, or any
 * process of the lease), judged by pid + start time so a reused pid is not confused. The
 * protocol is described in src/region/region_internal.h. The compute share stored here is only
 * the daemon's record of the lease's guarantee; compute shares are scheduled per GPU
 * (gpushare/sched.h).
 *
 * Processes are identified through /proc: all members of a lease and whoever reaps them must
 * share one pid namespace.
 *
 * A region is a file: one the shim makes itself (GPUSHARE_REGION=PATH, the user's own), or one
 * gpushared makes for a lease: a sealed memfd nobody can shrink or grow, which processes of the
 * lease get from the daemon (gs_region_join). Everything read from a region may have been written
 * by any process of its lease: readers do bounded work and trust nothing it says about who is
 * alive beyond that lease's own accounting. */
#ifndef GPUSHARE_REGION_H
#define GPUSHARE_REGION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpushare/quantity.h"

/* The most processes a lease's region tracks at once. */
#define GS_REGION_MAX_PROCS 1024
#define GS_REGION_LEASE_MAX 64

typedef struct gs_region gs_region_t;

/* What a region is created with. */
typedef struct gs_region_config {
    uint64_t limit[GS_MAX_DEVICES]; /* bytes per CUDA ordinal; 0 = no limit on that device */
    uint32_t compute_share;         /* percent of a device's compute, 0 = not limited */
    char lease_id[GS_REGION_LEASE_MAX];
} gs_region_config_t;

/* A consistent copy of the region's counters (gs_region_snapshot). */
typedef struct gs_region_stats {
    uint64_t limit[GS_MAX_DEVICES];
    uint64_t used[GS_MAX_DEVICES];
    uint64_t peak[GS_MAX_DEVICES];
    uint64_t oom_events;
    uint64_t alloc_count;
    uint64_t free_count;
    uint64_t reclaimed_bytes; /* charge taken back from processes that died */
    uint32_t compute_share;
    uint32_t n_procs; /* live process records */
    char lease_id[GS_REGION_LEASE_MAX];
} gs_region_stats_t;

/* One process of the lease (gs_region_processes). */
typedef struct gs_region_process {
    pid_t pid;
    uint64_t start_time; /* /proc/PID/stat starttime, clock ticks since boot */
    uint64_t used[GS_MAX_DEVICES];
} gs_region_process_t;

/* gs_region_adopt flags: the descriptor must be sealed against resizing (a region of gpushared);
 * the caller is one of the lease's processes (it takes the membership lock, gs_region_in_use). */
#define GS_REGION_SEALED 1u
#define GS_REGION_MEMBER 2u

/* The name gpushared's region memfds carry (/proc/PID/fd/N reads "/memfd:gpushare-region"). */
#define GS_REGION_MEMFD_NAME "gpushare-region"

/* Creates the region file at path with cfg and file mode (e.g. 0600), atomically: the file
 * appears complete (all its space allocated) or not at all; the caller becomes a member.
 * Returns 0 and *out, GS_EEXIST when path exists, or -errno. The caller owns *out
 * (gs_region_close). */
int gs_region_create(const char *path, const gs_region_config_t *cfg, mode_t mode,
                     gs_region_t **out);

/* Creates a region for a lease of gpushared: an anonymous memory file (memfd, named
 * GS_REGION_MEMFD_NAME, mode 0666, owned by the caller) with all its pages allocated, sealed so
 * that nobody, its holders included, can shrink or grow it. The caller is not a member. Returns
 * 0 and *out, or -errno (GS_ENOMEM / GS_ENOSPC when its memory cannot be had). */
int gs_region_create_sealed(const gs_region_config_t *cfg, gs_region_t **out);

/* Maps the region behind fd, taking ownership of fd whatever happens: checks that it is a
 * regular file of the region's size, magic and version, with GS_REGION_SEALED that it cannot be
 * resized (GS_EPERM otherwise); with GS_REGION_MEMBER the caller joins as a member through a
 * description of its own. Returns 0 and *out, GS_EVERSION for something that is not a compatible
 * region, or -errno. */
int gs_region_adopt(int fd, unsigned flags, gs_region_t **out);

/* The region's descriptor (owned by the handle; -1 for a private region), e.g. to pass it on. */
int gs_region_fd(const gs_region_t *region);

/* Asks the kernel whether some process maps the region as a member (the membership lock, see
 * src/region/region_internal.h): 1 or 0, whatever the region's content says; the caller's own
 * membership counts. A private region answers from its records. Returns 1, 0 or -errno. */
int gs_region_in_use(const gs_region_t *region);

/* Makes a region whose lease has ended ready for a new lease with cfg: every record in use,
 * counter and charge back to zero, the new limits, share and id (free records are left as they
 * are: a region must go back only to a lease of the same user). Only a region no process maps as
 * a member (gs_region_in_use; a private one: no record and no charge) can be recycled. Returns
 * 0, GS_EBUSY, or -errno. Not thread-safe against users of the region (there must be none). */
int gs_region_recycle(gs_region_t *region, const gs_region_config_t *cfg);

/* Joins a lease's region named by spec, the value of GPUSHARE_REGION: "gpushared:ID:SOCKET"
 * asks the gpushared listening on SOCKET for lease ID's region (it checks the caller's uid;
 * the daemon being restarted is waited for up to 5 s); anything else is a path
 * (gs_region_open). The caller becomes a member. Returns 0 and *out, or a negative code with one
 * line in err. */
int gs_region_join(const char *spec, gs_region_t **out, char *err, size_t errlen);

/* Opens an existing region file as a member, checking magic, version and size. Returns 0 and
 * *out, GS_ENOENT, GS_EVERSION for a file that is not a compatible region, or -errno. */
int gs_region_open(const char *path, gs_region_t **out);

/* Opens path, first creating it with cfg (mode 0600) when it does not exist; concurrent callers
 * all end up on the one region that won. *created (may be NULL) tells whether this call made it.
 * Returns 0 or a negative code as gs_region_create / gs_region_open. */
int gs_region_open_or_create(const char *path, const gs_region_config_t *cfg, gs_region_t **out,
                             int *created);

/* Creates a region private to this process (anonymous shared memory, inherited by fork). */
int gs_region_create_private(const gs_region_config_t *cfg, gs_region_t **out);

/* Unmaps the region. Does not detach processes (their records stay until they exit). */
void gs_region_close(gs_region_t *region);

/* Registers the calling process (pid + start time) in a free record and returns its index in
 * *slot; the handle remembers it (one record per handle and process: reserve and release accept
 * only that slot). Lock-free; O(1) unless the table is crowded. Returns 0, or GS_ENOSPC when
 * GS_REGION_MAX_PROCS processes are live. */
int gs_region_attach(gs_region_t *region, int *slot);

/* Gives back everything slot (this handle's own record) holds and frees the record (a process
 * leaving cleanly). Other slots are ignored. */
void gs_region_detach(gs_region_t *region, int slot);

/* Reserves bytes on device dev for slot (this handle's attached record). Returns 0, or
 * GS_ELIMIT when used + bytes would exceed the device's limit (after reclaiming dead processes,
 * at most every 50 ms; the OOM counter is bumped), GS_EINVAL for a bad or foreign slot or
 * device. A device without a limit always succeeds. Thread-safe; lock-free across processes. */
int gs_region_reserve(gs_region_t *region, int slot, unsigned dev, uint64_t bytes);

/* Returns bytes reserved by slot on dev (a rollback or a free). Counts a free when is_free is
 * nonzero. Never fails; returning more than slot holds clamps to what it holds. Thread-safe. */
void gs_region_release(gs_region_t *region, int slot, unsigned dev, uint64_t bytes, int is_free);

/* Counts one out-of-memory event that slot's process decided on its own. */
void gs_region_count_oom(gs_region_t *region, int slot);

/* Reclaims the charge of every process that is gone (or a zombie). Returns how many. One pass
 * at a time per handle (a concurrent call from another thread returns 0); any number of
 * processes may reap the same region at once. */
int gs_region_reap(gs_region_t *region);

/* Bounded reaping: looks at the records from *cursor on, spending one unit of *budget per record
 * in use (a liveness check), and stops when the budget is spent (*cursor is then where to go on)
 * or at the end of the table (*cursor = 0). Returns how many were reclaimed. */
int gs_region_reap_some(gs_region_t *region, unsigned *cursor, unsigned *budget);

/* Like gs_region_reap but at most once per interval_ms across all processes of the region
 * (the first caller after the interval does it). Returns how many were reclaimed. */
int gs_region_reap_if_due(gs_region_t *region, unsigned interval_ms);

/* The limit of a suspended lease's devices (gpushared's, issue 40): one byte, so that every
 * reservation beside the charge its checkpointed processes keep is refused with GS_ELIMIT (the
 * limit check of gs_region_reserve as it is: nothing more on its path). */
#define GS_REGION_LIMIT_SUSPENDED UINT64_C(1)

/* Sets one device's limit (gpushared: GS_REGION_LIMIT_SUSPENDED while the lease is suspended,
 * its own again at resume); a reservation in flight may still see the old one. Ignores a
 * device beyond the table. Lock-free. */
void gs_region_set_limit(gs_region_t *region, unsigned dev, uint64_t limit);

/* Lock-free reads of one device's limit (0 = none) and current use. */
uint64_t gs_region_limit(const gs_region_t *region, unsigned dev);
uint64_t gs_region_used(const gs_region_t *region, unsigned dev);

/* Compute share in percent (0 = none). */
uint32_t gs_region_compute_share(const gs_region_t *region);

/* Context footprints the lease's processes measured (the shim, footprint.c), so that a later
 * process charges a context of the same kind from the figure instead of measuring it again.
 * key names the kind (a hash of the GPU, the context's kind and the environment that shapes
 * it); the region keeps GS_REGION_FOOTPRINTS of them, each key's 24 low bits beside the bytes
 * in 4 KiB units, in one word written atomically (the last writer of a key wins; a figure
 * that is no whole number of 4 KiB pages, or of 4 PiB or more, is not kept).
 * gs_region_footprint returns the bytes kept for key, 0 when none. Lock-free; the region is
 * the lease's, so a figure is only as trusted as the lease's own records. */
#define GS_REGION_FOOTPRINTS 2
uint64_t gs_region_footprint(const gs_region_t *region, uint64_t key);
void gs_region_set_footprint(gs_region_t *region, uint64_t key, uint64_t bytes);

/* Lock-free upper bound of the process records in use: 0 guarantees that no process is
 * attached (a process that died while attaching may keep it above the truth; never below).
 * Reaping, snapshots and process lists skip the process table while it is 0. */
uint32_t gs_region_attached(const gs_region_t *region);

/* Copies the counters (each read atomically; the set is not one instant). Returns 0. */
int gs_region_snapshot(gs_region_t *region, gs_region_stats_t *stats);

/* Copies up to max live process records into out; returns how many were copied. */
int gs_region_processes(gs_region_t *region, gs_region_process_t *out, int max);

/* In a forked child: frees the handle's process-local lock, which a thread of the parent may
 * have held at the fork. The child must then attach its own record. */
void gs_region_after_fork(gs_region_t *region);

/* Returns the lease id the region was made (or recycled) for: a terminated copy kept in the
 * handle until the next call. */
const char *gs_region_lease_id(gs_region_t *region);

/* Reads /proc/PID/FILE ("cgroup", "status") into buf, NUL-terminated, at most len - 1 bytes.
 * Returns the bytes read, or 0 when the file cannot be read (the process is gone). Thread-safe. */
size_t gs_proc_read(pid_t pid, const char *file, char *buf, size_t len);

/* Reads /proc/PID/stat: sets *start_time and returns 1 when pid is alive and not a zombie, 0
 * when it is gone. Thread-safe. */
int gs_proc_alive(pid_t pid, uint64_t *start_time);

#endif
