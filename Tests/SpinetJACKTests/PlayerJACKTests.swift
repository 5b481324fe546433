import Foundation
import Glibc
import Testing
import SpinetMIDI
import SpinetTestSupport

extension JACKTests {
/// `spinet play --driver jack FILE...`: the MIDI file player, recorded by a
/// JACK client and compared with `spinet render` of the same file.
@Suite("spinet play FILE --driver jack")
struct PlayerJACKTests {
    /// A piece of about two seconds on the bundled font: piano (program 0)
    /// with the sustain pedal and a pitch bend, a program change to strings
    /// on channel 2, drums on channel 10; reverb and chorus sends at 0.
    static func piece(key: Int = 60, program: UInt8 = 48) -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)     // 120 bpm: 960 ticks a second
        var e: [(tick: Int64, event: TrackEvent.Kind)] = []
        for c: UInt8 in [0, 1, 9] {
            e.append((0, .message(.controlChange(channel: c, controller: 91, value: 0))))
            e.append((0, .message(.controlChange(channel: c, controller: 93, value: 0))))
        }
        e.append((0, .message(.programChange(channel: 1, program: program))))
        e.append((0, .message(.controlChange(channel: 0, controller: 64, value: 127))))
        for i in 0..<6 {
            let t = Int64(i * 211 + 17)        // off any grid
            // no key struck again while it rings: `spinet render` gives a key's
            // notes in turn to two synthesizers, a live one has one (see docs/playing.md)
            let k = UInt8(key + [0, 4, 7, 12, 16, 19][i])
            e.append((t, .message(.noteOn(channel: 0, key: k, velocity: UInt8(70 + i * 9)))))
            e.append((t + 150, .message(.noteOff(channel: 0, key: k, velocity: 0))))
            let drum = UInt8([36, 38, 39, 41, 43, 45][i])
            e.append((t + 5, .message(.noteOn(channel: 9, key: drum, velocity: 100))))
            e.append((t + 60, .message(.noteOff(channel: 9, key: drum, velocity: 0))))
        }
        e.append((700, .message(.controlChange(channel: 0, controller: 64, value: 0))))
        e.append((333, .message(.noteOn(channel: 1, key: UInt8(key - 12), velocity: 90))))
        e.append((900, .message(.pitchBend(channel: 1, value: 10240))))
        e.append((1500, .message(.noteOff(channel: 1, key: UInt8(key - 12), velocity: 0))))
        w.addTrack(e.sorted { $0.tick < $1.tick }, endTick: 1700)
        return w.bytes()
    }

    /// Spinet's output while it plays, from the first frame above silence.
    struct Take {
        var left: [Float]
        var right: [Float]
        var status: Int32
        var log: String
    }

    /// Runs `spinet play --driver jack --dry ARGS` on a new server at
    /// `period` frames, records out_L and out_R with two clients until it
    /// exits, and returns the recording.
    static func record(_ arguments: [String], period: Int = 128, seconds: Double = 30) throws -> Take {
        let server = JACKTestServer()
        try server.start(period: period)
        let left = try JACKTestClient(name: "rec-l", server: server.name, audioIn: 1)
        let right = try JACKTestClient(name: "rec-r", server: server.name, audioIn: 1)
        left.arm(recordFrames: Int(seconds * 48000))
        right.arm(recordFrames: Int(seconds * 48000))
        let (p, log) = try JACKCommandTests.play(["--dry", "--jack-connect", "rec-l:in_1,rec-r:in_1"] + arguments, server: server.name)
        defer { try? FileManager.default.removeItem(at: log) }
        let ended = waitFor(seconds) { !p.isRunning }
        if !ended { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(ended, "spinet play did not end by itself: \(text)")
        // both recorders see the same cycles: cut both at the same start
        let (l, ls) = left.recording, (r, rs) = right.recording
        let shift = ls - rs
        let rr = shift >= 0 ? Array(r.dropFirst(shift)) : Array(repeating: 0, count: -shift) + r
        let n = min(l.count, rr.count)
        return Take(left: Array(l.prefix(n)), right: Array(rr.prefix(n)), status: p.terminationStatus, log: text)
    }

    /// `spinet render FILE --dry --bits 32f` at 48 kHz: left and right.
    static func render(_ file: URL, extra: [String] = []) throws -> ([Float], [Float]) {
        let out = file.deletingPathExtension().appendingPathExtension("render.wav")
        let r = try SpinetCommand.run(["render", file.path, "--dry", "--bits", "32f", "-o", out.path, "--force", "--quiet"] + extra)
        #expect(r.status == 0, "\(r.stderr)")
        let wav = try WAVFile(data: Data(contentsOf: out))
        return (wav.channel(0), wav.channel(1))
    }

    static func firstSound(_ x: [Float], from: Int = 0) -> Int? {
        (from..<x.count).first { abs(x[$0]) > 1e-6 }
    }

    /// The first frame from `from` that begins `frames` frames of silence.
    static func firstSilence(_ x: [Float], from: Int, frames: Int) -> Int? {
        var run = 0
        for i in from..<x.count {
            run = abs(x[i]) < 1e-6 ? run + 1 : 0
            if run == frames { return i + 1 - frames }
        }
        return nil
    }

    /// The largest difference over the reference's peak, in dB (-inf: equal).
    static func residualDB(_ live: ArraySlice<Float>, _ reference: ArraySlice<Float>) -> Double {
        var diff: Float = 0, peak: Float = 0
        for (a, b) in zip(live, reference) { diff = max(diff, abs(a - b)); peak = max(peak, abs(b)) }
        return diff == 0 ? -.infinity : 20 * log10(Double(diff / max(peak, 1e-9)))
    }

    static func file(_ name: String, _ bytes: [UInt8]) throws -> URL {
        let dir = try SpinetCommand.temporaryDirectory("player-jack")
        let url = dir.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url
    }

    /// Played live at 64 and 256 frames a period, the file is its offline
    /// render, sample for sample from the first onset (both channels), and
    /// play exits 0 once the sound has died away.
    ///
    /// "Sample for sample" with one exception, measured and bounded: at some
    /// note-ons, the first 64-frame block of FluidSynth's mix differs (a new
    /// voice takes a voice slot that played something else before, and the
    /// live player has one FluidSynth where `spinet render` has two). Every
    /// such block is a whole grid block at a note-on's frame, and every frame
    /// outside them is equal to -100 dB. A note a frame early or late would
    /// differ for its whole length.
    @Test(arguments: [64, 256])
    func playsTheFileAsItsRender(period: Int) throws {
        let bytes = Self.piece()
        let song = try Self.file("song.mid", bytes)
        let take = try Self.record([song.path], period: period)
        print("spinet play FILE (period \(period)): exit \(take.status); output:\n\(take.log)")
        #expect(take.status == 0)
        #expect(take.log.contains("playing \(song.path) (0:01)"))
        let (rl, rr) = try Self.render(song)
        let start = try #require(Self.firstSound(take.left), "nothing recorded")
        let refStart = try #require(Self.firstSound(rl))
        let n = rl.count - refStart
        try #require(take.left.count - start >= n, "the recording ends before the render: \(take.left.count - start) < \(n)")
        // Live frame start + i is output frame refStart + i of the render (= its engine frame).
        let onsets = Set(try MIDIFile(bytes: bytes).schedule(sampleRate: 48000).events.compactMap { e -> Int64? in
            guard case .message(let m) = e.kind, m.isNoteOn else { return nil }
            return (e.frame + 32) / 64 * 64        // SoundFontUnit.deliveryFrame
        })
        for (live, reference, side) in [(take.left, rl, "left"), (take.right, rr, "right")] {
            let c = Self.compare(live[start..<(start + n)], reference[refStart...], outputFrame: refStart)
            print(String(format: "live vs offline, period %d, %@: %d blocks of 64 differ (worst %.1f dB of the peak), elsewhere %.1f dB; RMS residual %.1f dB",
                         period, side, c.blocks.count, c.worstBlockDB, c.elsewhereDB, c.rmsDB))
            #expect(c.elsewhereDB < -100, "\(side): frames outside the onset blocks differ")
            #expect(c.blocks.allSatisfy { onsets.contains($0) }, "\(side): blocks differing away from a note-on: \(c.blocks.filter { !onsets.contains($0) })")
            #expect(c.blocks.count <= onsets.count / 2, "\(side): \(c.blocks.count) blocks differ")
            #expect(c.rmsDB < -30)
        }
        // Nothing after the render's end but silence (the next file would start there).
        #expect(take.left.dropFirst(start + n).allSatisfy { abs($0) < 1e-4 })
    }

    /// How `live` (aligned) differs from `reference`, whose first frame is
    /// output frame `outputFrame`: the grid blocks (their first frame) where
    /// it differs by more than -100 dB of the peak, the worst of them, the
    /// largest difference elsewhere, and the RMS residual, in dB.
    static func compare(_ live: ArraySlice<Float>, _ reference: ArraySlice<Float>, outputFrame: Int)
        -> (blocks: [Int64], worstBlockDB: Double, elsewhereDB: Double, rmsDB: Double) {
        let a = Array(live), b = Array(reference)
        let peak = Double(b.reduce(0) { max($0, abs($1)) })
        func db(_ x: Double) -> Double { x == 0 ? -.infinity : 20 * log10(x / max(peak, 1e-12)) }
        var byBlock: [Int64: Double] = [:]
        var sumD = 0.0, sumR = 0.0
        for i in 0..<min(a.count, b.count) {
            let d = Double(abs(a[i] - b[i]))
            sumD += d * d
            sumR += Double(b[i]) * Double(b[i])
            let block = Int64(outputFrame + i) / 64 * 64
            byBlock[block] = max(byBlock[block] ?? 0, d)
        }
        let threshold = peak * 1e-5
        let blocks = byBlock.filter { $0.value > threshold }.keys.sorted()
        let worst = blocks.map { byBlock[$0]! }.max() ?? 0
        let elsewhere = byBlock.filter { $0.value <= threshold }.values.max() ?? 0
        let rms = sumR > 0 ? 10 * log10(max(sumD, 1e-300) / sumR) : 0
        return (blocks, db(worst), db(elsewhere), rms)
    }

    /// An unreadable file among good ones is named in one line and skipped;
    /// the others play in order; the exit status is 1.
    @Test func anUnreadableFileIsSkippedAndTheStatusIs1() throws {
        let a = try Self.file("a.mid", Self.piece(key: 60))
        let b = try Self.file("b.mid", Self.piece(key: 67))
        let bad = try Self.file("bad.mid", Array("not a MIDI file".utf8))
        let missing = a.deletingLastPathComponent().appendingPathComponent("missing.mid").path
        let take = try Self.record([a.path, bad.path, missing, b.path])
        print("spinet play with bad files: exit \(take.status); output:\n\(take.log)")
        #expect(take.status == 1)
        let lines = take.log.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("spinet: \(bad.path): ") && $0.hasSuffix("; skipped") })
        #expect(lines.contains { $0.hasPrefix("spinet: \(missing): ") && $0.hasSuffix("; skipped") })
        let playing = lines.filter { $0.contains("playing ") }
        #expect(playing.count == 2 && playing.first?.contains(a.path) == true && playing.last?.contains(b.path) == true, "\(playing)")
        // Both were heard: two onsets a silence apart.
        let first = try #require(Self.firstSound(take.left))
        let quiet = try #require(Self.firstSilence(take.left, from: first, frames: 4800))
        #expect(Self.firstSound(take.left, from: quiet) != nil, "the second file was not heard")
    }

    /// Nothing readable: each file named, exit 1 before any audio.
    @Test func noReadableFileIsStatus1() throws {
        let (p, log) = try JACKCommandTests.play(["/nonexistent/x.mid"], server: "spinet-no-such-server-\(getpid())")
        p.waitUntilExit()
        let text = try String(contentsOf: log, encoding: .utf8)
        try? FileManager.default.removeItem(at: log)
        #expect(p.terminationStatus == 1)
        #expect(text.hasPrefix("spinet: /nonexistent/x.mid: ") && text.hasSuffix("; skipped\n") && text.split(separator: "\n").count == 1, "\(text)")
    }
}
}
