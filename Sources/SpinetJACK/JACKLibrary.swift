import CJACK
import Glibc
import SpinetEngine

/// libjack (jackd2 1.9.21) can deadlock when one thread opens a client
/// while another closes a client whose server died (seen here: a port
/// listing during a reconnection; both waited on libjack's own mutexes in
/// opposite order). Every `jack_client_open` and `jack_client_close` of
/// Spinet's goes through this one lock; code that opens its own clients in
/// the same process (tests) should too. Never on the process thread.
///
/// libjack can also hang for good: a server that stops answering (stopped,
/// hung) keeps an open, activate, deactivate or close waiting on its
/// socket, and when jackd dies at the wrong moment, libjack's global open
/// mutex can be left owned by a thread that no longer exists (seen with
/// gdb), so the next close or open in the process waits forever. Spinet's
/// own calls go through `bounded`: each runs on a helper thread and is
/// waited for at most a deadline. One that overruns is abandoned (its
/// thread, the client and this lock are leaked on purpose: nothing can
/// take them back from libjack), libjack counts as stuck for the rest of
/// the process, and every later bounded call fails at once, so a caller
/// reports one clear line and ends instead of hanging. A new process (a
/// restart of `spinet play`) starts with a fresh libjack.
public enum JACKLibrary {
    private static let lock = Locked<Void>(())
    /// What overran its deadline (nil: nothing; libjack works).
    private static let stuckCall = Locked<String?>(nil)

    /// Seconds a libjack call that waits on the server may take when the
    /// caller gives no deadline: an open, activation or close takes a few
    /// milliseconds, and jackd itself gives up on a client after its
    /// timeout (-t, 0.5 s by default; Spinet's tests run jackd with 5 s).
    public static let defaultDeadline = 10.0

    public static func serialized<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try lock.withLock { _ throws(E) in try body() }
    }

    /// The call that overran its deadline, once one has (libjack is then
    /// stuck in this process); nil while libjack works.
    public static var stuck: String? { stuckCall.withLock { $0 } }

    /// Runs `body` (libjack calls that may wait on the server or on
    /// libjack's own locks) under the lock on a helper thread and waits at
    /// most `seconds`. Returns its result, or nil when it overran (`what`
    /// names it in `stuck`) or libjack was stuck already. Not on the process
    /// thread.
    public static func bounded<T>(_ what: String, seconds: Double = defaultDeadline, _ body: @escaping () -> T) -> T? {
        if stuck != nil { return nil }
        let call = BoundedCall { lock.withLock { _ in body() } }
        let thread = NativeThread(name: "spinet-jack-call") { call.run() }
        if call.wait(seconds: seconds) {
            thread.join()
            return call.result
        }
        stuckCall.withLock { $0 = $0 ?? what }
        return nil      // the thread, and what it holds, stay behind
    }

    /// Opens a client (see `spinet_jack_client_open`) within `seconds`:
    /// the client, or nil and JACK's status bits; nil when it overran.
    /// `onBehalfOf`: the client the user knows, named when this one (a probe
    /// asking why that one failed) overruns.
    static func open(_ name: String, server: String?, exactName: Bool, seconds: Double = defaultDeadline,
                     onBehalfOf: String? = nil) -> (client: OpaquePointer?, status: jack_status_t)? {
        bounded("opening the JACK client '\(onBehalfOf ?? name)'", seconds: seconds) {
            var status = jack_status_t(rawValue: 0)
            let c = spinet_jack_client_open(name, server, exactName ? 1 : 0, &status)
            return (c, status)
        }
    }

    /// Deactivates (when `deactivate`) and closes a client within
    /// `seconds`; false when that overran (the client is abandoned).
    static func close(_ client: OpaquePointer, deactivate: Bool, seconds: Double = defaultDeadline) -> Bool {
        let name = jack_get_client_name(client).map { String(cString: $0) } ?? "?"
        let closed: Bool? = bounded("closing the JACK client '\(name)'", seconds: seconds) {
            if deactivate { _ = jack_deactivate(client) }
            _ = jack_client_close(client)
            return true
        }
        return closed != nil
    }
}

/// One bounded libjack call: its result and the semaphore it posts.
private final class BoundedCall<T>: @unchecked Sendable {
    private let body: () -> T
    private(set) var result: T?
    private let finished = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    init(_ body: @escaping () -> T) {
        self.body = body
        sem_init(finished, 0, 0)
    }

    deinit {
        sem_destroy(finished)
        finished.deallocate()
    }

    func run() {
        result = body()
        sem_post(finished)
    }

    /// True when the call finished within `seconds`.
    func wait(seconds: Double) -> Bool {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let ns = Int(ts.tv_nsec) + Int(seconds.truncatingRemainder(dividingBy: 1) * 1e9)
        ts.tv_sec += Int(seconds) + ns / 1_000_000_000
        ts.tv_nsec = ns % 1_000_000_000
        while true {
            if sem_timedwait(finished, &ts) == 0 { return true }
            if errno != EINTR { return false }
        }
    }
}
