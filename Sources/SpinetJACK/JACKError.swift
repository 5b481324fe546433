import CJACK

/// A JACK failure, as one line for the user.
public struct JACKError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }

    /// No server to talk to (JackNoStartServer keeps libjack from starting one).
    public static let noServer = JACKError("no JACK server running; start one (jackd, or PipeWire's pipewire-jack)")

    /// The error for a failed `jack_client_open`, from its status bits.
    static func openFailed(name: String, status: jack_status_t) -> JACKError {
        let bits = status.rawValue
        if bits & JackServerFailed.rawValue != 0 || bits & JackServerError.rawValue != 0 {
            return .noServer
        }
        if bits & JackNameNotUnique.rawValue != 0 {
            return JACKError("a JACK client named '\(name)' is already running; choose another --name")
        }
        if bits & JackVersionError.rawValue != 0 {
            return JACKError("the JACK server speaks another protocol version than this libjack; update one of them")
        }
        if bits & JackShmFailure.rawValue != 0 {
            return JACKError("cannot reach the JACK server's shared memory (is it run by another user?)")
        }
        return JACKError("cannot open the JACK client '\(name)' (JACK status 0x\(String(bits, radix: 16)))")
    }
}

/// libjack prints its complaints to stderr ("Cannot connect to server socket
/// err = No such file or directory", ...): Spinet says it in one line of its
/// own instead. Set once, before the first client opens.
enum JACKMessages {
    static let silenced: Void = {
        jack_set_error_function { _ in }
        jack_set_info_function { _ in }
    }()
}
