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
        channelSums(estimatedKeyLoad(schedule, channels: channels, noteCost: noteCost), channels: channels)
    }

    /// Per channel, the sum of its keys' entries in a channel * 128 + key table.
    static func channelSums(_ keyLoad: [Int64], channels: Int) -> [Int64] {
        (0..<channels).map { c in keyLoad[(c * 128)..<(c * 128 + 128)].reduce(0, +) }
    }

    /// `estimatedLoad` per channel and key: index channel * 128 + key.
    public static func estimatedKeyLoad(_ schedule: MIDISchedule, channels: Int, noteCost: NoteCost? = nil) -> [Int64] {
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
    /// (`portions` without `exclusiveKeys`, which splits no channel.)
    public static func balance(_ schedule: MIDISchedule, channels: Int, parts: Int, noteCost: NoteCost? = nil) -> [[Int]] {
        portions(schedule, channels: channels, parts: parts, noteCost: noteCost).map { $0.map(\.channel) }
    }

    /// Part of what one synthesizer plays: a whole channel, or a share of
    /// a channel split over synthesizers, whose keys' notes take turns
    /// between them (the engine's turn units). (Not a "lane": in SpinetSynth
    /// a lane is a SIMD voice slot.)
    public struct Portion: Equatable, Sendable, CustomStringConvertible {
        public enum Share: Equatable, Sendable {
            /// every note of the channel
            case whole
            /// the channel's home portion: its turn of each key's notes, and
            /// every note of `fixedKeys` (the keys of exclusive classes)
            case home(fixedKeys: [Int])
            /// its turn of each key's notes, but for the home portion's fixed keys
            case guest
        }
        public var channel: Int
        public var share: Share
        public init(channel: Int, share: Share = .whole) {
            self.channel = channel
            self.share = share
        }
        public var description: String {
            switch share {
            case .whole: return "\(channel)"
            case .home(let keys): return "\(channel)(home, \(keys.count) fixed keys)"
            case .guest: return "\(channel)(guest)"
            }
        }
    }

    /// The keys of a preset (bank MSB, program, on a drum channel or not)
    /// that share an exclusive class, one set per class: a note on one cuts
    /// the others off (open and closed hi-hat), within one synthesizer.
    public typealias ExclusiveKeys = (_ bank: Int, _ program: Int, _ drum: Bool) -> [Set<Int>]

    /// Per channel: whether its notes can take turns between synthesizers
    /// and sound the same. A new note on a key releases that key's sounding
    /// note, wherever it plays (the engine sends the other synthesizer a
    /// note-off), so what remains to tie notes together is mono mode,
    /// legato, portamento and sostenuto (which a repeated key carries over
    /// within one synthesizer), and exclusive classes, whose keys `portions`
    /// keeps on one synthesizer.
    public static func splittable(_ schedule: MIDISchedule, channels: Int) -> [Bool] {
        var ok = [Bool](repeating: true, count: channels)
        for e in schedule.events {
            guard case .message(.controlChange(let ch, let controller, let value)) = e.kind, Int(ch) < channels else { continue }
            switch controller {
            case 65, 66, 68: if value >= 64 { ok[Int(ch)] = false }   // portamento, sostenuto, legato
            case 84, 126, 127: ok[Int(ch)] = false                      // portamento control, mono and poly mode
            default: break
            }
        }
        return ok
    }

    /// Like `balance`, but a channel that alone outweighs half a part's
    /// share is split over `parts` synthesizers when `splittable` allows it
    /// and `exclusiveKeys` says which keys must stay together: each key's
    /// notes take turns between them, so a drum track that is most of a
    /// song's work, or one ride cymbal that is most of the drum track's,
    /// keeps every synthesizer busy, all through the song.
    public static func portions(_ schedule: MIDISchedule, channels: Int, parts: Int,
                                noteCost: NoteCost? = nil, exclusiveKeys: ExclusiveKeys? = nil) -> [[Portion]] {
        portions(schedule, channels: channels, parts: parts,
                 keyLoad: estimatedKeyLoad(schedule, channels: channels, noteCost: noteCost), exclusiveKeys: exclusiveKeys).groups
    }

    /// `portions` from the file's `estimatedKeyLoad`, with each group's
    /// estimated work (the sum of its portions' shares, in frames).
    public static func portions(_ schedule: MIDISchedule, channels: Int, parts: Int, keyLoad: [Int64],
                                exclusiveKeys: ExclusiveKeys? = nil) -> (groups: [[Portion]], work: [Int64]) {
        let cost = channelSums(keyLoad, channels: channels)
        let plays = playing(schedule, channels: channels)
        let total = (0..<channels).filter { plays[$0] }.reduce(Int64(0)) { $0 + cost[$1] }
        let canSplit = splittable(schedule, channels: channels)
        var items: [(portion: Portion, cost: Int64)] = []
        for c in 0..<channels where plays[c] {
            if parts > 1, let exclusiveKeys, canSplit[c], cost[c] * 2 * Int64(parts) > total {
                let fixed = fixedKeys(schedule, channel: c, exclusiveKeys: exclusiveKeys)
                let fixedCost = fixed.reduce(Int64(0)) { $0 + keyLoad[c * 128 + $1] }
                let turn = (cost[c] - fixedCost) / Int64(parts)
                if turn > 0 {
                    items.append((Portion(channel: c, share: .home(fixedKeys: fixed)), fixedCost + turn))
                    for _ in 1..<parts { items.append((Portion(channel: c, share: .guest), turn)) }
                    continue
                }
            }
            items.append((Portion(channel: c), cost[c]))
        }
        // heaviest first; a channel's home portion before its guests
        func rank(_ l: Portion) -> Int {
            if case .home = l.share { return 0 }
            return l.share == .whole ? 0 : 1
        }
        items.sort { ($0.cost, -$0.portion.channel, -rank($0.portion)) > ($1.cost, -$1.portion.channel, -rank($1.portion)) }
        let count = max(1, min(parts, items.count))
        var groups = [[Portion]](repeating: [], count: count)
        var load = [Int64](repeating: 0, count: count)
        for item in items {
            // a split channel's portions go to different synthesizers
            let taken = Set(groups.indices.filter { g in groups[g].contains { $0.channel == item.portion.channel } })
            let g = load.indices.filter { !taken.contains($0) }.min { (load[$0], $0) < (load[$1], $1) }
                ?? load.indices.min { (load[$0], $0) < (load[$1], $1) }!
            groups[g].append(item.portion)
            load[g] += item.cost
        }
        groups[0] += (0..<channels).filter { !plays[$0] }.map { Portion(channel: $0) }
        return (groups.map { $0.sorted { ($0.channel, rank($0)) < ($1.channel, rank($1)) } }, load)
    }

    /// The keys of channel `c` that belong to an exclusive class of a
    /// preset it selects (read as a drum kit and as a melodic preset, so a
    /// part switched to drums by SysEx is covered too).
    static func fixedKeys(_ schedule: MIDISchedule, channel c: Int, exclusiveKeys: ExclusiveKeys) -> [Int] {
        var presets: Set<[Int]> = [[0, 0]]
        var bank = 0
        for e in schedule.events {
            guard case .message(let m) = e.kind, m.channel.map(Int.init) == c else { continue }
            switch m {
            case .controlChange(_, MIDIController.bankSelectMSB, let value): bank = Int(value & 0x7F)
            case .programChange(_, let p): presets.insert([bank, Int(p & 0x7F)])
            default: break
            }
        }
        var keys = Set<Int>()
        for p in presets {
            for drum in [true, false] {
                for set in exclusiveKeys(p[0], p[1], drum) { keys.formUnion(set.filter { (0..<128).contains($0) }) }
            }
        }
        return keys.sorted()
    }
}
