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

#endif
