import Synchronization

/// libjack (jackd2 1.9.21) can deadlock when one thread opens a client
/// while another closes a client whose server died (seen here: a port
/// listing during a reconnection; both waited on libjack's own mutexes in
/// opposite order). Every `jack_client_open` and `jack_client_close` of
/// Spinet's goes through this one lock; code that opens its own clients in
/// the same process (tests) should too. Never on the process thread.
public enum JACKLibrary {
    private static let lock = Mutex<Void>(())

    public static func serialized<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try lock.withLock { _ throws(E) in try body() }
    }
}
