/* SPDX-License-Identifier: Apache-2.0 */
/* Where gpushare finds libgpushare.so, the shim a job preloads (run) and doctor checks, and
 * gpushared (doctor reads the configuration with it). */
#ifndef GS_CLI_SHIM_PATH_H
#define GS_CLI_SHIM_PATH_H

#include <stddef.h>

/* Writes the shim's path into path: $GPUSHARE_SHIM when set, else `configured` (the daemon's
 * shim =, may be NULL or ""), else the one installed with this program
 * (BINDIR/GS_SHIM_FROM_BINDIR), else the build tree's (BINDIR/../lib/libgpushare.so). Returns 0
 * when that file is readable, GS_ENOENT otherwise (path still names the candidate tried last). */
int gs__cli_shim_path(const char *configured, char *path, size_t len);

/* Writes where gpushared is into path: $GPUSHARED when set, else the one installed with this
 * program (BINDIR/GS_SBIN_FROM_BINDIR), else beside it (the build tree). Returns 0 when it is
 * executable, GS_ENOENT otherwise (path names the candidate tried last). */
int gs__cli_daemon_path(char *path, size_t len);

#endif
