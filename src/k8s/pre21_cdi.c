/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary: issue 21's CDI writer, stubbed until it lands on main. */
#include "gpushare/cdi.h"
#include "gpushare/error.h"

json_t *gs_cdi_lease_spec(const gs_cdi_lease_t *lease, char *err, size_t errlen)
{
    (void)lease;
    gs_fail(err, errlen, GS_ENOSYS, "CDI specs need issue 21");
    return NULL;
}

int gs_cdi_write(const char *dir, const json_t *spec, char *err, size_t errlen)
{
    (void)dir, (void)spec;
    return gs_fail(err, errlen, GS_ENOSYS, "CDI specs need issue 21");
}

int gs_cdi_remove(const char *dir, const char *kind, const char *name, char *err, size_t errlen)
{
    (void)dir, (void)kind, (void)name, (void)err, (void)errlen;
    return 0;
}
