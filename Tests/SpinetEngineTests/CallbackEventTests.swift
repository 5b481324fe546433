import Testing
import SpinetTestTraits
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport

/// `render(frames:left:right:events:)`: events a host hands over inside its
/// audio callback, at frame offsets within the call.
@Suite("Engine: events inside the render call")
struct CallbackEventTests {
    /// Renders one call of `frames` frames with `events`; returns the output.
    static func render(_ engine: Engine, frames: Int, _ events: [CallbackEvent]) -> [Float] {
        var left = [Float](repeating: 0, count: frames)
        var right = [Float](repeating: 0, count: frames)
        left.withUnsafeMutableBufferPointer { l in
            right.withUnsafeMutableBufferPointer { r in
                events.withUnsafeBufferPointer { e in
                    engine.render(frames: frames, left: l.baseAddress!, right: r.baseAddress!, events: e)
                }
            }
        }
        return left
    }

    static func makeEngine(maxFrames: Int = 256) -> (Engine, ImpulseUnit, EventQueue) {
        let engine = Engine()
        let unit = ImpulseUnit()
        engine.routeAll(to: engine.add(unit))
        let queue = engine.addInput()
        engine.prepare(sampleRate: 48000, maxFrames: maxFrames)
        return (engine, unit, queue)
    }

    /// A note-on at offset k sounds at frame k of the call (plus the
    /// limiter's latency), in any call, also past `maxFrames`.
    @Test(arguments: [0, 1, 63, 64, 200, 255, 256, 700, 999])
    func noteOnAtOffsetStartsAtThatFrame(offset: Int) {
        let (engine, _, _) = Self.makeEngine()
        let latency = engine.latencyFrames
        _ = Self.render(engine, frames: 333, [])       // the call need not start at frame 0
        let out = Self.render(engine, frames: 1000 + latency, [CallbackEvent(offset: offset, .noteOn(channel: 0, key: 60, velocity: 127))])
        #expect(out.indices.filter { out[$0] != 0 } == [offset + latency])
        #expect(engine.statistics.lateEvents == 0)
        #expect(engine.statistics.droppedEvents == 0)
    }

    /// Queue events and call events merge in frame order; at one frame the
    /// queue's come first.
    @Test func mergesWithTheQueueInFrameOrder() {
        let (engine, unit, queue) = Self.makeEngine()
        queue.push(EngineEvent(frame: 10, .programChange(channel: 0, program: 1)))
        queue.push(EngineEvent(frame: 30, .programChange(channel: 0, program: 3)))
        queue.push(EngineEvent(frame: 40, .programChange(channel: 0, program: 4)))
        let events = [CallbackEvent(offset: 20, .programChange(channel: 0, program: 2)),
                      CallbackEvent(offset: 30, .programChange(channel: 0, program: 5)),
                      CallbackEvent(offset: 300, .programChange(channel: 0, program: 6))]
        _ = Self.render(engine, frames: 512, events)
        #expect(unit.messages == [1, 2, 3, 5, 4, 6].map { MIDIMessage.programChange(channel: 0, program: $0) })
    }

    /// Offsets past the call go to its last frame; out-of-order ones are
    /// late; SysEx is copied; a 0-frame call drops (and counts) its events.
    @Test func edgeCases() {
        let (engine, unit, _) = Self.makeEngine()
        let latency = engine.latencyFrames
        let out = Self.render(engine, frames: 100, [CallbackEvent(offset: 5000, .noteOn(channel: 0, key: 1, velocity: 127))])
            + Self.render(engine, frames: latency + 10, [])
        #expect(out.indices.filter { out[$0] != 0 } == [99 + latency])
        _ = Self.render(engine, frames: 100, [CallbackEvent(offset: 50, .noteOn(channel: 0, key: 2, velocity: 1)),
                                              CallbackEvent(offset: 10, .noteOn(channel: 0, key: 3, velocity: 1))])
        #expect(engine.statistics.lateEvents == 1)
        let gmOn: [UInt8] = [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]
        gmOn.withUnsafeBufferPointer { bytes in
            _ = Self.render(engine, frames: 64, [CallbackEvent(offset: 3, sysEx: bytes)])
        }
        #expect(unit.sysExBytesReceived == 6 && unit.lastSysExFirstByte == 0xF0 && unit.lastSysExLastByte == 0xF7)
        _ = Self.render(engine, frames: 0, [CallbackEvent(offset: 0, .noteOn(channel: 0, key: 4, velocity: 1))])
        #expect(engine.statistics.droppedEvents == 1)
        #expect(unit.messages.count == 3)
    }

    /// Routing applies to call events as to queue events (a muted channel's note-on is dropped).
    @Test func routingAndMuteApply() {
        var config = Engine.Configuration()
        config.mutedChannels = [1]
        let engine = Engine(configuration: config)
        let a = ImpulseUnit(), b = ImpulseUnit()
        engine.route(channel: 0, to: engine.add(a))
        engine.route(channel: 1, to: engine.add(b))
        engine.prepare(sampleRate: 48000, maxFrames: 128)
        _ = Self.render(engine, frames: 256, [CallbackEvent(offset: 1, .noteOn(channel: 0, key: 60, velocity: 100)),
                                              CallbackEvent(offset: 2, .noteOn(channel: 1, key: 60, velocity: 100)),
                                              CallbackEvent(offset: 3, .controlChange(channel: 1, controller: 7, value: 50))])
        #expect(a.messages == [.noteOn(channel: 0, key: 60, velocity: 100)])
        #expect(b.messages == [.controlChange(channel: 1, controller: 7, value: 50)])
    }

    /// The in-callback path allocates nothing and takes no lock: messages,
    /// SysEx, queue events beside them, calls longer than `maxFrames`.
    @Test(.realtimeProbe) func allocatesNothingAndTakesNoLock() {
        #expect(RealtimeProbe.isActive, "the allocation probe is not interposed in this test binary")
        var config = Engine.Configuration()
        config.reverb = .room
        let engine = Engine(configuration: config)
        // (ImpulseUnit's receiveSysEx reads `.last`, which allocates in a debug build)
        let unit = SysExCountingUnit()
        engine.routeAll(to: engine.add(unit))
        let queue = engine.addInput()
        engine.prepare(sampleRate: 48000, maxFrames: 128)
        let frames = 300
        let left = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        let sysEx = UnsafeMutablePointer<UInt8>.allocate(capacity: 8)
        let events = UnsafeMutablePointer<CallbackEvent>.allocate(capacity: 6)
        defer { left.deallocate(); right.deallocate(); sysEx.deallocate(); events.deallocate() }
        let volume: [UInt8] = [0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x00, 0x60, 0xF7]
        for i in 0..<8 { sysEx[i] = volume[i] }
        events.initialize(repeating: CallbackEvent(offset: 0, .systemReset), count: 6)
        func cycle(_ k: Int) {
            events[0] = CallbackEvent(offset: 0, .noteOn(channel: 0, key: UInt8(k % 100), velocity: 100))
            events[1] = CallbackEvent(offset: 17, .controlChange(channel: 0, controller: 91, value: UInt8(k % 128)))
            events[2] = CallbackEvent(offset: 130, sysEx: UnsafeBufferPointer(start: sysEx, count: 8))
            events[3] = CallbackEvent(offset: 131, .noteOff(channel: 0, key: UInt8(k % 100), velocity: 0))
            events[4] = CallbackEvent(offset: 299, .pitchBend(channel: 0, value: UInt16(k % 16384)))
            events[5] = CallbackEvent(offset: 299, .programChange(channel: 0, program: UInt8(k % 128)))
            queue.push(EngineEvent(frame: engine.frameTime + 5, .noteOn(channel: 1, key: 60, velocity: 90)))
            engine.render(frames: frames, left: left, right: right, events: UnsafeBufferPointer(start: events, count: 6))
        }
        cycle(0)
        cycle(1)
        var allocations = 0, frees = 0, locks = 0
        for k in 2..<200 {
            let c = RealtimeProbe.counts { cycle(k) }
            allocations += c.allocations
            frees += c.frees
            locks += c.locks
        }
        #expect(allocations == 0)
        #expect(frees == 0)
        #expect(locks == 0)
        #expect(engine.statistics.droppedEvents == 0)
        #expect(unit.sysExBytes == 200 * 8)
        #expect(unit.messages == 200 * 5 + 200)   // five messages of the call and one from the queue
    }
}

/// Counts what it receives; allocation-free in any build.
final class SysExCountingUnit: InstrumentUnit {
    let name = "count"
    var messages = 0
    var sysExBytes = 0
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {}
    func receive(_ message: MIDIMessage) { messages += 1 }
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) { sysExBytes += message.count }
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
    }
    var activeVoices: Int { 0 }
}

@Suite("RawMIDIEvent: the one reading of a host's MIDI bytes")
struct RawMIDIEventTests {
    static func read(_ bytes: [UInt8], port: UInt8 = 0) -> RawMIDIEvent {
        bytes.withUnsafeBufferPointer { b in
            b.isEmpty ? RawMIDIEvent(UnsafePointer(bitPattern: 1)!, count: 0, offset: 7) : RawMIDIEvent(b.baseAddress!, count: b.count, offset: 7, port: port)
        }
    }

    @Test func channelMessagesAreMaskedAndPutOnTheirPort() {
        guard case .event(let e) = Self.read([0x93, 0xBC, 0xE4], port: 1), case .message(let m) = e.kind else {
            Issue.record("not an event"); return
        }
        #expect(e.offset == 7)
        #expect(m == .noteOn(channel: 19, key: 0x3C, velocity: 0x64))
        guard case .event(let short) = Self.read([0xC2]), case .message(let p) = short.kind else { Issue.record("short"); return }
        #expect(p == .programChange(channel: 2, program: 0), "a missing data byte reads as 0")
    }

    @Test func clockSysExResetAndTheRest() {
        if case .clockTick = Self.read([0xF8]) {} else { Issue.record("F8") }
        for b: UInt8 in [0xFA, 0xFB, 0xFC] { if case .clockRestart = Self.read([b]) {} else { Issue.record("\(b)") } }
        for b: [UInt8] in [[], [0x40, 0x40], [0xF1, 0x10], [0xF2, 0, 0], [0xF6], [0xFE], [0xF9]] {
            if case .ignored = Self.read(b) {} else { Issue.record("\(b) should be ignored") }
        }
        guard case .event(let reset) = Self.read([0xFF]), case .message(.systemReset) = reset.kind else { Issue.record("FF"); return }
        let sysEx: [UInt8] = [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]
        sysEx.withUnsafeBufferPointer { b in
            guard case .event(let e) = RawMIDIEvent(b.baseAddress!, count: b.count, offset: 3), case .sysEx(let lent) = e.kind else {
                Issue.record("SysEx"); return
            }
            #expect(lent.baseAddress == b.baseAddress && lent.count == 6, "the bytes are lent, not copied")
        }
    }
}
