import Testing
import SpinetEngine
import SpinetMIDI
import SpinetSoundFont

/// Renders `events` (frame, message) through a SoundFont unit with
/// Spinet's sends (FluidSynth's effects off), one 256-frame block at a
/// time; returns its output groups, the presets it loaded and the eight
/// planes: dry left/right, reverb, chorus, delay sends.
func renderSoundFontUnit(sounding: [Int]?, programs: Set<Int>? = nil, events: [(Int, MIDIMessage)], frames: Int) throws -> (groups: Int, presets: Int, planes: [[Float]]) {
    var options = SoundFontOptions()
    options.fluidEffects = false
    options.soundingChannels = sounding
    options.programs = programs
    let unit = try SoundFontUnit(fonts: [bundledFont], sampleRate: 48000, channels: 16, options: options)
    let block = 256
    unit.prepare(sampleRate: 48000, maxFrames: block, channels: 16)
    let base = UnsafeMutablePointer<Float>.allocate(capacity: 8 * block)
    defer { base.deallocate() }
    let output = UnitOutput(planar: base, stride: block)
    var planes = [[Float]](repeating: [], count: 8)
    var next = 0
    for start in stride(from: 0, to: frames, by: block) {
        while next < events.count && events[next].0 < start + block {
            unit.receive(events[next].1)
            next += 1
        }
        unit.render(output, frames: block)
        for p in 0..<8 { planes[p] += UnsafeBufferPointer(start: base + p * block, count: block) }
    }
    return (unit.outputGroups, unit.loadedPresets, planes)
}

/// A SoundFont unit told which channels will play asks FluidSynth for only
/// as many per-channel outputs as it needs; its sound and sends must be
/// those of a unit with one output for every channel.
@Suite("SoundFont unit outputs")
struct OutputGroupTests {
    @Test func outputCountGivesEachChannelItsOwnOutput() {
        #expect(SoundFontUnit.outputCount(for: [], limit: 16) == 1)
        #expect(SoundFontUnit.outputCount(for: [9], limit: 16) == 1)
        #expect(SoundFontUnit.outputCount(for: [0, 1, 2], limit: 16) == 3)
        #expect(SoundFontUnit.outputCount(for: [0, 3, 9], limit: 16) == 4)     // mod 3: 0, 0, 0
        #expect(SoundFontUnit.outputCount(for: [0, 4, 9], limit: 16) == 6)     // mod 3, 4, 5 collide
        #expect(SoundFontUnit.outputCount(for: [0, 8], limit: 16) == 3)
        #expect(SoundFontUnit.outputCount(for: [3, 3, 3], limit: 16) == 1)
        #expect(SoundFontUnit.outputCount(for: Array(0..<16), limit: 16) == 16)
        #expect(SoundFontUnit.outputCount(for: [0, 16, 32], limit: 16) == 3)   // mod 3: 0, 1, 2
        #expect(SoundFontUnit.outputCount(for: [0, 1, 2, 3, 4], limit: 4) == 4) // capped: 0 and 4 share
        for channels in [[1, 5, 9, 13], [2, 7, 9, 10, 15], [0, 1, 4, 9, 11, 12, 14]] {
            let count = SoundFontUnit.outputCount(for: channels, limit: 16)
            #expect(Set(channels.map { $0 % count }).count == channels.count)
            #expect(!(channels.count..<count).contains { c in Set(channels.map { $0 % c }).count == channels.count })
        }
    }

    /// Three channels with different sends, notes overlapping, a send change mid-note.
    static let passage: [(Int, MIDIMessage)] = [
        (0, .controlChange(channel: 0, controller: 91, value: 100)),
        (0, .controlChange(channel: 0, controller: 93, value: 0)),
        (0, .controlChange(channel: 3, controller: 91, value: 10)),
        (0, .controlChange(channel: 3, controller: 93, value: 90)),
        (0, .controlChange(channel: 3, controller: 94, value: 50)),
        (0, .controlChange(channel: 9, controller: 91, value: 0)),
        (0, .controlChange(channel: 9, controller: 94, value: 127)),
        (0, .programChange(channel: 3, program: 48)),
        (256, .noteOn(channel: 0, key: 60, velocity: 100)),
        (512, .noteOn(channel: 3, key: 67, velocity: 90)),
        (768, .noteOn(channel: 9, key: 38, velocity: 120)),
        (4096, .controlChange(channel: 0, controller: 91, value: 20)),
        (8192, .noteOff(channel: 0, key: 60, velocity: 0)),
        (9216, .noteOff(channel: 3, key: 67, velocity: 0)),
    ]

    @Test func fewerOutputsSoundTheSame() throws {
        let frames = 16384
        let all = try renderSoundFontUnit(sounding: nil, events: Self.passage, frames: frames)
        let few = try renderSoundFontUnit(sounding: [0, 3, 9], events: Self.passage, frames: frames)
        #expect(all.groups == 16)
        #expect(few.groups == 4)
        let names = ["left", "right", "reverb L", "reverb R", "chorus L", "chorus R", "delay L", "delay R"]
        for p in 0..<8 {
            let peak = all.planes[p].map(abs).max() ?? 0
            #expect(peak > 0.001, "\(names[p]) carries sound in the reference")
            let diff = zip(all.planes[p], few.planes[p]).map { abs($0 - $1) }.max() ?? 0
            #expect(diff <= peak * 1e-5, "\(names[p]): differs by \(diff) (peak \(peak))")
        }
    }

    /// A channel the unit was not told about still sounds (sharing the sends
    /// of the channel whose output it lands in): nothing is ever dropped.
    @Test func anUnexpectedChannelStillSounds() throws {
        let events: [(Int, MIDIMessage)] = [(0, .noteOn(channel: 5, key: 64, velocity: 100))]
        let all = try renderSoundFontUnit(sounding: nil, events: events, frames: 4096)
        let few = try renderSoundFontUnit(sounding: [0], events: events, frames: 4096)
        #expect(few.groups == 1)
        let peak = all.planes[0].map(abs).max() ?? 0
        #expect(peak > 0.01)
        for p in 0..<2 {
            let diff = zip(all.planes[p], few.planes[p]).map { abs($0 - $1) }.max() ?? 0
            #expect(diff <= peak * 1e-5)
        }
    }
}
