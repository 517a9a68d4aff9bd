/* SPDX-License-Identifier: Apache-2.0 */
/* Private interfaces of `gpushare plan`: trace replay, capacity planning, plots, helpers. */
#ifndef GS_PLAN_CLI_H
#define GS_PLAN_CLI_H

#include "daemon_cli.h"

#include "gpushare/placement.h"

#include <stdio.h>

/* `gpushare plan replay ...` and `gpushare plan ...` (capacity); argv[0] is the subcommand's
 * name. Return the process exit status (cli.h). */
int gs__plan_replay_main(int argc, char **argv);
int gs__plan_capacity_main(int argc, char **argv);

/* Starts cli for `gpushare plan` (errors "gpushare plan: MESSAGE", JSON with --json in argv). */
void gs__plan_cli_init(gs__cli_t *cli, int argc, char **argv);

/* Parses "42", "42-51" or "42,45,50" into seeds[] (at most max). Returns the count, or
 * GS_EINVAL. */
int gs__plan_parse_seeds(const char *text, unsigned long long *seeds, int max);

/* Parses "fgd", "random,fgd,gpushare" or "all" into policies[]. Returns the count, or GS_EINVAL
 * with the unknown name in bad (when not NULL). */
int gs__plan_parse_policies(const char *text, gs_place_policy_t *policies, int max,
                            const char **bad);

/* Parses a finite number in [min, max]. Returns 0 or GS_EINVAL. */
int gs__plan_parse_double(const char *text, double min, double max, double *value);

/* As gs__plan_parse_double, also accepting a percentage ("130%" is 1.3). */
int gs__plan_parse_ratio(const char *text, double min, double max, double *value);

/* Nonzero when gs__plan_plot can draw into path (it ends in .png or .svg, any case). */
int gs__plan_plot_format_ok(const char *path);

/* Writes a dollar amount with cents and thousands separators: "$2,165.76". */
void gs__plan_money(double dollars, char *buf, size_t len);

/* One policy's curve for a plot: mean allocation % per arrived % (0..130), valid[] as in
 * gs_place_replay_result_t. */
typedef struct gs__plan_curve {
    const char *label;
    double alloc[GS_PLACE_TABLE_MAX + 1];
    uint8_t valid[GS_PLACE_TABLE_MAX + 1];
} gs__plan_curve_t;

/* Draws a chart of unallocated % (100 - allocation) against arrived % for the curves (the whole
 * range and a close-up of the end) into path, a PNG or an SVG file by its extension. Returns 0,
 * or GS_EINVAL (the extension) or GS_EIO (the file cannot be written) with a one-line reason in
 * err. */
int gs__plan_plot(const char *path, const char *title, const gs__plan_curve_t *curves, int count,
                  char *err, size_t errlen);

#endif
