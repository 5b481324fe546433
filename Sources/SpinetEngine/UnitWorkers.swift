import Foundation
import Synchronization

/// Offline only: renders the engine's units on several threads.
///
/// Each slice is one round of tasks: task `u < units` renders unit `u`;
/// task `units` (when there is one) is the pending finishing step of
/// `Engine.renderOverlapped` (mixing, effects and limiter of the block
/// before). Units are independent within a slice — each reads the slice's
/// events and writes its own buffers — and the finishing step reads only the
/// other buffer set, so the threads take tasks in order from a shared
/// counter, whichever is free first: a thread whose unit was light goes on
/// to the next task instead of waiting. Whichever thread runs a task, it
/// does the same work, so the output is identical to rendering everything
/// on one thread.
///
/// The caller (thread 0) hands the round to the workers, takes tasks
/// itself, then waits for the workers. The wait makes this unfit for a live
/// render thread; the live driver keeps `offlineRenderThreads` at 1.
final class UnitWorkers: @unchecked Sendable {
    private unowned let engine: Engine
    private let threads: Int
    private var sliceStart: Int64 = 0
    private var sliceEnd: Int64 = 0
    private var blockStart: Int64 = 0
    private var taskCount = 0
    private let nextTask = Atomic<Int>(0)
    private var stopping = false
    private let go: [DispatchSemaphore]
    private let done: [DispatchSemaphore]
    private var workerThreads: [Thread] = []

    init(engine: Engine, threads: Int) {
        self.engine = engine
        self.threads = threads
        go = (1..<threads).map { _ in DispatchSemaphore(value: 0) }
        done = (1..<threads).map { _ in DispatchSemaphore(value: 0) }
        for w in 1..<threads {
            let t = Thread { [unowned self] in self.workerLoop(w) }
            t.name = "spinet-render-\(w)"
            t.stackSize = 1 << 20
            workerThreads.append(t)
            t.start()
        }
    }

    private func workerLoop(_ w: Int) {
        while true {
            go[w - 1].wait()
            if stopping { done[w - 1].signal(); return }
            takeTasks()
            done[w - 1].signal()
        }
    }

    private func takeTasks() {
        let units = engine.units.count
        while true {
            let t = nextTask.wrappingAdd(1, ordering: .relaxed).oldValue
            if t >= taskCount { return }
            if t < units {
                engine.renderUnit(t, sliceStart: sliceStart, sliceEnd: sliceEnd, blockStart: blockStart)
            } else {
                engine.finishPending()
            }
        }
    }

    /// Runs tasks `0..<tasks` for one slice; returns when all are done.
    func run(sliceStart: Int64, sliceEnd: Int64, blockStart: Int64, tasks: Int) {
        self.sliceStart = sliceStart
        self.sliceEnd = sliceEnd
        self.blockStart = blockStart
        taskCount = tasks
        nextTask.store(0, ordering: .relaxed)
        var i = 0
        while i < go.count { go[i].signal(); i += 1 }   // orders the writes above before the workers' reads
        takeTasks()
        i = 0
        while i < done.count { done[i].wait(); i += 1 }
    }

    func stop() {
        stopping = true
        for s in go { s.signal() }
        for s in done { s.wait() }
    }
}
