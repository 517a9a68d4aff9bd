/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim's nvidia-smi: drawing nvidia-smi's boxed tables. */
#include "smi.h"

#include <stdarg.h>
#include <string.h>

void smi_border(FILE *out, const int *widths, int n, char fill)
{
    char edge = fill == '=' ? '|' : '+';
    fputc(edge, out);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < widths[i]; k++)
            fputc(fill, out);
        fputc(i + 1 < n ? (fill == '=' ? '+' : '+') : edge, out);
    }
    fputc('\n', out);
}

void smi_row(FILE *out, const int *widths, int n, const char *const *cells)
{
    fputc('|', out);
    for (int i = 0; i < n; i++)
        fprintf(out, "%-*.*s|", widths[i], widths[i], cells[i]);
    fputc('\n', out);
}

void smi_line(FILE *out, int width, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fprintf(out, "|%-*.*s|\n", width, width, text);
}
