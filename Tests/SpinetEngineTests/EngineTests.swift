import Foundation
import Testing
@testable import SpinetEngine
import SpinetMIDI
import SpinetTestSupport

@Suite("Engine: sample-exact event delivery")
struct EngineTimingTests {
    /// Every note-on's impulse appears at exactly its event frame plus the
    /// engine's fixed latency, whatever the block sizes (0, odd, larger than
    /// maxFrames) the driver uses.
    @Test(arguments: [[256], [1, 7, 0, 300, 64, 1000, 13], [4096], [0, 3]])
    func onsetsLandOnTheExactFrame(blockSizes: [Int]) {
        let unit = ImpulseUnit()
        let (engine, queue) = EngineHarness.make(unit, maxFrames: 512)
        var rng = SplitMix64(seed: 42)
        var frames: [Int64] = []
        var f: Int64 = 5
        for _ in 0..<200 {
            f += Int64(rng.next() % 200) + 1
            frames.append(f)
        }
        for (i, frame) in frames.enumerated() {
            #expect(queue.push(EngineEvent(frame: frame, .noteOn(channel: UInt8(i % 16), key: 60, velocity: 100))))
        }
        let total = Int(frames.last! + 1000)
        let out = renderEngine(engine, frames: total, blockSizes: blockSizes)
        let latency = engine.latencyFrames
        let found = out.left.indices.filter { out.left[$0] != 0 }
        #expect(found == frames.map { Int($0) + latency })
        #expect(engine.statistics.lateEvents == 0)
        #expect(engine.frameTime == Int64(total))
    }

    @Test func eventsInThePastAreAppliedAtOnceAndCountedLate() {
        let unit = ImpulseUnit()
        let (engine, queue) = EngineHarness.make(unit)
        _ = renderEngine(engine, frames: 1000, blockSizes: [256])
        queue.push(EngineEvent(frame: 10, .noteOn(channel: 0, key: 60, velocity: 127)))
        let out = renderEngine(engine, frames: 256, blockSizes: [256])
        let latency = engine.latencyFrames
        #expect(out.left.firstIndex { $0 != 0 } == latency)
        #expect(engine.statistics.lateEvents == 1)
    }

    @Test func simultaneousEventsKeepTheirQueueOrder() {
        let unit = ImpulseUnit()
        let (engine, queue) = EngineHarness.make(unit, sampleRate: 44100, maxFrames: 128)
        let sent: [MIDIMessage] = [.noteOff(channel: 0, key: 60, velocity: 0), .programChange(channel: 0, program: 5),
                                   .noteOn(channel: 0, key: 62, velocity: 90), .controlChange(channel: 0, controller: 7, value: 3)]
        for m in sent { queue.push(EngineEvent(frame: 100, m)) }
        _ = renderEngine(engine, frames: 300, blockSizes: [128])
        #expect(unit.messages == sent)
    }

    @Test func channelsReachOnlyTheUnitTheyAreRoutedTo() {
        var config = Engine.Configuration()
        config.ports = 2
        let a = ImpulseUnit(), b = ImpulseUnit()
        let (engine, queue) = EngineHarness.make([a, b], configuration: config) { engine, units in
            engine.routeAll(to: units[0])
            engine.route(channel: 3, to: units[1])
            engine.route(channel: 20, to: units[1])      // port 2, channel 5
            engine.route(channel: 21, to: nil)
        }
        for ch in [0, 3, 20, 21, 31] {
            queue.push(EngineEvent(frame: 10, .noteOn(channel: UInt8(ch), key: 60, velocity: 1)))
        }
        queue.push(EngineEvent(frame: 11, .systemReset))
        _ = renderEngine(engine, frames: 256, blockSizes: [256])
        #expect(a.messages.compactMap(\.channel) == [0, 31])
        #expect(b.messages.compactMap(\.channel) == [3, 20])
        #expect(a.messages.last == .systemReset && b.messages.last == .systemReset)
    }

    @Test func aFloodLargerThanASliceIsDeliveredCompletelyAndInOrder() {
        var config = Engine.Configuration()
        config.maxEventsPerSlice = 64
        let unit = ImpulseUnit(capacity: 20000)
        let (engine, queue) = EngineHarness.make(unit, configuration: config, maxFrames: 1024, queueCapacity: 32768)
        for i in 0..<10000 {
            queue.push(EngineEvent(frame: Int64(i / 100), .controlChange(channel: 0, controller: 1, value: UInt8(i % 128))))
        }
        _ = renderEngine(engine, frames: 2048, blockSizes: [1024])
        #expect(unit.receivedCount == 10000)
        let values = unit.messages.map { m -> Int in
            if case .controlChange(_, _, let v) = m { return Int(v) } else { return -1 }
        }
        #expect(values == (0..<10000).map { $0 % 128 })
        #expect(engine.statistics.droppedEvents == 0)
    }

    @Test func aFullQueueRefusesAndCountsDrops() {
        let (engine, queue) = EngineHarness.make(ImpulseUnit(), maxFrames: 64, queueCapacity: 16)
        var accepted = 0
        for i in 0..<40 where queue.push(EngineEvent(frame: Int64(i), .noteOn(channel: 0, key: 1, velocity: 1))) {
            accepted += 1
        }
        // the last slot is the release reserve (capacity / 16): a note-off still fits
        #expect(queue.releaseReserve == 1)
        #expect(accepted == 15)
        #expect(engine.statistics.droppedEvents == 25)
        #expect(queue.push(EngineEvent(frame: 40, .noteOff(channel: 0, key: 1, velocity: 0))))
        #expect(!queue.push(EngineEvent(frame: 41, .noteOff(channel: 0, key: 1, velocity: 0))))
        #expect(engine.statistics.droppedEvents == 26)
    }
}

@Suite("Engine: SysEx, gain and fades")
struct EngineGainTests {
    @Test func sysExArrivesWholeAtEveryUnit() {
        let a = ImpulseUnit(), b = ImpulseUnit()
        let (engine, queue) = EngineHarness.make([a, b]) { engine, units in
            engine.route(channel: 0, to: units[0])
            engine.route(channel: 1, to: units[1])
        }
        var message: [UInt8] = [0xF0, 0x43]
        message += (0..<1000).map { UInt8($0 % 128) }
        message.append(0xF7)
        #expect(queue.pushSysEx(frame: 3, message))
        _ = renderEngine(engine, frames: 256, blockSizes: [256])
        for u in [a, b] {
            #expect(u.sysExBytesReceived == message.count)
            #expect(u.lastSysExFirstByte == 0xF0 && u.lastSysExLastByte == 0xF7)
        }
    }

    @Test func masterVolumeSysExSetsTheLevelSmoothlyFromItsFrame() {
        let (engine, queue) = EngineHarness.make(ConstantUnit(level: 0.5), maxFrames: 512)
        // 8192/16383 -> about 0.5 of full scale, squared -> 0.25
        queue.pushSysEx(frame: 4800, [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x40, 0xF7])
        let out = renderEngine(engine, frames: 48000, blockSizes: [512])
        let lat = engine.latencyFrames
        #expect(out.left[4800 + lat - 1] == 0.5)          // untouched before its frame
        #expect(out.left[4800 + lat + 1] < 0.5)            // moving from its frame on
        let expected = Float(0.5) * Float(8192.0 / 16383.0) * Float(8192.0 / 16383.0)
        #expect(abs(out.left[40000] - expected) < 1e-4)
        var maxStep: Float = 0
        for i in (lat + 1)..<out.left.count { maxStep = max(maxStep, abs(out.left[i] - out.left[i - 1])) }
        #expect(maxStep < 0.01)                             // a ramp, not a step
    }

    @Test func gainInDecibels() {
        var config = Engine.Configuration()
        config.gainDB = -6.0206
        let (engine, _) = EngineHarness.make(ConstantUnit(level: 0.8), configuration: config)
        let out = renderEngine(engine, frames: 1024, blockSizes: [256])
        #expect(abs(out.left[1000] - 0.4) < 1e-4)
    }

    @Test func fadeOutReachesSilenceWithoutAStep() {
        let (engine, _) = EngineHarness.make(ConstantUnit(level: 0.5))
        _ = renderEngine(engine, frames: 1024, blockSizes: [256])
        engine.requestFadeOut(frames: 2400)
        let out = renderEngine(engine, frames: 4800, blockSizes: [256])
        #expect(engine.isFadedOut)
        #expect(out.left.suffix(1000).allSatisfy { $0 == 0 })
        var maxStep: Float = 0
        for i in 1..<out.left.count { maxStep = max(maxStep, abs(out.left[i] - out.left[i - 1])) }
        #expect(maxStep <= 0.5 * 1.5 / 2400 * 1.01)        // smoothstep's steepest slope is 1.5x a line's
        // Where the sound ends: the last tenth of the fade is over 30 dB
        // below the level before it, and the gain lands on 0 without a corner.
        guard let last = out.left.lastIndex(where: { $0 != 0 }) else { Issue.record("silent"); return }
        #expect(last > 2000 && last < 2500)
        #expect(out.left[(last - 240)...last].allSatisfy { $0 < 0.5 * 0.0316 })
        #expect(out.left[last] < 1e-5)
        #expect(abs(out.left[last] - out.left[last - 1]) < 1e-5)
    }

    @Test func zeroFramesIsANoOp() {
        let (engine, q) = EngineHarness.make(ConstantUnit(level: 0.5))
        q.push(EngineEvent(frame: 0, .noteOn(channel: 0, key: 1, velocity: 1)))
        var l: Float = 7, r: Float = 7
        engine.render(frames: 0, left: &l, right: &r)
        #expect(l == 7 && r == 7)
        #expect(engine.frameTime == 0)
        #expect(q.count == 1)
    }
}

@Suite("Engine: bank routing")
struct BankRoutingTests {
    /// Bank 126 + Program Change moves a channel to the routed unit; another
    /// bank moves it home. The unit left behind gets All Notes Off.
    @Test func bankSelectMovesAChannelBetweenUnitsAtItsFrame() {
        let home = ImpulseUnit(), synth = ImpulseUnit()
        let (engine, q) = EngineHarness.make([home, synth]) { engine, units in
            engine.routeAll(to: units[0])
            engine.routeBank(msb: 126, to: units[1])
        }
        q.push(EngineEvent(frame: 10, .noteOn(channel: 2, key: 60, velocity: 100)))          // home
        q.push(EngineEvent(frame: 20, .controlChange(channel: 2, controller: 0, value: 126)))
        q.push(EngineEvent(frame: 20, .programChange(channel: 2, program: 3)))               // -> synth
        q.push(EngineEvent(frame: 30, .noteOn(channel: 2, key: 62, velocity: 100)))          // synth
        q.push(EngineEvent(frame: 30, .noteOn(channel: 3, key: 64, velocity: 100)))          // channel 3 stays home
        q.push(EngineEvent(frame: 300, .controlChange(channel: 2, controller: 0, value: 0)))
        q.push(EngineEvent(frame: 300, .programChange(channel: 2, program: 0)))              // -> home
        q.push(EngineEvent(frame: 310, .noteOn(channel: 2, key: 65, velocity: 100)))         // home
        _ = renderEngine(engine, frames: 1024, blockSizes: [256])
        #expect(home.messages == [
            .noteOn(channel: 2, key: 60, velocity: 100),
            .controlChange(channel: 2, controller: 0, value: 126),
            .controlChange(channel: 2, controller: 64, value: 0),
            .controlChange(channel: 2, controller: 66, value: 0),
            .controlChange(channel: 2, controller: 123, value: 0),
            .noteOn(channel: 3, key: 64, velocity: 100),
            .programChange(channel: 2, program: 0),
            .noteOn(channel: 2, key: 65, velocity: 100),
        ])
        #expect(synth.messages == [
            .programChange(channel: 2, program: 3),
            .noteOn(channel: 2, key: 62, velocity: 100),
            .controlChange(channel: 2, controller: 0, value: 0),
            .controlChange(channel: 2, controller: 64, value: 0),
            .controlChange(channel: 2, controller: 66, value: 0),
            .controlChange(channel: 2, controller: 123, value: 0),
        ])
    }
}

@Suite("Engine: a channel split over units")
struct SplitChannelTests {
    /// Each key's note-ons take turns between the units; a note that moves
    /// to the other unit releases the key's previous note there at the same
    /// frame (as a repeated key does within one synthesizer); note-offs and
    /// key pressure follow the key's last note-on; the fixed keys stay home;
    /// everything else reaches both units.
    @Test func notesTakeTurnsAndReleaseTheirPredecessor() {
        let a = ImpulseUnit(), b = ImpulseUnit(), other = ImpulseUnit()
        let (engine, q) = EngineHarness.make([a, b, other]) { engine, units in
            engine.route(channel: 9, takingTurns: [units[0], units[1]], fixedKeys: [42, 46])
            engine.route(channel: 0, to: units[2])
        }
        q.push(EngineEvent(frame: 0, .controlChange(channel: 9, controller: 7, value: 90)))
        q.push(EngineEvent(frame: 64, .noteOn(channel: 9, key: 51, velocity: 20)))     // a (first note of the key)
        q.push(EngineEvent(frame: 64, .noteOn(channel: 9, key: 36, velocity: 10)))     // a
        q.push(EngineEvent(frame: 128, .noteOff(channel: 9, key: 51, velocity: 64)))    // a (follows its note)
        q.push(EngineEvent(frame: 192, .noteOn(channel: 9, key: 51, velocity: 25)))    // b, and a note-off to a
        q.push(EngineEvent(frame: 192, .polyPressure(channel: 9, key: 51, pressure: 5))) // b
        q.push(EngineEvent(frame: 256, .noteOn(channel: 9, key: 42, velocity: 15)))    // fixed: a
        q.push(EngineEvent(frame: 320, .noteOn(channel: 9, key: 42, velocity: 16)))    // fixed: a, no note-off
        q.push(EngineEvent(frame: 384, .noteOn(channel: 9, key: 51, velocity: 0)))      // note-off of b's note
        q.push(EngineEvent(frame: 448, .noteOn(channel: 9, key: 51, velocity: 25)))    // a, and a note-off to b
        q.push(EngineEvent(frame: 448, .noteOn(channel: 0, key: 30, velocity: 5)))    // the other channel's unit
        q.push(EngineEvent(frame: 512, .pitchBend(channel: 9, value: 9000)))
        let out = renderEngine(engine, frames: 1024, blockSizes: [256])
        #expect(a.messages == [
            .controlChange(channel: 9, controller: 7, value: 90),
            .noteOn(channel: 9, key: 51, velocity: 20),
            .noteOn(channel: 9, key: 36, velocity: 10),
            .noteOff(channel: 9, key: 51, velocity: 64),
            .noteOff(channel: 9, key: 51, velocity: 64),
            .noteOn(channel: 9, key: 42, velocity: 15),
            .noteOn(channel: 9, key: 42, velocity: 16),
            .noteOn(channel: 9, key: 51, velocity: 25),
            .pitchBend(channel: 9, value: 9000),
        ])
        #expect(b.messages == [
            .controlChange(channel: 9, controller: 7, value: 90),
            .noteOn(channel: 9, key: 51, velocity: 25),
            .polyPressure(channel: 9, key: 51, pressure: 5),
            .noteOn(channel: 9, key: 51, velocity: 0),
            .noteOff(channel: 9, key: 51, velocity: 64),
            .pitchBend(channel: 9, value: 9000),
        ])
        #expect(other.messages == [.noteOn(channel: 0, key: 30, velocity: 5)])
        // each note sounds once, at its own frame, whichever unit plays it
        let lat = engine.latencyFrames
        let onsets = out.left.indices.filter { out.left[$0] != 0 }
        #expect(onsets == [64, 192, 256, 320, 448].map { $0 + lat })
        #expect(abs(out.left[64 + lat] - 30.0 / 127) < 1e-6)
        #expect(abs(out.left[448 + lat] - 30.0 / 127) < 1e-6)   // (right: 81/127, under the limiter's knee)
    }

    /// A Bank Select move takes the whole split channel to the routed unit
    /// (every lane's unit gets the pedals up and All Notes Off) and back.
    @Test func bankRoutingMovesTheWholeSplitChannel() {
        let a = ImpulseUnit(), b = ImpulseUnit(), synth = ImpulseUnit()
        let (engine, q) = EngineHarness.make([a, b, synth]) { engine, units in
            engine.route(channel: 2, takingTurns: [units[0], units[1]])
            engine.routeBank(msb: 126, to: units[2])
        }
        q.push(EngineEvent(frame: 10, .noteOn(channel: 2, key: 60, velocity: 100)))    // a
        q.push(EngineEvent(frame: 20, .noteOn(channel: 2, key: 60, velocity: 100)))    // b (+ note-off to a)
        q.push(EngineEvent(frame: 30, .controlChange(channel: 2, controller: 0, value: 126)))
        q.push(EngineEvent(frame: 30, .programChange(channel: 2, program: 3)))         // -> synth
        q.push(EngineEvent(frame: 40, .noteOn(channel: 2, key: 60, velocity: 100)))    // synth
        q.push(EngineEvent(frame: 300, .controlChange(channel: 2, controller: 0, value: 0)))
        q.push(EngineEvent(frame: 300, .programChange(channel: 2, program: 0)))        // -> a and b
        q.push(EngineEvent(frame: 310, .noteOn(channel: 2, key: 60, velocity: 100)))   // a (takes turns on)
        _ = renderEngine(engine, frames: 1024, blockSizes: [256])
        let release: [MIDIMessage] = [
            .controlChange(channel: 2, controller: 64, value: 0),
            .controlChange(channel: 2, controller: 66, value: 0),
            .controlChange(channel: 2, controller: 123, value: 0),
        ]
        #expect(a.messages == [.noteOn(channel: 2, key: 60, velocity: 100), .noteOff(channel: 2, key: 60, velocity: 64),
                               .controlChange(channel: 2, controller: 0, value: 126)] + release
                + [.programChange(channel: 2, program: 0), .noteOn(channel: 2, key: 60, velocity: 100)])
        #expect(b.messages == [.noteOn(channel: 2, key: 60, velocity: 100),
                               .controlChange(channel: 2, controller: 0, value: 126)] + release
                + [.programChange(channel: 2, program: 0), .noteOff(channel: 2, key: 60, velocity: 64)])
        #expect(synth.messages == [.programChange(channel: 2, program: 3), .noteOn(channel: 2, key: 60, velocity: 100),
                                   .controlChange(channel: 2, controller: 0, value: 0)] + release)
    }

    @Test func nextTurnCyclesThroughTheMask() {
        let mask: UInt64 = 0b1011_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0000_0101
        #expect(ChannelRouter.nextTurn(after: 0, in: mask) == 2)
        #expect(ChannelRouter.nextTurn(after: 2, in: mask) == 60)
        #expect(ChannelRouter.nextTurn(after: 60, in: mask) == 61)
        #expect(ChannelRouter.nextTurn(after: 61, in: mask) == 63)
        #expect(ChannelRouter.nextTurn(after: 63, in: mask) == 0)
    }
}

/// Sends a unit impulse to the delay (and nothing dry) at each note-on.
final class DelaySendUnit: InstrumentUnit {
    let name = "delay-send"
    private var pending = false
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {}
    func receive(_ message: MIDIMessage) { if message.isNoteOn { pending = true } }
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {}
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {}
    func render(_ output: UnitOutput, frames: Int) {
        output.left.update(repeating: 0, count: frames)
        output.right.update(repeating: 0, count: frames)
        output.silenceSends(frames: frames)
        if pending && frames > 0 {
            output.delayLeft[0] = 0.5
            output.delayRight[0] = 0.5
            pending = false
        }
    }
    var activeVoices: Int { 0 }
}

@Suite("Engine: tempo")
struct EngineTempoTests {
    /// A tempo set from another thread (as the live MIDI clock does, from
    /// the sequencer thread) reaches the tempo-synced delay: an eighth at
    /// 100 bpm is 0.3 s, not 120 bpm's 0.25 s.
    @Test func aTempoFromAnotherThreadMovesTheDelay() {
        for bpm in [100.0, 120.0] {
            var config = Engine.Configuration()
            config.delay = .eighth
            let (engine, q) = EngineHarness.make(DelaySendUnit(), configuration: config)
            let setter = NativeThread(name: "tempo-test") { engine.setTempo(beatsPerMinute: bpm) }
            setter.join()
            _ = renderEngine(engine, frames: 9600, blockSizes: [256])   // the new time settles
            q.push(EngineEvent(frame: 9600 + 64, .noteOn(channel: 0, key: 60, velocity: 100)))
            let out = renderEngine(engine, frames: 24000, blockSizes: [256])
            let first = out.left.indices.first { abs(out.left[$0]) > 1e-6 || abs(out.right[$0]) > 1e-6 }
            let eighth = Int(30 / bpm * 48000)
            #expect(first == 64 + eighth + engine.latencyFrames, "\(bpm) bpm")
        }
    }
}
