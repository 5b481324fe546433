import Glibc
import SpinetEngine
import SpinetJACK
import SpinetRig
import SpinetSoundFont
import SpinetSupport

/// `spinet bench --jack`: the JACK process callback's time per cycle with
/// 256 voices sounding, at 64 and 128 frames, under a private jackd (the
/// dummy driver: no sound card) that the bench starts and stops by its
/// process id.
enum JACKBench {
    struct Figures {
        var period: Int
        var p50: Double
        var p99: Double
        var max: Double
        var cycles: Int
        var voices: Int
        var xruns: Int
    }

    /// Runs the measurement at each period, each on a server of its own,
    /// and prints a table.
    static func run(font: String, rate: Int, periods: [Int], cycles: Int, server: String, voices: Int) throws {
        let candidates: [String] = ["/usr/bin/jackd", "/usr/local/bin/jackd"]
        guard let jackd = candidates.first(where: { access($0, X_OK) == 0 }) else {
            throw Failure("jackd is not installed (Debian: apt-get install jackd2); the JACK figures need it")
        }
        if (try? JACKPorts.list(server: server)) != nil {
            throw Failure("a JACK server named '\(server)' already runs; stop it or pass --jack-server NAME")
        }
        print("JACK process callback, play's graph (one SoundFont unit, Spinet's effects), \(voices) voices sounding, "
              + "a private jackd '\(server)' (dummy driver, -S, no real-time scheduling) at \(rate) Hz "
              + "(time per cycle as % of the period; the issue's goal: p99 at or under 25% at 64 frames):")
        print("period   p50      p99      max      cycles  voices  xruns")
        for period in periods {
            let process = try JACKBenchServer(jackd: jackd, name: server, rate: rate, period: period)
            defer { process.stop() }
            let f = try measure(font: font, server: server, cycles: cycles, voices: voices)
            print(formatted("%5ld  %6.1f%%  %6.1f%%  %6.1f%%   %6ld  %6ld  %5ld", f.period, f.p50, f.p99, f.max, f.cycles, f.voices, f.xruns)
                  + "   (jackd pid \(process.pid), stopped)")
        }
    }

    /// One client on a running server: play's graph, voices added until
    /// `voices` sound, then `cycles` process cycles timed by the client.
    static func measure(font: String, server: String, cycles: Int, voices: Int) throws -> Figures {
        var config = JACKClient.Configuration()
        config.name = "spinet-bench"
        config.server = server
        config.connect = .none
        config.midiPorts = 0
        config.reconnect = false
        let client: JACKClient
        do { client = try JACKClient(config, graph: nil) } catch { throw Failure(error.description) }
        defer { client.stop(fadeSeconds: 0) }
        let rate = client.sampleRate, period = client.periodFrames
        // `spinet play`'s graph with its default effects, as the in-process
        // figures of `spinet bench` (Bench.callbackTimes).
        let graph = try Bench.playGraph(font: font, rate: rate, voices: voices)
        graph.engine.prepare(sampleRate: Double(rate), maxFrames: period)
        do { try client.start(engine: graph.engine) } catch { throw Failure(error.description) }
        let queue = graph.inputs[0]
        // Sustained programs (strings, organ, pads) so the voices stay on.
        let programs: [UInt8] = [48, 49, 19, 16, 89, 90, 52, 50, 48, 0, 19, 49, 89, 16, 52, 91]
        for ch in 0..<16 where ch != 9 { queue.push(EngineEvent(frame: 0, .programChange(channel: UInt8(ch), program: programs[ch]))) }
        // Held notes until `voices` voices sound (stereo samples take two a note).
        // Each note a channel and key of its own (channel 10, drums, left out).
        var n = 0
        let deadline = monotonicNow() + 10
        while graph.engine.statistics.activeVoices < voices && n < 4 * voices && monotonicNow() < deadline {
            let ch = UInt8(n % 15 < 9 ? n % 15 : n % 15 + 1)
            queue.push(EngineEvent(frame: 0, .noteOn(channel: ch, key: UInt8(36 + (n / 15 * 7) % 60), velocity: 90)))
            n += 1
            usleep(UInt32(max(1_000, period * 2_000_000 / rate)))     // two cycles
        }
        usleep(300_000)       // warm up
        let xrunsBefore = client.xruns
        client.measureCycles(cycles)
        let until = monotonicNow() + 10 + Double(cycles * period) / Double(rate) * 4
        var times: [Int]?
        while times == nil && monotonicNow() < until {
            usleep(20_000)
            times = client.measuredCycles
        }
        guard let sorted = times?.sorted(), !sorted.isEmpty else {
            throw Failure("the JACK server ran no process cycles for the bench client")
        }
        let periodNs = Double(period) * 1e9 / Double(rate)
        func pct(_ q: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / periodNs * 100 }
        return Figures(period: period, p50: pct(0.5), p99: pct(0.99), max: Double(sorted.last!) / periodNs * 100,
                       cycles: sorted.count, voices: graph.engine.statistics.activeVoices, xruns: client.xruns - xrunsBefore)
    }

    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A jackd for the bench: the dummy driver, synchronous (-S: the default
/// asynchronous mode misses cycles on a loaded 2-core machine), a 5 s
/// client timeout, no real-time scheduling, a private name. It runs under
/// a small shell that ends it if this process dies (a crash must not leave
/// a server behind), and on SIGTERM: that shell is what `stop` signals, by
/// process id, and waits for.
final class JACKBenchServer {
    private(set) var pid: pid_t = 0
    let name: String

    init(jackd: String, name: String, rate: Int, period: Int) throws {
        self.name = name
        let watch = """
            end() { kill $j 2>/dev/null; n=0; while kill -0 $j 2>/dev/null && [ $n -lt 30 ]; do sleep 0.1; n=$((n+1)); done; kill -9 $j 2>/dev/null; wait $j; exit 0; }
            trap end TERM
            "$@" & j=$!
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $j 2>/dev/null; do sleep 0.2 & wait $!; done
            end
            """
        let arguments = ["/bin/sh", "-c", watch, "jackd", jackd, "-n", name, "--no-realtime", "-S", "-t", "5000",
                         "-d", "dummy", "-r", "\(rate)", "-p", "\(period)"]
        // A server started just after another of the same name ended can
        // fail ("server already active"): try a few times.
        for attempt in 0..<4 {
            pid = try Self.spawn(arguments, environment: ["JACK_NO_AUDIO_RESERVATION=1", "JACK_DEFAULT_SERVER=\(name)"])
            let deadline = JACKBench.monotonicNow() + 10
            while JACKBench.monotonicNow() < deadline {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid { pid = 0; break }
                if let ports = try? JACKPorts.list(server: name), ports.contains(where: { $0.name == "system:playback_1" }) { return }
                usleep(50_000)
            }
            stop()
            usleep(UInt32(200_000 * (attempt + 1)))
        }
        throw Failure("jackd -n \(name) did not start (\(jackd) --no-realtime -S -d dummy -r \(rate) -p \(period))")
    }

    /// SIGTERM to the watcher (jackd then, SIGKILL after 3 s), and waits for it.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        pid = 0
        // Semaphores of clients still open when the server went (libjack leaves them in /dev/shm).
        if let dir = opendir("/dev/shm") {
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let file = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if file.hasPrefix("jack_sem.") && file.contains("_\(name)_") { unlink("/dev/shm/" + file) }
            }
        }
    }

    deinit { stop() }

    private static func spawn(_ arguments: [String], environment extra: [String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var env: [String] = []
        var p = environ
        while let e = p.pointee {
            let s = String(cString: e)
            if !s.hasPrefix("JACK_DEFAULT_SERVER=") && !s.hasPrefix("JACK_NO_AUDIO_RESERVATION=") { env.append(s) }
            p += 1
        }
        env += extra
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        defer { for q in argv + envp { free(q) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard rc == 0 else { throw Failure("cannot start \(arguments[1]): \(String(cString: strerror(rc)))") }
        return pid
    }
}
