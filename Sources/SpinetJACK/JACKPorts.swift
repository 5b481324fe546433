import CJACK

/// One port of the JACK graph, for `spinet ports`.
public struct JACKPort: Equatable, Sendable {
    /// The full name, `client:port`.
    public var name: String
    public var client: String { String(name.prefix { $0 != ":" }) }
    public var shortName: String { name.firstIndex(of: ":").map { String(name[name.index(after: $0)...]) } ?? name }
    /// JACK's type string: "32 bit float mono audio" or "8 bit raw midi".
    public var type: String
    public var isAudio: Bool { type == JACK_DEFAULT_AUDIO_TYPE }
    public var isMIDI: Bool { type == JACK_DEFAULT_MIDI_TYPE }
    /// An input (it receives: playback ports, synth inputs) or an output.
    public var isInput: Bool
    /// A port of a sound card (or of the dummy driver), not of a program.
    public var isPhysical: Bool
    /// Full names of the ports it is connected to.
    public var connections: [String]
}

/// The ports of a running JACK server.
public enum JACKPorts {
    /// Every port of the server (`server` nil: $JACK_DEFAULT_SERVER, else
    /// "default"), in the server's order. Throws `JACKError.noServer` when no
    /// server runs. Opens and closes a short-lived client named
    /// "spinet-ports" (JACK adds a suffix if that name is taken).
    public static func list(server: String? = nil) throws(JACKError) -> [JACKPort] {
        _ = JACKMessages.silenced
        guard let (opened, status) = JACKLibrary.open("spinet-ports", server: server, exactName: false) else { throw .stuck }
        guard let client = opened else {
            throw status.rawValue & JackVersionError.rawValue != 0
                ? JACKError.openFailed(name: "spinet-ports", server: server, status: status) : JACKError.noServer
        }
        defer { _ = JACKLibrary.close(client, deactivate: false) }
        return ports(of: client, pattern: nil, type: nil, flags: 0)
    }

    /// The ports matching a name pattern (regex, nil: all), a type (nil: any)
    /// and flags. Not on the process thread: jack_get_ports allocates.
    static func ports(of client: OpaquePointer, pattern: String?, type: String?, flags: UInt) -> [JACKPort] {
        guard let list = jack_get_ports(client, pattern, type, flags) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var result: [JACKPort] = []
        var i = 0
        while let cName = list[i] {
            i += 1
            guard let port = jack_port_by_name(client, cName) else { continue }
            let portFlags = UInt32(bitPattern: jack_port_flags(port))
            var connections: [String] = []
            if let c = jack_port_get_all_connections(client, port) {
                var j = 0
                while let other = c[j] { connections.append(String(cString: other)); j += 1 }
                jack_free(UnsafeMutableRawPointer(mutating: c))
            }
            result.append(JACKPort(name: String(cString: cName),
                                   type: jack_port_type(port).map { String(cString: $0) } ?? "",
                                   isInput: portFlags & JackPortIsInput.rawValue != 0,
                                   isPhysical: portFlags & JackPortIsPhysical.rawValue != 0,
                                   connections: connections))
        }
        return result
    }
}
