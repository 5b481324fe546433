import Glibc
import SpinetEngine
import SpinetHost
import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetSynth
import SpinetTestSupport
import Synchronization
import Testing

private let bundledFont = SpinetCommand.repositoryRoot.appendingPathComponent("SoundFonts/sf_GMbank.sf2").path

@Suite("GraphBuilder")
struct GraphBuilderTests {
    @Test func liveGraphIsTheSwappableFontAndTheSynth() throws {
        var settings = GraphSettings()
        settings.engine.ports = 2
        settings.channelAssignments = ["16=synth", "2.1=synth:bell"]
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, channels: 32, options: settings.soundFont)
        let graph = try GraphBuilder.live(settings, soundFont: unit, inputCapacities: [8192, 1024])
        let engine = graph.engine
        #expect(engine.units.count == 2)
        #expect(engine.units[0] is SwappableInstrument)
        #expect(engine.units[1] === graph.synth)
        #expect(graph.soundFontSlot === engine.units[0] as? SwappableInstrument)
        #expect(graph.synthChannels == [15, 16])
        #expect(engine.unitIndex(forChannel: 0) == 0)
        #expect(engine.unitIndex(forChannel: 15) == 1)
        #expect(engine.unitIndex(forChannel: 16) == 1)
        #expect(graph.inputs.count == 2)
        #expect(graph.settings.engine.ports == 2)
    }

    @Test func aBadChannelIsOneLineNamingTheOption() throws {
        var settings = GraphSettings()
        settings.channelAssignments = ["3=synth:nosuchpreset"]
        #expect {
            _ = try GraphBuilder.synth(settings, ports: 1)
        } throws: { error in
            "\(error)".hasPrefix("--channel 3=synth:nosuchpreset: ")
        }
        settings.channelAssignments = ["1=synth", "17=synth"]
        settings.configChannelCount = 1
        settings.configLabel = "config x.json: \"channels\":"
        #expect(throws: RigError.self) { _ = try GraphBuilder.synth(settings, ports: 1) }
    }

    @Test func offlineGraphLeavesTheSynthOutWhenNothingPlaysIt() throws {
        var writer = MIDIFileWriter(ticksPerQuarter: 480)
        writer.addTrack([(0, .message(.noteOn(channel: 0, key: 60, velocity: 100))),
                         (480, .message(.noteOff(channel: 0, key: 60, velocity: 0)))])
        let notes = try MIDIFile(bytes: writer.bytes()).schedule(sampleRate: 48000)
        let graph = try GraphBuilder.offline(GraphSettings(), fonts: [bundledFont], schedule: notes, sampleRate: 48000, partitions: 2)
        #expect(!graph.synthInEngine)
        #expect(graph.soundFonts.count == graph.engine.units.count)
        var settings = GraphSettings()
        settings.channelAssignments = ["1=synth"]
        let withSynth = try GraphBuilder.offline(settings, fonts: [bundledFont], schedule: notes, sampleRate: 48000, partitions: 2)
        #expect(withSynth.synthInEngine)
        #expect(withSynth.engine.unitIndex(forChannel: 0) == withSynth.engine.units.count - 1)
    }

    /// Stems: each heard channel that plays notes gets a stem: a SoundFont
    /// channel its own output of the players a render without stems has (no
    /// player of its own), a synth channel its own synth; muted and
    /// note-less channels get no stem.
    @Test func theStemsGraphTakesEachHeardChannelFromThePlainGraphsPlayers() throws {
        var writer = MIDIFileWriter(ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for ch: UInt8 in [0, 1, 3, 9] {
            events.append((0, .message(.noteOn(channel: ch, key: 60, velocity: 100))))
            events.append((480, .message(.noteOff(channel: ch, key: 60, velocity: 0))))
        }
        events.append((0, .message(.controlChange(channel: 5, controller: 7, value: 100))))   // no notes
        writer.addTrack(events)
        let notes = try MIDIFile(bytes: writer.bytes()).schedule(sampleRate: 48000)
        var settings = GraphSettings()
        settings.channelAssignments = ["2=synth"]
        settings.engine.mutedChannels = [3]
        settings.soundFont.fluidEffects = false
        let plain = try GraphBuilder.offline(settings, fonts: [bundledFont], schedule: notes, sampleRate: 48000, partitions: 2)
        settings.stems = true
        let graph = try GraphBuilder.offline(settings, fonts: [bundledFont], schedule: notes, sampleRate: 48000, partitions: 2)
        #expect(graph.stemChannels == [0, 1, 9])
        #expect(graph.engine.stemCount == 3)
        // the same players as without stems
        #expect(graph.soundFonts.count == plain.soundFonts.count)
        #expect(graph.engine.units.filter { $0 is SoundFontUnit }.count == plain.soundFonts.count)
        let stems = graph.engine.stemParts
        #expect(Set(stems.flatMap { $0 }).count == stems.flatMap { $0 }.count)
        // a channel split between the players (key turns) has a part in each
        for (channel, parts) in zip(graph.stemChannels, stems) where channel != 1 {
            #expect(parts.first?.unit == graph.engine.unitIndex(forChannel: channel))
            for part in parts {
                let unit = try #require(graph.engine.units[part.unit] as? SoundFontUnit)
                #expect(part.part == unit.part(forChannel: channel) && part.part != nil)
            }
        }
        #expect(stems[1].count == 1 && stems[1][0].part == nil)
        #expect(graph.engine.units[stems[1][0].unit] is OscillatorSynth)
    }

    /// A stem runs only the send effects its channel sends to: the reverb
    /// by default (General MIDI's 40), the chorus and delay once asked.
    @Test func aStemRunsOnlyTheEffectsItsChannelSendsTo() throws {
        var writer = MIDIFileWriter(ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        func cc(_ t: Int64, _ ch: UInt8, _ n: UInt8, _ v: UInt8) { events.append((t, .message(.controlChange(channel: ch, controller: n, value: v)))) }
        for ch: UInt8 in [0, 1, 2, 3, 4] {
            events.append((10, .message(.noteOn(channel: ch, key: 60, velocity: 100))))
            events.append((480, .message(.noteOff(channel: ch, key: 60, velocity: 0))))
        }
        cc(0, 1, 91, 0)                     // channel 2: no reverb, nothing else
        cc(0, 0, 91, 0); cc(0, 0, 91, 64)   // channel 1: the reverb
        cc(0, 2, 91, 0); cc(0, 2, 93, 40)   // channel 3: chorus only
        cc(0, 3, 91, 0); cc(960, 3, 94, 1)  // channel 4: the delay, after its note
        cc(0, 4, 93, 90); cc(5, 4, 93, 0)   // channel 5: a chorus send ending just before the note
        writer.addTrack(events)
        let notes = try MIDIFile(bytes: writer.bytes()).schedule(sampleRate: 48000)
        #expect(GraphBuilder.effectsSent(notes, channel: 0) == [.reverb])
        #expect(GraphBuilder.effectsSent(notes, channel: 1) == [])
        #expect(GraphBuilder.effectsSent(notes, channel: 2) == [.chorus])
        #expect(GraphBuilder.effectsSent(notes, channel: 3) == [.delay])
        // the send was still ramping down at the note (frame ~1000)
        #expect(GraphBuilder.effectsSent(notes, channel: 4) == [.reverb, .chorus])
        var settings = GraphSettings()
        settings.stems = true
        settings.soundFont.fluidEffects = false
        settings.engine.reverb = .hall
        settings.engine.chorus = .wide
        settings.engine.delay = .eighth
        let graph = try GraphBuilder.offline(settings, fonts: [bundledFont], schedule: notes, sampleRate: 48000, partitions: 1)
        graph.engine.prepare(sampleRate: 48000, maxFrames: 256)
        #expect(graph.engine.stemEffects(1) == [])
        #expect(graph.engine.stemEffects(2) == [.chorus])
        #expect(graph.engine.stemEffects(0) == [.reverb])
    }

    /// Stems from the players' per-channel outputs: the render path still
    /// allocates nothing and takes no lock.
    @Test(.realtimeProbe, .enabled(if: RealtimeProbe.isActive, "the allocation probe is not active in this process"))
    func renderingStemsFromThePlayersPartsIsRealtimeSafe() throws {
        var writer = MIDIFileWriter(ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        for ch: UInt8 in [0, 1, 9] {
            events.append((0, .message(.controlChange(channel: ch, controller: 93, value: 50))))
            events.append((0, .message(.noteOn(channel: ch, key: 60, velocity: 100))))
            events.append((480, .message(.noteOff(channel: ch, key: 60, velocity: 0))))
        }
        writer.addTrack(events)
        let notes = try MIDIFile(bytes: writer.bytes()).schedule(sampleRate: 48000)
        var settings = GraphSettings()
        settings.stems = true
        settings.soundFont.fluidEffects = false
        settings.engine.reverb = .hall
        settings.engine.chorus = .wide
        let graph = try GraphBuilder.offline(settings, fonts: [bundledFont], schedule: notes, sampleRate: 48000, partitions: 2)
        let engine = graph.engine
        #expect(engine.stemParts.allSatisfy { $0.allSatisfy { $0.part != nil } })
        let n = 256
        engine.prepare(sampleRate: 48000, maxFrames: n)
        let count = engine.stemCount
        let buffers = UnsafeMutablePointer<Float>.allocate(capacity: (2 + 2 * count) * n)
        buffers.initialize(repeating: 0, count: (2 + 2 * count) * n)
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: 2 * count)
        for i in 0..<(2 * count) { (pointers + i).initialize(to: buffers + (2 + i) * n) }
        defer { buffers.deallocate(); pointers.deallocate() }
        var frame: Int64 = 0
        func pushNotes() {
            for ch: UInt8 in [0, 1, 9] {
                graph.inputs[0].push(EngineEvent(frame: frame + 7, .noteOn(channel: ch, key: UInt8(50 + frame / Int64(n) % 20), velocity: 100)))
            }
        }
        let stems = UnsafePointer(pointers)
        for _ in 0..<8 {
            pushNotes()
            engine.render(frames: n, left: buffers, right: buffers + n, stems: stems)
            frame += Int64(n)
        }
        var allocations = 0, locks = 0
        for _ in 0..<40 {
            pushNotes()
            let counts = RealtimeProbe.count { engine.render(frames: n, left: buffers, right: buffers + n, stems: stems) }
            frame += Int64(n)
            allocations += counts.allocations
            locks += counts.locks
        }
        #expect(allocations == 0)
        #expect(locks == 0)
        #expect((0..<count).allSatisfy { s in (0..<n).contains { pointers[2 * s][$0] != 0 } })
    }

    @Test func theStemsGraphRefusesBankSelectMovesToTheSynth() throws {
        var writer = MIDIFileWriter(ticksPerQuarter: 480)
        writer.addTrack([(0, .message(.controlChange(channel: 0, controller: 0, value: 126))),
                         (0, .message(.programChange(channel: 0, program: 1))),
                         (0, .message(.noteOn(channel: 0, key: 60, velocity: 100))),
                         (480, .message(.noteOff(channel: 0, key: 60, velocity: 0)))])
        let notes = try MIDIFile(bytes: writer.bytes()).schedule(sampleRate: 48000)
        var settings = GraphSettings()
        settings.stems = true
        #expect(throws: RigError.self) {
            _ = try GraphBuilder.offline(settings, fonts: [bundledFont], schedule: notes, sampleRate: 48000, partitions: 2)
        }
    }
}

/// A MIDI input that plays one note as soon as it is started.
private final class FakeInput: MIDIInput, @unchecked Sendable {
    let started = Atomic<Bool>(false)
    let stopped = Atomic<Bool>(false)

    func start(queue: EventQueue, timeline: AudioTimeline, timing: LiveTiming, priority: Int32,
               tempo: @escaping @Sendable (Double) -> Void) throws -> String {
        let anchor = try #require(timeline.read(), "started only once the device published an anchor")
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let now = Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        queue.push(EngineEvent(frame: timing.frame(forArrival: now, anchor: anchor), .noteOn(channel: 0, key: 60, velocity: 100)))
        started.store(true, ordering: .relaxed)
        return "fake input"
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
    func takeNotices() -> [String] { [] }
    var inputStatistics: MIDIInputStatistics {
        var s = MIDIInputStatistics()
        s.received = started.load(ordering: .relaxed) ? 1 : 0
        return s
    }
}

@Suite("LiveSession")
struct LiveSessionTests {
    /// The session needs nothing of ALSA: any device and input that keep the
    /// protocols' promises play (what a JACK client will be).
    @Test func playsOverAnyDeviceAndInput() throws {
        var settings = GraphSettings()
        settings.engine.reverb = .room
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, options: settings.soundFont)
        let graph = try GraphBuilder.live(settings, soundFont: unit, inputCapacities: [8192, 1024])
        let device = FakeDevice()
        let input = FakeInput()
        let (session, lines) = fakeSession(graph, device: device, input: input, font: bundledFont, seconds: 0.5)
        let status = try session.run()
        #expect(status == 0)
        let started = input.started.load(ordering: .relaxed)
        #expect(started)
        let stopped = input.stopped.load(ordering: .relaxed)
        #expect(stopped)
        let deviceStopped = device.stopped.load(ordering: .relaxed)
        #expect(deviceStopped)
        let blocks = device.blocks.load(ordering: .relaxed)
        #expect(blocks > 10)
        #expect(graph.engine.statistics.peakVoices > 0, "the note played")
        let said = lines.all
        #expect(said.first == "MIDI: fake input")
        #expect(said.contains("Audio: fake, 48000 Hz"))
        #expect(said.last?.hasPrefix("Played ") == true, "\(said)")
        #expect(said.last?.contains("1 MIDI events") == true, "\(said)")
    }
}
