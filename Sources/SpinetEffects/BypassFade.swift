/// The switch behind every effect's `isBypassed`: a linear fade of the
/// effect's gain between 1 and 0, so that switching never clicks.
///
/// Send effects (reverb, chorus, delay) apply it to both their input and
/// their return: fading out silences the return smoothly; once it has reached
/// 0 the effect clears its state and stops computing, so switching back on
/// starts from silence (no stale tail) and fades in. The equalizer uses it as
/// a dry/processed crossfade.
struct BypassFade {
    /// Fade length: 20 ms is short enough to feel immediate and long enough
    /// that even a full-scale low-frequency signal does not click.
    static let seconds = 0.02

    private var level: SmoothedValue
    /// Per-frame gain inside the current control period.
    private(set) var ramp: Ramp

    init(sampleRate: Double, bypassed: Bool = false) {
        let frames = max(1, Int((Self.seconds * sampleRate).rounded()))
        level = SmoothedValue(bypassed ? 0 : 1, rampFrames: frames)
        ramp = Ramp(bypassed ? 0 : 1)
    }

    var isBypassRequested: Bool { level.target == 0 }

    mutating func set(bypassed: Bool) { level.set(bypassed ? 0 : 1) }

    /// True once the fade-out is complete: nothing is left to compute.
    var isSilent: Bool { level.target == 0 && level.current == 0 && ramp.isSteady(at: 0) }

    /// True while the effect runs at full level.
    var isFullyOn: Bool { level.target == 1 && level.current == 1 && ramp.isSteady(at: 1) }

    /// Starts the next control period of `frames` frames.
    mutating func beginPeriod(frames: Int) {
        ramp.begin(to: Float(level.advance(frames)), frames: frames)
    }

    @inline(__always) mutating func next() -> Float { ramp.next() }

    /// The next `count` gains into `p` (see `Ramp.fill`).
    @inline(__always) mutating func fill(_ p: UnsafeMutablePointer<Float>, count: Int) { ramp.fill(p, count: count) }

    /// Moves on `count` frames (see `Ramp.skip`).
    @inline(__always) mutating func skip(_ count: Int) { ramp.skip(count) }

    /// Where a send effect's call starts: whether it is faded out (compute
    /// nothing, let pending glides arrive), and whether to reset it first
    /// (it was heard since it was last cleared, so that switching back on
    /// starts from silence). `needsClear` is the effect's flag: set while
    /// it is heard, cleared by its `reset`.
    @inline(__always) func fadedOut(needsClear: inout Bool) -> (off: Bool, resetFirst: Bool) {
        guard isSilent else {
            needsClear = true
            return (false, false)
        }
        return (true, needsClear)
    }
}
