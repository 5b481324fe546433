import Synchronization

/// Offline overlapped rendering: the units of one block render while the
/// block before is finished (mixed, its effects and master bus run), on the
/// offline worker threads when there are any (`UnitWorkers`).
///
/// A class, so that the finishing step and the side task, which may run on
/// two threads at once, each write their own property (fields of one
/// struct property would be one access).
final class OverlapState {
    /// The buffer set the next call's units render into.
    var set = 0
    /// Frames of the block rendered and waiting to be finished (0: none).
    var pendingFrames = 0
    /// The finishing work of the current round: whether one is due, its
    /// block's frames and set, and where it writes.
    var postPending = false
    var postFrames = 0
    var postSet = 0
    var postLeft: UnsafeMutablePointer<Float>?
    var postRight: UnsafeMutablePointer<Float>?
    var postStems: UnsafePointer<UnsafeMutablePointer<Float>>?
    /// Stems mode with workers: the pending block's stem tasks still to put
    /// in a round (the first round of the call takes them all, then 0).
    var stemTasks = 0
    /// With workers and send effects: the pending block's finishing step as
    /// parts of the call's first round (`splitPendingFinish`; 0: not split),
    /// and how many of them have not ended yet.
    var finishParts = 0
    let partsLeft = Atomic<Int>(0)
    /// The caller's work to run beside this round's units (see `renderOverlapped`).
    var sideTask: (() -> Void)?
    /// Whether the current round's first extra task is the finishing step
    /// (fixed before the round starts; the tasks themselves clear `postPending`).
    var roundHasFinish = false
}

extension Engine {
    /// Offline only: renders the units over the next `frames` frames (at
    /// most `maxFrames`) while it finishes the block of the previous call
    /// (mix, effects, master gain, limiter) into `left` and `right`, on the
    /// offline worker threads when there are any. Returns how many frames it
    /// wrote: the previous call's `frames` (0 on the first call). After the
    /// last call, `finishOverlapped` writes the last block.
    ///
    /// The output is the same as `render`'s, one call later, and the same on
    /// any number of threads: each unit and the finishing step do the same
    /// work whichever thread runs them. A live render thread must use
    /// `render` (this waits for the workers).
    ///
    /// `alongside`, when given, runs once during the call as one more task
    /// of the round, on whichever thread is free (the caller's own work on
    /// an earlier block's output, such as writing it to a file). It must not
    /// touch the engine, nor `left`/`right`. Pass the same closure each call
    /// (creating one per call would allocate).
    ///
    /// `stems` (stems mode, see `setStems`): where the finished block's
    /// stems go, as the mix goes to `left`/`right`: `stemCount` pairs of
    /// pointers, left then right, `maxFrames` floats each.
    public func renderOverlapped(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                                 stems stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>? = nil,
                                 alongside: (() -> Void)? = nil) -> Int {
        precondition(frames >= 0 && frames <= maxFrames, "renderOverlapped renders at most maxFrames frames")
        let produced = schedulePending(left: left, right: right, stems: stemOutputs)
        overlap.sideTask = alongside
        // stems: the pending block's stems run as tasks of their own;
        // without stems, its send effects and its dry mix do
        let splitStems = splitPendingStems(produced: produced, stemOutputs: stemOutputs)
        splitPendingFinish()
        renderUnits(frames: frames, set: overlap.set)
        if splitStems { finishSplitStems() }
        runFinishParts()                                // any no round ran
        if overlap.postPending { finishPending() }      // no workers, or no unit round ran it
        runSideTask()
        overlap.pendingFrames = frames
        overlap.set = 1 - overlap.set
        return produced
    }

    /// Makes the block the last call rendered (if any) the one this call
    /// finishes, into `left`/`right` (and `stems`); returns its frames.
    func schedulePending(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                         stems stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>?) -> Int {
        let produced = overlap.pendingFrames
        if produced > 0 {
            overlap.postPending = true
            overlap.postFrames = produced
            overlap.postSet = 1 - overlap.set
            overlap.postLeft = left
            overlap.postRight = right
            overlap.postStems = stemOutputs
        }
        return produced
    }

    /// Offline only: finishes the block the last `renderOverlapped` left
    /// pending into `left` and `right`; returns its frame count (0 if none).
    public func finishOverlapped(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
                                 stems stemOutputs: UnsafePointer<UnsafeMutablePointer<Float>>? = nil) -> Int {
        let produced = overlap.pendingFrames
        if produced > 0 { finish(frames: produced, set: 1 - overlap.set, left: left, right: right, stemOutputs: stemOutputs) }
        overlap.pendingFrames = 0
        return produced
    }

    /// The finishing step `renderOverlapped` scheduled (any one thread).
    func finishPending() {
        guard overlap.postPending else { return }
        overlap.postPending = false
        finish(frames: overlap.postFrames, set: overlap.postSet, left: overlap.postLeft!, right: overlap.postRight!,
               stemOutputs: overlap.postStems)
    }

    /// The caller's side task of this call, once (any one thread).
    func runSideTask() {
        guard let task = overlap.sideTask else { return }
        overlap.sideTask = nil
        task()
    }

    /// With workers and send effects (and no stems to split): sets up the
    /// pending finishing step as parts of this call's first worker round,
    /// beside the units of the next block: one per send effect (each sums
    /// its own sends and runs into a return buffer of its own), and the dry
    /// mix. The part that ends last adds the returns to the mix and runs the
    /// master bus, so nothing waits for anything: the same work in the same
    /// order as `finish`, to the bit (see `SendEffects.processReturn`).
    func splitPendingFinish() {
        guard overlap.postPending, hasWorkers, let sends = sendEffects, !sends.isEmpty else { return }
        overlap.postPending = false
        sends.applyRequests(set: overlap.postSet)
        overlap.finishParts = SendEffects.effectCount + 1
        overlap.partsLeft.store(overlap.finishParts, ordering: .relaxed)
    }

    /// Part `part` of the split finishing step (any one thread; the parts
    /// of a block may run at once): effect `part`, or the dry mix after the
    /// effects. Workers exist only with units, so there is a unit to sum.
    func runFinishPart(_ part: Int) {
        let frames = overlap.postFrames, set = overlap.postSet
        let left = overlap.postLeft!, right = overlap.postRight!
        let sends = sendEffects!
        if part < SendEffects.effectCount {
            if sends.hasEffect(part) {
                let unitCount = units.count
                var u = 0
                while u < unitCount {
                    sends.accumulate(unitOutputs[set * unitCount + u], effect: part, first: u == 0, frames: frames)
                    u += 1
                }
                sends.processReturn(part, frames: frames)
            }
        } else {
            mixDry(frames: frames, set: set, left: left, right: right)
        }
        // the last part to end sees the others' writes and finishes the block
        if overlap.partsLeft.wrappingSubtract(1, ordering: .acquiringAndReleasing).oldValue == 1 {
            sends.addReturns(outputLeft: left, outputRight: right, frames: frames)
            masterBus.process(left: left, right: right, frames: frames, set: set)
        }
    }

    /// The split finishing step's parts no worker round ran (this thread).
    func runFinishParts() {
        var p = 0
        while p < overlap.finishParts {
            runFinishPart(p)
            p += 1
        }
        overlap.finishParts = 0
    }

    /// Extra task `index` of a worker round: the stems, the parts of the
    /// split finishing step, or the whole finishing step (when the round
    /// has any of these), then the side task.
    func runExtraTask(_ index: Int) {
        if index < overlap.stemTasks {
            renderStem(index, frames: overlap.postFrames, set: overlap.postSet, stemOutputs: overlap.postStems!)
            return
        }
        var i = index - overlap.stemTasks
        if i < overlap.finishParts {
            runFinishPart(i)
            return
        }
        i -= overlap.finishParts
        if overlap.roundHasFinish && i == 0 { finishPending() } else { runSideTask() }
    }
}
