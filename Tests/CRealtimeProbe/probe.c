// Real-time probe: counts allocations, lock calls and system calls made by
// the code under test. See include/CRealtimeProbe.h for the API.
//
// ---------------------------------------------------------------------------
// Allocation and lock counting
// ---------------------------------------------------------------------------
// This file defines malloc, calloc, realloc, reallocarray, free,
// posix_memalign, aligned_alloc, memalign, valloc, pvalloc and the lock
// functions with default visibility. Linked into the test executable, they
// take precedence over glibc's for every shared library (libswiftCore,
// libFoundation, libfluidsynth, ... and libc itself, which calls malloc
// through its PLT), because the link editor puts a definition of an
// executable into its dynamic symbol table when a shared library on the link
// line refers to it or defines it too (no --export-dynamic needed; all of
// these show in `nm -D` of the test executable). The tests check the effect
// (spinet_probe_is_active, a Swift Array allocation, NSLock).
//
// The allocation functions forward to glibc's exported __libc_malloc,
// __libc_calloc, __libc_realloc, __libc_free, __libc_memalign,
// __libc_valloc and __libc_pvalloc: no dlsym, so they work from the very
// first call (before any constructor). The lock functions forward to the
// next definition found with dlsym(RTLD_NEXT, ...) (dlvsym for the condition
// variables, whose unversioned name has an old GLIBC_2.2.5 compat version);
// they are resolved lazily on first use (so calls made by other libraries'
// constructors, which run before ours, work) and eagerly by our constructor.
// glibc 2.36 calls no pthread lock function through its PLT, so dlsym cannot
// recurse into a lock wrapper; a thread-local guard turns such a recursion
// into a clear abort instead of a hang should that ever change.
//
// Counters are thread-local (initial-exec TLS: no allocation, no lock, no
// system call to reach them) and only count while the thread's flag is on.
//
// GLib's GMutex/GCond (used by libfluidsynth; futex-based on Linux) are
// interposed the same way when GLib is linked (see below).
//
// Not counted: locks that do not go through these functions -- glibc-internal
// locks (stdio, malloc arenas, dlopen), Swift's Synchronization.Mutex and the
// Swift runtime's own locks (futex words used directly), GLib's internal use
// of its own mutexes, atomics/spin loops written by hand. A contended one of
// those does show up in the system-call trap as futex.
//
// ---------------------------------------------------------------------------
// System-call trap (Linux x86_64)
// ---------------------------------------------------------------------------
// spinet_probe_run_without_syscalls(fn, ctx, &first) creates a fresh pthread.
// That thread warms up its malloc arena (a first malloc in a new thread may
// mmap), then installs a seccomp-BPF filter on itself only (no TSYNC, after
// prctl(PR_SET_NO_NEW_PRIVS)), then runs fn(ctx) with a thread-local
// "counting" flag set.
//
// The filter returns SECCOMP_RET_TRAP for every system call except
//   * rt_sigreturn (needed to return from the SIGSYS handler), and
//   * system calls made from one instruction: the `syscall` in the private
//     stub spinet_probe_raw_syscall below (the filter compares
//     seccomp_data.instruction_pointer with the address right after it).
// A trapped call raises SIGSYS. The process-wide SIGSYS handler (installed
// with sigaction/SA_SIGINFO; SIGSYS that is not ours goes to the previous
// handler):
//   * while fn runs ("counting"): counts the call in a thread-local counter,
//     records the first few numbers, and makes it return -ENOSYS by writing
//     REG_RAX in the ucontext: the call is NOT executed. With
//     SPINET_PROBE_SYSCALLS_EXECUTE it is counted and then executed as below
//     (glibc's malloc, for one, crashes when mmap/brk fail with ENOSYS: in
//     this mode a regression gives a count, not a crashed test process).
//   * after fn returned (thread teardown: glibc blocks signals, madvises the
//     stack, frees TLS, exits): performs the call itself through the stub
//     (allowed by the filter) with the registers from the ucontext and puts
//     the result in REG_RAX -- the thread dies normally. rt_sigprocmask is
//     emulated on the ucontext's saved mask instead (a mask changed inside a
//     handler would be undone by sigreturn), and SIGSYS is never left blocked
//     (a trapped call with SIGSYS blocked kills the process). clone/fork are
//     refused with -ENOSYS. The thread also unblocks SIGSYS before the
//     filter goes on, as it inherits its creator's signal mask.
// So EVERY system call fn makes is detected, except rt_sigreturn. In
// particular futex, mmap/munmap/madvise, write, nanosleep, sched_yield,
// clock_gettime when it is not served by the vDSO, are all trapped.
//
// (In the default mode a trapped call fails with ENOSYS, so fn must tolerate
// that.)
//
// Not detectable, because they are not system calls: clock_gettime and
// gettimeofday/time/getcpu served by the vDSO (the usual case with a TSC or
// kvm-clock clocksource), page faults (first touch of memory), and anything
// done on another thread. A call through the i386 ABI (int 0x80) is trapped
// too (the filter checks the architecture) and always fails with ENOSYS.

#define _GNU_SOURCE 1

#include "CRealtimeProbe.h"

#if defined(__linux__)

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#endif

#define PROBE_TLS __thread __attribute__((tls_model("initial-exec")))
#define PROBE_EXPORT __attribute__((visibility("default"), used))

// ---------------------------------------------------------------------------
// Thread-local counters
// ---------------------------------------------------------------------------

static PROBE_TLS int probe_on;
static PROBE_TLS unsigned long probe_allocs;
static PROBE_TLS unsigned long probe_frees;
static PROBE_TLS unsigned long probe_locks;

void spinet_probe_begin(void) {
    probe_allocs = 0;
    probe_frees = 0;
    probe_locks = 0;
    atomic_signal_fence(memory_order_seq_cst);
    probe_on = 1;
    atomic_signal_fence(memory_order_seq_cst);
}

void spinet_probe_end(void) {
    atomic_signal_fence(memory_order_seq_cst);
    probe_on = 0;
    atomic_signal_fence(memory_order_seq_cst);
}

unsigned long spinet_probe_allocations(void) { return probe_allocs; }
unsigned long spinet_probe_frees(void) { return probe_frees; }
unsigned long spinet_probe_locks(void) { return probe_locks; }

// Under AddressSanitizer or ThreadSanitizer (`swift test --sanitize=...`,
// scripts/sanitizers.sh) the sanitizer's runtime, linked into the same
// executable, intercepts malloc, free and the lock functions itself; a second
// definition here would take memory from glibc that the sanitizer then frees
// (a crash at start-up) and hide locks from ThreadSanitizer. So nothing is
// interposed there: the probe reports itself inactive, counts nothing, and
// the tests that need it are skipped. The system-call trap still works.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PROBE_UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PROBE_UNDER_SANITIZER 1
#endif

#if !defined(PROBE_UNDER_SANITIZER)

// ---------------------------------------------------------------------------
// Allocation functions
// ---------------------------------------------------------------------------

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define COUNT_ALLOC() do { if (probe_on) probe_allocs++; } while (0)

PROBE_EXPORT void *malloc(size_t size) {
    COUNT_ALLOC();
    return __libc_malloc(size);
}

PROBE_EXPORT void *calloc(size_t count, size_t size) {
    COUNT_ALLOC();
    return __libc_calloc(count, size);
}

PROBE_EXPORT void *realloc(void *ptr, size_t size) {
    COUNT_ALLOC();
    return __libc_realloc(ptr, size);
}

PROBE_EXPORT void *reallocarray(void *ptr, size_t count, size_t size) {
    COUNT_ALLOC();
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(ptr, bytes);
}

PROBE_EXPORT void free(void *ptr) {
    if (ptr != NULL && probe_on) probe_frees++;
    __libc_free(ptr);
}

static int probe_valid_alignment(size_t alignment) {
    return alignment != 0 && (alignment & (alignment - 1)) == 0;
}

PROBE_EXPORT int posix_memalign(void **out, size_t alignment, size_t size) {
    COUNT_ALLOC();
    if (!probe_valid_alignment(alignment) || alignment % sizeof(void *) != 0) return EINVAL;
    int saved = errno;
    void *p = __libc_memalign(alignment, size);
    errno = saved;
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

PROBE_EXPORT void *aligned_alloc(size_t alignment, size_t size) {
    COUNT_ALLOC();
    if (!probe_valid_alignment(alignment)) {  // glibc 2.36 semantics
        errno = EINVAL;
        return NULL;
    }
    return __libc_memalign(alignment, size);
}

PROBE_EXPORT void *memalign(size_t alignment, size_t size) {
    COUNT_ALLOC();
    return __libc_memalign(alignment, size);
}

PROBE_EXPORT void *valloc(size_t size) {
    COUNT_ALLOC();
    return __libc_valloc(size);
}

PROBE_EXPORT void *pvalloc(size_t size) {
    COUNT_ALLOC();
    return __libc_pvalloc(size);
}

// ---------------------------------------------------------------------------
// Lock functions
// ---------------------------------------------------------------------------

static PROBE_TLS int probe_resolving;

static void probe_fatal(const char *what, const char *name) {
    // write(2) directly: no stdio, no allocation.
    const char *parts[] = {"CRealtimeProbe: ", what, " ", name, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        ssize_t unused = write(2, parts[i], strlen(parts[i]));
        (void)unused;
    }
    abort();
}

static void *probe_resolve(void *_Atomic *slot, const char *name, const char *version) {
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (fn != NULL) return fn;
    if (probe_resolving) probe_fatal("recursive symbol resolution of", name);
    probe_resolving = 1;
    if (version != NULL) fn = dlvsym(RTLD_NEXT, name, version);
    if (fn == NULL) fn = dlsym(RTLD_NEXT, name);
    probe_resolving = 0;
    if (fn == NULL) probe_fatal("cannot resolve", name);
    atomic_store_explicit(slot, fn, memory_order_release);
    return fn;
}

// Defines `name` counting one lock and forwarding to the next definition.
#define PROBE_LOCK_WRAPPER(name, version, params, args)                                   \
    static void *_Atomic probe_real_##name;                                               \
    static void probe_resolve_##name(void) {                                              \
        (void)probe_resolve(&probe_real_##name, #name, version);                          \
    }                                                                                     \
    PROBE_EXPORT int name params {                                                        \
        if (probe_on) probe_locks++;                                                      \
        int (*real) params = (int (*) params)probe_resolve(&probe_real_##name, #name, version); \
        return real args;                                                                 \
    }

PROBE_LOCK_WRAPPER(pthread_mutex_lock, NULL, (pthread_mutex_t *m), (m))
PROBE_LOCK_WRAPPER(pthread_mutex_trylock, NULL, (pthread_mutex_t *m), (m))
PROBE_LOCK_WRAPPER(pthread_mutex_timedlock, NULL,
                   (pthread_mutex_t *m, const struct timespec *t), (m, t))
PROBE_LOCK_WRAPPER(pthread_mutex_clocklock, NULL,
                   (pthread_mutex_t *m, clockid_t c, const struct timespec *t), (m, c, t))
PROBE_LOCK_WRAPPER(pthread_rwlock_rdlock, NULL, (pthread_rwlock_t *l), (l))
PROBE_LOCK_WRAPPER(pthread_rwlock_wrlock, NULL, (pthread_rwlock_t *l), (l))
PROBE_LOCK_WRAPPER(pthread_rwlock_tryrdlock, NULL, (pthread_rwlock_t *l), (l))
PROBE_LOCK_WRAPPER(pthread_rwlock_trywrlock, NULL, (pthread_rwlock_t *l), (l))
PROBE_LOCK_WRAPPER(pthread_rwlock_timedrdlock, NULL,
                   (pthread_rwlock_t *l, const struct timespec *t), (l, t))
PROBE_LOCK_WRAPPER(pthread_rwlock_timedwrlock, NULL,
                   (pthread_rwlock_t *l, const struct timespec *t), (l, t))
PROBE_LOCK_WRAPPER(pthread_rwlock_clockrdlock, NULL,
                   (pthread_rwlock_t *l, clockid_t c, const struct timespec *t), (l, c, t))
PROBE_LOCK_WRAPPER(pthread_rwlock_clockwrlock, NULL,
                   (pthread_rwlock_t *l, clockid_t c, const struct timespec *t), (l, c, t))
PROBE_LOCK_WRAPPER(pthread_spin_lock, NULL, (pthread_spinlock_t *s), (s))
PROBE_LOCK_WRAPPER(pthread_spin_trylock, NULL, (pthread_spinlock_t *s), (s))
PROBE_LOCK_WRAPPER(sem_wait, NULL, (sem_t *s), (s))
PROBE_LOCK_WRAPPER(sem_trywait, NULL, (sem_t *s), (s))
PROBE_LOCK_WRAPPER(sem_timedwait, NULL, (sem_t *s, const struct timespec *t), (s, t))
PROBE_LOCK_WRAPPER(sem_clockwait, NULL,
                   (sem_t *s, clockid_t c, const struct timespec *t), (s, c, t))
PROBE_LOCK_WRAPPER(pthread_cond_wait, "GLIBC_2.3.2",
                   (pthread_cond_t *c, pthread_mutex_t *m), (c, m))
PROBE_LOCK_WRAPPER(pthread_cond_timedwait, "GLIBC_2.3.2",
                   (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t), (c, m, t))
PROBE_LOCK_WRAPPER(pthread_cond_clockwait, "GLIBC_2.30",
                   (pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *t),
                   (c, m, k, t))

// GLib (libfluidsynth's threading layer). On Linux, GMutex and GCond are
// futex words used directly, not pthread objects, so they are counted here;
// GRecMutex and GRWLock are pthread mutexes/rwlocks inside GLib and are
// already counted above. These wrappers take effect only in an executable
// linked with a library that uses them (the link editor exports them then);
// they are resolved lazily, on first call, when GLib is necessarily loaded.
// GLib's calls to its own functions are bound inside GLib and not seen.
static void *_Atomic probe_real_g_mutex_lock;
static void *_Atomic probe_real_g_mutex_trylock;
static void *_Atomic probe_real_g_cond_wait;
static void *_Atomic probe_real_g_cond_wait_until;

PROBE_EXPORT void g_mutex_lock(void *mutex) {
    if (probe_on) probe_locks++;
    ((void (*)(void *))probe_resolve(&probe_real_g_mutex_lock, "g_mutex_lock", NULL))(mutex);
}

PROBE_EXPORT int g_mutex_trylock(void *mutex) {
    if (probe_on) probe_locks++;
    return ((int (*)(void *))probe_resolve(&probe_real_g_mutex_trylock, "g_mutex_trylock", NULL))(mutex);
}

PROBE_EXPORT void g_cond_wait(void *cond, void *mutex) {
    if (probe_on) probe_locks++;
    ((void (*)(void *, void *))probe_resolve(&probe_real_g_cond_wait, "g_cond_wait", NULL))(cond, mutex);
}

PROBE_EXPORT int g_cond_wait_until(void *cond, void *mutex, int64_t end_time) {
    if (probe_on) probe_locks++;
    return ((int (*)(void *, void *, int64_t))probe_resolve(&probe_real_g_cond_wait_until, "g_cond_wait_until",
                                                             NULL))(cond, mutex, end_time);
}

__attribute__((constructor)) static void probe_resolve_all(void) {
    probe_resolve_pthread_mutex_lock();
    probe_resolve_pthread_mutex_trylock();
    probe_resolve_pthread_mutex_timedlock();
    probe_resolve_pthread_mutex_clocklock();
    probe_resolve_pthread_rwlock_rdlock();
    probe_resolve_pthread_rwlock_wrlock();
    probe_resolve_pthread_rwlock_tryrdlock();
    probe_resolve_pthread_rwlock_trywrlock();
    probe_resolve_pthread_rwlock_timedrdlock();
    probe_resolve_pthread_rwlock_timedwrlock();
    probe_resolve_pthread_rwlock_clockrdlock();
    probe_resolve_pthread_rwlock_clockwrlock();
    probe_resolve_pthread_spin_lock();
    probe_resolve_pthread_spin_trylock();
    probe_resolve_sem_wait();
    probe_resolve_sem_trywait();
    probe_resolve_sem_timedwait();
    probe_resolve_sem_clockwait();
    probe_resolve_pthread_cond_wait();
    probe_resolve_pthread_cond_timedwait();
    probe_resolve_pthread_cond_clockwait();
}

// ---------------------------------------------------------------------------
// Self checks
// ---------------------------------------------------------------------------

int spinet_probe_is_active(void) {
    // Save this thread's state: is_active may be called inside begin/end.
    int saved_on = probe_on;
    unsigned long saved_allocs = probe_allocs, saved_frees = probe_frees;
    // strdup lives in libc and calls malloc through libc's PLT: it reaches
    // our malloc only if the executable really exports it. The volatile
    // pointer keeps the compiler from turning strdup into malloc + memcpy.
    char *(*volatile dup)(const char *) = strdup;
    probe_allocs = 0;
    probe_on = 1;
    char *copy = dup("spinet");
    probe_on = 0;
    unsigned long seen = probe_allocs;
    __libc_free(copy);
    probe_allocs = saved_allocs;
    probe_frees = saved_frees;
    probe_on = saved_on;
    void *resolved = dlsym(RTLD_DEFAULT, "malloc");
    return seen >= 1 && resolved == (void *)&malloc;
}

int spinet_probe_locks_are_interposed(void) {
    return dlsym(RTLD_DEFAULT, "pthread_mutex_lock") == (void *)&pthread_mutex_lock;
}

#else  // PROBE_UNDER_SANITIZER: the sanitizer owns malloc and the locks

int spinet_probe_is_active(void) { return 0; }
int spinet_probe_locks_are_interposed(void) { return 0; }

#endif

// ---------------------------------------------------------------------------
// System-call trap
// ---------------------------------------------------------------------------

#if defined(__x86_64__)

// long spinet_probe_raw_syscall(long nr, long a1, ..., long a6): the one
// `syscall` instruction the filter lets through.
long spinet_probe_raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
extern const char spinet_probe_raw_syscall_return[];
__asm__(
    ".pushsection .text\n"
    ".globl spinet_probe_raw_syscall\n"
    ".hidden spinet_probe_raw_syscall\n"
    ".type spinet_probe_raw_syscall, @function\n"
    "spinet_probe_raw_syscall:\n"
    "    movq %rdi, %rax\n"
    "    movq %rsi, %rdi\n"
    "    movq %rdx, %rsi\n"
    "    movq %rcx, %rdx\n"
    "    movq %r8, %r10\n"
    "    movq %r9, %r8\n"
    "    movq 8(%rsp), %r9\n"
    "    syscall\n"
    ".globl spinet_probe_raw_syscall_return\n"
    ".hidden spinet_probe_raw_syscall_return\n"
    "spinet_probe_raw_syscall_return:\n"
    "    ret\n"
    ".size spinet_probe_raw_syscall, .-spinet_probe_raw_syscall\n"
    ".popsection\n");

#define PROBE_MAX_RECORDED 16

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1  // si_code of a seccomp SIGSYS (asm-generic/siginfo.h)
#endif

static PROBE_TLS int trap_thread;      // this thread runs under our filter
static PROBE_TLS int trap_counting;    // fn is running: count calls
static PROBE_TLS int trap_fail;        // counted calls fail with ENOSYS
static PROBE_TLS unsigned long trap_count;
static PROBE_TLS long trap_numbers[PROBE_MAX_RECORDED];

static struct sigaction trap_previous;  // SIGSYS action before ours

static uint64_t sig_bit(int sig) { return 1ULL << (sig - 1); }

// rt_sigprocmask(how, set, oldset, sigsetsize) applied to the mask that
// sigreturn will restore. SIGSYS is never blocked (see the top of the file).
static long trap_emulate_sigprocmask(ucontext_t *uc) {
    greg_t *g = uc->uc_mcontext.gregs;
    long how = g[REG_RDI];
    const uint64_t *set = (const uint64_t *)g[REG_RSI];
    uint64_t *oldset = (uint64_t *)g[REG_RDX];
    if ((size_t)g[REG_R10] != sizeof(uint64_t)) return -EINVAL;
    uint64_t current;
    __builtin_memcpy(&current, &uc->uc_sigmask, sizeof current);
    uint64_t next = current;
    if (set != NULL) {
        uint64_t s = *set;
        switch (how) {
        case SIG_BLOCK: next = current | s; break;
        case SIG_UNBLOCK: next = current & ~s; break;
        case SIG_SETMASK: next = s; break;
        default: return -EINVAL;
        }
    }
    if (oldset != NULL) *oldset = current;
    next &= ~(sig_bit(SIGKILL) | sig_bit(SIGSTOP) | sig_bit(SIGSYS));
    __builtin_memcpy(&uc->uc_sigmask, &next, sizeof next);
    return 0;
}

static void trap_handler(int sig, siginfo_t *info, void *context) {
    if (!trap_thread || info->si_code != SYS_SECCOMP) {
        // Not ours: behave as the previous action would.
        if ((trap_previous.sa_flags & SA_SIGINFO) && trap_previous.sa_sigaction != NULL) {
            trap_previous.sa_sigaction(sig, info, context);
        } else if (trap_previous.sa_handler == SIG_IGN) {
            return;
        } else if (trap_previous.sa_handler != SIG_DFL && trap_previous.sa_handler != NULL) {
            trap_previous.sa_handler(sig);
        } else {
            signal(SIGSYS, SIG_DFL);
            raise(SIGSYS);  // delivered (default action: core) when we return
        }
        return;
    }
    ucontext_t *uc = (ucontext_t *)context;
    greg_t *g = uc->uc_mcontext.gregs;
    long nr = info->si_syscall;
    int native = info->si_arch == AUDIT_ARCH_X86_64;
    if (trap_counting) {
        if (trap_count < PROBE_MAX_RECORDED) trap_numbers[trap_count] = nr;
        trap_count++;
        if (trap_fail) {
            g[REG_RAX] = -ENOSYS;
            return;
        }
    }
    long result;
    if (!native) {
        g[REG_RAX] = -ENOSYS;
        return;
    }
    switch (nr) {
    case __NR_rt_sigprocmask:
        result = trap_emulate_sigprocmask(uc);
        break;
    case __NR_clone:
    case __NR_clone3:
    case __NR_fork:
    case __NR_vfork:
        result = -ENOSYS;
        break;
    default:
        result = spinet_probe_raw_syscall(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX],
                                          g[REG_R10], g[REG_R8], g[REG_R9]);
        break;
    }
    g[REG_RAX] = result;
}

static pthread_mutex_t trap_install_lock = PTHREAD_MUTEX_INITIALIZER;

// Installs the SIGSYS handler unless it is already installed (someone may
// have replaced it since: then it is installed again, chaining to theirs).
static int trap_install_handler(void) {
    int ok = 1;
    pthread_mutex_lock(&trap_install_lock);
    struct sigaction current;
    if (sigaction(SIGSYS, NULL, &current) != 0) {
        ok = 0;
    } else if (!((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == trap_handler)) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = trap_handler;
        action.sa_flags = SA_SIGINFO;
        sigemptyset(&action.sa_mask);
        if (sigaction(SIGSYS, &action, &trap_previous) != 0) ok = 0;
    }
    pthread_mutex_unlock(&trap_install_lock);
    return ok;
}

// Installs the filter on the calling thread only. Returns 0 or an errno.
static int spinet_probe_syscalls_begin(void) {
    uint64_t allowed_ip = (uint64_t)(uintptr_t)spinet_probe_raw_syscall_return;
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 7),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 4, 0),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)allowed_ip, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(allowed_ip >> 32), 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
    };
    struct sock_fprog program = {.len = (unsigned short)(sizeof code / sizeof code[0]), .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    // From here on a trapped call of this thread is passed through by the
    // handler (trap_counting is still 0).
    trap_thread = 1;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) {
        int error = errno;
        trap_thread = 0;
        return error;
    }
    return 0;
}

struct trap_job {
    void (*fn)(void *);
    void *ctx;
    int fail;
    int status;  // 0 or the errno of the filter installation
    unsigned long count;
    long numbers[PROBE_MAX_RECORDED];
};

static void *trap_thread_main(void *argument) {
    struct trap_job *job = (struct trap_job *)argument;
    // A thread's first malloc attaches it to an arena and sets up its
    // tcache, which may mmap: do that before the trap so that the count is
    // about fn, not about this fresh thread.
    void *volatile warm = malloc(64);
    free(warm);
    // The thread inherits the creator's signal mask: SIGSYS must not be
    // blocked, or the kernel kills the process at the first trapped call.
    sigset_t sigsys;
    sigemptyset(&sigsys);
    sigaddset(&sigsys, SIGSYS);
    if (pthread_sigmask(SIG_UNBLOCK, &sigsys, NULL) != 0) {
        job->status = EINVAL;
        return NULL;
    }
    job->status = spinet_probe_syscalls_begin();
    if (job->status != 0) return NULL;
    trap_count = 0;
    trap_fail = job->fail;
    atomic_signal_fence(memory_order_seq_cst);
    trap_counting = 1;
    atomic_signal_fence(memory_order_seq_cst);
    job->fn(job->ctx);
    atomic_signal_fence(memory_order_seq_cst);
    trap_counting = 0;
    atomic_signal_fence(memory_order_seq_cst);
    job->count = trap_count;
    for (int i = 0; i < PROBE_MAX_RECORDED; i++) job->numbers[i] = trap_numbers[i];
    return NULL;  // teardown's system calls are passed through by the handler
}

unsigned long spinet_probe_run_without_syscalls_ex(void (*fn)(void *), void *ctx, int flags,
                                                    long *numbers, int capacity, int *stored) {
    if (stored != NULL) *stored = 0;
    if (fn == NULL || !trap_install_handler()) return ULONG_MAX;
    struct trap_job job;
    memset(&job, 0, sizeof job);
    job.fn = fn;
    job.ctx = ctx;
    job.fail = (flags & SPINET_PROBE_SYSCALLS_EXECUTE) == 0;
    pthread_t thread;
    if (pthread_create(&thread, NULL, trap_thread_main, &job) != 0) return ULONG_MAX;
    if (pthread_join(thread, NULL) != 0) return ULONG_MAX;
    if (job.status != 0) return ULONG_MAX;
    int recorded = job.count < PROBE_MAX_RECORDED ? (int)job.count : PROBE_MAX_RECORDED;
    int n = 0;
    if (numbers != NULL) {
        for (; n < recorded && n < capacity; n++) numbers[n] = job.numbers[n];
    }
    if (stored != NULL) *stored = n;
    return job.count;
}

#else  // not x86_64: the trap is not implemented

unsigned long spinet_probe_run_without_syscalls_ex(void (*fn)(void *), void *ctx, int flags,
                                                    long *numbers, int capacity, int *stored) {
    (void)fn; (void)ctx; (void)flags; (void)numbers; (void)capacity;
    if (stored != NULL) *stored = 0;
    return ULONG_MAX;
}

#endif

unsigned long spinet_probe_run_without_syscalls(void (*fn)(void *), void *ctx, long *first_syscall) {
    long first = -1;
    int stored = 0;
    unsigned long count = spinet_probe_run_without_syscalls_ex(fn, ctx, 0, &first, 1, &stored);
    if (first_syscall != NULL) *first_syscall = stored > 0 ? first : -1;
    return count;
}

#else  // not Linux: nothing is interposed, nothing is counted

#include <limits.h>

void spinet_probe_begin(void) {}
void spinet_probe_end(void) {}
unsigned long spinet_probe_allocations(void) { return 0; }
unsigned long spinet_probe_frees(void) { return 0; }
unsigned long spinet_probe_locks(void) { return 0; }
int spinet_probe_is_active(void) { return 0; }
int spinet_probe_locks_are_interposed(void) { return 0; }
unsigned long spinet_probe_run_without_syscalls(void (*fn)(void *), void *ctx, long *first_syscall) {
    (void)fn; (void)ctx;
    if (first_syscall != NULL) *first_syscall = -1;
    return ULONG_MAX;
}
unsigned long spinet_probe_run_without_syscalls_ex(void (*fn)(void *), void *ctx, int flags,
                                                    long *numbers, int capacity, int *stored) {
    (void)fn; (void)ctx; (void)flags; (void)numbers; (void)capacity;
    if (stored != NULL) *stored = 0;
    return ULONG_MAX;
}

#endif
