import CJACK
import CRealtimeProbe
import Foundation
import Glibc
import Synchronization
import Testing
import SpinetEngine
import SpinetJACK
import SpinetTestSupport
import SpinetTestTraits

/// What the probe counted on JACK's process thread: Spinet's JACK code
/// (reading ports and MIDI, handing events over) apart from the engine's render.
let probeCounting = Atomic<Bool>(false)
let ownAllocations = Atomic<Int>(0), ownFrees = Atomic<Int>(0), ownLocks = Atomic<Int>(0)
let engineAllocations = Atomic<Int>(0), engineFrees = Atomic<Int>(0), engineLocks = Atomic<Int>(0)
let countedCycles = Atomic<Int>(0)

private func add(own: Bool) {
    let a = Int(spinet_probe_allocations()), f = Int(spinet_probe_frees()), l = Int(spinet_probe_locks())
    if own {
        ownAllocations.add(a, ordering: .relaxed); ownFrees.add(f, ordering: .relaxed); ownLocks.add(l, ordering: .relaxed)
    } else {
        engineAllocations.add(a, ordering: .relaxed); engineFrees.add(f, ordering: .relaxed); engineLocks.add(l, ordering: .relaxed)
    }
}

/// The cycle observer: counts the JACK layer and the engine separately.
nonisolated func makeProbeObserver() -> @convention(c) (Int32) -> Void {
    { phase in
        guard probeCounting.load(ordering: .relaxed) else { return }
        switch JACKClient.CyclePhase(rawValue: phase) {
        case .begin?: spinet_probe_begin()
        case .engineBegin?: spinet_probe_end(); add(own: true); spinet_probe_begin()
        case .engineEnd?: spinet_probe_end(); add(own: false); spinet_probe_begin()
        case .end?: spinet_probe_end(); add(own: true); countedCycles.add(1, ordering: .relaxed)
        case nil: break
        }
    }
}

/// A busy stretch of MIDI: notes, controllers, bends, pressure, a program
/// change, SysEx (GM master volume) and MIDI clock, spread over cycles.
func busyTraffic(cycles: Int) -> [JACKTestClient.Note] {
    var notes: [JACKTestClient.Note] = []
    for c in 0..<cycles {
        let ch = UInt8(c % 16)
        notes.append(.init(cycle: c, offset: (c * 37) % 128, bytes: [0x90 | ch, UInt8(36 + c % 48), 90]))
        notes.append(.init(cycle: c, offset: (c * 11) % 128, bytes: [0xB0 | ch, 1, UInt8(c % 128)]))
        notes.append(.init(cycle: c, offset: (c * 5) % 128, bytes: [0xE0 | ch, 0, UInt8(c % 128)]))
        notes.append(.init(cycle: c, offset: 3, bytes: [0xF8]))
        if c % 4 == 3 { notes.append(.init(cycle: c, offset: 90, bytes: [0x80 | ch, UInt8(36 + (c - 3) % 48), 0])) }
        if c % 16 == 5 { notes.append(.init(cycle: c, offset: 10, bytes: [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x70, 0xF7])) }
        if c % 32 == 7 { notes.append(.init(cycle: c, offset: 20, bytes: [0xC0 | ch, UInt8(c % 8)])) }
        if c % 8 == 1 { notes.append(.init(cycle: c, offset: 40, bytes: [0xD0 | ch, 64])) }
    }
    return notes
}

extension JACKTests {
@Suite("JACK process thread: real-time safe, and its load")
struct JACKRealtimeTests {
    /// Spinet's JACK code on the process thread — reading the ports, the
    /// MIDI events, handing them to the engine — allocates nothing, frees
    /// nothing and takes no lock, counted cycle by cycle under a busy stream
    /// of MIDI. The engine's render is counted apart: in a debug build its
    /// event loop allocates (see EngineIntegrationTests); optimized, it is 0 too.
    @Test(.realtimeProbe) func theProcessCallbackAllocatesNothingAndTakesNoLock() throws {
        try #require(RealtimeProbe.isActive, "the allocation/lock probe is not active: this test cannot prove anything")
        let server = JACKTestServer()
        try server.start()
        let spinet = try JACKClient(spinetConfiguration(server), graph: sawGraph())
        spinet.cycleObserver = makeProbeObserver()
        spinet.hooks = RecordingHooks()          // counted too: the timeline read and the rendered buffers
        try spinet.start()
        defer { spinet.stop() }
        let sender = try JACKTestClient(name: "busy", server: server.name, midiOut: true)
        try sender.connect(sender.port("midi_out"), "Spinet:midi_in")
        usleep(50_000)
        let traffic = busyTraffic(cycles: 200)
        sender.arm(notes: traffic)                 // warm-up: first uses of each path
        #expect(waitFor(20) { sender.allSent })
        usleep(50_000)
        probeCounting.store(true, ordering: .relaxed)
        sender.arm(notes: traffic)
        #expect(waitFor(20) { sender.allSent })
        usleep(50_000)
        probeCounting.store(false, ordering: .relaxed)
        usleep(20_000)
        let cycles = countedCycles.load(ordering: .relaxed)
        print("JACK process thread over \(cycles) cycles (\(traffic.count) events): JACK layer \(ownAllocations.load(ordering: .relaxed)) allocations, "
              + "\(ownFrees.load(ordering: .relaxed)) frees, \(ownLocks.load(ordering: .relaxed)) locks; engine render "
              + "\(engineAllocations.load(ordering: .relaxed)) allocations, \(engineFrees.load(ordering: .relaxed)) frees, \(engineLocks.load(ordering: .relaxed)) locks")
        #expect(cycles >= 200)
        #expect(ownAllocations.load(ordering: .relaxed) == 0)
        #expect(ownFrees.load(ordering: .relaxed) == 0)
        #expect(ownLocks.load(ordering: .relaxed) == 0)
        #expect(engineLocks.load(ordering: .relaxed) == 0)
        #if !DEBUG
        #expect(engineAllocations.load(ordering: .relaxed) == 0 && engineFrees.load(ordering: .relaxed) == 0)
        #endif
        #expect(spinet.engine?.statistics.droppedEvents == 0)
    }

    /// Not a timed test: the process callback's time per cycle with 256
    /// voices sounding (the oscillator synth), at 64 and 128 frames, printed
    /// as p50 / p99 / max of the period.
    @Test(arguments: [64, 128])
    func processLoadWith256Voices(period: Int) throws {
        let (server, spinet) = try runningSpinet(period: period, graph: sawGraph(polyphony: 256))
        defer { spinet.stop() }
        let sender = try JACKTestClient(name: "chords", server: server.name, midiOut: true)
        try sender.connect(sender.port("midi_out"), "Spinet:midi_in")
        usleep(50_000)
        var notes: [JACKTestClient.Note] = []
        for i in 0..<256 { notes.append(.init(cycle: i / 32, offset: i % 32, bytes: [0x90 | UInt8(i % 16), UInt8(24 + i / 16 * 4 + i % 4), 80])) }
        sender.arm(notes: notes)
        #expect(waitFor(10) { sender.allSent })
        usleep(100_000)
        let voices = spinet.engine?.statistics.activeVoices ?? 0
        let count = 48000 / period           // one second
        spinet.measureCycles(count)
        #expect(waitFor(30) { spinet.measuredCycles != nil })
        let times = (spinet.measuredCycles ?? []).sorted()
        guard !times.isEmpty else { return }
        let periodNs = Double(period) * 1e9 / 48000
        func pct(_ q: Double) -> Double { Double(times[min(times.count - 1, Int(Double(times.count) * q))]) / periodNs * 100 }
        #if DEBUG
        let build = "debug build"
        #else
        let build = "release build"
        #endif
        print(String(format: "JACK process load at %d frames, %d voices (%@): p50 %.1f%%, p99 %.1f%%, max %.1f%% of the period; %d xruns",
                     period, voices, build, pct(0.5), pct(0.99), Double(times.last!) / periodNs * 100, spinet.xruns))
        #expect(voices == 256)
    }
}
}
