import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

extension JACKTests {
/// `spinet play --driver jack FILE...` on a terminal: the transport keys
/// typed on a pseudo-terminal, the status line read from it, the sound
/// recorded by a JACK client.
@Suite("spinet play FILE on a terminal: the transport keys")
struct PlayerTerminalJACKTests {
    /// An organ (no decay: a note sounds until released) playing notes of
    /// 0.25 s end to end for `seconds`, from `key` up and down a triad; no
    /// reverb or chorus sends.
    static func organ(seconds: Int, key: UInt8) -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)     // 120 bpm: 960 ticks a second
        var e: [(tick: Int64, event: TrackEvent.Kind)] = [
            (0, .message(.programChange(channel: 0, program: 19))),
            (0, .message(.controlChange(channel: 0, controller: 91, value: 0))),
            (0, .message(.controlChange(channel: 0, controller: 93, value: 0))),
        ]
        for i in 0..<(seconds * 4) {
            let k = key + [0, 4, 7, 4][i % 4]
            e.append((Int64(i * 240), .message(.noteOn(channel: 0, key: k, velocity: 100))))
            e.append((Int64(i * 240 + 240), .message(.noteOff(channel: 0, key: k, velocity: 0))))
        }
        e.sort { $0.tick < $1.tick }
        w.addTrack(e, endTick: Int64(seconds * 960))
        return w.bytes()
    }

    /// The status lines shown so far (each drawn as CR, the text, erase to the end of the line).
    static func statusLines(_ output: String) -> [String] {
        output.components(separatedBy: "\r").compactMap { piece in
            guard let end = piece.range(of: "\u{1B}[K") else { return nil }
            let text = String(piece[..<end.lowerBound])
            return text.contains(" | voices ") ? text : nil
        }
    }

    /// The latest status line's file and position (seconds), and whether it says paused.
    static func position(_ output: String) -> (file: String, seconds: Int, paused: Bool)? {
        guard var line = statusLines(output).last else { return nil }
        let paused = line.hasPrefix("paused ")
        if paused { line.removeFirst("paused ".count) }
        // "FILE M:SS/M:SS | ..."
        guard let bar = line.range(of: " | ") else { return nil }
        let head = line[..<bar.lowerBound]
        guard let space = head.lastIndex(of: " ") else { return nil }
        let clock = head[head.index(after: space)...].split(separator: "/").first ?? ""
        let parts = clock.split(separator: ":")
        guard parts.count == 2, let m = Int(parts[0]), let s = Int(parts[1]) else { return nil }
        return (String(head[..<space]), m * 60 + s, paused)
    }

    static func peak(_ x: ArraySlice<Float>) -> Float { x.reduce(0) { max($0, abs($1)) } }

    /// Space pauses (every note released: silence) and resumes (sound
    /// again); → seeks 5 s on; `n` and `p` go to the next file and back;
    /// `q` quits with status 0. The status line shows the file, its
    /// position and length, the tempo, and "paused".
    @Test func theKeysPauseSeekSkipAndQuit() throws {
        let server = JACKTestServer()
        try server.start()
        let recorder = try JACKTestClient(name: "rec-k", server: server.name, audioIn: 1)
        recorder.arm(recordFrames: 60 * 48000)
        let dir = try SpinetCommand.temporaryDirectory("player-keys")
        let a = dir.appendingPathComponent("a.mid"), b = dir.appendingPathComponent("b.mid")
        try Data(Self.organ(seconds: 20, key: 60)).write(to: a)
        try Data(Self.organ(seconds: 10, key: 72)).write(to: b)
        let t0 = Date()
        let play = try PseudoTerminalProcess(["play", "--driver", "jack", "--priority", "0", "--dry",
                                              "--jack-connect", "rec-k:in_1,rec-k:in_1", a.path, b.path],
                                             environment: ["JACK_DEFAULT_SERVER": server.name])
        defer { play.signal(SIGKILL) }
        func report() -> String { play.output.replacingOccurrences(of: "\r", with: "\\r\n").replacingOccurrences(of: "\u{1B}", with: "ESC") }
        /// The next `seconds` of sound, after `skipping` seconds: counted in
        /// the server's frames, not the test's clock (a busy machine may run
        /// the dummy server's cycles late).
        func listen(_ seconds: Double, skipping: Double = 0) -> ArraySlice<Float> {
            let from = recorder.recording.samples.count + Int(skipping * 48000)
            let to = from + Int(seconds * 48000)
            waitFor(60) { recorder.recording.samples.count >= to }
            let samples = recorder.recording.samples
            return samples[min(from, samples.count)..<min(to, samples.count)]
        }

        // Playing, the status line on the terminal: the file, where it is, its length, the tempo.
        try #require(play.waitForOutput(30) { Self.position($0)?.seconds ?? 0 >= 1 }, "no status line: \(report())")
        #expect(play.output.contains("playing \(a.path) (0:20)"))
        let line = try #require(Self.statusLines(play.output).last)
        #expect(line.hasPrefix("\(a.path) 0:0") && line.contains("/0:20 | 120 bpm | voices "), "\(line)")
        #expect(Self.peak(listen(0.5)) > 0.01, "nothing heard while playing")

        // Space: paused, every note released: silence, the position held.
        play.send(" ")
        #expect(play.waitForOutput(5) { Self.position($0)?.paused == true }, "no 'paused' in the status line: \(report())")
        // the pause takes effect 0.15 s on, then the organ's release: then a second of silence
        let held = try #require(Self.position(play.output))
        let paused = listen(1, skipping: 0.7)
        #expect(paused.count == 48000)
        #expect(Self.peak(paused) < 1e-4, "sound while paused: peak \(Self.peak(paused))")
        #expect(Self.position(play.output)?.seconds == held.seconds && Self.position(play.output)?.paused == true)

        // Space again: on from there, heard again (from the next note: a note struck before is not struck again).
        play.send(" ")
        #expect(play.waitForOutput(5) { Self.position($0)?.paused == false }, "still paused: \(report())")
        #expect(Self.peak(listen(0.8)) > 0.01, "nothing heard after resuming")
        let before = try #require(Self.position(play.output))
        #expect(before.file == a.path && abs(before.seconds - held.seconds) <= 1, "resumed at \(before), paused at \(held)")

        // →: 5 s on.
        play.send("\u{1B}[C")
        #expect(play.waitForOutput(5) { Self.position($0).map { $0.seconds >= before.seconds + 5 } ?? false },
                "no seek to 5 s on from \(before.seconds) s: \(report())")
        let sought = try #require(Self.position(play.output))
        #expect(sought.file == a.path && sought.seconds <= before.seconds + 7, "\(sought) after \(before)")
        #expect(Self.peak(listen(0.6)) > 0.01, "nothing heard after the seek")

        // n: the next file; p (under 3 s into it): back to the first.
        play.send("n")
        #expect(play.waitForOutput(5) { $0.contains("playing \(b.path) (0:10)") && Self.position($0)?.file == b.path },
                "no next file: \(report())")
        #expect(Self.peak(listen(0.6)) > 0.01, "nothing heard from the next file")
        play.send("p")
        #expect(play.waitForOutput(5) { $0.components(separatedBy: "playing \(a.path) (0:20)").count == 3 && Self.position($0)?.file == a.path },
                "no previous file: \(report())")
        #expect((Self.position(play.output)?.seconds ?? 99) <= 2, "the previous file starts from its beginning")

        // q: quits, status 0, the terminal as it was (the summary printed).
        play.send("q")
        let status = play.wait(timeout: 10)
        print("spinet play on a terminal, keys typed over \(String(format: "%.1f", Date().timeIntervalSince(t0))) s: exit \(String(describing: status)); output:\n\(report())")
        #expect(status == 0)
        #expect(play.output.contains("Played "))
    }
}
}
