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
            // no key struck again while it rings: a render over several partitions gives a key's
            // notes in turn to several FluidSynth players (see docs/rendering.md)
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

    /// About four seconds dense enough that a render's plan splits it over
    /// several players (6 on the bundled font): piano notes every 100 ms
    /// under the sustain pedal, an eight-note string chord, drums every
    /// 125 ms; reverb and chorus sends at 0.
    static func densePiece() -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)     // 960 ticks a second
        var e: [(tick: Int64, event: TrackEvent.Kind)] = [
            (0, .message(.programChange(channel: 1, program: 48))),
            (0, .message(.controlChange(channel: 0, controller: 64, value: 127))),
        ]
        for c: UInt8 in [0, 1, 9] {
            e.append((0, .message(.controlChange(channel: c, controller: 91, value: 0))))
            e.append((0, .message(.controlChange(channel: c, controller: 93, value: 0))))
        }
        for i in 0..<40 {
            let t = Int64(17 + i * 96), k = UInt8(36 + (i * 7) % 48)
            e.append((t, .message(.noteOn(channel: 0, key: k, velocity: 80))))
            e.append((t + 60, .message(.noteOff(channel: 0, key: k, velocity: 0))))
        }
        for (j, k) in [48, 52, 55, 60, 64, 67, 72, 76].enumerated() {
            e.append((Int64(5 + j * 3), .message(.noteOn(channel: 1, key: UInt8(k), velocity: 70))))
            e.append((3800, .message(.noteOff(channel: 1, key: UInt8(k), velocity: 0))))
        }
        for i in 0..<32 {
            let t = Int64(11 + i * 120), k = UInt8([36, 38, 42, 46][i % 4])
            e.append((t, .message(.noteOn(channel: 9, key: k, velocity: 100))))
            e.append((t + 40, .message(.noteOff(channel: 9, key: k, velocity: 0))))
        }
        e.append((3900, .message(.controlChange(channel: 0, controller: 64, value: 0))))
        w.addTrack(e.sorted { $0.tick < $1.tick }, endTick: 4000)
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
    /// `input`: standard input; `stop`: a signal sent that many seconds after play says it plays the first file.
    static func record(_ arguments: [String], period: Int = 128, seconds: Double = 30, input: URL? = nil,
                       stop: (after: Double, signal: Int32)? = nil) throws -> Take {
        let server = JACKTestServer()
        try server.start(period: period)
        let left = try JACKTestClient(name: "rec-l", server: server.name, audioIn: 1)
        let right = try JACKTestClient(name: "rec-r", server: server.name, audioIn: 1)
        left.arm(recordFrames: Int(seconds * 48000))
        right.arm(recordFrames: Int(seconds * 48000))
        let (p, log) = try JACKCommandTests.play(["--dry", "--jack-connect", "rec-l:in_1,rec-r:in_1"] + arguments, server: server.name, input: input)
        defer { try? FileManager.default.removeItem(at: log) }
        if let stop {
            waitFor(seconds) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("playing ") }
            usleep(UInt32(stop.after * 1e6))
            kill(p.processIdentifier, stop.signal)
        }
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
    /// render in one partition (`--partitions 1`, one FluidSynth as the
    /// live player has), sample for sample from the first onset (both
    /// channels), and play exits 0 once the sound has died away. Every 64-frame
    /// block is compared: a note a frame early or late would differ for its
    /// whole length, and a voice started from another voice slot's history
    /// (what a render over several FluidSynth players gives) would differ in
    /// the first block of the note.
    @Test(arguments: [64, 256])
    func playsTheFileAsItsRender(period: Int) throws {
        let bytes = Self.piece()
        let song = try Self.file("song.mid", bytes)
        let take = try Self.record([song.path], period: period)
        print("spinet play FILE (period \(period)): exit \(take.status); output:\n\(take.log)")
        #expect(take.status == 0)
        #expect(take.log.contains("playing \(song.path) (0:01)"))
        let (start, n) = try Self.expectOnePartitionRender(of: song, in: take, label: "period \(period)")
        // Nothing after the render's end but silence (the next file would start there).
        #expect(take.left.dropFirst(start + n).allSatisfy { abs($0) < 1e-4 })
    }

    /// Expects `take` (live play of `song`) to be `song`'s render in one
    /// partition, every 64-frame block of both channels equal to -100 dB of
    /// the peak, from the first onset. Returns where the take's sound starts
    /// and how many frames the render has from its own.
    static func expectOnePartitionRender(of song: URL, in take: Take, label: String) throws -> (start: Int, frames: Int) {
        let (rl, rr) = try render(song, extra: ["--partitions", "1"])
        let start = try #require(firstSound(take.left), "nothing recorded")
        let refStart = try #require(firstSound(rl))
        let n = rl.count - refStart
        try #require(take.left.count - start >= n, "the recording ends before the render: \(take.left.count - start) < \(n)")
        // Live frame start + i is output frame refStart + i of the render (= its engine frame).
        for (live, reference, side) in [(take.left, rl, "left"), (take.right, rr, "right")] {
            let c = compare(live[start..<(start + n)], reference[refStart...], outputFrame: refStart)
            print(String(format: "live vs offline (--partitions 1), %@, %@: %d blocks of 64 differ (worst %.1f dB of the peak), elsewhere %.1f dB; RMS residual %.1f dB",
                         label, side, c.blocks.count, c.worstBlockDB, c.elsewhereDB, c.rmsDB))
            #expect(c.blocks.isEmpty, "\(label), \(side): blocks differing by more than -100 dB of the peak: \(c.blocks)")
            #expect(c.elsewhereDB < -100)
        }
        return (start, n)
    }

    /// A file the render's plan splits over several FluidSynth players
    /// plays live as its render in one partition, every 64-frame block
    /// equal to -100 dB; the default render differs in the first block of
    /// some notes (FluidSynth starts a voice from what its slot played
    /// before; docs/playing.md), which is printed, not asserted.
    @Test func aFileThePlanSplitsPlaysAsItsOnePartitionRender() throws {
        let song = try Self.file("dense.mid", Self.densePiece())
        let planned = try SpinetCommand.run(["render", song.path, "--dry", "-o", song.deletingPathExtension().path + ".plan.wav", "--force"])
        let said = planned.stderr.components(separatedBy: "real time, ").dropFirst().first?.split(separator: " ").first.flatMap { Int($0) }
        #expect((said ?? 0) > 1, "the plan should split the file: \(planned.stderr)")
        let take = try Self.record([song.path], period: 256)
        #expect(take.status == 0, "\(take.log)")
        let (start, n) = try Self.expectOnePartitionRender(of: song, in: take, label: "dense file")
        let (pl, _) = try Self.render(song)
        if let planStart = Self.firstSound(pl) {
            let c = Self.compare(take.left[start..<(start + min(n, pl.count - planStart))], pl[planStart...], outputFrame: planStart)
            print(String(format: "dense file live vs its default render (%d partitions): %d blocks of 64 differ (worst %.1f dB of the peak); RMS residual %.1f dB",
                         said ?? 0, c.blocks.count, c.worstBlockDB, c.rmsDB))
        }
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

    /// `-` reads the file from standard input: the same sound as from its path.
    @Test func readsAFileFromStandardInput() throws {
        let song = try Self.file("stdin.mid", Self.piece(key: 55))
        let take = try Self.record(["-"], input: song)
        print("spinet play - : exit \(take.status); output:\n\(take.log)")
        #expect(take.status == 0)
        #expect(take.log.contains("playing standard input (0:01)"))
        let (rl, _) = try Self.render(song)
        let start = try #require(Self.firstSound(take.left)), refStart = try #require(Self.firstSound(rl))
        let n = min(rl.count - refStart, take.left.count - start)
        let c = Self.compare(take.left[start..<(start + n)], rl[refStart..<(refStart + n)], outputFrame: refStart)
        #expect(c.elsewhereDB < -100)
    }

    /// A piece for `--start 2`: everything that shapes the sound is set
    /// before 2 s and only notes come after (from 2.5 s): GM System On, a
    /// program, volume, pan, expression, a pitch-bend range of 12 semitones
    /// (RPN 0) with a bend, a sustain pedal held across the start, a second
    /// channel's program and a tempo change (60 bpm from 1 s). The notes
    /// before 2 s are short and die away before 2.5 s.
    static func chasePiece() -> [UInt8] {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        func cc(_ c: UInt8, _ n: UInt8, _ v: UInt8) -> TrackEvent.Kind { .message(.controlChange(channel: c, controller: n, value: v)) }
        func note(_ c: UInt8, _ k: UInt8, _ v: UInt8) -> TrackEvent.Kind { .message(.noteOn(channel: c, key: k, velocity: v)) }
        var e: [(tick: Int64, event: TrackEvent.Kind)] = [
            (0, .sysEx([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])),
            (0, .tempo(microsecondsPerQuarter: 500_000)),
        ]
        for c: UInt8 in [0, 1, 9] { e += [(0, cc(c, 91, 0)), (0, cc(c, 93, 0))] }
        e += [(10, .message(.programChange(channel: 0, program: 24))), (10, cc(0, 7, 80)), (10, cc(0, 10, 30)), (10, cc(0, 11, 110)),
              (10, cc(0, 101, 0)), (10, cc(0, 100, 0)), (10, cc(0, 6, 12)), (10, cc(0, 38, 0)), (10, cc(0, 101, 127)), (10, cc(0, 100, 127)),
              (20, .message(.pitchBend(channel: 0, value: 12000))),
              (100, note(9, 37, 90)), (130, note(9, 37, 0)),
              (960, .tempo(microsecondsPerQuarter: 1_000_000)),
              (960, .message(.programChange(channel: 1, program: 11))), (960, cc(1, 7, 110)), (960, cc(1, 10, 100)),
              (1000, cc(1, 64, 127)),
              // 2 s = tick 1440; the notes from 2.5 s (tick 1680)
              (1680, note(0, 64, 100)), (1800, note(0, 64, 0)),
              (1700, note(1, 67, 90)), (1760, note(1, 67, 0)),
              (1900, note(0, 60, 100)), (2000, note(0, 60, 0)),
              (2100, cc(1, 64, 0))]
        e.sort { $0.tick < $1.tick }
        w.addTrack(e, endTick: 2400)
        return w.bytes()
    }

    /// `--start 2` plays what the render plays from 2 s, once the tails of
    /// the notes before have died away: the state at 2 s (program, volume,
    /// pan, expression, pitch-bend range and bend, the pedal held, the
    /// other channel's program, the tempo) was replayed.
    @Test func startChasesTheStateOfTheMusic() throws {
        let bytes = Self.chasePiece()
        let song = try Self.file("chase.mid", bytes)
        let take = try Self.record(["--start", "2", song.path])
        print("spinet play --start 2: exit \(take.status); output:\n\(take.log)")
        #expect(take.status == 0)
        #expect(take.log.contains("playing \(song.path) (0:04) from 0:02"))
        let (rl, _) = try Self.render(song)
        // Live, nothing sounds before the first note after the start (2.5 s):
        // find where it falls in the render (the shift that matches best).
        let start = try #require(Self.firstSound(take.left), "nothing recorded")
        let window = 2400
        try #require(take.left.count >= start + window)
        var best = (shift: 0, diff: Float.infinity)
        for r in (120_000 - 64)...(120_000 + 256) where r + window <= rl.count {
            var d: Float = 0
            for i in 0..<window { d = max(d, abs(take.left[start + i] - rl[r + i])) }
            if d < best.diff { best = (r, d) }
        }
        let n = min(rl.count - best.shift, take.left.count - start)
        let c = Self.compare(take.left[start..<(start + n)], rl[best.shift..<(best.shift + n)], outputFrame: best.shift)
        print(String(format: "--start 2 vs offline from 2.5 s: at render frame %d; %d blocks of 64 differ (worst %.1f dB), elsewhere %.1f dB; RMS %.1f dB",
                     best.shift, c.blocks.count, c.worstBlockDB, c.elsewhereDB, c.rmsDB))
        #expect(c.elsewhereDB < -60)
        #expect(c.blocks.count <= 3, "at most the three notes' first blocks differ")
        #expect(c.rmsDB < -30)
    }

    /// `--loop` plays the piece again at the end of its music, with no gap:
    /// an organ playing notes end to end on the left (pan 0) sounds across
    /// the seams as loud as across its own note changes, and a drum hit at
    /// the start of the piece on the right (pan 127) comes back exactly the
    /// music's length (1 s, 48000 frames, on the grid) later each time.
    /// SIGTERM then fades out and exits 143.
    @Test func loopHasNoGapAndSIGTERMExits143() throws {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        func cc(_ c: UInt8, _ n: UInt8, _ v: UInt8) -> TrackEvent.Kind { .message(.controlChange(channel: c, controller: n, value: v)) }
        var e: [(tick: Int64, event: TrackEvent.Kind)] = [
            (0, .message(.programChange(channel: 0, program: 19))),     // church organ: no decay
            (0, cc(0, 91, 0)), (0, cc(0, 93, 0)), (0, cc(0, 10, 0)),
            (0, cc(9, 91, 0)), (0, cc(9, 93, 0)), (0, cc(9, 10, 127)),
            (0, .message(.noteOn(channel: 9, key: 37, velocity: 110))), (20, .message(.noteOn(channel: 9, key: 37, velocity: 0))),
        ]
        for i in 0..<4 {       // four notes of 0.25 s, end to end: the music is 1 s
            let k = UInt8(60 + i * 3)
            e.append((Int64(i * 240), .message(.noteOn(channel: 0, key: k, velocity: 100))))
            e.append((Int64(i * 240 + 240), .message(.noteOff(channel: 0, key: k, velocity: 0))))
        }
        e.sort { $0.tick < $1.tick }
        w.addTrack(e, endTick: 960)
        let song = try Self.file("loop.mid", w.bytes())
        let take = try Self.record(["--loop", song.path], stop: (4, SIGTERM))
        print("spinet play --loop: exit \(take.status); output:\n\(take.log)")
        #expect(take.status == 143)
        #expect(take.log.components(separatedBy: "looped").count >= 3, "at least two seams")

        // The drum hits on the right: one a second, to the frame.
        var hits: [Int] = []
        var quiet = 0, armed = false
        for (i, x) in take.right.enumerated() {
            // a hit: the first sample over 0.02 after 0.1 s under 0.01 (the organ leaks -60 dB to the right)
            if armed && abs(x) > 0.02 { hits.append(i); armed = false }
            quiet = abs(x) < 0.01 ? quiet + 1 : 0
            if quiet >= 4800 { armed = true }
        }
        print("--loop: drum hits at \(hits), spaced \(zip(hits.dropFirst(), hits).map { $0 - $1 })")
        try #require(hits.count >= 3, "hits \(hits)")
        #expect(zip(hits.dropFirst(), hits).allSatisfy { $0 - $1 == 48000 })
        // The second pass and the third are the same samples, both sides, but
        // for the first 64 frames of some notes (see playsTheFileAsItsRender):
        // at most the piece's 5 note-ons' blocks, each straddling two windows.
        let h = hits[1] - 2400
        for side in [take.left, take.right] {
            try #require(side.count >= h + 96_000)
            var peak: Float = 0, worst: Float = 0
            var windows = 0
            for w in stride(from: h, to: h + 48_000, by: 64) {
                var d: Float = 0
                for i in w..<(w + 64) { d = max(d, abs(side[i] - side[i + 48_000])); peak = max(peak, abs(side[i])) }
                if d > 1e-6 { windows += 1; worst = max(worst, d) }
            }
            print("--loop: pass 3 vs pass 2: \(windows) windows of 64 differ, worst \(20 * log10(max(worst, 1e-20) / peak)) dB")
            #expect(windows <= 10)
        }

        // The organ on the left: the quietest 5 ms across the first two seams
        // is no quieter than half the quietest inside the first pass.
        let first = try #require(Self.firstSound(take.left))
        func quietest(_ from: Int, _ to: Int) -> Float {
            var q = Float.infinity
            var i = from
            while i + 240 <= min(to, take.left.count) {
                q = min(q, take.left[i..<(i + 240)].reduce(0) { max($0, abs($1)) })
                i += 240
            }
            return q
        }
        let inside = quietest(first + 2400, first + 45_600)
        let seams = min(quietest(first + 45_600, first + 50_400), quietest(first + 93_600, first + 98_400))
        print("--loop: quietest 5 ms inside a pass \(inside), across the seams \(seams)")
        #expect(seams >= inside / 2 && seams > 0)
    }

    /// `--transport`: the player waits for the JACK transport, starts with
    /// it in sync (the file's frame f sounds at the transport's frame f,
    /// plus the limiter's look-ahead, within the 64-frame grid), stops with
    /// it (notes released) and goes on from where a locate put it.
    @Test func followsTheJACKTransport() throws {
        let server = JACKTestServer()
        try server.start()
        let recorder = try JACKTestClient(name: "rec-t", server: server.name, audioIn: 1)
        recorder.transportStop()
        recorder.transportLocate(0)
        recorder.arm(recordFrames: 30 * 48000)
        // A drum hit every half second from 1 s (file frames 48000, 72000, ...), for 8 s.
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var e: [(tick: Int64, event: TrackEvent.Kind)] = [(0, .message(.controlChange(channel: 9, controller: 91, value: 0))),
                                                          (0, .message(.controlChange(channel: 9, controller: 93, value: 0)))]
        for i in 0..<15 {
            e.append((Int64(960 + i * 480), .message(.noteOn(channel: 9, key: 37, velocity: 110))))
            e.append((Int64(960 + i * 480 + 30), .message(.noteOn(channel: 9, key: 37, velocity: 0))))
        }
        w.addTrack(e, endTick: 960 * 9)
        let song = try Self.file("transport.mid", w.bytes())
        let (p, log) = try JACKCommandTests.play(["--dry", "--transport", "--jack-connect", "rec-t:in_1,rec-t:in_1", song.path], server: server.name)
        defer { try? FileManager.default.removeItem(at: log); if p.isRunning { kill(p.processIdentifier, SIGINT); p.waitUntilExit() } }
        #expect(waitFor(20) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("Latency:") })
        usleep(1_500_000)
        #expect(Self.firstSound(recorder.recording.samples) == nil, "silent until the transport rolls")

        recorder.transportStart()
        // hits at 1, 1.5, 2, 2.5 s; the stop midway to the next (at 3 s,
        // a loaded machine's late stop let that hit sound as the transport
        // stopped, in a cycle no longer rolling)
        usleep(2_750_000)
        recorder.transportStop()
        usleep(1_000_000)
        let stopped = recorder.recording
        recorder.transportLocate(5 * 48000)
        usleep(300_000)
        recorder.transportStart()
        usleep(1_200_000)               // hits at 5, 5.5, 6 s
        recorder.transportStop()
        usleep(300_000)
        let (samples, first) = recorder.recording
        let cycles = recorder.rollingCycles
        print("spinet play --transport: output:\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")

        // Each hit's JACK frame, as a transport frame (from the rolling cycles).
        var hits: [Int] = []
        var quiet = 0, armed = false
        for (i, x) in samples.enumerated() {
            if armed && abs(x) > 0.02 { hits.append(i); armed = false }
            quiet = abs(x) < 0.005 ? quiet + 1 : 0
            if quiet >= 4800 { armed = true }
        }
        func transportFrame(_ index: Int) -> Int? {
            let frame = first + index
            guard let c = cycles.last(where: { $0.frame <= frame }), frame - c.frame < 4096 else { return nil }
            return c.transportFrame + frame - c.frame
        }
        let at = hits.map { transportFrame($0) }
        print("--transport: hits at transport frames \(at.map { $0.map(String.init) ?? "stopped" })")
        // Every hit while rolling, at the file's frames 48000 + k * 24000 on
        // the transport's timeline, within 256 frames: the player reads the
        // transport beside the engine's frame, not in the same cycle (the
        // grid, the look-ahead and the attack are in it too). Within one
        // roll, the hits are exactly 24000 frames apart.
        #expect(at.count >= 5 && at.allSatisfy { $0 != nil })
        let offsets = at.compactMap { $0 }.map { (($0 - 48000) % 24000 + 36000) % 24000 - 12000 }
        print("--transport: hits off the file's frames by \(offsets)")
        #expect(offsets.allSatisfy { abs($0) <= 256 }, "hits off the file's frames: \(offsets)")
        // (the first hit aside: FluidSynth's very first voice starts a few frames late, as offline)
        let frames = Array(at.compactMap { $0 }.dropFirst())
        #expect(zip(frames.dropFirst(), frames).filter { $0 - $1 < 48000 }.allSatisfy { $0 - $1 == 24000 }, "\(frames)")
        #expect(at.compactMap { $0 }.contains { $0 < 5 * 48000 } && at.compactMap { $0 }.contains { $0 >= 5 * 48000 })
        // after the first stop, silence until the locate and start
        let afterStop = stopped.samples.count - 48000 / 2
        #expect(stopped.samples[afterStop...].allSatisfy { abs($0) < 1e-3 }, "sound after the transport stopped")
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
