/// What a host does on the process thread around each render: publish
/// where the engine's frames meet the clock (for MIDI that arrives from
/// elsewhere, such as the ALSA sequencer, to be placed on the JACK
/// timeline), and record what was rendered. Subclass and override; both
/// run on the process thread, so they must not allocate, lock, log or make
/// system calls.
///
/// Held by `JACKClient` without reference counting on the process thread
/// (a class with overridable methods, not a protocol existential or a
/// closure: calling it costs one indirect call and no retain/release).
open class JACKCycleHooks: @unchecked Sendable {
    public init() {}

    /// Process thread. A cycle of `frames` frames begins: the engine's next
    /// frame is `engineFrame` (it restarts at 0 when a new graph is swapped
    /// in), and the cycle's first frame was due at `nanoseconds` on
    /// CLOCK_MONOTONIC (`jack_get_cycle_times`: the moment the period
    /// began; it reaches the speakers after the outputs' playback latency,
    /// `JACKClient.playbackLatencyFrames`).
    open func cycleStarts(engineFrame: Int64, frames: Int, nanoseconds: Int64) {}

    /// Process thread. The engine rendered `frames` frames into `left` and
    /// `right` (the JACK port buffers, valid until this returns).
    open func cycleRendered(left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) {}
}
