/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-smi: private header (table drawing and the subcommands). */
#ifndef GSIM_SMI_H
#define GSIM_SMI_H

#include <stdio.h>

#include "gpushare/nvml_abi.h"

#define SMI_ALL (-1) /* no -i: every GPU */

/* Prints a border "+----+----+" of columns of the given inner widths, with fill '-' or '='
 * ('=' borders use '|' at the ends and joints, as nvidia-smi's header rules do). */
void smi_border(FILE *out, const int *widths, int n, char fill);

/* Prints one row: each cell padded (or cut) to its column's width, between '|'. */
void smi_row(FILE *out, const int *widths, int n, const char *const *cells);

/* Prints one full-width row of text (width = the table's inner width). */
void smi_line(FILE *out, int width, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The default status table. Returns the exit status. */
int smi_table(FILE *out, int only);

/* -L: one line per GPU (and MIG device) with its UUID. Returns the exit status. */
int smi_list(FILE *out, int only);

/* -mig 0|1. Returns the exit status. */
int smi_set_mig_mode(FILE *out, int only, unsigned mode);

/* --query-gpu=LIST --format=csv[,noheader][,nounits]: the fields of LIST (comma-separated, as
 * NVIDIA's names them) of each GPU. Returns the exit status (2: a field or format it does not
 * know, said as NVIDIA's says it). */
int smi_query_gpu(FILE *out, int only, const char *list, const char *format);

/* "mig" subcommands (-lgip, -lgi, -lci, -cgi LIST [-C], -dci, -dgi); argv follows "mig".
 * Returns the exit status. */
int smi_mig(FILE *out, int only, int argc, char **argv);

#endif
