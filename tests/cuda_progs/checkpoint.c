/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA's checkpoint API on gpusim, called by one process on another (issue 40). Usage:
 * checkpoint SCENARIO, one of
 *   states   every transition RUNNING -> LOCKED -> CHECKPOINTED -> LOCKED -> RUNNING, the calls
 *            each state refuses (CUDA_ERROR_ILLEGAL_STATE), bad pids and arguments, the restore
 *            thread's id; the target's memory (its context included) is free on the device while
 *            checkpointed and its data intact after (checksums of every allocation)
 *   blocking the target's CUDA calls block while it is locked and return after the unlock
 *   timeout  a lock with a timeout fails (CUDA_ERROR_NOT_READY) while a 2 s kernel runs, and
 *            leaves the target running; without one it waits for the kernel
 *   move     (two H100s) restore onto the other GPU: the memory and the target's device 0 move
 *            there, pointers and data intact; pairs that leave out a checkpointed GPU are refused
 *   model    (H100 + A100) a GPU pair of another model is CUDA_ERROR_INVALID_VALUE; the target
 *            stays checkpointed and restores where it was
 *   oom      a restore that does not fit is CUDA_ERROR_OUT_OF_MEMORY and stays checkpointed
 *   fault    (GPUSIM_CUDA_FAULTS) an injected checkpoint fault leaves the target FAILED
 * The parent forks the target before its own cuInit; they talk through two pipes (one-letter
 * commands, one-line answers). Exits 0 when every check holds. */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define BIG    (64 * MIB)                 /* an mmap'd allocation, written on a few pages only */
#define SMALL  4096                       /* a malloc'd one */
#define HELD   (BIG + 256 * 1024 + SMALL) /* with the managed one below */
#define ANSWER 128

static const char image[] = "gpusim-module 1\nkernel long 2s\n";

typedef struct buffers {
    CUdeviceptr big, small, managed;
} buffers_t;

typedef struct target {
    pid_t pid;
    int to, from; /* command pipe (write end), answer pipe (read end) */
} target_t;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* FNV-1a over a device range, read back through cuMemcpyDtoH. */
static uint64_t checksum(CUdeviceptr p, size_t n, uint64_t h)
{
    static unsigned char chunk[1 << 20];
    for (size_t off = 0; off < n; off += sizeof(chunk)) {
        size_t k = n - off < sizeof(chunk) ? n - off : sizeof(chunk);
        CHECK(cuMemcpyDtoH(chunk, p + off, k));
        for (size_t i = 0; i < k; i++)
            h = (h ^ chunk[i]) * 1099511628211ull;
    }
    return h;
}

static uint64_t checksum_all(const buffers_t *b)
{
    uint64_t h = checksum(b->big, BIG, 14695981039346656037ull);
    h = checksum(b->small, SMALL, h);
    return checksum(b->managed, 256 * 1024, h);
}

static void fill(CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char page[4096];
    for (size_t i = 0; i < sizeof(page); i++)
        page[i] = (unsigned char)(seed * 31 + i * 7 + 1);
    for (size_t off = 0; off<n; off += n / 4> sizeof(page) ? n / 4 : sizeof(page))
        CHECK(cuMemcpyHtoD(p + off, page, n - off < sizeof(page) ? n - off : sizeof(page)));
}

/* Makes device ord's primary context current. */
static void use_device(int ord)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuDeviceGet(&dev, ord));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
}

static void target_setup(buffers_t *b, CUfunction *longk)
{
    CUmodule mod;
    CHECK(cuInit(0));
    use_device(0);
    CHECK(cuMemAlloc(&b->big, BIG));
    CHECK(cuMemAlloc(&b->small, SMALL));
    CHECK(cuMemAllocManaged(&b->managed, 256 * 1024, CU_MEM_ATTACH_GLOBAL));
    fill(b->big, BIG, 1);
    fill(b->small, SMALL, 2);
    memset((void *)b->managed, 0x5a, 4096); /* managed memory: written by the host directly */
    CHECK(cuModuleLoadData(&mod, image));
    CHECK(cuModuleGetFunction(longk, mod, "long"));
}

/* Answers one command: c checksum, k launch the 2 s kernel, i cuMemGetInfo's free, u the UUID's
 * first bytes of device 0, r the result of a call (cuCtxSynchronize), q quit. */
static int target_answer(char cmd, const buffers_t *b, CUfunction longk, char *out)
{
    size_t free_b = 0, total = 0;
    CUuuid uuid;
    switch (cmd) {
    case 'c':
        return snprintf(out, ANSWER, "%llx\n", (unsigned long long)checksum_all(b));
    case 'k':
        CHECK(cuLaunchKernel(longk, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        return snprintf(out, ANSWER, "launched\n");
    case 'i':
        CHECK(cuMemGetInfo(&free_b, &total));
        return snprintf(out, ANSWER, "%zu\n", free_b);
    case 'u':
        CHECK(cuDeviceGetUuid(&uuid, 0));
        return snprintf(out, ANSWER, "%02x%02x%02x%02x\n", (unsigned char)uuid.bytes[0],
                        (unsigned char)uuid.bytes[1], (unsigned char)uuid.bytes[2],
                        (unsigned char)uuid.bytes[3]);
    case 'r':
        return snprintf(out, ANSWER, "%d\n", (int)cuCtxSynchronize());
    default:
        exit(0);
    }
}

static void target_main(int in, int out)
{
    buffers_t b;
    CUfunction longk;
    target_setup(&b, &longk);
    char cmd, answer[ANSWER];
    int n = snprintf(answer, sizeof(answer), "%llx\n", (unsigned long long)checksum_all(&b));
    CHECK_TRUE(write(out, answer, (size_t)n) == n);
    while (read(in, &cmd, 1) == 1) {
        n = target_answer(cmd, &b, longk, answer);
        CHECK_TRUE(write(out, answer, (size_t)n) == n);
    }
    exit(0);
}

/* Reads one answer line, waiting at most timeout_ms; returns 0, or -1 when none came. */
static int read_answer(const target_t *t, char *line, int timeout_ms)
{
    size_t n = 0;
    while (n + 1 < ANSWER) {
        struct pollfd p = {.fd = t->from, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) != 1 || read(t->from, line + n, 1) != 1)
            return -1;
        if (line[n++] == '\n')
            break;
    }
    line[n] = '\0';
    return 0;
}

static void ask(const target_t *t, char cmd, char *line)
{
    CHECK_TRUE(write(t->to, &cmd, 1) == 1);
    CHECK_TRUE(read_answer(t, line, 10000) == 0);
}

static unsigned long long ask_number(const target_t *t, char cmd)
{
    char line[ANSWER];
    ask(t, cmd, line);
    return strtoull(line, NULL, 0);
}

static target_t start_target(char *sum)
{
    int to[2], from[2];
    CHECK_TRUE(pipe(to) == 0 && pipe(from) == 0);
    target_t t = {.pid = fork()};
    CHECK_TRUE(t.pid >= 0);
    if (t.pid == 0) {
        close(to[1]);
        close(from[0]);
        target_main(to[0], from[1]);
    }
    close(to[0]);
    close(from[1]);
    t.to = to[1];
    t.from = from[0];
    CHECK_TRUE(read_answer(&t, sum, 10000) == 0);
    return t;
}

static void stop_target(target_t *t)
{
    char q = 'q';
    int status = 0;
    CHECK_TRUE(write(t->to, &q, 1) == 1);
    CHECK_TRUE(waitpid(t->pid, &status, 0) == t->pid);
    CHECK_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Checks that the target's data are those it started with (before), then stops it. */
static void finish_intact(target_t *t, const char *before)
{
    char after[ANSWER];
    ask(t, 'c', after);
    CHECK_TRUE(strcmp(before, after) == 0);
    stop_target(t);
}

static CUprocessState state_of(pid_t pid)
{
    CUprocessState s = CU_PROCESS_STATE_FAILED;
    CHECK(cuCheckpointProcessGetState(pid, &s));
    return s;
}

/* The free memory of device ord as this process sees it. */
static size_t free_on(int ord)
{
    size_t free_b = 0, total = 0;
    use_device(ord);
    CHECK(cuMemGetInfo(&free_b, &total));
    return free_b;
}

static void suspend(pid_t pid)
{
    CHECK(cuCheckpointProcessLock(pid, NULL));
    CHECK_EQ(state_of(pid), CU_PROCESS_STATE_LOCKED);
    CHECK(cuCheckpointProcessCheckpoint(pid, NULL));
    CHECK_EQ(state_of(pid), CU_PROCESS_STATE_CHECKPOINTED);
}

static void resume(pid_t pid, CUcheckpointRestoreArgs *args)
{
    CHECK(cuCheckpointProcessRestore(pid, args));
    CHECK_EQ(state_of(pid), CU_PROCESS_STATE_LOCKED);
    CHECK(cuCheckpointProcessUnlock(pid, NULL));
    CHECK_EQ(state_of(pid), CU_PROCESS_STATE_RUNNING);
}

static void refusals_running(pid_t pid)
{
    CUprocessState s;
    int tid = 0;
    CHECK_RESULT(cuCheckpointProcessGetState(getpid() + 100000, &s), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuCheckpointProcessGetState(pid, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_RESULT(cuCheckpointProcessCheckpoint(pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_RESULT(cuCheckpointProcessRestore(pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_RESULT(cuCheckpointProcessUnlock(pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CUcheckpointLockArgs bad = {.reserved0 = 1};
    CHECK_RESULT(cuCheckpointProcessLock(pid, &bad), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuCheckpointProcessGetRestoreThreadId(pid, &tid));
    char task[64];
    snprintf(task, sizeof(task), "/proc/%d/task/%d", (int)pid, tid);
    CHECK_TRUE(tid > 0 && tid != pid && access(task, F_OK) == 0);
}

static void scenario_states(void)
{
    char before[ANSWER];
    CUprocessState s;
    CHECK_RESULT(cuCheckpointProcessGetState(getpid(), &s), CUDA_ERROR_NOT_INITIALIZED);
    target_t t = start_target(before);
    CHECK(cuInit(0));
    size_t with = free_on(0);
    CHECK_EQ(state_of(t.pid), CU_PROCESS_STATE_RUNNING);
    refusals_running(t.pid);
    CHECK(cuCheckpointProcessLock(t.pid, NULL));
    CHECK_RESULT(cuCheckpointProcessLock(t.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_RESULT(cuCheckpointProcessRestore(t.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK(cuCheckpointProcessCheckpoint(t.pid, NULL));
    CHECK_EQ(state_of(t.pid), CU_PROCESS_STATE_CHECKPOINTED);
    CHECK_RESULT(cuCheckpointProcessUnlock(t.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_RESULT(cuCheckpointProcessCheckpoint(t.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_EQ(free_on(0), with + HELD + H100_CONTEXT); /* its context's memory too */
    resume(t.pid, NULL);
    CHECK_EQ(free_on(0), with);
    finish_intact(&t, before);
}

static void scenario_blocking(void)
{
    char sum[ANSWER], line[ANSWER];
    target_t t = start_target(sum);
    CHECK(cuInit(0));
    suspend(t.pid);
    char cmd = 'i';
    CHECK_TRUE(write(t.to, &cmd, 1) == 1);
    CHECK_TRUE(read_answer(&t, line, 300) != 0); /* blocked while checkpointed */
    CHECK(cuCheckpointProcessRestore(t.pid, NULL));
    CHECK_TRUE(read_answer(&t, line, 300) != 0); /* and while locked */
    CHECK(cuCheckpointProcessUnlock(t.pid, NULL));
    CHECK_TRUE(read_answer(&t, line, 10000) == 0);
    CHECK_EQ(strtoull(line, NULL, 0), H100_TOTAL - HELD - H100_CONTEXT);
    stop_target(&t);
}

static void scenario_timeout(void)
{
    char sum[ANSWER], line[ANSWER];
    target_t t = start_target(sum);
    CHECK(cuInit(0));
    ask(&t, 'k', line);
    long long start = now_ms();
    CUcheckpointLockArgs args = {.timeoutMs = 200};
    CHECK_RESULT(cuCheckpointProcessLock(t.pid, &args), CUDA_ERROR_NOT_READY);
    long long took = now_ms() - start;
    CHECK_TRUE(took >= 200 && took < 1500);
    CHECK_EQ(state_of(t.pid), CU_PROCESS_STATE_RUNNING);
    CHECK_TRUE(ask_number(&t, 'i') > 0); /* still answers */
    CHECK(cuCheckpointProcessLock(t.pid, NULL));
    CHECK_TRUE(now_ms() - start >= 1800); /* waited for the kernel */
    CHECK(cuCheckpointProcessUnlock(t.pid, NULL));
    stop_target(&t);
}

static CUcheckpointGpuPair pair(int from, int to)
{
    CUcheckpointGpuPair p;
    CUdevice a, b;
    CHECK(cuDeviceGet(&a, from));
    CHECK(cuDeviceGet(&b, to));
    CHECK(cuDeviceGetUuid(&p.oldUuid, a));
    CHECK(cuDeviceGetUuid(&p.newUuid, b));
    return p;
}

static void scenario_move(void)
{
    char before[ANSWER], uuid[ANSWER];
    target_t t = start_target(before);
    CHECK(cuInit(0));
    size_t free0 = free_on(0), free1 = free_on(1);
    suspend(t.pid);
    CUcheckpointGpuPair other = pair(1, 1); /* leaves out the checkpointed GPU 0 */
    CUcheckpointRestoreArgs args = {.gpuPairs = &other, .gpuPairsCount = 1};
    CHECK_RESULT(cuCheckpointProcessRestore(t.pid, &args), CUDA_ERROR_INVALID_VALUE);
    CUcheckpointGpuPair p = pair(0, 1);
    args.gpuPairs = &p;
    resume(t.pid, &args);
    CHECK_EQ(free_on(0), free0 + HELD + H100_CONTEXT);
    CHECK_EQ(free_on(1), free1 - HELD - H100_CONTEXT);
    ask(&t, 'u', uuid);
    char want[ANSWER];
    snprintf(want, sizeof(want), "%02x%02x%02x%02x\n", (unsigned char)p.newUuid.bytes[0],
             (unsigned char)p.newUuid.bytes[1], (unsigned char)p.newUuid.bytes[2],
             (unsigned char)p.newUuid.bytes[3]);
    CHECK_TRUE(strcmp(uuid, want) == 0); /* its device 0 is now the other GPU */
    finish_intact(&t, before);
}

static void scenario_model(void)
{
    char before[ANSWER];
    target_t t = start_target(before);
    CHECK(cuInit(0));
    size_t free0 = free_on(0);
    suspend(t.pid);
    CUcheckpointGpuPair p = pair(0, 1);
    CUcheckpointRestoreArgs args = {.gpuPairs = &p, .gpuPairsCount = 1};
    CHECK_RESULT(cuCheckpointProcessRestore(t.pid, &args), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(state_of(t.pid), CU_PROCESS_STATE_CHECKPOINTED);
    args.gpuPairs = NULL;
    CHECK_RESULT(cuCheckpointProcessRestore(t.pid, &args), CUDA_ERROR_INVALID_VALUE);
    resume(t.pid, NULL);
    CHECK_EQ(free_on(0), free0);
    finish_intact(&t, before);
}

static void scenario_oom(void)
{
    char before[ANSWER];
    target_t t = start_target(before);
    CHECK(cuInit(0));
    suspend(t.pid);
    CUdeviceptr hog;
    CHECK(cuMemAlloc(&hog, free_on(0) - HELD)); /* leaves less than the target held */
    CHECK_RESULT(cuCheckpointProcessRestore(t.pid, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(state_of(t.pid), CU_PROCESS_STATE_CHECKPOINTED);
    CHECK(cuMemFree(hog));
    resume(t.pid, NULL);
    finish_intact(&t, before);
}

static void scenario_fault(void)
{
    char sum[ANSWER], faults[] = "/tmp/gpusim-faults.XXXXXX";
    int fd = mkstemp(faults);
    static const char rule[] = "# one fault\ncuCheckpointProcessCheckpoint 999\n";
    CHECK_TRUE(fd >= 0 && write(fd, rule, sizeof(rule) - 1) == (ssize_t)(sizeof(rule) - 1));
    close(fd);
    setenv("GPUSIM_CUDA_FAULTS", faults, 1); /* read by this process's checkpoint calls */
    target_t t = start_target(sum);
    CHECK(cuInit(0));
    size_t with = free_on(0);
    CHECK(cuCheckpointProcessLock(t.pid, NULL));
    CHECK_RESULT(cuCheckpointProcessCheckpoint(t.pid, NULL), CUDA_ERROR_UNKNOWN);
    CHECK_EQ(state_of(t.pid), CU_PROCESS_STATE_FAILED);
    CHECK_RESULT(cuCheckpointProcessUnlock(t.pid, NULL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_EQ(free_on(0), with); /* nothing moved */
    CHECK_EQ(ask_number(&t, 'r'), CUDA_ERROR_ILLEGAL_STATE);
    kill(t.pid, SIGKILL);
    waitpid(t.pid, NULL, 0);
    unlink(faults);
}

static const struct {
    const char *name;
    void (*run)(void);
} scenarios[] = {
    {"states", scenario_states}, {"blocking", scenario_blocking}, {"timeout", scenario_timeout},
    {"move", scenario_move},     {"model", scenario_model},       {"oom", scenario_oom},
    {"fault", scenario_fault},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc == 2 && i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].run();
            return 0;
        }
    }
    fprintf(stderr, "usage: checkpoint states|blocking|timeout|move|model|oom|fault\n");
    return 2;
}
