/* SPDX-License-Identifier: Apache-2.0 */
/* A process's side of a GPU's compute scheduler: joining over gpushared's socket, and the
 * channel's messages (see gpushare/sched_member.h). libc only. */
#include "gpushare/sched_member.h"

#include "gpushare/error.h"
#include "gpushare/sched_wire.h"
#include "region_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RENEW_WAIT_NS INT64_C(100000000)

struct gs_smember {
    int fd;
    int asked; /* gpushared believes the process has work */
    int held;  /* it runs in slot epoch */
    uint64_t epoch;
    int64_t start, end; /* the slot as told, our clock */
    uint64_t preempt;   /* the slot asked to end early */
    int others;         /* another lease waits */
    uint64_t seq;       /* of the last RENEW */
    int renew_answer;   /* -1 = none yet, else the answer to seq */
    int64_t renew_end;
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The number after "key": in a reply line (0 when absent). */
static uint32_t number_of(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    unsigned long v = p != NULL ? strtoul(p + strlen(key), NULL, 10) : 0;
    return v > 1000 ? 1000 : (uint32_t)v;
}

int gs_smember_join(const char *spec, const char *uuid, uint32_t cap_pct, gs_smember_t **out,
                    gs_smember_terms_t *terms, char *err, size_t errlen)
{
    unsigned long long id;
    const char *socket_path;
    if (gs__daemon_spec(spec, &id, &socket_path) != 0 || strlen(uuid) > 96 ||
        strpbrk(uuid, "\"\\") != NULL) {
        snprintf(err, errlen, "expected gpushared:LEASE_ID:SOCKET and a GPU UUID");
        return GS_EINVAL;
    }
    char request[256], reply[1024];
    snprintf(request, sizeof(request),
             "{\"op\":\"compute_join\",\"lease\":%llu,\"gpu\":\"%s\",\"cap\":%u}\n", id, uuid,
             cap_pct > 100 ? 100 : cap_pct);
    int passed = -1;
    int result =
        gs__daemon_ask_retry(socket_path, request, reply, sizeof(reply), &passed, err, errlen);
    if (result != 0)
        return result;
    memset(terms, 0, sizeof(*terms));
    terms->gate = strstr(reply, "\"gate\":true") != NULL;
    terms->share.guarantee = number_of(reply, "\"guarantee\":");
    terms->share.cap = number_of(reply, "\"cap\":");
    if (!terms->gate) {
        if (passed >= 0)
            close(passed);
        return 0;
    }
    if (passed < 0) {
        snprintf(err, errlen, "gpushared sent no channel");
        return GS_EPROTO;
    }
    return gs_smember_new(passed, out);
}

int gs_smember_new(int fd, gs_smember_t **out)
{
    gs_smember_t *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        close(fd);
        return GS_ENOMEM;
    }
    m->fd = fd;
    m->renew_answer = -1;
    *out = m;
    return 0;
}

void gs_smember_free(gs_smember_t *m)
{
    if (m == NULL)
        return;
    close(m->fd);
    free(m);
}

void gs_smember_forget(gs_smember_t *m)
{
    if (m != NULL && m->fd >= 0) {
        close(m->fd);
        m->fd = -1;
    }
}

int gs_smember_fd(const gs_smember_t *m)
{
    return m->fd;
}

static int say(gs_smember_t *m, uint32_t type, uint32_t flags, uint64_t epoch, int64_t ns)
{
    gs_sched_msg_t msg = {GS_SCHED_WIRE_MAGIC | type, flags, epoch, ns, m->seq};
    if (send(m->fd, &msg, sizeof(msg), MSG_NOSIGNAL) == sizeof(msg))
        return 0;
    return GS_ECONNRESET;
}

static void apply(gs_smember_t *m, const gs_sched_msg_t *msg, int64_t now)
{
    switch (msg->type & 0xff) {
    case GS_SMSG_GRANT:
        m->held = 1;
        m->asked = 1;
        m->epoch = msg->epoch;
        m->start = now;
        m->end = now + msg->ns;
        break;
    case GS_SMSG_END:
        if (m->held && msg->epoch == m->epoch)
            m->end = now + msg->ns;
        break;
    case GS_SMSG_PREEMPT:
        m->preempt = msg->epoch;
        break;
    case GS_SMSG_WAITING:
        m->others = (msg->flags & GS_SMSG_F_OTHERS) != 0;
        break;
    case GS_SMSG_RENEWED:
        if (msg->seq == m->seq) {
            m->renew_answer = (msg->flags & GS_SMSG_F_RENEWED) != 0;
            m->renew_end = now + msg->ns;
        }
        break;
    default:
        break; /* a newer daemon's message: nothing to do with it */
    }
}

int gs_smember_read(gs_smember_t *m)
{
    for (;;) {
        gs_sched_msg_t msg;
        ssize_t n = recv(m->fd, &msg, sizeof(msg), MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return GS_ECONNRESET;
        if (n == sizeof(msg) && (msg.type & ~UINT32_C(0xff)) == GS_SCHED_WIRE_MAGIC)
            apply(m, &msg, mono_ns());
    }
}

int gs_smember_wait(gs_smember_t *m, int extra_fd, int64_t timeout_ns)
{
    struct pollfd pfd[2] = {{.fd = m->fd, .events = POLLIN}, {.fd = extra_fd, .events = POLLIN}};
    int64_t t = timeout_ns > 0 ? timeout_ns : 0;
    struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
    int n = ppoll(pfd, extra_fd >= 0 ? 2 : 1, &ts, NULL);
    if (n > 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        int result = gs_smember_read(m);
        if (result != 0)
            return result;
    }
    return n > 0 && extra_fd >= 0 && (pfd[1].revents & POLLIN) ? 1 : 0;
}

static void fill(const gs_smember_t *m, gs_sched_grant_t *grant)
{
    memset(grant, 0, sizeof(*grant));
    grant->held = m->held;
    grant->epoch = m->epoch;
    grant->start_ns = m->start;
    grant->end_ns = m->end;
    grant->wait_ns = INT64_C(50000000);
}

int gs_smember_want(gs_smember_t *m, gs_sched_grant_t *grant)
{
    int result = gs_smember_read(m);
    if (result == 0 && !m->asked && !m->held) {
        result = say(m, GS_SMSG_WANT, 0, 0, 0);
        m->asked = result == 0;
    }
    fill(m, grant);
    return result;
}

int gs_smember_yield(gs_smember_t *m, uint64_t epoch, int wants)
{
    if (m->epoch == epoch)
        m->held = 0;
    m->asked = wants;
    return say(m, GS_SMSG_YIELD, wants ? GS_SMSG_F_WANTS : 0, epoch, 0);
}

int gs_smember_renew(gs_smember_t *m, uint64_t epoch, gs_sched_grant_t *grant)
{
    m->seq++;
    m->renew_answer = -1;
    int result = say(m, GS_SMSG_RENEW, 0, epoch, 0);
    int64_t deadline = mono_ns() + RENEW_WAIT_NS;
    while (result == 0 && m->renew_answer < 0) {
        int64_t left = deadline - mono_ns();
        if (left <= 0)
            break;
        result = gs_smember_wait(m, -1, left);
    }
    if (result != 0)
        return result;
    if (m->renew_answer == 1 && m->held && m->epoch == epoch)
        m->end = m->renew_end;
    fill(m, grant);
    return m->renew_answer == 1 && m->held && m->epoch == epoch;
}

void gs_smember_started(gs_smember_t *m, uint64_t epoch, int64_t at)
{
    if (m->held && m->epoch == epoch)
        say(m, GS_SMSG_STARTED, 0, epoch, at - m->start);
}

int64_t gs_smember_slot_end(const gs_smember_t *m, uint64_t epoch)
{
    return m->held && m->epoch == epoch ? m->end : 0;
}

int gs_smember_preempted(const gs_smember_t *m, uint64_t epoch)
{
    return m->held && m->preempt == epoch && epoch != 0;
}

int gs_smember_others_waiting(const gs_smember_t *m)
{
    return m->others;
}
