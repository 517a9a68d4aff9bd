/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: every quantity parser on arbitrary bytes; results must be self-consistent. */
#include "gpushare/quantity.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[GS_QTY_ERR_MAX];
    uint64_t bytes;
    if (gs_qty_parse_bytes(text, GS_QTY_ALLOW_ZERO, &bytes, err, sizeof(err)) == 0) {
        /* A parsed size must format and parse back to the same value. */
        char buf[32];
        uint64_t again;
        if (gs_qty_format_bytes(bytes, buf, sizeof(buf)) < 0 ||
            gs_qty_parse_bytes(buf, GS_QTY_ALLOW_ZERO, &again, err, sizeof(err)) != 0 ||
            again != bytes)
            abort();
        gs_qty_format_human(bytes, buf, sizeof(buf));
        /* Decimals round down to whole MiB; a unit is never needed for a value that parsed with
         * one. */
        if (strchr(text, '.') != NULL && bytes % GS_QTY_MIB != 0)
            abort();
        uint64_t with_unit;
        int need = gs_qty_parse_bytes(text, GS_QTY_ALLOW_ZERO | GS_QTY_REQUIRE_UNIT, &with_unit,
                                      err, sizeof(err));
        if (need == 0 && with_unit != bytes)
            abort();
    }
    uint32_t value;
    if (gs_qty_parse_fraction(text, &value, err, sizeof(err)) == 0 && (value == 0 || value > 1000))
        abort();
    if (gs_qty_parse_percent(text, 0, &value, err, sizeof(err)) == 0 && (value == 0 || value > 100))
        abort();
    gs_device_bytes_t devices;
    gs_qty_parse_device_bytes(text, 0, &devices, err, sizeof(err));
    free(text);
    return 0;
}
