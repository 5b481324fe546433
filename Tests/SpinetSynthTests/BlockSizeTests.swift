import Testing
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport
@testable import SpinetSynth

/// The synth's output depends on its events and their frames only, not on
/// how the frames are cut into render calls: a host's block size (1, 37,
/// 64, 500, 4096 frames), an engine's slices and a plugin's process calls
/// all give the same bits, dry and in the effect sends.
@Suite struct BlockSizeTests {
    static let blocks = [1, 37, 64, 500, 4096]
    static let frames = 24_000

    /// Every preset on its own channel, with what moves the modulation:
    /// glide, bends, vibrato, pressure, volume and pan, send levels, the
    /// pedals, releases, a stolen voice and a reset, at frames on no grid.
    static let events: [(frame: Int, message: MIDIMessage)] = {
        var e: [(frame: Int, message: MIDIMessage)] = []
        for c in 0..<8 {
            let ch = UInt8(c)
            e.append((0, .programChange(channel: ch, program: ch)))
            e.append((0, controlChange(ch, 91, UInt8(20 + 10 * c))))
            e.append((0, controlChange(ch, 93, UInt8(c % 2 == 0 ? 70 : 0))))
            e.append((0, controlChange(ch, 94, UInt8(c % 3 == 0 ? 50 : 0))))
            let start = 101 + 997 * c
            e.append((start, .noteOn(channel: ch, key: UInt8(48 + 5 * c), velocity: UInt8(60 + 7 * c))))
            e.append((start + 1_234, .noteOn(channel: ch, key: UInt8(55 + 5 * c), velocity: 100)))
            e.append((start + 2_003, .pitchBend(channel: ch, value: UInt16(8192 + 900 * (c - 4)))))
            e.append((start + 3_171, controlChange(ch, 1, 90)))
            e.append((start + 4_444, .channelPressure(channel: ch, pressure: 100)))
            e.append((start + 5_001, controlChange(ch, 7, 64)))
            e.append((start + 5_003, controlChange(ch, 10, 20)))
            e.append((start + 6_007, controlChange(ch, 91, 0)))
            e.append((start + 6_500, controlChange(ch, 64, 127)))
            e.append((start + 7_013, .noteOff(channel: ch, key: UInt8(48 + 5 * c), velocity: 0)))
            e.append((start + 9_001, controlChange(ch, 64, 0)))
            e.append((start + 9_999, .noteOff(channel: ch, key: UInt8(55 + 5 * c), velocity: 0)))
            e.append((start + 10_500, .noteOn(channel: ch, key: UInt8(60 + c), velocity: 90)))
            e.append((start + 13_333, .noteOff(channel: ch, key: UInt8(60 + c), velocity: 0)))
        }
        // Glide: the saw lead (channel 2) slides between overlapping notes.
        e.append((15_003, .noteOn(channel: 1, key: 70, velocity: 100)))
        e.append((15_777, .noteOn(channel: 1, key: 77, velocity: 100)))
        e.append((17_000, .noteOff(channel: 1, key: 70, velocity: 0)))
        e.append((18_500, .noteOff(channel: 1, key: 77, velocity: 0)))
        e.append((21_113, .systemReset))
        e.append((21_500, .noteOn(channel: 0, key: 64, velocity: 100)))
        return e
    }()

    static func bits(_ r: Rendered) -> [UInt32] { r.left.map(\.bitPattern) + r.right.map(\.bitPattern) }

    @Test func theDrySoundIsTheSameForAnyBlockSize() throws {
        var reference: [UInt32]?
        for block in Self.blocks.reversed() {
            let synth = try makeSynth(polyphony: 12)
            let out = render(synth, frames: Self.frames, events: Self.events, block: block)
            #expect(peak(out) > 0.05, "block \(block): the piece sounds")
            let b = Self.bits(out)
            if let reference {
                let first = b.indices.first { b[$0] != reference[$0] }
                #expect(first == nil, "blocks of \(block) differ from blocks of 4096 from sample \(first ?? -1) (left, then right)")
            } else {
                reference = b
            }
        }
    }

    @Test func theSendsAreTheSameForAnyBlockSize() throws {
        var reference: [[UInt32]]?
        for block in Self.blocks.reversed() {
            let synth = try makeSynth(polyphony: 12)
            let out = renderWithSends(synth, frames: Self.frames, events: Self.events, block: block)
            #expect(peak(out.reverb) > 0.01 && peak(out.chorus) > 0.01 && peak(out.delay) > 0.01, "block \(block): every send is fed")
            let planes = [out.dry, out.reverb, out.chorus, out.delay].map(Self.bits)
            if let reference {
                for (name, (a, b)) in zip(["dry", "reverb", "chorus", "delay"], zip(planes, reference)) {
                    let first = a.indices.first { a[$0] != b[$0] }
                    #expect(first == nil, "\(name): blocks of \(block) differ from blocks of 4096 from sample \(first ?? -1)")
                }
            } else {
                reference = planes
            }
        }
    }

    /// The dry render and the render with sends give the same dry sound, in
    /// any block size (the sends' work does not move the control blocks).
    @Test func drySoundWithAndWithoutSendsIsTheSame() throws {
        let dry = render(try makeSynth(polyphony: 12), frames: Self.frames, events: Self.events, block: 37)
        let wet = renderWithSends(try makeSynth(polyphony: 12), frames: Self.frames, events: Self.events, block: 500)
        #expect(Self.bits(dry) == Self.bits(wet.dry))
    }
}
