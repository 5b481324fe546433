import SpinetEffects

/// One piece of a stem: a unit's whole output, or one part of a
/// `PartedUnit` (a SoundFont player's channel).
public struct StemPart: Hashable, Sendable {
    public var unit: Int
    /// nil: the whole unit.
    public var part: Int?
    public init(unit: Int, part: Int? = nil) {
        self.unit = unit
        self.part = part
    }
}

/// The send effects a stem runs: those its channels send to.
public struct StemEffects: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let reverb = StemEffects(rawValue: 1)
    public static let chorus = StemEffects(rawValue: 2)
    public static let delay = StemEffects(rawValue: 4)
    public static let all: StemEffects = [.reverb, .chorus, .delay]
}

/// What `setStems` asked for, until `prepare` makes the `StemState`.
struct StemPlan {
    var parts: [[StemPart]]
    var effects: [StemEffects]
}

/// Stems that add up to the mix: the engine's finishing step, per stem.
///
/// The mix is made as without stems (every unit's output, the shared send
/// effects), so a render with stems has the same mix. A stem is a set of
/// pieces (`StemPart`): whole units, or parts of units that hand out each
/// channel's output (`PartedUnit`: the same SoundFont players a render
/// without stems uses). Each stem sums its pieces' dry sound and sends and
/// runs its own send effects, only those its channels send to
/// (`StemEffects`), each on exactly the frames the shared one ran on, so
/// that the modulation stays in step and their returns add up to the shared
/// return. The master bus gives the mix what it gives it without stems and
/// each stem the same gains, EQ and limiter gain (`MasterBus.processStems`).
/// Every stage is linear per stem, so the stems sum to the mix within float
/// rounding, when the stems hold every sounding piece: units and parts in
/// no stem must be silent (the host leaves only note-less or muted
/// channels out).
final class StemState {
    /// Per stem: the pieces it sums.
    let parts: [[StemPart]]
    /// Per stem: its own send effects (only those it sends to).
    let sends: [SendEffects]
    /// Per unit: the unit when some stem takes its parts, else nil.
    let partedUnits: [PartedUnit?]
    /// Per unit: its parts' outputs for buffer set 0 start at
    /// `partOutputs.pointer + partBase[u]`, set 1's `partCounts[u]` further on.
    let partBase: [Int]
    let partCounts: [Int]
    let partOutputs: FixedBuffer<UnitOutput>
    let partBuffer: FixedBuffer<Float>
    /// Per stem: the blocks in which it ran any send effect.
    let effectRuns: FixedBuffer<Int>
    /// `effectRuns.pointer`, for the stem tasks: the stems' threads each
    /// count their own stem through it (an access to the noncopyable
    /// property itself from each thread is one Swift access, which
    /// ThreadSanitizer reports as a race between the stem tasks).
    let effectRunCounts: UnsafeMutablePointer<Int>

    init(plan: StemPlan, units: [InstrumentUnit], sends: [SendEffects], maxFrames: Int) {
        parts = plan.parts
        self.sends = sends
        var parted = [PartedUnit?](repeating: nil, count: units.count)
        for stem in plan.parts {
            for piece in stem where piece.part != nil { parted[piece.unit] = units[piece.unit] as? PartedUnit }
        }
        partedUnits = parted
        var base = [Int](repeating: 0, count: units.count), counts = [Int](repeating: 0, count: units.count)
        var total = 0
        for u in 0..<units.count {
            base[u] = total
            counts[u] = parted[u]?.partCount ?? 0
            total += 2 * counts[u]
        }
        partBase = base
        partCounts = counts
        let buffer = FixedBuffer<Float>(repeating: 0, count: max(1, total * 8 * maxFrames))
        let pointer = buffer.pointer
        partOutputs = FixedBuffer(count: total) { UnitOutput(planar: pointer + $0 * 8 * maxFrames, stride: maxFrames) }
        partBuffer = buffer
        let runs = FixedBuffer<Int>(repeating: 0, count: max(1, plan.parts.count))
        effectRunCounts = runs.pointer
        effectRuns = runs
    }

    /// Unit `u`'s part outputs for buffer set `set`.
    @inline(__always)
    func partOutputs(unit u: Int, set: Int) -> UnsafePointer<UnitOutput> {
        UnsafePointer(partOutputs.pointer + partBase[u] + set * partCounts[u])
    }

    func requestTempo(_ bpm: Double, forSet set: Int) {
        var s = 0
        while s < sends.count { sends[s].requestTempo(bpm, forSet: set); s += 1 }
    }

    func request(_ request: EffectTypeSysEx, forSet set: Int) {
        var s = 0
        while s < sends.count { sends[s].request(request, forSet: set); s += 1 }
    }
}

extension Engine {
    /// Offline: renders stems besides the mix, one per entry of `stems`
    /// (the pieces it sums: a unit's whole output, or a part of a
    /// `PartedUnit`; each piece in one stem at most, and a unit either
    /// whole or by parts). `effects` names, per stem, the send effects it
    /// runs (nil: all): a stem whose channels never send to an effect need
    /// not run it. Call after adding the units, before `prepare`. Then pass
    /// stem buffers to `render(frames:left:right:stems:)` or
    /// `renderOverlapped(…stems:…)`.
    public func setStems(_ stems: [[StemPart]], effects: [StemEffects]? = nil) {
        precondition(!prepared, "set stems before prepare")
        precondition(effects == nil || effects!.count == stems.count, "one effect set per stem")
        let all = stems.flatMap { $0 }
        precondition(Set(all).count == all.count, "a piece belongs to one stem at most")
        precondition(all.allSatisfy { $0.unit >= 0 && $0.unit < units.count }, "stems name units of this engine")
        let whole = Set(all.filter { $0.part == nil }.map(\.unit))
        for piece in all {
            guard let p = piece.part else { continue }
            precondition(!whole.contains(piece.unit), "a unit is in the stems whole or by parts")
            let parted = units[piece.unit] as? PartedUnit
            precondition(parted != nil && p >= 0 && p < parted!.partCount, "a part names one of its unit's parts")
        }
        plannedStems = StemPlan(parts: stems, effects: effects ?? Array(repeating: .all, count: stems.count))
    }

    /// Offline: stems of whole units (see `setStems(_:effects:)`).
    public func setStems(_ stemUnits: [[Int]]) {
        setStems(stemUnits.map { $0.map { StemPart(unit: $0) } })
    }

    /// The number of stems (0: no stems).
    public var stemCount: Int { stems?.parts.count ?? plannedStems?.parts.count ?? 0 }

    /// The pieces of each stem.
    public var stemParts: [[StemPart]] { stems?.parts ?? plannedStems?.parts ?? [] }

    /// The send effects stem `s` has (after `prepare`: those it sends to
    /// that the engine has).
    public func stemEffects(_ s: Int) -> StemEffects {
        guard let sends = stems?.sends[s] else { return plannedStems?.effects[s] ?? [] }
        var e: StemEffects = []
        if sends.reverbParameters != nil { e.insert(.reverb) }
        if sends.chorusParameters != nil { e.insert(.chorus) }
        if sends.hasDelay { e.insert(.delay) }
        return e
    }

    /// The blocks in which stem `s` ran any of its send effects so far.
    /// While none renders.
    public func stemEffectRuns(_ s: Int) -> Int { stems?.effectRunCounts[s] ?? 0 }

    /// From `prepare`: each stem's send effects (only those it sends to),
    /// its parts' buffers, and the master bus's stem state.
    func prepareStems() {
        guard let plan = plannedStems else { return }
        let c = configuration
        let sends = plan.effects.map { e in
            SendEffects(reverb: e.contains(.reverb) ? c.reverb : nil, chorus: e.contains(.chorus) ? c.chorus : nil,
                        delay: e.contains(.delay) ? c.delay : nil, sampleRate: sampleRate, maxFrames: maxFrames)
        }
        let state = StemState(plan: plan, units: units, sends: sends, maxFrames: maxFrames)
        stems = state
        // A part's sends are read by its stem's effects only (a part in no stem is silent).
        for case let parted? in state.partedUnits {
            for p in 0..<parted.partCount { parted.readSends(ofPart: p, []) }
        }
        for (s, stem) in plan.parts.enumerated() {
            for piece in stem {
                if let p = piece.part { state.partedUnits[piece.unit]?.readSends(ofPart: p, stemEffects(s)) }
            }
        }
        sendEffects!.recordsActivity = true
        masterBus.prepareStems(count: plan.parts.count)
    }

    /// Renders `frames` frames of unit `u` into its block output from block
    /// frame `offset` on, and its parts when a stem takes them.
    @inline(__always)
    func renderPiece(_ u: Int, _ unit: InstrumentUnit, _ blockOutput: UnitOutput, offset: Int, frames: Int) {
        if let state = stems, let parted = state.partedUnits[u] {
            parted.render(blockOutput.advanced(by: offset), parts: state.partOutputs(unit: u, set: synthSet), partOffset: offset, frames: frames)
        } else {
            unit.render(blockOutput.advanced(by: offset), frames: frames)
        }
    }

    /// Render thread only, offline: renders `frames` frames (at most
    /// `maxFrames`) of the mix into `left`/`right` and of each stem into
    /// `stems` (`stemCount` pairs of pointers, left then right, `frames`
    /// floats each). Allocates nothing.
    public func render(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                       stems stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>) {
        precondition(frames <= maxFrames, "render with stems takes at most maxFrames frames a call")
        guard frames > 0 else { return }
        renderUnits(frames: frames, set: 0)
        finish(frames: frames, set: 0, left: left, right: right, stemOutputs: stemOutputs)
    }

    /// The finishing step in stems mode after the mix (see `StemState`),
    /// all on this thread.
    func finishStems(frames: Int, set: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                     stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>) {
        var s = 0
        while s < stems!.parts.count {
            renderStem(s, frames: frames, set: set, stemOutputs: stemOutputs)
            s += 1
        }
        masterBus.processStems(left: left, right: right, stems: stemOutputs, frames: frames, set: set)
    }

    /// Stem `s` of buffer set `set`'s block, before the master bus: the sum
    /// of its pieces' dry sound, and its own effects on the sum of their
    /// sends, on the frames the shared effects ran on (call after the
    /// block's mix). Touches only stem `s`'s buffers and effects, so the
    /// stems of a block may run on several threads at once.
    func renderStem(_ s: Int, frames: Int, set: Int, stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>) {
        let state = stems!
        let l = stemOutputs[2 * s], r = stemOutputs[2 * s + 1]
        let sends = state.sends[s]
        sends.applyRequests(set: set)
        let members = state.parts[s]
        let hasEffects = !sends.isEmpty
        var input = sends.bus
        if members.count == 1 {
            // One piece (a channel): its dry sound as added to silence
            // (0 + x, the same floats), and its own sends as the effects'
            // input, with no copy.
            let o = pieceOutput(members[0], set: set)
            for i in 0..<frames { l[i] = 0 + o.left[i] }
            for i in 0..<frames { r[i] = 0 + o.right[i] }
            input = SendBus(o)
        } else {
            l.update(repeating: 0, count: frames)
            r.update(repeating: 0, count: frames)
            if hasEffects && members.isEmpty { sends.clearBus() }
            var k = 0
            while k < members.count {
                let o = pieceOutput(members[k], set: set)
                Self.add(o.left, into: l, frames)
                Self.add(o.right, into: r, frames)
                if hasEffects { sends.accumulate(o, first: k == 0, frames: frames) }
                k += 1
            }
        }
        if hasEffects && sends.follow(sendEffects!, input, outputLeft: l, outputRight: r, frames: frames) != 0 {
            state.effectRunCounts[s] += 1
        }
    }

    /// A stem piece's output in buffer set `set`: its part's, or its whole unit's.
    @inline(__always)
    func pieceOutput(_ piece: StemPart, set: Int) -> UnitOutput {
        piece.part.map { stems!.partOutputs(unit: piece.unit, set: set)[$0] } ?? unitOutputs[set * units.count + piece.unit]
    }

    /// Offline, with workers: mixes the pending block (as without stems)
    /// and sets up its stems as tasks of this call's first worker round
    /// (beside the units of the next block), instead of one finishing task;
    /// `finishSplitStems` ends the block. False (nothing set up) without
    /// stems, workers or a pending block.
    func splitPendingStems(produced: Int, stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>?) -> Bool {
        guard produced > 0, let stemOutputs, let state = stems, hasWorkers else { return false }
        overlap.postPending = false
        overlap.postStems = stemOutputs
        sendEffects!.applyRequests(set: overlap.postSet)
        mix(frames: produced, set: overlap.postSet, left: overlap.postLeft!, right: overlap.postRight!)
        overlap.stemTasks = state.parts.count
        return true
    }

    /// After the units' rounds: any stem task no round ran, then the master
    /// bus over the mix and the stems (cheap: gains, EQ, limiter) on this thread.
    func finishSplitStems() {
        var s = 0
        while s < overlap.stemTasks {
            renderStem(s, frames: overlap.postFrames, set: overlap.postSet, stemOutputs: overlap.postStems!)
            s += 1
        }
        overlap.stemTasks = 0
        masterBus.processStems(left: overlap.postLeft!, right: overlap.postRight!, stems: overlap.postStems!,
                               frames: overlap.postFrames, set: overlap.postSet)
    }
}
