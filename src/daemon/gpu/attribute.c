/* SPDX-License-Identifier: Apache-2.0 */
/* Which lease each GPU process belongs to: ancestry (memoized), then the regions of its user's
 * leases under a per-user budget (attribute.h). */
#include "attribute.h"

#include "gpushare/error.h"

#include <stdlib.h>
#include <string.h>

#define MEMO_MAX 65536 /* ancestors remembered in one scan */

/* A lease by its holder process. */
typedef struct holder {
    pid_t pid;
    uint64_t start;
    const gs__lease_t *lease;
} holder_t;

/* An ancestor already walked in this scan: the lease of its nearest holder (NULL: none). */
typedef struct memo {
    pid_t pid; /* 0: a free slot */
    const gs__lease_t *lease;
} memo_t;

/* One user's region records left in this scan. */
typedef struct budget {
    uid_t uid;
    unsigned left;
    int wanted; /* it has processes the ancestry did not place */
    int spent;  /* it ran out */
} budget_t;

typedef struct ix {
    holder_t *holders;
    unsigned n_holders;
    memo_t *memo;
    unsigned memo_cap, memo_n; /* cap: a power of two */
    unsigned *order;           /* indexes of procs, by pid */
    budget_t *budgets;
    unsigned n_budgets;
    uint64_t *placed; /* ids of leases that got a process by ancestry, sorted */
    unsigned n_placed;
} ix_t;

static int by_holder(const void *a, const void *b)
{
    const holder_t *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The leases by holder pid; rows without a start time name no process and are left out, and so
 * are keyed leases (they have no holder: the process that asked is the orchestrator's). */
static int index_holders(const gs__daemon_t *d, ix_t *ix)
{
    ix->holders = calloc(d->n_leases + 1, sizeof(*ix->holders));
    if (ix->holders == NULL)
        return GS_ENOMEM;
    for (const gs__lease_t *l = d->leases; l != NULL && ix->n_holders < d->n_leases; l = l->next) {
        if (!gs__lease_keyed(l) && l->rec.client_pid > 1 && l->rec.client_start != 0)
            ix->holders[ix->n_holders++] =
                (holder_t){.pid = l->rec.client_pid, .start = l->rec.client_start, .lease = l};
    }
    qsort(ix->holders, ix->n_holders, sizeof(*ix->holders), by_holder);
    return 0;
}

static const gs__lease_t *holder_find(const ix_t *ix, pid_t pid, uint64_t start)
{
    holder_t key = {.pid = pid};
    const holder_t *h = bsearch(&key, ix->holders, ix->n_holders, sizeof(key), by_holder);
    if (h == NULL)
        return NULL;
    /* Several leases may share a holder: any of them with the same start time. */
    while (h > ix->holders && (h - 1)->pid == pid)
        h--;
    for (; h < ix->holders + ix->n_holders && h->pid == pid; h++) {
        if (h->start == start)
            return h->lease;
    }
    return NULL;
}

static memo_t *memo_slot(const ix_t *ix, pid_t pid)
{
    if (ix->memo == NULL)
        return NULL;
    unsigned mask = ix->memo_cap - 1;
    for (unsigned k = ((unsigned)pid * 2654435761u) & mask;; k = (k + 1) & mask) {
        if (ix->memo[k].pid == pid || ix->memo[k].pid == 0)
            return &ix->memo[k];
    }
}

static void memo_put(ix_t *ix, pid_t pid, const gs__lease_t *lease)
{
    memo_t *m = memo_slot(ix, pid);
    if (m == NULL || m->pid == pid || ix->memo_n >= ix->memo_cap / 2)
        return;
    m->pid = pid;
    m->lease = lease;
    ix->memo_n++;
}

/* The lease of pid's nearest holder by the parent links (pid itself first), NULL when none;
 * every process walked is remembered for the rest of the scan. */
static const gs__lease_t *nearest_holder(ix_t *ix, pid_t pid)
{
    pid_t path[GS__CHAIN_MAX];
    unsigned n = 0;
    const gs__lease_t *found = NULL;
    for (pid_t cur = pid; cur > 0 && n < GS__CHAIN_MAX;) {
        const memo_t *m = memo_slot(ix, cur);
        if (m != NULL && m->pid == cur) {
            found = m->lease;
            break;
        }
        pid_t ppid = 0;
        uint64_t start = 0;
        if (gs__proc_parent(cur, &ppid, &start) != 0)
            break;
        path[n++] = cur;
        if ((found = holder_find(ix, cur, start)) != NULL || ppid == cur)
            break;
        cur = ppid;
    }
    for (unsigned k = 0; k < n; k++)
        memo_put(ix, path[k], found);
    return found;
}

static budget_t *budget_of(ix_t *ix, uid_t uid, int create)
{
    for (unsigned i = 0; i < ix->n_budgets; i++) {
        if (ix->budgets[i].uid == uid)
            return &ix->budgets[i];
    }
    if (!create)
        return NULL;
    budget_t *grown = realloc(ix->budgets, (ix->n_budgets + 1) * sizeof(*grown));
    if (grown == NULL)
        return NULL;
    ix->budgets = grown;
    budget_t *b = &ix->budgets[ix->n_budgets++];
    *b = (budget_t){.uid = uid, .left = GS__ATTRIBUTE_RECORDS_PER_USER};
    return b;
}

static int part_on(const gs__lease_t *lease, unsigned gpu)
{
    for (unsigned i = 0; i < lease->alloc.n; i++) {
        if (lease->alloc.part[i].gpu == gpu)
            return (int)i;
    }
    return -1;
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The keyed lease whose cgroup pid is in, whatever its user (root or lease_admin_group named
 * the cgroup: a container's processes descend from its runtime, not from a holder), or NULL.
 * Only leases root named a cgroup for cost a read, one of the process's cgroup file each. */
static const gs__lease_t *by_cgroup(const gs__daemon_t *d, pid_t pid)
{
    for (const gs__lease_t *l = d->leases; l != NULL; l = l->next) {
        if (gs__lease_keyed(l) && l->rec.request.cgroup[0] != '\0' &&
            gs__proc_in_cgroup(pid, l->rec.request.cgroup))
            return l;
    }
    return NULL;
}

/* First pass: each live process by its cgroup, then by ancestry; who is left for the regions. */
static int place_by_ancestry(const gs__daemon_t *d, const gs__nvml_procs_t *procs, ix_t *ix,
                             gs__verdict_t *v)
{
    ix->placed = calloc(procs->n + 1, sizeof(*ix->placed));
    if (ix->placed == NULL)
        return GS_ENOMEM;
    for (unsigned i = 0; i < procs->n; i++) {
        const gs__nvml_proc_t *p = &procs->procs[i];
        v[i] = (gs__verdict_t){.part = -1};
        if (!p->alive)
            continue;
        const gs__lease_t *l = by_cgroup(d, p->pid);
        if (l == NULL && (l = nearest_holder(ix, p->pid)) != NULL &&
            (uid_t)l->rec.uid != p->info.uid)
            l = NULL;
        if (l != NULL) {
            v[i].lease = l->rec.id;
            v[i].part = part_on(l, p->gpu);
            ix->placed[ix->n_placed++] = l->rec.id;
        } else if (budget_of(ix, p->info.uid, 1) != NULL) {
            budget_of(ix, p->info.uid, 0)->wanted = 1;
        } else {
            return GS_ENOMEM;
        }
    }
    qsort(ix->placed, ix->n_placed, sizeof(*ix->placed), by_id);
    return 0;
}

static const gs__nvml_procs_t *sort_procs; /* qsort has no argument: the scan is one thread's */

static int by_proc_pid(const void *a, const void *b)
{
    pid_t x = sort_procs->procs[*(const unsigned *)a].pid;
    pid_t y = sort_procs->procs[*(const unsigned *)b].pid;
    return (x > y) - (x < y);
}

/* The first index into ix->order of a process with pid, or ix's count when none. */
static unsigned first_with(const gs__nvml_procs_t *procs, const ix_t *ix, pid_t pid)
{
    unsigned lo = 0, hi = procs->n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (procs->procs[ix->order[mid]].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Applies one region record of lease l to the processes with its pid. */
static void apply_record(const gs__nvml_procs_t *procs, const ix_t *ix, const gs__lease_t *l,
                         const gs_region_process_t *rec, gs__verdict_t *v)
{
    for (unsigned k = first_with(procs, ix, rec->pid);
         k < procs->n && procs->procs[ix->order[k]].pid == rec->pid; k++) {
        unsigned i = ix->order[k];
        const gs__nvml_proc_t *p = &procs->procs[i];
        if (!p->alive || p->info.uid != (uid_t)l->rec.uid ||
            (rec->start_time != 0 && rec->start_time != p->info.start))
            continue;
        if (v[i].lease == 0) {
            v[i].lease = l->rec.id;
            v[i].part = part_on(l, p->gpu);
        }
        if (v[i].lease == l->rec.id && v[i].part >= 0 && v[i].part < GS_MAX_DEVICES)
            v[i].accounted = rec->used[v[i].part];
    }
}

/* Reads lease l's region under its user's budget. Returns 0, or 1 when the budget ran out. */
static int read_region(const gs__nvml_procs_t *procs, ix_t *ix, const gs__lease_t *l,
                       gs__verdict_t *v)
{
    static gs_region_process_t recs[GS__ATTRIBUTE_RECORDS_PER_REGION];
    uint64_t id = l->rec.id;
    budget_t *b = budget_of(ix, (uid_t)l->rec.uid, 0);
    int placed = bsearch(&id, ix->placed, ix->n_placed, sizeof(id), by_id) != NULL;
    if ((b == NULL || !b->wanted) && !placed)
        return 0;
    if (l->region == NULL || gs_region_attached(l->region) == 0)
        return 0;
    if (b == NULL && (b = budget_of(ix, (uid_t)l->rec.uid, 1)) == NULL)
        return 0;
    if (b->left == 0) {
        b->spent = 1;
        return 1;
    }
    int max = b->left < GS__ATTRIBUTE_RECORDS_PER_REGION ? (int)b->left
                                                         : GS__ATTRIBUTE_RECORDS_PER_REGION;
    int n = gs_region_processes(l->region, recs, max);
    b->left -= n > 0 ? (unsigned)n : 0;
    for (int r = 0; r < n; r++)
        apply_record(procs, ix, l, &recs[r], v);
    return 0;
}

/* Second pass: the regions, from the lease after *cursor on, round the list once. */
static void place_by_regions(const gs__daemon_t *d, const gs__nvml_procs_t *procs, ix_t *ix,
                             gs__verdict_t *v, uint64_t *cursor)
{
    const gs__lease_t *start = d->leases;
    for (const gs__lease_t *l = d->leases; *cursor != 0 && l != NULL; l = l->next) {
        if (l->rec.id == *cursor)
            start = l;
    }
    uint64_t stopped = 0;
    const gs__lease_t *l = start;
    for (unsigned seen = 0; l != NULL && seen < d->n_leases; seen++) {
        if (read_region(procs, ix, l, v) != 0 && stopped == 0)
            stopped = l->rec.id;
        l = l->next != NULL ? l->next : d->leases;
    }
    *cursor = stopped;
    for (unsigned i = 0; i < procs->n; i++) {
        const budget_t *b = budget_of(ix, procs->procs[i].info.uid, 0);
        if (procs->procs[i].alive && v[i].lease == 0 && b != NULL && b->spent)
            v[i].unsure = 1;
    }
}

static void ix_free(ix_t *ix)
{
    free(ix->holders);
    free(ix->memo);
    free(ix->order);
    free(ix->budgets);
    free(ix->placed);
}

int gs__attribute(const gs__daemon_t *d, const gs__nvml_procs_t *procs, gs__verdict_t *verdicts,
                  uint64_t *cursor)
{
    ix_t ix = {0};
    ix.memo_cap = 1024;
    while (ix.memo_cap < 4 * (procs->n + 64) && ix.memo_cap < 2 * MEMO_MAX)
        ix.memo_cap *= 2;
    ix.memo = calloc(ix.memo_cap, sizeof(*ix.memo));
    ix.order = calloc(procs->n + 1, sizeof(*ix.order));
    int result = ix.memo != NULL && ix.order != NULL ? index_holders(d, &ix) : GS_ENOMEM;
    if (result == 0)
        result = place_by_ancestry(d, procs, &ix, verdicts);
    if (result == 0) {
        for (unsigned i = 0; i < procs->n; i++)
            ix.order[i] = i;
        sort_procs = procs;
        qsort(ix.order, procs->n, sizeof(*ix.order), by_proc_pid);
        place_by_regions(d, procs, &ix, verdicts, cursor);
    }
    for (unsigned i = 0; result != 0 && i < procs->n; i++)
        verdicts[i] = (gs__verdict_t){.part = -1, .unsure = 1};
    ix_free(&ix);
    return result;
}

const gs__lease_t *gs__attribute_by_ancestry(const gs__daemon_t *d, pid_t pid)
{
    ix_t ix = {0};
    gs__proc_info_t info;
    if (gs__proc_read(pid, &info) != 0 || index_holders(d, &ix) != 0) {
        ix_free(&ix);
        return NULL;
    }
    const gs__lease_t *l = by_cgroup(d, pid);
    if (l == NULL && (l = nearest_holder(&ix, pid)) != NULL && (uid_t)l->rec.uid != info.uid)
        l = NULL;
    ix_free(&ix);
    return l;
}
