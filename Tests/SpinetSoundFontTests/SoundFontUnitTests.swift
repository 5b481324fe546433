import Foundation
import Testing
import SpinetEngine
import SpinetFile
import SpinetSettings
import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetTestSupport
import SpinetTestTraits

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let bundledFont = repositoryRoot.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path

/// Renders a schedule through the engine with one SoundFont unit, offline.
func renderWithSoundFont(_ schedule: MIDISchedule, font: String = bundledFont, fluidEffects: Bool = false,
                         polyphony: Int = 256) throws -> (left: [Float], right: [Float]) {
    var options = SoundFontOptions()
    options.fluidEffects = fluidEffects
    options.polyphony = polyphony
    let unit = try SoundFontUnit(fonts: [font], sampleRate: Double(schedule.sampleRate), options: options)
    let (engine, queue) = EngineHarness.make(unit, sampleRate: Double(schedule.sampleRate), maxFrames: OfflineRenderer.Options().blockFrames)
    let renderer = OfflineRenderer(engine: engine, queue: queue, schedule: schedule)
    var left: [Float] = [], right: [Float] = []
    _ = try renderer.run(sink: { l, r, n in
        left.append(contentsOf: UnsafeBufferPointer(start: l, count: n))
        right.append(contentsOf: UnsafeBufferPointer(start: r, count: n))
    })
    return (left, right)
}

/// A drum-channel file: claves (key 75) at the given ticks, no reverb or chorus.
func clavesFile(ticks: [Int64], division: MIDIFileWriterDivision, tempoMicroseconds: Int) -> [UInt8] {
    var writer: MIDIFileWriter
    switch division {
    case .ppq(let d): writer = MIDIFileWriter(format: 1, ticksPerQuarter: d)
    case .smpte(let fps, let tpf): writer = MIDIFileWriter(format: 1, smpteFramesPerSecond: fps, ticksPerFrame: tpf)
    }
    writer.addTrack([(tick: 0, event: .tempo(microsecondsPerQuarter: tempoMicroseconds))])
    var events: [(tick: Int64, event: TrackEvent.Kind)] = [
        (0, .message(.controlChange(channel: 9, controller: 91, value: 0))),
        (0, .message(.controlChange(channel: 9, controller: 93, value: 0))),
    ]
    for t in ticks {
        events.append((t, .message(.noteOn(channel: 9, key: 75, velocity: 120))))
        events.append((t + 1, .message(.noteOff(channel: 9, key: 75, velocity: 0))))
    }
    writer.addTrack(events)
    return writer.bytes()
}

enum MIDIFileWriterDivision {
    case ppq(Int)
    case smpte(Int, Int)
}

@Suite("SoundFont unit")
struct SoundFontUnitTests {
    /// FluidSynth applies events on its 64-frame grid. Spinet delivers each
    /// event at the grid boundary nearest its exact frame, so every onset
    /// measured on the rendered audio is within 32 frames of the exact time
    /// (and exactly on the nearest boundary), at several rates, divisions
    /// and tempos.
    @Test(arguments: [
        (44100, MIDIFileWriterDivision.ppq(480), 500_000),
        (48000, .ppq(96), 689_655),
        (96000, .ppq(960), 346_820),
        (48000, .smpte(25, 40), 500_000),
        (22050, .ppq(1000), 600_000),
    ])
    func onsetsLandWithin32FramesOfTheExactFrame(rate: Int, division: MIDIFileWriterDivision, tempo: Int) throws {
        let attack = try clavesAttackDelay(rate: rate)
        let unit: Int64
        switch division {
        case .ppq(let d): unit = Int64(d)
        case .smpte(_, let t): unit = Int64(t) * 25
        }
        // Note 0 only warms the voice up: FluidSynth's very first voice, in
        // its first block, starts a few frames later than every later one.
        var ticks: [Int64] = [0]
        var rng = SplitMix64(seed: UInt64(rate))
        for i in 1...12 { ticks.append(Int64(i) * unit + Int64(rng.next() % UInt64(unit / 2))) }
        let file = try MIDIFile(bytes: clavesFile(ticks: ticks, division: division, tempoMicroseconds: tempo))
        let schedule = file.schedule(sampleRate: rate)
        let exact = ticks.map { schedule.frame(forTick: $0) }
        let out = try renderWithSoundFont(schedule)
        let onsets = SignalAnalysis.onsets(out.left, threshold: 0.01, quiet: 0.001, minGap: rate / 10)
        try #require(onsets.count == ticks.count, "found onsets \(onsets)")
        var worst: Int64 = 0
        var naiveWorst: Int64 = 0
        for i in 1..<exact.count {
            let f = exact[i]
            let measured = Int64(onsets[i]) - attack
            let nearestBoundary = (f + 32) / 64 * 64
            #expect(measured == nearestBoundary, "note \(i): exact \(f), measured \(measured)")
            worst = max(worst, abs(measured - f))
            naiveWorst = max(naiveWorst, (f + 63) / 64 * 64 - f)
        }
        #expect(worst <= 32)
        #expect(naiveWorst > 32, "the test notes should include frames the naive next-boundary rule gets > 32 late")
    }

    /// Frames from a claves note's exact start to its first sample above
    /// 0.01: measured on a note that falls exactly on a grid boundary (the
    /// second note of a millisecond-division file, at 1.28 s: 1.28 * rate is
    /// a multiple of 64 for every rate that is a multiple of 50 Hz).
    func clavesAttackDelay(rate: Int) throws -> Int64 {
        let file = try MIDIFile(bytes: clavesFile(ticks: [0, 1280], division: .smpte(25, 40), tempoMicroseconds: 500_000))
        let schedule = file.schedule(sampleRate: rate)
        let reference = schedule.frame(forTick: 1280)
        try #require(reference % 64 == 0)
        let out = try renderWithSoundFont(schedule)
        let onsets = SignalAnalysis.onsets(out.left, threshold: 0.01, quiet: 0.001, minGap: rate / 10)
        try #require(onsets.count == 2)
        return Int64(onsets[1]) - reference
    }

    /// Two renders of the same input give the same samples.
    @Test func rendersAreDeterministic() throws {
        let file = try MIDIFile(path: repositoryRoot.appendingPathComponent("demo/spinet-demo.mid").path)
        let schedule = file.schedule(sampleRate: 48000)
        let a = try renderWithSoundFont(schedule)
        let b = try renderWithSoundFont(schedule)
        #expect(a.left.count > 48000 * 40)
        #expect(a.left == b.left && a.right == b.right)
    }

    /// After prepare, rendering many blocks with notes, controllers, program
    /// changes, pitch bends and SysEx allocates nothing and takes no lock
    /// (also on a channel split over two synthesizers).
    @Test(.realtimeProbe) func renderingAllocatesNothingAndTakesNoLock() throws {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        // The Spinet-effects path: per-channel FluidSynth outputs, sends,
        // Spinet's reverb, chorus and delay.
        var options = SoundFontOptions()
        options.fluidEffects = false
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, options: options)
        var config = Engine.Configuration()
        config.reverb = .hall
        config.chorus = .wide
        config.delay = .dottedEighth
        // channel 10 split over two synthesizers, as an offline render of a
        // drum-heavy song does: notes take turns, with a note-off for the other
        let guest = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, options: options)
        let (engine, queue) = EngineHarness.make([unit, guest], configuration: config) { engine, units in
            engine.routeAll(to: units[0])
            engine.route(channel: 9, takingTurns: [units[0], units[1]], fixedKeys: [42, 44, 46])
        }
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        defer { left.deallocate(); right.deallocate() }
        // Warm up: first use of each code path may touch lazily created runtime metadata.
        engine.render(frames: 256, left: left, right: right)
        var frame: Int64 = 256
        var allocations = 0, locks = 0
        for block in 0..<400 {
            for k in 0..<6 {
                let ch = UInt8((block + k) % 16)
                let key = UInt8(36 + (block * 7 + k * 5) % 60)
                queue.push(EngineEvent(frame: frame + Int64(k * 37), .noteOn(channel: ch, key: key, velocity: 100)))
                queue.push(EngineEvent(frame: frame + Int64(k * 41), .controlChange(channel: ch, controller: UInt8([1, 7, 10, 11, 64, 91][k]), value: UInt8(block % 128))))
                queue.push(EngineEvent(frame: frame + 200, .noteOff(channel: ch, key: key, velocity: 0)))
            }
            if block % 50 == 0 { queue.push(EngineEvent(frame: frame, .programChange(channel: 0, program: UInt8(block / 50)))) }
            if block % 7 == 0 { queue.push(EngineEvent(frame: frame + 3, .pitchBend(channel: 3, value: UInt16(block * 40 % 16384)))) }
            if block % 100 == 0 { queue.pushSysEx(frame: frame + 5, [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x70, 0xF7]) }
            if block % 20 == 0 {
                queue.push(EngineEvent(frame: frame + 9, .controlChange(channel: UInt8(block % 16), controller: 93, value: UInt8(block % 128))))
                queue.push(EngineEvent(frame: frame + 9, .controlChange(channel: UInt8(block % 16), controller: 94, value: UInt8(block % 100))))
            }
            let counts = RealtimeProbe.count { engine.render(frames: 256, left: left, right: right) }
            allocations += counts.allocations
            locks += counts.locks
            frame += 256
        }
        #expect(engine.statistics.peakVoices > 10)
        #expect(allocations == 0)
        #expect(locks == 0)
    }

    /// The same render under a seccomp trap on its thread: no system call at all.
    @Test(.realtimeProbe) func renderingMakesNoSystemCall() throws {
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000)
        let (engine, queue) = EngineHarness.make(unit)
        let left = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: 256)
        defer { left.deallocate(); right.deallocate() }
        engine.render(frames: 256, left: left, right: right)
        for i in 0..<200 {
            queue.push(EngineEvent(frame: Int64(256 + i * 128), .noteOn(channel: UInt8(i % 16), key: UInt8(40 + i % 40), velocity: 90)))
            queue.push(EngineEvent(frame: Int64(256 + i * 128 + 100), .controlChange(channel: UInt8(i % 16), controller: 7, value: UInt8(i % 128))))
        }
        let work = UncheckedBox((engine, left, right))
        guard let report = RealtimeProbe.syscalls({
            let (engine, left, right) = work.value
            for _ in 0..<120 { engine.render(frames: 256, left: left, right: right) }
        }) else {
            Issue.record("the seccomp trap is unavailable on this machine")
            return
        }
        #expect(engine.statistics.peakVoices > 5)
        #expect(report.count == 0, "first system call: \(String(describing: report.first))")
    }

    @Test func brokenSoundFontsAreRefusedWithTheirName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spinet-sf-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = try Data(contentsOf: URL(fileURLWithPath: bundledFont))
        var wav = Data("RIFF".utf8); wav.append(contentsOf: [36, 0, 0, 0]); wav.append(Data("WAVEfmt ".utf8))
        wav.append(Data(count: 64))
        var corrupt = good
        // the first LIST chunk's size: claim far more than the file holds
        corrupt.replaceSubrange(16..<20, with: [0xFF, 0xFF, 0xFF, 0x7F])
        let cases: [(String, Data?)] = [
            ("empty.sf2", Data()),
            ("truncated.sf2", good.prefix(good.count / 3)),
            ("corrupt-size.sf2", corrupt),
            ("renamed-wav.sf2", wav),
            ("missing.sf2", nil),
        ]
        for (name, data) in cases {
            let path = dir.appendingPathComponent(name).path
            if let data { try data.write(to: URL(fileURLWithPath: path)) }
            do {
                _ = try SoundFontUnit(fonts: [path], sampleRate: 48000)
                Issue.record("\(name) was accepted")
            } catch {
                #expect(error.description.contains(path), "\(error.description)")
                #expect(!error.description.contains("\n"))
            }
        }
    }
}

/// Carries non-Sendable test objects into the probe's thread; the test waits for it.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

@Suite("Channel partition")
struct ChannelPartitionTests {
    @Test func busyChannelsAreSpreadAndSilentOnesGoToTheFirstGroup() throws {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 96)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        // channel 9: 40 notes, channel 0: 30, channel 1: 20, channel 2: 10
        for (ch, n) in [(9, 40), (0, 30), (1, 20), (2, 10)] {
            for i in 0..<n {
                events.append((Int64(i * 10), .message(.noteOn(channel: UInt8(ch), key: 60, velocity: 100))))
                events.append((Int64(i * 10 + 5), .message(.noteOff(channel: UInt8(ch), key: 60, velocity: 0))))
            }
        }
        w.addTrack(events)
        let schedule = try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 48000)
        let groups = ChannelPartition.balance(schedule, channels: 16, parts: 2)
        // 40 -> A, 30 -> B, 20 -> B (30 < 40), 10 -> A (40 < 50): loads 50 / 50
        #expect(groups[0].filter { [0, 1, 2, 9].contains($0) } == [2, 9])
        #expect(groups[1] == [0, 1])
        #expect(Set(groups[0] + groups[1]) == Set(0..<16))
        #expect(ChannelPartition.balance(schedule, channels: 16, parts: 2) == groups)
        // one playing channel: one group holding every channel
        var solo = MIDIFileWriter(format: 0, ticksPerQuarter: 96)
        solo.addTrack([(0, .message(.noteOn(channel: 4, key: 60, velocity: 1)))])
        let one = ChannelPartition.balance(try MIDIFile(bytes: solo.bytes()).schedule(sampleRate: 48000), channels: 16, parts: 2)
        #expect(one == [Array(0..<16)])
    }

    /// The load is the time voices sound, not the number of notes: four
    /// chords of 4 s outweigh 100 drum hits of 10 ms, and a note the sustain
    /// pedal holds counts until the pedal lets go.
    @Test func loadFollowsHowLongVoicesSound() throws {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)   // 120 bpm: 960 ticks a second
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for i in 0..<100 {   // channel 9: 100 hits of 10 ms
            events.append((Int64(i * 48), .message(.noteOn(channel: 9, key: 38, velocity: 100))))
            events.append((Int64(i * 48 + 10), .message(.noteOff(channel: 9, key: 38, velocity: 0))))
        }
        for i in 0..<4 {     // channel 0: four 3-note chords of 4 s
            for key: UInt8 in [60, 64, 67] {
                events.append((Int64(i * 3840), .message(.noteOn(channel: 0, key: key, velocity: 80))))
                events.append((Int64(i * 3840 + 3840), .message(.noteOff(channel: 0, key: key, velocity: 0))))
            }
        }
        // channel 1: a 0.1 s note the pedal holds for 5 s; channel 2: the same without the pedal
        events.append((0, .message(.controlChange(channel: 1, controller: 64, value: 127))))
        events.append((0, .message(.noteOn(channel: 1, key: 60, velocity: 80))))
        events.append((96, .message(.noteOff(channel: 1, key: 60, velocity: 0))))
        events.append((4800, .message(.controlChange(channel: 1, controller: 64, value: 0))))
        events.append((0, .message(.noteOn(channel: 2, key: 60, velocity: 80))))
        events.append((96, .message(.noteOff(channel: 2, key: 60, velocity: 0))))
        w.addTrack(events.sorted { $0.tick < $1.tick })
        let schedule = try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 48000)
        let load = ChannelPartition.estimatedLoad(schedule, channels: 16)
        let second = 48000.0
        // 12 notes x (4 s + 0.3 s release); 100 x (0.0104 s + 0.3 s); 5 s + 0.3 s; 0.1 s + 0.3 s
        #expect(abs(Double(load[0]) / second - 12 * 4.3) < 0.01)
        #expect(abs(Double(load[9]) / second - 100 * (10.0 / 960 + 0.3)) < 0.05)
        #expect(abs(Double(load[1]) / second - 5.3) < 0.01)
        #expect(abs(Double(load[2]) / second - 0.4) < 0.01)
        #expect(load[0] > load[9])
        // the chords (51.6 s) in one group, the rest (31 + 5.3 + 0.4 s) in
        // the other; the silent channels join group 0
        let groups = ChannelPartition.balance(schedule, channels: 16, parts: 2)
        #expect(groups == [[0] + Array(3...8) + Array(10...15), [1, 2, 9]])
    }
}

@Suite("--channel")
struct ChannelAssignmentTests {
    @Test func parsesEachForm() throws {
        #expect(try ChannelAssignment(parsing: "1=synth") == ChannelAssignment(channels: [0], instrument: .synth(preset: nil)))
        #expect(try ChannelAssignment(parsing: "10=synth:bell") == ChannelAssignment(channels: [9], instrument: .synth(preset: "bell")))
        #expect(try ChannelAssignment(parsing: "16=soundfont") == ChannelAssignment(channels: [15], instrument: .soundFont))
        #expect(try ChannelAssignment(parsing: "2.3=synth:saw", ports: 2) == ChannelAssignment(channels: [18], instrument: .synth(preset: "saw")))
        #expect(try ChannelAssignment(parsing: "all=synth:sine", ports: 1).channels == Array(0..<16))
    }

    @Test(arguments: ["0=synth", "17=synth", "3=piano", "3", "2.1=synth", "x=synth", "1=soundfont:3"])
    func rejectsWithAOneLineReason(text: String) {
        do {
            _ = try ChannelAssignment(parsing: text, ports: 1)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.hasPrefix("--channel \(text):"))
            #expect(!error.description.contains("\n"))
        }
    }
}
