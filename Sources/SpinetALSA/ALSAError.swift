import CALSA
import Glibc

/// An ALSA setup or device problem. `description` is one line that names
/// the device or port and says what to do about it.
public struct ALSAError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A sequencer address: client and port numbers, as `aconnect` prints them.
public struct SequencerAddress: Hashable, Sendable, CustomStringConvertible {
    public var client: UInt8
    public var port: UInt8
    public init(client: UInt8, port: UInt8) {
        self.client = client
        self.port = port
    }
    public var description: String { "\(client):\(port)" }

    init(_ a: snd_seq_addr_t) {
        client = a.client
        port = a.port
    }
}

enum ALSA {
    /// Silences alsa-lib's own stderr diagnostics (Spinet reports errors in
    /// one line of its own). Call before any other ALSA function.
    static func quietErrors() {
        spinet_alsa_quiet_errors()
    }

    /// `snd_strerror` of a negative ALSA return code.
    static func text(_ code: Int32) -> String {
        String(cString: snd_strerror(code))
    }

    /// `snd_strerror` of a negative ALSA return code given as `Int`.
    static func text(_ code: Int) -> String {
        text(Int32(truncatingIfNeeded: code))
    }

    /// The last message alsa-lib raised since the previous call (may be empty).
    static func takeLastMessage() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        return buffer.withUnsafeMutableBufferPointer { b in
            spinet_alsa_take_last_error(b.baseAddress, b.count)
            return String(cString: b.baseAddress!)
        }
    }
}

/// Nanoseconds of CLOCK_MONOTONIC: the clock the sequencer and audio
/// threads share. A vDSO call, not a system call.
@inline(__always)
func monotonicNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
