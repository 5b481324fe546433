import Foundation
import Glibc

/// Runs the built `spinet` command for end-to-end tests.
public enum SpinetCommand {
    public static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `$SPINET_BIN`, else the debug build in this checkout.
    public static var executable: String {
        if let p = ProcessInfo.processInfo.environment["SPINET_BIN"], !p.isEmpty { return p }
        return repositoryRoot.appendingPathComponent(".build/debug/spinet").path
    }

    public struct Result: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        public var timedOut: Bool
    }

    /// Runs spinet (or `program`) with `arguments` in `directory`; kills it after `timeout` seconds.
    /// `interruptAfter` sends `signal` (SIGINT unless told) once that many
    /// seconds have passed and `interruptWhen` (if given) returns true.
    /// The timeout only catches hangs: the demo render under AddressSanitizer
    /// on a busy 2-core machine has taken over 120 s.
    public static func run(_ arguments: [String], in directory: URL? = nil, timeout: Double = 400,
                           interruptAfter: Double? = nil, signal: Int32 = SIGINT,
                           interruptWhen: (() -> Bool)? = nil, environment: [String: String] = [:],
                           program: String? = nil) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: program ?? executable)
        p.arguments = arguments
        if let directory { p.currentDirectoryURL = directory }
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        // Read both pipes concurrently so a large output cannot block the child.
        // A handler still running when it is removed may have taken the
        // last bytes from under the final read below: the result waits for
        // it (an error line was lost that way once, under AddressSanitizer).
        let outData = LockedData(), errData = LockedData()
        out.fileHandleForReading.readabilityHandler = { h in outData.reading { h.availableData } }
        err.fileHandleForReading.readabilityHandler = { h in errData.reading { h.availableData } }
        // Start the child with no signal blocked, as a shell does: the test
        // runs on a Dispatch worker thread, which blocks SIGHUP, SIGQUIT,
        // SIGUSR1... and a spawned child inherits its mask.
        var all = sigset_t(), saved = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_UNBLOCK, &all, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try p.run()
        pthread_sigmask(SIG_SETMASK, &saved, nil)
        let start = Date()
        var timedOut = false
        var interrupted = false
        while p.isRunning {
            let elapsed = Date().timeIntervalSince(start)
            if let t = interruptAfter, !interrupted, elapsed >= t, interruptWhen?() ?? true {
                kill(p.processIdentifier, signal)
                interrupted = true
            }
            if elapsed > timeout {
                timedOut = true
                p.terminate()
                break
            }
            usleep(10_000)
        }
        p.waitUntilExit()
        out.fileHandleForReading.readabilityHandler = nil
        err.fileHandleForReading.readabilityHandler = nil
        outData.append(out.fileHandleForReading.readDataToEndOfFile())
        errData.append(err.fileHandleForReading.readDataToEndOfFile())
        outData.waitForReaders()
        errData.waitForReaders()
        return Result(status: p.terminationStatus, stdout: outData.value,
                      stderr: String(decoding: errData.value, as: UTF8.self), timedOut: timedOut)
    }

    /// A fresh empty directory for one test.
    public static func temporaryDirectory(_ name: String) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}

final class LockedData: @unchecked Sendable {
    private var data = Data()
    private let lock = NSLock()
    private var readers = 0
    func append(_ d: Data) { lock.lock(); data.append(d); lock.unlock() }
    var value: Data { lock.lock(); defer { lock.unlock() }; return data }
    /// Appends what `read` returns, counted as a reader until it is appended.
    func reading(_ read: () -> Data) {
        lock.lock(); readers += 1; lock.unlock()
        let d = read()
        lock.lock(); data.append(d); readers -= 1; lock.unlock()
    }
    /// Returns once no `reading` call is under way.
    func waitForReaders() {
        while true {
            lock.lock()
            let busy = readers > 0
            lock.unlock()
            if !busy { return }
            usleep(1000)
        }
    }
}

/// Reads the samples of a 16-bit, 24-bit or float WAV file (canonical layout
/// as libsndfile writes it), interleaved, as Float.
public struct WAVFile {
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int
    public var isFloat: Bool
    public var samples: [Float]
    public var frames: Int { samples.count / max(channels, 1) }

    public init(data: Data) throws {
        let b = [UInt8](data)
        func u32(_ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 | Int(b[o + 2]) << 16 | Int(b[o + 3]) << 24 }
        func u16(_ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 }
        guard b.count >= 12, String(decoding: b[0..<4], as: UTF8.self) == "RIFF",
              String(decoding: b[8..<12], as: UTF8.self) == "WAVE" else { throw WAVError.notWAV }
        var o = 12
        var rate = 0, ch = 0, bits = 0, fmt = 0
        var found: [Float]?
        while o + 8 <= b.count {
            let tag = String(decoding: b[o..<(o + 4)], as: UTF8.self)
            var size = u32(o + 4)
            let body = o + 8
            if tag == "fmt " {
                fmt = u16(body); ch = u16(body + 2); rate = u32(body + 4); bits = u16(body + 14)
                if fmt == 0xFFFE { fmt = u16(body + 24) }
            } else if tag == "data" {
                if size == 0 || size == 0xFFFF_FFFF || body + size > b.count { size = b.count - body }
                let bytes = bits / 8
                let n = size / bytes
                var s = [Float](repeating: 0, count: n)
                for i in 0..<n {
                    let p = body + i * bytes
                    switch (fmt, bits) {
                    case (1, 16): s[i] = Float(Int16(bitPattern: UInt16(u16(p)))) / 32768
                    case (1, 24):
                        let v = Int32(bitPattern: UInt32(b[p]) << 8 | UInt32(b[p + 1]) << 16 | UInt32(b[p + 2]) << 24) >> 8
                        s[i] = Float(v) / 8_388_608
                    case (3, 32): s[i] = Float(bitPattern: UInt32(u32(p)))
                    default: throw WAVError.unsupported
                    }
                }
                found = s
            }
            o = body + size + (size & 1)
        }
        guard let s = found else { throw WAVError.noData }
        sampleRate = rate; channels = ch; bitsPerSample = bits; isFloat = fmt == 3; samples = s
    }

    public enum WAVError: Error { case notWAV, unsupported, noData }

    /// One channel's samples.
    public func channel(_ c: Int) -> [Float] {
        stride(from: c, to: samples.count, by: channels).map { samples[$0] }
    }
}
