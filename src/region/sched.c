/* SPDX-License-Identifier: Apache-2.0 */
/* The compute scheduler's state and membership: a GPU's lease and process tables, the handles
 * of its members, joining and leaving, and the lease table for status (see gpushare/sched.h). */
#include "sched_internal.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_sched_gpu_new(gs_sched_gpu_t **out)
{
    gs_sched_gpu_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return GS_ENOMEM;
    *out = g;
    return 0;
}

void gs_sched_gpu_free(gs_sched_gpu_t *g)
{
    free(g);
}

int gs_sched_open(gs_sched_gpu_t *g, gs_sched_t **out)
{
    gs_sched_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return GS_ENOMEM;
    s->gpu = g;
    if (++g->next_id == 0)
        g->next_id = 1;
    s->id = g->next_id;
    s->self = -1;
    *out = s;
    return 0;
}

void gs_sched_close(gs_sched_t *s)
{
    if (s == NULL)
        return;
    gs_sched_leave(s, s->gpu->slot_start > 0 ? s->gpu->slot_start : 0);
    free(s);
}

void gs__sched_set_state(gs_sched_gpu_t *g, sched_proc_t *p, uint32_t state)
{
    (void)g;
    p->state = state;
}

void gs__sched_free_proc(gs_sched_gpu_t *g, int i)
{
    gs__sched_set_state(g, &g->procs[i], PROC_IDLE);
    g->procs[i].id = 0;
}

/* Marks in used[] the leases that have a member. */
static void leases_in_use(const gs_sched_gpu_t *g, uint8_t used[GS_SCHED_MAX_LEASES])
{
    memset(used, 0, GS_SCHED_MAX_LEASES);
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        if (g->procs[i].id != 0 && g->procs[i].lease < GS_SCHED_MAX_LEASES)
            used[g->procs[i].lease] = 1;
    }
}

/* Finds lease key, or makes it in a free (or no longer used) entry. Returns its index or
 * GS_ENOSPC. */
static int find_lease(gs_sched_gpu_t *g, const char *key, gs_sched_share_t share, int64_t now)
{
    int found = -1, free_entry = -1;
    for (int l = 0; l < GS_SCHED_MAX_LEASES && found < 0; l++) {
        if (strncmp(g->leases[l].key, key, GS_SCHED_KEY_MAX) == 0)
            found = l;
        else if (free_entry < 0 && g->leases[l].key[0] == '\0')
            free_entry = l;
    }
    if (found >= 0) {
        g->leases[found].guarantee = share.guarantee;
        g->leases[found].cap = share.cap;
        return found;
    }
    if (free_entry < 0) {
        uint8_t used[GS_SCHED_MAX_LEASES];
        leases_in_use(g, used);
        for (int l = 0; free_entry < 0 && l < GS_SCHED_MAX_LEASES; l++)
            free_entry = used[l] || (g->holder == (uint32_t)l + 1) ? -1 : l;
    }
    if (free_entry < 0)
        return GS_ENOSPC;
    sched_lease_t *lease = &g->leases[free_entry];
    memset(lease, 0, sizeof(*lease));
    snprintf(lease->key, sizeof(lease->key), "%s", key);
    lease->guarantee = share.guarantee;
    lease->cap = share.cap;
    lease->vtime = gs__sched_vclock(g, now);
    return free_entry;
}

/* Claims a free process record for lease. Returns its index or GS_ENOSPC. */
static int claim_proc(gs_sched_t *s, uint32_t lease)
{
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        sched_proc_t *p = &s->gpu->procs[i];
        if (p->id != 0)
            continue;
        memset(p, 0, sizeof(*p));
        p->lease = lease;
        p->id = s->id;
        return i;
    }
    return GS_ENOSPC;
}

int gs_sched_join(gs_sched_t *s, const char *key, gs_sched_share_t share)
{
    if (key == NULL || *key == '\0' || strlen(key) >= GS_SCHED_KEY_MAX)
        return GS_EINVAL;
    if (s->self >= 0)
        return GS_EBUSY;
    int lease = find_lease(s->gpu, key, share, s->gpu->slot_start);
    int slot = lease >= 0 ? claim_proc(s, (uint32_t)lease) : lease;
    if (slot < 0)
        return slot;
    s->self = slot;
    return 0;
}

void gs_sched_leave(gs_sched_t *s, int64_t now)
{
    if (s->self < 0)
        return;
    gs__sched_leave_slot(s, now);
    gs__sched_free_proc(s->gpu, s->self);
    s->self = -1;
}

int gs_sched_wants(const gs_sched_t *s)
{
    return s->self >= 0 && s->gpu->procs[s->self].state != PROC_IDLE;
}

int gs_sched_leases(const gs_sched_gpu_t *g, gs_sched_lease_info_t *out, int max)
{
    gs_sched_lease_info_t all[GS_SCHED_MAX_LEASES];
    memset(all, 0, sizeof(all));
    for (int i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const sched_proc_t *p = &g->procs[i];
        if (p->id == 0 || p->lease >= GS_SCHED_MAX_LEASES)
            continue;
        all[p->lease].procs++;
        all[p->lease].waiting += p->state != PROC_IDLE;
    }
    int n = 0;
    for (int l = 0; l < GS_SCHED_MAX_LEASES && n < max; l++) {
        const sched_lease_t *lease = &g->leases[l];
        if (all[l].procs == 0)
            continue;
        out[n] = all[l];
        memcpy(out[n].key, lease->key, sizeof(out[n].key));
        out[n].key[GS_SCHED_KEY_MAX - 1] = '\0';
        out[n].share = (gs_sched_share_t){lease->guarantee, lease->cap};
        out[n].used_ns = lease->used_ns;
        n++;
    }
    return n;
}
