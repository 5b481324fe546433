/// The SysEx messages Spinet acts on, recognised in one place: the engine
/// (master volume, effect types), the SoundFont unit and the synth (resets)
/// all classify a message here.
///
/// Only complete messages are recognised (F0 ... F7, the exact length of
/// the message); anything else is nil. The device ID (byte 2; 7F is "all")
/// is not checked: Spinet answers every device ID. Allocates nothing.
public enum SysExKind: Equatable, Sendable {
    /// GM System On: F0 7E dd 09 01 F7.
    case gmSystemOn
    /// GM System Off: F0 7E dd 09 02 F7.
    case gmSystemOff
    /// GM2 System On: F0 7E dd 09 03 F7.
    case gm2SystemOn
    /// GS Reset: F0 41 dd 42 12 40 00 7F vv cs F7 (DT1 to the Mode Set
    /// address; vv is 00). `checksumValid`: the Roland checksum over the
    /// address, data and checksum bytes is a multiple of 128.
    case gsReset(checksumValid: Bool)
    /// XG System On: F0 43 1n 4C 00 00 7E 00 F7.
    case xgSystemOn
    /// Universal real-time Master Volume: F0 7F dd 04 01 ll mm F7, the
    /// 14-bit level (0...16383).
    case masterVolume(UInt16)
    /// GS Reverb Macro and Chorus Macro: F0 41 dd 42 12 40 01 30|38 vv cs F7
    /// with a valid checksum and vv 0...7.
    case gsReverbMacro(UInt8), gsChorusMacro(UInt8)
    /// GM2 Global Parameter Control, reverb or chorus type: F0 7F dd 04 05
    /// 01 01 01 01 01|02 00 vv F7 (slot 01 01: reverb, 01 02: chorus).
    case gm2ReverbType(UInt8), gm2ChorusType(UInt8)

    /// The kind of `m` (F0 ... F7), or nil for any other message.
    public init?(_ m: UnsafeBufferPointer<UInt8>) {
        let n = m.count
        guard n >= 6, m[0] == 0xF0, m[n - 1] == 0xF7 else { return nil }
        switch (m[1], n) {
        case (0x7E, 6) where m[3] == 0x09:
            switch m[4] {
            case 0x01: self = .gmSystemOn
            case 0x02: self = .gmSystemOff
            case 0x03: self = .gm2SystemOn
            default: return nil
            }
        case (0x7F, 8) where m[3] == 0x04 && m[4] == 0x01:
            self = .masterVolume(UInt16(m[5] & 0x7F) | (UInt16(m[6] & 0x7F) << 7))
        case (0x7F, 13) where m[3] == 0x04 && m[4] == 0x05 && m[5] == 0x01 && m[6] == 0x01
                              && m[7] == 0x01 && m[8] == 0x01 && m[10] == 0x00:
            switch m[9] {
            case 0x01: self = .gm2ReverbType(m[11])
            case 0x02: self = .gm2ChorusType(m[11])
            default: return nil
            }
        case (0x41, 11) where m[3] == 0x42 && m[4] == 0x12:
            let sum = Int(m[5]) + Int(m[6]) + Int(m[7]) + Int(m[8]) + Int(m[9])
            let checksumValid = sum % 128 == 0
            if m[5] == 0x40 && m[6] == 0x00 && m[7] == 0x7F {
                self = .gsReset(checksumValid: checksumValid)
                return
            }
            guard checksumValid && m[5] == 0x40 && m[6] == 0x01 && m[8] <= 7 else { return nil }
            switch m[7] {
            case 0x30: self = .gsReverbMacro(m[8])
            case 0x38: self = .gsChorusMacro(m[8])
            default: return nil
            }
        case (0x43, 9) where m[3] == 0x4C && m[4] == 0x00 && m[5] == 0x00
                             && m[6] == 0x7E && m[7] == 0x00:
            self = .xgSystemOn
        default:
            return nil
        }
    }

    /// GM System On, GM2 System On or a GS Reset: the messages that put a
    /// GM or GS sound module back in its power-on state (every channel's
    /// controllers and programs, master volume full).
    public var isGMOrGSReset: Bool {
        switch self {
        case .gmSystemOn, .gm2SystemOn, .gsReset: return true
        default: return false
        }
    }

    /// The GM system messages (GM On, GM Off, GM2 On) and the GS Reset:
    /// the SoundFont unit sets its channels' effect sends back to their
    /// defaults on these.
    public var isGMSystemOrGSReset: Bool {
        switch self {
        case .gmSystemOn, .gmSystemOff, .gm2SystemOn, .gsReset: return true
        default: return false
        }
    }

    /// The master volume's linear gain for a Master Volume message (the
    /// 14-bit level squared: a perceptually even fader; MMA CA-018 leaves
    /// the curve open), 1 for a GM or GS reset (full), nil for the rest.
    public var masterVolumeGain: Float? {
        switch self {
        case .masterVolume(let v):
            let x = Float(v) / 16383
            return x * x
        case _ where isGMOrGSReset:
            return 1
        default:
            return nil
        }
    }
}

extension SysExKind {
    /// The kind of a message held in an array (convenience; allocates nothing).
    public init?(_ bytes: [UInt8]) {
        guard let kind = bytes.withUnsafeBufferPointer({ SysExKind($0) }) else { return nil }
        self = kind
    }
}
