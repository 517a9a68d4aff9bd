/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's clocks, in milliseconds (and microseconds for the cost of work). Thread-safe. */
#ifndef GS_DAEMON_CLOCK_H
#define GS_DAEMON_CLOCK_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC (timeouts, periods). */
int64_t gs__now_ms(void);

/* Microseconds of CLOCK_MONOTONIC (what a piece of work cost). */
int64_t gs__now_us(void);

/* Milliseconds of CLOCK_REALTIME (since the epoch: the ledger, replies, logs). */
int64_t gs__wall_ms(void);

#endif
