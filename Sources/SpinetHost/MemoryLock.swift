import Glibc

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
