import SpinetEffects

/// Stems that add up to the mix: the engine's finishing step, per stem.
///
/// A stem is a set of units (the host gives each stem's channels units of
/// their own: one channel, or one channel split over several units). In
/// stems mode the finishing step sums each stem's units (dry sound and
/// sends), runs that stem's own send effects (same presets; the same tempo
/// and reverb/chorus type changes as the shared ones would get), applies
/// the master gain ramp, fade and EQ to each stem alike, sums the stems into
/// the mix, runs the limiter on the mix, and applies the limiter's gain to
/// every stem, delayed by the same look-ahead (`MasterBus.processStems`).
/// Every stage is linear per stem, so the stems sum to the mix within float
/// rounding. The stems' effects run (or rest) when the shared ones would
/// without stems (decided on the sum of the sends), which keeps their
/// modulation in step with a plain render. The cost over a plain render is
/// the send effects per stem, not a render per stem.
///
/// Units in no stem must be silent (the host routes only note-less or
/// muted channels there): in stems mode their output is not mixed.
final class StemState {
    /// Per stem: the unit indexes whose outputs it sums.
    let units: [[Int]]
    /// Per stem: its own send effects.
    let sends: [SendEffects]

    init(units: [[Int]], sends: [SendEffects]) {
        self.units = units
        self.sends = sends
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
    /// Offline: renders stems besides the mix, one per entry of `stemUnits`
    /// (the indexes of the units it sums; a unit in at most one stem). Call
    /// after adding the units, before `prepare`. Then pass stem buffers to
    /// `render(frames:left:right:stems:)` or `renderOverlapped(…stems:…)`.
    public func setStems(_ stemUnits: [[Int]]) {
        precondition(!prepared, "set stems before prepare")
        let all = stemUnits.flatMap { $0 }
        precondition(Set(all).count == all.count, "a unit belongs to one stem at most")
        precondition(all.allSatisfy { $0 >= 0 && $0 < units.count }, "stems name units of this engine")
        plannedStems = stemUnits
    }

    /// The number of stems (0: no stems).
    public var stemCount: Int { stems?.units.count ?? plannedStems?.count ?? 0 }

    /// The units of each stem.
    public var stemUnits: [[Int]] { stems?.units ?? plannedStems ?? [] }

    /// From `prepare`: each stem's send effects, and the master bus's stem state.
    func prepareStems() {
        guard let plan = plannedStems else { return }
        let c = configuration
        let sends = plan.map { _ in
            SendEffects(reverb: c.reverb, chorus: c.chorus, delay: c.delay, sampleRate: sampleRate, maxFrames: maxFrames)
        }
        stems = StemState(units: plan, sends: sends)
        masterBus.prepareStems(count: plan.count)
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

    /// The finishing step in stems mode (see `StemState`), all on this thread.
    func finishStems(frames: Int, set: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                     stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>) {
        let mask = stemEffectsMask(frames: frames, set: set)
        var s = 0
        while s < stems!.units.count {
            stemEffects(s, frames: frames, set: set, stemOutputs: stemOutputs, mask: mask)
            s += 1
        }
        masterBus.processStems(left: left, right: right, stems: stemOutputs, frames: frames, set: set)
    }

    /// Which send effects run for buffer set `set`'s block: the mix's sends
    /// decide, so every stem's effects run (or rest) exactly when the shared
    /// ones would without stems (see `SendEffects.ringing`). Call once per
    /// block, before its stems, after the shared effects' `applyRequests`.
    func stemEffectsMask(frames: Int, set: Int) -> Int {
        let shared = sendEffects!
        guard !shared.isEmpty else { return 0 }
        let unitCount = units.count
        if unitCount == 0 { shared.clearBus() }
        var u = 0
        while u < unitCount {
            shared.accumulate(unitOutputs[set * unitCount + u], first: u == 0, frames: frames)
            u += 1
        }
        return shared.ringing(shared.bus, frames: frames)
    }

    /// Stem `s` of buffer set `set`'s block, before the master bus: the sum
    /// of its units' dry sound, and its own effects (those in `mask`) on the
    /// sum of their sends. Touches only stem `s`'s buffers and effects, so
    /// the stems of a block may run on several threads at once.
    func stemEffects(_ s: Int, frames: Int, set: Int, stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>, mask: Int) {
        let state = stems!
        let unitCount = units.count
        let l = stemOutputs[2 * s], r = stemOutputs[2 * s + 1]
        l.update(repeating: 0, count: frames)
        r.update(repeating: 0, count: frames)
        let sends = state.sends[s]
        sends.applyRequests(set: set)
        let members = state.units[s]
        let hasEffects = !sends.isEmpty
        if hasEffects && members.isEmpty { sends.clearBus() }
        var k = 0
        while k < members.count {
            let o = unitOutputs[set * unitCount + members[k]]
            Self.add(o.left, into: l, frames)
            Self.add(o.right, into: r, frames)
            if hasEffects { sends.accumulate(o, first: k == 0, frames: frames) }
            k += 1
        }
        if hasEffects && mask != 0 { sends.process(sends.bus, outputLeft: l, outputRight: r, frames: frames, only: mask) }
    }

    /// Offline, with workers: sets up the pending block's stems as tasks of
    /// this call's first worker round (beside the units of the next block),
    /// instead of one finishing task; `finishSplitStems` ends the block.
    /// False (nothing set up) without stems, workers or a pending block.
    func splitPendingStems(produced: Int, stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>?) -> Bool {
        guard produced > 0, let stemOutputs, let state = stems, hasWorkers else { return false }
        overlap.postPending = false
        overlap.postStems = stemOutputs
        sendEffects!.applyRequests(set: overlap.postSet)
        overlap.stemMask = stemEffectsMask(frames: produced, set: overlap.postSet)
        overlap.stemTasks = state.units.count
        return true
    }

    /// After the units' rounds: any stem task no round ran, then the master
    /// bus over the stems (cheap: gains, EQ, limiter) on this thread.
    func finishSplitStems() {
        var s = 0
        while s < overlap.stemTasks {
            stemEffects(s, frames: overlap.postFrames, set: overlap.postSet, stemOutputs: overlap.postStems!, mask: overlap.stemMask)
            s += 1
        }
        overlap.stemTasks = 0
        masterBus.processStems(left: overlap.postLeft!, right: overlap.postRight!, stems: overlap.postStems!,
                               frames: overlap.postFrames, set: overlap.postSet)
    }
}
