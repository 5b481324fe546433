/// A per-frame linear segment inside one control period: starts exactly at
/// the previous segment's end, so a chain of segments is continuous.
struct Ramp {
    private(set) var value: Float
    private(set) var step: Float = 0
    private(set) var end: Float

    init(_ value: Float) {
        self.value = value
        end = value
    }

    /// Starts a segment from the previous end to `target` over `frames` frames.
    mutating func begin(to target: Float, frames: Int) {
        value = end
        end = target
        step = target == value ? 0 : (target - value) / Float(frames)
    }

    /// Value for the next frame.
    @inline(__always) mutating func next() -> Float {
        value += step
        return value
    }

    /// The next `count` values into `p[0..<count]`: the values `next()`
    /// would give, to the bit (a steady segment adds its zero step once, as
    /// the first `next()` would, and then fills), kept in a register rather
    /// than stored back on every frame.
    @inline(__always) mutating func fill(_ p: UnsafeMutablePointer<Float>, count: Int) {
        guard count > 0 else { return }
        var v = value
        let s = step
        if s == 0 {
            v += s
            p.update(repeating: v, count: count)
        } else {
            for n in 0..<count {
                v += s
                p[n] = v
            }
        }
        value = v
    }

    /// Moves on `count` frames, as `count` calls of `next()` would.
    @inline(__always) mutating func skip(_ count: Int) {
        guard count > 0 else { return }
        var v = value
        let s = step
        if s == 0 {
            v += s
        } else {
            for _ in 0..<count { v += s }
        }
        value = v
    }

    /// True if the segment is constant at `x`.
    func isSteady(at x: Float) -> Bool { step == 0 && end == x }

    mutating func reset(to x: Float) {
        value = x
        end = x
        step = 0
    }
}
