#if canImport(Glibc)
import Glibc
#endif

/// The outcome of asking for real-time scheduling for a thread.
public enum ThreadScheduling: Equatable, Sendable {
    case realtime(priority: Int32)
    /// Not asked for (priority 0).
    case normal
    /// Asked for and refused; `errno` says why (EPERM: not allowed).
    case refused(errno: Int32)
}

/// A thread started with pthreads: at real-time priority (SCHED_FIFO) when
/// asked for and the system allows it, else at normal priority.
///
/// Spinet starts its threads with this rather than Foundation's `Thread`,
/// so that the program does not load Foundation (about 7 MB of resident
/// memory for Foundation, its internationalization library and ICU).
public final class NativeThread: @unchecked Sendable {
    private var thread: pthread_t?
    public let scheduling: ThreadScheduling

    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread named `name` (the first 15 bytes show
    /// in `top -H` and debuggers). With `priority` > 0 the thread asks for
    /// SCHED_FIFO at that priority; `stackSize` (bytes) replaces the
    /// system's default stack size when given.
    public init(name: String, priority: Int32 = 0, stackSize: Int? = nil, body: @escaping () -> Void) {
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { ctx in
            Unmanaged<Box>.fromOpaque(ctx!).takeRetainedValue().body()
            return nil
        }
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        if let stackSize { pthread_attr_setstacksize(&attr, max(stackSize, Int(PTHREAD_STACK_MIN))) }
        var tid = pthread_t()
        var result: ThreadScheduling = .normal
        var created = false
        if priority > 0 {
            pthread_attr_setinheritsched(&attr, Int32(PTHREAD_EXPLICIT_SCHED))
            pthread_attr_setschedpolicy(&attr, SCHED_FIFO)
            let lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO)
            var param = sched_param()
            param.sched_priority = max(lo, min(hi, priority))
            pthread_attr_setschedparam(&attr, &param)
            let rc = pthread_create(&tid, &attr, entry, context)
            if rc == 0 {
                created = true
                result = .realtime(priority: param.sched_priority)
            } else {
                result = .refused(errno: rc)
                pthread_attr_setinheritsched(&attr, Int32(PTHREAD_INHERIT_SCHED))
            }
        }
        if !created {
            let rc = pthread_create(&tid, &attr, entry, context)
            precondition(rc == 0, "cannot create the \(name) thread: \(String(cString: strerror(rc)))")
        }
        thread = tid
        scheduling = result
        Self.setName(tid, name)
    }

    /// Waits for the thread to end.
    public func join() {
        if let t = thread {
            pthread_join(t, nil)
            thread = nil
        }
    }

    /// Whether the caller runs on this thread.
    public var isCurrent: Bool { thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }

    /// Lets the thread end by itself (no join: its resources go when it ends).
    public func detach() {
        if let t = thread {
            pthread_detach(t)
            thread = nil
        }
    }

    /// pthread_setname_np is a GNU extension the Glibc module does not
    /// export; it is looked up once in the C library.
    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    private static let setNameFunction: SetName? = {
        guard let symbol = dlsym(nil, "pthread_setname_np") else { return nil }   // nil: RTLD_DEFAULT
        return unsafeBitCast(symbol, to: SetName.self)
    }()

    private static func setName(_ thread: pthread_t, _ name: String) {
        guard let set = setNameFunction else { return }
        _ = set(thread, String(decoding: name.utf8.prefix(15), as: UTF8.self))
    }
}
