import Glibc

/// A mutual-exclusion lock on a pthread mutex, for control-side state that
/// several threads share (never taken on a render path).
///
/// Synchronization's `Mutex` drives a futex word directly, which
/// ThreadSanitizer cannot see: everything it guards may be reported as a
/// race. A pthread mutex gives ThreadSanitizer
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

/// A value several threads share, reached only under its own `PThreadLock`:
/// Spinet's lock for control-side state (Synchronization's `Mutex` is not
/// used, for the reason `PThreadLock` gives). Never taken on a render path:
/// the real-time probe counts its lock as one.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = PThreadLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` on the value, holding the lock.
    @inline(__always)
    public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(&value) }
    }
}
