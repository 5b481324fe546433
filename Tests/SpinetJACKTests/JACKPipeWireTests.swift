import CJACK
import Foundation
import Glibc
import Synchronization
import Testing
@testable import SpinetJACK

/// PipeWire's JACK (pipewire-jack), run headless with no session bus:
/// `XDG_RUNTIME_DIR=<dir> pipewire`, then the JACK clients under `pw-jack`.
/// The whole check runs in a child process of this test binary under
/// `pw-jack` (its libjack replaces jackd2's for the whole process).
final class FinishedFlag: Sendable {
    let value = Atomic<Bool>(false)
}

enum PipeWireHost {
    static let pipewire: String? = access("/usr/bin/pipewire", X_OK) == 0 && access("/usr/bin/pw-jack", X_OK) == 0 ? "/usr/bin/pipewire" : nil
    static var isInstalled: Bool { pipewire != nil }
    static var isChild: Bool { ProcessInfo.processInfo.environment["SPINET_PIPEWIRE_CHILD"] == "1" }
}

extension JACKTests {
@Suite("JACK under PipeWire")
struct JACKPipeWireTests {
    /// Starts a private PipeWire, runs `pipeWireChild` under pw-jack, stops PipeWire.
    @Test(.enabled(if: PipeWireHost.isInstalled && !PipeWireHost.isChild,
                   "PipeWire is not installed (pipewire, pipewire-bin, pipewire-jack); the PipeWire check is skipped"))
    func notesLandExactlyUnderPipeWireAndARateChangeIsFollowed() throws {
        try Self.runUnderPipeWire(child: "pipeWireChild")
    }

    /// `spinet play --driver jack` itself under PipeWire follows a forced
    /// rate change: pitch and onsets right at 44.1 kHz.
    @Test(.enabled(if: PipeWireHost.isInstalled && !PipeWireHost.isChild,
                   "PipeWire is not installed (pipewire, pipewire-bin, pipewire-jack); the PipeWire check is skipped"))
    func playFollowsARateChangeUnderPipeWire() throws {
        try Self.runUnderPipeWire(child: "pipeWirePlayChild")
    }

    static func runUnderPipeWire(child filter: String) throws {
        let dir = NSTemporaryDirectory() + "spinet-pw-\(getpid())"
        mkdir(dir, 0o700)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Never two PipeWires on one runtime dir.
        try #require(!FileManager.default.fileExists(atPath: dir + "/pipewire-0"), "a PipeWire already runs in \(dir)")
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = dir
        env.removeValue(forKey: "JACK_DEFAULT_SERVER")
        let pipewire = Process()
        pipewire.executableURL = URL(fileURLWithPath: PipeWireHost.pipewire!)
        pipewire.environment = env
        pipewire.standardOutput = FileHandle.nullDevice
        pipewire.standardError = FileHandle.nullDevice
        try pipewire.run()
        defer {
            kill(pipewire.processIdentifier, SIGTERM)
            pipewire.waitUntilExit()
        }
        #expect(waitFor(5) { FileManager.default.fileExists(atPath: dir + "/pipewire-0") })

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/pw-jack")
        child.arguments = [CommandLine.arguments[0], "--testing-library", "swift-testing", "--filter", filter]
        env["SPINET_PIPEWIRE_CHILD"] = "1"
        child.environment = env
        let out = Pipe()
        child.standardOutput = out
        child.standardError = out
        try child.run()
        let pid = child.processIdentifier
        let finished = FinishedFlag()
        DispatchQueue.global().asyncAfter(deadline: .now() + 120) {     // a hang fails, not blocks
            if !finished.value.load(ordering: .acquiring) { kill(pid, SIGKILL) }
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        finished.value.store(true, ordering: .releasing)
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n") where line.contains("JACK") || line.contains("✘") { print("pw-jack child: \(line)") }
        #expect(child.terminationStatus == 0, "the check under pw-jack failed")
        #expect(text.contains(filter) && text.contains("passed"))
    }

    static func metadata(_ key: String, _ value: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/pw-metadata")
        p.arguments = ["-n", "settings", "0", key, value]
        p.standardOutput = FileHandle.nullDevice
        try? p.run()
        p.waitUntilExit()
    }

    /// In the child, under pw-jack: `spinet play --driver jack` (a child of
    /// this one, so also under pw-jack) at 48 kHz, then after
    /// `clock.force-rate 44100`: A4 at 440 Hz and every onset exactly the
    /// limiter's look-ahead (66 frames at 44.1 kHz) after its frame.
    @Test(.enabled(if: PipeWireHost.isChild))
    func pipeWirePlayChild() throws {
        Self.metadata("clock.force-quantum", "256")
        defer { Self.metadata("clock.force-quantum", "0"); Self.metadata("clock.force-rate", "0") }
        let fake = JACKTestServer.pipeWire
        let take = NSTemporaryDirectory() + "spinet-pw-take-\(getpid()).wav"
        let (p, log) = try JACKCommandTests.play(["--channel", "all=synth:saw", "--dry", "--jack-connect", "none",
                                                  "--record", take, "--force"], server: fake.name)
        defer { try? FileManager.default.removeItem(at: log); unlink(take) }
        func hasPorts() -> Bool { (try? JACKPorts.list(server: fake.name))?.contains { $0.name == "Spinet:midi_in" } == true }
        #expect(waitFor(20) { hasPorts() })
        // the ports exist from the client's open; play reads them once it
        // runs (after its SoundFont loaded), which it says
        #expect(waitFor(20) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("MIDI: JACK input") })
        usleep(300_000)
        let offsets = [0, 1, 37, 63, 64, 100, 127, 200, 255]
        let before = try onsetDelays(server: fake, offsets: offsets, tag: "-a")
        print("JACK play under PipeWire at 48 kHz: delays \(before.map { $0.map(String.init) ?? "none" })")
        #expect(before == offsets.map { _ in 72 })

        Self.metadata("clock.force-rate", "44100")
        #expect(waitFor(10) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("Spinet follows") })
        usleep(300_000)
        let pitch = try measuredPitch(server: fake, key: 69, tag: "-p")
        print("JACK play under PipeWire after clock.force-rate 44100: A4 at \(pitch.frequency) Hz (\(pitch.rate) Hz server)")
        #expect(pitch.rate == 44100)
        #expect(abs(pitch.frequency - 440) <= 1, "A4 measured at \(pitch.frequency) Hz")
        let after = try onsetDelays(server: fake, offsets: offsets, tag: "-b")
        print("JACK play under PipeWire at 44.1 kHz: delays \(after.map { $0.map(String.init) ?? "none" })")
        #expect(after == offsets.map { _ in 66 })

        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        let text = try String(contentsOf: log, encoding: .utf8)
        print("JACK play under PipeWire: exit \(p.terminationStatus); output:\n\(text)")
        #expect(p.terminationStatus == 0)
        #expect(text.contains("the audio now runs at 44100 Hz; Spinet follows with its graph built again at 44100 Hz"))
        #expect(text.contains("recording stopped at the rate change (48000 Hz to 44100 Hz"))
        #expect(text.contains("recorded "))
        #expect(!text.contains("cannot follow"))
    }

    /// In the child, under pw-jack: onsets exact at PipeWire's quantum, a
    /// forced rate change followed with a graph built at the new rate.
    @Test(.enabled(if: PipeWireHost.isChild))
    func pipeWireChild() throws {
        let dir = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? ""
        func metadata(_ key: String, _ value: String) { Self.metadata(key, value) }
        metadata("clock.force-quantum", "256")
        defer { metadata("clock.force-quantum", "0"); metadata("clock.force-rate", "0") }
        var config = JACKClient.Configuration()
        config.connect = .auto            // no physical ports here: a notice, no error
        let spinet = try JACKClient(config, graph: sawGraph())
        try spinet.start()
        defer { spinet.stop() }
        #expect(waitFor(3) { spinet.cycles > 10 })
        print("JACK under PipeWire (\(dir)): \(spinet.sampleRate) Hz, \(spinet.periodFrames) frames; notices \(spinet.takeNotices())")
        let fake = JACKTestServer.pipeWire
        let offsets = [0, 1, 37, 63, 64, 100, 127, 200, 255]
        let delays = try onsetDelays(server: fake, offsets: offsets, tag: "-a")
        print("JACK onsets under PipeWire: delays \(delays.map { $0.map(String.init) ?? "none" })")
        #expect(delays == offsets.map { _ in spinet.latencyFrames })

        metadata("clock.force-rate", "44100")
        #expect(waitFor(5) { spinet.sampleRate == 44100 && spinet.engine?.sampleRate == 44100 })
        usleep(200_000)
        print("JACK under PipeWire after clock.force-rate 44100: \(spinet.sampleRate) Hz, engine \(spinet.engine?.sampleRate ?? 0) Hz; notices \(spinet.takeNotices())")
        let after = try onsetDelays(server: fake, offsets: offsets, tag: "-b")
        print("JACK onsets under PipeWire at 44.1 kHz: delays \(after.map { $0.map(String.init) ?? "none" })")
        #expect(after == offsets.map { _ in spinet.latencyFrames })
    }
}
}

/// Sends one long note on `key` to Spinet:midi_in, records Spinet:out_L and
/// returns the server's rate and the note's fundamental, measured by
/// autocorrelation over ten periods (a resolution well under 1 Hz).
func measuredPitch(server: JACKTestServer, key: UInt8, tag: String) throws -> (frequency: Double, rate: Int) {
    let sender = try JACKTestClient(name: "sender\(tag)", server: server.name, midiOut: true)
    let recorder = try JACKTestClient(name: "recorder\(tag)", server: server.name, audioIn: 1)
    try sender.connect(sender.port("midi_out"), "Spinet:midi_in")
    try recorder.connect("Spinet:out_L", recorder.port("in_1"))
    usleep(100_000)
    let rate = Int(jack_get_sample_rate(recorder.client))
    let period = max(recorder.lastPeriod, 1)
    let cycles = 2 * rate / period
    sender.arm(notes: [.init(cycle: 4, offset: 0, bytes: [0x90, key, 100]), .init(cycle: 4 + cycles, offset: 0, bytes: [0x80, key, 0])])
    recorder.arm(recordFrames: (cycles + 8) * period)
    #expect(waitFor(20) { sender.allSent && recorder.recordingFull }, "note not sent or recording not full")
    let (samples, start) = recorder.recording
    guard let on = sender.sentFrames.first ?? nil else { return (0, rate) }
    // From a quarter second after the onset, a half second of the sustained note.
    let from = on - start + rate / 4
    let n = rate / 2
    guard from >= 0, from + n + rate / 40 <= samples.count else { return (0, rate) }
    let expected = Double(rate) / 440 * 10
    var best = 0, bestScore = -Double.infinity
    var scores: [Int: Double] = [:]
    for lag in Int(expected * 0.98)...Int(expected * 1.02) + 1 {
        var sum = 0.0
        for i in from..<(from + n) { sum += Double(samples[i]) * Double(samples[i + lag]) }
        scores[lag] = sum
        if sum > bestScore { bestScore = sum; best = lag }
    }
    // Parabolic interpolation between the neighbouring lags.
    var lag = Double(best)
    if let a = scores[best - 1], let c = scores[best + 1], a - 2 * bestScore + c != 0 {
        lag += 0.5 * (a - c) / (a - 2 * bestScore + c)
    }
    return (10 * Double(rate) / lag, rate)
}
