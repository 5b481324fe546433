import SpinetMIDI

/// Splits MIDI channels into groups of similar load, one group per render
/// thread (each group gets its own instrument unit).
public enum ChannelPartition {
    /// Channels (global, 0..<channels) in `parts` groups, balanced by the
    /// number of note-ons each channel plays: the busiest channel goes to the
    /// least-loaded group, and so on (ties broken by channel number, so the
    /// split is deterministic). Channels that play no note go to group 0.
    /// Groups that would stay empty are dropped.
    public static func balance(_ schedule: MIDISchedule, channels: Int, parts: Int) -> [[Int]] {
        var notes = [Int](repeating: 0, count: channels)
        for e in schedule.events {
            if case .message(let m) = e.kind, m.isNoteOn, let c = m.channel, Int(c) < channels {
                notes[Int(c)] += 1
            }
        }
        let playing = (0..<channels).filter { notes[$0] > 0 }.sorted { (notes[$0], -$0) > (notes[$1], -$1) }
        let count = max(1, min(parts, playing.count))
        var groups = [[Int]](repeating: [], count: count)
        var load = [Int](repeating: 0, count: count)
        for c in playing {
            let g = load.indices.min { (load[$0], $0) < (load[$1], $1) }!
            groups[g].append(c)
            load[g] += notes[c]
        }
        groups[0] += (0..<channels).filter { notes[$0] == 0 }
        return groups.map { $0.sorted() }
    }
}
