import Foundation
import Testing
import SpinetEngine
import SpinetFile
import SpinetMIDI
import SpinetRig
import SpinetSoundFont
import SpinetTestSupport

/// An offline render may split a heavy channel over two FluidSynth
/// instances, each key's notes taking turns (`Engine.route(channel:takingTurns:)`).
/// It must sound as one synthesizer would: above all, a repeated key
/// releases its previous note even when that note plays on the other one.
@Suite("A channel split over two SoundFont synthesizers")
struct SplitChannelSoundTests {
    static let rate = 48000

    /// Channel 0 playing `events` on one SoundFont unit, or split over two.
    static func render(split: Bool, _ events: [(Int, MIDIMessage)], seconds: Int) throws -> [Float] {
        var units: [any InstrumentUnit] = [try SoundFontUnit(fonts: [bundledFont], sampleRate: Double(rate))]
        if split { units.append(try SoundFontUnit(fonts: [bundledFont], sampleRate: Double(rate))) }
        let (engine, queue) = EngineHarness.make(units, sampleRate: Double(rate), maxFrames: 512) { engine, units in
            if split {
                engine.route(channel: 0, takingTurns: [units[0], units[1]])
            } else {
                engine.route(channel: 0, to: units[0])
            }
        }
        for (frame, message) in events { queue.push(EngineEvent(frame: Int64(frame), message)) }
        let frames = seconds * rate
        return renderEngine(engine, frames: frames, blockSizes: [frames]).left   // in one call
    }

    static func rmsDB(_ x: [Float], from: Double, to: Double) -> Double {
        let slice = x[Int(from * Double(rate))..<Int(to * Double(rate))]
        let power = slice.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(slice.count)
        return 10 * log10(power + 1e-30)
    }

    /// An organ (it sounds as long as its key is held) repeats a key
    /// without a note-off in between, then lets go: the repeat must end the
    /// first note on the other synthesizer, or that note rings forever.
    @Test func aRepeatedKeyReleasesThePreviousNoteOnTheOtherSynth() throws {
        let events: [(Int, MIDIMessage)] = [
            (0, .programChange(channel: 0, program: 16)),
            (0, .controlChange(channel: 0, controller: 91, value: 0)),
            (0, .noteOn(channel: 0, key: 60, velocity: 100)),
            (Self.rate, .noteOn(channel: 0, key: 60, velocity: 100)),
            (2 * Self.rate, .noteOff(channel: 0, key: 60, velocity: 0)),
        ]
        let one = try Self.render(split: false, events, seconds: 4)
        let two = try Self.render(split: true, events, seconds: 4)
        let held = Self.rmsDB(one, from: 0.3, to: 0.9)
        #expect(held > -40)
        // one note at a time while held, as on one synth (not two: +3 dB)
        for window in [(0.3, 0.9), (1.3, 1.9)] {
            let a = Self.rmsDB(one, from: window.0, to: window.1), b = Self.rmsDB(two, from: window.0, to: window.1)
            #expect(abs(a - b) < 0.5, "\(window): \(a) dB on one synth, \(b) dB split")
        }
        // and silence once the key is up
        #expect(Self.rmsDB(one, from: 3, to: 4) < -100)
        #expect(Self.rmsDB(two, from: 3, to: 4) < -100)
    }
}

@Suite("Channel lanes")
struct ChannelLaneTests {
    /// Channel 9: a ride (key 51) on every eighth, hi-hats (42, 46) and a
    /// kick; channels 0 and 1: a few notes each, `extra` added.
    static func drumHeavy(_ extra: [(tick: Int64, event: TrackEvent.Kind)] = []) throws -> MIDISchedule {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var events = extra
        for i in 0..<64 {
            let t = Int64(i * 240)
            for key: UInt8 in [51, i % 4 == 3 ? 46 : 42] + (i % 2 == 0 ? [36] : []) {
                events.append((t, .message(.noteOn(channel: 9, key: key, velocity: 100))))
                events.append((t + 120, .message(.noteOff(channel: 9, key: key, velocity: 0))))
            }
        }
        for (ch, key) in [(0, 60), (1, 64)] {
            events.append((0, .message(.noteOn(channel: UInt8(ch), key: UInt8(key), velocity: 90))))
            events.append((480, .message(.noteOff(channel: UInt8(ch), key: UInt8(key), velocity: 0))))
        }
        w.addTrack(events.sorted { $0.tick < $1.tick })
        return try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 48000)
    }

    nonisolated(unsafe) static let hats: ChannelPartition.ExclusiveKeys = { bank, program, drum in drum ? [[42, 44, 46]] : [] }

    /// The drum channel, most of the work, is split: its home lane (with
    /// the hi-hats fixed to it) in one group, a guest lane in the other.
    @Test func theHeavyDrumChannelIsSplitWithItsExclusiveKeysAtHome() throws {
        let lanes = ChannelPartition.portions(try Self.drumHeavy(), channels: 16, parts: 2, exclusiveKeys: Self.hats)
        #expect(lanes.count == 2)
        let homes = lanes.map { $0.filter { if case .home = $0.share { return true } else { return false } } }
        let guests = lanes.map { $0.filter { $0.share == .guest } }
        #expect(homes.flatMap { $0 } == [ChannelPartition.Portion(channel: 9, share: .home(fixedKeys: [42, 44, 46]))])
        #expect(guests.flatMap { $0 } == [ChannelPartition.Portion(channel: 9, share: .guest)])
        #expect(homes.firstIndex { !$0.isEmpty } != guests.firstIndex { !$0.isEmpty })
        // every other channel whole, exactly once
        let whole = lanes.flatMap { $0 }.filter { $0.share == .whole }.map(\.channel).sorted()
        #expect(whole == (0..<16).filter { $0 != 9 })
        #expect(ChannelPartition.portions(try Self.drumHeavy(), channels: 16, parts: 2, exclusiveKeys: Self.hats) == lanes)
    }

    /// No split without knowing the exclusive classes, with one part, or
    /// when the channel uses what ties one key's note to another's.
    @Test(arguments: [(65, 127), (66, 127), (68, 127), (84, 60), (126, 1)])
    func noSplitWhenKeysAreTied(controller: Int, value: Int) throws {
        func split(_ lanes: [[ChannelPartition.Portion]]) -> Bool { lanes.joined().contains { $0.share != .whole } }
        #expect(!split(ChannelPartition.portions(try Self.drumHeavy(), channels: 16, parts: 2)))
        #expect(!split(ChannelPartition.portions(try Self.drumHeavy(), channels: 16, parts: 1, exclusiveKeys: Self.hats)))
        let tied = try Self.drumHeavy([(960, .message(.controlChange(channel: 9, controller: UInt8(controller), value: UInt8(value))))])
        #expect(!split(ChannelPartition.portions(tied, channels: 16, parts: 2, exclusiveKeys: Self.hats)))
        // a pedal let up (value 0) ties nothing
        if controller != 84 && controller != 126 {
            let released = try Self.drumHeavy([(960, .message(.controlChange(channel: 9, controller: UInt8(controller), value: 0)))])
            #expect(split(ChannelPartition.portions(released, channels: 16, parts: 2, exclusiveKeys: Self.hats)))
        }
    }

    /// The bundled font's drum kit keeps its hi-hats in one exclusive class.
    @Test func theFontNamesTheHiHatsClass() throws {
        let model = try #require(VoiceCostModel(path: bundledFont))
        let classes = model.exclusiveKeys(bank: 0, program: 0, drum: true)
        #expect(classes.contains { [42, 44, 46].allSatisfy($0.contains) })
        #expect(!classes.contains { $0.contains(51) || $0.contains(36) })
    }
}
