/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared's error codes: names, meanings and exit statuses from their table
 * (gpushare/wire_errors.def). */
#include "gpushare/wire_error.h"

#include <string.h>

typedef struct wire_row {
    const char *name;
    int exit;
    const char *meaning;
} wire_row_t;

static const wire_row_t rows[GS_WIRE_UNKNOWN] = {
    [GS_WIRE_OK] = {"", 0, ""},
#define GS_WIRE_ERROR(id, name, exit, meaning) [GS_WIRE_##id] = {#name, exit, meaning},
#include "gpushare/wire_errors.def"
#undef GS_WIRE_ERROR
};

const char *gs_wire_error_name(gs_wire_error_t code)
{
    return (unsigned)code < GS_WIRE_UNKNOWN ? rows[code].name : "?";
}

const char *gs_wire_error_meaning(gs_wire_error_t code)
{
    return (unsigned)code < GS_WIRE_UNKNOWN ? rows[code].meaning : "";
}

int gs_wire_error_exit(gs_wire_error_t code)
{
    return (unsigned)code < GS_WIRE_UNKNOWN ? rows[code].exit : 1;
}

gs_wire_error_t gs_wire_error_parse(const char *name)
{
    for (unsigned i = GS_WIRE_OK + 1; name != NULL && i < GS_WIRE_UNKNOWN; i++) {
        if (strcmp(name, rows[i].name) == 0)
            return (gs_wire_error_t)i;
    }
    return GS_WIRE_UNKNOWN;
}
