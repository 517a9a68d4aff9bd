/* SPDX-License-Identifier: Apache-2.0 */
/* The compute scheduler's channel: the messages between gpushared's scheduler (sched_server.h)
 * and one member process (sched_member.h) over a SOCK_SEQPACKET socket pair that gpushared makes
 * for that process alone and hands it over its socket (SCM_RIGHTS).
 *
 * Each message is one gs_sched_msg_t, 32 bytes, native byte order (both ends run on one node).
 * Times on the wire are durations, never clock readings: the two ends may live in different
 * time namespaces. The daemon treats everything a member sends as untrusted: unknown types,
 * short messages or a flood end the member's membership; times it reports are bounded. */
#ifndef GPUSHARE_SCHED_WIRE_H
#define GPUSHARE_SCHED_WIRE_H

#include <stdint.h>

#define GS_SCHED_WIRE_MAGIC UINT32_C(0x47530200) /* "GS" 2.0; the low byte is the type */

enum gs_sched_msg_type {
    /* member -> gpushared */
    GS_SMSG_WANT = 1,    /* the process has work */
    GS_SMSG_YIELD = 2,   /* it leaves slot epoch, drained now; flags: GS_SMSG_F_WANTS */
    GS_SMSG_RENEW = 3,   /* slot epoch ended for it: go on without a hand-over? (seq) */
    GS_SMSG_STARTED = 4, /* its first launch in slot epoch went ns after the grant arrived */
    /* gpushared -> member */
    GS_SMSG_GRANT = 16,   /* run in slot epoch for ns more */
    GS_SMSG_END = 17,     /* slot epoch now ends ns from now */
    GS_SMSG_PREEMPT = 18, /* end slot epoch early: a lease that came back waits */
    GS_SMSG_RENEWED = 19, /* the answer to RENEW seq: flags GS_SMSG_F_RENEWED, ns left */
    GS_SMSG_WAITING = 20, /* flags GS_SMSG_F_OTHERS: whether another lease waits */
};

#define GS_SMSG_F_WANTS   1u /* YIELD: the process still has work */
#define GS_SMSG_F_RENEWED 1u /* RENEWED: the slot goes on */
#define GS_SMSG_F_OTHERS  1u /* WAITING: another lease waits for the GPU */

typedef struct gs_sched_msg {
    uint32_t type; /* GS_SCHED_WIRE_MAGIC | enum gs_sched_msg_type */
    uint32_t flags;
    uint64_t epoch; /* the slot it is about */
    int64_t ns;     /* a duration, as the type says */
    uint64_t seq;   /* RENEW / RENEWED: matches an answer to its question */
} gs_sched_msg_t;

#endif
