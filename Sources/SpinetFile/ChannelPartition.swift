import SpinetMIDI

/// Splits MIDI channels into groups of similar load, one group per render
/// thread (each group gets its own instrument unit).
public enum ChannelPartition {
    /// How long a voice sounds after its key (and the sustain pedal) lets
    /// go, in seconds: the release of a typical General MIDI preset.
    static let releaseSeconds = 0.3
    /// Longest time one note is counted for, in seconds: most samples decay
    /// or loop quietly long before a very long held note ends.
    static let longestNoteSeconds = 8.0

    /// The work each channel (global, 0..<channels) gives a sample-playing
    /// synthesizer, estimated from the file: the time its voices sound,
    /// which is what FluidSynth's cost grows with. Each note counts from its
    /// note-on to its note-off, or to the sustain pedal's release if the
    /// pedal holds it (capped at `longestNoteSeconds`), plus
    /// `releaseSeconds`. Note counts alone mislead: a pad channel of long
    /// chords costs more than a drum channel of many short hits. In frames.
    ///
    /// With `noteCost` (from the SoundFont, see `NoteCost`), a note counts
    /// what it returns instead: the seconds each of its voices sounds.
    public static func estimatedLoad(_ schedule: MIDISchedule, channels: Int, noteCost: NoteCost? = nil) -> [Int64] {
        let rate = Double(schedule.sampleRate)
        let release = Int64(releaseSeconds * rate)
        let cap = Int64(longestNoteSeconds * rate)
        var load = [Int64](repeating: 0, count: channels)
        struct Note { var start: Int64; var key: Int; var velocity: Int; var bank: Int; var program: Int }
        // per channel and key: the notes sounding (oldest first)
        var sounding = [[Note]](repeating: [], count: channels * 128)
        // per channel: notes released while the pedal was down
        var pedalHeld = [[Note]](repeating: [], count: channels)
        var pedalDown = [Bool](repeating: false, count: channels)
        var bank = [Int](repeating: 0, count: channels), program = [Int](repeating: 0, count: channels)

        func end(_ c: Int, _ note: Note, at frame: Int64) {
            let held = min(max(frame - note.start, 0), cap)
            if let noteCost, let seconds = noteCost(note.bank, note.program, c % 16 == 9,
                                                    note.key, note.velocity, Double(held) / rate) {
                load[c] += Int64(seconds * rate)
            } else {
                load[c] += held + release
            }
        }
        for e in schedule.events {
            guard case .message(let m) = e.kind, let ch = m.channel, Int(ch) < channels else { continue }
            let c = Int(ch)
            switch m {
            case .noteOn(_, let key, let velocity) where velocity > 0:
                sounding[c * 128 + Int(key & 0x7F)].append(Note(start: e.frame, key: Int(key & 0x7F), velocity: Int(velocity & 0x7F),
                                                                 bank: bank[c], program: program[c]))
            case .noteOn(_, let key, _), .noteOff(_, let key, _):
                let k = c * 128 + Int(key & 0x7F)
                guard !sounding[k].isEmpty else { continue }
                let note = sounding[k].removeFirst()
                if pedalDown[c] { pedalHeld[c].append(note) } else { end(c, note, at: e.frame) }
            case .controlChange(_, MIDIController.sustain, let value):
                let down = value >= 64
                if pedalDown[c] && !down {
                    for note in pedalHeld[c] { end(c, note, at: e.frame) }
                    pedalHeld[c].removeAll()
                }
                pedalDown[c] = down
            case .controlChange(_, MIDIController.bankSelectMSB, let value):
                bank[c] = Int(value & 0x7F)
            case .programChange(_, let p):
                program[c] = Int(p & 0x7F)
            case .controlChange(_, let controller, _) where controller == MIDIController.allNotesOff || controller == MIDIController.allSoundOff:
                for key in 0..<128 {
                    for note in sounding[c * 128 + key] { end(c, note, at: e.frame) }
                    sounding[c * 128 + key].removeAll()
                }
            default:
                break
            }
        }
        // notes still sounding at the end of the music
        let last = max(schedule.endFrame, schedule.events.last?.frame ?? 0)
        for c in 0..<channels {
            for note in pedalHeld[c] { end(c, note, at: last) }
            for key in 0..<128 { for note in sounding[c * 128 + key] { end(c, note, at: last) } }
        }
        return load
    }

    /// The seconds the voices of one note sound in total (each from its
    /// note-on until it ends), for a note held `held` seconds on a channel
    /// with this bank (Bank Select MSB) and program; nil: not known (the
    /// note then counts as held + `releaseSeconds`).
    public typealias NoteCost = (_ bank: Int, _ program: Int, _ drum: Bool, _ key: Int, _ velocity: Int, _ held: Double) -> Double?

    /// Per channel (global, 0..<channels): whether the file plays a note on it.
    public static func playing(_ schedule: MIDISchedule, channels: Int) -> [Bool] {
        var plays = [Bool](repeating: false, count: channels)
        for e in schedule.events {
            if case .message(let m) = e.kind, m.isNoteOn, let c = m.channel, Int(c) < channels { plays[Int(c)] = true }
        }
        return plays
    }

    /// Channels (global, 0..<channels) in `parts` groups of similar
    /// `estimatedLoad`: the busiest channel goes to the least-loaded group,
    /// and so on (ties broken by channel number, so the split is
    /// deterministic). Channels that play no note go to group 0. Groups that
    /// would stay empty are dropped.
    public static func balance(_ schedule: MIDISchedule, channels: Int, parts: Int, noteCost: NoteCost? = nil) -> [[Int]] {
        let cost = estimatedLoad(schedule, channels: channels, noteCost: noteCost)
        let plays = playing(schedule, channels: channels)
        let playing = (0..<channels).filter { plays[$0] }.sorted { (cost[$0], -$0) > (cost[$1], -$1) }
        let count = max(1, min(parts, playing.count))
        var groups = [[Int]](repeating: [], count: count)
        var load = [Int64](repeating: 0, count: count)
        for c in playing {
            let g = load.indices.min { (load[$0], $0) < (load[$1], $1) }!
            groups[g].append(c)
            load[g] += cost[c]
        }
        groups[0] += (0..<channels).filter { !plays[$0] }
        return groups.map { $0.sorted() }
    }
}
