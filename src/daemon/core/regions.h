/* SPDX-License-Identifier: Apache-2.0 */
/* Lease regions of gpushared: sealed memfds the daemon makes (nobody can shrink or grow them),
 * handed to the lease's processes by the join request, kept in a pool of idle ones for the same
 * user's next lease, and found again after a restart in the processes that hold them. No region
 * is a file: nothing under any directory can be removed, replaced or filled by a user. */
#ifndef GS_DAEMON_REGIONS_H
#define GS_DAEMON_REGIONS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "gpushare/region.h"

/* Creates state_dir (0755) with missing parents (0755) and sets its mode. Returns 0 or -errno
 * with one line in err. */
int gs__regions_init(const gs__config_t *cfg, char *err, size_t errlen);

/* Writes how the lease's processes find lease id's region (GPUSHARE_REGION):
 * "gpushared:ID:SOCKET" with the daemon's socket. */
void gs__regions_spec(const char *socket, uint64_t id, char *buf, size_t len);

/* Nonzero when a region spec read from the ledger is lease id's ("gpushared:ID:..."): anything
 * else (a path of an older version, a row someone edited) is refused. */
int gs__regions_spec_is(const char *spec, uint64_t id);

/* The inode of a region's memfd (0 when it cannot be read): what identifies it after a restart.
 * Unlike anything written in the region, no process of the lease can change it. */
uint64_t gs__regions_ino(const gs_region_t *region);

/* The daemon's own identity, read once at start. */
typedef struct gs__regions_owner {
    uid_t uid;
    gid_t gid;
} gs__regions_owner_t;

/* Returns the daemon's effective uid and gid. */
gs__regions_owner_t gs__regions_self(void);

/* Regions of ended leases, kept for the next lease of the same user: reusing one costs no
 * system call and no allocation. A region goes only to the user who owned it, and only when no
 * process maps it any more. One unused for GS__REGION_POOL_IDLE_MS is closed (the reaper's
 * gs__regions_pool_trim): an idle daemon holds no region it does not need. */
#define GS__REGION_POOL_MAX     32
#define GS__REGION_POOL_IDLE_MS 60000

typedef struct gs__region_pool {
    unsigned n;
    struct {
        gs_region_t *region;
        uid_t uid;
        gid_t gid;
        int64_t since_ms; /* gs__now_ms() when it was given back */
    } idle[GS__REGION_POOL_MAX];
} gs__region_pool_t;

/* Gives a lease of uid:gid a region with rcfg: an idle one of that user, recycled, or a new
 * sealed one. Returns 0 and *out, or -errno with one line in err. */
int gs__regions_take(gs__region_pool_t *pool, const gs_region_config_t *rcfg, uid_t uid, gid_t gid,
                     gs_region_t **out, char *err, size_t errlen);

/* Takes back the region (may be NULL) of an ended lease of uid:gid: kept idle when the pool has
 * room and no process maps it, else closed. */
void gs__regions_give_back(gs__region_pool_t *pool, gs_region_t *region, uid_t uid, gid_t gid);

/* Closes the idle regions given back GS__REGION_POOL_IDLE_MS or more before now_ms (gs__now_ms()).
 * Returns how many it closed. */
unsigned gs__regions_pool_trim(gs__region_pool_t *pool, int64_t now_ms);

/* Closes every idle region (at shutdown). */
void gs__regions_pool_clear(gs__region_pool_t *pool);

#endif
