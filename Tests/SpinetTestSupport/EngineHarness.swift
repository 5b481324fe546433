import SpinetEngine

/// Planar output of a test render.
public struct Rendered: Sendable {
    public var left: [Float]
    public var right: [Float]

    public init(left: [Float], right: [Float]) {
        self.left = left
        self.right = right
    }

    /// left + right (for measurements that do not care about pan).
    public var mono: [Float] { zip(left, right).map { $0 + $1 } }
}

/// The setup an engine test repeats: an engine, its units added and routed,
/// one input queue, prepared; and rendering it in blocks.
public enum EngineHarness {
    /// An engine (with `configuration`) that plays `unit` on every channel,
    /// with one input queue (`queueCapacity` events; the engine's default
    /// when nil), prepared for `sampleRate` and blocks of up to `maxFrames`.
    public static func make(_ unit: any InstrumentUnit, configuration: Engine.Configuration = Engine.Configuration(),
                            sampleRate: Double = 48_000, maxFrames: Int = 256,
                            queueCapacity: Int? = nil) -> (engine: Engine, queue: EventQueue) {
        make([unit], configuration: configuration, sampleRate: sampleRate, maxFrames: maxFrames,
             queueCapacity: queueCapacity) { engine, units in engine.routeAll(to: units[0]) }
    }

    /// The same with several units: `route` is given the engine and the
    /// units' indices (in the order of `units`) and routes the channels,
    /// before the queue is added and the engine prepared.
    public static func make(_ units: [any InstrumentUnit], configuration: Engine.Configuration = Engine.Configuration(),
                            sampleRate: Double = 48_000, maxFrames: Int = 256, queueCapacity: Int? = nil,
                            route: (Engine, [Int]) throws -> Void) rethrows -> (engine: Engine, queue: EventQueue) {
        let engine = Engine(configuration: configuration)
        let indices = units.map { engine.add($0) }
        try route(engine, indices)
        let queue = queueCapacity.map { engine.addInput(capacity: $0) } ?? engine.addInput()
        engine.prepare(sampleRate: sampleRate, maxFrames: maxFrames)
        return (engine, queue)
    }
}

/// Renders `frames` frames of `engine` in blocks of the given sizes (cycled;
/// a 0 is a call with no frames). The output starts as NaN, so a frame the
/// engine did not write shows.
public func renderEngine(_ engine: Engine, frames: Int, blockSizes: [Int] = [256]) -> Rendered {
    var left = [Float](repeating: .nan, count: frames)
    var right = [Float](repeating: .nan, count: frames)
    var done = 0, i = 0
    left.withUnsafeMutableBufferPointer { l in
        right.withUnsafeMutableBufferPointer { r in
            while done < frames {
                let n = min(blockSizes[i % blockSizes.count], frames - done)
                engine.render(frames: n, left: l.baseAddress! + done, right: r.baseAddress! + done)
                done += n
                i += 1
            }
        }
    }
    return Rendered(left: left, right: right)
}
