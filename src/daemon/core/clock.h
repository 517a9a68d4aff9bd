/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's clocks, in milliseconds. Thread-safe. */
#ifndef GS_DAEMON_CLOCK_H
#define GS_DAEMON_CLOCK_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC (timeouts, periods). */
int64_t gs__now_ms(void);

/* Milliseconds of CLOCK_REALTIME (since the epoch: the ledger, replies, logs). */
int64_t gs__wall_ms(void);

#endif
