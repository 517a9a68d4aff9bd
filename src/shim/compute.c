/* SPDX-License-Identifier: Apache-2.0 */
/* Compute shares: which GPUs the process schedules, taking part in their schedulers, and the
 * launch gate every kernel launch passes (see compute.h and gpushare/sched.h).
 *
 * A process of a gpushared lease (GPUSHARE_REGION names the daemon) asks gpushared to take part
 * in the scheduler of each GPU it sees; gpushared answers with the lease's share and a channel,
 * or says that the GPU's launches are not scheduled (its mode shares compute another way, or
 * not at all). GPUSHARE_COMPUTE_MAX asks for a cap below the lease's own. A guarantee or a cap
 * that cannot be enforced (no gpushared, or it refuses) makes cuInit fail with one log line; a
 * process without either runs unscheduled where it cannot take part. gpushared says in
 * GPUSHARE_GATE how the lease's GPU shares compute otherwise (the shim never reads a GPU mode's
 * name): "mps", MPS's active thread percentage is the share (checked here); "none", the hardware
 * partitions the SMs (a MIG instance). */
#include "compute.h"
#include "shim.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gpushare/error.h"
#include "gpushare/log.h"
#include "gpushare/quantity.h"

#define WAIT_SLICE_NS   INT64_C(100000000)
#define REJOIN_FIRST_NS INT64_C(20000000)
#define REJOIN_MAX_NS   INT64_C(2000000000)
#define DAEMON_PREFIX   "gpushared:"
#define GATE_THREADS    256 /* threads with a record of their own; others count atomically */
#define TICKET_SHARE    16  /* a batch of tickets: this part of what is left of the round */
#define TICKETS_MAX     64

typedef struct compute_config {
    uint32_t guarantee; /* percent, 0 = none */
    uint32_t cap;       /* percent, 0 = none */
    int mps;            /* GPUSHARE_GATE=mps: MPS's active thread percentage is the share */
    int hardware;       /* GPUSHARE_GATE=none: the hardware partitions compute */
    char spec[4200];    /* GPUSHARE_REGION when it names gpushared, "" otherwise */
} compute_config_t;

typedef struct compute_state {
    int active; /* some device is scheduled: launches pass its gate */
    int single; /* only ordinal 0 is visible: no device lookup per launch */
    compute_config_t cfg;
    gs__sched_dev_t devs[GS_MAX_DEVICES];
    pthread_once_t once;
    CUresult setup_result;
} compute_state_t;

static compute_state_t compute = {.once = PTHREAD_ONCE_INIT};

/* Each thread's part of each device's gate, written only by the thread (plain stores), read by
 * the agent (gs__gate_quiesce). A thread holds tickets: launches the gate admitted to it ahead,
 * for as long as the gate's word stays what it was (any opening, closing or extension voids
 * them), taken in batches of a sixteenth of what is left of the round with one atomic
 * operation; a launch on a ticket counts itself entered and done in the record and pays no
 * atomic operation, and the agent makes the entries it has to see visible with an asymmetric
 * barrier (membarrier) after it closes the gate. A thread claims a record at its first launch
 * past a gate and frees it when it exits; the next owner goes on counting from there, so the
 * sums only grow. Without a free record, or without membarrier, a thread takes every launch
 * through the gate's shared counter (overflow). */
typedef struct gate_thread {
    uint32_t done[GS_MAX_DEVICES];    /* launches finished (or refused after entering) */
    uint32_t entered[GS_MAX_DEVICES]; /* launches entered on a ticket */
    uint32_t word[GS_MAX_DEVICES];    /* the gate's word the tickets are for */
    uint32_t tickets[GS_MAX_DEVICES];
    int used;
} __attribute__((aligned(64))) gate_thread_t;

static gate_thread_t gate_threads[GATE_THREADS];
static gate_thread_t overflow;
static uint32_t gate_threads_seen; /* records ever claimed: the ones to sum */
static pthread_key_t gate_key;
static pthread_once_t gate_key_once = PTHREAD_ONCE_INIT;
static __thread gate_thread_t *my_record __attribute__((tls_model("initial-exec")));

int64_t gs__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long futex(uint32_t *word, int op, uint32_t value, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, value, timeout, NULL, 0);
}

/* ---- configuration (read at start-up with the rest of GPUSHARE_*) ---- */

static CUresult bad_value(const char *variable, const char *value, const char *why)
{
    gs_error("%s=\"%s\" is invalid: %s; refusing to run without the lease's limits", variable,
             value, why);
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult read_percent(const char *variable, uint32_t *out)
{
    char err[GS_QTY_ERR_MAX];
    const char *text = getenv(variable);
    *out = 0;
    if (text != NULL && *text != '\0' && gs_qty_parse_percent(text, 0, out, err, sizeof(err)) != 0)
        return bad_value(variable, text, err);
    return CUDA_SUCCESS;
}

CUresult gs__compute_config(uint32_t region_share)
{
    compute_config_t *cfg = &compute.cfg;
    CUresult result = read_percent("GPUSHARE_COMPUTE_SHARE", &cfg->guarantee);
    if (result == CUDA_SUCCESS)
        result = read_percent("GPUSHARE_COMPUTE_MAX", &cfg->cap);
    if (result != CUDA_SUCCESS)
        return result;
    if (region_share != 0)
        cfg->guarantee = region_share; /* the lease's region (made by gpushared) decides */
    if (cfg->cap != 0 && cfg->cap < cfg->guarantee)
        return bad_value("GPUSHARE_COMPUTE_MAX", getenv("GPUSHARE_COMPUTE_MAX"),
                         "below the lease's guaranteed share GPUSHARE_COMPUTE_SHARE");
    const char *gate = getenv("GPUSHARE_GATE");
    cfg->mps = gate != NULL && strcmp(gate, "mps") == 0;
    cfg->hardware = gate != NULL && strcmp(gate, "none") == 0;
    if (gate != NULL && *gate != '\0' && !cfg->mps && !cfg->hardware)
        return bad_value("GPUSHARE_GATE", gate, "must be mps or none (or unset)");
    const char *region = getenv("GPUSHARE_REGION");
    cfg->spec[0] = '\0';
    if (region != NULL && strncmp(region, DAEMON_PREFIX, strlen(DAEMON_PREFIX)) == 0)
        snprintf(cfg->spec, sizeof(cfg->spec), "%s", region);
    return CUDA_SUCCESS;
}

/* ---- taking part in the schedulers (at cuInit) ---- */

static CUresult cannot_enforce(const char *what, const char *why)
{
    gs_error("compute share (GPUSHARE_COMPUTE_SHARE=%u, GPUSHARE_COMPUTE_MAX=%u) cannot be "
             "enforced on %s: %s; refusing to run",
             compute.cfg.guarantee, compute.cfg.cap, what, why);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* Under MPS the daemon's active thread percentage is the share: the process must be a client. */
static CUresult check_mps(void)
{
    const gs__real_t *real = gs__real();
    const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    int enabled = 0;
    if (pct == NULL || *pct == '\0')
        return cannot_enforce("an MPS GPU", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is not set");
    if (real->cuDeviceGetAttribute == NULL ||
        real->cuDeviceGetAttribute(&enabled, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, 0) != CUDA_SUCCESS ||
        !enabled)
        return cannot_enforce("an MPS GPU", "this process is not served by the MPS daemon");
    gs_info("compute share: MPS active thread percentage %s%%", pct);
    return CUDA_SUCCESS;
}

static void format_uuid(const CUuuid *u, char *out, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* Asks gpushared to take part on dev's GPU. Returns 0 (dev->member set when its launches are
 * scheduled), or a code with one line in err. */
static int take_part(gs__sched_dev_t *dev, char *err, size_t errlen)
{
    gs_smember_terms_t terms;
    dev->member = NULL;
    int result = gs_smember_join(compute.cfg.spec, dev->uuid, dev->cap_pct, &dev->member, &terms,
                                 err, errlen);
    if (result == 0 && terms.gate)
        gs_info("compute: %s scheduled by gpushared (guarantee %u%%, cap %u%%)", dev->uuid,
                terms.share.guarantee / 10, terms.share.cap / 10);
    return result;
}

/* Takes part in the scheduler of ordinal's GPU. Returns CUDA_SUCCESS (also when a process without
 * a share cannot take part there) or the fail-closed error. */
static CUresult setup_device(int ordinal, int required)
{
    const gs__real_t *real = gs__real();
    gs__sched_dev_t *dev = &compute.devs[ordinal];
    CUuuid uuid;
    char err[512];
    if (real->cuDeviceGet(&dev->device, ordinal) != CUDA_SUCCESS ||
        real->cuDeviceGetUuid_v2 == NULL ||
        real->cuDeviceGetUuid_v2(&uuid, dev->device) != CUDA_SUCCESS)
        return required ? cannot_enforce("a GPU", "the driver does not tell its UUID")
                        : CUDA_SUCCESS;
    format_uuid(&uuid, dev->uuid, sizeof(dev->uuid));
    dev->cap_pct = compute.cfg.cap;
    dev->ordinal = ordinal;
    dev->gate.ordinal = ordinal;
    int result = take_part(dev, err, sizeof(err));
    if (result != 0)
        return required ? cannot_enforce(dev->uuid, err) : CUDA_SUCCESS;
    if (dev->member == NULL)
        return CUDA_SUCCESS; /* gpushared does not schedule this GPU's launches */
    dev->gate.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (dev->gate.wake_fd < 0 || !gs__agent_start(dev)) {
        gs_smember_free(dev->member);
        dev->member = NULL;
        return cannot_enforce(dev->uuid, "cannot start the scheduler's thread");
    }
    dev->scheduled = 1;
    return CUDA_SUCCESS;
}

static void setup(void)
{
    const compute_config_t *cfg = &compute.cfg;
    int required = cfg->guarantee > 0 || cfg->cap > 0;
    compute.setup_result = CUDA_SUCCESS;
    if (cfg->mps) {
        if (required)
            compute.setup_result = check_mps();
        return;
    }
    if (cfg->hardware) {
        if (required)
            compute.setup_result =
                cannot_enforce("this GPU", "the hardware partitions its SMs (GPUSHARE_GATE=none: a "
                                           "MIG instance's compute is its own slices)");
        return; /* such GPUs never share SMs: nothing to schedule */
    }
    if (cfg->spec[0] == '\0') {
        if (required)
            compute.setup_result = cannot_enforce(
                "this node", "compute shares are gpushared's: run the job with gpushare run");
        return;
    }
    const gs__real_t *real = gs__real();
    int count = 0;
    if (real->cuDeviceGetCount == NULL || real->cuDeviceGet == NULL ||
        real->cuDeviceGetCount(&count) != CUDA_SUCCESS)
        count = 0;
    if (count > GS_MAX_DEVICES)
        count = GS_MAX_DEVICES;
    int scheduled = 0;
    for (int ordinal = 0; ordinal < count && compute.setup_result == CUDA_SUCCESS; ordinal++) {
        compute.setup_result = setup_device(ordinal, required);
        scheduled += compute.devs[ordinal].scheduled;
    }
    compute.single = count == 1;
    __atomic_store_n(&compute.active, compute.setup_result == CUDA_SUCCESS && scheduled > 0,
                     __ATOMIC_RELEASE);
}

CUresult gs__compute_setup(void)
{
    pthread_once(&compute.once, setup);
    return compute.setup_result;
}

gs__sched_dev_t *gs__compute_dev(int ordinal)
{
    if (ordinal < 0 || ordinal >= GS_MAX_DEVICES || !compute.devs[ordinal].scheduled)
        return NULL;
    return &compute.devs[ordinal];
}

int gs__compute_rejoin(gs__sched_dev_t *dev)
{
    gs_smember_free(dev->member);
    dev->member = NULL;
    gs__gate_open(&dev->gate, UINT32_MAX); /* unscheduled meanwhile: launches go on */
    gs_warn("compute: lost gpushared's scheduler of %s; launches run unscheduled until it is "
            "back",
            dev->uuid);
    char err[512];
    for (int64_t nap = REJOIN_FIRST_NS;; nap = nap * 2 > REJOIN_MAX_NS ? REJOIN_MAX_NS : nap * 2) {
        struct timespec ts = {.tv_sec = nap / 1000000000, .tv_nsec = nap % 1000000000};
        nanosleep(&ts, NULL);
        gs__gate_open(&dev->gate, UINT32_MAX); /* (the count of launches starts again) */
        int result = take_part(dev, err, sizeof(err));
        if (result == 0 && dev->member != NULL)
            return 0;
        if (result == 0 || result == GS_ENOENT || result == GS_EINVAL || result == GS_EACCES) {
            gs_warn("compute: %s stays unscheduled: %s", dev->uuid,
                    result == 0 ? "gpushared no longer schedules it" : err);
            return GS_ENOENT;
        }
    }
}

void gs__compute_after_fork(void)
{
    /* The driver refuses a child whose parent initialised it, and the agents are not copied:
     * the child closes the parent's channels (gpushared must see the parent leave when it
     * exits) and forgets its memberships. */
    __atomic_store_n(&compute.active, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < GS_MAX_DEVICES; i++) {
        gs_smember_forget(compute.devs[i].member);
        if (compute.devs[i].scheduled && compute.devs[i].gate.wake_fd >= 0)
            close(compute.devs[i].gate.wake_fd);
        compute.devs[i].scheduled = 0;
    }
}

void gs__compute_exit(void)
{
    /* Nothing to do: the channels close with the process, and gpushared hands a slot it ran in
     * to the next lease at once. */
}

/* ---- the gate ---- */

static gs__sched_dev_t *current_dev(void)
{
    if (compute.single)
        return &compute.devs[0];
    CUdevice device;
    const gs__real_t *real = gs__real();
    if (real->cuCtxGetDevice == NULL || real->cuCtxGetDevice(&device) != CUDA_SUCCESS)
        return NULL;
    return gs__compute_dev(device);
}

/* Records when the first launch after the gate opened went through. */
static void note_first(gs__gate_t *gate)
{
    int64_t none = 0;
    __atomic_compare_exchange_n(&gate->first_ns, &none, gs__mono_ns(), 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
}

static void free_record(void *record)
{
    __atomic_store_n(&((gate_thread_t *)record)->used, 0, __ATOMIC_RELEASE);
}

static void make_gate_key(void)
{
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0 ||
        pthread_key_create(&gate_key, free_record) != 0)
        gate_key = (pthread_key_t)-1;
}

/* The calling thread's record, claimed at its first launch (overflow when none is free). */
static gate_thread_t *claim_record(void)
{
    pthread_once(&gate_key_once, make_gate_key);
    my_record = &overflow;
    for (uint32_t i = 0; i < GATE_THREADS && gate_key != (pthread_key_t)-1; i++) {
        int none = 0;
        if (!__atomic_compare_exchange_n(&gate_threads[i].used, &none, 1, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED))
            continue;
        if (pthread_setspecific(gate_key, &gate_threads[i]) != 0) {
            free_record(&gate_threads[i]);
            break;
        }
        memset(gate_threads[i].tickets, 0, sizeof(gate_threads[i].tickets));
        uint32_t seen = __atomic_load_n(&gate_threads_seen, __ATOMIC_RELAXED);
        while (seen < i + 1 && !__atomic_compare_exchange_n(&gate_threads_seen, &seen, i + 1, 0,
                                                            __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            ;
        my_record = &gate_threads[i];
        break;
    }
    return my_record;
}

static void count(uint32_t *counter)
{
    __atomic_store_n(counter, *counter + 1, __ATOMIC_RELEASE);
}

/* After a launch admitted through the shared counter with word open: takes a batch of tickets
 * for the thread's next launches while the word lasts (none when the round is nearly spent). */
static void take_tickets(gs__gate_t *gate, gate_thread_t *mine, uint32_t word, uint32_t used)
{
    uint32_t limit = __atomic_load_n(&gate->limit, __ATOMIC_ACQUIRE);
    uint32_t batch = used < limit ? (limit - used) / TICKET_SHARE : 0;
    batch = batch > TICKETS_MAX ? TICKETS_MAX : batch;
    if (mine == &overflow || batch == 0)
        return;
    uint64_t add = (uint64_t)batch * GS_GATE_LAUNCH;
    uint64_t ctr = __atomic_fetch_add(&gate->ctr, add, __ATOMIC_SEQ_CST);
    if ((uint32_t)(ctr >> 32) + batch > limit ||
        __atomic_load_n(&gate->word, __ATOMIC_SEQ_CST) != word) {
        __atomic_fetch_sub(&gate->ctr, add, __ATOMIC_RELEASE); /* too late: give them back */
        return;
    }
    mine->word[gate->ordinal] = word;
    mine->tickets[gate->ordinal] = batch;
}

/* A launch through the gate's shared counter (and the wait when it is closed or spent). */
static gs__gate_t *enter_counted(gs__gate_t *gate, gate_thread_t *mine)
{
    uint64_t ctr = __atomic_fetch_add(&gate->ctr, GS_GATE_LAUNCH + 1, __ATOMIC_SEQ_CST);
    uint32_t word = __atomic_load_n(&gate->word, __ATOMIC_SEQ_CST);
    if (__builtin_expect((word & 1) && (uint32_t)(ctr >> 32) <
                                           __atomic_load_n(&gate->limit, __ATOMIC_ACQUIRE),
                         1)) {
        if (__builtin_expect(__atomic_load_n(&gate->first_ns, __ATOMIC_RELAXED) == 0, 0))
            note_first(gate);
        take_tickets(gate, mine, word, (uint32_t)(ctr >> 32) + 1);
        return gate;
    }
    __atomic_fetch_sub(&gate->ctr, GS_GATE_LAUNCH + 1, __ATOMIC_RELEASE); /* not admitted */
    gs__gate_wait(gate);
    return gate;
}

/* A launch on a ticket: entered in the thread's record before the gate's word is read (the
 * agent's membarrier orders the two against its closing). Returns 0 when it has none. */
static int enter_on_ticket(gs__gate_t *gate, gate_thread_t *mine)
{
    int o = gate->ordinal;
    if (mine->tickets[o] == 0)
        return 0;
    __atomic_store_n(&mine->entered[o], mine->entered[o] + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&gate->word, __ATOMIC_RELAXED) != mine->word[o], 0)) {
        mine->tickets[o] = 0; /* the gate moved on: they are void */
        count(&mine->done[o]);
        return 0;
    }
    mine->tickets[o]--;
    return 1;
}

gs__gate_t *gs__compute_enter(void)
{
    if (__builtin_expect(!__atomic_load_n(&compute.active, __ATOMIC_RELAXED), 1))
        return NULL;
    gs__sched_dev_t *dev = current_dev();
    if (dev == NULL)
        return NULL;
    gs__gate_t *gate = &dev->gate;
    gate_thread_t *mine = my_record;
    if (__builtin_expect(mine == NULL, 0))
        mine = claim_record();
    if (__builtin_expect(mine != &overflow && enter_on_ticket(gate, mine), 1))
        return gate;
    return enter_counted(gate, mine);
}

void gs__compute_leave(gs__gate_t *gate)
{
    if (gate == NULL)
        return;
    gate_thread_t *mine = my_record;
    if (__builtin_expect(mine == &overflow, 0)) {
        __atomic_fetch_sub(&gate->ctr, 1, __ATOMIC_RELEASE);
        return;
    }
    count(&mine->done[gate->ordinal]);
}

/* Launches finished past the gates of ordinal, and those entered on tickets, summed over the
 * records. */
static uint32_t launches_done(int ordinal)
{
    uint32_t sum = 0, seen = __atomic_load_n(&gate_threads_seen, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < seen; i++)
        sum += __atomic_load_n(&gate_threads[i].done[ordinal], __ATOMIC_ACQUIRE);
    return sum;
}

static uint32_t launches_on_tickets(int ordinal)
{
    uint32_t sum = 0, seen = __atomic_load_n(&gate_threads_seen, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < seen; i++)
        sum += __atomic_load_n(&gate_threads[i].entered[ordinal], __ATOMIC_RELAXED);
    return sum;
}

void gs__gate_wait(gs__gate_t *gate)
{
    __atomic_fetch_add(&gate->blocked, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        uint32_t word = __atomic_load_n(&gate->word, __ATOMIC_SEQ_CST);
        if (word & 1) {
            uint64_t ctr = __atomic_fetch_add(&gate->ctr, GS_GATE_LAUNCH + 1, __ATOMIC_SEQ_CST);
            uint32_t again = __atomic_load_n(&gate->word, __ATOMIC_SEQ_CST);
            if ((again & 1) &&
                (uint32_t)(ctr >> 32) < __atomic_load_n(&gate->limit, __ATOMIC_ACQUIRE)) {
                note_first(gate);
                break;
            }
            __atomic_fetch_sub(&gate->ctr, GS_GATE_LAUNCH + 1, __ATOMIC_RELEASE);
            word = again;
        }
        uint64_t one = 1;
        if (write(gate->wake_fd, &one, sizeof(one)) < 0)
            gs_debug("compute: cannot wake the agent: %s", strerror(errno));
        struct timespec slice = {.tv_sec = 0, .tv_nsec = WAIT_SLICE_NS};
        futex(&gate->word, FUTEX_WAIT_PRIVATE, word, &slice);
    }
    __atomic_fetch_sub(&gate->blocked, 1, __ATOMIC_SEQ_CST);
}

static void publish_word(gs__gate_t *gate, int open)
{
    uint32_t word = __atomic_load_n(&gate->word, __ATOMIC_RELAXED);
    uint32_t next = ((word >> 1) + 1) << 1 | (open ? 1u : 0u);
    __atomic_store_n(&gate->word, next, __ATOMIC_SEQ_CST);
    futex(&gate->word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL);
}

void gs__gate_open(gs__gate_t *gate, uint32_t limit)
{
    __atomic_fetch_and(&gate->ctr, GS_GATE_INFLIGHT, __ATOMIC_SEQ_CST);
    __atomic_store_n(&gate->first_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&gate->limit, limit, __ATOMIC_RELEASE);
    publish_word(gate, 1);
}

void gs__gate_close(gs__gate_t *gate)
{
    publish_word(gate, 0);
}

void gs__gate_extend(gs__gate_t *gate, uint32_t limit)
{
    __atomic_store_n(&gate->limit, limit, __ATOMIC_RELEASE);
    publish_word(gate, 1); /* a new word: a thread about to sleep on the old one will not */
}

uint32_t gs__gate_launches(const gs__gate_t *gate)
{
    return (uint32_t)(__atomic_load_n(&gate->ctr, __ATOMIC_ACQUIRE) >> 32);
}

uint32_t gs__gate_activity(const gs__gate_t *gate)
{
    return gs__gate_launches(gate) + launches_on_tickets(gate->ordinal);
}

/* The launches done are read before the entries: each one done has entered before, so the two
 * are equal only when none is in progress (a launch that enters after the gate closed sees it
 * closed and takes its entry back). */
void gs__gate_quiesce(gs__gate_t *gate)
{
    int64_t deadline = gs__mono_ns() + WAIT_SLICE_NS;
    /* Every thread's entry on a ticket before it read the word open is visible from here on;
     * one that reads it after sees the gate closed. */
    if (__atomic_load_n(&gate_threads_seen, __ATOMIC_ACQUIRE) > 0 &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        gs_error("compute: membarrier failed: %s", strerror(errno));
    for (;;) {
        uint32_t done = launches_done(gate->ordinal);
        uint32_t entered =
            launches_on_tickets(gate->ordinal) +
            (uint32_t)(__atomic_load_n(&gate->ctr, __ATOMIC_SEQ_CST) & GS_GATE_INFLIGHT);
        if (entered == done || gs__mono_ns() >= deadline)
            return;
        sched_yield();
    }
}
