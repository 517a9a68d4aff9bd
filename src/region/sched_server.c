/* SPDX-License-Identifier: Apache-2.0 */
/* gpushared's compute scheduler server: the GPUs' scheduling state, one channel per member
 * process, and the thread that serves them (see gpushare/sched_server.h).
 *
 * The thread sleeps in epoll on the channels (and a tick while members wait, for holders that
 * overstay and caps that refill); what it reads it hands to the policy with its own clock, then
 * tells every member what changed for it. Members are judged by what they do on their own
 * channel only: a short or unknown message, more than MAX_RATE messages a second, or a channel
 * too full to take our messages ends the membership. */
#include "gpushare/sched_server.h"

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/sched_wire.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#define MAX_GPUS       64
#define TICK_NS        INT64_C(10000000)    /* waiters are looked at this often */
#define STARTED_MAX_NS INT64_C(1000000)     /* a lease is believed to start this late at most */
#define BATCH          32                   /* messages read from one channel per wake */
#define MAX_RATE       20000u               /* messages a second a member may send */
#define WARN_NS        INT64_C(10000000000) /* drops are logged once per 10 s, with a count */

typedef struct member {
    int fd;       /* the daemon's end, -1 = free */
    uint32_t gen; /* bumped at each admission: an event for an earlier member is ignored */
    unsigned gpu;
    uint32_t uid; /* its lease's user */
    gs_sched_t *h;
    char key[GS_SCHED_KEY_MAX];
    uint64_t told_epoch; /* the last slot it was granted */
    int64_t told_end;    /* and its end as told */
    int told_preempt;
    int told_others;
    int64_t granted_at; /* when its grant was sent */
    int64_t rate_from;  /* its messages since then */
    uint32_t rate_count;
} member_t;

struct gs_sched_server {
    pthread_mutex_t lock;
    pthread_t thread;
    int epfd, wakefd;
    int stop;
    unsigned n_gpus;
    int64_t last_tick;
    int64_t warned_at;   /* the last drop logged; others within WARN_NS are counted */
    unsigned suppressed; /* drops not logged since */
    gs_sched_limits_t limits;
    gs_sched_gpu_t *gpu[MAX_GPUS];
    member_t *members; /* n_gpus * GS_SCHED_MAX_PROCS */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned n_members(const gs_sched_server_t *s)
{
    return s->n_gpus * GS_SCHED_MAX_PROCS;
}

/* Sends one message; a member that cannot take it (its channel full: it does not read) is
 * failed. Returns 0 or -1. */
static int tell(member_t *m, uint32_t type, uint32_t flags, uint64_t epoch, int64_t ns,
                uint64_t seq)
{
    gs_sched_msg_t msg = {GS_SCHED_WIRE_MAGIC | type, flags, epoch, ns < 0 ? 0 : ns, seq};
    return send(m->fd, &msg, sizeof(msg), MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof(msg) ? 0 : -1;
}

/* Logs why member m is dropped: once per WARN_NS, with how many were not logged (a process can
 * break the protocol as often as it can ask to take part). */
static void warn_drop(gs_sched_server_t *s, const member_t *m, int64_t now, const char *why)
{
    if (s->warned_at != 0 && now - s->warned_at < WARN_NS) {
        s->suppressed++;
        return;
    }
    gs_warn("compute: a member of %s on GPU %u is dropped: %s (%u more dropped in the last %d s)",
            m->key, m->gpu, why, s->suppressed, (int)(WARN_NS / 1000000000));
    s->warned_at = now;
    s->suppressed = 0;
}

static void drop(gs_sched_server_t *s, member_t *m, int64_t now, const char *why)
{
    if (why != NULL)
        warn_drop(s, m, now, why);
    gs_sched_leave(m->h, now);
    gs_sched_close(m->h);
    m->h = NULL;
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, m->fd, NULL);
    close(m->fd);
    m->fd = -1;
}

/* Tells member m what changed for it: a grant, its slot's end, a preemption, others waiting.
 * Returns 0, or -1 when it cannot be told. */
static int notify(member_t *m, int64_t now)
{
    gs_sched_grant_t g;
    int result = 0;
    if (!gs_sched_held(m->h, &g))
        return 0;
    if (g.epoch != m->told_epoch) {
        result = tell(m, GS_SMSG_GRANT, 0, g.epoch, g.end_ns - now, 0);
        m->told_epoch = g.epoch;
        m->told_end = g.end_ns;
        m->told_preempt = 0;
        m->granted_at = now;
    } else if (g.end_ns != m->told_end) {
        result = tell(m, GS_SMSG_END, 0, g.epoch, g.end_ns - now, 0);
        m->told_end = g.end_ns;
    }
    if (result == 0 && !m->told_preempt && gs_sched_preempted(m->h, g.epoch)) {
        result = tell(m, GS_SMSG_PREEMPT, 0, g.epoch, 0, 0);
        m->told_preempt = 1;
    }
    int others = gs_sched_others_waiting(m->h);
    if (result == 0 && others != m->told_others) {
        result = tell(m, GS_SMSG_WAITING, others ? GS_SMSG_F_OTHERS : 0, g.epoch, 0, 0);
        m->told_others = others;
    }
    return result;
}

static void notify_all(gs_sched_server_t *s, int64_t now)
{
    for (unsigned i = 0; i < n_members(s); i++) {
        member_t *m = &s->members[i];
        if (m->fd >= 0 && notify(m, now) != 0)
            drop(s, m, now, "it does not read its channel");
    }
}

/* Waiting members look at the holder (one that overstays is passed over) and at their caps. */
static int tick(gs_sched_server_t *s, int64_t now)
{
    int waiting = 0;
    gs_sched_grant_t g;
    for (unsigned i = 0; i < n_members(s); i++) {
        member_t *m = &s->members[i];
        if (m->fd < 0 || !gs_sched_wants(m->h) || gs_sched_held(m->h, &g))
            continue;
        waiting = 1;
        if (now - s->last_tick >= TICK_NS)
            gs_sched_want(m->h, now, &g);
    }
    if (now - s->last_tick >= TICK_NS)
        s->last_tick = now;
    return waiting;
}

/* One message of member m. Returns 0, or -1 when it breaks the protocol. */
static int handle(member_t *m, const gs_sched_msg_t *msg, int64_t now)
{
    gs_sched_grant_t g;
    if ((msg->type & ~UINT32_C(0xff)) != GS_SCHED_WIRE_MAGIC)
        return -1;
    switch (msg->type & 0xff) {
    case GS_SMSG_WANT:
        gs_sched_want(m->h, now, &g);
        return 0;
    case GS_SMSG_YIELD:
        gs_sched_yield(m->h, msg->epoch, now, (msg->flags & GS_SMSG_F_WANTS) != 0, &g);
        m->told_epoch = 0; /* it left the slot: let back into it, it is told again */

        return 0;
    case GS_SMSG_RENEW: {
        int renewed = gs_sched_renew(m->h, msg->epoch, now, &g) == 1;
        if (renewed)
            m->told_end = g.end_ns;
        return tell(m, GS_SMSG_RENEWED, renewed ? GS_SMSG_F_RENEWED : 0, msg->epoch,
                    renewed ? g.end_ns - now : 0, msg->seq);
    }
    case GS_SMSG_STARTED: {
        /* Believed only within STARTED_MAX_NS of the grant: a lease cannot buy a free slot. */
        int64_t after = msg->ns < 0 ? 0 : msg->ns > STARTED_MAX_NS ? STARTED_MAX_NS : msg->ns;
        if (msg->epoch == m->told_epoch)
            gs_sched_started(m->h, msg->epoch, m->granted_at + after);
        return 0;
    }
    default:
        return -1;
    }
}

/* Reads what member m sent (at most BATCH messages). */
static void serve_member(gs_sched_server_t *s, member_t *m, uint32_t events, int64_t now)
{
    for (int i = 0; i < BATCH; i++) {
        gs_sched_msg_t msg;
        ssize_t n = recv(m->fd, &msg, sizeof(msg), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        if (n <= 0) {
            drop(s, m, now, NULL); /* the process is gone */
            return;
        }
        if (now - m->rate_from >= INT64_C(1000000000)) {
            m->rate_from = now;
            m->rate_count = 0;
        }
        const char *why = n != sizeof(msg)             ? "a message of the wrong size"
                          : ++m->rate_count > MAX_RATE ? "more messages than any agent sends"
                          : handle(m, &msg, now) != 0  ? "a message it may not send"
                                                       : NULL;
        if (why != NULL) {
            drop(s, m, now, why);
            return;
        }
    }
    if ((events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN))
        drop(s, m, now, NULL);
}

static void *serve(void *arg)
{
    gs_sched_server_t *s = arg;
    int waiting = 0;
    for (;;) {
        struct epoll_event ev[64];
        int n = epoll_wait(s->epfd, ev, 64, waiting ? (int)(TICK_NS / 1000000) : -1);
        pthread_mutex_lock(&s->lock);
        if (s->stop) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        int64_t now = mono_ns();
        for (int i = 0; i < n; i++) {
            uint64_t index = ev[i].data.u64 & UINT32_MAX, gen = ev[i].data.u64 >> 32;
            member_t *m = index > 0 && index <= n_members(s) ? &s->members[index - 1] : NULL;
            if (m == NULL) {
                uint64_t v;
                if (read(s->wakefd, &v, sizeof(v)) < 0)
                    continue;
            } else if (m->fd >= 0 && m->gen == gen) {
                serve_member(s, m, ev[i].events, now);
            }
        }
        waiting = tick(s, now);
        notify_all(s, now);
        pthread_mutex_unlock(&s->lock);
    }
}

int gs_sched_server_new(unsigned n_gpus, gs_sched_server_t **out)
{
    if (n_gpus == 0 || n_gpus > MAX_GPUS)
        return GS_EINVAL;
    gs_sched_server_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return GS_ENOMEM;
    int result = 0;
    s->n_gpus = n_gpus;
    s->epfd = s->wakefd = -1;
    pthread_mutex_init(&s->lock, NULL);
    s->members = calloc(n_members(s), sizeof(member_t));
    for (unsigned g = 0; s->members != NULL && g < n_gpus && result == 0; g++)
        result = gs_sched_gpu_new(&s->gpu[g]);
    for (unsigned i = 0; s->members != NULL && i < n_members(s); i++)
        s->members[i].fd = -1;
    if (s->members == NULL || result != 0)
        result = GS_ENOMEM;
    if (result == 0 && ((s->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
                        (s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0))
        result = -errno;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (result == 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wakefd, &ev) != 0)
        result = -errno;
    if (result == 0)
        result = -pthread_create(&s->thread, NULL, serve, s);
    if (result != 0) {
        s->stop = 2; /* no thread to join */
        gs_sched_server_free(s);
        return result;
    }
    *out = s;
    return 0;
}

void gs_sched_server_free(gs_sched_server_t *s)
{
    if (s == NULL)
        return;
    if (s->stop == 0) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1;
        pthread_mutex_unlock(&s->lock);
        uint64_t one = 1;
        if (write(s->wakefd, &one, sizeof(one)) < 0)
            gs_warn("compute: cannot wake the scheduler's thread: %s", strerror(errno));
        pthread_join(s->thread, NULL);
    }
    int64_t now = mono_ns();
    for (unsigned i = 0; s->members != NULL && i < n_members(s); i++) {
        if (s->members[i].fd >= 0)
            drop(s, &s->members[i], now, NULL);
    }
    for (unsigned g = 0; g < s->n_gpus; g++)
        gs_sched_gpu_free(s->gpu[g]);
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->wakefd >= 0)
        close(s->wakefd);
    pthread_mutex_destroy(&s->lock);
    free(s->members);
    free(s);
}

/* A free member entry of GPU gpu, or NULL. */
static member_t *free_member(gs_sched_server_t *s, unsigned gpu)
{
    for (unsigned i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        member_t *m = &s->members[gpu * GS_SCHED_MAX_PROCS + i];
        if (m->fd < 0)
            return m;
    }
    return NULL;
}

/* Sets up member m of info with its channel's daemon end fd. Returns 0 or a code. */
static int admit(gs_sched_server_t *s, member_t *m, const gs_sched_member_info_t *info, int fd)
{
    uint32_t gen = m->gen + 1;
    memset(m, 0, sizeof(*m));
    m->fd = -1;
    m->gen = gen;
    int result = gs_sched_open(s->gpu[info->gpu], &m->h);
    if (result == 0 && (result = gs_sched_join(m->h, info->key, info->share)) != 0) {
        gs_sched_close(m->h);
        m->h = NULL;
    }
    if (result != 0)
        return result;
    uint64_t index = (uint64_t)(m - s->members) + 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)gen << 32 | index};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        result = -errno;
        gs_sched_close(m->h);
        m->h = NULL;
        return result;
    }
    m->fd = fd;
    m->gpu = info->gpu;
    m->uid = info->uid;
    snprintf(m->key, sizeof(m->key), "%s", info->key);
    return 0;
}

void gs_sched_server_set_limits(gs_sched_server_t *s, const gs_sched_limits_t *limits)
{
    pthread_mutex_lock(&s->lock);
    s->limits = *limits;
    pthread_mutex_unlock(&s->lock);
}

/* What the lease and the user of info hold on its GPU. */
typedef struct held {
    unsigned lease_members, user_members, user_leases;
    int lease_in; /* the lease has members already */
} held_t;

static void count_held(const gs_sched_server_t *s, const gs_sched_member_info_t *info, held_t *h)
{
    const member_t *gpu = &s->members[info->gpu * GS_SCHED_MAX_PROCS];
    memset(h, 0, sizeof(*h));
    for (unsigned i = 0; i < GS_SCHED_MAX_PROCS; i++) {
        const member_t *m = &gpu[i];
        if (m->fd < 0 || m->uid != info->uid)
            continue;
        int same = strcmp(m->key, info->key) == 0;
        h->lease_members += same;
        h->lease_in |= same;
        h->user_members++;
        int first = 1; /* the first member of its lease in the table: the lease counts once */
        for (unsigned j = 0; j < i && first; j++)
            first = gpu[j].fd < 0 || gpu[j].uid != m->uid || strcmp(gpu[j].key, m->key) != 0;
        h->user_leases += first;
    }
}

/* GS_ELIMIT (why says which bound) when info's lease or its user may not have another member
 * on its GPU, else 0. */
static int within_limits(const gs_sched_server_t *s, const gs_sched_member_info_t *info, char *why,
                         size_t whylen)
{
    const gs_sched_limits_t *l = &s->limits;
    held_t h;
    count_held(s, info, &h);
    char text[160] = "";
    if (l->members_per_lease != 0 && h.lease_members >= l->members_per_lease)
        snprintf(text, sizeof(text), "%s has %u members on the GPU, the most a lease may have",
                 info->key, h.lease_members);
    else if (info->uid != 0 && l->members_per_user != 0 && h.user_members >= l->members_per_user)
        snprintf(text, sizeof(text),
                 "uid %u's leases have %u members on the GPU, the most a user may have",
                 (unsigned)info->uid, h.user_members);
    else if (info->uid != 0 && l->leases_per_user != 0 && !h.lease_in &&
             h.user_leases >= l->leases_per_user)
        snprintf(text, sizeof(text), "uid %u has %u leases on the GPU, the most a user may have",
                 (unsigned)info->uid, h.user_leases);
    if (text[0] == '\0')
        return 0;
    if (why != NULL && whylen > 0)
        snprintf(why, whylen, "%s", text);
    return GS_ELIMIT;
}

int gs_sched_server_add(gs_sched_server_t *s, const gs_sched_member_info_t *info, int *member_fd,
                        char *why, size_t whylen)
{
    if (info->gpu >= s->n_gpus || info->key[0] == '\0' ||
        memchr(info->key, '\0', sizeof(info->key)) == NULL)
        return GS_EINVAL;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
        return -errno;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    pthread_mutex_lock(&s->lock);
    int result = within_limits(s, info, why, whylen);
    member_t *m = result == 0 ? free_member(s, info->gpu) : NULL;
    if (result == 0)
        result = m != NULL ? admit(s, m, info, fds[0]) : GS_ENOSPC;
    pthread_mutex_unlock(&s->lock);
    if (result != 0) {
        close(fds[0]);
        close(fds[1]);
        return result;
    }
    *member_fd = fds[1];
    return 0;
}

void gs_sched_server_drop(gs_sched_server_t *s, const char *key)
{
    pthread_mutex_lock(&s->lock);
    int64_t now = mono_ns();
    for (unsigned i = 0; i < n_members(s); i++) {
        member_t *m = &s->members[i];
        if (m->fd >= 0 && strcmp(m->key, key) == 0)
            drop(s, m, now, NULL);
    }
    notify_all(s, now); /* the GPU may have gone to another lease */
    pthread_mutex_unlock(&s->lock);
}

int gs_sched_server_leases(gs_sched_server_t *s, unsigned gpu, gs_sched_lease_info_t *out, int max)
{
    if (gpu >= s->n_gpus)
        return 0;
    pthread_mutex_lock(&s->lock);
    int n = gs_sched_leases(s->gpu[gpu], out, max);
    pthread_mutex_unlock(&s->lock);
    return n;
}

unsigned gs_sched_server_members(gs_sched_server_t *s, const char *key)
{
    unsigned n = 0;
    pthread_mutex_lock(&s->lock);
    for (unsigned i = 0; i < n_members(s); i++)
        n += s->members[i].fd >= 0 && strcmp(s->members[i].key, key) == 0;
    pthread_mutex_unlock(&s->lock);
    return n;
}
