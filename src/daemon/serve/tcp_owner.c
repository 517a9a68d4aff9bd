/* SPDX-License-Identifier: Apache-2.0 */
/* The owner of a connection's client socket, from the kernel's socket diagnostics. */
#include "tcp_owner.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void gs__tcp_owner_open(gs__tcp_owner_t *o)
{
    o->nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
}

void gs__tcp_owner_close(gs__tcp_owner_t *o)
{
    if (o->nl >= 0)
        close(o->nl);
    o->nl = -1;
}

/* Asks for the one socket whose local end is peer and remote end is local: the client's. */
static int ask(const gs__tcp_owner_t *o, const struct sockaddr_in *local,
               const struct sockaddr_in *peer)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } msg;
    memset(&msg, 0, sizeof(msg));
    msg.nlh.nlmsg_len = sizeof(msg);
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST;
    msg.req.sdiag_family = AF_INET;
    msg.req.sdiag_protocol = IPPROTO_TCP;
    msg.req.idiag_states = ~0u;
    msg.req.id.idiag_sport = peer->sin_port;
    msg.req.id.idiag_dport = local->sin_port;
    msg.req.id.idiag_src[0] = peer->sin_addr.s_addr;
    msg.req.id.idiag_dst[0] = local->sin_addr.s_addr;
    msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    return sendto(o->nl, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel)) ==
                   (ssize_t)sizeof(msg)
               ? 0
               : -1;
}

uid_t gs__tcp_owner_of(gs__tcp_owner_t *o, int fd)
{
    struct sockaddr_in local, peer;
    socklen_t llen = sizeof(local), plen = sizeof(peer);
    if (o->nl < 0 || getsockname(fd, (struct sockaddr *)&local, &llen) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &plen) != 0 || local.sin_family != AF_INET ||
        ask(o, &local, &peer) != 0)
        return GS__TCP_OWNER_NONE;
    union {
        char buf[1024];
        struct nlmsghdr align;
    } reply;
    struct pollfd pfd = {.fd = o->nl, .events = POLLIN};
    ssize_t n = poll(&pfd, 1, 100) > 0 ? recv(o->nl, reply.buf, sizeof(reply.buf), 0) : -1;
    uid_t uid = GS__TCP_OWNER_NONE;
    for (struct nlmsghdr *h = &reply.align; n > 0 && NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
        if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
            h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            if (m->id.idiag_sport == peer.sin_port && m->id.idiag_dport == local.sin_port)
                uid = m->idiag_uid;
        }
    }
    return uid;
}
