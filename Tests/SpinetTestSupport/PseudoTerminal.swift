import Foundation
import Glibc
import SpinetEngine
import SpinetSupport

/// A program run on a pseudo-terminal of its own, as a user runs it in a
/// terminal window: its standard input, output and error are the terminal,
/// which is its controlling terminal, and it is the terminal's foreground
/// process group (a session of its own). The test types keys (`send`) and
/// reads what the program wrote (`output`), escape sequences and all.
///
/// The child starts with no signal blocked (the test runs on a worker
/// thread, whose mask a spawned child would inherit). Stopped by process
/// id (`signal`, `kill`); the terminal is closed once the child has exited.
public final class PseudoTerminalProcess: @unchecked Sendable {
    public let pid: pid_t
    private let master: Int32
    /// What the program wrote (filled by the reader thread).
    private final class Written: Sendable { let bytes = Locked<[UInt8]>([]) }
    private let written = Written()
    private let reader: Thread
    private let exitStatus = Locked<Int32?>(nil)

    /// Starts `program` (spinet unless told) with `arguments` and `environment` added to this process's.
    public init(_ arguments: [String], environment: [String: String] = [:], program: String? = nil) throws {
        let program = program ?? SpinetCommand.executable
        // posix_openpt, unlockpt and ptsname, which Swift's Glibc does not
        // import: the multiplexer, TIOCSPTLCK (unlock) and TIOCGPTN (its number).
        let m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0, number: UInt32 = 0
        guard m >= 0, ioctl(m, 0x4004_5431, &unlock) == 0, ioctl(m, 0x8004_5430, &number) == 0 else {
            let why = String(cString: strerror(errno))
            if m >= 0 { close(m) }
            throw PseudoTerminalError("no pseudo-terminal (/dev/ptmx): \(why)")
        }
        let slave = "/dev/pts/\(number)"
        // After setsid (a session of its own), the first terminal the
        // session leader opens becomes its controlling terminal.
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let child: pid_t
        switch ChildProcess.spawn(program, arguments, environment: env.map { "\($0.key)=\($0.value)" },
                                  descriptors: [.open(0, path: slave, flags: O_RDWR), .duplicate(1, from: 0), .duplicate(2, from: 0)],
                                  newSession: true) {
        case .success(let p): child = p
        case .failure(let error):
            close(m)
            throw PseudoTerminalError("cannot start \(program): \(error)")
        }
        pid = child
        master = m
        // Read all the time: a program whose terminal is full blocks in write.
        let written = self.written
        reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(m, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                // EIO: every descriptor of the terminal's other side is closed (the program ended)
                if n <= 0 { return }
                written.bytes.withLock { $0 += buffer[0..<n] }
            }
        }
        reader.start()
    }

    deinit {
        if exited == nil { kill(pid, SIGKILL); _ = wait(timeout: 10) }
        // the reader sees the end of the terminal once the program is gone
        let deadline = Date().addingTimeInterval(2)
        while !reader.isFinished && Date() < deadline { usleep(10_000) }
        close(master)
    }

    /// Types `text` (UTF-8 bytes, as a terminal sends them).
    public func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Everything the program wrote so far, as text.
    public var output: String { String(decoding: written.bytes.withLock { $0 }, as: UTF8.self) }

    /// Waits until `output` satisfies `condition`, at most `seconds`; whether it did.
    @discardableResult
    public func waitForOutput(_ seconds: Double, _ condition: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(output) { return true }
            usleep(10_000)
        }
        return condition(output)
    }

    /// The exit status (128 + the signal if one ended it), once it has exited.
    public var exited: Int32? {
        exitStatus.withLock { status in
            if status == nil {
                var s: Int32 = 0
                if waitpid(pid, &s, WNOHANG) == pid {
                    status = (s & 0x7F) == 0 ? (s >> 8) & 0xFF : 128 + (s & 0x7F)
                }
            }
            return status
        }
    }

    /// Waits for the program to exit, at most `seconds`; its status, or nil if it still runs.
    public func wait(timeout seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let s = exited { return s }
            usleep(10_000)
        }
        return exited
    }

    public func signal(_ number: Int32) { if exited == nil { kill(pid, number) } }
}

public struct PseudoTerminalError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
