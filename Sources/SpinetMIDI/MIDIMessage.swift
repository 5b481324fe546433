/// A MIDI channel voice message (or a system reset) as a small value.
///
/// `channel` is Spinet's *global* channel index: `port * 16 + channel`, so
/// 0...15 are the 16 channels of the first port, 16...31 those of the second,
/// and so on. Data bytes are always 7-bit (the constructors that parse bytes
/// mask them); pitch bend is 14-bit, 0...16383 with 8192 at rest.
///
/// The value is four bytes with no references, so it copies through
/// lock-free queues without allocating.
public enum MIDIMessage: Equatable, Hashable, Sendable {
    case noteOff(channel: UInt8, key: UInt8, velocity: UInt8)
    /// A note-on with velocity 0 is a note-off; `normalized` turns it into one.
    case noteOn(channel: UInt8, key: UInt8, velocity: UInt8)
    case polyPressure(channel: UInt8, key: UInt8, pressure: UInt8)
    case controlChange(channel: UInt8, controller: UInt8, value: UInt8)
    case programChange(channel: UInt8, program: UInt8)
    case channelPressure(channel: UInt8, pressure: UInt8)
    case pitchBend(channel: UInt8, value: UInt16)
    /// MIDI System Reset (0xFF on the wire) or an ALSA reset event.
    case systemReset

    /// The global channel this message addresses, or nil for system messages.
    @inlinable public var channel: UInt8? {
        switch self {
        case .noteOff(let c, _, _), .noteOn(let c, _, _), .polyPressure(let c, _, _),
             .controlChange(let c, _, _), .programChange(let c, _), .channelPressure(let c, _),
             .pitchBend(let c, _):
            return c
        case .systemReset:
            return nil
        }
    }

    /// Note-on with velocity 0 becomes note-off with velocity 64 (the MIDI 1.0 rule).
    @inlinable public var normalized: MIDIMessage {
        if case .noteOn(let c, let k, 0) = self { return .noteOff(channel: c, key: k, velocity: 64) }
        return self
    }

    /// True for note-offs, including note-on with velocity 0.
    @inlinable public var isNoteOff: Bool {
        switch self {
        case .noteOff: return true
        case .noteOn(_, _, let v): return v == 0
        default: return false
        }
    }

    /// True for a note-on with a velocity above 0.
    @inlinable public var isNoteOn: Bool {
        if case .noteOn(_, _, let v) = self { return v > 0 }
        return false
    }

    /// The same message moved to another global channel.
    @inlinable public func onChannel(_ channel: UInt8) -> MIDIMessage {
        switch self {
        case .noteOff(_, let k, let v): return .noteOff(channel: channel, key: k, velocity: v)
        case .noteOn(_, let k, let v): return .noteOn(channel: channel, key: k, velocity: v)
        case .polyPressure(_, let k, let p): return .polyPressure(channel: channel, key: k, pressure: p)
        case .controlChange(_, let c, let v): return .controlChange(channel: channel, controller: c, value: v)
        case .programChange(_, let p): return .programChange(channel: channel, program: p)
        case .channelPressure(_, let p): return .channelPressure(channel: channel, pressure: p)
        case .pitchBend(_, let v): return .pitchBend(channel: channel, value: v)
        case .systemReset: return .systemReset
        }
    }

    /// Builds a channel voice message from a status byte and its data bytes.
    /// `port` selects the block of 16 channels. Data bytes are masked to 7 bits.
    /// Returns nil for status bytes that are not channel voice messages.
    @inlinable public init?(status: UInt8, data1: UInt8, data2: UInt8, port: UInt8 = 0) {
        let ch = (port &* 16) &+ (status & 0x0F)
        let d1 = data1 & 0x7F, d2 = data2 & 0x7F
        switch status & 0xF0 {
        case 0x80: self = .noteOff(channel: ch, key: d1, velocity: d2)
        case 0x90: self = .noteOn(channel: ch, key: d1, velocity: d2)
        case 0xA0: self = .polyPressure(channel: ch, key: d1, pressure: d2)
        case 0xB0: self = .controlChange(channel: ch, controller: d1, value: d2)
        case 0xC0: self = .programChange(channel: ch, program: d1)
        case 0xD0: self = .channelPressure(channel: ch, pressure: d1)
        case 0xE0: self = .pitchBend(channel: ch, value: UInt16(d1) | (UInt16(d2) << 7))
        default:
            if status == 0xFF { self = .systemReset; return }
            return nil
        }
    }

    /// Number of data bytes that follow a channel status byte (1 or 2), or 0 for non-channel statuses.
    @inlinable public static func dataLength(status: UInt8) -> Int {
        switch status & 0xF0 {
        case 0x80, 0x90, 0xA0, 0xB0, 0xE0: return 2
        case 0xC0, 0xD0: return 1
        default: return 0
        }
    }

    /// The wire bytes of this message (status with the channel's low 4 bits).
    public var bytes: [UInt8] {
        switch self {
        case .noteOff(let c, let k, let v): return [0x80 | (c & 0x0F), k, v]
        case .noteOn(let c, let k, let v): return [0x90 | (c & 0x0F), k, v]
        case .polyPressure(let c, let k, let p): return [0xA0 | (c & 0x0F), k, p]
        case .controlChange(let c, let n, let v): return [0xB0 | (c & 0x0F), n, v]
        case .programChange(let c, let p): return [0xC0 | (c & 0x0F), p]
        case .channelPressure(let c, let p): return [0xD0 | (c & 0x0F), p]
        case .pitchBend(let c, let v): return [0xE0 | (c & 0x0F), UInt8(v & 0x7F), UInt8((v >> 7) & 0x7F)]
        case .systemReset: return [0xFF]
        }
    }
}

/// Controller numbers Spinet gives meaning to.
public enum MIDIController {
    public static let bankSelectMSB: UInt8 = 0
    public static let modulation: UInt8 = 1
    public static let dataEntryMSB: UInt8 = 6
    public static let volume: UInt8 = 7
    public static let pan: UInt8 = 10
    public static let expression: UInt8 = 11
    public static let bankSelectLSB: UInt8 = 32
    public static let dataEntryLSB: UInt8 = 38
    public static let sustain: UInt8 = 64
    public static let portamento: UInt8 = 65
    public static let sostenuto: UInt8 = 66
    public static let soft: UInt8 = 67
    public static let brightness: UInt8 = 74
    public static let reverbSend: UInt8 = 91
    public static let chorusSend: UInt8 = 93
    public static let delaySend: UInt8 = 94
    public static let nrpnLSB: UInt8 = 98
    public static let nrpnMSB: UInt8 = 99
    public static let rpnLSB: UInt8 = 100
    public static let rpnMSB: UInt8 = 101
    public static let allSoundOff: UInt8 = 120
    public static let resetAllControllers: UInt8 = 121
    public static let allNotesOff: UInt8 = 123
}
