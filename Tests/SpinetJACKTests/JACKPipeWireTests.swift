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
        child.arguments = [CommandLine.arguments[0], "--testing-library", "swift-testing", "--filter", "pipeWireChild"]
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
        #expect(text.contains("pipeWireChild") && text.contains("passed"))
    }

    /// In the child, under pw-jack: onsets exact at PipeWire's quantum, a
    /// forced rate change followed with a graph built at the new rate.
    @Test(.enabled(if: PipeWireHost.isChild))
    func pipeWireChild() throws {
        let dir = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? ""
        func metadata(_ key: String, _ value: String) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/pw-metadata")
            p.arguments = ["-n", "settings", "0", key, value]
            p.standardOutput = FileHandle.nullDevice
            try? p.run()
            p.waitUntilExit()
        }
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
