import Synchronization

/// Where the engine's timeline meets the wall clock: an engine frame and the
/// CLOCK_MONOTONIC time at which that frame leaves the audio device.
public struct TimelineAnchor: Sendable, Equatable {
    /// An engine frame (frame 0 = the first frame after `Engine.prepare`).
    public var frame: Int64
    /// CLOCK_MONOTONIC nanoseconds at which `frame` is played.
    public var nanoseconds: Int64
    public init(frame: Int64, nanoseconds: Int64) {
        self.frame = frame
        self.nanoseconds = nanoseconds
    }
}

/// The live-input timing rule, in one place.
///
/// An event that arrives at time `t` (CLOCK_MONOTONIC) is played at
/// `t + latency`, always: latency is constant, so the jitter of the
/// sequencer thread and of the period boundaries does not reach the sound.
///
///     frame(t) = anchor.frame + round((t + latency - anchor.nanoseconds) * rate / 1e9)
///
/// where the anchor is the most recent (frame, play time) pair the render
/// thread published. The render thread takes the play time of the frame it
/// is about to render from the device's own timestamp of its last position
/// update (`snd_pcm_htimestamp`) plus the frames still queued before it.
///
/// The latency must cover the audio buffer: the render thread renders the
/// block starting at frame F when one period of the buffer is free, that is
/// when F is still `(periods - 1) * period` frames from being played; an
/// event for the last frame of that block must have arrived by then. So
///
///     latency = periods * period + safety
///
/// (`safety` covers the sequencer thread's own reaction time). Later events
/// are applied at once and counted as late by the engine.
public struct LiveTiming: Sendable, Equatable {
    public var sampleRate: Double
    /// Frames from arrival to the device (not counting the engine's limiter look-ahead).
    public var latencyFrames: Int64

    public init(sampleRate: Double, latencyFrames: Int64) {
        self.sampleRate = sampleRate
        self.latencyFrames = latencyFrames
    }

    /// `periods * period + safety` frames.
    public init(sampleRate: Double, periodFrames: Int, periods: Int, safetyFrames: Int) {
        self.init(sampleRate: sampleRate, latencyFrames: Int64(periodFrames * periods + safetyFrames))
    }

    public var latencyNanoseconds: Int64 {
        Int64((Double(latencyFrames) * 1e9 / sampleRate).rounded())
    }

    /// The engine frame for an event that arrived at `arrival` (ns).
    @inline(__always)
    public func frame(forArrival arrival: Int64, anchor: TimelineAnchor) -> Int64 {
        let delta = Double(arrival &+ latencyNanoseconds &- anchor.nanoseconds)
        return anchor.frame &+ Int64((delta * sampleRate / 1e9).rounded())
    }
}

/// The latest `TimelineAnchor`, published by the render thread and read by
/// the sequencer thread, without locks.
///
/// A sequence lock: the writer makes the counter odd, writes both values,
/// makes it even again (release); a reader retries until it saw the same
/// even counter before and after reading (acquire). The writer never waits.
public final class AudioTimeline: Sendable {
    private let sequence = Atomic<UInt64>(0)
    private let frame = Atomic<Int64>(0)
    private let nanoseconds = Atomic<Int64>(0)

    public init() {}

    /// Render thread only. Never blocks, allocates nothing.
    @inline(__always)
    public func publish(_ anchor: TimelineAnchor) {
        let s = sequence.load(ordering: .relaxed)
        sequence.store(s &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        frame.store(anchor.frame, ordering: .relaxed)
        nanoseconds.store(anchor.nanoseconds, ordering: .relaxed)
        sequence.store(s &+ 2, ordering: .releasing)
    }

    /// Any thread. How many anchors were published so far: a reader that
    /// saw n knows the next one once this exceeds n.
    public var publications: UInt64 {
        sequence.load(ordering: .acquiring) / 2
    }

    /// Any thread. The latest anchor, or nil before the first publication.
    public func read() -> TimelineAnchor? {
        while true {
            let s1 = sequence.load(ordering: .acquiring)
            if s1 == 0 { return nil }
            if s1 & 1 == 1 { continue }
            let f = frame.load(ordering: .relaxed)
            let n = nanoseconds.load(ordering: .relaxed)
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == s1 {
                return TimelineAnchor(frame: f, nanoseconds: n)
            }
        }
    }
}
