import Glibc
import Dispatch
import Synchronization

/// Offline only: renders the engine's units on several threads.
///
/// Each slice is one round of tasks: task `u < units` renders unit `u`;
/// the tasks after them (when there are any) are the pending finishing
/// step of `Engine.renderOverlapped` (mixing, effects and limiter of the
/// block before: with send effects, one task per effect and one for the
/// dry mix, the last of them to end running the limiter) and the caller's
/// side task (writing an earlier block).
/// Units are independent within a slice — each reads the slice's events and
/// writes its own buffers — and the finishing step reads only the other
/// buffer set, so the threads take tasks in order from a shared
/// counter, whichever is free first: a thread whose unit was light goes on
/// to the next task instead of waiting. Whichever thread runs a task, it
/// does the same work, so the output is identical to rendering everything
/// on one thread.
///
/// The caller (thread 0) hands the round to the workers, takes tasks
/// itself, then waits for the workers. Rounds come every few hundred
/// microseconds, so both hand-overs spin on atomics first: waking a thread
/// through the kernel costs tens of microseconds on a virtual machine, a
/// sizable share of a round. A worker that finds no round for `spinLimit`
/// checks goes to sleep on a semaphore (between files, at the end), and the
/// caller wakes it. The waits make this unfit for a live render thread; the
/// live driver keeps `offlineRenderThreads` at 1.
final class UnitWorkers: @unchecked Sendable {
    private unowned let engine: Engine
    private let threads: Int
    private var sliceStart: Int64 = 0
    private var sliceEnd: Int64 = 0
    private var blockStart: Int64 = 0
    private var taskCount = 0
    private let nextTask = Atomic<Int>(0)
    /// Bumped by the caller to start a round (releasing the round's fields).
    private let round = Atomic<Int>(0)
    /// Workers still busy with the current round.
    private let busy = Atomic<Int>(0)
    /// Bit w: worker w is asleep on its semaphore (or about to be).
    private let asleep = Atomic<UInt64>(0)
    private let wake: [DispatchSemaphore]
    private let finished = DispatchSemaphore(value: 0)
    private var stopping = false
    private var workerThreads: [NativeThread] = []
    /// Checks of `round` a worker makes before it sleeps: about 100 µs.
    static let spinLimit = 200_000

    init(engine: Engine, threads: Int) {
        self.engine = engine
        self.threads = threads
        wake = (1..<threads).map { _ in DispatchSemaphore(value: 0) }
        for w in 1..<threads {
            workerThreads.append(NativeThread(name: "spinet-render-\(w)", stackSize: 1 << 20) { [unowned self] in
                self.workerLoop(w - 1)
            })
        }
    }

    private func workerLoop(_ w: Int) {
        var seen = 0
        while true {
            seen = waitForRound(after: seen, worker: w)
            if stopping {
                _ = busy.wrappingSubtract(1, ordering: .releasing)
                finished.signal()
                return
            }
            takeTasks()
            _ = busy.wrappingSubtract(1, ordering: .releasing)
        }
    }

    /// Spins, then sleeps, until the caller starts a round after `seen`.
    private func waitForRound(after seen: Int, worker w: Int) -> Int {
        var spins = 0
        while true {
            let r = round.load(ordering: .acquiring)
            if r != seen { return r }
            spins += 1
            if spins < Self.spinLimit { continue }
            // Announce the sleep, then look once more: a round started in
            // between is either seen here or followed by a wake-up.
            let bit = UInt64(1) << UInt64(w)
            asleep.bitwiseOr(bit, ordering: .sequentiallyConsistent)
            let again = round.load(ordering: .sequentiallyConsistent)
            if again != seen {
                // The caller may have taken the flag and signalled already.
                let before = asleep.bitwiseAnd(~bit, ordering: .sequentiallyConsistent).oldValue
                if before & bit == 0 { wake[w].wait() }
                return again
            }
            wake[w].wait()
            spins = 0
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
                engine.runExtraTask(t - units)
            }
        }
    }

    /// Starts a round: publishes the fields written before it, wakes sleepers.
    private func startRound() {
        busy.store(threads - 1, ordering: .relaxed)
        round.wrappingAdd(1, ordering: .sequentiallyConsistent)
        let sleepers = asleep.exchange(0, ordering: .sequentiallyConsistent)
        if sleepers != 0 {
            for w in 0..<(threads - 1) where sleepers & (UInt64(1) << UInt64(w)) != 0 { wake[w].signal() }
        }
    }

    /// Runs tasks `0..<tasks` for one slice; returns when all are done.
    func run(sliceStart: Int64, sliceEnd: Int64, blockStart: Int64, tasks: Int) {
        self.sliceStart = sliceStart
        self.sliceEnd = sliceEnd
        self.blockStart = blockStart
        taskCount = tasks
        nextTask.store(0, ordering: .relaxed)
        startRound()
        takeTasks()
        // The workers' last tasks are at most one unit's slice away.
        var spins = 0
        while busy.load(ordering: .acquiring) > 0 {
            spins += 1
            if spins % 4096 == 0 { sched_yield() }
        }
    }

    func stop() {
        stopping = true
        startRound()
        for _ in 1..<threads { finished.wait() }
        for t in workerThreads { t.join() }
    }
}
