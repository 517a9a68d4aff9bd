/* SPDX-License-Identifier: Apache-2.0 */
/* The chunked transfer coding's decoder (RFC 9112 7.1), fed bytes as they come (chunks.h). */
#include "chunks.h"

#include "gpushare/error.h"

enum { CH_SIZE = 0, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_DONE };

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* One byte of the chunk framing (not data). Returns 0 or GS_EPROTO. */
static int frame_byte(gs__http_chunks_t *d, char ch)
{
    int h = hex_digit(ch);
    switch (d->state) {
    case CH_SIZE:
        if (h >= 0 && d->digits < 15) {
            d->left = d->left * 16 + (uint64_t)h;
            d->digits++;
            return 0;
        }
        if (d->digits == 0)
            return GS_EPROTO;
        d->state = ch == '\r' ? CH_SIZE_LF : ch == ';' || ch == ' ' ? CH_EXT : -1;
        return d->state == -1 ? GS_EPROTO : 0;
    case CH_EXT:
        d->state = ch == '\r' ? CH_SIZE_LF : CH_EXT;
        return 0;
    case CH_SIZE_LF:
        if (ch != '\n')
            return GS_EPROTO;
        d->state = d->left > 0 ? CH_DATA : CH_TRAILER;
        d->line = 0;
        return 0;
    case CH_DATA_CR:
        d->state = ch == '\r' ? CH_DATA_LF : -1;
        return ch == '\r' ? 0 : GS_EPROTO;
    case CH_DATA_LF:
        if (ch != '\n')
            return GS_EPROTO;
        d->state = CH_SIZE;
        d->digits = 0;
        d->left = 0;
        return 0;
    default: /* CH_TRAILER: lines until an empty one */
        if (ch == '\n') {
            d->state = d->line == 0 ? CH_DONE : CH_TRAILER;
            d->line = 0;
        } else if (ch != '\r') {
            d->line++;
        }
        return 0;
    }
}

int gs__http_chunks(gs__http_chunks_t *d, const char *in, size_t len, gs__http_sink_t sink,
                    void *ctx, size_t *used)
{
    size_t i = 0;
    while (i < len && d->state != CH_DONE) {
        if (d->state == CH_DATA) {
            size_t n = len - i < d->left ? len - i : (size_t)d->left;
            int stop = sink(ctx, in + i, n);
            i += n;
            d->left -= n;
            if (d->left == 0)
                d->state = CH_DATA_CR;
            if (stop) {
                *used = i;
                return 1;
            }
            continue;
        }
        if (frame_byte(d, in[i++]) != 0)
            return GS_EPROTO;
    }
    *used = i;
    return d->state == CH_DONE ? 2 : 0;
}
