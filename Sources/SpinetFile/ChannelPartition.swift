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
        let keys = keyLoads(schedule, channels: channels, noteCost: noteCost)
        return (0..<channels).map { c in keys[c * 128..<(c + 1) * 128].reduce(0, +) }
    }

    /// `estimatedLoad` per channel and key (index channel * 128 + key).
    static func keyLoads(_ schedule: MIDISchedule, channels: Int, noteCost: NoteCost?) -> [Int64] {
        let rate = Double(schedule.sampleRate)
        let release = Int64(releaseSeconds * rate)
        let cap = Int64(longestNoteSeconds * rate)
        var load = [Int64](repeating: 0, count: channels * 128)
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
                load[c * 128 + note.key] += Int64(seconds * rate)
            } else {
                load[c * 128 + note.key] += held + release
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

extension ChannelPartition {
    /// Channel 10 of the second port: where `splitDrums` moves keys (a drum
    /// channel too: Spinet gives channel 10 of every port drums).
    public static let drumSplitChannel = 25

    /// Splits the drum channel (channel 10) between itself and
    /// `drumSplitChannel` by key, when it carries more than a third of the
    /// file's estimated load: no split of whole channels could then keep two
    /// render threads even (in many files the drums are half the work). The
    /// keys go to the two sides by their load, keys that share an exclusive
    /// class (`exclusiveClasses`: a hi-hat's closed, pedal and open keys)
    /// to the same side, since a key only silences its class within its own
    /// synthesizer. Every other message of channel 10 (controllers, program,
    /// pitch, pressure) is copied to the second channel just after the
    /// original, so both sides play alike. Nil where it does not apply: a
    /// file on more than one port, with SysEx other than a GM, GS or XG
    /// reset or master volume (a part setting could reach one side only),
    /// or no real split.
    public static func splitDrums(_ schedule: MIDISchedule, noteCost: NoteCost?, exclusiveClasses: (_ key: Int) -> [Int]) -> MIDISchedule? {
        let drums = 9, split = drumSplitChannel
        for e in schedule.events {
            if case .message(let m) = e.kind, let c = m.channel, c >= 16 { return nil }
        }
        guard schedule.sysEx.allSatisfy(isGlobalSysEx) else { return nil }
        let keys = keyLoads(schedule, channels: 16, noteCost: noteCost)
        let total = keys.reduce(0, +)
        let drumKeys = Array(keys[drums * 128..<(drums + 1) * 128])
        guard total > 0, drumKeys.reduce(0, +) * 3 > total else { return nil }

        // keys joined by a shared exclusive class, heaviest set first
        var owner = Array(0..<128)
        func find(_ k: Int) -> Int { owner[k] == k ? k : find(owner[k]) }
        var classKey: [Int: Int] = [:]
        for k in 0..<128 where drumKeys[k] > 0 {
            for c in exclusiveClasses(k) where c != 0 {
                if let other = classKey[c] { owner[find(k)] = find(other) } else { classKey[c] = k }
            }
        }
        var sets: [Int: (keys: [Int], load: Int64)] = [:]
        for k in 0..<128 where drumKeys[k] > 0 {
            sets[find(k), default: ([], 0)].keys.append(k)
            sets[find(k)]!.load += drumKeys[k]
        }
        var side = [Int64](repeating: 0, count: 2)
        var moved = Set<Int>()
        for set in sets.values.sorted(by: { ($0.load, -$0.keys[0]) > ($1.load, -$1.keys[0]) }) {
            let s = side[0] <= side[1] ? 0 : 1
            side[s] += set.load
            if s == 1 { moved.formUnion(set.keys) }
        }
        guard !moved.isEmpty, side[1] > 0 else { return nil }

        var out = schedule
        out.events = []
        out.events.reserveCapacity(schedule.events.count * 11 / 10)
        for e in schedule.events {
            guard case .message(let m) = e.kind, m.channel == UInt8(drums) else { out.events.append(e); continue }
            switch m {
            case .noteOn(_, let key, let v) where moved.contains(Int(key & 0x7F)):
                out.events.append(.init(frame: e.frame, kind: .message(.noteOn(channel: UInt8(split), key: key, velocity: v))))
            case .noteOff(_, let key, let v) where moved.contains(Int(key & 0x7F)):
                out.events.append(.init(frame: e.frame, kind: .message(.noteOff(channel: UInt8(split), key: key, velocity: v))))
            case .polyPressure(_, let key, let v) where moved.contains(Int(key & 0x7F)):
                out.events.append(.init(frame: e.frame, kind: .message(.polyPressure(channel: UInt8(split), key: key, pressure: v))))
            case .noteOn, .noteOff, .polyPressure:
                out.events.append(e)
            case .controlChange(_, let controller, let value):
                out.events.append(e)
                out.events.append(.init(frame: e.frame, kind: .message(.controlChange(channel: UInt8(split), controller: controller, value: value))))
            case .programChange(_, let program):
                out.events.append(e)
                out.events.append(.init(frame: e.frame, kind: .message(.programChange(channel: UInt8(split), program: program))))
            case .channelPressure(_, let pressure):
                out.events.append(e)
                out.events.append(.init(frame: e.frame, kind: .message(.channelPressure(channel: UInt8(split), pressure: pressure))))
            case .pitchBend(_, let value):
                out.events.append(e)
                out.events.append(.init(frame: e.frame, kind: .message(.pitchBend(channel: UInt8(split), value: value))))
            case .systemReset:
                out.events.append(e)
            }
        }
        return out
    }

    /// SysEx that acts on every channel alike: GM/GM2 on/off, GS and XG
    /// resets, universal master volume.
    static func isGlobalSysEx(_ m: [UInt8]) -> Bool {
        if m.count >= 6 && m[1] == 0x7E && m[3] == 0x09 { return true }                         // GM system on/off
        if m.count >= 8 && m[1] == 0x7F && m[3] == 0x04 && m[4] == 0x01 { return true }          // master volume
        if m.count >= 11 && m[1] == 0x41 && m[3] == 0x42 && m[4] == 0x12
            && m[5] == 0x40 && m[6] == 0x00 && m[7] == 0x7F { return true }                      // GS reset
        if m.count >= 9 && m[1] == 0x43 && (m[2] & 0xF0) == 0x10 && m[3] == 0x4C
            && m[4] == 0x00 && m[5] == 0x00 && m[6] == 0x7E { return true }                      // XG system on
        return false
    }
}
