import Foundation

/// Offline only: renders the engine's units on several threads.
///
/// Units are independent within a slice — each reads the slice's events and
/// writes its own buffers — so unit `u` is always rendered by thread
/// `u % threads` (thread 0 being the caller). The caller hands each worker the
/// slice, renders its own units, then waits for the workers. Because a unit
/// always renders the same slices with the same events, the output is
/// identical to rendering the units one after another on one thread.
///
/// The wait makes this unfit for a live render thread; the live driver keeps
/// `offlineRenderThreads` at 1.
final class UnitWorkers: @unchecked Sendable {
    private unowned let engine: Engine
    private let threads: Int
    private let units: Int
    private var sliceStart: Int64 = 0
    private var sliceEnd: Int64 = 0
    private var blockStart: Int64 = 0
    private var stopping = false
    private let go: [DispatchSemaphore]
    private let done: [DispatchSemaphore]
    private var workerThreads: [Thread] = []

    init(engine: Engine, threads: Int, units: Int) {
        self.engine = engine
        self.threads = threads
        self.units = units
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
            renderShare(of: w)
            done[w - 1].signal()
        }
    }

    private func renderShare(of thread: Int) {
        var u = thread
        while u < units {
            engine.renderUnit(u, sliceStart: sliceStart, sliceEnd: sliceEnd, blockStart: blockStart)
            u += threads
        }
    }

    /// Renders every unit over one slice; returns when all are done.
    func run(sliceStart: Int64, sliceEnd: Int64, blockStart: Int64) {
        self.sliceStart = sliceStart
        self.sliceEnd = sliceEnd
        self.blockStart = blockStart
        for s in go { s.signal() }          // semaphores order the writes above before the workers' reads
        renderShare(of: 0)
        for s in done { s.wait() }
    }

    func stop() {
        stopping = true
        for s in go { s.signal() }
        for s in done { s.wait() }
    }
}
