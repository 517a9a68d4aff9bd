/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: a lease region whose bytes come from the input, as a process of the lease
 * may write them. The daemon's reading of it (opening, snapshot, process list, bounded reaping,
 * membership, recycling) and a shim's use of it (attach, reserve, release, detach) must neither
 * crash nor stall, whatever the bytes say.
 *
 * Input: byte 0 chooses what is kept valid (bit 0: the header's magic, version and size; bit 1:
 * the record the attaching process lands in is left as written), byte 1 the device and bytes
 * 2..9 the size of the reservation tried; the rest is written over the region from its start and
 * again over the records around the attaching process's one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpushare/region.h"
#include "region_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One sealed region for every input: its bytes are rewritten each time. */
static gs_region_t *made;

static void overwrite(region_layout_t *map, const uint8_t *data, size_t size, unsigned flags)
{
    memset(map, 0, sizeof(*map));
    memcpy(map, data, size < sizeof(*map) ? size : sizeof(*map));
    unsigned mine = (unsigned)getpid() % GS_REGION_MAX_PROCS;
    size_t rec = size < sizeof(region_proc_t) ? size : sizeof(region_proc_t);
    memcpy(&map->procs[GS_REGION_MAX_PROCS - 1], data, rec);
    if (flags & 2)
        memcpy(&map->procs[mine], data, rec);
    else
        memset(&map->procs[mine], 0, sizeof(map->procs[mine]));
    if (flags & 1) {
        memcpy(map->magic, REGION_MAGIC, sizeof(map->magic));
        map->version = REGION_VERSION;
        map->size = sizeof(region_layout_t);
    }
}

/* What the daemon does with a region of a lease. */
static void as_daemon(gs_region_t *r)
{
    gs_region_stats_t stats;
    gs_region_snapshot(r, &stats);
    gs_region_process_t procs[8];
    gs_region_processes(r, procs, 8);
    (void)gs_region_lease_id(r);
    unsigned cursor = 0, budget = 64;
    gs_region_reap_some(r, &cursor, &budget);
    gs_region_in_use(r);
}

/* What a shim does in it. */
static void as_shim(gs_region_t *r, unsigned dev, uint64_t bytes)
{
    int slot = -1;
    if (gs_region_attach(r, &slot) != 0)
        return;
    if (gs_region_reserve(r, slot, dev, bytes) == 0)
        gs_region_release(r, slot, dev, bytes, 1);
    gs_region_limit(r, dev);
    gs_region_used(r, dev);
    gs_region_detach(r, slot);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (made == NULL) {
        gs_region_config_t cfg;
        memset(&cfg, 0, sizeof(cfg));
        if (gs_region_create_sealed(&cfg, &made) != 0)
            abort();
    }
    if (size < 10)
        return 0;
    unsigned flags = data[0], dev = data[1] % (GS_MAX_DEVICES + 1);
    uint64_t bytes;
    memcpy(&bytes, data + 2, sizeof(bytes));
    region_layout_t *map =
        mmap(NULL, sizeof(*map), PROT_READ | PROT_WRITE, MAP_SHARED, gs_region_fd(made), 0);
    if (map == MAP_FAILED)
        abort();
    overwrite(map, data + 10, size - 10, flags);
    munmap(map, sizeof(*map));

    gs_region_t *daemon = NULL, *member = NULL;
    int fd = dup(gs_region_fd(made));
    if (gs_region_adopt(fd, GS_REGION_SEALED, &daemon) == 0) {
        as_daemon(daemon);
        fd = dup(gs_region_fd(made));
        if (gs_region_adopt(fd, GS_REGION_SEALED | GS_REGION_MEMBER, &member) == 0) {
            as_shim(member, dev, bytes);
            gs_region_close(member);
        }
        gs_region_config_t next;
        memset(&next, 0, sizeof(next));
        gs_region_recycle(daemon, &next);
        gs_region_close(daemon);
    }
    return 0;
}
