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
        guard let jackd = JACKServerProcess.installedJackd else {
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
            let process = JACKServerProcess(executable: jackd, name: server)
            do { try process.start(rate: rate, period: period, attempts: 4) } catch { throw Failure(error.description) }
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
