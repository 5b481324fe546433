import CALSA
import Glibc

/// The outcome of asking for real-time scheduling for a thread.
public enum ThreadScheduling: Equatable, Sendable {
    case realtime(priority: Int32)
    /// Not asked for (priority 0).
    case normal
    /// Asked for and refused; `errno` says why (EPERM: not allowed).
    case refused(errno: Int32)
}

/// A thread started with pthreads, at real-time priority (SCHED_FIFO) when
/// the system allows it, else at normal priority.
final class RealtimeThread: @unchecked Sendable {
    private var thread: pthread_t?
    let scheduling: ThreadScheduling
    private let box: Box

    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread named `name` (at most 15 bytes). With
    /// `priority` > 0 the thread asks for SCHED_FIFO at that priority.
    init(name: String, priority: Int32, body: @escaping () -> Void) {
        box = Box(body)
        let context = Unmanaged.passRetained(box).toOpaque()
        let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { ctx in
            let box = Unmanaged<Box>.fromOpaque(ctx!).takeRetainedValue()
            box.body()
            return nil
        }
        var tid = pthread_t()
        var result: ThreadScheduling = .normal
        var created = false
        if priority > 0 {
            var attr = pthread_attr_t()
            pthread_attr_init(&attr)
            pthread_attr_setinheritsched(&attr, Int32(PTHREAD_EXPLICIT_SCHED))
            pthread_attr_setschedpolicy(&attr, SCHED_FIFO)
            let lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO)
            var param = sched_param()
            param.sched_priority = max(lo, min(hi, priority))
            pthread_attr_setschedparam(&attr, &param)
            let rc = pthread_create(&tid, &attr, entry, context)
            pthread_attr_destroy(&attr)
            if rc == 0 {
                created = true
                result = .realtime(priority: param.sched_priority)
            } else {
                result = .refused(errno: rc)
            }
        }
        if !created {
            let rc = pthread_create(&tid, nil, entry, context)
            precondition(rc == 0, "cannot create the \(name) thread: \(String(cString: strerror(rc)))")
        }
        thread = tid
        scheduling = result
        spinet_thread_set_name(tid, String(name.utf8.prefix(15))!)
    }

    /// Waits for the thread to end.
    func join() {
        if let t = thread {
            pthread_join(t, nil)
            thread = nil
        }
    }
}

/// Locks the process's memory so the render thread never waits for a page
/// to be read back in. Returns nil on success, else a reason.
public func lockMemory() -> String? {
    var limit = rlimit()
    getrlimit(Int32(__RLIMIT_MEMLOCK.rawValue), &limit)
    // MCL_FUTURE with a small limit would make later allocations fail: only
    // lock future pages when the limit allows any amount.
    let unlimited = limit.rlim_cur == rlim_t.max || geteuid() == 0
    let flags = unlimited ? Int32(MCL_CURRENT | MCL_FUTURE) : Int32(MCL_CURRENT)
    if mlockall(flags) == 0 { return nil }
    return String(cString: strerror(errno))
}
