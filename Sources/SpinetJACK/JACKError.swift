import CJACK

/// A JACK failure, as one line for the user.
public struct JACKError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }

    /// No server to talk to (JackNoStartServer keeps libjack from starting one).
    public static let noServer = JACKError("no JACK server running; start one (jackd, or PipeWire's pipewire-jack)")

    /// The error for a failed `jack_client_open` of `name` on `server`.
    /// jackd2's status bits do not tell a taken name from a missing server
    /// (it reports JackServerFailed for one and JackServerError for the
    /// other; PipeWire differs again), so a second client with a name of
    /// JACK's choosing asks the server itself.
    /// `seconds`: the deadline of the probe's libjack calls (the caller's own).
    static func openFailed(name: String, server: String?, status: jack_status_t,
                           seconds: Double = JACKLibrary.defaultDeadline) -> JACKError {
        let bits = status.rawValue
        if bits & JackNameNotUnique.rawValue != 0 { return nameTaken(name) }
        if bits & JackVersionError.rawValue != 0 {
            return JACKError("the JACK server speaks another protocol version than this libjack; update one of them")
        }
        guard let opened = JACKLibrary.open("spinet-probe", server: server, exactName: false, seconds: seconds, onBehalfOf: name)
        else { return .stuck }
        guard let probe = opened.client else { return .noServer }
        defer { _ = JACKLibrary.close(probe, deactivate: false, seconds: seconds) }
        if let uuid = jack_get_uuid_for_client_name(probe, name) {
            jack_free(uuid)
            return nameTaken(name)
        }
        return JACKError("the JACK server refused the client '\(name)' (JACK status 0x\(String(bits, radix: 16)))")
    }

    /// A libjack call overran its deadline (`JACKLibrary.bounded`): libjack
    /// is stuck in this process, so Spinet stops rather than hang.
    public static var stuck: JACKError {
        JACKError("libjack did not return from \(JACKLibrary.stuck ?? "a call") within its deadline (a JACK server that stopped answering, "
                  + "or libjack's lock left held by a thread that died with its server); stopped: restart Spinet (and the server, if it hangs)")
    }

    static func nameTaken(_ name: String) -> JACKError {
        JACKError("a JACK client named '\(name)' is already running; choose another --name")
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
