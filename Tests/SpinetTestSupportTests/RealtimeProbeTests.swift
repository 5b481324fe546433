import CRealtimeProbe
import Foundation
import SpinetTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
import SpinetTestTraits
#endif

/// A sink the optimizer cannot see through, so work inside a probe is kept
/// (also in `swift test -c release`, where unused allocations are removed).
@inline(never) @_optimize(none) func keep<T>(_ value: T) -> T { value }

final class Instance { var value = 0 }

#if os(Linux)
@Suite("RealtimeProbe: allocations and locks", .realtimeProbe)
struct RealtimeProbeCountingTests {
    @Test func interpositionIsInEffect() {
        #expect(RealtimeProbe.allocationsAreCounted)
        #expect(RealtimeProbe.locksAreCounted)
        #expect(RealtimeProbe.isActive)
    }

    @Test func arithmeticCountsNothing() {
        let c = RealtimeProbe.counts { () -> Double in
            var sum = 0.0
            for i in 0..<100_000 { sum += Double(i).squareRoot() * 0.5 }
            return sum
        }
        #expect(c.result > 0)
        #expect(c.allocations == 0)
        #expect(c.frees == 0)
        #expect(c.locks == 0)
    }

    @Test func writingIntoPreallocatedBufferCountsNothing() {
        var buffer = [Float](repeating: 0, count: 512)
        let c = RealtimeProbe.counts { () -> Float in
            buffer.withUnsafeMutableBufferPointer { out in
                for i in out.indices { out[i] = Float(i) * 0.001 }
            }
            return buffer[511]
        }
        #expect(c.allocations == 0 && c.frees == 0 && c.locks == 0)
    }

    @Test func swiftArrayAllocationIsCounted() {
        // The Array's storage is allocated by libswiftCore (swift_allocObject
        // -> malloc in a shared library): counted only if the executable's
        // malloc really interposes.
        let c = RealtimeProbe.counts { () -> Int in
            var a: [Int] = keep([])
            for i in 0..<100 { a.append(i) }
            return a.count
        }
        #expect(c.result == 100)
        #expect(c.allocations > 0)
        #expect(c.frees > 0)  // growth reallocates and frees the old storage
    }

    @Test func classInstanceAllocationAndReleaseAreCounted() {
        let c = RealtimeProbe.counts { () -> Int in
            let object = keep(Instance())
            object.value = 3
            return object.value
        }
        #expect(c.allocations >= 1)
        #expect(c.frees >= 1)
    }

    @Test func libcAllocationsAreCounted() {
        let text = strdup("spinet")!  // prepared outside: no String bridging inside
        defer { free(text) }
        func body() -> Int {
            let copy = keep(strdup(text))  // libc's strdup calls malloc through its PLT
            free(copy)
            return 0
        }
        _ = body()  // warm-up (keep's generic metadata)
        let c = RealtimeProbe.counts(body)
        #expect(c.allocations == 1)
        #expect(c.frees == 1)
    }

    @Test func everyAllocationFunctionIsCounted() {
        let memalign = CFunctions.memalign, pvalloc = CFunctions.pvalloc  // dlsym outside
        func body() -> Int {
            var pointers: [UnsafeMutableRawPointer?] = []
            pointers.reserveCapacity(16)  // 1 allocation
            pointers.append(malloc(10))  // 2
            pointers.append(calloc(4, 8))  // 3
            pointers[0] = realloc(pointers[0], 100)  // 4
            var aligned: UnsafeMutableRawPointer? = nil
            _ = posix_memalign(&aligned, 64, 100)  // 5
            pointers.append(aligned)
            pointers.append(aligned_alloc(64, 128))  // 6
            pointers.append(memalign(32, 100))  // 7
            pointers.append(valloc(100))  // 8
            pointers.append(pvalloc(100))  // 9
            pointers.append(reallocarray(nil, 4, 4))  // 10
            // An index loop: in a debug build `for p in pointers` allocates a
            // coroutine frame per element (unspecialized IndexingIterator).
            for i in pointers.indices { free(pointers[i]) }  // 8 frees
            return pointers.count
        }
        _ = body()  // warm-up: first use of generic code instantiates metadata
        let c = RealtimeProbe.counts(body)
        #expect(c.result == 8)
        #expect(c.allocations == 10)
        #expect(c.frees == 9)  // the 8 blocks and the Array's storage
    }

    @Test func countingStopsAfterTheBody() {
        _ = RealtimeProbe.count { 1 }
        let before = spinet_probe_allocations()
        let array = keep([1, 2, 3])
        #expect(array.count == 3)
        #expect(spinet_probe_allocations() == before)
    }

    @Test func countingStopsWhenTheBodyThrows() {
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            _ = try RealtimeProbe.count { () throws -> Int in throw Failure() }
        }
        let before = spinet_probe_allocations()
        _ = keep([1, 2, 3])
        #expect(spinet_probe_allocations() == before)
    }

    @Test func otherThreadsDoNotDisturbTheCount() throws {
        let stop = Flag()
        let thread = Thread {
            var sink = 0
            while !stop.value.load(ordering: .relaxed) {
                sink &+= keep([sink, 1]).count  // allocates all the time
            }
        }
        thread.start()
        let c = RealtimeProbe.counts { () -> Double in
            var sum = 0.0
            for i in 0..<2_000_000 { sum += Double(i & 1023) }
            return sum
        }
        stop.value.store(true, ordering: .relaxed)
        #expect(c.allocations == 0)
        #expect(c.frees == 0)
        #expect(c.locks == 0)
    }

    @Test func pthreadMutexLockCountsOne() {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        defer { mutex.deallocate() }
        pthread_mutex_init(mutex, nil)
        defer { pthread_mutex_destroy(mutex) }
        let c = RealtimeProbe.count { () -> Int32 in
            let r = pthread_mutex_lock(mutex)
            pthread_mutex_unlock(mutex)
            return r
        }
        #expect(c.result == 0)
        #expect(c.locks == 1)
        #expect(c.allocations == 0)
    }

    @Test func foundationNSLockIsCounted() {
        // NSLock lives in libFoundation.so: counted only if the executable's
        // pthread_mutex_lock really interposes.
        let lock = NSLock()
        let c = RealtimeProbe.count { () -> Int in
            lock.lock()
            lock.unlock()
            return 0
        }
        #expect(c.locks >= 1)
    }

    @Test func otherLockKindsAreCounted() {
        let rwlock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        let spin = UnsafeMutablePointer<pthread_spinlock_t>.allocate(capacity: 1)
        let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        defer {
            rwlock.deallocate(); spin.deallocate(); semaphore.deallocate()
            mutex.deallocate(); condition.deallocate()
        }
        pthread_rwlock_init(rwlock, nil)
        pthread_spin_init(spin, 0)
        sem_init(semaphore, 0, 3)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        var past = timespec()
        clock_gettime(CLOCK_REALTIME, &past)
        past.tv_sec -= 1
        let c = RealtimeProbe.count { () -> Int in
            pthread_rwlock_rdlock(rwlock); pthread_rwlock_unlock(rwlock)  // 1
            pthread_rwlock_wrlock(rwlock); pthread_rwlock_unlock(rwlock)  // 2
            pthread_rwlock_tryrdlock(rwlock); pthread_rwlock_unlock(rwlock)  // 3
            pthread_rwlock_trywrlock(rwlock); pthread_rwlock_unlock(rwlock)  // 4
            pthread_spin_lock(spin); pthread_spin_unlock(spin)  // 5
            sem_wait(semaphore)  // 6
            sem_trywait(semaphore)  // 7
            sem_timedwait(semaphore, &past)  // 8
            pthread_mutex_trylock(mutex)  // 9
            pthread_cond_timedwait(condition, mutex, &past)  // 10 (times out at once)
            pthread_mutex_unlock(mutex)
            return 0
        }
        #expect(c.locks == 10)
        #expect(c.allocations == 0)
        pthread_rwlock_destroy(rwlock)
        pthread_spin_destroy(spin)
        sem_destroy(semaphore)
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
    }
}

/// x86_64 system-call numbers (the trap exists on x86_64 only).
enum SyscallNumber {
    static let write = 1
    static let nanosleep = 35
    static let getpid = 39
    static let clockNanosleep = 230
}

/// malloc.h functions the Glibc module does not import, resolved the way a
/// shared library would see them.
enum CFunctions {
    typealias AlignedAllocator = @convention(c) (Int, Int) -> UnsafeMutableRawPointer?
    typealias Allocator = @convention(c) (Int) -> UnsafeMutableRawPointer?
    static var memalign: AlignedAllocator {
        unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "memalign"), to: AlignedAllocator.self)
    }
    static var pvalloc: Allocator {
        unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pvalloc"), to: Allocator.self)
    }
}

final class Flag: Sendable {
    let value = Atomic<Bool>(false)
}

@Suite("RealtimeProbe: system-call trap", .realtimeProbe, .enabled(if: RealtimeProbe.syscallTrapIsAvailable,
                                                  "seccomp is not usable here"))
struct RealtimeProbeSyscallTests {
    @Test func arithmeticMakesNoSystemCall() throws {
        let report = try #require(RealtimeProbe.syscallReport {
            var sum = 0.0
            for i in 0..<200_000 { sum += Double(i).squareRoot() }
            _ = keep(sum)
        })
        #expect(report.count == 0, "\(report)")
        #expect(report.numbers.isEmpty)
    }

    @Test func getpidIsTrapped() throws {
        let result = try #require(RealtimeProbe.syscalls { _ = getpid() })
        #expect(result.count == 1)
        #expect(result.first == SyscallNumber.getpid)
    }

    @Test func writeIsTrapped() throws {
        let result = try #require(RealtimeProbe.syscalls {
            _ = "".withCString { write(1, $0, 0) }
        })
        #expect(result.count == 1)
        #expect(result.first == SyscallNumber.write)
    }

    @Test func everyCallIsCountedAndRecordedInOrder() throws {
        let report = try #require(RealtimeProbe.syscallReport {
            for _ in 0..<100 { _ = getpid() }
            _ = "".withCString { write(1, $0, 0) }
        })
        #expect(report.count == 101)
        #expect(report.numbers.count == 16)
        #expect(report.numbers.allSatisfy { $0 == SyscallNumber.getpid })
    }

    @Test func sleepingIsTrapped() throws {
        let result = try #require(RealtimeProbe.syscalls { usleep(1) })
        #expect(result.count == 1)
        #expect(result.first == SyscallNumber.clockNanosleep || result.first == SyscallNumber.nanosleep)
    }

    /// clock_gettime(CLOCK_MONOTONIC) normally goes through the vDSO and
    /// makes no system call at all, so the trap cannot see it (and it is fine
    /// in render). With a clocksource the vDSO cannot read (hpet, acpi_pm) it
    /// falls back to a real system call.
    @Test func clockGettimeThroughTheVDSOIsNotASystemCall() throws {
        let clocksource = (try? String(contentsOfFile: "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                                       encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        let result = try #require(RealtimeProbe.syscalls {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
        })
        if ["tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page"].contains(clocksource) {
            #expect(result.count == 0, "clocksource \(clocksource)")
        } else {
            #expect(result.count <= 1, "clocksource \(clocksource)")
        }
    }

    @Test func failingModeDoesNotExecuteTheCall() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let writeFD = fds[1]
        let outcome = Outcome()
        let result = try #require(RealtimeProbe.syscalls(failingCalls: true) {
            let written = "x".withCString { write(writeFD, $0, 1) }
            outcome.set(written, errno)
        })
        #expect(result.count == 1)
        #expect(outcome.written == -1)
        #expect(outcome.error == ENOSYS)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        var byte: UInt8 = 0
        #expect(read(fds[0], &byte, 1) == -1)  // nothing was written
    }

    @Test func executingModeExecutesTheCall() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let writeFD = fds[1]
        let outcome = Outcome()
        let result = try #require(RealtimeProbe.syscalls {
            let written = "x".withCString { write(writeFD, $0, 1) }
            outcome.set(written, errno)
        })
        #expect(result.count == 1)
        #expect(result.first == SyscallNumber.write)
        #expect(outcome.written == 1)
        var byte: UInt8 = 0
        #expect(read(fds[0], &byte, 1) == 1)
        #expect(byte == UInt8(ascii: "x"))
    }

    @Test func aLargeAllocationIsSeenNotFatal() throws {
        // A regression that mmaps in render must fail the test, not crash it.
        let report = try #require(RealtimeProbe.syscallReport {
            let p = keep(malloc(64 << 20)!)
            memset(p, 1, 4096)
            free(keep(p))
        })
        #expect(report.count >= 1, "\(report)")
    }

    @Test func repeatedRunsTearDownCleanly() throws {
        for _ in 0..<50 {
            let result = try #require(RealtimeProbe.syscalls { _ = getpid() })
            #expect(result.count == 1)
        }
    }

    @Test func worksWhenTheCallerBlocksSIGSYS() throws {
        // The trap thread inherits the caller's mask; a blocked SIGSYS would
        // make the kernel kill the process at the first trapped call.
        var block = sigset_t(), saved = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGSYS)
        pthread_sigmask(SIG_BLOCK, &block, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        let result = try #require(RealtimeProbe.syscalls { _ = getpid() })
        #expect(result.count == 1)
    }

    @Test func theCallingThreadIsNotFiltered() throws {
        _ = try #require(RealtimeProbe.syscalls { _ = getpid() })
        let status = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("Seccomp:") }
        #expect(line.map { $0.hasSuffix("0") } == true, "\(line ?? "no Seccomp line")")
    }
}

final class Outcome: @unchecked Sendable {
    private(set) var written = 0
    private(set) var error: Int32 = 0
    func set(_ written: Int, _ error: Int32) {
        self.written = written
        self.error = error
    }
}
#endif
