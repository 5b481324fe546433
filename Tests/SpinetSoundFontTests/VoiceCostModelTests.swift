import Testing
import SpinetEngine
import SpinetFile
import SpinetMIDI
import SpinetRig
import SpinetSoundFont

/// The per-note cost an offline render splits its channels by, read from
/// the SoundFont: checked against FluidSynth's own voice count, and for
/// the shape of the estimate (releases, unlooped samples, fallbacks).
@Suite("SoundFont voice cost")
struct VoiceCostModelTests {
    static let model = VoiceCostModel(path: bundledFont)

    /// A note starts as many voices in FluidSynth as the model finds zones
    /// for it: layered presets, split keyboards, velocity layers, drum kits.
    @Test(arguments: [
        (0, 0, 60, 100), (0, 0, 21, 30), (0, 48, 60, 100), (0, 52, 72, 64), (0, 88, 48, 90), (0, 91, 60, 100),
        (0, 102, 60, 100), (0, 33, 40, 100), (0, 73, 84, 127), (8, 4, 60, 100), (127, 50, 60, 100), (5, 10, 60, 100),
        (128, 0, 38, 100), (128, 0, 42, 20), (128, 25, 36, 127), (128, 3, 49, 100),
    ])
    func voiceCountsMatchFluidSynth(bank: Int, program: Int, key: Int, velocity: Int) throws {
        let model = try #require(Self.model)
        let drum = bank == 128
        let channel: UInt8 = drum ? 9 : 0
        let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000)
        unit.prepare(sampleRate: 48000, maxFrames: 64, channels: 16)
        let base = UnsafeMutablePointer<Float>.allocate(capacity: 8 * 64)
        defer { base.deallocate() }
        if !drum { unit.receive(.controlChange(channel: channel, controller: 0, value: UInt8(bank))) }
        unit.receive(.programChange(channel: channel, program: UInt8(program)))
        unit.receive(.noteOn(channel: channel, key: UInt8(key), velocity: UInt8(velocity)))
        unit.render(UnitOutput(planar: base, stride: 64), frames: 64)
        let expected = try #require(model.voiceCount(bank: bank, program: program, drum: drum, key: key, velocity: velocity))
        #expect(expected >= 1)
        #expect(unit.activeVoices == expected)
    }

    @Test func aNoteCostsItsVoicesTimeSounding() throws {
        let model = try #require(Self.model)
        // A held piano note: each voice sounds while held, plus its release.
        let short = try #require(model.cost(bank: 0, program: 0, drum: false, key: 60, velocity: 100, held: 0.5))
        let long = try #require(model.cost(bank: 0, program: 0, drum: false, key: 60, velocity: 100, held: 1.5))
        let voices = try #require(model.voiceCount(bank: 0, program: 0, drum: false, key: 60, velocity: 100))
        #expect(short >= 0.5 * Double(voices))
        #expect(long > short)
        // A snare hit ends with its samples, however long the key is held.
        let hit = try #require(model.cost(bank: 128, program: 0, drum: true, key: 38, velocity: 100, held: 0.01))
        let held = try #require(model.cost(bank: 128, program: 0, drum: true, key: 38, velocity: 100, held: 60))
        #expect(hit > 0)
        #expect(held == model.cost(bank: 128, program: 0, drum: true, key: 38, velocity: 100, held: 120))
        #expect(held < 60)
        // Fallbacks as FluidSynth's: a missing bank gives bank 0's, a missing kit kit 0.
        #expect(model.cost(bank: 5, program: 10, drum: false, key: 60, velocity: 100, held: 1)
                == model.cost(bank: 0, program: 10, drum: false, key: 60, velocity: 100, held: 1))
        #expect(model.cost(bank: 0, program: 3, drum: true, key: 38, velocity: 100, held: 1)
                == model.cost(bank: 0, program: 0, drum: true, key: 38, velocity: 100, held: 1))
        #expect(VoiceCostModel(path: "/nonexistent.sf2") == nil)
    }

    /// With a note cost, a channel of few but expensive notes outweighs one
    /// of many cheap ones, and the cost follows the channel's program.
    @Test func thePartitionFollowsTheNoteCost() throws {
        var w = MIDIFileWriter(format: 0, ticksPerQuarter: 480)
        var events: [(tick: Int64, event: TrackEvent.Kind)] = []
        events.append((0, .message(.programChange(channel: 1, program: 88))))
        for i in 0..<40 {       // channels 0 and 2: 40 notes each; channel 1: 10 notes of program 88
            for ch: UInt8 in [0, 2] {
                events.append((Int64(i * 96), .message(.noteOn(channel: ch, key: 60, velocity: 100))))
                events.append((Int64(i * 96 + 48), .message(.noteOff(channel: ch, key: 60, velocity: 0))))
            }
            if i < 10 {
                events.append((Int64(i * 96), .message(.noteOn(channel: 1, key: 60, velocity: 100))))
                events.append((Int64(i * 96 + 48), .message(.noteOff(channel: 1, key: 60, velocity: 0))))
            }
        }
        w.addTrack(events.sorted { $0.tick < $1.tick })
        let schedule = try MIDIFile(bytes: w.bytes()).schedule(sampleRate: 48000)
        let cost: ChannelPartition.NoteCost = { _, program, _, _, _, held in program == 88 ? 40 * held : held }
        let load = ChannelPartition.estimatedLoad(schedule, channels: 16, noteCost: cost)
        #expect(load[1] == 10 * 40 * load[0] / 40)          // 10 notes at 40x the cost of one
        // the costly channel alone (with the silent ones), the other two together
        #expect(ChannelPartition.balance(schedule, channels: 16, parts: 2, noteCost: cost)[1] == [0, 2])
        #expect(ChannelPartition.balance(schedule, channels: 16, parts: 2)[1] == [2])
    }
}
