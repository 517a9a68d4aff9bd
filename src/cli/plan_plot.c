/* SPDX-License-Identifier: Apache-2.0 */
/* Charts of unallocated GPU % against arrived GPU demand %, one line per policy, drawn with cairo
 * into a PNG or an SVG file: the whole range and a close-up of the end, as in the FGD paper. */
#include "plan_cli.h"

#include "gpushare/error.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define WIDTH     960
#define HEIGHT    420
#define MARGIN    50
#define PANEL_W   400
#define PANEL_H   300
#define ZOOM_X0   90 /* the close-up starts at this arrived % */
#define PNG_SCALE 2  /* PNGs are drawn at twice the size, for sharp lines and text */

static const double colors[][3] = {{0.12, 0.47, 0.71}, {1.00, 0.50, 0.05}, {0.17, 0.63, 0.17},
                                   {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
                                   {0.89, 0.47, 0.76}, {0.50, 0.50, 0.50}};

/* A panel: arrived % in [x0, x1] across, unallocated % in [0, y1] up, placed at (left, top). */
typedef struct panel {
    double x0, x1, y1;
    int left, top;
} panel_t;

static double px(const panel_t *p, double x)
{
    return p->left + (x - p->x0) / (p->x1 - p->x0) * PANEL_W;
}

static double py(const panel_t *p, double y)
{
    return p->top + PANEL_H - y / p->y1 * PANEL_H;
}

/* Draws text with its anchor at (x, y): align 0 left, 0.5 centred, 1 right. */
static void text(cairo_t *cr, double x, double y, double size, double align, const char *s)
{
    cairo_text_extents_t ext;
    cairo_set_font_size(cr, size);
    cairo_text_extents(cr, s, &ext);
    cairo_move_to(cr, x - align * ext.x_advance, y);
    cairo_show_text(cr, s);
}

static void grid_line(cairo_t *cr, double x0, double y0, double x1, double y1)
{
    cairo_set_source_rgb(cr, 0.87, 0.87, 0.87);
    cairo_move_to(cr, x0, y0);
    cairo_line_to(cr, x1, y1);
    cairo_stroke(cr);
}

static void axes(cairo_t *cr, const panel_t *p, double xstep, double ystep)
{
    char label[32];
    cairo_set_line_width(cr, 1);
    for (double x = p->x0; x <= p->x1 + 1e-9; x += xstep) {
        grid_line(cr, px(p, x), p->top, px(p, x), p->top + PANEL_H);
        snprintf(label, sizeof(label), "%g", x);
        cairo_set_source_rgb(cr, 0, 0, 0);
        text(cr, px(p, x), p->top + PANEL_H + 15, 11, 0.5, label);
    }
    for (double y = 0; y <= p->y1 + 1e-9; y += ystep) {
        grid_line(cr, p->left, py(p, y), p->left + PANEL_W, py(p, y));
        snprintf(label, sizeof(label), "%g", y);
        cairo_set_source_rgb(cr, 0, 0, 0);
        text(cr, p->left - 5, py(p, y) + 4, 11, 1, label);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_rectangle(cr, p->left, p->top, PANEL_W, PANEL_H);
    cairo_stroke(cr);
    text(cr, p->left + PANEL_W / 2.0, p->top + PANEL_H + 32, 12, 0.5,
         "arrived GPU demand (% of capacity)");
}

static void curve(cairo_t *cr, const panel_t *p, const gs__plan_curve_t *c, const double *rgb)
{
    int open = 0;
    cairo_save(cr);
    cairo_rectangle(cr, p->left, p->top, PANEL_W, PANEL_H);
    cairo_clip(cr);
    for (int x = (int)p->x0; x <= (int)p->x1 && x <= GS_PLACE_TABLE_MAX; x++) {
        if (!c->valid[x])
            continue;
        double y = 100.0 - c->alloc[x];
        if (open)
            cairo_line_to(cr, px(p, x), py(p, y));
        else
            cairo_move_to(cr, px(p, x), py(p, y));
        open = 1;
    }
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_set_line_width(cr, 1.5);
    cairo_stroke(cr);
    cairo_restore(cr);
}

/* The legend, in the lower left of the panel, where the curves (falling from 100 % at no demand)
 * leave room. */
static void legend(cairo_t *cr, const panel_t *p, const gs__plan_curve_t *curves, int count)
{
    double left = p->left + 12, top = p->top + PANEL_H - 12 - 16 * count;
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, left - 6, top - 6, 120, 16 * count + 8);
    cairo_fill(cr);
    for (int i = 0; i < count; i++) {
        const double *rgb = colors[i % (int)(sizeof(colors) / sizeof(colors[0]))];
        cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
        cairo_rectangle(cr, left, top + 16 * i + 4, 12, 3);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        text(cr, left + 18, top + 16 * i + 9, 12, 0, curves[i].label);
    }
}

/* The largest unallocated % in the close-up, rounded up to a whole step of 2. */
static double zoom_top(const gs__plan_curve_t *curves, int count)
{
    double top = 2;
    for (int i = 0; i < count; i++) {
        for (int x = ZOOM_X0; x <= GS_PLACE_TABLE_MAX; x++) {
            if (curves[i].valid[x] && 100.0 - curves[i].alloc[x] > top)
                top = 100.0 - curves[i].alloc[x];
        }
    }
    return ceil(top / 2) * 2;
}

static void draw(cairo_t *cr, const char *title, const gs__plan_curve_t *curves, int count)
{
    panel_t full = {0, GS_PLACE_TABLE_MAX, 100, MARGIN + 10, MARGIN};
    panel_t zoom = {ZOOM_X0, GS_PLACE_TABLE_MAX, zoom_top(curves, count), MARGIN + PANEL_W + 90,
                    MARGIN};
    char heading[512];
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_source_rgb(cr, 0, 0, 0);
    snprintf(heading, sizeof(heading), "Unallocated GPU %% vs arrived demand: %s", title);
    text(cr, WIDTH / 2.0, 25, 15, 0.5, heading);
    axes(cr, &full, 10, 10);
    axes(cr, &zoom, 5, zoom.y1 > 10 ? 2 : 1);
    cairo_save(cr);
    cairo_translate(cr, 15, MARGIN + PANEL_H / 2.0);
    cairo_rotate(cr, -M_PI / 2);
    text(cr, 0, 0, 12, 0.5, "unallocated GPU (%)");
    cairo_restore(cr);
    for (int i = 0; i < count; i++) {
        const double *rgb = colors[i % (int)(sizeof(colors) / sizeof(colors[0]))];
        curve(cr, &full, &curves[i], rgb);
        curve(cr, &zoom, &curves[i], rgb);
    }
    legend(cr, &full, curves, count);
}

/* Nonzero when path ends in ext (".png"), ignoring case. */
static int ends_with(const char *path, const char *ext)
{
    size_t n = strlen(path), k = strlen(ext);
    return n > k && strcasecmp(path + n - k, ext) == 0;
}

int gs__plan_plot_format_ok(const char *path)
{
    return ends_with(path, ".png") || ends_with(path, ".svg");
}

int gs__plan_plot(const char *path, const char *title, const gs__plan_curve_t *curves, int count,
                  char *err, size_t errlen)
{
    int png = ends_with(path, ".png");
    if (!gs__plan_plot_format_ok(path))
        return gs_fail(err, errlen, GS_EINVAL,
                       "--plot \"%s\": the file name must end in .png or .svg", path);
    cairo_surface_t *s =
        png ? cairo_image_surface_create(CAIRO_FORMAT_RGB24, WIDTH * PNG_SCALE, HEIGHT * PNG_SCALE)
            : cairo_svg_surface_create(path, WIDTH, HEIGHT);
    cairo_t *cr = cairo_create(s);
    if (png)
        cairo_scale(cr, PNG_SCALE, PNG_SCALE);
    draw(cr, title, curves, count);
    cairo_status_t status = cairo_status(cr);
    cairo_destroy(cr);
    if (status == CAIRO_STATUS_SUCCESS && png)
        status = cairo_surface_write_to_png(s, path);
    cairo_surface_finish(s);
    if (status == CAIRO_STATUS_SUCCESS)
        status = cairo_surface_status(s);
    cairo_surface_destroy(s);
    /* The chart is the command's last use of text: free the font caches cairo and fontconfig
     * keep for the process (leak checkers report them otherwise). */
    cairo_debug_reset_static_data();
    FcFini();
    if (status != CAIRO_STATUS_SUCCESS)
        return gs_fail(err, errlen, GS_EIO, "%s: cannot write the plot: %s", path,
                       cairo_status_to_string(status));
    return 0;
}
