/* The lease regions' directory: region_dir (default state_dir/regions)/<lease id>, each file
 * owned by the lease's user with mode 0600 (the directory is 0711: users reach their own region
 * by name but cannot list the others). Regions never outlive a reboot (no process does), so
 * region_dir may be on tmpfs (/run/gpushare/regions), which spares the disk a file per lease. */
#ifndef GS_DAEMON_REGIONS_H
#define GS_DAEMON_REGIONS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "gpushare/region.h"

/* Creates state_dir (0755) and the region directory (0711), with missing parents (0755), and
 * sets their modes. Returns 0 or -errno with one line in err. */
int gs__regions_init(const gs__config_t *cfg, char *err, size_t errlen);

/* Writes the directory of the regions (region_dir, else state_dir/regions) into buf. */
void gs__regions_dir(const gs__config_t *cfg, char *buf, size_t len);

/* Writes the region path of lease id into buf. */
void gs__regions_path(const gs__config_t *cfg, uint64_t id, char *buf, size_t len);

/* The daemon's own identity, read once at start: regions of other users need root. */
typedef struct gs__regions_owner {
    uid_t uid;
    gid_t gid;
} gs__regions_owner_t;

/* Returns the daemon's effective uid and gid. */
gs__regions_owner_t gs__regions_self(void);

/* Creates the region at path (replacing a stale file), owned by uid:gid with mode 0600; self
 * is the daemon (gs__regions_self). Returns 0 and *out, or -errno with one line in err
 * (nothing is left behind). */
int gs__regions_create(const char *path, const gs_region_config_t *rcfg, uid_t uid, gid_t gid,
                       gs__regions_owner_t self, gs_region_t **out, char *err, size_t errlen);

/* Closes the region (may be NULL) and unlinks its file. */
void gs__regions_remove(const char *path, gs_region_t *region);

/* Regions of ended leases, kept (mapped, with their files) for the next lease of the same user:
 * reusing one costs no system call, where making one costs seven. A region goes only to the
 * user who owned it, so a process that kept it open after its lease cannot reach anyone
 * else's. */
#define GS__REGION_POOL_MAX 32

typedef struct gs__region_pool {
    unsigned n;
    struct {
        char path[GS__PATH_MAX + 32];
        gs_region_t *region;
        uid_t uid;
        gid_t gid;
    } idle[GS__REGION_POOL_MAX];
} gs__region_pool_t;

/* Gives lease id a region for uid:gid with rcfg: an idle one of that user, recycled, or a new
 * one (as gs__regions_create, at gs__regions_path of id). Writes its path into path. Returns 0
 * and *out, or -errno with one line in err. */
int gs__regions_take(gs__region_pool_t *pool, const gs__config_t *cfg, uint64_t id,
                     const gs_region_config_t *rcfg, uid_t uid, gid_t gid, gs__regions_owner_t self,
                     char *path, size_t pathlen, gs_region_t **out, char *err, size_t errlen);

/* Takes back the region of an ended lease (owned by uid:gid): kept idle when the pool has room
 * and nobody is attached, else removed. */
void gs__regions_give_back(gs__region_pool_t *pool, const char *path, gs_region_t *region,
                           uid_t uid, gid_t gid);

/* Removes every idle region (at shutdown). */
void gs__regions_pool_clear(gs__region_pool_t *pool);

/* Removes the files of region_dir that are not the region of a lease (left by a daemon that was
 * killed): in_use(arg, path) says which are. Returns how many were removed. */
int gs__regions_sweep(const gs__config_t *cfg, int (*in_use)(void *arg, const char *path),
                      void *arg);

#endif
