/* SPDX-License-Identifier: Apache-2.0 */
/* The watchdog: NVML's per-process memory held against the leases (see watchdog.h). */
#include "watchdog.h"

#include "attribute.h"
#include "nvml_procs.h"

#include "gpushare/error.h"
#include "gpushare/log.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOG_PROCS_MAX 4 /* processes named in one log line */
#define MPS_SERVER    "nvidia-cuda-mps-server"

/* What the latest scan found of one lease. */
typedef struct lease_real {
    uint64_t id;
    uint64_t real[GS_MAX_DEVICES]; /* per part: its processes' NVML memory on the part's GPU */
    uint64_t over[GS_MAX_DEVICES]; /* per part: real - limit when beyond the tolerance, else 0 */
    int flagged[GS_MAX_DEVICES];   /* over at the previous scan (logs on changes only) */
} lease_real_t;

/* A process left unsure (attribute.h) at consecutive scans, and at how many. */
typedef struct unsure {
    pid_t pid;
    uint64_t start;
    unsigned scans;
} unsure_t;

/* An unmanaged process already logged. */
typedef struct seen {
    pid_t pid;
    uint64_t start;
    unsigned gpu;
} seen_t;

struct gs__watchdog {
    int64_t next_ms;
    gs__nvml_procs_t procs;
    gs__verdict_t *verdicts; /* one per entry of procs */
    unsigned verdicts_cap;
    uint64_t cursor; /* where the next scan's region reads go on (attribute.h) */
    lease_real_t *leases;
    unsigned n_leases;
    seen_t *seen;
    unsigned n_seen;
    unsure_t *unsure; /* sorted by pid and start */
    unsigned n_unsure;
    uint64_t kills[GS__KILL_REASONS];
    uint64_t scans; /* scans completed: what a test waits for before saying nothing happened */
};

int gs__watchdog_start(gs__daemon_t *d)
{
    d->watchdog = calloc(1, sizeof(*d->watchdog));
    return d->watchdog != NULL ? 0 : GS_ENOMEM;
}

void gs__watchdog_stop(gs__daemon_t *d)
{
    gs__watchdog_t *w = d->watchdog;
    if (w == NULL)
        return;
    gs__nvml_procs_free(&w->procs);
    free(w->verdicts);
    free(w->leases);
    free(w->seen);
    free(w->unsure);
    free(w);
    d->watchdog = NULL;
}

int gs__watchdog_tick(gs__daemon_t *d, int64_t now_ms)
{
    gs__watchdog_t *w = d->watchdog;
    if (w == NULL || d->cfg.watch_interval_ms == 0 || now_ms < w->next_ms)
        return 0;
    w->next_ms = now_ms + d->cfg.watch_interval_ms;
    gs__watchdog_scan(d);
    return 1;
}

/* ---- attribution (attribute.h) ---- */

uint64_t gs__watchdog_lease_of(const gs__daemon_t *d, pid_t pid)
{
    /* The latest scan's verdict when it saw the process; else its ancestry alone: a view never
     * reads regions (a status request costs what a scan would not). */
    const gs__watchdog_t *w = d->watchdog;
    for (unsigned i = 0; w != NULL && i < w->procs.n; i++) {
        if (w->procs.procs[i].pid == pid && w->procs.procs[i].alive)
            return w->verdicts[i].lease;
    }
    const gs__lease_t *lease = gs__attribute_by_ancestry(d, pid);
    return lease != NULL ? lease->rec.id : 0;
}

static int part_on(const gs__lease_t *lease, unsigned gpu)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        if (lease->alloc.part[i].gpu == gpu)
            return (int)i;
    }
    return -1;
}

/* ---- per-lease figures and the GPUs' outside memory ---- */

static const lease_real_t *find_real(const lease_real_t *rows, unsigned n, uint64_t id)
{
    for (unsigned i = 0; i < n; i++) {
        if (rows[i].id == id)
            return &rows[i];
    }
    return NULL;
}

/* What the lease's processes may hold on part k: its memory, none while it is suspended (its
 * memory went back to the pool; its checkpointed processes hold none on the GPU). */
static uint64_t part_limit(const gs__lease_t *lease, unsigned k)
{
    return lease->rec.suspended ? 0 : lease->alloc.part[k].memory;
}

/* Fills row with the lease's real memory per part, keeping what was flagged before. */
static void measure_lease(const gs__daemon_t *d, const gs__watchdog_t *w, const gs__lease_t *lease,
                          const lease_real_t *before, lease_real_t *row)
{
    memset(row, 0, sizeof(*row));
    row->id = lease->rec.id;
    if (before != NULL)
        memcpy(row->flagged, before->flagged, sizeof(row->flagged));
    for (unsigned i = 0; i < w->procs.n; i++) {
        if (w->verdicts[i].lease == lease->rec.id && w->verdicts[i].part >= 0)
            row->real[w->verdicts[i].part] += w->procs.procs[i].used;
    }
    for (unsigned k = 0; k < lease->alloc.n; k++) {
        uint64_t limit = part_limit(lease, k);
        if (row->real[k] > limit && row->real[k] - limit > d->cfg.watch_tolerance)
            row->over[k] = row->real[k] - limit;
    }
}

static int measure_leases(const gs__daemon_t *d, gs__watchdog_t *w)
{
    lease_real_t *rows = calloc(d->n_leases + 1, sizeof(*rows));
    if (rows == NULL)
        return GS_ENOMEM;
    unsigned n = 0;
    for (const gs__lease_t *l = d->leases; l != NULL && n < d->n_leases; l = l->next, n++)
        measure_lease(d, w, l, find_real(w->leases, w->n_leases, l->rec.id), &rows[n]);
    free(w->leases);
    w->leases = rows;
    w->n_leases = n;
    return 0;
}

/* What GPU g holds that no process's known memory explains: its used memory (NVML, with the
 * driver's reserve) less the reserve and the processes NVML gave a figure for. */
static uint64_t unexplained(const gs__daemon_t *d, const gs__watchdog_t *w, unsigned g)
{
    uint64_t known = d->gpus[g].driver_reserved + w->procs.listed[g];
    return d->usage[g].used > known ? d->usage[g].used - known : 0;
}

/* Memory held on GPU g beyond what the leases account for. A process of no lease whose memory
 * NVML reports as N/A is not counted as 0: what the GPU holds beyond every known figure is
 * taken to be its (issue 25). */
static uint64_t outside_of(const gs__daemon_t *d, const gs__watchdog_t *w, unsigned g)
{
    uint64_t bytes = 0;
    int unknown = 0;
    for (unsigned i = 0; i < w->procs.n; i++) {
        if (w->procs.procs[i].gpu == g && w->verdicts[i].part < 0) {
            bytes += w->procs.procs[i].used;
            unknown |= w->procs.procs[i].unknown && w->procs.procs[i].alive;
        }
    }
    if (unknown)
        bytes += unexplained(d, w, g);
    unsigned r = 0;
    for (const gs__lease_t *l = d->leases; l != NULL && r < w->n_leases; l = l->next, r++) {
        int k = part_on(l, g);
        uint64_t limit = k >= 0 ? part_limit(l, (unsigned)k) : 0;
        if (k >= 0 && w->leases[r].real[k] > limit)
            bytes += w->leases[r].real[k] - limit;
    }
    return bytes;
}

static void update_outside(gs__daemon_t *d, const gs__watchdog_t *w)
{
    for (unsigned g = 0; g < d->n_gpus; g++) {
        if (!w->procs.complete[g])
            continue; /* NVML could not tell: keep what was known */
        uint64_t bytes = outside_of(d, w, g);
        if (bytes < d->gpus[g].outside)
            d->need_schedule = 1; /* memory came back: the queue may fit now */
        d->gpus[g].outside = bytes;
    }
}

/* ---- the log ---- */

static int was_seen(const gs__watchdog_t *w, const gs__nvml_proc_t *p)
{
    for (unsigned i = 0; i < w->n_seen; i++) {
        if (w->seen[i].pid == p->pid && w->seen[i].start == p->info.start &&
            w->seen[i].gpu == p->gpu)
            return 1;
    }
    return 0;
}

static void log_unmanaged(const gs__daemon_t *d, const gs__nvml_proc_t *p, uint64_t lease)
{
    char size[32], of_lease[96] = "";
    gs_qty_format_human(p->used, size, sizeof(size));
    if (p->unknown)
        snprintf(size, sizeof(size), "memory NVML cannot tell (N/A)");
    if (lease != 0)
        snprintf(of_lease, sizeof(of_lease), " (a process of lease %llu, which has no share of it)",
                 (unsigned long long)lease);
    gs_warn("GPU %u: pid %d (user %s, command \"%s\") holds %s outside any lease%s",
            d->gpus[p->gpu].index, (int)p->pid, p->info.user, p->info.command, size, of_lease);
}

/* Logs each unmanaged process once (by pid, start time and GPU). */
static void report_unmanaged(const gs__daemon_t *d, gs__watchdog_t *w)
{
    seen_t *now = calloc(w->procs.n + 1, sizeof(*now));
    unsigned n = 0;
    for (unsigned i = 0; now != NULL && i < w->procs.n; i++) {
        const gs__nvml_proc_t *p = &w->procs.procs[i];
        if (w->verdicts[i].part >= 0 || !p->alive)
            continue;
        if (!was_seen(w, p))
            log_unmanaged(d, p, w->verdicts[i].lease);
        now[n++] = (seen_t){.pid = p->pid, .start = p->info.start, .gpu = p->gpu};
    }
    if (now == NULL)
        return;
    free(w->seen);
    w->seen = now;
    w->n_seen = n;
}

/* "pid 12 (command) 1.5 GiB, ..." for the lease's processes on its part k. */
static void list_processes(const gs__watchdog_t *w, uint64_t id, int k, char *out, size_t len)
{
    size_t off = 0;
    unsigned listed = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < w->procs.n && off < len; i++) {
        if (w->verdicts[i].lease != id || w->verdicts[i].part != k)
            continue;
        const gs__nvml_proc_t *p = &w->procs.procs[i];
        char size[32];
        gs_qty_format_human(p->used, size, sizeof(size));
        int m =
            listed < LOG_PROCS_MAX
                ? snprintf(out + off, len - off, "%spid %d (user %s, command \"%s\") %s",
                           listed > 0 ? ", " : "", (int)p->pid, p->info.user, p->info.command, size)
                : snprintf(out + off, len - off, ", ...");
        off += m > 0 ? (size_t)m : 0;
        if (listed++ >= LOG_PROCS_MAX)
            break;
    }
}

static void report_lease(const gs__daemon_t *d, const gs__watchdog_t *w, const gs__lease_t *lease,
                         lease_real_t *row)
{
    for (unsigned k = 0; k < lease->alloc.n; k++) {
        unsigned index = d->gpus[lease->alloc.part[k].gpu].index;
        if (row->over[k] != 0 && !row->flagged[k]) {
            char real[32], limit[32], procs[1024];
            gs_qty_format_human(row->real[k], real, sizeof(real));
            gs_qty_format_human(part_limit(lease, k), limit, sizeof(limit));
            list_processes(w, row->id, (int)k, procs, sizeof(procs));
            gs_warn("lease %llu (user %s) holds %s on GPU %u, over its limit of %s: %s",
                    (unsigned long long)row->id, lease->rec.user, real, index, limit, procs);
        } else if (row->over[k] == 0 && row->flagged[k]) {
            gs_info("lease %llu (user %s) is within its limit on GPU %u again",
                    (unsigned long long)row->id, lease->rec.user, index);
        }
        row->flagged[k] = row->over[k] != 0;
    }
}

static void report_leases(const gs__daemon_t *d, gs__watchdog_t *w)
{
    unsigned r = 0;
    for (const gs__lease_t *l = d->leases; l != NULL && r < w->n_leases; l = l->next, r++)
        report_lease(d, w, l, &w->leases[r]);
}

/* ---- enforce = kill ---- */

/* SIGKILL through a pidfd once the start time shows it is still the process NVML listed; the
 * lease's holder, when there is one, is told why first (gs__lease_events_t.killing). */
static int kill_exactly(const gs__daemon_t *d, const gs__lease_t *lease, const gs__nvml_proc_t *p,
                        const char *why)
{
    if (p->pid <= 1 || p->pid == getpid())
        return GS_EPERM;
    int fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    if (fd < 0)
        return -errno;
    gs__proc_info_t info;
    int result = gs__proc_read(p->pid, &info) == 0 && info.start == p->info.start ? 0 : GS_ENOENT;
    if (result == 0 && lease != NULL && d->events.killing != NULL)
        d->events.killing(d, lease, p->pid, p->info.command, why);
    if (result == 0 && syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) != 0)
        result = -errno;
    close(fd);
    return result;
}

/* Reported but never killed: root's processes of no lease (the node's own: DCGM, diagnostics) and
 * NVIDIA's MPS server (a root-owned executable of that name, which no user can make). */
static int never_killed(const gs__nvml_proc_t *p, int unmanaged)
{
    char path[64], exe[4096];
    if (unmanaged && p->info.uid == 0)
        return 1;
    snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->pid);
    ssize_t n = readlink(path, exe, sizeof(exe) - 1);
    struct stat st;
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    return strcmp(base != NULL ? base + 1 : exe, MPS_SERVER) == 0 && stat(exe, &st) == 0 &&
           st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* Kills p (of lease, NULL when of none) for why; a lease's kill becomes its end reason in the
 * history ("killed: " and what, shown with the job's end) and is counted by reason. */
static void kill_one(const gs__daemon_t *d, gs__watchdog_t *w, gs__lease_t *lease,
                     const gs__nvml_proc_t *p, gs__kill_reason_t reason, const char *why)
{
    if (never_killed(p, lease == NULL))
        return;
    int result = kill_exactly(d, lease, p, why);
    if (result == 0) {
        w->kills[reason]++;
        char of[48] = "";
        if (lease != NULL)
            snprintf(of, sizeof(of), "lease %llu was ", (unsigned long long)lease->rec.id);
        gs_warn("killed pid %d (user %s, command \"%s\"): %s%s (enforce = kill)", (int)p->pid,
                p->info.user, p->info.command, of, why);
        if (lease != NULL) {
            char end[96];
            snprintf(end, sizeof(end), "killed: %s (pid %d)", why, (int)p->pid);
            gs__lease_set_reason(lease, end);
        }
    } else if (result != GS_ENOENT && result != -ESRCH) {
        gs_error("cannot kill pid %d (user %s): %s", (int)p->pid, p->info.user,
                 gs_strerror(result));
    }
}

static void kill_unmanaged(const gs__daemon_t *d, gs__watchdog_t *w)
{
    for (unsigned i = 0; i < w->procs.n; i++) {
        const gs__nvml_proc_t *p = &w->procs.procs[i];
        if (w->verdicts[i].part >= 0 || w->verdicts[i].unsure || !p->alive)
            continue;
        char why[128], size[32];
        gs_qty_format_human(p->used, size, sizeof(size));
        snprintf(why, sizeof(why), "it held %s on GPU %u outside any lease",
                 p->unknown ? "memory NVML cannot tell (N/A)" : size, d->gpus[p->gpu].index);
        kill_one(d, w, NULL, p, GS__KILL_OUTSIDE_LEASE, why);
    }
}

/* The lease's process on part k that the shim accounts for least (NVML's memory less what its
 * region record says it was charged), among those not yet taken; -1 when none is left. */
static int next_victim(const gs__watchdog_t *w, uint64_t id, int k, const char *taken)
{
    int best = -1;
    uint64_t best_gap = 0;
    for (unsigned i = 0; i < w->procs.n; i++) {
        const gs__verdict_t *v = &w->verdicts[i];
        if (v->lease != id || v->part != k || taken[i] || !w->procs.procs[i].alive)
            continue;
        uint64_t used = w->procs.procs[i].used;
        uint64_t gap = used > v->accounted ? used - v->accounted : 0;
        if (best < 0 || gap > best_gap || (gap == best_gap && used > w->procs.procs[best].used)) {
            best = (int)i;
            best_gap = gap;
        }
    }
    return best;
}

/* Kills the lease's least accounted processes on part k until what stays fits. */
static void kill_over(const gs__daemon_t *d, gs__watchdog_t *w, gs__lease_t *lease,
                      const lease_real_t *row, unsigned k, char *taken)
{
    uint64_t keep = row->real[k];
    uint64_t bound = part_limit(lease, k) + d->cfg.watch_tolerance;
    char why[160], limit[32];
    gs_qty_format_human(part_limit(lease, k), limit, sizeof(limit));
    snprintf(why, sizeof(why), "over its %s limit on GPU %u", limit,
             d->gpus[lease->alloc.part[k].gpu].index);
    for (int v; keep > bound && (v = next_victim(w, row->id, (int)k, taken)) >= 0;) {
        taken[v] = 1;
        keep -= w->procs.procs[v].used < keep ? w->procs.procs[v].used : keep;
        kill_one(d, w, lease, &w->procs.procs[v], GS__KILL_OVER_LIMIT, why);
    }
}

static void enforce(const gs__daemon_t *d, gs__watchdog_t *w)
{
    kill_unmanaged(d, w);
    char *taken = calloc(w->procs.n + 1, 1);
    unsigned r = 0;
    for (gs__lease_t *l = d->leases; taken != NULL && l != NULL && r < w->n_leases;
         l = l->next, r++) {
        for (unsigned k = 0; k < l->alloc.n; k++) {
            if (w->leases[r].over[k] != 0)
                kill_over(d, w, l, &w->leases[r], k, taken);
        }
    }
    free(taken);
}

/* ---- unsure processes ---- */

static int by_pid_start(const void *a, const void *b)
{
    const unsure_t *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Scans that read every region of one user once, whoever else's budget ran out: a user's leases
 * hold at most max_leases_per_user regions, each read up to its first
 * GS__ATTRIBUTE_RECORDS_PER_REGION records. */
static unsigned rotation_scans(const gs__daemon_t *d)
{
    uint64_t records = (uint64_t)d->cfg.max_leases_per_user * GS__ATTRIBUTE_RECORDS_PER_REGION;
    return (unsigned)((records + GS__ATTRIBUTE_RECORDS_PER_USER - 1) /
                      GS__ATTRIBUTE_RECORDS_PER_USER) +
           1;
}

/* A process its user's regions left unsure at every scan for a whole rotation (each of them read
 * meanwhile: one that lists it resolves it, and the count starts again) is claimed by none: it is
 * judged as a process of no lease. Forged records thus delay the watchdog, never disarm it. */
static void settle_unsure(const gs__daemon_t *d, gs__watchdog_t *w)
{
    unsure_t *next = calloc(w->procs.n + 1, sizeof(*next));
    unsigned n = 0, bound = rotation_scans(d);
    for (unsigned i = 0; next != NULL && i < w->procs.n; i++) {
        if (!w->verdicts[i].unsure)
            continue;
        unsure_t key = {.pid = w->procs.procs[i].pid, .start = w->procs.procs[i].info.start};
        const unsure_t *old = w->n_unsure > 0
                                  ? bsearch(&key, w->unsure, w->n_unsure, sizeof(key), by_pid_start)
                                  : NULL;
        key.scans = old != NULL ? old->scans + 1 : 1;
        if (key.scans > bound)
            w->verdicts[i].unsure = 0;
        next[n++] = key; /* (a process on two GPUs has two entries, alike) */
    }
    if (next != NULL)
        qsort(next, n, sizeof(*next), by_pid_start);
    free(w->unsure);
    w->unsure = next;
    w->n_unsure = next != NULL ? n : 0;
}

/* ---- the scan ---- */

static int ensure_verdicts(gs__watchdog_t *w)
{
    if (w->procs.n <= w->verdicts_cap)
        return 0;
    gs__verdict_t *grown = realloc(w->verdicts, w->procs.n * sizeof(*grown));
    if (grown == NULL)
        return GS_ENOMEM;
    w->verdicts = grown;
    w->verdicts_cap = w->procs.n;
    return 0;
}

void gs__watchdog_scan(gs__daemon_t *d)
{
    gs__watchdog_t *w = d->watchdog;
    if (w == NULL || gs__nvml_procs_collect(d->inv, d->n_gpus, &w->procs) != 0 ||
        ensure_verdicts(w) != 0)
        return;
    if (gs__attribute(d, &w->procs, w->verdicts, &w->cursor) == 0)
        settle_unsure(d, w); /* (out of memory, every process is unsure: none is judged) */
    if (measure_leases(d, w) != 0)
        return;
    update_outside(d, w);
    report_unmanaged(d, w);
    report_leases(d, w);
    if (d->cfg.enforce == GS__ENFORCE_KILL)
        enforce(d, w);
    w->scans++;
}

/* ---- views ---- */

int gs__watchdog_lease_real(const gs__daemon_t *d, const gs__lease_t *lease, unsigned part,
                            uint64_t *real, uint64_t *over)
{
    const gs__watchdog_t *w = d->watchdog;
    const lease_real_t *row = w != NULL ? find_real(w->leases, w->n_leases, lease->rec.id) : NULL;
    if (row == NULL || part >= GS_MAX_DEVICES)
        return GS_ENOENT;
    *real = row->real[part];
    *over = row->over[part];
    return 0;
}

json_t *gs__watchdog_unmanaged_view(const gs__daemon_t *d, unsigned g, uid_t viewer,
                                    unsigned *others_n, uint64_t *others_bytes)
{
    const gs__watchdog_t *w = d->watchdog;
    json_t *rows = json_array();
    *others_n = 0;
    *others_bytes = 0;
    for (unsigned i = 0; w != NULL && i < w->procs.n; i++) {
        const gs__nvml_proc_t *p = &w->procs.procs[i];
        if (p->gpu != g || w->verdicts[i].part >= 0)
            continue;
        if (viewer != 0 && (!p->alive || p->info.uid != viewer)) {
            (*others_n)++;
            *others_bytes += p->used;
            continue;
        }
        /* A memory NVML cannot tell is shown as unknown (null), never as 0. */
        json_array_append_new(
            rows,
            json_pack("{s:I, s:s, s:I, s:s, s:o, s:I}", "pid", (json_int_t)p->pid, "user",
                      p->info.user, "uid", (json_int_t)p->info.uid, "command", p->info.command,
                      "memory_used", p->unknown ? json_null() : json_integer((json_int_t)p->used),
                      "lease", (json_int_t)w->verdicts[i].lease));
    }
    return rows;
}

/* ---- figures (serve/metrics.c renders them) ---- */

void gs__watchdog_unmanaged(const gs__daemon_t *d, unsigned g, unsigned *n, uint64_t *bytes)
{
    const gs__watchdog_t *w = d->watchdog;
    *n = 0;
    *bytes = 0;
    for (unsigned i = 0; w != NULL && i < w->procs.n; i++) {
        if (w->procs.procs[i].gpu == g && w->verdicts[i].part < 0) {
            (*n)++;
            *bytes += w->procs.procs[i].used;
        }
    }
}

uint64_t gs__watchdog_kills(const gs__daemon_t *d, gs__kill_reason_t reason)
{
    return d->watchdog != NULL && reason < GS__KILL_REASONS ? d->watchdog->kills[reason] : 0;
}

uint64_t gs__watchdog_scans(const gs__daemon_t *d)
{
    return d->watchdog != NULL ? d->watchdog->scans : 0;
}
