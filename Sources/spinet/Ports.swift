import ArgumentParser
import Glibc
import SpinetSupport
import SpinetALSA
import SpinetJACK

struct Ports: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List MIDI sources and audio outputs, with the names `play --connect`, `play --device` and `play --jack-connect` take."
    )

    func run() throws {
        try reportingFailures(list)
    }

    private func list() throws {
        var lines: [String] = []
        lines.append("MIDI sources (spinet play --connect CLIENT:PORT,...; --connect auto takes those not marked):")
        do {
            let sources = try DeviceList.midiSources()
            if sources.isEmpty { lines.append("  (none)") }
            let width = sources.map { $0.port.address.description.count }.max() ?? 0
            for (port, skipped) in sources {
                let address = port.address.description.padded(to: max(width, 5))
                lines.append("  \(address)  \(port.name)" + (skipped.map { "   [auto skips: \($0)]" } ?? ""))
            }
        } catch {
            lines.append("  (none: \(error.description))")
        }
        lines.append("")
        lines.append("Audio outputs (spinet play --device NAME):")
        let cards = DeviceList.soundCardCount()
        let outputs = DeviceList.audioOutputs()
        let width = outputs.map(\.name.count).max() ?? 0
        if cards == 0 {
            // "default" and the sound-server names are listed by the ALSA
            // configuration whether or not anything can play through them.
            lines.append("  (no sound card found; these names play only through a sound server with an output of its own)")
        }
        for o in outputs {
            lines.append("  \(o.name.padded(to: max(width, 7)))  \(o.description)")
        }
        lines.append("")
        lines.append("JACK ports (spinet play --driver jack --jack-connect PORT,PORT takes audio inputs; connect MIDI outputs to Spinet's midi_in):")
        do {
            let ports = try JACKPorts.list()
            if ports.isEmpty { lines.append("  (none)") }
            let width = ports.map(\.name.count).max() ?? 0
            for p in ports {
                let kind = "\(p.isAudio ? "audio" : p.isMIDI ? "MIDI" : p.type) \(p.isInput ? "input" : "output")\(p.isPhysical ? ", physical" : "")"
                let links = p.connections.isEmpty ? "" : "   -> " + p.connections.joined(separator: ", ")
                lines.append("  \(p.name.padded(to: width))  \(kind)\(links)")
            }
        } catch {
            lines.append("  (none: \(error.description))")
        }
        print(lines.joined(separator: "\n"))
        if cards == 0 {
            throw Failure("no sound card found (none in /proc/asound/cards); connect or enable one, or load a driver (e.g. sudo modprobe snd-dummy to test)", status: 1)
        }
    }
}
