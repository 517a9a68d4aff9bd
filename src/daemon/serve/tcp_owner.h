/* SPDX-License-Identifier: Apache-2.0 */
/* Who is at the other end of a TCP connection made from this node: the uid that owns the
 * client's socket, asked of the kernel (NETLINK_SOCK_DIAG, inet_diag). The metrics endpoint uses
 * it to keep one user's connections from taking every slot. Not thread-safe: one owner (the
 * metrics thread) per gs__tcp_owner_t. */
#ifndef GS_DAEMON_TCP_OWNER_H
#define GS_DAEMON_TCP_OWNER_H

#include <sys/types.h>

/* The unknown owner: a peer on another host, or one the kernel would not name. */
#define GS__TCP_OWNER_NONE ((uid_t)-1)

typedef struct gs__tcp_owner {
    int nl; /* the netlink socket, -1 when none could be opened */
} gs__tcp_owner_t;

/* Opens the netlink socket (a failure leaves every owner unknown). */
void gs__tcp_owner_open(gs__tcp_owner_t *o);

/* Closes it. */
void gs__tcp_owner_close(gs__tcp_owner_t *o);

/* The uid owning the client socket of the accepted IPv4 connection fd, or GS__TCP_OWNER_NONE. */
uid_t gs__tcp_owner_of(gs__tcp_owner_t *o, int fd);

#endif
