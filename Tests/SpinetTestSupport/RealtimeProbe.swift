import CRealtimeProbe

/// Proves by counting that code allocates nothing, takes no lock and makes no
/// system call (Spinet's rule for the audio render path).
///
/// Allocation and lock counts come from CRealtimeProbe's interposed malloc
/// family and pthread/semaphore lock functions; they are per thread, so only
/// what `body` does on the calling thread counts. System calls are trapped
/// with a seccomp-BPF filter on a fresh thread (see `syscalls(_:)`).
/// Linux only: elsewhere `isActive` is false and nothing is counted.
public enum RealtimeProbe {
    /// Counts of one `counts(_:)` run.
    public struct Counts<T> {
        public var result: T
        /// malloc, calloc, realloc, reallocarray, posix_memalign,
        /// aligned_alloc, memalign, valloc, pvalloc calls.
        public var allocations: Int
        /// free calls with a non-nil pointer (a release that deallocates).
        public var frees: Int
        /// pthread mutex/rwlock/spin lock and trylock calls, condition-variable
        /// waits, semaphore waits.
        public var locks: Int
    }

    /// Runs body on the current thread while counting; returns counts.
    ///
    /// Run the body once before counting: the first execution of generic
    /// code instantiates type metadata and witness tables (allocations, and
    /// the runtime's own locks). And mind the build configuration: in a debug
    /// build unspecialized generic code allocates where optimized code does
    /// not (`for x in array` mallocs a coroutine frame per element, through
    /// IndexingIterator.next and Collection.subscript.read), so a zero count
    /// in debug is conclusive but a non-zero one should be confirmed with
    /// `swift test -c release`, or avoided with index loops and
    /// withUnsafeBufferPointer in render code.
    public static func count<T>(_ body: () throws -> T) rethrows -> (result: T, allocations: Int, locks: Int) {
        let c = try counts(body)
        return (c.result, c.allocations, c.locks)
    }

    /// Like `count(_:)`, and also reports frees: freeing memory (releasing
    /// the last reference to an object, say) is as forbidden in render as
    /// allocating.
    public static func counts<T>(_ body: () throws -> T) rethrows -> Counts<T> {
        spinet_probe_begin()
        let result: T
        do {
            result = try body()
        } catch {
            spinet_probe_end()
            throw error
        }
        spinet_probe_end()
        return Counts(result: result,
                      allocations: Int(spinet_probe_allocations()),
                      frees: Int(spinet_probe_frees()),
                      locks: Int(spinet_probe_locks()))
    }

    /// True if both allocations and locks made anywhere in the process
    /// (including shared libraries such as libswiftCore and Foundation) are
    /// really seen by the probe. When false, a count of 0 proves nothing.
    public static var isActive: Bool {
        allocationsAreCounted && locksAreCounted
    }

    /// An allocation made inside libc itself was observed by the probe.
    public static var allocationsAreCounted: Bool { spinet_probe_is_active() != 0 }

    /// pthread_mutex_lock, as shared libraries see it, is the probe's.
    public static var locksAreCounted: Bool { spinet_probe_locks_are_interposed() != 0 }

    // MARK: System calls

    /// What a run under the system-call trap saw.
    public struct SyscallReport: Sendable, CustomStringConvertible {
        /// Number of system calls the body made.
        public var count: Int
        /// The first (up to 16) system-call numbers, in order (x86_64 numbers).
        public var numbers: [Int]

        public var description: String {
            let names = numbers.map { RealtimeProbe.syscallName($0) }.joined(separator: ", ")
            return count == 0 ? "no system call" : "\(count) system call(s): \(names)\(count > numbers.count ? ", ..." : "")"
        }
    }

    /// Runs body on a fresh thread under the syscall trap; returns number of
    /// syscalls and the first syscall number (nil if none); nil result if the
    /// trap is unavailable.
    ///
    /// By default every system call the body makes is counted and then
    /// executed, so a regression shows as a count rather than as a crash
    /// (glibc's malloc, for one, cannot survive a failing mmap/brk). With
    /// `failingCalls: true` the calls are counted but not executed: each
    /// returns -ENOSYS.
    ///
    /// Every system call is detected except rt_sigreturn; what is not a
    /// system call is not: vDSO clock_gettime/gettimeofday, page faults.
    /// The body runs synchronously (this call waits for the thread).
    public static func syscalls(failingCalls: Bool = false, _ body: @escaping () -> Void) -> (count: Int, first: Int?)? {
        guard let report = syscallReport(failingCalls: failingCalls, body) else { return nil }
        return (report.count, report.numbers.first)
    }

    /// Like `syscalls(_:)`, with the first 16 system-call numbers.
    public static func syscallReport(failingCalls: Bool = false, _ body: @escaping () -> Void) -> SyscallReport? {
        let box = Unmanaged.passRetained(BodyBox(body))
        defer { box.release() }
        var numbers = [CLong](repeating: -1, count: 16)
        var stored: Int32 = 0
        let flags: Int32 = failingCalls ? 0 : SPINET_PROBE_SYSCALLS_EXECUTE
        let count = numbers.withUnsafeMutableBufferPointer { buffer in
            spinet_probe_run_without_syscalls_ex({ context in
                Unmanaged<BodyBox>.fromOpaque(context!).takeUnretainedValue().body()
            }, box.toOpaque(), flags, buffer.baseAddress, Int32(buffer.count), &stored)
        }
        if count == UInt.max { return nil }
        return SyscallReport(count: Int(count), numbers: numbers.prefix(Int(stored)).map { Int($0) })
    }

    /// True if the system-call trap works in this process (seccomp permitted,
    /// Linux x86_64).
    public static let syscallTrapIsAvailable: Bool = syscalls {} != nil

    private final class BodyBox {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Name of an x86_64 system-call number (for messages).
    public static func syscallName(_ number: Int) -> String {
        let names: [Int: String] = [
            0: "read", 1: "write", 2: "open", 3: "close", 7: "poll", 8: "lseek", 9: "mmap",
            10: "mprotect", 11: "munmap", 12: "brk", 13: "rt_sigaction", 14: "rt_sigprocmask",
            16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev", 23: "select",
            24: "sched_yield", 25: "mremap", 28: "madvise", 35: "nanosleep", 39: "getpid",
            72: "fcntl", 96: "gettimeofday", 186: "gettid", 201: "time", 202: "futex",
            228: "clock_gettime", 230: "clock_nanosleep", 232: "epoll_wait", 257: "openat",
            270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 318: "getrandom", 334: "rseq",
            435: "clone3",
        ]
        return names[number].map { "\($0)(\(number))" } ?? "syscall \(number)"
    }
}
