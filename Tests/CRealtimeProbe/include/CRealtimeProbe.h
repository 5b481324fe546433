#ifndef SPINET_CREALTIMEPROBE_H
#define SPINET_CREALTIMEPROBE_H

// Real-time probe for tests: proves by counting that a piece of code
// allocates nothing, takes no lock and makes no system call.
//
// 1. Allocation and lock counting (probe.c interposes malloc & co. and the
//    pthread/semaphore lock functions in the test executable). Counting is
//    per thread and only between spinet_probe_begin() and spinet_probe_end()
//    on that thread, so other threads (the test runner, Dispatch, ...) never
//    disturb a count.
//
// 2. A system-call trap: spinet_probe_run_without_syscalls() runs a function
//    on a fresh thread under a seccomp-BPF filter that traps every system
//    call the function makes (see probe.c for the design and its limits).
//
// Linux only. On other systems the functions exist but report "inactive".

#ifdef __cplusplus
extern "C" {
#endif

/// Zero this thread's counters and start counting on this thread.
void spinet_probe_begin(void);
/// Stop counting on this thread (the counters keep their values).
void spinet_probe_end(void);

/// Calls of malloc, calloc, realloc, reallocarray, posix_memalign,
/// aligned_alloc, memalign, valloc and pvalloc made by this thread since
/// spinet_probe_begin() while counting was on.
unsigned long spinet_probe_allocations(void);
/// Calls of free() with a non-NULL pointer (counted separately, not as
/// allocations).
unsigned long spinet_probe_frees(void);
/// Calls of the pthread mutex/rwlock/spin/condvar wait functions, the
/// semaphore waits and GLib's g_mutex_lock/trylock and g_cond_wait(_until)
/// (every call, also a trylock that fails). Not seen: locks built on futex
/// words directly (Swift's Synchronization.Mutex, the Swift runtime's).
unsigned long spinet_probe_locks(void);

/// A test host's running totals over the counted stretches of one plugin
/// instance (its process or run calls).
typedef struct spinet_probe_totals {
    unsigned long allocations, frees, locks;
    /// The most allocations in one stretch.
    unsigned long max_allocations;
} spinet_probe_totals;

/// Stops counting (spinet_probe_end) and adds the stretch's counts to
/// *totals. Returns the stretch's allocations.
static inline unsigned long spinet_probe_end_adding(spinet_probe_totals *totals) {
    spinet_probe_end();
    unsigned long a = spinet_probe_allocations();
    totals->allocations += a;
    totals->frees += spinet_probe_frees();
    totals->locks += spinet_probe_locks();
    if (a > totals->max_allocations) totals->max_allocations = a;
    return a;
}

/// 1 if the malloc interposition is really in effect in this process: an
/// allocation made by libc itself (strdup) was observed by the probe and the
/// dynamic linker resolves "malloc" to the probe. Else 0.
int spinet_probe_is_active(void);
/// 1 if the dynamic linker resolves pthread_mutex_lock (as other shared
/// libraries see it) to the probe. Else 0.
int spinet_probe_locks_are_interposed(void);

/// Runs fn(ctx) on a fresh thread whose system calls are trapped by a
/// seccomp-BPF filter installed on that thread only. Every system call that
/// fn makes (except rt_sigreturn) is counted and made to fail with ENOSYS
/// instead of being executed. Not seen: what is not a system call (vDSO
/// clock_gettime/gettimeofday, page faults) and other threads' calls. fn must
/// return normally (not pthread_exit) and must not create threads. Returns the number of trapped system calls;
/// *first_syscall (if not NULL) receives the first trapped system-call number,
/// or -1 if there was none. Returns ULONG_MAX if the trap is unavailable (not
/// Linux x86_64, seccomp not permitted, thread creation failed).
unsigned long spinet_probe_run_without_syscalls(void (*fn)(void *), void *ctx, long *first_syscall);

/// Flag for spinet_probe_run_without_syscalls_ex: trapped calls made by fn
/// are counted AND executed (observe mode) instead of failing with ENOSYS.
/// Use it when fn may make system calls whose failure it cannot survive
/// (glibc's malloc crashes if mmap/brk fail with ENOSYS): a regression then
/// gives a count instead of a crash.
#define SPINET_PROBE_SYSCALLS_EXECUTE 1

/// Same as spinet_probe_run_without_syscalls, with `flags` (0 or
/// SPINET_PROBE_SYSCALLS_EXECUTE); stores up to `capacity` (at most 16) of
/// the first trapped system-call numbers in `numbers`, in order, and how many
/// it stored in *stored.
unsigned long spinet_probe_run_without_syscalls_ex(void (*fn)(void *), void *ctx, int flags,
                                                    long *numbers, int capacity, int *stored);

#ifdef __cplusplus
}
#endif

#endif
