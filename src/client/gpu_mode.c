/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU modes' names and flags, generated from the table (gpushare/gpu_modes.def). */
#include "gpushare/gpu_mode.h"

#include "gpushare/error.h"

#include <stdio.h>
#include <string.h>

typedef struct mode_row {
    const char *name;
    unsigned flags;
    const char *summary;
} mode_row_t;

static const mode_row_t rows[GS_GPU_MODE_END] = {
    [GS_GPU_MODE_ANY] = {"any", 0, ""},
#define GS_GPU_MODE(id, name, flags, summary) [GS_GPU_MODE_##id] = {#name, flags, summary},
#include "gpushare/gpu_modes.def"
#undef GS_GPU_MODE
};

const char *gs_gpu_mode_name(gs_gpu_mode_t mode)
{
    return (unsigned)mode < GS_GPU_MODE_END ? rows[mode].name : "?";
}

int gs_gpu_mode_parse(const char *name, gs_gpu_mode_t *mode)
{
    for (unsigned i = 0; i < GS_GPU_MODE_END; i++) {
        if (strcmp(name, rows[i].name) == 0) {
            *mode = (gs_gpu_mode_t)i;
            return 0;
        }
    }
    return GS_EINVAL;
}

unsigned gs_gpu_mode_flags(gs_gpu_mode_t mode)
{
    return (unsigned)mode < GS_GPU_MODE_END ? rows[mode].flags : 0;
}

const char *gs_gpu_mode_summary(gs_gpu_mode_t mode)
{
    return (unsigned)mode < GS_GPU_MODE_END ? rows[mode].summary : "";
}

gs_gpu_mode_t gs_gpu_mode_with(unsigned flags)
{
    for (unsigned i = GS_GPU_MODE_ANY + 1; i < GS_GPU_MODE_END; i++) {
        if ((rows[i].flags & flags) == flags)
            return (gs_gpu_mode_t)i;
    }
    return GS_GPU_MODE_ANY;
}

/* Appends name as item k of count: "a", ", b", " or c". */
static size_t append(char *buf, size_t len, size_t off, unsigned k, unsigned count, int quote,
                     const char *name)
{
    const char *sep = k == 0 ? "" : k + 1 == count ? " or " : ", ";
    const char *q = quote ? "\"" : "";
    int n = off < len ? snprintf(buf + off, len - off, "%s%s%s%s", sep, q, name, q) : 0;
    return off + (n > 0 ? (size_t)n : 0);
}

char *gs_gpu_mode_list(unsigned with, unsigned first, int quote, const char *extra, char *buf,
                       size_t len)
{
    gs_gpu_mode_t order[GS_GPU_MODE_END];
    unsigned count = 0;
    for (int pass = first != 0 ? 0 : 1; pass < 2; pass++) {
        for (unsigned i = GS_GPU_MODE_ANY + 1; i < GS_GPU_MODE_END; i++) {
            int is_first = first != 0 && (rows[i].flags & first) == first;
            if ((rows[i].flags & with) == with && (pass == 1 ? !is_first : is_first))
                order[count++] = (gs_gpu_mode_t)i;
        }
    }
    unsigned total = count + (extra != NULL);
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < count; k++)
        off = append(buf, len, off, k, total, quote, rows[order[k]].name);
    if (extra != NULL)
        append(buf, len, off, count, total, quote, extra);
    return buf;
}
