/// Maps an ALSA sequencer queue's real time to CLOCK_MONOTONIC.
///
/// The kernel stamps each event with the queue's real time when it delivers
/// it to Spinet's port, so a late-running sequencer thread still knows when
/// the event really arrived. The offset between the two clocks is measured
/// by reading the queue time between two monotonic readings; the reading
/// with the narrowest bracket wins, and the offset is re-measured from time
/// to time because the queue's timer may drift from the monotonic clock.
public struct QueueClockCalibration: Sendable, Equatable {
    /// monotonic = queue + offset
    public private(set) var offset: Int64?
    private var bestWidth: Int64 = .max

    public init() {}

    /// Starts a new round of measurements (keeps the current offset until
    /// the round offers one).
    public mutating func beginRound() {
        bestWidth = .max
    }

    /// One measurement: the queue read `queue` ns between monotonic
    /// readings `before` and `after`.
    public mutating func add(queue: Int64, before: Int64, after: Int64) {
        let width = after - before
        guard width >= 0, width < bestWidth else { return }
        bestWidth = width
        offset = before + width / 2 - queue
    }

    /// CLOCK_MONOTONIC ns for a queue time, if calibrated.
    public func monotonic(forQueue queue: Int64) -> Int64? {
        offset.map { queue + $0 }
    }
}
