import Testing
@testable import SpinetEngine
import SpinetMIDI

/// `SysExKind`, the one place the GM/GS/XG resets, master volume and effect
/// types are recognised, against the four matchers it replaced (kept here
/// verbatim as references).
@Suite("SysExKind")
struct SysExKindTests {
    static func kind(_ m: [UInt8]) -> SysExKind? { SysExKind(m) }

    @Test func recognisesEachKind() {
        #expect(Self.kind([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0xF7]) == .gmSystemOn)
        #expect(Self.kind([0xF0, 0x7E, 0x10, 0x09, 0x02, 0xF7]) == .gmSystemOff)
        #expect(Self.kind([0xF0, 0x7E, 0x7F, 0x09, 0x03, 0xF7]) == .gm2SystemOn)
        #expect(Self.kind([0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x41, 0xF7]) == .gsReset(checksumValid: true))
        #expect(Self.kind([0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x00, 0x7F, 0x00, 0x42, 0xF7]) == .gsReset(checksumValid: false))
        #expect(Self.kind([0xF0, 0x43, 0x10, 0x4C, 0x00, 0x00, 0x7E, 0x00, 0xF7]) == .xgSystemOn)
        #expect(Self.kind([0xF0, 0x7F, 0x7F, 0x04, 0x01, 0x7F, 0x7F, 0xF7]) == .masterVolume(16383))
        #expect(Self.kind([0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, 0x01, 0x30, 0x04, 0x0B, 0xF7]) == .gsReverbMacro(4))
        #expect(Self.kind([0xF0, 0x7F, 0x7F, 0x04, 0x05, 0x01, 0x01, 0x01, 0x01, 0x02, 0x00, 0x03, 0xF7]) == .gm2ChorusType(3))
        #expect(Self.kind([0xF0, 0x7E, 0x7F, 0x09, 0x01]) == nil)             // no F7
        #expect(Self.kind([0xF0, 0x7E, 0x7F, 0x09, 0x01, 0x00, 0xF7]) == nil)  // too long
        #expect(SysExKind.masterVolume(0).masterVolumeGain == 0)
        #expect(SysExKind.gsReset(checksumValid: false).masterVolumeGain == 1)
        #expect(SysExKind.xgSystemOn.masterVolumeGain == nil)
    }

    // The matchers SysExKind replaced, as they were (F0 ... F7 messages).
    static func oldMasterVolume(_ m: [UInt8]) -> Float? {
        if m.count == 8 && m[0] == 0xF0 && m[1] == 0x7F && m[3] == 0x04 && m[4] == 0x01 && m[7] == 0xF7 {
            let x = Float(Int(m[5] & 0x7F) | (Int(m[6] & 0x7F) << 7)) / 16383
            return x * x
        }
        if m.count == 6 && m[0] == 0xF0 && m[1] == 0x7E && m[3] == 0x09 && (m[4] == 0x01 || m[4] == 0x03) && m[5] == 0xF7 { return 1 }
        if m.count == 11 && m[0] == 0xF0 && m[1] == 0x41 && m[3] == 0x42 && m[4] == 0x12
            && m[5] == 0x40 && m[6] == 0x00 && m[7] == 0x7F { return 1 }
        return nil
    }
    static func oldSynthReset(_ m: [UInt8]) -> Bool {
        let gmOn = m.count == 6 && m[0] == 0xF0 && m[1] == 0x7E && m[3] == 0x09 && (m[4] == 0x01 || m[4] == 0x03) && m[5] == 0xF7
        let gsReset = m.count == 11 && m[0] == 0xF0 && m[1] == 0x41 && m[3] == 0x42 && m[4] == 0x12
            && m[5] == 0x40 && m[6] == 0x00 && m[7] == 0x7F
        return gmOn || gsReset
    }
    static func oldSoundFontSendReset(_ m: [UInt8]) -> Bool {
        let gmReset = m.count >= 6 && m[1] == 0x7E && m[3] == 0x09
        let gsReset = m.count == 11 && m[1] == 0x41 && m[3] == 0x42 && m[5] == 0x40 && m[6] == 0x00 && m[7] == 0x7F
        return gmReset || gsReset
    }

    /// Every well-formed message of the families involved (all sub-IDs,
    /// command bytes, addresses and checksums that matter) gets the same
    /// answer from SysExKind as from the old matchers; they differ only on
    /// messages that are not what the old ones assumed: a GM system message
    /// with an unknown sub-ID 2, a GS message that is not DT1 (0x12).
    @Test func agreesWithTheMatchersItReplaced() {
        var corpus: [[UInt8]] = []
        for id in [0x7E, 0x7F] as [UInt8] { for s1 in [0x04, 0x08, 0x09] as [UInt8] { for s2 in 0...4 as ClosedRange<UInt8> {
            corpus.append([0xF0, id, 0x7F, s1, s2, 0xF7])
            corpus.append([0xF0, id, 0x7F, s1, s2, 0x12, 0x34, 0xF7])
        } } }
        for a1 in [0x00, 0x01] as [UInt8] { for a2 in [0x7F, 0x30, 0x38, 0x10] as [UInt8] { for v in [0, 4, 7, 9] as [UInt8] { for cs in 0..<128 as Range<UInt8> {
            corpus.append([0xF0, 0x41, 0x10, 0x42, 0x12, 0x40, a1, a2, v, cs, 0xF7])
        } } } }
        var agreed = 0
        for m in corpus {
            let k = SysExKind(m)
            #expect(k?.masterVolumeGain == Self.oldMasterVolume(m), "\(m)")
            #expect((k?.isGMOrGSReset ?? false) == Self.oldSynthReset(m), "\(m)")
            let oldSend = Self.oldSoundFontSendReset(m)
            let unknownGM = m.count == 6 && m[1] == 0x7E && m[3] == 0x09 && !(1...3).contains(m[4])
            let longGM = m.count != 6 && m[1] == 0x7E && m[3] == 0x09
            if !unknownGM && !longGM { #expect((k?.isGMSystemOrGSReset ?? false) == oldSend, "\(m)") }
            agreed += 1
        }
        #expect(agreed == corpus.count)
    }
}
