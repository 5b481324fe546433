import Glibc

/// Starting a program with `posix_spawn`: the one way Spinet (a private
/// jackd, a peer to measure) and its tests (a program on a pseudo-terminal,
/// a child whose memory is watched) do it, so that every child gets the
/// same two things a shell gives it:
/// - **Only the descriptors it is given.** Every other descriptor of this
///   process is closed in the child. `posix_spawn` alone passes on every
///   descriptor not marked close-on-exec, and Foundation's `Pipe` does not
///   mark its ends: a long-lived child (a jackd) started while another
///   thread read a program's output through a pipe held that pipe's write
///   end open, and the reader waited for the end of its output until the
///   jackd ended. A sequencer client or a socket passed on the same way
///   stays open in the child after this process closes it.
/// - **No signal blocked** (a Dispatch worker thread blocks several, and a
///   child inherits the mask of the thread that starts it).
public enum ChildProcess {
    /// What the child's descriptor `descriptor` is, before it runs.
    public enum Descriptor: Sendable {
        /// `path` opened with `flags` (and `mode` when it creates).
        case open(Int32, path: String, flags: Int32, mode: mode_t = 0)
        /// A copy of descriptor `from` (one set up before it).
        case duplicate(Int32, from: Int32)
    }

    /// Starts `program` (a path) with `arguments` (after the program's own
    /// name), the environment `environment` ("KEY=value"; nil: this
    /// process's), the descriptors in `descriptors` (applied in order; 0, 1
    /// and 2 not named are this process's), every other descriptor closed,
    /// and no signal blocked; with `newSession`, in a session of its own
    /// (the first terminal it opens becomes its controlling terminal).
    /// Returns its process id, or the `errno` value `posix_spawn` gave.
    public static func spawn(_ program: String, _ arguments: [String], environment: [String]? = nil,
                             descriptors: [Descriptor] = [], newSession: Bool = false) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for d in descriptors {
            switch d {
            case let .open(fd, path, flags, mode): posix_spawn_file_actions_addopen(&actions, fd, path, flags, mode)
            case let .duplicate(fd, from): posix_spawn_file_actions_adddup2(&actions, from, fd)
            }
        }
        closeInherited(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        // POSIX_SPAWN_SETSID (a GNU flag Swift's Glibc does not import: 0x80)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | (newSession ? 0x80 : 0)))
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { $0.map { strdup($0) } + [nil] }
        defer {
            for p in argv { free(p) }
            for p in envp ?? [] { free(p) }
        }
        var child: pid_t = 0
        let rc = envp.map { posix_spawn(&child, program, &actions, &attributes, argv, $0) }
            ?? posix_spawn(&child, program, &actions, &attributes, argv, environ)
        return rc == 0 ? .success(child) : .failure(SpawnError(code: rc))
    }

    /// Why a program did not start: `posix_spawn`'s error.
    public struct SpawnError: Error, CustomStringConvertible, Sendable {
        public let code: Int32
        public var description: String { String(cString: strerror(code)) }
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later),
    /// which Swift's Glibc module does not import.
    private static let closeFrom: CloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: CloseFrom.self) }

    /// Closes, in the child, every descriptor from 3 on: at once where glibc
    /// can, else each one open now (listed in /proc/self/fd; one another
    /// thread opens meanwhile may then reach the child).
    private static func closeInherited(_ actions: inout posix_spawn_file_actions_t) {
        if let closeFrom, closeFrom(&actions, 3) == 0 { return }
        guard let dir = opendir("/proc/self/fd") else { return }
        defer { closedir(dir) }
        let own = dirfd(dir)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if let fd = Int32(name), fd > 2, fd != own { posix_spawn_file_actions_addclose(&actions, fd) }
        }
    }
}
