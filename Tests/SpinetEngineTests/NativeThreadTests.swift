import Glibc
import SpinetEngine
import Synchronization
import Testing

@Suite("NativeThread")
struct NativeThreadTests {
    /// What the thread saw of itself: its name as the kernel has it.
    static func ownName() -> String {
        let f = fopen("/proc/thread-self/comm", "r")
        defer { if f != nil { fclose(f) } }
        var buffer = [CChar](repeating: 0, count: 64)
        guard f != nil, fgets(&buffer, 64, f) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test func runsTheBodyUnderItsNameAndJoins() {
        let seen = Locked<String?>(nil)
        let t = NativeThread(name: "spinet-test-thread-long-name", stackSize: 1 << 20) {
            usleep(20_000)      // join must wait for this
            seen.withLock { $0 = Self.ownName() }
        }
        t.join()
        #expect(seen.withLock { $0 } == "spinet-test-thr")     // the kernel keeps 15 bytes
        #expect(t.scheduling == .normal)
        t.join()                                                 // a second join is a no-op
    }

    @Test func aRealtimeRequestRunsTheBodyWhetherOrNotItIsGranted() {
        let ran = Atomic<Bool>(false)
        let t = NativeThread(name: "spinet-test-rt", priority: 10) { ran.store(true, ordering: .relaxed) }
        t.join()
        let didRun = ran.load(ordering: .relaxed)
        #expect(didRun)
        switch t.scheduling {
        case .realtime(let p): #expect(p == 10)
        case .refused(let e): #expect(e == EPERM || e == EINVAL)
        case .normal: Issue.record("asked for priority 10, got neither real-time nor a refusal")
        }
    }
}
