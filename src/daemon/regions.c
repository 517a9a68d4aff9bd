/* The lease regions' directory: creation, ownership and removal of region files. */
#include "regions.h"

#include "gpushare/error.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int make_dir(const char *path, mode_t mode, char *err, size_t errlen)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST) {
        int result = -errno;
        snprintf(err, errlen, "cannot create %s: %s", path, gs_strerror(result));
        return result;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory", path);
        return GS_EINVAL;
    }
    if ((st.st_mode & 07777) != mode && chmod(path, mode) != 0) {
        int result = -errno;
        snprintf(err, errlen, "cannot set the mode of %s: %s", path, gs_strerror(result));
        return result;
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

void gs__regions_dir(const gs__config_t *cfg, char *buf, size_t len)
{
    if (cfg->region_dir[0] != '\0')
        snprintf(buf, len, "%s", cfg->region_dir);
    else
        snprintf(buf, len, "%s/regions", cfg->state_dir);
}

int gs__regions_init(const gs__config_t *cfg, char *err, size_t errlen)
{
    char path[GS__PATH_MAX + 16];
    make_parents(cfg->state_dir);
    int result = make_dir(cfg->state_dir, 0755, err, errlen);
    if (result != 0)
        return result;
    gs__regions_dir(cfg, path, sizeof(path));
    make_parents(path);
    return make_dir(path, 0711, err, errlen);
}

void gs__regions_path(const gs__config_t *cfg, uint64_t id, char *buf, size_t len)
{
    char dir[GS__PATH_MAX + 16];
    gs__regions_dir(cfg, dir, sizeof(dir));
    snprintf(buf, len, "%s/%llu", dir, (unsigned long long)id);
}

gs__regions_owner_t gs__regions_self(void)
{
    gs__regions_owner_t self = {.uid = geteuid(), .gid = getegid()};
    return self;
}

int gs__regions_create(const char *path, const gs_region_config_t *rcfg, uid_t uid, gid_t gid,
                       gs__regions_owner_t self, gs_region_t **out, char *err, size_t errlen)
{
    if (uid != self.uid && self.uid != 0) {
        snprintf(err, errlen,
                 "gpushared runs as uid %u and cannot give a region to uid %u (run it as root)",
                 (unsigned)self.uid, (unsigned)uid);
        return GS_EPERM;
    }
    gs_region_t *region = NULL;
    int result = gs_region_create(path, rcfg, 0600, &region);
    if (result == GS_EEXIST) {
        unlink(path); /* a stale file of a lease whose grant never reached the ledger */
        result = gs_region_create(path, rcfg, 0600, &region);
    }
    if (result != 0) {
        snprintf(err, errlen, "cannot create the lease region %s: %s", path, gs_strerror(result));
        return result;
    }
    if (self.uid == 0 && (uid != self.uid || gid != self.gid) && chown(path, uid, gid) != 0) {
        result = -errno;
        snprintf(err, errlen, "cannot give the lease region %s to uid %u: %s", path, (unsigned)uid,
                 gs_strerror(result));
        gs__regions_remove(path, region);
        return result;
    }
    *out = region;
    return 0;
}

void gs__regions_remove(const char *path, gs_region_t *region)
{
    gs_region_close(region);
    if (path[0] != '\0')
        unlink(path);
}

int gs__regions_take(gs__region_pool_t *pool, const gs__config_t *cfg, uint64_t id,
                     const gs_region_config_t *rcfg, uid_t uid, gid_t gid, gs__regions_owner_t self,
                     char *path, size_t pathlen, gs_region_t **out, char *err, size_t errlen)
{
    for (unsigned i = 0; i < pool->n;) {
        if (pool->idle[i].uid != uid || pool->idle[i].gid != gid) {
            i++;
            continue;
        }
        gs_region_t *region = pool->idle[i].region;
        snprintf(path, pathlen, "%s", pool->idle[i].path);
        pool->idle[i] = pool->idle[--pool->n];
        if (gs_region_recycle(region, rcfg) == 0) {
            *out = region;
            return 0;
        }
        gs__regions_remove(path, region); /* something still holds it: never reuse it */
    }
    gs__regions_path(cfg, id, path, pathlen);
    return gs__regions_create(path, rcfg, uid, gid, self, out, err, errlen);
}

void gs__regions_give_back(gs__region_pool_t *pool, const char *path, gs_region_t *region,
                           uid_t uid, gid_t gid)
{
    if (region == NULL || pool->n == GS__REGION_POOL_MAX || gs_region_attached(region) != 0 ||
        strlen(path) >= sizeof(pool->idle[0].path)) {
        gs__regions_remove(path, region);
        return;
    }
    snprintf(pool->idle[pool->n].path, sizeof(pool->idle[0].path), "%s", path);
    pool->idle[pool->n].region = region;
    pool->idle[pool->n].uid = uid;
    pool->idle[pool->n].gid = gid;
    pool->n++;
}

void gs__regions_pool_clear(gs__region_pool_t *pool)
{
    while (pool->n > 0) {
        pool->n--;
        gs__regions_remove(pool->idle[pool->n].path, pool->idle[pool->n].region);
    }
}

int gs__regions_sweep(const gs__config_t *cfg, int (*in_use)(void *arg, const char *path),
                      void *arg)
{
    char dir[GS__PATH_MAX + 16], path[2 * GS__PATH_MAX + 32];
    gs__regions_dir(cfg, dir, sizeof(dir));
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int removed = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
        if (!in_use(arg, path) && unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
