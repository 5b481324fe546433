import Foundation
import Glibc
import Testing
import SpinetJACK
import SpinetTestSupport

extension JACKTests {
/// `spinet play --driver jack`, the command, against a private jackd.
@Suite("spinet play --driver jack")
struct JACKCommandTests {
    /// Starts `spinet play` with `arguments` on `server`; its output goes to a file.
    /// `input`: a file for its standard input (default none).
    static func play(_ arguments: [String], server: String, input: URL? = nil) throws -> (Process, URL) {
        let log = URL(fileURLWithPath: NSTemporaryDirectory() + "spinet-play-jack-\(getpid())-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: SpinetCommand.executable)
        p.arguments = ["play", "--driver", "jack", "--priority", "0"] + arguments
        var env = ProcessInfo.processInfo.environment
        env["JACK_DEFAULT_SERVER"] = server
        p.environment = env
        let handle = try FileHandle(forWritingTo: log)
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = try input.map { try FileHandle(forReadingFrom: $0) } ?? FileHandle.nullDevice
        var all = sigset_t(), saved = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_UNBLOCK, &all, &saved)      // the child starts with no signal blocked
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try p.run()
        return (p, log)
    }

    /// `spinet ports` lists the JACK ports of a running server.
    @Test func portsListsTheJACKPorts() throws {
        let (server, spinet) = try runningSpinet()
        defer { spinet.stop() }
        let r = try SpinetCommand.run(["ports"], environment: ["JACK_DEFAULT_SERVER": server.name])
        let text = String(decoding: r.stdout, as: UTF8.self)
        #expect(text.contains("JACK ports (spinet play --driver jack"))
        #expect(text.contains("system:playback_1  audio input, physical"))
        #expect(text.contains("Spinet:out_L       audio output"))
        #expect(text.contains("Spinet:midi_in     MIDI input"))
    }

    /// `spinet bench --jack` starts a private jackd at 64 and then 128
    /// frames, measures its process callback with 256 voices, prints
    /// p50/p99/max per period, and stops each server (by pid: gone after).
    /// Not a timed test: the figures are printed, not judged.
    @Test func benchJACKPrintsTheLoadAndStopsItsServers() throws {
        let name = "spinet-test-\(getuid())-bench"
        let r = try SpinetCommand.run(["bench", "--jack", "--jack-cycles", "300", "--jack-server", name], timeout: 120)
        let text = String(decoding: r.stdout, as: UTF8.self)
        print("spinet bench --jack:\n\(text)\(r.stderr)")
        #expect(r.status == 0)
        let rows = text.split(separator: "\n").filter { $0.contains("(jackd pid") }
        try #require(rows.count == 2, "one row per period")
        for (row, period) in zip(rows, [64, 128]) {
            let fields = row.split(separator: " ")
            #expect(fields.first == "\(period)"[...])
            let percents = fields.filter { $0.hasSuffix("%") }.compactMap { Double($0.dropLast()) }
            #expect(percents.count == 3 && percents[0] > 0 && percents[0] <= percents[1] && percents[1] <= percents[2], "p50 <= p99 <= max: \(row)")
            #expect(fields.count > 5 && fields[4] == "300", "cycles measured: \(row)")
            #expect(fields.count > 5 && Int(fields[5]).map { $0 >= 256 } == true, "256 voices sounding: \(row)")
            let pid = row.split(separator: "pid ").last.flatMap { Int32($0.prefix { $0.isNumber }) } ?? 0
            #expect(pid > 0 && kill(pid, 0) != 0, "jackd \(pid) still runs")
        }
        #expect((try? JACKPorts.list(server: name)) == nil, "a server '\(name)' still answers")
    }

    /// A client name JACK cannot take (empty, longer than
    /// jack_client_name_size() allows, with the ':' of port names) is one
    /// line before any work: no server is needed to hear it (the one named
    /// does not exist).
    @Test(arguments: ["", "a:b", String(repeating: "n", count: 65)])
    func anInvalidNameIsRefusedBeforeAnyWork(name: String) throws {
        let (p, log) = try Self.play(["--name", name], server: "spinet-no-such-server-\(getpid())")
        p.waitUntilExit()
        let text = try String(contentsOf: log, encoding: .utf8)
        try? FileManager.default.removeItem(at: log)
        #expect(p.terminationStatus == 1)
        #expect(text.hasPrefix("spinet: --name ") && text.hasSuffix("\n") && text.filter { $0 == "\n" }.count == 1, "\(text)")
    }

    /// Runs `arguments` (play with a 2 s libjack deadline) and, once its
    /// ports are connected, `then`; returns play's status, output, and the
    /// seconds from the end of `then` to its exit (at most 20).
    static func playUntilExit(_ arguments: [String], server: JACKTestServer, waitForPorts: Bool = true,
                              then: (Process) throws -> Void) throws -> (status: Int32?, text: String, seconds: Double) {
        let (p, log) = try play(["--channel", "all=synth:saw", "--dry", "--jack-deadline", "2"] + arguments, server: server.name)
        defer { try? FileManager.default.removeItem(at: log) }
        if waitForPorts {
            #expect(waitFor(20) { (try? JACKPorts.list(server: server.name))?.first { $0.name == "Spinet:out_R" }?.connections.isEmpty == false })
            usleep(200_000)
        }
        try then(p)
        let t0 = Date()
        let ended = waitFor(20) { !p.isRunning }
        let seconds = Date().timeIntervalSince(t0)
        if !ended { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return (ended ? p.terminationStatus : nil, text, seconds)
    }

    /// A server that does not answer (stopped) while play opens its client:
    /// libjack's open never returns; play ends after its deadline with one
    /// line and status 1 instead of hanging.
    @Test func aServerThatDoesNotAnswerAtStartIsOneLineNotAHang() throws {
        let server = JACKTestServer()
        try server.start()
        server.freeze()
        defer { server.stop() }
        let r = try Self.playUntilExit([], server: server, waitForPorts: false) { _ in }
        print("spinet play against a frozen server: exit \(String(describing: r.status)) after \(r.seconds) s: \(r.text)")
        #expect(r.status == 1)
        #expect(r.seconds < 10)
        #expect(r.text.hasPrefix("spinet: libjack did not return from opening the JACK client 'Spinet' within its deadline"), "\(r.text)")
        #expect(r.text.filter { $0 == "\n" }.count == 1, "\(r.text)")
    }

    /// Ctrl-C while the server does not answer: libjack's deactivation and
    /// close never return; play still ends, with one line and status 1.
    @Test func ctrlCWithAServerThatDoesNotAnswerStillEnds() throws {
        let server = JACKTestServer()
        try server.start()
        defer { server.stop() }
        let r = try Self.playUntilExit([], server: server) { p in
            server.freeze()
            usleep(100_000)
            kill(p.processIdentifier, SIGINT)
        }
        print("spinet play, Ctrl-C with a frozen server: exit \(String(describing: r.status)) after \(r.seconds) s")
        #expect(r.status == 1)
        #expect(r.seconds < 10)
        #expect(r.text.contains("spinet: libjack did not return from closing the JACK client 'Spinet' within its deadline"), "\(r.text)")
    }

    /// The server goes away, and the one that comes back does not answer:
    /// the reconnecting open never returns; play ends after its deadline
    /// with one line and status 1 instead of waiting forever.
    @Test func aServerThatComesBackWithoutAnsweringIsOneLineNotAHang() throws {
        let server = JACKTestServer()
        try server.start()
        defer { server.stop() }
        var frozen = false
        let r = try Self.playUntilExit([], server: server) { _ in
            server.stop()
            usleep(300_000)
            frozen = try server.startFrozen()
        }
        #expect(frozen, "jackd's socket did not appear")
        print("spinet play, server back but frozen: exit \(String(describing: r.status)) after \(r.seconds) s")
        #expect(r.status == 1)
        #expect(r.seconds < 10)
        #expect(r.text.contains("the JACK server went away"), "\(r.text)")
        #expect(r.text.contains("spinet: libjack did not return from opening the JACK client 'Spinet' within its deadline"), "\(r.text)")
    }

    @Test func withoutAServerItIsOneLineAndStatus1() throws {
        let (p, log) = try Self.play([], server: "spinet-no-such-server-\(getpid())")
        p.waitUntilExit()
        let text = try String(contentsOf: log, encoding: .utf8)
        try? FileManager.default.removeItem(at: log)
        #expect(p.terminationStatus == 1)
        #expect(text == "spinet: no JACK server running; start one (jackd, or PipeWire's pipewire-jack)\n")
    }

    /// Spinet's synth on every channel: notes sent at known offsets land
    /// exactly the limiter's look-ahead after their frame; the audio goes to
    /// the physical ports (auto); Ctrl-C ends it with status 0 within a second.
    @Test func playsExactlyAndStopsOnCtrlC() throws {
        let server = JACKTestServer()
        try server.start()
        // No effects: their tails would never let the output fall to exact zeros between notes.
        let take = NSTemporaryDirectory() + "spinet-jack-take-\(getpid()).wav"
        let (p, log) = try Self.play(["--channel", "all=synth:saw", "--name", "Spinet", "--dry", "--record", take, "--force"], server: server.name)
        defer { try? FileManager.default.removeItem(at: log); unlink(take) }
        #expect(waitFor(20) { (try? JACKPorts.list(server: server.name))?.first { $0.name == "Spinet:out_R" }?.connections.isEmpty == false })
        usleep(200_000)
        let ports = try JACKPorts.list(server: server.name)
        #expect(ports.first { $0.name == "Spinet:out_L" }?.connections == ["system:playback_1"])
        #expect(ports.first { $0.name == "Spinet:out_R" }?.connections == ["system:playback_2"])
        let offsets = [0, 1, 37, 63, 64, 100, 127]
        let delays = try onsetDelays(server: server, offsets: offsets, spacing: 64)
        print("spinet play --driver jack: onset delays \(delays.map { $0.map(String.init) ?? "none" })")
        #expect(delays == offsets.map { _ in 72 })

        let t0 = Date()
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        let took = Date().timeIntervalSince(t0)
        let text = try String(contentsOf: log, encoding: .utf8)
        print("spinet play --driver jack: exit \(p.terminationStatus) \(took) s after SIGINT; output:\n\(text)")
        #expect(p.terminationStatus == 0)
        #expect(took < 1)
        #expect(text.contains("Audio: JACK client 'Spinet', 48000 Hz, 128 frames"))
        #expect(text.contains("MIDI: JACK input Spinet:midi_in"))
        #expect(text.contains("Latency: 1.5 ms from MIDI in to audio out (the limiter's look-ahead, 72 frames at 48000 Hz"))
        #expect(text.contains("Played "))
        // --record: the process callback feeds the record ring.
        #expect(text.contains("recorded "))
        let size = (try? FileManager.default.attributesOfItem(atPath: take)[.size] as? Int) ?? 0
        #expect(size > 48000, "the recording has \(size) bytes")
    }

    /// The server is stopped and started again: play says so, comes back by
    /// itself with its ports and connections, and notes land exactly again.
    @Test func comesBackWhenTheServerRestarts() throws {
        let server = JACKTestServer()
        try server.start()
        let (p, log) = try Self.play(["--channel", "all=synth:saw", "--dry"], server: server.name)
        defer { try? FileManager.default.removeItem(at: log) }
        func connected() -> Bool {
            (try? JACKPorts.list(server: server.name))?.first { $0.name == "Spinet:out_R" }?.connections == ["system:playback_2"]
        }
        #expect(waitFor(20) { connected() })
        usleep(300_000)
        server.stop()
        usleep(500_000)
        try server.start()
        #expect(waitFor(10) { connected() })
        usleep(200_000)
        let offsets = [0, 37, 127]
        let delays = try onsetDelays(server: server, offsets: offsets, spacing: 64)
        #expect(delays == offsets.map { _ in 72 })
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        let text = try String(contentsOf: log, encoding: .utf8)
        print("spinet play --driver jack across a server restart: onset delays \(delays.map { $0.map(String.init) ?? "none" }); output:\n\(text)")
        #expect(p.terminationStatus == 0)
        #expect(text.contains("the JACK server went away; held notes released; waiting for it to come back"))
        #expect(text.contains("the JACK server is back"))
    }
}
}
