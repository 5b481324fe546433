/// The control periods of an effect that updates its parameters (glides,
/// LFOs, coefficients) once every `interval` frames and renders the frames
/// in between: the split of a call's frames into pieces that never cross a
/// period, written once for every effect (`process`, and `rest` where an
/// effect has it, go through it). A plain value with a concrete method, so
/// that a debug build calls it without allocating either.
struct ControlClock {
    let interval: Int
    /// Frames left in the current control period (0: a new one is due).
    var framesUntilControl = 0

    init(interval: Int) {
        self.interval = interval
    }

    /// The next piece of a call with `remaining` frames to go: how many
    /// frames it has (at most `remaining`, never past the period's end),
    /// where in the period it starts, and whether a new period begins with
    /// it (the effect then starts it before rendering the piece).
    @inline(__always)
    mutating func nextPiece(_ remaining: Int) -> (count: Int, offset: Int, begins: Bool) {
        let begins = framesUntilControl == 0
        if begins { framesUntilControl = interval }
        let count = min(framesUntilControl, remaining)
        let offset = interval - framesUntilControl
        framesUntilControl -= count
        return (count, offset, begins)
    }

    /// The next call starts a new period.
    mutating func restart() {
        framesUntilControl = 0
    }
}
