import CJACK
import Foundation
import Glibc
import Synchronization
import Testing
import SpinetEngine
import SpinetSoundFont
@testable import SpinetJACK

let jackTestsFont = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("SoundFonts/sf_GMbank.sf2").path

/// A SoundFont-only graph: the bundled font on every channel, FluidSynth's
/// own reverb and chorus off (Spinet's sends, set to 0 by the notes' CCs).
func soundFontGraph() -> JACKClient.GraphBuilder {
    { rate in
        var options = SoundFontOptions()
        options.fluidEffects = false
        let unit = try SoundFontUnit(fonts: [jackTestsFont], sampleRate: Double(rate), options: options)
        let engine = Engine(configuration: Engine.Configuration())
        engine.routeAll(to: engine.add(unit))
        return engine
    }
}

/// Where the engine's frames meet JACK's: each cycle, the JACK frame of the
/// cycle's start minus the engine frame it renders first (process thread:
/// atomics only; `jack_last_frame_time` is real-time safe).
final class EngineFrameHooks: JACKCycleHooks, @unchecked Sendable {
    let client: OpaquePointer
    /// JACK frame minus engine frame (Int64.min: no cycle yet).
    let offset = Atomic<Int64>(.min)
    /// Times the offset changed (a cycle not rendered, a new graph).
    let changes = Atomic<Int>(0)

    init(client: OpaquePointer) { self.client = client }

    override func cycleStarts(engineFrame: Int64, frames: Int, nanoseconds: Int64) {
        let now = Int64(jack_last_frame_time(client)) - engineFrame
        let before = offset.exchange(now, ordering: .relaxed)
        if before != .min && before != now { changes.add(1, ordering: .relaxed) }
    }
}

extension JACKTests {
@Suite("JACK client: SoundFont channels")
struct JACKSoundFontTests {
    /// Issue 16, test 1, second half. Claves notes (channel 10, no reverb
    /// or chorus send) sent at offsets 0, 1, 37, 63, 64, 100 and 127 of
    /// their cycles sound on FluidSynth's 64-frame grid, as offline: each
    /// note's onset is `SoundFontUnit.deliveryFrame` of its engine frame (the
    /// nearest multiple of 64, ties late) plus one constant (the limiter's
    /// look-ahead and the sample's attack), to the frame. The delays from
    /// each note's own frame are not all equal: the grid is what makes the
    /// onsets agree.
    @Test(arguments: [128, 64])
    func soundFontNotesLandOnTheGrid(period: Int) throws {
        let server = JACKTestServer()
        try server.start(period: period)
        let spinet = try JACKClient(spinetConfiguration(server), graph: soundFontGraph())
        let hooks = EngineFrameHooks(client: try #require(spinet.client))
        spinet.hooks = hooks
        try spinet.start()
        defer { spinet.stop() }
        let grid = try #require(spinet.engine?.units.first as? SoundFontUnit)

        let sender = try JACKTestClient(name: "sf-sender", server: server.name, midiOut: true)
        let recorder = try JACKTestClient(name: "sf-recorder", server: server.name, audioIn: 1)
        try sender.connect(sender.port("midi_out"), "Spinet:midi_in")
        try recorder.connect("Spinet:out_L", recorder.port("in_1"))
        usleep(100_000)

        // A quarter second between notes (the claves has died away long
        // before); the first note warms FluidSynth up (its very first voice
        // starts a few frames late, as offline) and is not measured.
        let offsets = [0, 0, 1, 37, 63, 64, 100, 127].filter { $0 < period }
        let spacing = 12_000 / period
        var notes: [JACKTestClient.Note] = [
            .init(cycle: 2, offset: 0, bytes: [0xB9, 91, 0]),
            .init(cycle: 2, offset: 0, bytes: [0xB9, 93, 0]),
        ]
        for (i, offset) in offsets.enumerated() {
            notes.append(.init(cycle: spacing * (i + 1), offset: offset, bytes: [0x99, 75, 120]))
            notes.append(.init(cycle: spacing * (i + 1) + 1, offset: 0, bytes: [0x89, 75, 0]))
        }
        recorder.arm(recordFrames: (spacing * (offsets.count + 1) + 16) * period)
        sender.arm(notes: notes)
        #expect(waitFor(20) { sender.allSent && recorder.recordingFull }, "notes not sent or recording not full")
        let (samples, start) = recorder.recording
        let toEngine = hooks.offset.load(ordering: .relaxed)
        #expect(hooks.changes.load(ordering: .relaxed) == 0, "a cycle was not rendered: JACK and engine frames drifted apart")

        // Per note: its JACK frame, its engine frame, the engine's grid
        // point for it, and the onset (first sample above 0.01 after 30 ms
        // of near silence, as the offline test finds them).
        let sent = sender.sentFrames.enumerated().filter { notes[$0.offset].bytes[0] == 0x99 }.map(\.element)
        var sinceGrid: [Int] = []
        var sinceFrame: [Int] = []
        for (i, frame) in sent.enumerated() {
            let jackFrame = try #require(frame, "note \(i) not sent")
            let engineFrame = Int64(jackFrame) - toEngine
            let gridPoint = grid.deliveryFrame(forEventAt: engineFrame)
            #expect(gridPoint % 64 == 0 && abs(gridPoint - engineFrame) <= 32)
            let from = jackFrame - start - 64
            try #require(from > 1440 && from < samples.count)
            #expect(samples[(from - 1440)..<from].allSatisfy { abs($0) < 0.001 }, "note \(i): not silent before")
            let onset = try #require(samples[from...].firstIndex { abs($0) > 0.01 }, "note \(i): no onset") + start
            sinceGrid.append(onset - Int(gridPoint + toEngine))
            sinceFrame.append(onset - jackFrame)
        }
        print("JACK SoundFont onsets at \(period) frames, offsets \(offsets): frames after the grid point \(sinceGrid), after the note's own frame \(sinceFrame) (latency \(spinet.latencyFrames); JACK frame - engine frame = \(toEngine))")
        let measured = Array(sinceGrid.dropFirst())
        let latency = try #require(measured.first)
        #expect(measured == measured.map { _ in latency }, "onsets off the 64-frame grid")
        #expect(latency >= spinet.latencyFrames && latency < spinet.latencyFrames + 64, "the claves' attack is a few frames")
        #expect(Set(sinceFrame.dropFirst()).count > 1, "the offsets should put notes off the grid")
        #expect(spinet.engine?.statistics.lateEvents == 0)
    }
}
}
