/* SVG line charts of unallocated GPU % against arrived GPU demand %, one line per policy. */
#include "plan_cli.h"

#include <math.h>

#define WIDTH   960
#define HEIGHT  420
#define MARGIN  50
#define PANEL_W 400
#define PANEL_H 300
#define ZOOM_X0 90 /* the close-up starts at this arrived % */

static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                     "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

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

static void axes(FILE *out, const panel_t *p, double xstep, double ystep)
{
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#000\"/>\n",
            p->left, p->top, PANEL_W, PANEL_H);
    for (double x = p->x0; x <= p->x1 + 1e-9; x += xstep)
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
                px(p, x), p->top, px(p, x), p->top + PANEL_H, px(p, x), p->top + PANEL_H + 15, x);
    for (double y = 0; y <= p->y1 + 1e-9; y += ystep)
        fprintf(out,
                "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
                p->left, py(p, y), p->left + PANEL_W, py(p, y), p->left - 5, py(p, y) + 4, y);
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">arrived GPU demand "
            "(%% of capacity)</text>\n",
            p->left + PANEL_W / 2, p->top + PANEL_H + 32);
}

static void line(FILE *out, const panel_t *p, const gs__plan_curve_t *c, const char *color)
{
    int open = 0;
    for (int x = (int)p->x0; x <= (int)p->x1 && x <= GS_PLACE_TABLE_MAX; x++) {
        if (!c->valid[x])
            continue;
        double y = 100.0 - c->alloc[x];
        y = y < 0 ? 0 : y > p->y1 ? p->y1 : y;
        fprintf(out, "%s%.1f,%.1f",
                open ? " " : "<polyline fill=\"none\" stroke-width=\"1.5\" points=\"", px(p, x),
                py(p, y));
        open = 1;
    }
    if (open)
        fprintf(out, "\" stroke=\"%s\"/>\n", color);
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

/* Writes text with the XML special characters escaped. */
static void text(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*s, out);
            break;
        }
    }
}

int gs__plan_svg(FILE *out, const char *title, const gs__plan_curve_t *curves, int count)
{
    panel_t full = {0, GS_PLACE_TABLE_MAX, 100, MARGIN + 10, MARGIN};
    panel_t zoom = {ZOOM_X0, GS_PLACE_TABLE_MAX, zoom_top(curves, count), MARGIN + PANEL_W + 90,
                    MARGIN};
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
            "<text x=\"%d\" y=\"25\" font-size=\"15\" text-anchor=\"middle\">Unallocated GPU %% "
            "vs arrived demand: ",
            WIDTH, HEIGHT, WIDTH / 2);
    text(out, title);
    fputs("</text>\n", out);
    axes(out, &full, 10, 10);
    axes(out, &zoom, 5, zoom.y1 > 10 ? 2 : 1);
    fprintf(out,
            "<text x=\"15\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 15 %d)\" "
            "text-anchor=\"middle\">unallocated GPU (%%)</text>\n",
            MARGIN + PANEL_H / 2, MARGIN + PANEL_H / 2);
    for (int i = 0; i < count; i++) {
        const char *color = colors[i % (int)(sizeof(colors) / sizeof(colors[0]))];
        line(out, &full, &curves[i], color);
        line(out, &zoom, &curves[i], color);
        fprintf(out,
                "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"%d\" font-size=\"12\">",
                full.left + 20, full.top + 15 + 16 * i, color, full.left + 38,
                full.top + 20 + 16 * i);
        text(out, curves[i].label);
        fputs("</text>\n", out);
    }
    fprintf(out, "</svg>\n");
    return ferror(out) ? -1 : 0;
}
