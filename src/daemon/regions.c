/* The lease regions' directory: creation, ownership and removal of region files. */
#include "regions.h"

#include "gpushare/error.h"

#include <errno.h>
#include <stdio.h>
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

/* The directory of the regions. */
static void region_dir(const gs__config_t *cfg, char *buf, size_t len)
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
    region_dir(cfg, path, sizeof(path));
    make_parents(path);
    return make_dir(path, 0711, err, errlen);
}

void gs__regions_path(const gs__config_t *cfg, uint64_t id, char *buf, size_t len)
{
    char dir[GS__PATH_MAX + 16];
    region_dir(cfg, dir, sizeof(dir));
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
