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

    /// True if the segment is constant at `x`.
    func isSteady(at x: Float) -> Bool { step == 0 && end == x }

    mutating func reset(to x: Float) {
        value = x
        end = x
        step = 0
    }
}
