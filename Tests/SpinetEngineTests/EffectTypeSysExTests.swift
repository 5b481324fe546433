import Foundation
import Testing
import SpinetEffects
import SpinetEngine
import SpinetMIDI
import SpinetTestSupport

/// A unit that sends one click to the reverb and chorus at each note-on.
final class SendClickUnit: InstrumentUnit {
    let name = "send-click"
    private var pending: Float = 0
    func prepare(sampleRate: Double, maxFrames: Int, channels: Int) {}
    func receive(_ message: MIDIMessage) { if message.isNoteOn { pending = 0.5 } }
    func receiveSysEx(_ message: UnsafeBufferPointer<UInt8>) {}
    func render(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
        left.update(repeating: 0, count: frames)
        right.update(repeating: 0, count: frames)
    }
    func render(_ output: UnitOutput, frames: Int) {
        render(left: output.left, right: output.right, frames: frames)
        for b in [output.reverbLeft, output.reverbRight, output.chorusLeft, output.chorusRight, output.delayLeft, output.delayRight] {
            b.update(repeating: 0, count: frames)
        }
        if frames > 0 && pending != 0 {
            output.reverbLeft[0] = pending
            output.reverbRight[0] = pending
            pending = 0
        }
    }
    var activeVoices: Int { 0 }
}

@Suite("Engine: reverb and chorus types by SysEx")
struct EffectTypeSysExTests {
    static let rate = 48000.0

    /// Sends `sysEx` (if any) at frame 0, a click into the reverb at 0.1 s,
    /// and returns the reverb's level (dBFS RMS) from 1.2 to 1.6 s, and the engine.
    static func tailLevel(_ sysEx: [[UInt8]]) -> (dB: Double, engine: Engine) {
        var config = Engine.Configuration()
        config.reverb = .room
        config.chorus = .subtle
        let (engine, queue) = EngineHarness.make(SendClickUnit(), configuration: config, sampleRate: rate, maxFrames: 512)
        for m in sysEx { queue.pushSysEx(frame: 0, m) }
        queue.push(EngineEvent(frame: Int64(0.1 * rate), .noteOn(channel: 0, key: 60, velocity: 100)))
        let out = renderEngine(engine, frames: Int(1.6 * rate), blockSizes: [512])
        let from = Int(1.2 * rate)
        var sum = 0.0
        for i in from..<out.left.count { sum += Double(out.left[i] * out.left[i]) }
        return (10 * log10(sum / Double(out.left.count - from) + 1e-30), engine)
    }

    static func gs(_ address: UInt8, _ value: UInt8) -> [UInt8] {
        let sum = (0x40 + 0x01 + Int(address) + Int(value)) % 128
        return [0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, address, value, UInt8((128 - sum) % 128), 0xF7]
    }
    static func gm2(slot: UInt8, type: UInt8) -> [UInt8] {
        [0xF0, 0x7F, 0x7F, 0x04, 0x05, 0x01, 0x01, 0x01, 0x01, slot, 0x00, type, 0xF7]
    }

    @Test func gsAndGM2ReverbTypesSelectTheReverb() {
        let room = Self.tailLevel([])
        #expect(room.engine.reverbParameters == ReverbPreset.room.parameters)
        // GS Hall 2 (type 4): a 2.6 s decay rings far longer than the room
        let gsHall = Self.tailLevel([Self.gs(0x30, 4)])
        #expect(gsHall.engine.reverbParameters == ReverbPreset(gsType: 4)!.parameters)
        #expect(gsHall.dB > room.dB + 20, "GS hall \(gsHall.dB) dB vs room \(room.dB) dB")
        // GM2 Large Hall (type 4)
        let gm2Hall = Self.tailLevel([Self.gm2(slot: 1, type: 4)])
        #expect(gm2Hall.engine.reverbParameters == ReverbPreset(gm2Type: 4)!.parameters)
        #expect(gm2Hall.dB > room.dB + 10)
        // a bad checksum is ignored, as a GS device ignores it
        var bad = Self.gs(0x30, 4)
        bad[9] ^= 1
        let ignored = Self.tailLevel([bad])
        #expect(ignored.engine.reverbParameters == ReverbPreset.room.parameters)
        #expect(ignored.dB == room.dB)
        // GM System On afterwards goes back to the configured reverb
        let reset = Self.tailLevel([Self.gs(0x30, 4), [0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]])
        #expect(reset.engine.reverbParameters == ReverbPreset.room.parameters)
    }

    @Test func gsAndGM2ChorusTypesSelectTheChorus() {
        #expect(Self.tailLevel([Self.gs(0x38, 5)]).engine.chorusParameters == ChorusPreset(gsType: 5)!.parameters)
        #expect(Self.tailLevel([Self.gm2(slot: 2, type: 3)]).engine.chorusParameters == ChorusPreset(gm2Type: 3)!.parameters)
        #expect(Self.tailLevel([Self.gs(0x38, 9)]).engine.chorusParameters == ChorusPreset.subtle.parameters)   // no such type
    }
}
