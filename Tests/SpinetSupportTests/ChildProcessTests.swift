import Foundation
import Glibc
import SpinetSupport
import Testing

/// `ChildProcess.spawn`: a child gets the descriptors it is given and no
/// other, so a pipe another thread reads ends when its writer ends, however
/// long a child started meanwhile runs.
@Suite("Starting a program")
struct ChildProcessTests {
    /// The descriptors open in process `pid`.
    static func descriptors(_ pid: pid_t) -> [Int] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { Int($0) }.sorted()
    }

    static func end(_ pid: pid_t) {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    @Test func aChildHasOnlyWhatItIsGiven() throws {
        let pipe = Pipe()       // not close-on-exec: what a plain posix_spawn passes on
        let extra = open("/dev/null", O_RDONLY)
        defer { close(extra) }
        #expect(fcntl(pipe.fileHandleForWriting.fileDescriptor, F_GETFD) & FD_CLOEXEC == 0)
        let pid = try ChildProcess.spawn("/bin/sleep", ["30"], descriptors: [.open(0, path: "/dev/null", flags: O_RDONLY)]).get()
        defer { Self.end(pid) }
        var seen: [Int] = []
        // (while the dynamic loader maps its libraries, a new program briefly
        // has one more open: what was inherited stays)
        for _ in 0..<200 {
            seen = Self.descriptors(pid)
            if seen == [0, 1, 2] { break }
            usleep(10_000)
        }
        let what = seen.map { "\($0) \((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) ?? "?")" }
        #expect(seen == [0, 1, 2], "the child has \(what)")
    }

    /// A pipe's writer ends: its reader sees the end, though a long-lived
    /// child was started while the write end was open here.
    @Test func aPipesReaderSeesTheEndBesideALongLivedChild() throws {
        let pipe = Pipe()
        let sleeper = try ChildProcess.spawn("/bin/sleep", ["8"]).get()
        defer { Self.end(sleeper) }
        pipe.fileHandleForWriting.write(Data("done\n".utf8))
        try pipe.fileHandleForWriting.close()
        let start = Date()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        #expect(String(decoding: output, as: UTF8.self) == "done\n")
        #expect(Date().timeIntervalSince(start) < 4, "the reader waited for the long-lived child")
    }

    @Test func aProgramThatCannotStartIsAnError() {
        guard case .failure(let error) = ChildProcess.spawn("/nonexistent/program", []) else {
            Issue.record("a missing program started")
            return
        }
        #expect(error.code == ENOENT && error.description.contains("No such file"))
    }
}
