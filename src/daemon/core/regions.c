/* SPDX-License-Identifier: Apache-2.0 */
/* Lease regions: sealed memfds, their join spec, the pool of idle ones, the state directory. */
#include "regions.h"

#include "clock.h"

#include "gpushare/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int make_dir(const char *path, mode_t mode, char *err, size_t errlen)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST) {
        int result = -errno;
        return gs_fail(err, errlen, result, "cannot create %s: %s", path, gs_strerror(result));
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return gs_fail(err, errlen, GS_EINVAL, "%s is not a directory", path);
    if ((st.st_mode & 07777) != mode && chmod(path, mode) != 0) {
        int result = -errno;
        return gs_fail(err, errlen, result, "cannot set the mode of %s: %s", path,
                       gs_strerror(result));
    }
    return 0;
}

/* Creates the parents of path that are missing (mode 0755), like mkdir -p. */
static void make_parents(const char *path)
{
    char dir[GS__PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s", path);
    for (char *p = dir + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
}

int gs__regions_init(const gs__config_t *cfg, char *err, size_t errlen)
{
    make_parents(cfg->state_dir);
    return make_dir(cfg->state_dir, 0755, err, errlen);
}

void gs__regions_spec(const char *socket, uint64_t id, char *buf, size_t len)
{
    snprintf(buf, len, "gpushared:%" PRIu64 ":%s", id, socket);
}

int gs__regions_spec_is(const char *spec, uint64_t id)
{
    char prefix[48];
    int n = snprintf(prefix, sizeof(prefix), "gpushared:%" PRIu64 ":", id);
    return strncmp(spec, prefix, (size_t)n) == 0 && spec[n] == '/';
}

uint64_t gs__regions_ino(const gs_region_t *region)
{
    struct stat st;
    if (region == NULL || gs_region_fd(region) < 0 || fstat(gs_region_fd(region), &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}

gs__regions_owner_t gs__regions_self(void)
{
    gs__regions_owner_t self = {.uid = geteuid(), .gid = getegid()};
    return self;
}

int gs__regions_take(gs__region_pool_t *pool, const gs_region_config_t *rcfg, uid_t uid, gid_t gid,
                     gs_region_t **out, char *err, size_t errlen)
{
    for (unsigned i = 0; i < pool->n;) {
        if (pool->idle[i].uid != uid || pool->idle[i].gid != gid) {
            i++;
            continue;
        }
        gs_region_t *region = pool->idle[i].region;
        pool->idle[i] = pool->idle[--pool->n];
        if (gs_region_recycle(region, rcfg) == 0) {
            *out = region;
            return 0;
        }
        gs_region_close(region); /* something maps it again: never reuse it */
    }
    int result = gs_region_create_sealed(rcfg, out);
    if (result != 0)
        return gs_fail(err, errlen, result, "cannot create the lease's region: %s",
                       gs_strerror(result));
    return 0;
}

void gs__regions_give_back(gs__region_pool_t *pool, gs_region_t *region, uid_t uid, gid_t gid)
{
    if (region == NULL)
        return;
    if (pool->n == GS__REGION_POOL_MAX || gs_region_in_use(region) != 0) {
        gs_region_close(region);
        return;
    }
    pool->idle[pool->n].region = region;
    pool->idle[pool->n].uid = uid;
    pool->idle[pool->n].gid = gid;
    pool->idle[pool->n].since_ms = gs__now_ms();
    pool->n++;
}

unsigned gs__regions_pool_trim(gs__region_pool_t *pool, int64_t now_ms)
{
    unsigned closed = 0;
    for (unsigned i = 0; i < pool->n;) {
        if (now_ms - pool->idle[i].since_ms < GS__REGION_POOL_IDLE_MS) {
            i++;
            continue;
        }
        gs_region_close(pool->idle[i].region);
        pool->idle[i] = pool->idle[--pool->n];
        closed++;
    }
    return closed;
}

void gs__regions_pool_clear(gs__region_pool_t *pool)
{
    while (pool->n > 0) {
        pool->n--;
        gs_region_close(pool->idle[pool->n].region);
    }
}
