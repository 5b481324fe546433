import Testing
import SpinetEngine
import SpinetMIDI
@testable import SpinetSynth

/// A factory preset with changes, for building test banks.
func preset(_ name: String, program: Int = 0, _ change: (inout Preset) -> Void = { _ in }) -> Preset {
    guard var p = PresetBank.factory.preset(named: name) else { fatalError("no factory preset \(name)") }
    p.program = program
    change(&p)
    return p
}

/// A prepared synth playing `presets` (program 0 is the first).
func makeSynth(_ presets: [Preset]? = nil, sampleRate: Double = 48_000, polyphony: Int = 64,
               mpe: MPEZone? = nil, maxFrames: Int = 512, channels: Int = 16) throws -> OscillatorSynth {
    let bank = try presets.map { try PresetBank(presets: $0) } ?? .factory
    let synth = OscillatorSynth(presets: bank, polyphony: polyphony, mpe: mpe)
    synth.prepare(sampleRate: sampleRate, maxFrames: maxFrames, channels: channels)
    return synth
}

/// Drives `synth` through `frames` frames the way the engine slices a
/// block: each event received at its exact frame, `render(position, n)`
/// called for the frames between them, in calls of at most `block` frames
/// (a host's blocks of `block` frames from frame 0, cut at the events).
/// Returns the events at or after `frames`, not received.
func slice(_ synth: OscillatorSynth, frames: Int, events: [(frame: Int, message: MIDIMessage)], block: Int,
           render: (_ position: Int, _ frames: Int) -> Void) -> ArraySlice<(frame: Int, message: MIDIMessage)> {
    let sorted = events.enumerated().sorted { ($0.element.frame, $0.offset) < ($1.element.frame, $1.offset) }.map(\.element)
    var next = 0
    var position = 0
    while position < frames {
        while next < sorted.count && sorted[next].frame <= position {
            synth.receive(sorted[next].message)
            next += 1
        }
        var end = min(frames, (position / block + 1) * block)
        if next < sorted.count { end = min(end, sorted[next].frame) }
        render(position, end - position)
        position = end
    }
    return sorted[next...]
}

/// Renders `frames` frames, applying each event at its exact frame (the way
/// the engine slices a block), in render calls of at most `block` frames:
/// a host's blocks of `block` frames from frame 0, cut at the events. The
/// events after the end are received last.
func render(_ synth: OscillatorSynth, frames: Int, events: [(frame: Int, message: MIDIMessage)] = [], block: Int = 256) -> Rendered {
    var left = [Float](repeating: .nan, count: frames)
    var right = [Float](repeating: .nan, count: frames)
    let rest = left.withUnsafeMutableBufferPointer { l in
        right.withUnsafeMutableBufferPointer { r in
            slice(synth, frames: frames, events: events, block: block) { position, n in
                synth.render(left: l.baseAddress! + position, right: r.baseAddress! + position, frames: n)
            }
        }
    }
    for event in rest { synth.receive(event.message) }
    return Rendered(left: left, right: right)
}

/// Frames of a duration.
func frames(_ seconds: Double, _ sampleRate: Double = 48_000) -> Int { Int((seconds * sampleRate).rounded()) }

/// Frequency of a MIDI note (A4 = 440 Hz).
func frequency(ofNote note: Double) -> Double { 440 * pow(2, (note - 69) / 12) }

/// Largest magnitude of the windowed spectrum within ±`width` bins of `hz`.
func magnitude(_ spectrum: [Double], at hz: Double, sampleRate: Double, width: Int = 4) -> Double {
    let n = (spectrum.count - 1) * 2
    let bin = Int((hz * Double(n) / sampleRate).rounded())
    var m = 0.0
    for k in max(0, bin - width)...min(spectrum.count - 1, bin + width) { m = max(m, spectrum[k]) }
    return m
}

func decibels(_ ratio: Double) -> Double { 20 * log10(max(ratio, 1e-30)) }

import Foundation
import SpinetTestSupport

/// Plays `EngineIntegrationTests.busySecond` into `synth` twice, each event
/// at its frame, `render(n)` rendering the `n` frames (at most 256) between
/// events, the way the engine drives a unit; the second pass (the first
/// warms up) must allocate, free and lock nothing.
func expectBusySecondRealtimeSafe(_ synth: OscillatorSynth, render: (Int) -> Void) {
    let queue = EventQueue(capacity: 1 << 14)
    var events: [EngineEvent] = []
    var sysEx = [UInt8](repeating: 0, count: 16)
    for pass in 0..<2 {
        EngineIntegrationTests.busySecond(into: queue, start: 0)
        events.removeAll(keepingCapacity: true)
        while let e = queue.peek() {
            events.append(e)
            queue.pop(sysExDestination: &sysEx)
        }
        events.sort { $0.frame < $1.frame }
        let counts = events.withUnsafeBufferPointer { list in
            sysEx.withUnsafeBufferPointer { message in
                RealtimeProbe.counts {
                    var position: Int64 = 0
                    for index in 0..<list.count {
                        let event = list[index]
                        while position < event.frame {
                            let n = Int(min(event.frame - position, 256))
                            render(n)
                            position += Int64(n)
                        }
                        switch event.kind {
                        case .message(let m): synth.receive(m)
                        case .sysEx(let length): synth.receiveSysEx(UnsafeBufferPointer(rebasing: message[0..<Int(length)]))
                        }
                    }
                }
            }
        }
        if pass == 1 {
            #expect(counts.allocations == 0)
            #expect(counts.frees == 0)
            #expect(counts.locks == 0)
        }
    }
}
