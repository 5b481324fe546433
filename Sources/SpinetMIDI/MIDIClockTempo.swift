/// The tempo of a MIDI clock: a DAW or drum machine sends 24 clock ticks
/// per quarter note while it plays, and Spinet's tempo-synced delay follows.
///
/// Tick arrival times jitter (by up to a millisecond on a busy system
/// without kernel time stamps: half a percent of a beat at 120 bpm), so the
/// tempo is measured twice: over the last beat, which follows a real change
/// within that beat and is reported when it moves by more than
/// `changeThreshold`, and over the last `beats` beats, four times steadier,
/// which is reported when it moves by more than `threshold`. So a steady
/// clock gives one tempo, not a new one every tick. A pause longer than
/// `gap` between ticks means the clock stopped: the next tick starts a new
/// measurement, as do Start, Continue and Stop.
public struct MIDIClockTempo: Sendable {
    public static let ticksPerBeat = 24
    /// The long measurement, in beats.
    public static let beats = 4
    /// Longest pause between ticks of a running clock, in nanoseconds
    /// (a tick every 0.5 s is 5 bpm).
    public static let gap: Int64 = 500_000_000
    /// Relative change of the long measurement that counts as a new tempo.
    public static let threshold = 0.005
    /// Relative change of the one-beat measurement that counts as a new tempo.
    public static let changeThreshold = 0.03
    /// Tempos outside this range are taken for a broken clock and not reported.
    public static let range: ClosedRange<Double> = 20...400

    /// The last `beats * ticksPerBeat + 1` tick times, a ring.
    private var times: [Int64]
    private var next = 0
    /// Ticks since the clock (re)started.
    private var count = 0
    /// The tempo last reported, in beats per minute.
    public private(set) var tempo: Double?

    public init() {
        times = [Int64](repeating: 0, count: Self.beats * Self.ticksPerBeat + 1)
    }

    /// The tick `ticksAgo` ticks before the latest.
    private func time(_ ticksAgo: Int) -> Int64 {
        times[(next - 1 - ticksAgo + 2 * times.count) % times.count]
    }

    /// Beats per minute over the last `beats` beats, if that many ticks came.
    private func measured(beats: Int) -> Double? {
        let ticks = beats * Self.ticksPerBeat
        guard count > ticks else { return nil }
        let span = time(0) - time(ticks)
        guard span > 0 else { return nil }
        let bpm = 60e9 * Double(beats) / Double(span)
        return Self.range.contains(bpm) ? bpm : nil
    }

    /// One clock tick that arrived at `time` (nanoseconds, any monotonic
    /// clock). Returns the tempo when it is new: after the first full beat
    /// once the clock (re)starts, and then on each change (see above).
    public mutating func tick(at time: Int64) -> Double? {
        if count > 0 {
            let last = self.time(0)
            if time < last || time - last > Self.gap { count = 0 }
        }
        times[next] = time
        next = (next + 1) % times.count
        count += 1
        guard let short = measured(beats: 1) else { return nil }
        guard let t = tempo else {
            tempo = short
            return short
        }
        // Steady: the last beat agrees with the last `beats`, so the long
        // measurement holds one tempo. Otherwise the tempo is changing and
        // the last beat leads.
        if let long = measured(beats: Self.beats), abs(short - long) <= long * Self.changeThreshold {
            // (after a change, wait until the long measurement has come
            // nearer the new tempo than the one reported)
            if abs(long - t) > t * Self.threshold && abs(long - short) <= abs(t - short) {
                tempo = long
                return long
            }
        } else if abs(short - t) > t * Self.changeThreshold {
            tempo = short
            return short
        }
        return nil
    }

    /// One clock tick that arrived at frame `frame` of a timeline running at
    /// `sampleRate` (a JACK cycle's frames): the same rule, timed in frames.
    public mutating func tick(atFrame frame: Int64, sampleRate: Int) -> Double? {
        guard sampleRate > 0 else { return nil }
        return tick(at: Int64((Double(frame) * 1e9 / Double(sampleRate)).rounded()))
    }

    /// Start, Continue or Stop: the ticks that follow begin a new beat.
    public mutating func restart() {
        count = 0
    }
}
