/// A parameter that glides linearly to a new target in a fixed number of
/// frames, so that a change is never a step: a step in a gain is a click, a
/// step in a delay length a discontinuity in the waveform.
///
/// Linear rather than exponential: it arrives exactly, after a known number
/// of frames, and from then on the value is steady and bit-exact (an
/// exponential smoother only approaches its target and keeps the effect in
/// "changing" mode forever). Effects advance it once per control period and
/// interpolate inside the period with `Ramp`.
struct SmoothedValue {
    private(set) var current: Double
    private(set) var target: Double
    private var step = 0.0
    private var remaining = 0
    /// Frames a change takes.
    let rampFrames: Int

    init(_ value: Double, rampFrames: Int) {
        current = value
        target = value
        self.rampFrames = max(0, rampFrames)
    }

    var isSmoothing: Bool { remaining > 0 }

    /// Glides from where the value is now to `value` in `rampFrames` frames.
    mutating func set(_ value: Double) {
        guard value != target else { return }
        target = value
        if rampFrames == 0 || value == current {
            current = value
            remaining = 0
        } else {
            remaining = rampFrames
            step = (value - current) / Double(rampFrames)
        }
    }

    /// Sets the value at once (at initialization, or while nothing sounds).
    mutating func jump(to value: Double) {
        current = value
        target = value
        remaining = 0
    }

    /// Moves `frames` frames on and returns the value there.
    @discardableResult
    mutating func advance(_ frames: Int) -> Double {
        guard remaining > 0 else { return current }
        if frames >= remaining {
            current = target
            remaining = 0
        } else {
            current += step * Double(frames)
            remaining -= frames
        }
        return current
    }
}
