import Foundation
import Testing
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport
import SpinetTestTraits

@Suite("EventQueue")
struct EventQueueTests {
    /// One producer thread, one consumer thread, a small ring so both sides
    /// wrap and meet often: every event and every SysEx byte arrives, in order.
    @Test func producerAndConsumerThreadsExchangeEverythingInOrder() async {
        let queue = EventQueue(capacity: 64, byteCapacity: 256)
        let total = 200_000
        let producer = Thread {
            var i = 0
            while i < total {
                let ok: Bool
                if i % 97 == 0 {
                    let len = 3 + i % 40
                    var msg = [UInt8](repeating: UInt8(i % 128), count: len)
                    msg[0] = 0xF0; msg[len - 1] = 0xF7
                    ok = queue.pushSysEx(frame: Int64(i), msg)
                } else {
                    ok = queue.push(EngineEvent(frame: Int64(i), .controlChange(channel: 0, controller: 1, value: UInt8(i % 128))))
                }
                if ok { i += 1 } else { sched_yield() }
            }
        }
        producer.start()
        var expected = 0
        var errors = 0
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        defer { scratch.deallocate() }
        while expected < total {
            guard let e = queue.peek() else { sched_yield(); continue }
            if e.frame != Int64(expected) { errors += 1 }
            switch e.kind {
            case .message(let m):
                if m != .controlChange(channel: 0, controller: 1, value: UInt8(expected % 128)) { errors += 1 }
                queue.pop()
            case .sysEx(let length):
                queue.pop(sysExDestination: scratch)
                let len = Int(length)
                if len != 3 + expected % 40 || scratch[0] != 0xF0 || scratch[len - 1] != 0xF7 { errors += 1 }
                for k in 1..<(len - 1) where scratch[k] != UInt8(expected % 128) { errors += 1 }
            }
            expected += 1
        }
        #expect(errors == 0)
        // The producer retried instead of dropping, but each refusal was counted.
        #expect(queue.count == 0)
    }

    /// A flood fills the queue up to its release reserve; from there on
    /// everything else is refused and counted, but note-offs, pedals up,
    /// All Sound Off, Reset All Controllers and All Notes Off still get in.
    @Test func aFullQueueStillTakesReleasesFromItsReserve() {
        let q = EventQueue(capacity: 1024)
        var taken = 0
        while q.push(EngineEvent(frame: 0, .controlChange(channel: 0, controller: 1, value: 5))) { taken += 1 }
        #expect(taken < 1024)
        #expect(q.dropped == 1)
        let releases: [MIDIMessage] = [
            .noteOff(channel: 0, key: 60, velocity: 0), .noteOn(channel: 1, key: 61, velocity: 0),
            .controlChange(channel: 0, controller: 64, value: 0), .controlChange(channel: 0, controller: 66, value: 0),
            .controlChange(channel: 0, controller: 120, value: 0), .controlChange(channel: 0, controller: 121, value: 0),
            .controlChange(channel: 0, controller: 123, value: 0), .systemReset,
        ]
        for m in releases { #expect(q.push(EngineEvent(frame: 1, m)), "\(m) refused") }
        #expect(!q.push(EngineEvent(frame: 1, .noteOn(channel: 0, key: 60, velocity: 90))))
        #expect(!q.push(EngineEvent(frame: 1, .controlChange(channel: 0, controller: 64, value: 127))))
        #expect(!q.pushSysEx(frame: 1, [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]))
        #expect(q.dropped == 4)
        // what went in comes out, in order
        var out: [MIDIMessage] = []
        while let e = q.peek() {
            if case .message(let m) = e.kind, e.frame == 1 { out.append(m) }
            q.pop()
        }
        #expect(out == releases)
    }

    /// A producer that keeps a refused event and offers it again (the
    /// offline renderer) is not counted as dropping it.
    @Test func aRefusalTheProducerRetriesIsNotADrop() {
        let q = EventQueue(capacity: 16)
        while q.push(EngineEvent(frame: 0, .pitchBend(channel: 0, value: 1)), countingDrop: false) {}
        #expect(!q.pushSysEx(frame: 0, [0xF0, 1, 0xF7], countingDrop: false))
        #expect(q.dropped == 0)
    }

    /// `retract` takes back the events pushed so far at or after a frame,
    /// SysEx bytes too; earlier ones and those pushed after it stay.
    @Test func retractTakesBackWhatWasQueuedFromAFrame() {
        let q = EventQueue(capacity: 16, byteCapacity: 64)
        q.push(EngineEvent(frame: 10, .noteOn(channel: 0, key: 60, velocity: 90)))
        q.pushSysEx(frame: 20, [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7])
        q.push(EngineEvent(frame: 30, .noteOff(channel: 0, key: 60, velocity: 0)))
        q.retract(from: 20)
        q.push(EngineEvent(frame: 20, .controlChange(channel: 0, controller: 123, value: 0)))
        q.pushSysEx(frame: 40, [0xF0, 0x01, 0xF7])
        var seen: [EngineEvent] = []
        var bytes = [UInt8](repeating: 0, count: 8)
        while let e = q.peek() {
            seen.append(e)
            bytes.withUnsafeMutableBufferPointer { q.pop(sysExDestination: $0.baseAddress) }
        }
        #expect(seen == [EngineEvent(frame: 10, .noteOn(channel: 0, key: 60, velocity: 90)),
                         EngineEvent(frame: 20, .controlChange(channel: 0, controller: 123, value: 0)),
                         EngineEvent(frame: 40, kind: .sysEx(length: 3))])
        #expect(Array(bytes[0..<3]) == [0xF0, 0x01, 0xF7], "the retracted SysEx's bytes were skipped")
        #expect(q.dropped == 0 && q.count == 0)
    }

    @Test func aSysExLargerThanTheByteRingIsRefused() {
        let q = EventQueue(capacity: 8, byteCapacity: 16)
        #expect(!q.pushSysEx(frame: 0, [UInt8](repeating: 0, count: 17)))
        #expect(q.dropped == 1)
        #expect(q.pushSysEx(frame: 0, [0xF0, 1, 2, 0xF7]))
    }
}

@Suite("Limiter")
struct LimiterTests {
    /// Full-scale square bursts summed from many voices (up to +24 dB over
    /// full scale): no output sample is ever above the ceiling.
    @Test func tortureSignalNeverExceedsTheCeiling() {
        var limiter = Limiter(sampleRate: 48000, ceilingDBFS: -1)
        var rng = SplitMix64(seed: 7)
        let n = 48000 * 4
        var l = [Float](repeating: 0, count: n), r = [Float](repeating: 0, count: n)
        var i = 0
        while i < n {
            let burst = Int(rng.next() % 2000) + 1
            let voices = Float(rng.next() % 16 + 1)
            let period = Int(rng.next() % 200) + 2
            for k in 0..<burst where i + k < n {
                let s: Float = (k / (period / 2 + 1)) % 2 == 0 ? voices : -voices
                l[i + k] = s
                r[i + k] = -s * 0.7
            }
            i += burst + Int(rng.next() % 500)
        }
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: n)
            }
        }
        let ceiling = Float(pow(10, -1.0 / 20))
        let peak = max(l.map { abs($0) }.max()!, r.map { abs($0) }.max()!)
        #expect(peak <= ceiling)
        #expect(peak > ceiling * 0.98)     // it limits, it does not squash
    }

    /// Below the knee (1 dB under the ceiling) the limiter is a pure delay:
    /// bit-identical samples.
    @Test func belowTheKneeIsBitTransparent() {
        var limiter = Limiter(sampleRate: 44100, ceilingDBFS: -1)
        #expect(abs(20 * log10(Double(limiter.knee)) + 2) < 1e-6)
        let n = 44100
        let input = (0..<n).map { Float(sin(Double($0) * 0.05) * 0.79) }
        var l = input, r = input
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: n)
            }
        }
        let d = limiter.lookahead
        #expect(Array(l[d...]) == Array(input[..<(n - d)]))
        #expect(limiter.limitedFrames == 0)
    }

    /// A peak that falls frame after frame for longer than the look-ahead
    /// (a loud low note's down-slope, a decaying boost) fills the running
    /// minimum's ring exactly: the gain still comes from the loudest frame
    /// of the window, so nothing needs the final clamp (a few ulps aside),
    /// and the ring never overruns its memory.
    @Test func aLongFallingPeakIsLimitedByTheLoudestFrameOfTheWindow() {
        var limiter = Limiter(sampleRate: 48000, ceilingDBFS: -1)
        let n = 4000 + 48000
        // falls from 4.0 to 1.0 over 4000 frames, strictly, then stays (the gain recovers to the ceiling's)
        var l = (0..<n).map { k in Float(k < 4000 ? 4 - 3 * Double(k) / 4000 : 1) }
        var r = l.map { -$0 }
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: n)
            }
        }
        let ceiling = Float(pow(10, -1.0 / 20))
        let clamped = l.filter { $0 == ceiling }.count
        #expect(l.allSatisfy { $0 <= ceiling } && r.allSatisfy { $0 >= -ceiling })
        #expect(clamped <= 3, "\(clamped) samples reached the ceiling only through the final clamp")
        // 1.0 is 2 dB over the knee: it settles at -2 + (1 - e^-2) dBFS
        #expect(abs(20 * log10(Double(l[n - 1])) - (-2 + (1 - exp(-2.0)))) < 0.02)
    }

    /// The soft knee: a steady level x dB over the knee comes out at
    /// knee + w·(1 - e^(-x/w)) (w = 1 dB): limiting sets in gradually,
    /// and nothing reaches the ceiling however loud the input.
    @Test func theKneeBendsSmoothlyTowardsTheCeiling() {
        let kneeDB = -2.0
        var last = -Double.infinity
        for inputDB in [-3.0, -2.0, -1.9, -1.5, -1.0, 0.0, 3.0, 12.0, 24.0] {
            var limiter = Limiter(sampleRate: 48000, ceilingDBFS: -1)
            let level = Float(pow(10, inputDB / 20))
            var l = [Float](repeating: level, count: 48000), r = l
            l.withUnsafeMutableBufferPointer { lp in
                r.withUnsafeMutableBufferPointer { rp in
                    limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: 48000)
                }
            }
            let outDB = 20 * log10(Double(l[47999]))
            let over = inputDB - kneeDB
            let expected = over <= 0 ? inputDB : kneeDB + (1 - exp(-over))
            #expect(abs(outDB - expected) < 0.02, "\(inputDB) dBFS in: \(outDB) dBFS out, curve \(expected)")
            #expect(outDB < -1 && outDB > last)
            last = outDB
        }
    }

    /// After a loud passage the gain recovers fully and exactly.
    @Test func gainReturnsToExactlyOneAfterAPeak() {
        var limiter = Limiter(sampleRate: 48000, ceilingDBFS: -1)
        var l = [Float](repeating: 0.5, count: 96000)
        for k in 1000..<1100 { l[k] = 3 }
        var r = l
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: 96000)
            }
        }
        #expect(l.suffix(1000).allSatisfy { $0 == 0.5 })
        #expect(l[1000 + limiter.lookahead + 50] <= Float(pow(10, -1.0 / 20)))
    }

    @Test func nanAndInfinityBecomeSilence() {
        var limiter = Limiter(sampleRate: 48000)
        var l: [Float] = [.nan, .infinity, -.infinity] + [Float](repeating: 0, count: 200)
        var r = l
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: 203)
            }
        }
        #expect(l.allSatisfy { $0 == 0 } && r.allSatisfy { $0 == 0 })
    }
}

/// The limiter's exact output for a fixed input (hash of the bit patterns):
/// how it keeps its buffers must not change one bit of what it renders.
@Suite("Limiter output bits")
struct LimiterOutputBitsTests {
    @Test func loudNoiseInOddBlocks() {
        var limiter = Limiter(sampleRate: 48000, ceilingDBFS: -1)
        var rng = SplitMix64(seed: 11)
        let n = 24000
        var l = (0..<n).map { k in Float(Double(rng.next() % 4001) / 1000 - 2) * (k < n / 2 ? 1 : 0.3) }
        var r = l.reversed().map { $0 * 0.8 }
        var gains = [Float](repeating: 0, count: 333)
        var start = 0
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                gains.withUnsafeMutableBufferPointer { gp in
                    while start < n {
                        let count = min(333, n - start)
                        limiter.process(left: lp.baseAddress! + start, right: rp.baseAddress! + start, frames: count,
                                        gains: gp.baseAddress!)
                        start += count
                    }
                }
            }
        }
        #expect(BitHash.of(l + r + gains) == 8605158961925030742)
    }
}

@Suite("MasterBus gain")
struct MasterBusGainTests {
    /// A gain set while it runs (a plugin host moving its gain parameter)
    /// ramps there and arrives: the output is then the input times exactly
    /// the gain, as with the gain set before the start. The float step used
    /// to stall a few ulps short (-6 dB at 48 kHz: 2.4e-6 under the target,
    /// a -106 dB level error for as long as the gain stayed).
    @Test(arguments: [-6.0, -12.5, 3.0, -0.1])
    func aGainSetWhileRunningArrivesExactly(dB: Double) {
        let frames = 1024
        let bus = MasterBus(ceilingDBFS: 0)
        bus.prepare(sampleRate: 48000, maxFrames: frames)
        let input: Float = 0.1
        var l = [Float](repeating: 0, count: frames), r = l
        func block() {
            bus.beginBlock(set: 0)
            bus.fillGainRamp(to: frames)
            for i in 0..<frames { l[i] = input; r[i] = -input }
            l.withUnsafeMutableBufferPointer { lp in
                r.withUnsafeMutableBufferPointer { rp in bus.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: frames, set: 0) }
            }
        }
        block()
        bus.setGain(dB: dB)
        for _ in 0..<10 { block() }   // 0.2 s: the 5 ms ramp is long over
        let expected = input * Float(pow(10, dB / 20))
        #expect(l.allSatisfy { $0 == expected }, "\(l[frames - 1]) for \(expected)")
        #expect(r.allSatisfy { $0 == -expected })
    }
}

/// The limiter and the master bus own their buffers: dropping them frees
/// every allocation made building and running them (no call to make).
@Suite("Limiter ownership", .realtimeProbe)
struct LimiterOwnershipTests {
    @Test func limiterAndMasterBusFreeAllTheyAllocated() {
        #expect(RealtimeProbe.isActive)
        func body() {
            var limiter = Limiter(sampleRate: 48000)
            var l = [Float](repeating: 2, count: 64), r = l
            l.withUnsafeMutableBufferPointer { lp in
                r.withUnsafeMutableBufferPointer { rp in limiter.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: 64) }
            }
            let bus = MasterBus(ceilingDBFS: -1)
            bus.prepare(sampleRate: 48000, maxFrames: 64)
            l.withUnsafeMutableBufferPointer { lp in
                r.withUnsafeMutableBufferPointer { rp in bus.process(left: lp.baseAddress!, right: rp.baseAddress!, frames: 64, set: 0) }
            }
        }
        body()
        let counts = RealtimeProbe.counts(body)
        #expect(counts.allocations > 0)
        #expect(counts.frees == counts.allocations, "\(counts.allocations) allocations, \(counts.frees) frees")
    }
}

