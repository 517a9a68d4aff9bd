/* SPDX-License-Identifier: Apache-2.0 */
/* A process-local lock for critical sections of a few dozen instructions (no system call when
 * free; yields the CPU when the holder was preempted). */
#ifndef GPUSHARE_SPINLOCK_H
#define GPUSHARE_SPINLOCK_H

#include <sched.h>

typedef struct gs_spinlock {
    int locked;
} gs_spinlock_t;

#define GS_SPINLOCK_INIT                                                                           \
    {                                                                                              \
        0                                                                                          \
    }

static inline void gs_spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Takes the lock. Thread-safe; never fails. Not async-signal-safe. */
static inline void gs_spin_lock(gs_spinlock_t *lock)
{
    unsigned spins = 0;
    while (__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&lock->locked, __ATOMIC_RELAXED)) {
            if (++spins < 64)
                gs_spin_pause();
            else
                sched_yield();
        }
    }
}

/* Takes the lock if it is free; returns nonzero when taken. */
static inline int gs_spin_trylock(gs_spinlock_t *lock)
{
    return !__atomic_load_n(&lock->locked, __ATOMIC_RELAXED) &&
           !__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE);
}

static inline void gs_spin_unlock(gs_spinlock_t *lock)
{
    __atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

/* Makes the lock free again, whatever its state: only for a forked child, where the thread that
 * may have held it does not exist. */
static inline void gs_spin_reset(gs_spinlock_t *lock)
{
    __atomic_store_n(&lock->locked, 0, __ATOMIC_RELAXED);
}

#endif
