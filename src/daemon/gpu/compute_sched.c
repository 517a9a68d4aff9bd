/* SPDX-License-Identifier: Apache-2.0 */
/* The GPUs' compute schedulers: one scheduler region per GPU, made at start (see compute_sched.h).
 */
#include "compute_sched.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/sched.h"

void gs__compute_sched_dir(const gs__daemon_t *d, char *buf, size_t len)
{
    snprintf(buf, len, "%s/sched", d->cfg.state_dir);
}

/* Opens GPU g's scheduler, making a new one when it is missing or not valid. */
static int open_one(gs__daemon_t *d, unsigned g, const char *dir, char *err, size_t errlen)
{
    char path[GS__PATH_MAX + 96];
    int result = gs_sched_path(dir, d->gpus[g].uuid, path, sizeof(path));
    if (result == 0) {
        result = gs_sched_open(path, &d->sched[g]);
        if (result == GS_EVERSION || result == GS_ENOENT) {
            unlink(path); /* left by another version, or garbage: jobs of this daemon use a new */
            result = gs_sched_create(path, 0644, &d->sched[g]);
        }
    }
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot make the compute scheduler of GPU %s in %s: %s",
                       d->gpus[g].uuid, dir, gs_strerror(result));
    return 0;
}

int gs__compute_sched_open(gs__daemon_t *d, char *err, size_t errlen)
{
    char dir[GS__PATH_MAX + 16];
    gs__compute_sched_dir(d, dir, sizeof(dir));
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        int result = -errno;
        return gs_fail(err, errlen, result, "cannot create %s: %s", dir, gs_strerror(result));
    }
    chmod(dir, 0755);
    for (unsigned g = 0; g < d->n_gpus; g++) {
        int result = open_one(d, g, dir, err, errlen);
        if (result != 0)
            return result;
    }
    return 0;
}

void gs__compute_sched_close(gs__daemon_t *d)
{
    for (unsigned g = 0; g < GS_MAX_DEVICES; g++) {
        gs_sched_close(d->sched[g]);
        d->sched[g] = NULL;
    }
}

uint64_t gs__compute_sched_lease_used(const gs__daemon_t *d, const gs__lease_t *lease,
                                      unsigned part)
{
    if (part >= lease->alloc.n || lease->alloc.part[part].gpu >= GS_MAX_DEVICES)
        return 0;
    gs_sched_t *s = d->sched[lease->alloc.part[part].gpu];
    gs_sched_lease_info_t info[GS_SCHED_MAX_LEASES];
    char key[GS_SCHED_KEY_MAX];
    /* The key the shim gives the lease's processes (compute.c): their uid and the lease id. */
    snprintf(key, sizeof(key), "u%u/lease/%llu", (unsigned)lease->rec.uid,
             (unsigned long long)lease->rec.id);
    int n = s != NULL ? gs_sched_leases(s, info, GS_SCHED_MAX_LEASES) : 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(info[i].key, key) == 0)
            return info[i].used_ns;
    }
    return 0;
}
