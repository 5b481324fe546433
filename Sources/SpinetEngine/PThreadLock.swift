import Glibc

/// A mutual-exclusion lock on a pthread mutex, for control-side state that
/// several threads share (never taken on a render path).
///
/// Synchronization's `Mutex` drives a futex word directly, which
/// ThreadSanitizer cannot see: everything it guards is reported as a race
/// (scripts/tsan-suppressions.txt). A pthread mutex gives ThreadSanitizer
/// the ordering, so code that several threads reach under this lock can run
/// in the ThreadSanitizer pass and be checked, not suppressed.
public final class PThreadLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
