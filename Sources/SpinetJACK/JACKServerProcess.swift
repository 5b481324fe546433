import Glibc
import SpinetSupport

/// A private jackd, started and stopped by process id: what `spinet bench
/// --jack` and the JACK tests run Spinet against, on machines with no sound
/// card. The dummy driver, synchronous mode (-S: on a loaded 2-core machine
/// the default asynchronous mode misses cycles), a 5 s client timeout (a
/// client slowed down by a sanitizer or a busy machine is waited for, not
/// thrown out), no real-time scheduling, a server name of its own.
///
/// jackd runs under a small shell that ends it when this process dies (a
/// crash must not leave servers behind: jackd2 runs at most 8 at once) and
/// on SIGTERM; either way it continues a stopped jackd, sends SIGTERM, then
/// SIGKILL after 3 s (a jackd whose clients died can hang in its shutdown).
public final class JACKServerProcess {
    /// The jackd to run, where Debian's jackd2 puts it; nil when not installed.
    public static let installedJackd: String? = ["/usr/bin/jackd", "/usr/local/bin/jackd"].first { access($0, X_OK) == 0 }

    public let executable: String
    /// The server's name (JACK_DEFAULT_SERVER for its clients).
    public private(set) var name: String
    /// The watching shell's process id, 0 when stopped.
    public private(set) var pid: pid_t = 0
    /// Where jackd's output goes.
    public let log: String
    /// A line for each try of the last `start` that failed (the name and
    /// jackd's last lines): what a slow start waited for.
    public private(set) var failedStarts: [String] = []

    /// Nothing runs until `start`. `log`: a file for jackd's output (it is
    /// read for "Too many servers already active"), or /dev/null.
    public init(executable: String, name: String = "", log: String = "/dev/null") {
        self.executable = executable
        self.name = name
        self.log = log
    }

    deinit { stop() }

    private func arguments(_ name: String, rate: Int, period: Int) -> [String] {
        [executable, "-n", name, "--no-realtime", "-S", "-t", "5000", "-d", "dummy", "-r", "\(rate)", "-p", "\(period)"]
    }

    private var watcher: String {
        """
        end() { kill -CONT $j 2>/dev/null; kill $j 2>/dev/null; n=0; while kill -0 $j 2>/dev/null && [ $n -lt 30 ]; do sleep 0.1; n=$((n+1)); done; kill -9 $j 2>/dev/null; wait $j; exit 0; }
        trap end TERM
        "$@" & j=$!
        while kill -0 \(getpid()) 2>/dev/null && kill -0 $j 2>/dev/null; do sleep 0.2 & wait $!; done
        end
        """
    }

    /// Starts jackd and waits until a client can connect. A server started
    /// again keeps its name (clients come back to it); a first start takes
    /// the first of `names` that starts, trying each `attempts` times ("server
    /// already active" just after the previous server of that name ended).
    public func start(rate: Int = 48000, period: Int = 128, names: [String] = [], attempts: Int = 3) throws(JACKError) {
        precondition(pid == 0, "already started")
        failedStarts = []
        let candidates = name.isEmpty ? names : [name]
        precondition(!candidates.isEmpty, "a server needs a name")
        var said = ""     // the last lines of the last try's log
        for candidate in candidates {
            for attempt in 0..<attempts {
                if log != "/dev/null" { truncate(log, 0) }   // this run's output only (never touch /dev/null)
                name = candidate
                pid = try spawn(["/bin/sh", "-c", watcher, "jackd"] + arguments(candidate, rate: rate, period: period))
                if waitUntilReady(seconds: 10) { return }
                stop()
                let text = log == "/dev/null" ? "" : Self.contents(of: log)
                said = text.split(separator: "\n").suffix(3).joined(separator: " | ")
                failedStarts.append("jackd -n \(candidate) did not start within 10 s" + (said.isEmpty ? "" : ": \(said)"))
                if text.contains("Too many servers already active") {
                    throw JACKError("jackd: too many JACK servers already run on this machine (jackd2 allows 8); stop leftover ones")
                }
                usleep(UInt32(200_000 * (attempt + 1)))
            }
        }
        // (the log's last lines in the message: a test's log is removed with its server)
        throw JACKError("jackd -n \(name) did not start (\(executable) --no-realtime -S -d dummy -r \(rate) -p \(period))"
                        + (said.isEmpty ? "" : "; it said: " + said))
    }

    /// Starts jackd again under its name and freezes it the moment its
    /// socket exists, before it answers anyone: a client opening then
    /// connects and waits for a reply that never comes. False when the
    /// socket did not appear within 10 s.
    public func startFrozen(rate: Int = 48000, period: Int = 128) throws(JACKError) -> Bool {
        precondition(pid == 0 && !name.isEmpty, "start it normally first")
        let socket = "/dev/shm/jack_\(name)_\(getuid())_0"
        unlink(socket)
        pid = try spawn(["/bin/sh", "-c", watcher, "jackd"] + arguments(name, rate: rate, period: period))
        let deadline = Self.now() + 10
        var st = stat()
        while Self.now() < deadline {
            if jackdPID > 0, stat(socket, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK {
                freeze()
                return true
            }
            usleep(500)
        }
        return false
    }

    /// The jackd process (a child of the watching shell), 0 when none.
    public var jackdPID: pid_t {
        guard pid > 0 else { return 0 }
        let path = "/proc/\(pid)/task/\(pid)/children"
        let first = Self.contents(of: path).split(separator: " ").first ?? ""
        return pid_t(first.filter(\.isNumber)) ?? 0
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) jackd: a server that no longer
    /// answers, so that every libjack call to it waits.
    public func freeze() { if case let j = jackdPID, j > 0 { kill(j, SIGSTOP) } }
    public func thaw() { if case let j = jackdPID, j > 0 { kill(j, SIGCONT) } }

    /// SIGTERM to the watcher (then SIGKILL after 5 s), waits for it, and
    /// removes the semaphores of clients that did not close before the
    /// server went (libjack leaves them in /dev/shm).
    public func stop() {
        guard pid > 0 else { return }
        thaw()      // a frozen jackd would not end on SIGTERM
        kill(pid, SIGTERM)
        var status: Int32 = 0
        let deadline = Self.now() + 5
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Self.now() > deadline { kill(pid, SIGKILL); waitpid(pid, &status, 0); break }
            usleep(10_000)
        }
        pid = 0
        if let dir = opendir("/dev/shm") {
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let file = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if file.hasPrefix("jack_sem.") && file.contains("_\(name)_") { unlink("/dev/shm/" + file) }
            }
        }
    }

    private func waitUntilReady(seconds: Double) -> Bool {
        let deadline = Self.now() + seconds
        while Self.now() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { pid = 0; return false }   // it exited
            if let ports = try? JACKPorts.list(server: name), ports.contains(where: { $0.name == "system:playback_1" }) { return true }
            usleep(50_000)
        }
        return false
    }

    /// A small text file's contents ("" when it cannot be read).
    private static func contents(of path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Spawns `arguments` (`ChildProcess`: no signal blocked, no descriptor
    /// of this process), standard input from /dev/null, output to `log`, and
    /// this process's environment with the server's name and no audio reservation.
    private func spawn(_ arguments: [String]) throws(JACKError) -> pid_t {
        var environment: [String] = []
        var p = environ
        while let e = p.pointee {
            let s = String(cString: e)
            if !s.hasPrefix("JACK_DEFAULT_SERVER=") && !s.hasPrefix("JACK_NO_AUDIO_RESERVATION=") { environment.append(s) }
            p += 1
        }
        environment += ["JACK_NO_AUDIO_RESERVATION=1", "JACK_DEFAULT_SERVER=\(name)"]
        let started = ChildProcess.spawn(arguments[0], Array(arguments.dropFirst()), environment: environment, descriptors: [
            .open(0, path: "/dev/null", flags: O_RDONLY),
            .open(1, path: log, flags: O_WRONLY | O_CREAT | O_APPEND, mode: 0o644),
            .duplicate(2, from: 1),
        ])
        switch started {
        case .success(let child): return child
        case .failure(let error): throw JACKError("cannot start \(executable): \(error)")
        }
    }
}
