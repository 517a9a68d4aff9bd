/* SPDX-License-Identifier: Apache-2.0 */
/* Keyed leases' keys and cgroup paths: the two names a container runtime or an orchestrator
 * gives gpushared (issue 21; docs/containers.md). Both are checked to the character: they end up
 * in file names, log lines and /proc comparisons. */
#include "gpushare/client.h"
#include "gpushare/error.h"

#include <string.h>

/* Checks a '/'-separated path of parts made of the characters in allowed: no empty part (but an
 * empty first part when absolute), no "." or ".." part. Returns the number of parts, or -1. */
static int parts_of(const char *text, const char *allowed, int absolute)
{
    int parts = 0;
    const char *p = text;
    if (absolute && *p++ != '/')
        return -1;
    while (*p != '\0') {
        size_t n = strspn(p, allowed);
        if (n == 0 || (p[n] != '/' && p[n] != '\0') || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.'))
            return -1;
        parts++;
        p += n;
        if (*p == '/' && *++p == '\0')
            return -1; /* a trailing '/' */
    }
    return parts;
}

#define KEY_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-"

int gs_lease_key_check(const char *key, char *err, size_t errlen)
{
    size_t len = strnlen(key, GS_LEASE_KEY_MAX);
    if (len < 3 || len >= GS_LEASE_KEY_MAX || parts_of(key, KEY_CHARS, 0) < 2)
        return gs_fail(err, errlen, GS_EINVAL,
                       "a lease key is 3 to %d characters of letters, digits and ._:- in at least "
                       "two parts separated by '/' (like podman/<container id>)",
                       GS_LEASE_KEY_MAX - 1);
    return 0;
}

int gs_cgroup_path_check(const char *path, char *err, size_t errlen)
{
    size_t len = strnlen(path, GS_CGROUP_PATH_MAX);
    if (len < 2 || len >= GS_CGROUP_PATH_MAX || parts_of(path, KEY_CHARS "@", 1) < 1)
        return gs_fail(err, errlen, GS_EINVAL,
                       "a cgroup path is absolute, at most %d characters of letters, digits and "
                       "._:@- in parts separated by '/' (like /libpod_parent/libpod-<id>)",
                       GS_CGROUP_PATH_MAX - 1);
    return 0;
}
