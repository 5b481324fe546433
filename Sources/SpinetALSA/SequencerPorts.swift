import CALSA
import Glibc
import SpinetSupport

/// A port of another sequencer client, as `spinet ports` and auto-connect see it.
public struct MIDIPort: Sendable, Equatable {
    public var address: SequencerAddress
    public var clientName: String
    public var portName: String
    /// A kernel client (a sound card's raw MIDI port, Midi Through) rather than a program.
    public var isKernelClient: Bool
    public var capability: UInt32
    public var type: UInt32

    /// Others may subscribe to read from it: a MIDI source.
    public var isSource: Bool {
        let need = UInt32(SND_SEQ_PORT_CAP_READ | SND_SEQ_PORT_CAP_SUBS_READ)
        return capability & need == need && capability & UInt32(SND_SEQ_PORT_CAP_NO_EXPORT) == 0
    }

    /// "Client:Port", the name `--connect` accepts.
    public var name: String { "\(clientName):\(portName)" }

    /// Why auto-connect leaves this port alone, or nil when it connects it.
    public func autoConnectExclusion(selfClient: UInt8?) -> String? {
        if !isSource { return "not a MIDI source" }
        if address.client == 0 { return "the sequencer's system client" }
        if let me = selfClient, address.client == me { return "Spinet itself" }
        if clientName == "Midi Through" { return "Midi Through (a loop-back, not an instrument)" }
        if type & UInt32(SND_SEQ_PORT_TYPE_MIDI_GENERIC | SND_SEQ_PORT_TYPE_HARDWARE | SND_SEQ_PORT_TYPE_PORT) == 0 {
            return "not a MIDI port"
        }
        return nil
    }
}

/// Enumerating and naming sequencer ports (any thread that owns `seq`).
enum SequencerPorts {
    /// Every port of every client.
    static func all(_ seq: OpaquePointer) -> [MIDIPort] {
        var ports: [MIDIPort] = []
        var cinfo: OpaquePointer?
        var pinfo: OpaquePointer?
        snd_seq_client_info_malloc(&cinfo)
        snd_seq_port_info_malloc(&pinfo)
        defer { snd_seq_client_info_free(cinfo); snd_seq_port_info_free(pinfo) }
        snd_seq_client_info_set_client(cinfo, -1)
        while snd_seq_query_next_client(seq, cinfo) >= 0 {
            let client = snd_seq_client_info_get_client(cinfo)
            let clientName = String(cString: snd_seq_client_info_get_name(cinfo))
            let kernel = snd_seq_client_info_get_type(cinfo) == SND_SEQ_KERNEL_CLIENT
            snd_seq_port_info_set_client(pinfo, client)
            snd_seq_port_info_set_port(pinfo, -1)
            while snd_seq_query_next_port(seq, pinfo) >= 0 {
                ports.append(MIDIPort(
                    address: SequencerAddress(client: UInt8(client), port: UInt8(snd_seq_port_info_get_port(pinfo))),
                    clientName: clientName,
                    portName: String(cString: snd_seq_port_info_get_name(pinfo)),
                    isKernelClient: kernel,
                    capability: snd_seq_port_info_get_capability(pinfo),
                    type: snd_seq_port_info_get_type(pinfo)))
            }
        }
        return ports
    }

    /// One port, or nil if it does not exist.
    static func port(_ seq: OpaquePointer, _ address: SequencerAddress) -> MIDIPort? {
        var cinfo: OpaquePointer?
        var pinfo: OpaquePointer?
        snd_seq_client_info_malloc(&cinfo)
        snd_seq_port_info_malloc(&pinfo)
        defer { snd_seq_client_info_free(cinfo); snd_seq_port_info_free(pinfo) }
        guard snd_seq_get_any_client_info(seq, Int32(address.client), cinfo) >= 0,
              snd_seq_get_any_port_info(seq, Int32(address.client), Int32(address.port), pinfo) >= 0 else { return nil }
        return MIDIPort(address: address,
                        clientName: String(cString: snd_seq_client_info_get_name(cinfo)),
                        portName: String(cString: snd_seq_port_info_get_name(pinfo)),
                        isKernelClient: snd_seq_client_info_get_type(cinfo) == SND_SEQ_KERNEL_CLIENT,
                        capability: snd_seq_port_info_get_capability(pinfo),
                        type: snd_seq_port_info_get_type(pinfo))
    }

    /// Resolves one `--connect` target: `CLIENT:PORT` by number or name
    /// (`20:0`, `Virtual Raw MIDI 1-0:0`, `Virtual Raw MIDI 1-0:VirMIDI 1-0`),
    /// a client alone (its first source port), or a port name alone.
    /// Names are matched exactly first, then case-insensitively, then as a
    /// prefix (as `aconnect` does).
    static func resolve(_ target: String, among ports: [MIDIPort]) -> MIDIPort? {
        let t = target.trimmingSpaces
        let sources = ports.filter(\.isSource)
        func matches(_ a: String, _ b: String, _ level: Int) -> Bool {
            switch level {
            case 0: return a == b
            case 1: return a.lowercased() == b.lowercased()
            default: return a.lowercased().hasPrefix(b.lowercased())
            }
        }
        func clientMatches(_ p: MIDIPort, _ c: String, _ level: Int) -> Bool {
            if let n = UInt8(c) { return p.address.client == n }
            return matches(p.clientName, c, level)
        }
        func portMatches(_ p: MIDIPort, _ q: String, _ level: Int) -> Bool {
            if let n = UInt8(q) { return p.address.port == n }
            return matches(p.portName, q, level)
        }
        for level in 0..<3 {
            // Every split at a colon (client names may themselves hold one).
            var index = t.startIndex
            while let colon = t[index...].firstIndex(of: ":") {
                let c = String(t[..<colon]), q = String(t[t.index(after: colon)...])
                if let hit = sources.first(where: { clientMatches($0, c, level) && portMatches($0, q, level) }) { return hit }
                index = t.index(after: colon)
            }
            if let hit = sources.first(where: { clientMatches($0, t, level) }) { return hit }
            if let hit = sources.first(where: { matches($0.portName, t, level) }) { return hit }
        }
        return nil
    }
}
