/* SPDX-License-Identifier: Apache-2.0 */
/* Test helper: creates a lease region as gpushared does. usage: make_region PATH SIZE LEASE_ID */
#include <stdio.h>
#include <string.h>

#include "gpushare/quantity.h"
#include "gpushare/region.h"

int main(int argc, char **argv)
{
    gs_region_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    char err[GS_QTY_ERR_MAX];
    if (argc != 4 || gs_qty_parse_bytes(argv[2], 0, &cfg.limit[0], err, sizeof(err)) != 0) {
        fprintf(stderr, "usage: make_region PATH SIZE LEASE_ID\n");
        return 2;
    }
    snprintf(cfg.lease_id, sizeof(cfg.lease_id), "%s", argv[3]);
    gs_region_t *region = NULL;
    if (gs_region_create(argv[1], &cfg, 0600, &region) != 0) {
        fprintf(stderr, "make_region: cannot create %s\n", argv[1]);
        return 1;
    }
    gs_region_close(region);
    return 0;
}
