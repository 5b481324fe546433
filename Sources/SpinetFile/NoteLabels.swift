import SpinetMIDI
import SpinetSupport

/// One note as it sounds in an offline render: where it starts and ends in
/// the output, on which channel, played by which instrument. For machine
/// learning datasets (transcription, source separation), whose labels must
/// match the audio, not the MIDI file.
public struct NoteLabel: Equatable, Sendable {
    /// Output frames (frame 0 is the first frame of the file).
    public var onsetFrame: Int64
    public var offsetFrame: Int64
    /// 0-based port and 1-based channel, as a musician counts them.
    public var port: Int
    public var channel: Int
    public var key: Int
    public var velocity: Int
    public var program: Int
    public var bank: Int
    public var instrument: String
    /// False for a note that made no sound: its channel was muted.
    public var sounded: Bool
}

/// Works out the note labels of a render from its schedule, with the rules
/// the engine and its instruments follow:
/// - Where a note starts: the oscillator synth starts it at its exact frame;
///   the SoundFont player (FluidSynth) at the 64-frame boundary nearest it,
///   ties late (`SoundFontUnit.deliveryFrame`), where the engine delivers it.
///   The render drops the limiter's look-ahead, so an output frame is an
///   engine frame.
/// - Where it ends: its note-off (or a note-on of velocity 0), on the same
///   grid; held by the sustain pedal, the pedal's release; a new note on the
///   same key ends the one before (FluidSynth's rule); All Notes Off and All
///   Sound Off end every note of the channel (All Notes Off spares what the
///   pedal holds); a move to the other instrument (Bank Select 126 and a
///   Program Change, and back) ends every note the channel held; a note
///   still on at the end ends with the music.
/// - Which instrument plays it: `--channel` assignments, then Bank Select
///   126 with a Program Change, as `Engine.routeBank` routes them.
public struct NoteLabeler {
    /// The channels (global: port * 16 + channel) the synth plays from the start.
    public var synthChannels: Set<Int> = []
    public var mutedChannels: Set<Int> = []
    /// Empty: every channel is heard.
    public var soloChannels: Set<Int> = []
    /// The Bank Select MSB that moves a channel to the synth.
    public var synthBank = 126
    /// The SoundFont's grid.
    public var grid: Int64 = 64
    /// The name of what plays: (global channel, bank, program (nil: no
    /// Program Change yet), on the synth) -> name.
    public var instrumentName: (Int, Int, Int?, Bool) -> String = { _, _, _, _ in "" }

    public init() {}

    private struct Open {
        var onsetExact: Int64
        var velocity: Int
        var program: Int
        var programGiven: Bool
        var bank: Int
        var synth: Bool
        var sounded: Bool
        /// The note-off came while the pedal was down: it ends at the pedal's release.
        var pedalHeld = false
    }

    private struct ChannelState {
        var bankMSB = 0
        var program = 0
        var programGiven = false
        var synth = false
        var sustain = false
        var open: [Int: Open] = [:]
    }

    public func labels(_ schedule: MIDISchedule) -> [NoteLabel] {
        var channels: [Int: ChannelState] = [:]
        var out: [NoteLabel] = []
        let musicEnd = max(schedule.endFrame, schedule.events.last?.frame ?? 0)

        func delivered(_ frame: Int64, synth: Bool) -> Int64 {
            synth ? frame : (max(frame, 0) + grid / 2) / grid * grid
        }
        func close(_ c: Int, _ key: Int, at frame: Int64, state: inout ChannelState) {
            guard let n = state.open.removeValue(forKey: key) else { return }
            let drum = c % 16 == 9 && !n.synth
            out.append(NoteLabel(onsetFrame: delivered(n.onsetExact, synth: n.synth),
                                 offsetFrame: max(delivered(frame, synth: n.synth), delivered(n.onsetExact, synth: n.synth)),
                                 port: c / 16, channel: c % 16 + 1, key: key, velocity: n.velocity,
                                 program: n.program, bank: drum ? 128 : n.bank,
                                 instrument: instrumentName(c, drum ? 128 : n.bank, n.programGiven ? n.program : nil, n.synth),
                                 sounded: n.sounded))
        }
        func closeAll(_ c: Int, at frame: Int64, state: inout ChannelState, sparePedal: Bool) {
            for key in state.open.keys.sorted() {
                if sparePedal && state.sustain { state.open[key]!.pedalHeld = true; continue }
                close(c, key, at: frame, state: &state)
            }
        }

        for e in schedule.events {
            guard case .message(let m) = e.kind, let ch = m.channel else { continue }
            let c = Int(ch)
            var s = channels[c] ?? ChannelState(synth: synthChannels.contains(c))
            switch m {
            case .noteOn(_, let key, let velocity) where velocity > 0:
                let k = Int(key)
                close(c, k, at: e.frame, state: &s)
                let heard = !mutedChannels.contains(c) && (soloChannels.isEmpty || soloChannels.contains(c))
                s.open[k] = Open(onsetExact: e.frame, velocity: Int(velocity), program: s.program, programGiven: s.programGiven,
                                 bank: s.synth ? synthBank : s.bankMSB, synth: s.synth, sounded: heard)
            case .noteOn(_, let key, _), .noteOff(_, let key, _):
                let k = Int(key)
                if s.sustain, s.open[k] != nil { s.open[k]!.pedalHeld = true } else { close(c, k, at: e.frame, state: &s) }
            case .controlChange(_, let controller, let value):
                switch controller {
                case MIDIController.bankSelectMSB: s.bankMSB = Int(value)
                case MIDIController.sustain:
                    let down = value >= 64
                    if s.sustain && !down {
                        for key in s.open.keys.sorted() where s.open[key]!.pedalHeld { close(c, key, at: e.frame, state: &s) }
                    }
                    s.sustain = down
                case 120: closeAll(c, at: e.frame, state: &s, sparePedal: false)        // All Sound Off
                case MIDIController.allNotesOff: closeAll(c, at: e.frame, state: &s, sparePedal: true)
                default: break
                }
            case .programChange(_, let program):
                s.program = Int(program)
                s.programGiven = true
                let toSynth = s.bankMSB == synthBank ? true : synthChannels.contains(c)
                if toSynth != s.synth {
                    // the engine lifts the pedals and sends All Notes Off to the unit left
                    s.sustain = false
                    closeAll(c, at: e.frame, state: &s, sparePedal: false)
                    s.synth = toSynth
                }
            default:
                break
            }
            channels[c] = s
        }
        for c in channels.keys.sorted() {
            var s = channels[c]!
            closeAll(c, at: musicEnd, state: &s, sparePedal: false)
        }
        return out.sorted {
            ($0.onsetFrame, $0.port * 16 + $0.channel, $0.key, $0.offsetFrame)
                < ($1.onsetFrame, $1.port * 16 + $1.channel, $1.key, $1.offsetFrame)
        }
    }

    /// CSV with a header, or a JSON array when `json`; `stem` names each
    /// note's stem file (empty: none).
    public static func text(_ labels: [NoteLabel], sampleRate: Int, json: Bool, stem: (NoteLabel) -> String = { _ in "" }) -> String {
        let rate = Double(sampleRate)
        if json {
            let rows = labels.map { n in
                "{\"onset_frame\": \(n.onsetFrame), \"offset_frame\": \(n.offsetFrame), "
                    + "\"onset_s\": " + formatted("%.6f", Double(n.onsetFrame) / rate) + ", "
                    + "\"offset_s\": " + formatted("%.6f", Double(n.offsetFrame) / rate) + ", "
                    + "\"port\": \(n.port + 1), \"channel\": \(n.channel), \"key\": \(n.key), \"velocity\": \(n.velocity), "
                    + "\"program\": \(n.program), \"bank\": \(n.bank), \"instrument\": " + jsonQuoted(n.instrument) + ", "
                    + "\"stem\": " + jsonQuoted(stem(n)) + ", \"sounded\": \(n.sounded)}"
            }
            return "[\n" + rows.joined(separator: ",\n") + (rows.isEmpty ? "]\n" : "\n]\n")
        }
        var out = "onset_frame,offset_frame,onset_s,offset_s,port,channel,key,velocity,program,bank,instrument,stem,sounded\n"
        for n in labels {
            out += "\(n.onsetFrame),\(n.offsetFrame)," + formatted("%.6f,%.6f", Double(n.onsetFrame) / rate, Double(n.offsetFrame) / rate)
                + ",\(n.port + 1),\(n.channel),\(n.key),\(n.velocity),\(n.program),\(n.bank),"
                + csvField(n.instrument) + "," + csvField(stem(n)) + ",\(n.sounded)\n"
        }
        return out
    }

    /// A CSV field, quoted when it holds a comma, a quote or any control
    /// character (RFC 4180: a line break inside quotes is part of the field).
    /// Looked at by Unicode scalars: "\r\n" is one Character, equal to
    /// neither "\r" nor "\n".
    public static func csvField(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || isControlCharacter($0) }) else { return s }
        return "\"" + s.replacing("\"", with: "\"\"") + "\""
    }
}
