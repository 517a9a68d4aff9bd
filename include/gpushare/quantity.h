/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing of the quantities users write: memory sizes, GPU fractions, percentages, device lists. */
#ifndef GPUSHARE_QUANTITY_H
#define GPUSHARE_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* The largest number of GPUs (or MIG devices) per node that gpushare accounts for. */
#define GS_MAX_DEVICES 16

/* Room for the error message of any parser below. */
#define GS_QTY_ERR_MAX 192

/* Flag: zero is a valid value (otherwise it is an error). */
#define GS_QTY_ALLOW_ZERO 1u

/* Flag: a size other than 0 needs a unit ("4" is refused with the hint "add a unit: 4G or
 * 4096M"); what
 * people type (the CLI, Slurm options) is parsed with it, what programs write (the environment,
 * the protocol) without it. */
#define GS_QTY_REQUIRE_UNIT 2u

/* One MiB: sizes written with decimals are rounded down to a multiple of it. */
#define GS_QTY_MIB (UINT64_C(1) << 20)

/* A memory amount per device: either one value for all devices, explicit values for some, or
 * both ("4G" sets all; "0=4G,1=2G" sets devices 0 and 1 only). */
typedef struct gs_device_bytes {
    int has_all; /* nonzero when all_devices applies to devices without an entry */
    uint64_t all_devices;
    uint32_t present; /* bit d set when per_device[d] was given */
    uint64_t per_device[GS_MAX_DEVICES];
} gs_device_bytes_t;

/* Parses a byte count: digits with an optional decimal part and an optional binary unit
 * K, M, G, T, P, E (case-insensitive), optionally followed by "i", "iB" or "B":
 * "4096", "512M", "1.5G", "4Gi", "4GiB". A whole number is exact; a number with decimals is
 * rounded down to whole MiB ("1.1G" is 1126 MiB, "1.2M" 1 MiB; below 1 MiB it is an error), as
 * GPU memory is counted. The result must fit in 64 bits. flags: GS_QTY_ALLOW_ZERO,
 * GS_QTY_REQUIRE_UNIT. Returns 0 and sets *bytes, or GS_EINVAL/GS_ERANGE with a message quoting
 * the input in err (when err is not NULL; "missing value" for empty text); *bytes is untouched
 * on error. Thread-safe. */
int gs_qty_parse_bytes(const char *text, unsigned flags, uint64_t *bytes, char *err, size_t errlen);

/* Parses a GPU fraction 0 < F <= 1 ("0.25", "1", ".5") or a percentage 0 < P <= 100 ("25%",
 * "12.5%") into thousandths (250, 1000, 500, 125). At most three significant decimals of a GPU
 * ("0.3333" and "33.33%" are errors: gpushare allocates in 0.001 GPU). Returns 0, or
 * GS_EINVAL/GS_ERANGE with a message in err. Thread-safe. */
int gs_qty_parse_fraction(const char *text, uint32_t *milli, char *err, size_t errlen);

/* Parses a whole percentage 1..100 ("30" or "30%"); 0 is accepted with GS_QTY_ALLOW_ZERO.
 * Returns 0, or GS_EINVAL/GS_ERANGE with a message in err. Thread-safe. */
int gs_qty_parse_percent(const char *text, unsigned flags, uint32_t *percent, char *err,
                         size_t errlen);

/* Parses a per-device memory amount: one size for all devices ("4G"), or a comma-separated list
 * "0=4G,1=2G" of device index (0..GS_MAX_DEVICES-1, each at most once) and size. Sizes follow
 * gs_qty_parse_bytes with flags. Returns 0 and fills *out, or GS_EINVAL/GS_ERANGE with a message
 * in err (*out untouched). Thread-safe. */
int gs_qty_parse_device_bytes(const char *text, unsigned flags, gs_device_bytes_t *out, char *err,
                              size_t errlen);

/* Returns the limit for device dev from a parsed per-device amount, or 0 when none applies. */
uint64_t gs_device_bytes_get(const gs_device_bytes_t *amounts, unsigned dev);

/* Writes bytes in the largest binary unit that keeps it exact when possible ("4G", "1536M",
 * "4097"), as gs_qty_parse_bytes reads it back. Returns the length written, or GS_ENOSPC when
 * buf (at least 24 bytes always suffice) is too small. */
int gs_qty_format_bytes(uint64_t bytes, char *buf, size_t len);

/* Writes bytes for people: "4.00 GiB", "512 MiB", "1023 B". Same return convention. */
int gs_qty_format_human(uint64_t bytes, char *buf, size_t len);

#endif
