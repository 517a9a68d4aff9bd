/* SPDX-License-Identifier: Apache-2.0 */
/* Finding libgpushare.so: the environment, the daemon's configuration, or beside gpushare. */
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

/* Writes BINDIR/relative into path, resolved when it exists. Returns 0 when readable. */
static int beside_self(const char *relative, char *path, size_t len)
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
    return access(path, R_OK) == 0 ? 0 : GS_ENOENT;
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
    if (beside_self(GS_SHIM_FROM_BINDIR, path, len) == 0)
        return 0;
    return beside_self("../lib/libgpushare.so", path, len);
}
