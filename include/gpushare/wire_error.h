/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared's error codes on the wire, generated from their one table
 * (gpushare/wire_errors.def): the enum, each code's name, meaning and the CLI's exit status for
 * it. Pure functions over a constant table: thread-safe. */
#ifndef GPUSHARE_WIRE_ERROR_H
#define GPUSHARE_WIRE_ERROR_H

typedef enum gs_wire_error {
    GS_WIRE_OK = 0, /* not an error: a reply with "ok": true */
#define GS_WIRE_ERROR(id, name, exit, meaning) GS_WIRE_##id,
#include "gpushare/wire_errors.def"
#undef GS_WIRE_ERROR
    GS_WIRE_UNKNOWN /* a code that is not in the table (a newer daemon's) */
} gs_wire_error_t;

/* The code's name on the wire ("no_fit"); "" for GS_WIRE_OK, "?" for GS_WIRE_UNKNOWN and values
 * out of range. Never NULL. */
const char *gs_wire_error_name(gs_wire_error_t code);

/* The code's meaning, one line ("" for GS_WIRE_OK and unknown values). Never NULL. */
const char *gs_wire_error_meaning(gs_wire_error_t code);

/* gpushare's exit status for the code: the table's (1 or 75); 0 for GS_WIRE_OK, 1 for unknown
 * codes. */
int gs_wire_error_exit(gs_wire_error_t code);

/* The code named name, GS_WIRE_UNKNOWN when the table has none of that name (NULL too). */
gs_wire_error_t gs_wire_error_parse(const char *name);

#endif
