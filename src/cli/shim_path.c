/* SPDX-License-Identifier: Apache-2.0 */
/* Finding what is installed with gpushare: libgpushare.so (the environment, the daemon's
 * configuration, or beside gpushare) and gpushared. */
#include "shim_path.h"

#include "gpushare/error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GS_SHIM_FROM_BINDIR
#define GS_SHIM_FROM_BINDIR "../lib/gpushare/libgpushare.so"
#endif
#ifndef GS_SBIN_FROM_BINDIR
#define GS_SBIN_FROM_BINDIR "../sbin/gpushared"
#endif

/* Writes BINDIR/relative into path, resolved when it exists. Returns 0 when access(mode) allows
 * it. */
static int beside_self(const char *relative, int mode, char *path, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return GS_ENOENT;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL)
        *slash = '\0';
    int w = snprintf(path, len, "%s/%s", self, relative);
    if (w < 0 || (size_t)w >= len)
        return GS_ENOENT;
    char real[PATH_MAX];
    if (realpath(path, real) == NULL || strlen(real) >= len)
        return GS_ENOENT;
    snprintf(path, len, "%s", real);
    return access(path, mode) == 0 ? 0 : GS_ENOENT;
}

int gs__cli_shim_path(const char *configured, char *path, size_t len)
{
    const char *env = getenv("GPUSHARE_SHIM");
    if (env != NULL && env[0] != '\0') {
        snprintf(path, len, "%s", env);
        return access(path, R_OK) == 0 ? 0 : GS_ENOENT;
    }
    if (configured != NULL && configured[0] != '\0') {
        snprintf(path, len, "%s", configured);
        return access(path, R_OK) == 0 ? 0 : GS_ENOENT;
    }
    if (beside_self(GS_SHIM_FROM_BINDIR, R_OK, path, len) == 0)
        return 0;
    return beside_self("../lib/libgpushare.so", R_OK, path, len);
}

int gs__cli_daemon_path(char *path, size_t len)
{
    const char *env = getenv("GPUSHARED");
    if (env != NULL && env[0] != '\0') {
        snprintf(path, len, "%s", env);
        return access(path, X_OK) == 0 ? 0 : GS_ENOENT;
    }
    if (beside_self(GS_SBIN_FROM_BINDIR, X_OK, path, len) == 0)
        return 0;
    return beside_self("gpushared", X_OK, path, len);
}
